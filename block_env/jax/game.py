"""The rules of Block as pure JAX functions of one game (``jax.vmap`` batches them).

The same game as ``block_env.rules`` and ``block_env.observation.encode``: every branch of
the rules is a ``jnp.where`` over values computed for both sides, so the functions trace to
one straight-line program (no Python control flow on traced values, no callbacks).

Written for XLA on a CPU as much as for accelerators: per-seat values are handled as
scalars in Python loops over the (at most 4) seats, never as reductions over short axes;
sets of tiles, the legal actions and the observation's 0/1 fields are built as 32-bit
words, computed once behind a fusion barrier (``once``) and unpacked in one pass.

Deals: ``deal`` turns two uint32 seed words and a counter into a uniformly random deal by
drawing tiles one at a time without replacement, each draw a uniform pick (a 32-bit hash
of the seed, the counter and the draw number, reduced modulo the tiles left) among the
tiles not yet drawn. The seed words come from a JAX key's data (``seed_words``), so no call
to ``jax.random``'s generator runs inside ``init`` or ``step``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from block_env.jax.spec import Spec
from block_env.jax.state import State
from block_env.observation import MAX_SEATS, obs_layout

_I32 = jnp.int32
_U32 = jnp.uint32
_F32 = jnp.float32
_GOLDEN = 0x9E3779B9
_DRAW_STEP = 0x85EBCA77
_LOT_SALT = 0x27D4EB2F
_DRAW_UNROLL = 1  # draws of a deal per loop iteration (more: faster, longer to compile)
_COMPACT_FROM = 256  # batches from this size compute deals only for the games that need one

# the observation's 0/1 fields, each written as the low bits of one per-game value
_FLAG_FIELDS = (
    "hand",
    "line",
    "left_end",
    "right_end",
    "empty_line",
    "voids",
    "leader",
    "to_act",
    "seats",
    "partnership",
)


# ---- small tools ------------------------------------------------------------------------


def _mix(x: jax.Array) -> jax.Array:
    """A 32-bit integer finalizer (a bijection with full avalanche) on uint32 values."""
    x = x ^ (x >> 16)
    x = x * _U32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * _U32(0x846CA68B)
    return x ^ (x >> 16)


def _seats(x: jax.Array) -> list[jax.Array]:
    """A per-seat vector as a list of scalars."""
    return [x[i] for i in range(x.shape[0])]


def _select(index: jax.Array, values: list) -> jax.Array:
    """``values[index]`` as a chain of selects (elementwise under vmap)."""
    out = values[0]
    for i in range(1, len(values)):
        out = jnp.where(index == i, values[i], out)
    return out


def _union(masks: list) -> jax.Array:
    out = masks[0]
    for m in masks[1:]:
        out = out | m
    return out


def _next(n: int, seat: jax.Array) -> jax.Array:
    return jnp.where(seat + 1 == n, 0, seat + 1).astype(_I32)


def _popcount(x: jax.Array) -> jax.Array:
    return jax.lax.population_count(x)


def once(f, *args: jax.Array):
    """``f(*args)`` computed inside a conditional: a fusion barrier. XLA fuses cheap integer
    work into every element of its consumers, so bits unpacked from a word would each
    recompute the word, and arrays stacked from per-seat values would each recompute what
    the seats share; a conditional's results are computed once, inside it. The predicate
    (always true) is a runtime value, and under ``vmap`` the batching rule keeps it
    unbatched so that the conditional stays one (a select would fuse again). Only where
    the default backend is the CPU: an accelerator's conditional waits for its predicate
    on the host, and its compiler has compute to spare."""
    if not _barriers():
        return f(*args)

    @jax.custom_batching.custom_vmap
    def barrier(*args: jax.Array):
        return _in_cond(f, args)

    @barrier.def_vmap
    def batched(axis_size: int, in_batched: list, *args: jax.Array) -> tuple:
        fb = jax.vmap(f, in_axes=[0 if b else None for b in in_batched], axis_size=axis_size)
        out = _in_cond(fb, args)
        return out, jax.tree.map(lambda _: True, out)

    return barrier(*args)


def once_where(need: jax.Array, f, *args: jax.Array):
    """``f(*args)`` where ``need`` (a bool) holds, anything (zeros) elsewhere, behind a
    fusion barrier like ``once``. Under ``vmap`` over ``_COMPACT_FROM`` games or more, the
    batching rule computes ``f`` only for the games that need it when they are at most an
    eighth of the batch (gathered into a smaller batch and scattered back), for all games
    otherwise: deals are needed at the end of a hand only. Off the CPU, ``f(*args)``."""
    if not _barriers():
        return f(*args)

    @jax.custom_batching.custom_vmap
    def barrier(need: jax.Array, *args: jax.Array):
        return _in_cond(f, args)

    @barrier.def_vmap
    def batched(axis_size: int, in_batched: list, need: jax.Array, *args: jax.Array) -> tuple:
        axes = [0 if b else None for b in in_batched[1:]]
        every = jax.vmap(f, in_axes=axes, axis_size=axis_size)
        if not in_batched[0] or axis_size < _COMPACT_FROM:
            out = _in_cond(every, args)
            return out, jax.tree.map(lambda _: True, out)
        size = axis_size // 8
        pos = jnp.where(need, jnp.cumsum(need.astype(_I32)) - 1, size)
        games = jnp.full(size, axis_size, _I32).at[pos].set(jnp.arange(axis_size), mode="drop")

        def few():
            take = jnp.minimum(games, axis_size - 1)
            sub = [a[take] if b else a for a, b in zip(args, in_batched[1:])]
            part = jax.vmap(f, in_axes=axes, axis_size=size)(*sub)
            return jax.tree.map(
                lambda x: (
                    jnp.zeros((axis_size,) + x.shape[1:], x.dtype).at[games].set(x, mode="drop")
                ),
                part,
            )

        out = jax.lax.cond(jnp.sum(need.astype(_I32)) <= size, few, lambda: every(*args))
        return out, jax.tree.map(lambda _: True, out)

    return barrier(need, *args)


def _barriers() -> bool:
    """Whether to place fusion barriers: when tracing for a CPU default backend."""
    return jax.default_backend() == "cpu"


def _in_cond(f, args: tuple):
    first = args[0].reshape(-1)[0].astype(_I32)
    shapes = jax.eval_shape(f, *args)
    return jax.lax.cond(
        first != first + 1,
        lambda: f(*args),
        lambda: jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes),
    )


# ---- deals ------------------------------------------------------------------------------


def seed_words(key: jax.Array) -> jax.Array:
    """Two uint32 words mixed from the data of a JAX key (typed, or raw uint32 words)."""
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    words = jnp.asarray(key).astype(_U32).reshape(-1)
    s0, s1 = _U32(0x243F6A88), _U32(0x85A308D3)
    for i in range(words.shape[0]):  # static: the key's length
        s0 = _mix(s0 ^ words[i])
        s1 = _mix(s1 + words[i] * _U32(_GOLDEN))
    return jnp.stack([s0, s1])


def _below(h: jax.Array, m: jax.Array) -> jax.Array:
    """floor(h * m / 2**32) for uint32 ``h`` and ``m`` < 2**16: a uniform pick in 0..m-1
    from a uniform 32-bit ``h`` (each value m/2**32 of the way to exact), in 32-bit
    arithmetic: (hi * m + (lo * m >> 16)) >> 16 with hi, lo the halves of h."""
    hi, lo = h >> 16, h & _U32(0xFFFF)
    return (hi * m + ((lo * m) >> 16)) >> 16


def _select_bit(mask: jax.Array, r: jax.Array) -> jax.Array:
    """Position of the ``r``-th set bit (from 0, lowest first) of a uint32 ``mask``."""
    pos = jnp.zeros_like(r)
    for width in (16, 8, 4, 2, 1):
        low = _popcount(mask & _U32((1 << width) - 1))
        high = r >= low
        r = jnp.where(high, r - low, r)
        mask = jnp.where(high, mask >> width, mask)
        pos = jnp.where(high, pos + _U32(width), pos)
    return pos


def deal(
    spec: Spec, seed: jax.Array, counter: jax.Array, need: jax.Array | None = None
) -> tuple[list, jax.Array]:
    """(hands: n int32 masks, lot) of deal number ``counter`` from ``seed`` (two words):
    ``hand_size`` random tiles per seat, the rest out of play, and a uniform seat for the
    lot that picks the first leader. When that takes fewer draws, the tiles left out are
    drawn first and the last seat keeps what remains. With ``need`` (a bool), the deal is
    only made where it holds (zeros elsewhere)."""
    if need is None:
        need = jnp.ones((), jnp.bool_)
    *hands, lot = once_where(need, lambda s, c: _deal(spec, s, c), seed, counter)
    return hands, lot


def _deal(spec: Spec, seed: jax.Array, counter: jax.Array) -> list[jax.Array]:
    n, k, t = spec.n, spec.hand_size, spec.num_tiles
    base = _mix(seed[0] ^ _mix(seed[1] + counter.astype(_U32) * _U32(_GOLDEN)))
    left_out = t - n * k
    out_first = left_out + (n - 1) * k < n * k
    skip = left_out if out_first else 0  # draws for no seat (out of play) first
    draws = skip + (n - 1 if out_first else n) * k

    def draw(i: jax.Array, carry: tuple) -> tuple:
        remaining, hands = carry
        i = i.astype(_U32)
        h = _mix(base + (i + 1) * _U32(_DRAW_STEP))
        bit = _U32(1) << _select_bit(remaining, _below(h, _U32(t) - i))
        owner = jnp.where(i < skip, n, (i - skip) // k)
        hands = jnp.where(jnp.arange(n) == owner, hands | bit, hands)
        return remaining & ~bit, hands

    remaining, hands = jax.lax.fori_loop(
        0, draws, draw, (_U32((1 << t) - 1), jnp.zeros(n, _U32)), unroll=_DRAW_UNROLL
    )
    hands = _seats(hands)
    if out_first:
        hands[n - 1] = remaining
    lot = _below(_mix(base ^ _U32(_LOT_SALT)), _U32(n))
    return [h.astype(_I32) for h in hands] + [lot.astype(_I32)]


def opening(spec: Spec, hands: list) -> tuple[jax.Array, jax.Array]:
    """(seat, tile) of the forced opening under ``opener="highest_double"``: the dealt
    tile of highest rank (``Tables.open_rank``: doubles by value, then pips, then the
    higher half; ranks are distinct)."""
    ranks = spec.tables_np.open_rank
    dealt = _union(hands)
    best = jnp.full((), -1, _I32)
    for tile in range(spec.num_tiles):
        best = jnp.where((dealt >> tile) & 1 == 1, jnp.maximum(best, ranks[tile] * 32 + tile), best)
    tile = (best & 31).astype(_I32)
    seat = jnp.zeros((), _I32)
    for s in range(1, spec.n):
        seat = jnp.where((hands[s] >> tile) & 1 == 1, s, seat)
    return seat, tile


# ---- positions ----------------------------------------------------------------------------


def start_hand(
    spec: Spec,
    state: State,
    hands: list,
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
        _hands=jnp.stack(hands),
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
    """The first hand of an episode, dealt from ``key``; mask and observation not set."""
    n = spec.n
    seed = seed_words(key)
    hands, lot = deal(spec, seed, jnp.zeros((), _I32))
    blank = State(
        current_player=lot,
        observation=jnp.zeros(spec.dim, _F32),
        rewards=jnp.zeros(n, _F32),
        terminated=jnp.zeros((), jnp.bool_),
        truncated=jnp.zeros((), jnp.bool_),
        legal_action_mask=jnp.zeros(spec.num_actions, jnp.bool_),
        _step_count=jnp.zeros((), _I32),
        _hands=jnp.stack(hands),
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
    return start_hand(spec, blank, hands, lot, blank._scores, blank._hand_number)


def _spread16(x: jax.Array) -> jax.Array:
    """The low 16 bits of uint32 ``x`` moved to the even bits 0, 2, .., 30."""
    x = x & _U32(0xFFFF)
    x = (x | (x << 8)) & _U32(0x00FF00FF)
    x = (x | (x << 4)) & _U32(0x0F0F0F0F)
    x = (x | (x << 2)) & _U32(0x33333333)
    return (x | (x << 1)) & _U32(0x55555555)


def legal_mask(spec: Spec, state: State) -> jax.Array:
    """The legal actions of the seat to act as a bool vector of length 2T+1 (pass last):
    bit 2t of two words is tile t on the left end, bit 2t+1 on the right end."""
    fields = (state.current_player, state._hands, state._left, state._right, state._opening)
    words = once(lambda *f: _legal_words(spec, *f), *fields)
    bits = (words[:, None] >> jnp.arange(32, dtype=_U32)) & 1
    return bits.reshape(-1)[: spec.num_actions] == 1


def _legal_words(spec: Spec, current, hands, left, right, opening) -> jax.Array:
    tb = spec.tables
    hand = _select(current, _seats(hands))
    empty = left < 0
    with_left = tb.with_value[jnp.maximum(left, 0)]
    with_right = tb.with_value[jnp.maximum(right, 0)]
    opening_bit = jnp.where(opening >= 0, 1 << jnp.maximum(opening, 0), hand)
    on_left = jnp.where(empty, opening_bit, hand & with_left).astype(_U32)
    on_right = jnp.where(empty, 0, hand & with_right).astype(_U32)
    words = [
        _spread16(on_left) | (_spread16(on_right) << 1),
        _spread16(on_left >> 16) | (_spread16(on_right >> 16) << 1),
    ]
    p = spec.pass_action
    words[p // 32] = words[p // 32] | (((on_left | on_right) == 0).astype(_U32) << (p % 32))
    return jnp.stack(words)


# ---- the end of a hand --------------------------------------------------------------------


def _pips(spec: Spec, hand: jax.Array) -> jax.Array:
    """Pips left in a hand: sum over j of 2^j times the tiles whose pip sum has bit j."""
    bits = spec.tables_np.pip_bits
    return sum(_popcount(hand & int(bits[j])) << j for j in range(4))


def _first_at(values: list, target: jax.Array) -> jax.Array:
    """The first index whose value equals ``target``."""
    first = jnp.full((), len(values) - 1, _I32)
    for i in range(len(values) - 2, -1, -1):
        first = jnp.where(values[i] == target, i, first)
    return first


def _score(spec: Spec, hands: list, actor: jax.Array, domino: jax.Array) -> tuple:
    """(points by seat, hand winner seat, winning side, tie) of a finished hand, as
    ``rules.score_hand``: a domino scores the pips in the opposing hands; a block scores the
    strictly lowest side the others' totals minus its own once; a tied block scores 0."""
    pips = [_pips(spec, h) for h in hands]
    team = spec.config.teams
    side_pips = [pips[0] + pips[2], pips[1] + pips[3]] if spec.config.partnership else pips
    total = sum(side_pips)
    low = side_pips[0]
    for p in side_pips[1:]:
        low = jnp.minimum(low, p)
    lowest = _first_at(side_pips, low)
    tie = ~domino & (sum((p == low).astype(_I32) for p in side_pips) > 1)
    actor_side = actor & 1 if spec.config.partnership else actor
    win_side = jnp.where(domino, actor_side, lowest)
    gained = jnp.where(domino, total - _select(actor_side, side_pips), total - 2 * low)
    gained = jnp.where(tie, 0, gained)
    winner = jnp.where(domino, actor, lowest)  # in partnership side s's first seat is s
    points = [jnp.where((win_side == team[s]) & ~tie, gained, 0) for s in range(spec.n)]
    return jnp.stack(points), winner, win_side, tie


