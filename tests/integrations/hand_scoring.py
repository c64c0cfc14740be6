"""What a finished individual-play hand must score, recomputed from the pips left in each
hand (as the env reports them in ``hand_pips``), for the integration tests."""

from __future__ import annotations

import numpy as np

# The env's info schema, written out here (not imported) so a renamed key fails the tests.
INFO_KEYS = {
    "hand_over",
    "hand_winner",
    "hand_blocked",
    "hand_pips",
    "hand_points",
    "match_over",
    "match_winner",
    "match_winners",
}


def expected_points(pips: np.ndarray, blocked: bool, domino: int) -> tuple[int, np.ndarray]:
    """(winner or -1, points by seat): the seat that dominoed (``domino``, holding nothing)
    scores every other hand's pips; a block is won by the strictly lowest hand, which scores
    the others' pips less its own; a tie for lowest scores nothing."""
    pips = np.asarray(pips, dtype=np.int64)
    n = len(pips)
    points = np.zeros(n, dtype=np.int64)
    if not blocked:
        assert 0 <= domino < n and pips[domino] == 0, (domino, pips)
        points[domino] = pips.sum()
        return domino, points
    low = pips.min()
    if (pips == low).sum() > 1:
        return -1, points
    winner = int(np.argmin(pips))
    points[winner] = pips.sum() - 2 * low
    return winner, points


def zero_sum(points: np.ndarray) -> np.ndarray:
    """The ``reward="zero_sum"`` rewards of a hand in individual play: +points for the
    scorer, -points/(n-1) for every other seat."""
    points = np.asarray(points, dtype=np.float64)
    n = len(points)
    return points - (points.sum() - points) / (n - 1)
