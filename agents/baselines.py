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

from block_env.observation import MAX_SEATS, layout_for_dim, obs_dim_for
from block_env.tiles import PIP_RANGE, tile_set

__all__ = [
    "GreedyAgent",
    "RandomAgent",
    "RuleAgent",
    "greedy_actions",
    "random_actions",
    "rule_actions",
]


class _Tables:
    """The lookup tables of one tile set (the bots read the set from the observation's
    length: see ``block_env.observation.layout_for_dim``)."""

    def __init__(self, obs_dim: int) -> None:
        lay = layout_for_dim(obs_dim)
        ts = lay.tiles
        fields = lay.fields
        t, v = ts.num_tiles, ts.num_values
        self.tiles, self.pips, self.all_tiles = ts.tiles, ts.pips, ts.all_tiles
        # Pip sum of the tile each action places; pass ranks below every tile.
        self.action_pips = np.array(
            [ts.pips[a // 2] for a in range(ts.pass_action)] + [-1], dtype=np.int64
        )
        # One matrix product turns the observation into the few numbers the rule bot needs:
        # column 0 hand mask, 1 line mask, 2 left end, 3 right end, 4 empty-line flag,
        # 5..8 tile counts by relative seat, 9..12 void masks by relative seat, 13 seats in
        # play, 14 partnership flag. Masks are sums of powers of two (exact in float64).
        read = np.zeros((lay.dim, _COLS), dtype=np.float64)
        read[fields["hand"], 0] = 2.0 ** np.arange(t)
        read[fields["line"], 1] = 2.0 ** np.arange(t)
        read[fields["left_end"], 2] = np.arange(v)
        read[fields["right_end"], 3] = np.arange(v)
        read[fields["empty_line"], 4] = 1
        for r in range(MAX_SEATS):
            read[fields["tile_counts"].start + r, 5 + r] = 1
            start = fields["voids"].start + v * r
            read[start : start + v, 9 + r] = 2.0 ** np.arange(v)
        read[fields["seats"], 13] = 1
        read[fields["partnership"], 14] = 1
        self.read = read
        # Value mask of each tile's two halves.
        self.tile_values = tuple((1 << a) | (1 << b) for a, b in ts.tiles)
        # Tiles that show at least one value of a value set.
        self.tiles_with_any: list[int] = []
        for m in range(1 << v):
            acc = 0
            for val in range(v):
                if m >> val & 1:
                    acc |= ts.with_value[val]
            self.tiles_with_any.append(acc)
        # The same tables as arrays, for ``rule_actions`` (a batch of positions at once).
        self.num_tiles, self.num_values = t, v
        self.tile_a = np.array([a for a, _ in ts.tiles], dtype=np.int64)
        self.tile_b = np.array([b for _, b in ts.tiles], dtype=np.int64)
        self.tile_pips = np.array(ts.pips, dtype=np.int64)
        self.has_value = np.array(
            [[val in pair for val in range(v)] for pair in ts.tiles], dtype=np.int64
        )  # (T, V): 1 where the tile shows the value
        self.tiles_with_any_arr = np.array(self.tiles_with_any, dtype=np.int64)
        # Per placing action (2T of them): its tile, that tile's halves and pips, and the
        # open ends (a value mask) it leaves: on the empty line, and for each (left, right).
        act_tile = np.arange(2 * t) // 2
        a_, b_ = self.tile_a[act_tile], self.tile_b[act_tile]
        self.act_tile, self.act_pips, self.act_double = act_tile, a_ + b_, a_ == b_
        self.ends_empty = (1 << a_) | (1 << b_)
        left = np.arange(v)[:, None, None]
        right = np.arange(v)[None, :, None]
        end1 = (np.arange(2 * t) % 2 == 1)[None, None, :]
        new_l = np.where(end1, left, np.where(a_ == left, b_, a_))
        new_r = np.where(end1, np.where(a_ == right, b_, a_), right)
        self.ends_line = ((1 << new_l) | (1 << new_r)).astype(np.int64)  # (V, V, 2T)


_COLS = 15
_TABLES: dict[int, _Tables] = {}


def _tables(obs_dim: int) -> _Tables:
    """The tables for observations of length ``obs_dim`` (built once per set)."""
    tables = _TABLES.get(obs_dim)
    if tables is None:
        tables = _TABLES[obs_dim] = _Tables(obs_dim)
    return tables


# Pip sum placed by each action, by the action count 2T+1 of each set (a mask's length).
_ACTION_PIPS_BY_WIDTH = {
    tile_set(n).num_actions: _tables(obs_dim_for(tile_set(n).num_tiles, n + 1)).action_pips
    for n in PIP_RANGE
}


def _legal(observation: Mapping[str, np.ndarray]) -> np.ndarray:
    legal = np.flatnonzero(observation["action_mask"])
    if legal.size == 0:
        raise ValueError("the action mask holds no legal action: this seat is not on turn")
    return legal


class RandomAgent:
    """Uniformly random legal action, from its own seeded generator (reproducible by seed)."""

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def reseed(self, seed: int) -> None:
        """Restart the draws from ``seed``."""
        self.rng = np.random.default_rng(seed)

    def probabilities(self, observation: Mapping[str, np.ndarray]) -> np.ndarray:
        """The distribution ``act`` draws from: uniform over the legal actions."""
        mask = np.asarray(observation["action_mask"], dtype=np.float64)
        return mask / mask.sum()

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
        pips = _ACTION_PIPS_BY_WIDTH.get(len(observation["action_mask"]))
        if pips is None:
            raise ValueError(
                f"an action mask of length {len(observation['action_mask'])} is no tile set's: "
                f"use one of {sorted(_ACTION_PIPS_BY_WIDTH)} (2T+1 for T tiles)"
            )
        return int(legal[np.argmax(pips[legal])])


def greedy_actions(mask: np.ndarray) -> np.ndarray:
    """``GreedyAgent().act`` on a batch of masks (M, 2T+1) of any tile set, row by row:
    the heaviest legal tile, the lowest action id on ties, pass when nothing else is legal.
    ValueError for a width that is no set's or a row without a legal action."""
    mask = np.asarray(mask)
    pips = _ACTION_PIPS_BY_WIDTH.get(mask.shape[-1]) if mask.ndim == 2 else None
    if pips is None:
        raise ValueError(
            f"greedy_actions takes masks (M, 2T+1), got shape {mask.shape}: the width must "
            f"be one of {sorted(_ACTION_PIPS_BY_WIDTH)}"
        )
    legal = mask != 0
    if not legal.any(1).all():
        bad = np.flatnonzero(~legal.any(1))[:5].tolist()
        raise ValueError(f"the action mask holds no legal action in rows {bad}")
    return np.where(legal, pips, np.iinfo(np.int64).min).argmax(1)


def random_actions(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """A uniformly random legal action per row of ``mask`` (M, A), drawn from ``rng``."""
    mask = np.asarray(mask)
    return np.where(mask != 0, rng.random(mask.shape), -1.0).argmax(1)


_POPCOUNT7 = tuple(bin(m).count("1") for m in range(128))


def _values_of(mask: int, tile_values: tuple[int, ...]) -> int:
    """The set of the values shown on the tiles of ``mask`` (a bit mask of values)."""
    out = 0
    while mask:
        low = mask & -mask
        out |= tile_values[low.bit_length() - 1]
        mask ^= low
    return out


def _pips_of(mask: int, pips: tuple[int, ...]) -> int:
    total = 0
    while mask:
        low = mask & -mask
        total += pips[low.bit_length() - 1]
        mask ^= low
    return total


_MAX_HAND = 14  # the largest hand any set allows (28 tiles between two players)
# _NONE[u][m][k]: chance that k tiles drawn from u candidates miss all m "matching" ones.
_NONE = [
    [
        [comb(u - m, k) / comb(u, k) if k <= u else 0.0 for k in range(_MAX_HAND + 1)]
        for m in range(u + 1)
    ]
    for u in range(28 + 1)
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
        obs = observation["observation"]
        tab = _tables(obs.shape[-1])
        v = (obs @ tab.read).tolist()
        hand, line = int(v[0]), int(v[1])
        empty = v[4] > 0.5
        left, right = int(v[2]), int(v[3])
        counts = [int(c) for c in v[5:9]]
        voids = [int(m) for m in v[9:13]]
        n = int(v[13])
        partnership = v[14] > 0.5
        w = self.weights

        tiles_with_any, tile_values, pips = tab.tiles_with_any, tab.tile_values, tab.pips
        unseen = tab.all_tiles & ~hand & ~line
        # Tiles the next seat may hold: unseen ones showing none of its void values.
        next_cands = unseen & ~tiles_with_any[voids[1]]
        n_next = next_cands.bit_count()
        k_next = counts[1]
        unseen_n = unseen.bit_count()
        mean = _pips_of(unseen, pips) / unseen_n if unseen_n else 0.0

        best, best_score = legal[0], -1e18
        for action in legal:
            tile, end = divmod(action, 2)
            a, b = tab.tiles[tile]
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
            fits = tiles_with_any[ends]
            held = _values_of(rest, tile_values)
            score = w["pips"] * (a + b) + w["variety"] * _POPCOUNT7[held]
            if a == b:
                score += w["double"]
            score += w["follow"] * _POPCOUNT7[held & ends]
            m = (next_cands & fits).bit_count()
            p_pass = _NONE[n_next][m][min(k_next, _MAX_HAND)]
            score += w["pass"] * p_pass
            score += w["follow_tiles"] * (rest & fits).bit_count()
            if not (unseen & fits) and not (rest & fits):
                # Nobody can place any more: the hand blocks on this move.
                margin = _block_margin(_pips_of(rest, pips), counts, n, partnership, mean)
                score += w["block"] * margin
            if score > best_score:
                best, best_score = action, score
        return best

    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """``act`` on a batch of positions at once (see ``rule_actions``)."""
        return rule_actions(obs, mask, self.weights)


# _NONE as an array indexed [unseen candidates, matching candidates, tiles drawn].
_NONE_ARR = np.zeros((28 + 1, 28 + 1, _MAX_HAND + 1), dtype=np.float64)
for _u, _rows in enumerate(_NONE):
    for _m, _row in enumerate(_rows):
        _NONE_ARR[_u, _m] = _row


def rule_actions(
    obs: np.ndarray, mask: np.ndarray, weights: Mapping[str, float] | None = None
) -> np.ndarray:
    """The rule bot on a batch: row i of the result is ``RuleAgent(weights).act`` of the
    position (``obs[i]``, ``mask[i]``), exactly (the same float64 arithmetic in the same
    order, ties to the lowest action id), for observations (M, D) of any tile set and
    masks (M, 2T+1). Written for the trainer's opponents and batched evaluation, where one
    Python call per game would cost more than the games themselves.

    Raises ValueError when a row's mask holds no legal action (as ``act`` does) or the
    shapes do not fit one tile set."""
    w = dict(DEFAULT_WEIGHTS) if weights is None else RuleAgent(weights).weights
    obs = np.asarray(obs)
    mask = np.asarray(mask)
    if obs.ndim != 2 or mask.ndim != 2 or obs.shape[0] != mask.shape[0]:
        raise ValueError(
            f"rule_actions takes obs (M, D) and mask (M, A) with the same M, got shapes "
            f"{obs.shape} and {mask.shape}"
        )
    tab = _tables(obs.shape[1])
    t = tab.num_tiles
    if mask.shape[1] != 2 * t + 1:
        raise ValueError(
            f"a mask of width {mask.shape[1]} does not fit observations of length "
            f"{obs.shape[1]} (a set of {t} tiles has {2 * t + 1} actions)"
        )
    m_rows = obs.shape[0]
    legal = mask != 0
    if m_rows and not legal.any(1).all():
        bad = np.flatnonzero(~legal.any(1))[:5].tolist()
        raise ValueError(
            f"the action mask holds no legal action in rows {bad}: those seats are not on turn"
        )
    if m_rows == 0:
        return np.zeros(0, dtype=np.int64)
    first = legal.argmax(1)  # the lowest legal action
    hand_all = (obs @ tab.read[:, 0]).astype(np.int64)
    single = (legal.sum(1) == 1) | (np.bitwise_count(hand_all) == 1)  # forced, or a domino
    out = first.astype(np.int64)
    rows = np.flatnonzero(~single)  # positions with a choice: score every placement
    if rows.size:
        out[rows] = _rule_choices(tab, w, obs[rows], legal[rows])
    return out


def _rule_choices(
    tab: _Tables, w: Mapping[str, float], obs: np.ndarray, legal: np.ndarray
) -> np.ndarray:
    """The rule bot's best placement for positions with at least two legal placements and
    two tiles in hand: every placement scored at once, (M, 2T), in ``RuleAgent.act``'s order
    of float operations."""
    t = tab.num_tiles
    m_rows = obs.shape[0]
    val = obs @ tab.read  # float64, exact (sums of integers and powers of two)
    hand = val[:, 0].astype(np.int64)
    line = val[:, 1].astype(np.int64)
    left = val[:, 2].astype(np.int64)
    right = val[:, 3].astype(np.int64)
    empty = val[:, 4] > 0.5
    counts = val[:, 5:9].astype(np.int64)
    void_next = val[:, 10].astype(np.int64)
    n = val[:, 13].astype(np.int64)
    partnership = val[:, 14] > 0.5

    shifts = np.arange(t, dtype=np.int64)
    unseen = tab.all_tiles & ~hand & ~line
    next_cands = unseen & ~tab.tiles_with_any_arr[void_next]
    n_next = np.bitwise_count(next_cands).astype(np.int64)
    k_next = np.minimum(counts[:, 1], _MAX_HAND)
    unseen_bits = (unseen[:, None] >> shifts) & 1
    unseen_n = unseen_bits.sum(1)
    unseen_pips = unseen_bits @ tab.tile_pips
    mean = np.divide(unseen_pips, unseen_n, out=np.zeros(m_rows), where=unseen_n > 0)

    # Per (row, tile): the hand without that tile, the values still held, the pips left;
    # then per (row, action) through the action's tile.
    hand_bits = (hand[:, None] >> shifts) & 1  # (M, T)
    per_value = hand_bits @ tab.has_value  # (M, V) tiles in hand showing each value
    held_v = (per_value[:, None, :] - tab.has_value[None]) > 0  # (M, T, V)
    held_t = (held_v.astype(np.int64) << np.arange(tab.num_values, dtype=np.int64)).sum(2)
    held = held_t[:, tab.act_tile]  # (M, 2T)
    rest = (hand[:, None] & ~(np.int64(1) << shifts))[:, tab.act_tile]
    mine = ((hand_bits @ tab.tile_pips)[:, None] - tab.tile_pips)[:, tab.act_tile]

    ends = np.where(empty[:, None], tab.ends_empty, tab.ends_line[left, right])  # (M, 2T)
    fits = tab.tiles_with_any_arr[ends]

    score = w["pips"] * tab.act_pips + w["variety"] * np.bitwise_count(held).astype(np.int64)
    score = score + np.where(tab.act_double, w["double"], 0.0)
    score = score + w["follow"] * np.bitwise_count(held & ends).astype(np.int64)
    matching = np.bitwise_count(next_cands[:, None] & fits).astype(np.int64)
    p_pass = _NONE_ARR[n_next[:, None], matching, k_next[:, None]]
    score = score + w["pass"] * p_pass
    rest_fits = rest & fits
    score = score + w["follow_tiles"] * np.bitwise_count(rest_fits).astype(np.int64)
    blocks = ((unseen[:, None] & fits) == 0) & (rest_fits == 0)
    if blocks.any():
        margin = _block_margins(mine, counts, n, partnership, mean)
        score = score + np.where(blocks, w["block"] * margin, 0.0)
    return np.where(legal[:, : 2 * t], score, -np.inf).argmax(1)


def _block_margins(
    mine: np.ndarray, counts: np.ndarray, n: np.ndarray, partnership: np.ndarray, mean: np.ndarray
) -> np.ndarray:
    """``_block_margin`` for (M, 2T) pips left, row by row (the same float operations)."""
    c = counts.astype(np.float64)[:, :, None]
    mean2 = mean[:, None]
    part = (c[:, 1] + c[:, 3]) * mean2 - (mine + c[:, 2] * mean2)
    o1, o2, o3 = c[:, 1] * mean2, c[:, 2] * mean2, c[:, 3] * mean2
    n2 = n[:, None]
    total = (o1 + np.where(n2 >= 3, o2, 0.0)) + np.where(n2 >= 4, o3, 0.0)
    low = np.minimum(o1, np.where(n2 >= 3, o2, np.inf))
    low = np.minimum(low, np.where(n2 >= 4, o3, np.inf))
    alone = (n2 == 2) | (mine < low)
    shared = -((total + mine) - 2 * low) / np.maximum(n2 - 1, 1)
    indiv = np.where(alone, total - mine, shared)
    return np.where(partnership[:, None], part, indiv)
