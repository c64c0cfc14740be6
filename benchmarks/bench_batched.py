"""Throughput of the batched engine against the AEC ``raw_env``, in agent-steps per second.

Every timed step materializes the observation and the action mask of the seat to act
(a new (B, obs_dim) float32 and (B, 2T+1) int8 array, as ``step`` always returns), draws a
uniformly random legal action per game inside the engine's own backend and applies it;
finished games reset automatically. By default the action is drawn with
``BatchedEnv.sample_actions()``, which reads the engine's own legal-action words (the same
actions ``sample_actions(mask)`` draws from the mask just returned, without reading that
mask); ``--sample-from-mask`` times ``sample_actions(mask)`` instead, which unpacks the
returned mask as a policy's caller would. The AEC baseline does the same through the AEC
API (``observe`` of the agent to act, a random legal action from its mask, ``step``,
``reset`` at the end of each match) in the same run.

Kernels (the table's "kernels" column; ``--backends`` names an engine and its kernels):
``numba`` the compiled kernels over numpy arrays (what ``kernels="auto"`` takes where numba
is installed), ``numpy`` numpy's own calls; ``torch-numba`` and ``torch`` run those kernels
for the torch backend on the CPU (torch's randomness, torch tensors handed out over the
arrays' memory); ``torch-ops`` times torch with its own kernels (``kernels="torch"``, the path
CUDA takes) on the same device.

Usage::

    python benchmarks/bench_batched.py            # B = 1, 64, 1024, 4096, 8192; numba, numpy,
                                                  # torch-numba, torch
    python benchmarks/bench_batched.py --quick    # a few seconds
    python benchmarks/bench_batched.py --threads 2 --sizes 4096 --backends torch torch-ops

Prints a markdown table: medians over ``--repeats`` timed runs, the ratio to ``raw_env``,
and the memory per game (state arrays, and the peak allocated by one step for numpy).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
import tracemalloc
from typing import Any

import numpy as np

import block_env
from block_env.batched import BatchedEnv
from block_env.batched.backend import numba_available

HEADER = (
    "| engine | kernels | B | agent-steps/s | x raw_env | state B/game | outputs B/game "
    "| peak B/game |"
)


def bench_aec(config: dict, seconds: float, repeats: int, seed: int = 0) -> float:
    """Median agent-steps/s of random legal play through ``raw_env``."""
    env = block_env.raw_env(**config)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)

    def run(budget: float) -> float:
        steps = 0
        start = time.perf_counter()
        while True:
            for _ in range(200):
                agent = env.agent_selection
                mask = env.observe(agent)["action_mask"]
                legal = np.flatnonzero(mask)
                env.step(int(legal[rng.integers(len(legal))]))
                if env.terminations[agent]:
                    env.reset()
                steps += 1
            elapsed = time.perf_counter() - start
            if elapsed >= budget:
                return steps / elapsed

    run(seconds / 4)
    return statistics.median(run(seconds) for _ in range(repeats))


def bench_batched(
    backend: str,
    num_envs: int,
    config: dict,
    seconds: float,
    repeats: int,
    device: str,
    auto_pass: bool = False,
    from_mask: bool = False,
) -> dict[str, Any]:
    """Median agent-steps/s of the batched engine with in-backend random legal actions
    (``backend`` a name of ENGINES: the backend and the kernels it computes with)."""
    backend, kernels = ENGINES[backend]
    env = BatchedEnv(
        num_envs, backend=backend, device=device, auto_pass=auto_pass, kernels=kernels, **config
    )
    obs, mask, seat = env.reset(seed=0)
    sync = _sync(backend, device)

    def sample(mask: Any) -> Any:
        return env.sample_actions(mask) if from_mask else env.sample_actions()

    def run(budget: float) -> float:
        nonlocal obs, mask
        steps = 0
        sync()
        start = time.perf_counter()
        while True:
            for _ in range(10):
                obs, mask, seat, rewards, terminated, info = env.step(sample(mask))
            steps += 10
            sync()
            elapsed = time.perf_counter() - start
            if elapsed >= budget:
                return steps * num_envs / elapsed

    run(seconds / 4)
    rates = [run(seconds) for _ in range(repeats)]
    result = {
        "rate": statistics.median(rates),
        "state_bytes": env.state_bytes() / num_envs,
        "output_bytes": _nbytes(obs, mask, seat) / num_envs,
        "peak_bytes": None,
        "kernels": env.kernels,
    }
    if backend == "numpy":  # tracemalloc sees numpy's allocations (not torch's)
        tracemalloc.start()
        tracemalloc.reset_peak()
        for _ in range(5):
            obs, mask, seat, rewards, terminated, info = env.step(sample(mask))
        result["peak_bytes"] = tracemalloc.get_traced_memory()[1] / num_envs
        tracemalloc.stop()
    return result


# the names of --backends: (backend, kernels)
ENGINES = {
    "numba": ("numpy", "numba"),
    "numpy": ("numpy", "numpy"),
    "torch-numba": ("torch", "numba"),
    "torch": ("torch", "numpy"),
    "torch-ops": ("torch", "torch"),
}


def _sync(backend: str, device: str):
    if backend == "torch" and str(device).startswith("cuda"):
        import torch

        return torch.cuda.synchronize
    return lambda: None


def _nbytes(*arrays: Any) -> int:
    total = 0
    for x in arrays:
        total += int(x.nbytes) if hasattr(x, "nbytes") else x.element_size() * x.nelement()
    return total


def _fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short runs, B = 1, 64, 4096")
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument(
        "--backends",
        nargs="+",
        default=["numba", "numpy", "torch-numba", "torch"] if numba_available() else None,
        choices=list(ENGINES),
        help="numba: numpy arrays, compiled kernels; numpy: numpy's kernels; torch-numba and "
        "torch: torch tensors on the CPU over those kernels; torch-ops: torch's own kernels "
        "(the CUDA path). Default: all but torch-ops (numpy and torch without numba)",
    )
    parser.add_argument("--device", default="cpu", help="torch device (cpu, cuda)")
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (0: keep)")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--seconds", type=float, default=None, help="length of each timed run")
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--episode", default="match", choices=["match", "hand"])
    parser.add_argument("--auto-pass", action="store_true", help="BatchedEnv(auto_pass=True)")
    parser.add_argument(
        "--sample-from-mask",
        action="store_true",
        help="draw the actions with sample_actions(mask) from the returned mask",
    )
    args = parser.parse_args(argv)
    on_cpu = str(args.device) == "cpu"
    args.backends = args.backends or (["numpy", "torch"] if on_cpu else ["torch-ops"])
    cpu_only = [b for b in args.backends if ENGINES[b][1] != "torch"]
    if not on_cpu and cpu_only:
        parser.error(
            f"--backends {' '.join(cpu_only)} compute on the CPU, not --device {args.device}: "
            "use --backends torch-ops there (torch's own kernels)"
        )
    sizes = args.sizes or ([1, 64, 4096] if args.quick else [1, 64, 1024, 4096, 8192])
    repeats = args.repeats or (3 if args.quick else 5)
    seconds = args.seconds or (0.3 if args.quick else 1.0)
    config = {"num_players": args.players, "episode": args.episode}
    torch_version = "-"
    if any(name.startswith("torch") for name in args.backends):
        import torch

        if args.threads > 0:
            torch.set_num_threads(args.threads)
        torch_version = f"{torch.__version__} ({torch.get_num_threads()} thread(s))"

    print(
        f"# block-env batched benchmark: {config}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, numpy {np.__version__}, "
        f"torch {torch_version}; medians of {repeats} x {seconds:.1f} s"
        + ("; auto_pass (forced passes are not counted as agent steps)" if args.auto_pass else "")
        + (
            "; actions from the returned mask"
            if args.sample_from_mask
            else "; actions from sample_actions()"
        )
    )
    aec = bench_aec(config, seconds, repeats)
    print()
    print(HEADER)
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    print(f"| AEC raw_env | - | 1 | {_fmt_rate(aec)} | 1.0 | - | - | - |")
    for backend in args.backends:
        for num_envs in sizes:
            r = bench_batched(
                backend,
                num_envs,
                config,
                seconds,
                repeats,
                args.device,
                args.auto_pass,
                args.sample_from_mask,
            )
            peak = "-" if r["peak_bytes"] is None else f"{r['peak_bytes']:,.0f}"
            name = "numpy" if ENGINES[backend][0] == "numpy" else f"torch-{args.device}"
            print(
                f"| {name} | {r['kernels']} | {num_envs} | {_fmt_rate(r['rate'])} "
                f"| {r['rate'] / aec:,.1f} "
                f"| {r['state_bytes']:,.0f} | {r['output_bytes']:,.0f} | {peak} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
