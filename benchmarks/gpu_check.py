"""CUDA check of the batched torch backend: equal to numpy step for step, then its speed.

Both engines deal from the same generator (``deal_source="aec"``: the AEC env's deals, so
the same seed deals the same hands on both), play the same random legal actions, and every
returned array (observation, mask, seat, rewards, terminated, each info field) is compared
exactly at every step. Exits with status 1 on the first difference, naming it.
Usage: ``python benchmarks/gpu_check.py [--games 256] [--steps 400] [--device cuda]``.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch

from block_env.batched import BatchedEnv


def _np(x: object) -> np.ndarray:
    return x.cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def differential(games: int, steps: int, device: str, **config: object) -> int:
    """Steps compared; raises AssertionError naming the first difference."""
    ref = BatchedEnv(games, backend="numpy", deal_source="aec", **config)
    gpu = BatchedEnv(games, backend="torch", device=device, deal_source="aec", **config)
    a, b = ref.reset(seed=7), gpu.reset(seed=7)
    rng = np.random.default_rng(0)
    for t in range(steps):
        for name, x, y in zip(("obs", "mask", "seat"), a[:3], b[:3], strict=True):
            assert np.array_equal(_np(x), _np(y)), f"{config}: {name} differs at step {t}"
        mask = _np(a[1])
        actions = np.where(mask > 0, rng.random(mask.shape), -1.0).argmax(1)
        a = ref.step(actions)
        b = gpu.step(torch.from_numpy(actions).to(device))
        for name, x, y in zip(("rewards", "terminated"), a[3:5], b[3:5], strict=True):
            assert np.array_equal(_np(x), _np(y)), f"{config}: {name} differs at step {t}"
        for key, value in a[5].items():
            assert np.array_equal(_np(value), _np(b[5][key])), f"{config}: info {key!r}, step {t}"
    return steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=256)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device: nothing checked", file=sys.stderr)
        return 2
    for config in (
        {"num_players": 2},
        {"num_players": 3},
        {"num_players": 4, "partnership": True},
        {"num_players": 4, "opener": "highest_double", "episode": "hand"},
        {"num_players": 2, "max_pip": 3},
    ):
        try:
            differential(args.games, args.steps, args.device, **config)
        except AssertionError as err:
            print(f"DIFFERENCE: {err}")
            return 1
        print(f"ok: {config}, {args.games} games x {args.steps} steps equal to numpy")
    name = torch.cuda.get_device_name() if args.device.startswith("cuda") else args.device
    print(f"torch backend on {name} equals numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