def _episode_end(spec: Spec, scores: list, win_side: jax.Array, tie: jax.Array) -> tuple:
    """(over, decided, winning side) once a hand's points are in ``scores``: a hand episode
    ends with the hand; a match when a seat reaches the target, won by the side alone at the
    top score (a draw when sides tie there)."""
    if spec.config.episode == "hand":
        return jnp.ones((), jnp.bool_), ~tie, win_side
    top = scores[0]
    for s in scores[1:]:
        top = jnp.maximum(top, s)
    over = top >= spec.config.target
    at_top = [s == top for s in scores]
    if spec.config.partnership:
        sides_at_top = (at_top[0] | at_top[2]).astype(_I32) + (at_top[1] | at_top[3])
        first = _first_at(scores, top) & 1
    else:
        sides_at_top = sum(a.astype(_I32) for a in at_top)
        first = _first_at(scores, top)
    return over, over & (sides_at_top == 1), first


def _spread(spec: Spec, side: jax.Array, amount: jax.Array, on: jax.Array) -> jax.Array:
    """Rewards as ``rules.spread_reward``: +amount (an int) to the seats of ``side``, the
    opposite split over the other side(s); +0.0 everywhere unless ``on`` (a winner, amount
    > 0)."""
    loss_table = spec.tables.loss
    amount = jnp.clip(amount, 0, loss_table.shape[0] - 1)
    gain, loss = amount.astype(_F32), loss_table[amount]
    team = spec.config.teams
    rewards = [
        jnp.where(on, jnp.where(side == team[s], gain, loss), _F32(0.0)) for s in range(spec.n)
    ]
    return jnp.stack(rewards)


