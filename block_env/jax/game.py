"""The rules of Block as pure JAX functions of one game (``jax.vmap`` batches them).

The same game as ``block_env.rules`` and ``block_env.observation.encode``: every branch of
the rules is a ``jnp.where`` over values computed for both sides, so the functions trace to
one straight-line program (no Python control flow on traced values, no callbacks).

Deals: ``deal`` turns two uint32 seed words and a counter into a uniformly random deal.
Each tile gets a 32-bit key from a cheap integer hash of the seed and its index (its low
five bits replaced by the tile index, so keys are distinct); the tiles ranked by key are
dealt as ``rules.deal`` deals a permutation: seat s gets ranks s*k .. s*k+k-1. The seed
words come from a JAX key's data (``seed_words``), so no call to ``jax.random``'s
generator runs inside ``init`` or ``step``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from block_env.jax.spec import Spec
from block_env.jax.state import State
from block_env.observation import MAX_SEATS

_I32 = jnp.int32
_U32 = jnp.uint32
_GOLDEN = 0x9E3779B9
_TILE_STEP = 0x85EBCA77
_LOT_SALT = 0x27D4EB2F


def _mix(x: jax.Array) -> jax.Array:
    """A 32-bit integer finalizer (a bijection with full avalanche) on uint32 values."""
    x = x ^ (x >> 16)
    x = x * _U32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * _U32(0x846CA68B)
    return x ^ (x >> 16)


def seed_words(key: jax.Array) -> jax.Array:
    """Two uint32 words mixed from the data of a JAX key (typed or raw uint32)."""
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    words = jnp.asarray(key).astype(_U32).reshape(-1)
    s0, s1 = _U32(0x243F6A88), _U32(0x85A308D3)
    for i in range(words.shape[0]):  # static: the key's length
        s0 = _mix(s0 ^ words[i])
        s1 = _mix(s1 + words[i] * _U32(_GOLDEN))
    return jnp.stack([s0, s1])


def deal(spec: Spec, seed: jax.Array, counter: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(hands (n,) int32 masks, lot) of deal number ``counter`` from ``seed`` (two words):
    ``hand_size`` random tiles per seat, the rest out of play, and a uniform seat for the
    lot that picks the first leader."""
    tb = spec.tables
    h = _mix(seed[0] ^ _mix(seed[1] + counter.astype(_U32) * _U32(_GOLDEN)))
    t = jnp.arange(spec.num_tiles, dtype=_U32)
    keys = (_mix(h + (t + 1) * _U32(_TILE_STEP)) & ~_U32(31)) | t
    rank = jnp.sum(keys[None, :] < keys[:, None], axis=1, dtype=_I32)
    seat = rank // spec.hand_size  # n and above: out of play
    seats = jnp.arange(spec.n, dtype=_I32)
    hands = jnp.sum(jnp.where(seat[None, :] == seats[:, None], tb.tile_bit[None, :], 0), axis=1)
    lot = ((_mix(h ^ _U32(_LOT_SALT)) >> 8) % _U32(spec.n)).astype(_I32)
    return hands.astype(_I32), lot


def _bits(mask: jax.Array, width: int) -> jax.Array:
    """The low ``width`` bits of ``mask`` (any leading shape) along a new last axis."""
    return (mask[..., None] >> jnp.arange(width, dtype=_I32)) & 1


def _popcount(mask: jax.Array) -> jax.Array:
    return jax.lax.population_count(mask)


def _pick(values: jax.Array, seat: jax.Array) -> jax.Array:
    """``values[seat]`` for a short per-seat vector, as a masked sum (cheap under vmap)."""
    return jnp.sum(jnp.where(jnp.arange(values.shape[0]) == seat, values, 0))


