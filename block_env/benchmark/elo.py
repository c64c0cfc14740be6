"""An agent's rating on a task's frozen ladder: a Bradley-Terry fit of the agent alone
against opponents whose ratings stay fixed, so a new agent never moves the ladder and two
papers rating on the same task read the same scale.

The fixed ratings are those of the project's round-robin ladders (Elo scale, random = 0;
``docs/benchmark.md``), for the opponents whose identity is the same in the ladder and in the
task's field: the baselines, the search agents and a shipped network when its file is the
one the ladder played (``tests/benchmark`` checks these figures against the ladder files).
Games are hands: a hand won counts 1, a tie ½, as in the ladder.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from block_env.evaluation.stats import Estimate, joint_deal_draw

# task id -> the frozen ladder it comes from (package data: the round robin's JSON, as
# `block-env ladder --json` wrote it) and the fixed rating of each opponent label
FROZEN_LADDERS: dict[str, tuple[str, dict[str, float]]] = {
    "block-2p-v1": (
        "block_env/benchmark/data/ladders/block-2p-v1.json",
        {
            "random": 0.0,
            "greedy": 45.244292216787855,
            "rules": 104.24094404128962,
            "pimc-20": 117.53688424101776,
            "pimc-100": 128.17236080547843,
        },
    ),
    "block-3p-v1": (
        "block_env/benchmark/data/ladders/block-3p-v1.json",
        {
            "random": 0.0,
            "greedy": 18.976127926444065,
            "rules": 67.66935302787779,
            "pimc-20": 63.600028850668195,
            "pimc-100": 67.91982559960807,
        },
    ),
    "block-4p-v1": (
        "block_env/benchmark/data/ladders/block-4p-v1.json",
        {
            "random": 0.0,
            "greedy": 14.99858801729178,
            "rules": 60.32792813628531,
            "pimc-20": 64.12420826598517,
            "block-4p@34e65c11": 61.78770873613697,  # the shipped block-4p
        },
    ),
}


def fixed_opponent_rating(
    ratings: Sequence[float], wins: Sequence[float], games: Sequence[float]
) -> float:
    """The Elo rating r at which the expected wins against opponents of fixed ``ratings``
    equal the wins observed (with a prior of one drawn game per opponent, as in
    ``bradley_terry``, so that a clean sweep stays finite)."""
    r = np.asarray(ratings, dtype=float)
    g = np.asarray(games, dtype=float) + 1.0
    w = float(np.sum(wins)) + 0.5 * len(r)

    def expected(x: float) -> float:
        return float(np.sum(g / (1.0 + 10.0 ** ((r - x) / 400.0))))

    lo, hi = float(r.min()) - 4000.0, float(r.max()) + 4000.0
    for _ in range(200):  # expected() rises with x: bisection
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if expected(mid) < w else (lo, mid)
    return 0.5 * (lo + hi)


def rate(
    task_id: str,
    per_opponent: Mapping[str, tuple[np.ndarray, np.ndarray]],
    bootstrap: int = 200,
    seed: int = 0,
) -> tuple[Estimate | None, list[str]]:
    """The agent's rating on the task's frozen ladder from its per-deal (wins, hands)
    against each opponent label, with a 95% bootstrap CI over deals; (None, []) when the
    task has no ladder or no opponent of it was played. Also returns the labels used.
    Every opponent plays the task's held-out deals from the first (an opponent with a
    smaller share plays the first of them), so each replicate draws the deals once for all
    opponents (``joint_deal_draw``)."""
    if task_id not in FROZEN_LADDERS:
        return None, []
    fixed = FROZEN_LADDERS[task_id][1]
    used = [label for label in per_opponent if label in fixed]
    if not used:
        return None, []
    ratings = [fixed[label] for label in used]
    sizes = [len(per_opponent[label][0]) for label in used]

    def fit(picks: list[np.ndarray] | None) -> float:
        wins, games = [], []
        for n, label in enumerate(used):
            w, h = per_opponent[label]
            idx = picks[n] if picks is not None else slice(None)
            wins.append(float(np.sum(w[idx])))
            games.append(float(np.sum(h[idx])))
        return fixed_opponent_rating(ratings, wins, games)

    point = fit(None)
    rng = np.random.default_rng(seed)
    samples = [fit(joint_deal_draw(rng, sizes)) for _ in range(bootstrap)]
    if len(samples) < 2:
        return Estimate(point, math.nan, math.nan), used
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return Estimate(point, float(lo), float(hi)), used