def _rewards(spec: Spec, points, winner, tie, ended, over, decided, match_side) -> jax.Array:
    """Every seat's reward on a step (zero unless it ended a hand), as ``rules.hand_rewards``."""
    reward = spec.config.reward
    if reward == "points":
        return jnp.stack([jnp.where(ended, p.astype(_F32), _F32(0.0)) for p in points])
    if reward == "zero_sum":
        amount = points[0]
        for p in points[1:]:
            amount = jnp.maximum(amount, p)
        side = winner & 1 if spec.config.partnership else winner
        return _spread(spec, side, amount, ended & ~tie & (amount > 0))
    return _spread(spec, match_side, jnp.ones((), _I32), ended & over & decided)


# ---- a move -------------------------------------------------------------------------------


def apply_action(
    spec: Spec,
    state: State,
    action: jax.Array,
    seed: jax.Array,
    restart: jax.Array | None = None,
    abandon: jax.Array | None = None,
) -> State:
    """The state after the seat to act plays a legal ``action`` (``rules.apply_action``,
    then, when the hand ends and the match goes on, ``rules.next_hand`` with the deal drawn
    from ``seed``). Sets rewards and terminated, not the mask or the observation.

    With ``restart`` (seed words), a game whose episode ends, or that ``abandon`` (a bool)
    ends whatever the action, starts a new episode as ``init`` deals it from those words,
    keeping the step's rewards and terminated flag: one deal serves both cases."""
    moved, hands, domino, ended = _move(spec, state, action)
    moved = _hand_result(spec, moved, hands, state.current_player, domino, ended)
    n, over = spec.n, moved.terminated
    number = state._hand_number + 1
    if restart is None:
        dealt, _ = deal(spec, seed, number, ended & ~over)
        redealt = start_hand(spec, moved, dealt, _next(n, state._leader), moved._scores, number)
        again = ended & ~over
    else:
        new = over if abandon is None else over | abandon
        again = ended if abandon is None else ended | abandon
        number = jnp.where(new, 0, number)
        dealt, lot = deal(spec, jnp.where(new, restart, seed), number, again)
        leader = jnp.where(new, lot, _next(n, state._leader))
        scores = jnp.where(new, 0, moved._scores)
        redealt = start_hand(spec, moved, dealt, leader, scores, number).replace(
            _step_count=jnp.where(new, 0, moved._step_count),  # a new episode, as init deals it
            _seed=jnp.where(new, restart, moved._seed),
        )
    return jax.tree.map(lambda x, y: jnp.where(again, x, y), redealt, moved)


