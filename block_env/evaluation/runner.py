"""The evaluation's entry points: ``evaluate`` = ``prepare`` (check the setup and build the
agents, before anything is played) then ``run`` (play the deals, here or in worker
processes, and compute the statistics)."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from block_env.agent_specs import AgentSpec
from block_env.evaluation.duplicate import EvalPlan, build_plan, deal_statistics, play_deals
from block_env.evaluation.parallel import check_workers, play_parallel
from block_env.evaluation.results import EvalResult


def progress_bar(total: int, enabled: bool, desc: str) -> Any:
    """A tqdm bar on stderr counting ``total`` games, or None when disabled or without tqdm."""
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="game", leave=False, file=sys.stderr)


def evaluate(
    agents: Sequence[AgentSpec],
    num_players: int = 2,
    hands: int | None = None,
    matches: int | None = None,
    episode: str = "hand",
    seed: int = 0,
    lineup: Sequence[int] | None = None,
    progress: bool = False,
    labels: Sequence[str] | None = None,
    allow_mismatch: bool = False,
    workers: int = 1,
    control: AgentSpec | None = None,
    **config: Any,
) -> EvalResult:
    """Play ``agents`` (at least two) on fixed deals, each replayed with the seats rotated.

    ``hands`` (episode ``"hand"``, default 2000) or ``matches`` (episode ``"match"``,
    default 200) is the number of games wanted in total; it is rounded up to a whole number
    of deals times ``num_players`` rotations (``result.hands`` / ``result.matches`` say what
    was played; the command line refuses a count that is not a whole number of deals). Deal
    ``d`` uses seed ``seed + d``. Other keywords (``opener``, ``partnership``,
    ``target_score``) configure the game. A policy trained for another game is refused
    (``check_game``) unless ``allow_mismatch``. ``workers > 1`` plays the deals in that
    many processes (agents given as spec strings only; see docs/evaluation.md: the same
    figures for deterministic agents, other draws for agents with their own randomness).
    ``control``: an agent to compare the first agent with in its seats, on the same deals
    and random draws (``result.control``; see ``block_env.evaluation.control``). Setup
    problems raise SetupError (a ValueError) before anything is played.
    """
    plan = prepare(
        agents,
        num_players,
        hands,
        matches,
        episode,
        seed,
        lineup,
        labels,
        allow_mismatch,
        workers,
        control,
        **config,
    )
    return run(plan, progress)


def prepare(
    agents: Sequence[AgentSpec],
    num_players: int = 2,
    hands: int | None = None,
    matches: int | None = None,
    episode: str = "hand",
    seed: int = 0,
    lineup: Sequence[int] | None = None,
    labels: Sequence[str] | None = None,
    allow_mismatch: bool = False,
    workers: int = 1,
    control: AgentSpec | None = None,
    **config: Any,
) -> EvalPlan:
    """Check an evaluation's arguments and build its agents (``evaluate``'s first half):
    SetupError on anything wrong, before a single hand is played."""
    workers = check_workers(workers, [*agents, *([] if control is None else [control])])
    plan = build_plan(
        agents,
        num_players,
        hands,
        matches,
        episode,
        seed,
        lineup,
        labels,
        allow_mismatch,
        config,
        control=control,
    )
    plan.workers = workers
    return plan


def run(plan: EvalPlan, progress: bool = False, record_dir: Path | None = None) -> EvalResult:
    """Play a prepared evaluation (``evaluate``'s second half) and compute its statistics;
    with ``record_dir``, every game is also saved there as a JSON game record
    (``deal00000_seating0.json``, ...; see ``block_env.records``). ``plan.workers > 1``
    plays the deals in that many spawned processes (``prepare(workers=...)``)."""
    return run_plan(plan, progress, record_dir)


def run_plan(
    plan: EvalPlan, progress: bool, record_dir: Path | None, pool: Any = None
) -> EvalResult:
    """``run``, in the worker processes of ``pool`` when given (the ladder shares one)."""
    n = plan.env.config.num_players
    bar = progress_bar(plan.deals * n, progress, " vs ".join(plan.names))
    start = time.perf_counter()
    try:
        if plan.workers == 1 and pool is None:
            per_deal = play_deals(plan, 0, plan.deals, record_dir, bar)
        else:
            per_deal = play_parallel(plan, record_dir, bar, pool)
    finally:
        if bar is not None:
            bar.close()
    return deal_statistics(plan, per_deal, time.perf_counter() - start)
