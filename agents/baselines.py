"""Baseline bots: ``random``, ``greedy`` and the rule-based ``rules`` player.

All three act from the observation dict alone (the vector of ``block_env.observation`` and
the ``action_mask``); none of them ever sees another seat's tiles. They are the fixed
opponents of evaluation and training, so they are deterministic where it is cheap to be
(``greedy`` and ``rules`` always pick the same move in the same observation) and fast
(tens of microseconds per move).
"""

from __future__ import annotations

from collections.abc import Mapping
from math import comb

import numpy as np

from block_env.observation import FIELDS, MAX_SEATS, OBS_DIM
from block_env.tiles import ALL_TILES, NUM_TILES, PASS, PIPS, TILES, TILES_WITH_VALUE

__all__ = ["GreedyAgent", "RandomAgent", "RuleAgent"]

# Pip sum of the tile each action places; pass ranks below every tile.
_ACTION_PIPS = np.array([PIPS[a // 2] for a in range(PASS)] + [-1], dtype=np.int64)


def _legal(observation: Mapping[str, np.ndarray]) -> np.ndarray:
    legal = np.flatnonzero(observation["action_mask"])
    if legal.size == 0:
        raise ValueError("the action mask holds no legal action: this seat is not on turn")
    return legal


class RandomAgent:
    """Uniformly random legal action, from its own seeded generator (reproducible by seed)."""

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        legal = _legal(observation)
        return int(legal[self.rng.integers(legal.size)])


class GreedyAgent:
    """Plays its heaviest legal tile (highest pip sum); passes only when pass is the only
    legal action. Ties go to the lowest action id: the tile with the lower tile index (the
    one with the smaller low half, e.g. [0|6] before [1|5] before [3|3]), then the left end."""

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        legal = _legal(observation)
        # argmax returns the first maximum and ``legal`` is ascending: lowest id wins ties.
        return int(legal[np.argmax(_ACTION_PIPS[legal])])


# --- reading the observation vector ---------------------------------------------------
# One matrix product turns the observation into the few numbers the rule bot needs:
# column 0 hand mask, 1 line mask, 2 left end, 3 right end, 4 empty-line flag,
# 5..8 tile counts by relative seat, 9..12 void masks by relative seat, 13 seats in play,
# 14 partnership flag. Masks are sums of powers of two (exact in float64).
_COLS = 15
_READ = np.zeros((OBS_DIM, _COLS), dtype=np.float64)
_READ[FIELDS["hand"], 0] = 2.0 ** np.arange(NUM_TILES)
_READ[FIELDS["line"], 1] = 2.0 ** np.arange(NUM_TILES)
_READ[FIELDS["left_end"], 2] = np.arange(7)
_READ[FIELDS["right_end"], 3] = np.arange(7)
_READ[FIELDS["empty_line"], 4] = 1
for _r in range(MAX_SEATS):
    _READ[FIELDS["tile_counts"].start + _r, 5 + _r] = 1
    _v = FIELDS["voids"].start + 7 * _r
    _READ[_v : _v + 7, 9 + _r] = 2.0 ** np.arange(7)
_READ[FIELDS["seats"], 13] = 1
_READ[FIELDS["partnership"], 14] = 1

# Value mask (7 bits) of each tile's two halves, and "tile shows value v" masks.
_TILE_VALUES = tuple((1 << a) | (1 << b) for a, b in TILES)
_POPCOUNT7 = tuple(bin(m).count("1") for m in range(128))
# Tiles that show at least one value of a 7-bit value set.
_TILES_WITH_ANY: list[int] = []
for _m in range(128):
    _acc = 0
    for _val in range(7):
        if _m >> _val & 1:
            _acc |= TILES_WITH_VALUE[_val]
    _TILES_WITH_ANY.append(_acc)


def _values_of(mask: int) -> int:
    """7-bit set of the values shown on the tiles of ``mask``."""
    out = 0
    while mask:
        low = mask & -mask
        out |= _TILE_VALUES[low.bit_length() - 1]
        mask ^= low
    return out


def _pips_of(mask: int) -> int:
    total = 0
    while mask:
        low = mask & -mask
        total += PIPS[low.bit_length() - 1]
        mask ^= low
    return total


# _NONE[u][m][k]: chance that k tiles drawn from u candidates miss all m "matching" ones.
_NONE = [
    [[comb(u - m, k) / comb(u, k) if k <= u else 0.0 for k in range(8)] for m in range(u + 1)]
    for u in range(NUM_TILES + 1)
]


def _block_margin(mine: int, counts: list[int], n: int, partnership: bool, mean: float) -> float:
    """Expected points margin of a hand that blocks now, guessing each unseen hand holds
    ``mean`` pips per tile: the block winner scores the others' totals minus its own."""
    if partnership:
        return (counts[1] + counts[3]) * mean - (mine + counts[2] * mean)
    others = [counts[r] * mean for r in range(1, n)]
    if n == 2 or mine < min(others):
        return sum(others) - mine
    # Someone else is lowest: they score, and that loss is shared by the n - 1 others.
    low = min(others)
    return -(sum(others) + mine - 2 * low) / (n - 1)


DEFAULT_WEIGHTS: dict[str, float] = {
    "pips": 0.6,  # per pip of the tile placed: shed weight early
    "double": 5.0,  # doubles fit only one value: play them while they still can be
    "variety": 0.3,  # per distinct value left in hand: keep answers to any end
    "follow": 3.0,  # per open end (after the move) that the bot can still match
    "follow_tiles": 0.6,  # per tile left in hand that fits an open end
    "pass": 40.0,  # times the chance that the next seat must pass
    "block": 1.0,  # per expected point won (or lost) when the move blocks the hand
}


class RuleAgent:
    """Rule-based bot that scores each legal move from the observation alone.

    For a placement it weighs: the pips shed (heavy tiles first), a bonus for doubles,
    how many distinct values stay in hand (variety), how many of the resulting open ends it
    can still follow, the chance that the next seat cannot follow — counted from the tiles
    it has not seen and the values that seat has shown lacking by passing (the ``voids``
    field) — and, when a move certainly blocks the hand, the expected block score from the
    pips left. A move that plays its last tile always wins. Ties go to the lowest action id.
    """

    def __init__(self, weights: Mapping[str, float] | None = None) -> None:
        w = dict(DEFAULT_WEIGHTS)
        if weights is not None:
            unknown = set(weights) - set(w)
            if unknown:
                raise ValueError(
                    f"unknown RuleAgent weights {sorted(unknown)}: use {sorted(DEFAULT_WEIGHTS)}"
                )
            w.update({k: float(v) for k, v in weights.items()})
        self.weights = w

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        legal = _legal(observation).tolist()
        if len(legal) == 1:
            return legal[0]
        v = (observation["observation"] @ _READ).tolist()
        hand, line = int(v[0]), int(v[1])
        empty = v[4] > 0.5
        left, right = int(v[2]), int(v[3])
        counts = [int(c) for c in v[5:9]]
        voids = [int(m) for m in v[9:13]]
        n = int(v[13])
        partnership = v[14] > 0.5
        w = self.weights

        unseen = ALL_TILES & ~hand & ~line
        # Tiles the next seat may hold: unseen ones showing none of its void values.
        next_cands = unseen & ~_TILES_WITH_ANY[voids[1]]
        n_next = next_cands.bit_count()
        k_next = counts[1]
        unseen_n = unseen.bit_count()
        mean = _pips_of(unseen) / unseen_n if unseen_n else 0.0

        best, best_score = legal[0], -1e18
        for action in legal:
            tile, end = divmod(action, 2)
            a, b = TILES[tile]
            rest = hand & ~(1 << tile)
            if rest == 0:
                return action  # domino
            if empty:
                new_l, new_r = a, b
            elif end == 0:
                new_l, new_r = (b if a == left else a), right
            else:
                new_l, new_r = left, (b if a == right else a)
            ends = (1 << new_l) | (1 << new_r)
            fits = _TILES_WITH_ANY[ends]
            held = _values_of(rest)
            score = w["pips"] * (a + b) + w["variety"] * _POPCOUNT7[held]
            if a == b:
                score += w["double"]
            score += w["follow"] * _POPCOUNT7[held & ends]
            m = (next_cands & fits).bit_count()
            p_pass = _NONE[n_next][m][min(k_next, 7)]
            score += w["pass"] * p_pass
            score += w["follow_tiles"] * (rest & fits).bit_count()
            if not (unseen & fits) and not (rest & fits):
                # Nobody can place any more: the hand blocks on this move.
                score += w["block"] * _block_margin(_pips_of(rest), counts, n, partnership, mean)
            if score > best_score:
                best, best_score = action, score
        return best
