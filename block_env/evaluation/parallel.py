"""Parallel play (``workers=N``): the deals of an evaluation are independent, so they are
split into contiguous chunks played in N spawned processes, each building its own agents
from the spec strings, and the per-deal totals are joined in deal order.

Deal ``d`` keeps env seed ``seed + d``, so deterministic agents give the figures of a serial
run bit for bit; agents that draw from a ``seed`` are seeded per chunk from (seed, chunk
index), so a run repeats for the same seed, games and worker count (see docs/evaluation.md).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from block_env.agent_specs import AgentSpec, SetupError, agent_label
from block_env.evaluation.duplicate import EvalPlan, build_plan, play_deals


def check_workers(workers: Any, agents: Sequence[AgentSpec] = ()) -> int:
    """``workers`` as an int >= 1; SetupError otherwise (a bool is refused), and when
    ``workers > 1`` and one of ``agents`` is an object rather than a spec string (worker
    processes build their own agents from spec strings)."""
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise SetupError(
            f"workers={workers!r} is not allowed: use an int >= 1 (the number of processes "
            "playing deals; 1 plays them here, one after another)"
        )
    workers = int(workers)
    if workers > 1:
        objects = [agent_label(a) for a in agents if not isinstance(a, str)]
        if objects:
            raise SetupError(
                f"workers={workers} builds the agents again in each worker process from spec "
                f"strings, but {', '.join(objects)} is an object: pass spec strings (e.g. "
                "'rules', 'pimc:worlds=20', 'block-2p', a policy path) or use workers=1"
            )
    return workers


CHUNKS_PER_WORKER = 8  # so the progress bar moves and a slow chunk does not idle the rest


@dataclass
class _Chunk:
    """What a worker process needs to play deals ``first`` .. ``stop - 1`` of an evaluation:
    picklable values only (spec strings, numbers, the game keywords)."""

    specs: list[str]
    names: list[str]
    lineup: list[int]
    game: dict[str, Any]
    episode: str
    seed: int
    allow_mismatch: bool
    first: int
    stop: int
    player_seeds: list[int]
    record_dir: Path | None
    control: str | None = None


def chunk_bounds(deals: int, workers: int) -> list[tuple[int, int]]:
    """Contiguous deal ranges ``(first, stop)`` for ``workers`` processes: about
    ``CHUNKS_PER_WORKER`` per worker, at least one deal each, sizes within one deal."""
    count = max(1, min(deals, workers * CHUNKS_PER_WORKER))
    edges = [deals * c // count for c in range(count + 1)]
    return [(edges[c], edges[c + 1]) for c in range(count)]


def chunk_seeds(seed: int, chunk: int, positions: int) -> list[int]:
    """The seeds of the agents at each lineup position in chunk ``chunk`` (from ``seed``
    and the chunk index only, so a parallel run repeats)."""
    state = np.random.SeedSequence([int(seed), int(chunk)]).generate_state(positions)
    return [int(v) for v in state]


def _worker_init() -> None:
    """Each worker computes on one thread: the processes already use the cores."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = "1"
    _one_torch_thread()


def _one_torch_thread() -> None:
    torch = sys.modules.get("torch")  # imported only by agents that need it
    if torch is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def _play_chunk(job: _Chunk) -> dict[str, np.ndarray]:
    """Worker side: build the evaluation again from spec strings and play its chunk."""
    plan = build_plan(
        job.specs,
        job.game["num_players"],
        None,
        None,
        job.episode,
        job.seed,
        job.lineup,
        job.names,
        job.allow_mismatch,
        {k: v for k, v in job.game.items() if k != "num_players"},
        job.player_seeds,
        job.control,
    )
    plan.names = list(job.names)
    _one_torch_thread()
    return play_deals(plan, job.first, job.stop, job.record_dir)


def make_pool(workers: int) -> Any:
    """A process pool of ``workers`` spawned processes (no fork: torch and threads do not
    survive a fork safely), each on one thread."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_worker_init,
    )


def play_parallel(
    plan: EvalPlan, record_dir: Path | None, bar: Any, pool: Any = None
) -> dict[str, np.ndarray]:
    """Play ``plan``'s deals in chunks on worker processes (``pool``, or a new one of
    ``plan.workers`` processes) and join the per-deal totals in deal order."""
    from concurrent.futures import as_completed

    n = plan.env.config.num_players
    bounds = chunk_bounds(plan.deals, plan.workers)
    jobs = [
        _Chunk(
            specs=list(plan.specs),
            names=list(plan.names),
            lineup=list(plan.lineup),
            game=dict(plan.game),
            episode=plan.episode,
            seed=plan.seed,
            allow_mismatch=plan.allow_mismatch,
            first=first,
            stop=stop,
            player_seeds=chunk_seeds(plan.seed, c, n),
            record_dir=record_dir,
            control=plan.control_spec,
        )
        for c, (first, stop) in enumerate(bounds)
    ]
    own = pool is None
    if own:
        pool = make_pool(min(plan.workers, len(jobs)))
    parts: list[dict[str, np.ndarray] | None] = [None] * len(jobs)
    try:
        futures = {pool.submit(_play_chunk, job): c for c, job in enumerate(jobs)}
        try:
            for future in as_completed(futures):
                c = futures[future]
                parts[c] = future.result()
                if bar is not None:
                    bar.update((jobs[c].stop - jobs[c].first) * n)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    finally:
        if own:
            pool.shutdown(wait=True, cancel_futures=True)
    done = [part for part in parts if part is not None]
    return {key: np.concatenate([part[key] for part in done]) for key in done[0]}