def _move(spec: Spec, state: State, action: jax.Array) -> tuple:
    """(the state after the move, the hands as a list, whether the mover dominoed, whether
    the hand ended): the tile leaves the mover's hand for the line and the end it matches
    takes its other value; a pass shows both end values lacking (the voids)."""
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
    shown = (1 << jnp.maximum(left, 0)) | (1 << jnp.maximum(right, 0))
    hands = [jnp.where(seat == s, h & ~bit, h) for s, h in enumerate(_seats(state._hands))]
    voids = [
        jnp.where((seat == s) & is_pass, v | shown, v) for s, v in enumerate(_seats(state._voids))
    ]
    left = jnp.where(is_pass, left, new_left)
    right = jnp.where(is_pass, right, new_right)
    open_tiles = tb.with_value[jnp.maximum(left, 0)] | tb.with_value[jnp.maximum(right, 0)]
    domino = ~is_pass & (_select(seat, hands) == 0)
    ended = ~is_pass & (domino | (_union(hands) & open_tiles == 0))
    history = state._history
    if spec.info_state:
        col = jnp.arange(spec.slots) == state._turn // n
        me = jnp.arange(n) == seat
        history = jnp.where(me[:, None] & col[None, :], action, history)
    moved = state.replace(
        current_player=_next(n, seat),
        _hands=jnp.stack(hands),
        _played=state._played | bit,
        _left=left,
        _right=right,
        _voids=jnp.stack(voids),
        _history=history,
        _turn=state._turn + 1,
    )
    return moved, hands, domino, ended