def opening(spec: Spec, hands: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(seat, tile) of the forced opening under ``opener="highest_double"``."""
    tb = spec.tables
    dealt = jnp.bitwise_or.reduce(hands)
    held = _bits(dealt, spec.num_tiles) == 1
    tile = jnp.argmax(jnp.where(held, tb.open_rank, -1)).astype(_I32)
    seat = jnp.argmax((hands >> tile) & 1).astype(_I32)
    return seat, tile


def start_hand(
    spec: Spec,
    state: State,
    hands: jax.Array,
    leader: jax.Array,
    scores: jax.Array,
    number: jax.Array,
) -> State:
    """``state`` with a new hand dealt: ``hands``, ``leader`` (replaced by the holder of the
    opening tile under ``highest_double``), ``scores`` and the hand's number."""
    opening_tile = jnp.full((), -1, _I32)
    if spec.config.opener == "highest_double":
        leader, opening_tile = opening(spec, hands)
    return state.replace(
        current_player=leader,
        _hands=hands,
        _played=jnp.zeros((), _I32),
        _left=jnp.full((), -1, _I32),
        _right=jnp.full((), -1, _I32),
        _leader=leader,
        _opening=opening_tile,
        _voids=jnp.zeros(spec.n, _I32),
        _scores=scores,
        _hand_number=number,
        _history=jnp.full((spec.n, spec.slots), -1, _I32),
        _turn=jnp.zeros((), _I32),
    )


def init(spec: Spec, key: jax.Array) -> State:
    """The first hand of an episode, dealt from ``key`` (its observation not yet set)."""
    n = spec.n
    seed = seed_words(key)
    hands, lot = deal(spec, seed, jnp.zeros((), _I32))
    blank = State(
        current_player=lot,
        observation=jnp.zeros(spec.dim, jnp.float32),
        rewards=jnp.zeros(n, jnp.float32),
        terminated=jnp.zeros((), jnp.bool_),
        truncated=jnp.zeros((), jnp.bool_),
        legal_action_mask=jnp.zeros(spec.num_actions, jnp.bool_),
        _step_count=jnp.zeros((), _I32),
        _hands=hands,
        _played=jnp.zeros((), _I32),
        _left=jnp.full((), -1, _I32),
        _right=jnp.full((), -1, _I32),
        _leader=lot,
        _opening=jnp.full((), -1, _I32),
        _voids=jnp.zeros(n, _I32),
        _scores=jnp.zeros(n, _I32),
        _hand_number=jnp.zeros((), _I32),
        _history=jnp.full((n, spec.slots), -1, _I32),
        _turn=jnp.zeros((), _I32),
        _seed=seed,
    )
    state = start_hand(spec, blank, hands, lot, blank._scores, blank._hand_number)
    return state.replace(legal_action_mask=legal_mask(spec, state))


def legal_mask(spec: Spec, state: State) -> jax.Array:
    """The legal actions of the seat to act as a bool vector of length 2T+1 (pass last)."""
    tb = spec.tables
    hand = _pick(state._hands, state.current_player)
    empty = state._left < 0
    with_left = tb.with_value[jnp.maximum(state._left, 0)]
    with_right = tb.with_value[jnp.maximum(state._right, 0)]
    opening_bit = jnp.where(state._opening >= 0, 1 << jnp.maximum(state._opening, 0), hand)
    on_left = jnp.where(empty, opening_bit, hand & with_left)
    on_right = jnp.where(empty, 0, hand & with_right)
    t = spec.num_tiles
    places = jnp.stack([_bits(on_left, t), _bits(on_right, t)], axis=-1).reshape(2 * t) == 1
    no_move = (on_left | on_right) == 0
    return jnp.concatenate([places, no_move[None]])


def _pips(spec: Spec, hands: jax.Array) -> jax.Array:
    """Pips left in each hand (n,)."""
    counts = _popcount(hands[:, None] & spec.tables.pip_bits[None, :])
    return jnp.sum(counts << jnp.arange(4, dtype=_I32), axis=1)


def _spread(spec: Spec, side: jax.Array, amount: jax.Array, on: jax.Array) -> jax.Array:
    """Rewards as ``rules.spread_reward``: +amount (an int) to the seats of ``side``, the
    opposite split over the other side(s); +0.0 everywhere unless ``on`` (a winner, amount
    > 0)."""
    tb = spec.tables
    amount = jnp.clip(amount, 0, tb.loss.shape[0] - 1)
    rewards = jnp.where(tb.team == side, amount.astype(jnp.float32), tb.loss[amount])
    return jnp.where(on, rewards, jnp.float32(0.0))


def _score(spec: Spec, hands: jax.Array, actor: jax.Array, domino: jax.Array) -> tuple:
    """(points (n,), hand winner seat, winning side, tie) of a finished hand, as
    ``rules.score_hand``: a domino scores the pips in the opposing hands; a block scores the
    strictly lowest side the others' totals minus its own once; a tied block scores 0."""
    pips = _pips(spec, hands)
    team = spec.tables.team
    if spec.config.partnership:
        side_pips = jnp.stack([pips[0] + pips[2], pips[1] + pips[3]])
    else:
        side_pips = pips
    total = jnp.sum(side_pips)
    low = jnp.min(side_pips)
    lowest = jnp.argmin(side_pips).astype(_I32)  # the first side at the lowest total
    tie = ~domino & (jnp.sum(side_pips == low) > 1)
    actor_side = team[actor]
    win_side = jnp.where(domino, actor_side, lowest)
    gained = jnp.where(domino, total - _pick(side_pips, actor_side), total - 2 * low)
    gained = jnp.where(tie, 0, gained)
    winner = jnp.where(domino, actor, lowest)  # in partnership side s's first seat is s
    points = jnp.where((team == win_side) & ~tie, gained, 0)
    return points, winner, win_side, tie


def _episode_end(spec: Spec, scores: jax.Array, win_side: jax.Array, tie: jax.Array) -> tuple:
    """(over, decided, winning side) once a hand's points are in ``scores``: a hand episode
    ends with the hand; a match when a seat reaches the target, won by the side alone at the
    top score (a draw when sides tie there)."""
    if spec.config.episode == "hand":
        return jnp.ones((), jnp.bool_), ~tie, win_side
    top = jnp.max(scores)
    over = top >= spec.config.target
    at_top = scores == top
    team = spec.tables.team
    first = jnp.argmax(at_top).astype(_I32)
    if spec.config.partnership:
        sides_at_top = jnp.any(at_top[0::2]).astype(_I32) + jnp.any(at_top[1::2]).astype(_I32)
    else:
        sides_at_top = jnp.sum(at_top.astype(_I32))
    return over, over & (sides_at_top == 1), team[first]


def _rewards(spec: Spec, points, winner, tie, ended, over, decided, match_side) -> jax.Array:
    """Every seat's reward on a step (zero unless it ended a hand), as ``rules.hand_rewards``."""
    reward = spec.config.reward
    if reward == "points":
        return jnp.where(ended, points.astype(jnp.float32), jnp.float32(0.0))
    if reward == "zero_sum":
        amount = jnp.max(points)
        side = spec.tables.team[winner]
        return _spread(spec, side, amount, ended & ~tie & (amount > 0))
    return _spread(spec, match_side, jnp.ones((), _I32), ended & over & decided)


def apply_action(spec: Spec, state: State, action: jax.Array, seed: jax.Array) -> State:
    """The state after the seat to act plays a legal ``action`` (``rules.apply_action``,
    then, when the hand ends and the match goes on, ``rules.next_hand`` with the deal drawn
    from ``seed``). Sets rewards, terminated and the next mask; not the observation."""
    tb = spec.tables
    n = spec.n
    seat = state.current_player
    is_pass = action == spec.pass_action
    tile = jnp.where(is_pass, 0, action >> 1)
    end = action & 1
    a, b = tb.tile_a[tile], tb.tile_b[tile]
    left, right = state._left, state._right
    empty = left < 0
    new_left = jnp.where(empty, a, jnp.where(end == 0, jnp.where(a == left, b, a), left))
    new_right = jnp.where(empty, b, jnp.where(end == 1, jnp.where(a == right, b, a), right))
    bit = jnp.where(is_pass, 0, 1 << tile)
    me = jnp.arange(n) == seat
    hands = jnp.where(me, state._hands & ~bit, state._hands)
    shown = (1 << jnp.maximum(left, 0)) | (1 << jnp.maximum(right, 0))
    voids = jnp.where(me & is_pass, state._voids | shown, state._voids)
    left = jnp.where(is_pass, left, new_left)
    right = jnp.where(is_pass, right, new_right)
    open_tiles = tb.with_value[jnp.maximum(left, 0)] | tb.with_value[jnp.maximum(right, 0)]
    domino = ~is_pass & (_pick(hands, seat) == 0)
    ended = ~is_pass & (domino | jnp.all((hands & open_tiles) == 0))
    history = state._history
    if spec.info_state:
        col = jnp.arange(spec.slots) == state._turn // n
        history = jnp.where(me[:, None] & col[None, :], action, history)

    points, winner, win_side, tie = _score(spec, hands, seat, domino)
    scores = state._scores + jnp.where(ended, points, 0)
    over, decided, match_side = _episode_end(spec, scores, win_side, tie)
    over = ended & over
    rewards = _rewards(spec, points, winner, tie, ended, over, decided, match_side)
    moved = state.replace(
        current_player=jnp.where(seat + 1 == n, 0, seat + 1).astype(_I32),
        rewards=rewards,
        terminated=over,
        _hands=hands,
        _played=state._played | bit,
        _left=left,
        _right=right,
        _voids=voids,
        _scores=scores,
        _history=history,
        _turn=state._turn + 1,
    )
    number = state._hand_number + 1
    dealt, _ = deal(spec, seed, number)
    leader = jnp.where(state._leader + 1 == n, 0, state._leader + 1).astype(_I32)
    redealt = start_hand(spec, moved, dealt, leader, scores, number)
    after = jax.tree.map(lambda x, y: jnp.where(ended & ~over, x, y), redealt, moved)
    return after.replace(legal_action_mask=legal_mask(spec, after))


def observe(spec: Spec, state: State, seat: jax.Array) -> jax.Array:
    """``seat``'s observation as ``observation.encode`` (float32; relative seats padded to
    4), followed by ``information_state.encode_history`` when the spec keeps the history."""
    tb = spec.tables
    n, t, v = spec.n, spec.num_tiles, spec.num_values
    seat = jnp.asarray(seat, _I32)
    rel = jnp.arange(n, dtype=_I32)
    order = jnp.where(seat + rel >= n, seat + rel - n, seat + rel)  # absolute seat of rel r
    pick = order[:, None] == rel[None, :]  # [r, s]: relative seat r is absolute seat s

    def by_rel(values: jax.Array) -> jax.Array:
        return jnp.sum(jnp.where(pick, values[None, :], 0), axis=1)

    hands_rel = by_rel(state._hands)
    pad = MAX_SEATS - n
    f32 = jnp.float32
    counts = jnp.pad(_popcount(hands_rel), (0, pad))
    voids = jnp.pad(_bits(by_rel(state._voids), v), ((0, pad), (0, 0))).reshape(-1)
    scores = jnp.pad(by_rel(state._scores), (0, pad))
    four = jnp.arange(MAX_SEATS, dtype=_I32)
    lead_rel = state._leader - seat
    lead_rel = jnp.where(lead_rel < 0, lead_rel + n, lead_rel)
    act_rel = state.current_player - seat
    act_rel = jnp.where(act_rel < 0, act_rel + n, act_rel)
    values = jnp.arange(v, dtype=_I32)
    in_play = jnp.bitwise_or.reduce(state._hands) | state._played
    parts = [
        _bits(hands_rel[0], t),
        _bits(state._played, t),
        values == state._left,
        values == state._right,
        (state._left < 0)[None],
        counts,
        voids,
        scores,
        jnp.full(1, spec.config.target, _I32),
        four == lead_rel,
        (four == act_rel) & ~state.terminated,
        tb.seats_present,
        jnp.full(1, int(spec.config.partnership), _I32),
        (t - _popcount(in_play))[None],
    ]
    obs = jnp.concatenate([p.astype(f32) for p in parts])
    if not spec.info_state:
        return obs
    return jnp.concatenate([obs, _history_part(spec, state, order)])


def _history_part(spec: Spec, state: State, order: jax.Array) -> jax.Array:
    """The history of the current hand seen from the observer whose relative seats are
    ``order``: 4 x H slots of (tile one-hot, left, right, pass)."""
    t = spec.num_tiles
    rows = jnp.sum(
        jnp.where(order[:, None, None] == jnp.arange(spec.n)[None, :, None], state._history, 0),
        axis=1,
    )  # (n, H): the moves of relative seat r
    moved = rows >= 0
    is_pass = rows == spec.pass_action
    placed = moved & ~is_pass
    tile = jnp.where(placed, rows >> 1, -1)
    slot = jnp.concatenate(
        [
            tile[..., None] == jnp.arange(t),
            (placed & ((rows & 1) == 0))[..., None],
            (placed & ((rows & 1) == 1))[..., None],
            is_pass[..., None],
        ],
        axis=-1,
    ).astype(jnp.float32)
    slot = jnp.pad(slot, ((0, MAX_SEATS - spec.n), (0, 0), (0, 0)))
    return slot.reshape(-1)
