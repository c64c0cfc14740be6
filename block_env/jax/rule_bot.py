"""The baseline bots ``rules`` and ``greedy`` as pure JAX functions of one position.

``rule_bot(game)`` and ``greedy_bot(game)`` return ``f(observation, legal_action_mask) ->
action`` (int32) for a game configuration: jittable, vmappable (a batch of positions, (B, D)
and (B, 2T+1), is mapped over its first axis), no Python control flow on traced values, no
callbacks. They choose exactly the move of ``agents.baselines.rule_actions`` and
``greedy_actions`` (``tests/fast_paths/test_jax_rule_bot.py``); an information-state
observation is read through its plain prefix, as the trainers' bots read it.

Exactness. The observation's bit fields are decoded with integer arithmetic (28-bit tile
masks, ``jax.lax.population_count``). The rule bot's move scores are computed in float64
(``jax.enable_x64`` inside the function: float32 can reorder near-ties) with the float
operations of the reference in its order. Every product the reference rounds (a weight
times a count, 40 times a pass chance, a tile count times the mean pips of an unseen tile)
is read from a float64 table filled on the host by numpy, because XLA fuses a product into
the addition that follows (one rounding instead of two); the traced code only adds,
subtracts, compares and divides.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from math import comb
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from block_env.config import BlockConfig
from block_env.observation import obs_layout

__all__ = ["RULE_WEIGHTS", "greedy_bot", "rule_bot"]

# The rule bot's weights (``agents.baselines.DEFAULT_WEIGHTS``; a test keeps them equal).
RULE_WEIGHTS: dict[str, float] = {
    "pips": 0.6,
    "double": 5.0,
    "variety": 0.3,
    "follow": 3.0,
    "follow_tiles": 0.6,
    "pass": 40.0,
    "block": 1.0,
}
_MAX_HAND = 14  # the pass chance's largest hand (28 tiles between two players)

Bot = Callable[[jax.Array, jax.Array], jax.Array]


class _Tables:
    """Constant tables of one tile set and largest hand (numpy; int32 masks, float64
    scores)."""

    def __init__(self, max_pip: int, hand_size: int) -> None:
        lay = obs_layout(BlockConfig(num_players=2, max_pip=max_pip, hand_size=1))
        ts = lay.tiles
        t, v = ts.num_tiles, ts.num_values
        w = RULE_WEIGHTS
        self.fields, self.dim, self.num_tiles, self.num_values = lay.fields, lay.dim, t, v
        self.all_tiles = ts.all_tiles
        tile_a = np.array([a for a, _ in ts.tiles])
        tile_b = np.array([b for _, b in ts.tiles])
        self.pips = np.array(ts.pips, dtype=np.int32)
        self.has_value = np.array([[x in p for x in range(v)] for p in ts.tiles], np.int32)
        # the tiles showing any value of each value set (a mask of values)
        self.tiles_with_any = np.array(
            [_union(ts.with_value[x] for x in range(v) if m >> x & 1) for m in range(1 << v)],
            dtype=np.int32,
        )
        act_tile = np.arange(2 * t) // 2
        a_, b_ = tile_a[act_tile], tile_b[act_tile]
        self.act_tile = act_tile.astype(np.int32)
        self.ends_empty = ((1 << a_) | (1 << b_)).astype(np.int32)
        left = np.arange(v)[:, None, None]
        right = np.arange(v)[None, :, None]
        end1 = (np.arange(2 * t) % 2 == 1)[None, None, :]
        new_l = np.where(end1, left, np.where(a_ == left, b_, a_))
        new_r = np.where(end1, np.where(a_ == right, b_, a_), right)
        self.ends_line = ((1 << new_l) | (1 << new_r)).astype(np.int32)  # (V, V, 2T)
        # the score's products, as numpy computes them in float64
        act_pips = (a_ + b_).astype(np.int64)
        self.s_pips = w["pips"] * act_pips
        self.s_double = np.where(a_ == b_, w["double"], 0.0)
        self.s_variety = w["variety"] * np.arange(v + 1, dtype=np.int64)
        self.s_follow = w["follow"] * np.arange(3, dtype=np.int64)
        self.s_follow_tiles = w["follow_tiles"] * np.arange(t + 1, dtype=np.int64)
        none = np.zeros((t + 1, t + 1, _MAX_HAND + 1))
        for u in range(t + 1):
            for m in range(u + 1):
                for k in range(min(u, _MAX_HAND) + 1):
                    none[u, m, k] = comb(u - m, k) / comb(u, k)
        self.s_pass = w["pass"] * none
        # count times mean pips of an unseen tile: [c, unseen pips, unseen tiles]
        total = int(sum(ts.pips))
        pips_ = np.arange(total + 1, dtype=np.int64)[:, None]
        tiles_ = np.arange(t + 1, dtype=np.int64)[None, :]
        mean = np.divide(pips_, tiles_, out=np.zeros((total + 1, t + 1)), where=tiles_ > 0)
        counts = np.arange(2 * hand_size + 1, dtype=np.float64)[:, None, None]
        self.count_mean = counts * mean[None]
        # greedy: the pips each action places, -1 for pass
        self.greedy_pips = np.append(act_pips, -1).astype(np.int32)
        assert w["block"] == 1.0  # the margin enters unmultiplied (no rounding to copy)


def _union(masks: Any) -> int:
    out = 0
    for m in masks:
        out |= m
    return out


@cache
def _tables(max_pip: int, hand_size: int) -> _Tables:
    return _Tables(max_pip, hand_size)


def _config(game: Any) -> BlockConfig:
    config = getattr(game, "config", game)
    if not isinstance(config, BlockConfig):
        raise ValueError(
            f"expected a BlockConfig or a block_env.jax env, got {type(game).__name__}"
        )
    return config


def rule_bot(game: Any) -> Bot:
    """The rule bot of ``game`` (a ``BlockConfig`` or a ``BlockEnv``): ``f(observation,
    legal_action_mask) -> action``, the move ``agents.baselines.rule_actions`` picks."""
    config = _config(game)
    tab = _tables(config.max_pip, config.hand_size)
    return _batched(lambda obs, mask: _rule_action(tab, obs, mask), tab)


def greedy_bot(game: Any) -> Bot:
    """The greedy bot of ``game``: the heaviest legal tile, the lowest action id on ties,
    pass when nothing else is legal (``agents.baselines.greedy_actions``)."""
    config = _config(game)
    tab = _tables(config.max_pip, config.hand_size)

    def act(obs: jax.Array, mask: jax.Array) -> jax.Array:
        pips = jnp.asarray(tab.greedy_pips)
        return jnp.argmax(jnp.where(mask, pips, jnp.iinfo(jnp.int32).min)).astype(jnp.int32)

    return _batched(act, tab)


def _batched(f: Bot, tab: _Tables) -> Bot:
    """``f`` on one position, or mapped over the first axis of a batch; ValueError for
    shapes that do not fit the game."""
    num_actions = 2 * tab.num_tiles + 1

    def bot(observation: jax.Array, legal_action_mask: jax.Array) -> jax.Array:
        obs, mask = jnp.asarray(observation), jnp.asarray(legal_action_mask)
        if (
            obs.ndim not in (1, 2)
            or obs.shape[-1] < tab.dim
            or mask.shape[-1] != num_actions
            or obs.shape[:-1] != mask.shape[:-1]
        ):
            raise ValueError(
                f"expected observations (D,) or (B, D) with D >= {tab.dim} and masks of "
                f"width {num_actions} with the same leading shape, got {obs.shape} and "
                f"{mask.shape}"
            )
        mask = mask.astype(jnp.bool_)
        return jax.vmap(f)(obs, mask) if obs.ndim == 2 else f(obs, mask)

    return bot


def _word(bits: jax.Array) -> jax.Array:
    """The 0/1 entries ``bits`` as an int32 mask (bit i = entry i)."""
    powers = np.left_shift(1, np.arange(bits.shape[0]), dtype=np.int32)
    return jnp.sum(jnp.where(bits, powers, 0), dtype=jnp.int32)


def _popcount(x: jax.Array) -> jax.Array:
    return jax.lax.population_count(x)


def _decode(tab: _Tables, obs: jax.Array) -> dict[str, jax.Array]:
    """The fields the rule bot reads, as int32 (masks, counts) and bools."""
    f, v = tab.fields, tab.num_values
    bits = obs[: tab.dim] > 0.5
    void_next = f["voids"].start + v  # relative seat 1
    return {
        "hand": _word(bits[f["hand"]]),
        "line": _word(bits[f["line"]]),
        "left": jnp.sum(jnp.where(bits[f["left_end"]], np.arange(v, dtype=np.int32), 0)),
        "right": jnp.sum(jnp.where(bits[f["right_end"]], np.arange(v, dtype=np.int32), 0)),
        "empty": bits[f["empty_line"].start],
        "counts": obs[f["tile_counts"]].astype(jnp.int32),
        "void_next": _word(bits[void_next : void_next + v]),
        "n": jnp.sum(bits[f["seats"]], dtype=jnp.int32),
        "partnership": bits[f["partnership"].start],
    }


def _rule_action(tab: _Tables, obs: jax.Array, mask: jax.Array) -> jax.Array:
    d = _decode(tab, obs)
    x = _features(tab, d)
    with jax.enable_x64(True):
        best = _best(tab, x, d, mask[: 2 * tab.num_tiles])
    first = jnp.argmax(mask)  # the lowest legal action
    single = (jnp.sum(mask, dtype=jnp.int32) == 1) | (_popcount(d["hand"]) == 1)
    return jnp.where(single, first, jnp.argmax(best)).astype(jnp.int32)


def _features(tab: _Tables, d: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """The integers each placement's score is made of (int32, (2T,) per action): the
    variety, follow and follow-tile counts, the pass chance's indices, whether the move
    blocks, the pips left; and the unseen tiles' count and pips."""
    t = tab.num_tiles
    i32 = jnp.int32
    shifts = np.arange(t, dtype=np.int32)
    hand = d["hand"]
    with_any = jnp.asarray(tab.tiles_with_any)
    unseen = tab.all_tiles & ~hand & ~d["line"]
    next_cands = unseen & ~with_any[d["void_next"]]
    hand_bits = (hand >> shifts) & 1  # (T,)
    per_value = hand_bits @ tab.has_value  # (V,) tiles in hand showing each value
    held_v = (per_value[None, :] - tab.has_value) > 0  # (T, V) values kept without tile t
    held_t = jnp.sum(jnp.where(held_v, 1 << np.arange(tab.num_values, dtype=np.int32), 0), 1)
    act = tab.act_tile
    held = held_t[act]  # (2T,)
    rest = (hand & ~(np.int32(1) << shifts))[act]
    ends_line = jnp.asarray(tab.ends_line)[d["left"], d["right"]]
    ends = jnp.where(d["empty"], tab.ends_empty, ends_line)
    fits = with_any[ends]
    rest_fits = rest & fits
    return {
        "variety": _popcount(held),
        "follow": _popcount(held & ends),
        "n_next": _popcount(next_cands),
        "matching": _popcount(next_cands & fits),
        "k_next": jnp.minimum(d["counts"][1], _MAX_HAND),
        "follow_tiles": _popcount(rest_fits),
        "blocks": ((unseen & fits) == 0) & (rest_fits == 0),
        "mine": (jnp.sum(hand_bits * tab.pips, dtype=i32) - tab.pips)[act],
        "unseen_n": _popcount(unseen),
        "unseen_pips": jnp.sum(jnp.where((unseen >> shifts) & 1 == 1, tab.pips, 0), dtype=i32),
    }