def _hand_result(spec: Spec, moved: State, hands: list, actor, domino, ended) -> State:
    """``moved`` with the step's rewards, the scores and ``terminated`` set: zero rewards
    unless ``actor``'s move ended the hand."""
    # the hand's result once, not once per seat of the arrays stacked from it
    points, winner, win_side, tie = once(
        lambda h, s, d: _score(spec, _seats(h), s, d), jnp.stack(hands), actor, domino
    )
    points = _seats(points)
    scores = [s + jnp.where(ended, p, 0) for s, p in zip(_seats(moved._scores), points)]
    over, decided, match_side = _episode_end(spec, scores, win_side, tie)
    over = ended & over
    return moved.replace(
        rewards=_rewards(spec, points, winner, tie, ended, over, decided, match_side),
        terminated=over,
        _scores=jnp.stack(scores),
    )


# ---- observations -------------------------------------------------------------------------


def observe(spec: Spec, state: State, seat: jax.Array) -> jax.Array:
    """``seat``'s observation as ``observation.encode`` (float32; relative seats padded to
    4), followed by ``information_state.encode_history`` when the spec keeps the history."""
    f = obs_layout(spec.config).fields
    seat = jnp.asarray(seat, _I32)
    fields = (seat, state._hands, state._voids, state._scores, state._played, state._left)
    fields += (state._right, state._leader, state.current_player, state.terminated)
    packed = once(lambda *x: _observation_words(spec, *x), *fields)
    nw = (f["out_of_play"].stop + 31) // 32
    bits = ((packed[:nw, None] >> jnp.arange(32, dtype=_U32)) & 1).reshape(-1).astype(_F32)
    vals = packed[nw:].astype(_F32)
    c0, c1 = f["tile_counts"].start, f["tile_counts"].stop
    s0, s1 = f["scores"].start, f["target"].stop
    o0 = f["out_of_play"].start
    obs = jnp.concatenate([bits[:c0], vals[:4], bits[c1:s0], vals[4:9], bits[s1:o0], vals[9:]])
    if not spec.info_state:
        return obs
    order = [seat]
    for _ in range(1, spec.n):
        order.append(_next(spec.n, order[-1]))
    return jnp.concatenate([obs, _history_part(spec, state, order)])


