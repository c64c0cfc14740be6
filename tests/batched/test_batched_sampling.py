"""``BatchedEnv.sample_actions()`` without a mask: it reads the engine's own legal actions,
draws only legal actions, uniformly, and makes the same draw as ``sample_actions(mask)`` on
the mask just handed out, whatever the caller wrote into that mask."""

from __future__ import annotations

import numpy as np
import pytest
from batched_helpers import BACKENDS, engine
from helpers import to_np

from block_env.batched import BatchedEnv

CONFIGS = [
    {"num_players": 2},
    {"num_players": 4, "partnership": True, "opener": "highest_double"},
    {"num_players": 3, "max_pip": 3},
    {"num_players": 2, "max_pip": 6, "hand_size": 10},  # counts packed in 4 bits
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_without_a_mask_draws_what_the_mask_draws(cfg: dict, backend: str) -> None:
    with_mask = BatchedEnv(64, **engine(backend), **cfg)
    without = BatchedEnv(64, **engine(backend), **cfg)
    out, twin = with_mask.reset(seed=8), without.reset(seed=8)
    for _ in range(150):
        drawn = with_mask.sample_actions(out[1])
        twin[1][...] = 0  # a caller's write into its mask: the mask-less draw never reads it
        fast = without.sample_actions()
        np.testing.assert_array_equal(to_np(fast), to_np(drawn))
        out, twin = with_mask.step(drawn), without.step(fast)


def _ranks(picks: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank of each pick among its row's legal actions, and the number of legal actions."""
    running = np.cumsum(mask, axis=1)
    rank = running[np.arange(len(picks)), picks] - 1
    return rank, running[:, -1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_without_a_mask_draws_legal_actions_uniformly(backend: str) -> None:
    games = 12000
    env = BatchedEnv(games, **engine(backend), num_players=2)
    _, mask, _ = env.reset(seed=0)
    for _ in range(3):  # a few plies in: rows with 1 to 7+ legal actions, passes among them
        _, mask, *_ = env.step(env.sample_actions())
    mask = to_np(mask)
    seen: dict[int, np.ndarray] = {}
    for _ in range(10):  # independent draws for the same positions
        picks = to_np(env.sample_actions())
        assert mask[np.arange(games), picks].all(), "an illegal action was drawn"
        rank, count = _ranks(picks, mask)
        for c in range(2, 15):
            seen[c] = seen.get(c, 0) + np.bincount(rank[count == c], minlength=c)
    checked = 0
    for c, counts in seen.items():
        if counts.sum() < 2000:
            continue
        assert _chi2(counts) < CHI2_LIMIT, (c, counts)
        checked += 1
    assert checked >= 5  # several legal-set sizes, each with thousands of draws


def _chi2(counts: np.ndarray) -> float:
    expected = counts.sum() / len(counts)
    return float(((counts - expected) ** 2 / expected).sum())


# df <= 13: under uniform draws the statistic exceeds 45 with probability below 1e-5
CHI2_LIMIT = 45


def test_the_uniformity_check_catches_a_biased_sampler() -> None:
    """The check above fails for a sampler that gives one of 5 actions 24% instead of 20%,
    over 8000 draws (about what it gets for the rows with 5 legal actions), and passes a
    fair one."""
    rng = np.random.default_rng(1)
    c, n = 5, 8000
    rank = np.where(rng.random(n) < 0.05, 0, rng.integers(c, size=n))
    assert _chi2(np.bincount(rank, minlength=c)) >= CHI2_LIMIT
    fair = rng.integers(c, size=n)
    assert _chi2(np.bincount(fair, minlength=c)) < CHI2_LIMIT


@pytest.mark.parametrize("backend", BACKENDS)
def test_without_a_mask_needs_a_reset_first(backend: str) -> None:
    env = BatchedEnv(3, **engine(backend))
    with pytest.raises(RuntimeError, match="reset"):
        env.sample_actions()