def _best(
    tab: _Tables, x: dict[str, jax.Array], d: dict[str, jax.Array], legal: jax.Array
) -> jax.Array:
    """The legal placements of the highest score (bool, (2T,)): the scores in float64, in
    ``agents.baselines._rule_choices``'s order of operations. Traced with x64 enabled; the
    argmax is left to the caller (its lowering would mix float64 and float32)."""
    score = jnp.asarray(tab.s_pips) + jnp.asarray(tab.s_variety)[x["variety"]]
    score = score + jnp.asarray(tab.s_double)
    score = score + jnp.asarray(tab.s_follow)[x["follow"]]
    score = score + jnp.asarray(tab.s_pass)[x["n_next"], x["matching"], x["k_next"]]
    score = score + jnp.asarray(tab.s_follow_tiles)[x["follow_tiles"]]
    margin = _block_margin(tab, x, d)
    score = jnp.where(legal, score + jnp.where(x["blocks"], margin, 0.0), -jnp.inf)
    return score == jnp.max(score)


def _block_margin(tab: _Tables, x: dict[str, jax.Array], d: dict[str, jax.Array]) -> jax.Array:
    """``agents.baselines._block_margins`` for one position's (2T,) pips left: the products
    of a tile count and the mean pips of an unseen tile come from ``count_mean``."""
    counts, n = d["counts"], d["n"]
    pips, tiles = x["unseen_pips"], x["unseen_n"]
    table = jnp.asarray(tab.count_mean)
    o1, o2, o3 = (table[counts[r], pips, tiles] for r in (1, 2, 3))
    mine = x["mine"].astype(jnp.float64)
    part = table[counts[1] + counts[3], pips, tiles] - (mine + o2)
    total = (o1 + jnp.where(n >= 3, o2, 0.0)) + jnp.where(n >= 4, o3, 0.0)
    low = jnp.minimum(o1, jnp.where(n >= 3, o2, jnp.inf))
    low = jnp.minimum(low, jnp.where(n >= 4, o3, jnp.inf))
    alone = (n == 2) | (mine < low)
    shared = -((total + mine) - 2 * low) / jnp.maximum(n - 1, 1).astype(jnp.float64)
    indiv = jnp.where(alone, total - mine, shared)
    return jnp.where(d["partnership"], part, indiv)
