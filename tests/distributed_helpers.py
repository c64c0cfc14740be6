"""Running a function as the ranks of a local gloo process group, for the distributed
tests: each rank is a spawned process with the launcher's environment variables set, as
torchrun would set them, and returns what the function returns (or the exception's text)."""

from __future__ import annotations

import contextlib
import io
import multiprocessing as mp
import os
import socket
import traceback
from collections.abc import Callable
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(fn: Callable[..., Any], rank: int, world: int, port: int, args: Any, out: Any):
    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_WORLD_SIZE=str(world),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        OMP_NUM_THREADS="1",
    )
    import torch

    torch.set_num_threads(1)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            result = fn(rank, *args)
        out.put((rank, "ok", result, err.getvalue()))
    except BaseException:  # noqa: BLE001 - reported to the test
        out.put((rank, "raised", traceback.format_exc(), err.getvalue()))


def run_ranks(fn: Callable[..., Any], world: int, *args: Any, timeout: float = 120) -> list:
    """``fn(rank, *args)`` on ``world`` spawned ranks; returns, in rank order, tuples
    (status "ok" or "raised", result or traceback, what the rank wrote to stderr)."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    port = free_port()
    procs = [
        ctx.Process(target=_rank_main, args=(fn, r, world, port, args, out)) for r in range(world)
    ]
    for p in procs:
        p.start()
    results: dict[int, tuple] = {}
    try:
        for _ in range(world):
            rank, status, value, stderr = out.get(timeout=timeout)
            results[rank] = (status, value, stderr)
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    return [results[r] for r in range(world)]


# ---------------------------------------------------------------- rank functions


def main_with(rank: int, argv_of_rank: list[list[str]]) -> int:
    """``train.main`` with this rank's own command line."""
    import train

    return train.main(argv_of_rank[rank])


def digests_per_update(rank: int, argv: list[str]) -> tuple[int, list[str]]:
    """Train; returns the status and the digest of this rank's weights after every update."""
    import train
    from block_env.training import ppo
    from block_env.training.distributed import weights_digest

    seen: list[str] = []
    real = ppo.ppo_update

    def recording(model: Any, *a: Any, **k: Any) -> Any:
        out = real(model, *a, **k)
        seen.append(weights_digest(model).hex())
        return out

    ppo.ppo_update = recording
    return train.main(argv), seen


def nan_loss_on_rank_1(rank: int, argv: list[str], at_update: int) -> int:
    """Train, with rank 1's entropy (hence its loss) NaN from its ``at_update``-th update."""
    import torch

    import train
    from block_env.training import ppo

    if rank == 1:
        real_update, real_entropy = ppo.ppo_update, ppo.log_softmax_entropy
        calls = {"n": 0}

        def counting(*a: Any, **k: Any) -> Any:
            calls["n"] += 1
            return real_update(*a, **k)

        def poisoned(masked: Any) -> Any:
            logp, entropy = real_entropy(masked)
            if calls["n"] >= at_update:
                entropy = entropy * torch.nan
            return logp, entropy

        ppo.ppo_update, ppo.log_softmax_entropy = counting, poisoned
    return train.main(argv)


def rank_1_stalls(rank: int, argv: list[str], seconds: float) -> int:
    """Train, with rank 1 stuck for ``seconds`` in its second rollout."""
    import time

    import train
    from block_env.training import rollout

    if rank == 1:
        real = rollout.Collector.collect
        calls = {"n": 0}

        def stalls(self: Any) -> Any:
            calls["n"] += 1
            if calls["n"] == 2:
                time.sleep(seconds)
            return real(self)

        rollout.Collector.collect = stalls
    return train.main(argv)


def perturbs_rank_1(rank: int, argv: list[str]) -> int:
    """Train, with rank 1's weights nudged after its first update (replicas drift)."""
    import torch

    import train
    from block_env.training import ppo

    if rank == 1:
        real = ppo.ppo_update

        def drifts(model: Any, *a: Any, **k: Any) -> Any:
            out = real(model, *a, **k)
            with torch.no_grad():
                next(model.parameters()).add_(1e-6)
            return out

        ppo.ppo_update = drifts
    return train.main(argv)