def _observation_words(
    spec: Spec, seat, hands, voids, scores, played, left, right, leader, current, terminated
) -> jax.Array:
    """The observation as uint32 words holding its 0/1 fields (position p is bit p % 32 of
    word p // 32), then its 10 counts: tile counts (4), scores (4), target, out of play."""
    lay = obs_layout(spec.config)
    n, v = spec.n, spec.num_values
    order = [seat]  # the absolute seat of each relative seat
    for _ in range(1, n):
        order.append(_next(n, order[-1]))
    hands, voids, scores = _seats(hands), _seats(voids), _seats(scores)
    hands_rel = [_select(o, hands) for o in order]
    lead_rel = leader - seat
    act_rel = current - seat
    flags = {
        "hand": hands_rel[0],
        "line": played,
        "left_end": jnp.where(left < 0, 0, 1 << jnp.maximum(left, 0)),
        "right_end": jnp.where(right < 0, 0, 1 << jnp.maximum(right, 0)),
        "empty_line": (left < 0).astype(_I32),
        "voids": _union([_select(o, voids) << (v * r) for r, o in enumerate(order)]),
        "leader": 1 << jnp.where(lead_rel < 0, lead_rel + n, lead_rel),
        "to_act": jnp.where(terminated, 0, 1 << jnp.where(act_rel < 0, act_rel + n, act_rel)),
        "seats": jnp.full((), (1 << n) - 1, _I32),
        "partnership": jnp.full((), int(spec.config.partnership), _I32),
    }
    pad = [jnp.zeros((), _I32)] * (MAX_SEATS - n)
    in_play = _union(hands) | played
    values = (
        [_popcount(h) for h in hands_rel]
        + pad
        + [_select(o, scores) for o in order]
        + pad
        + [jnp.full((), spec.config.target, _I32), spec.num_tiles - _popcount(in_play)]
    )
    return jnp.stack(_field_words(lay, flags) + [x.astype(_U32) for x in values])


def _field_words(lay, flags: dict[str, jax.Array]) -> list[jax.Array]:
    """The observation's 0/1 fields as uint32 words: position p is bit p % 32 of word
    p // 32 (``flags``: each field's bits, lowest first)."""
    words = [_U32(0)] * ((lay.dim + 31) // 32)
    for name in _FLAG_FIELDS:
        x = flags[name].astype(_U32)
        start, stop = lay.fields[name].start, lay.fields[name].stop
        w, s = divmod(start, 32)
        words[w] = words[w] | (x << s)
        if s + stop - start > 32:  # the field crosses into the next word
            words[w + 1] = words[w + 1] | (x >> (32 - s))
    return words


def _history_part(spec: Spec, state: State, order: list) -> jax.Array:
    """The history of the current hand seen from the observer whose relative seats are
    ``order``: 4 x H slots of (tile one-hot, left, right, pass)."""
    t = spec.num_tiles
    seat_rows = [state._history[s] for s in range(spec.n)]
    rows = jnp.stack([_select(o, seat_rows) for o in order])  # (n, H) by relative seat
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
    ).astype(_F32)
    slot = jnp.pad(slot, ((0, MAX_SEATS - spec.n), (0, 0), (0, 0)))
    return slot.reshape(-1)
