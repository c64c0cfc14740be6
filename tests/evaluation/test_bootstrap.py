"""The ladder's bootstrap over deals: one draw of deals per replicate, shared by every pair."""

from __future__ import annotations

import numpy as np
import pytest

from block_env.evaluation.stats import bradley_terry_ci, joint_deal_draw


def test_series_of_one_deal_set_get_the_same_deals() -> None:
    rng = np.random.default_rng(0)
    full, same, prefix = joint_deal_draw(rng, [50, 50, 20])
    assert len(full) == 50 and np.array_equal(full, same)
    np.testing.assert_array_equal(prefix, full[full < 20])  # the drawn deals it played
    assert len(np.unique(full)) < 50  # drawn with replacement
    assert joint_deal_draw(rng, []) == []


@pytest.mark.parametrize("sizes", [[10, 0], [-3], [True, 4]])
def test_bad_deal_counts_are_refused(sizes: list[int]) -> None:
    with pytest.raises(ValueError, match="positive deal counts"):
        joint_deal_draw(np.random.default_rng(0), sizes)


def test_the_ladder_bootstrap_draws_the_deals_once_for_every_pair() -> None:
    """A chain 0 - 1 - 2 where, on each deal, agent 1 wins its game against 0 exactly
    when it loses its game against 2: drawn jointly, 2 always rates level with 0 (the
    point, 0 wide), while 1's rating varies; drawn per pair, 2's would vary as much."""
    won = (np.arange(300) % 4 == 0).astype(float)  # agent 0's wins against 1, per deal
    games = np.ones(300)
    pairs = {(0, 1): (won, games), (1, 2): (1 - won, games)}
    ratings = bradley_terry_ci(3, pairs, bootstrap=100, seed=1)
    assert ratings[2].mean == pytest.approx(0.0, abs=1e-6)
    assert ratings[2].hi - ratings[2].lo < 1e-6
    assert ratings[1].hi - ratings[1].lo > 50
    assert ratings[1].lo < ratings[1].mean < ratings[1].hi


def test_pairs_with_the_same_deals_get_the_same_interval() -> None:
    """Two pairs with the same per-deal results rate their agents alike in every
    replicate, so the intervals are equal to the last digit."""
    rng = np.random.default_rng(5)
    won = rng.integers(0, 3, 200) / 2.0  # wins, ties and losses of one game a deal
    games = np.ones(200)
    ratings = bradley_terry_ci(3, {(0, 1): (won, games), (0, 2): (won, games)}, bootstrap=50)
    assert ratings[1] == ratings[2] and ratings[1].hi > ratings[1].lo


def test_no_bootstrap_leaves_the_interval_open() -> None:
    won, games = np.ones(10), np.full(10, 2.0)
    ratings = bradley_terry_ci(2, {(0, 1): (won, games)}, bootstrap=0)
    assert ratings[1].mean == pytest.approx(0.0, abs=1e-6) and np.isnan(ratings[1].lo)
