"""The observation vector of ``observation.encode`` joined from ready-made bytes: the AEC env's
fast path.

``encode`` writes about twenty numpy elements one by one; each write costs as much as
joining a few byte strings. Here every field is looked up as ready-made float32 bytes
(tile masks in two halves, the ends by their values, voids and one-hots by index), the
few numbers (tile counts, scores, tiles out of play) are packed with ``struct``, and the
joined bytes become one array. The result equals ``encode(config, state, seat)`` bit for
bit (checked by tests/fast_paths/test_bytes_encoder.py over random play on every tile set).

The env calls ``observation_bytes`` with a memo it empties whenever the hand changes: the
tail of the vector after the voids (scores, target, leader, to_act, seats, partnership,
tiles out of play) changes within a hand only with the seat to act, so it is joined once
per (observer, seat to act) and each step joins only the hand, line, ends, counts and
voids to it, through a closure per observer (tests/fast_paths/test_env_shortcuts.py checks the env's
vectors against ``encode``).

``all_observation_bytes`` (the parallel view's) gives every seat's vector at once, each as
a new bytearray: the line and ends are joined once for all seats and every seat's tail is
kept in the same memo (tests/fast_paths/test_all_seats_encoder.py checks it against
``observation_bytes`` and ``encode``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import cache
from operator import itemgetter

import numpy as np

from block_env.config import BlockConfig
from block_env.observation.layout import MAX_SEATS
from block_env.rules import EMPTY, State
from block_env.tiles import tile_set

__all__ = ["BytesEncoder", "bytes_encoder"]

_PACK1 = struct.Struct("=f").pack
_ALL_SEATS = "all seats"  # ``all_observation_bytes``'s memo keys: apart from (seat, to_act)


def _bits_table(width: int) -> list[bytes]:
    """float32 bytes of the ``width`` bits of every integer below 2**width (bit i at i)."""
    bits = (np.arange(1 << width, dtype=np.int64)[:, None] >> np.arange(width)) & 1
    rows = bits.astype(np.float32)
    return [row.tobytes() for row in rows]


def _floats(values: list[float]) -> bytes:
    return np.asarray(values, dtype=np.float32).tobytes()


@cache
def _tables(max_pip: int) -> tuple:
    """Per tile set: bit tables of the two halves of a tile mask, end and void bytes."""
    ts = tile_set(max_pip)
    t, v = ts.num_tiles, ts.num_values
    w = (t + 1) // 2
    low, high = _bits_table(w), _bits_table(t - w)
    ends = []
    for left in range(v):
        for right in range(v):
            row = [0.0] * (2 * v + 1)
            row[left] = row[v + right] = 1.0
            ends.append(_floats(row))
    empty = _floats([0.0] * (2 * v) + [1.0])
    voids = _bits_table(v)
    return t, w, (1 << w) - 1, low, high, v, ends, empty, voids


class BytesEncoder:
    """``encode`` for one game configuration: ``encoder(state, seat)`` is a read-only
    float32 array equal to ``encode(config, state, seat)`` (copy it before handing out).
    Immutable and shared (see ``bytes_encoder``); copies and pickles refer to the shared one."""

    def __init__(self, num_players: int, max_pip: int, target: int, partnership: bool) -> None:
        n = num_players
        self._key = (num_players, max_pip, target, partnership)
        self.num_players = n
        (self._t, self._w, self._mask_low, self._low, self._high, v, self._ends,
         self._empty, self._voids) = _tables(max_pip)  # fmt: skip
        self._v = v
        self._void_pad = bytes(4 * v * (MAX_SEATS - n))
        one_hot = [_floats([1.0 if i == k else 0.0 for i in range(MAX_SEATS)]) for k in range(n)]
        self._one_hot = one_hot
        self._zero4 = bytes(16)
        self._target = _PACK1(target)
        seats = [1.0 if r < n else 0.0 for r in range(MAX_SEATS)]
        self._seats_part = _floats([*seats, float(partnership)])
        # target, leader, to_act (index n: nobody, the episode is over), seats, partnership
        self._tail = [
            [
                self._target + one_hot[lead] + (one_hot + [self._zero4])[act] + self._seats_part
                for act in range(n + 1)
            ]
            for lead in range(n)
        ]
        self._pack_n = struct.Struct(f"={n}f").pack
        self._pad_n = bytes(4 * (MAX_SEATS - n))
        # for ``observation_bytes``: n floats then the zero padding to MAX_SEATS, one call;
        # per observer, the seats in relative order (one C call rotates a per-seat tuple)
        self._pack_padded = struct.Struct(f"={n}f{4 * (MAX_SEATS - n)}x").pack
        self._rotate = [itemgetter(*((seat + r) % n for r in range(n))) for seat in range(n)]
        self._join = [_observation_joiner(self, seat) for seat in range(n)]
        self._join_all = _all_seats_joiner(self)
        self._all_keys = [(_ALL_SEATS, current) for current in range(n)]

    def __reduce__(self) -> tuple:
        return (_encoder, self._key)

    def __deepcopy__(self, memo: dict) -> BytesEncoder:
        return self

    def __call__(self, state: State, seat: int) -> np.ndarray:
        w, ml, low, high = self._w, self._mask_low, self._low, self._high
        hands, played = state.hands, state.played
        n = self.num_players
        hand = hands[seat]
        in_hands = 0
        for h in hands:
            in_hands |= h
        left = state.left
        ends = self._empty if left == EMPTY else self._ends[left * self._v + state.right]
        # per-seat fields by relative seat: the tuples rotated so that ``seat`` comes first
        by_rel = hands[seat:] + hands[:seat]
        voids, scores = state.voids, state.scores
        pack, pad = self._pack_n, self._pad_n
        parts = [
            low[hand & ml],
            high[hand >> w],
            low[played & ml],
            high[played >> w],
            ends,
            pack(*map(int.bit_count, by_rel)),
            pad,
            *map(self._voids.__getitem__, voids[seat:] + voids[:seat]),
            self._void_pad,
            pack(*(scores[seat:] + scores[:seat])),
            pad,
            self._tail[(state.leader - seat) % n][
                n if state.episode_over else (state.current - seat) % n
            ],
            _PACK1(self._t - (in_hands | played).bit_count()),
        ]
        return np.frombuffer(b"".join(parts), dtype=np.float32)

    def observation_bytes(self, state: State, seat: int, memo: dict) -> bytes:
        """The bytes of ``self(state, seat)``, faster for a caller that keeps ``memo``: a
        dict it empties whenever the hand changes (a new deal, a finished hand, a reset).
        Within one hand the scores, the leader, the tiles out of play and ``episode_over``
        stay the same, so the tail of the vector after the voids is kept in ``memo`` by
        (seat, seat to act); the hand, line, ends, counts and voids are joined to it by the
        observer's joiner (``_observation_joiner``)."""
        current = state.current
        rest = memo.get((seat, current))
        if rest is None:  # once a hand for each observer and seat to act
            rest = memo[seat, current] = self._rest_bytes(state, seat)
        return self._join[seat](
            state.hands, state.played, state.left, state.right, state.voids, rest
        )

    def all_observation_bytes(self, state: State, memo: dict) -> tuple[bytearray, ...]:
        """Every seat's observation bytes, seat 0 first, each a new bytearray (the caller's
        to keep): ``observation_bytes(state, seat, memo)`` for each seat, built in one pass
        (``_all_seats_joiner``). ``memo`` is ``observation_bytes``'s; the tails of all seats
        are kept in it under keys of their own (``_all_rests``)."""
        rests = memo.get(self._all_keys[state.current])
        if rests is None:  # once a hand for each seat to act
            rests = self._all_rests(state, memo)
        return self._join_all(
            state.hands, state.played, state.left, state.right, state.voids, rests
        )

    def _all_rests(self, state: State, memo: dict) -> tuple[bytes, ...]:
        """Every seat's tail (``_rest_bytes``) for this seat to act, kept in ``memo``. The
        parts that stay the same all hand long (each seat's scores and leader tables, the
        tiles out of play) are kept there too, once for all seats to act."""
        n = self.num_players
        parts = memo.get(_ALL_SEATS)
        if parts is None:
            in_hands = state.played
            for h in state.hands:
                in_hands |= h
            out = _PACK1(self._t - in_hands.bit_count())
            parts = memo[_ALL_SEATS] = [
                (
                    self._pack_padded(*self._rotate[seat](state.scores)),
                    self._tail[(state.leader - seat) % n],
                    out,
                )
                for seat in range(n)
            ]
        current = state.current
        over = state.episode_over
        rests = tuple(
            scores + tail[n if over else (current - seat) % n] + out
            for seat, (scores, tail, out) in enumerate(parts)
        )
        memo[self._all_keys[current]] = rests
        return rests

    def _rest_bytes(self, state: State, seat: int) -> bytes:
        """The tail after the voids: scores, target, leader, to_act, seats, partnership and
        out_of_play (the same all hand long for one observer and one seat to act)."""
        n = self.num_players
        in_hands = state.played
        for h in state.hands:
            in_hands |= h
        return b"".join(
            (
                self._pack_padded(*self._rotate[seat](state.scores)),
                self._tail[(state.leader - seat) % n][
                    n if state.episode_over else (state.current - seat) % n
                ],
                _PACK1(self._t - in_hands.bit_count()),
            )
        )


def _observation_joiner(enc: BytesEncoder, seat: int) -> Callable[..., bytes]:
    """``(hands, played, left, right, voids, rest) -> bytes`` of the observation of
    ``seat``: hand, line, ends, tile counts and voids by relative seat, then ``rest``. One
    closure per observer and player count, its tables and the relative order of the seats
    bound in it (no attribute look-up, rotation or star-args on the hot path)."""
    n = enc.num_players
    w, ml, low, high, nv = enc._w, enc._mask_low, enc._low, enc._high, enc._v
    ends, empty, vt, pad, pack = enc._ends, enc._empty, enc._voids, enc._void_pad, enc._pack_padded
    a, b, c, d = ((seat + r) % n for r in range(MAX_SEATS))  # c, d only used when present

    if n == 2:

        def join(h: tuple, p: int, left: int, right: int, v: tuple, rest: bytes) -> bytes:
            hand = h[a]
            return b"".join(
                (
                    low[hand & ml],
                    high[hand >> w],
                    low[p & ml],
                    high[p >> w],
                    empty if left == EMPTY else ends[left * nv + right],
                    pack(hand.bit_count(), h[b].bit_count()),
                    vt[v[a]],
                    vt[v[b]],
                    pad,
                    rest,
                )
            )

    elif n == 3:

        def join(h: tuple, p: int, left: int, right: int, v: tuple, rest: bytes) -> bytes:
            hand = h[a]
            return b"".join(
                (
                    low[hand & ml],
                    high[hand >> w],
                    low[p & ml],
                    high[p >> w],
                    empty if left == EMPTY else ends[left * nv + right],
                    pack(hand.bit_count(), h[b].bit_count(), h[c].bit_count()),
                    vt[v[a]],
                    vt[v[b]],
                    vt[v[c]],
                    pad,
                    rest,
                )
            )

    else:

        def join(h: tuple, p: int, left: int, right: int, v: tuple, rest: bytes) -> bytes:
            hand = h[a]
            return b"".join(
                (
                    low[hand & ml],
                    high[hand >> w],
                    low[p & ml],
                    high[p >> w],
                    empty if left == EMPTY else ends[left * nv + right],
                    pack(hand.bit_count(), h[b].bit_count(), h[c].bit_count(), h[d].bit_count()),
                    vt[v[a]],
                    vt[v[b]],
                    vt[v[c]],
                    vt[v[d]],
                    rest,
                )
            )

    return join


def _all_seats_joiner(enc: BytesEncoder) -> Callable[..., tuple[bytearray, ...]]:
    """``(hands, played, left, right, voids, rests) -> bytearrays`` of every seat's
    observation, seat 0 first (``rests``: each seat's tail, ``_rest_bytes``), each a new
    bytearray joined straight from the parts. The line and its ends are joined once, each
    hand's tile count and each seat's voids looked up once, and every seat takes them in its
    own relative order; unrolled for 2, 3 and 4 players as ``_observation_joiner`` is."""
    n = enc.num_players
    w, ml, lo, hi, nv = enc._w, enc._mask_low, enc._low, enc._high, enc._v
    ends, empty, vt, pad, pack = enc._ends, enc._empty, enc._voids, enc._void_pad, enc._pack_padded
    join = bytearray().join  # a new bytearray each call

    if n == 2:

        def join_all(h: tuple, p: int, left: int, right: int, v: tuple, r: tuple) -> tuple:
            h0, h1 = h
            c0, c1 = h0.bit_count(), h1.bit_count()
            v0, v1 = vt[v[0]], vt[v[1]]
            line = lo[p & ml] + hi[p >> w] + (empty if left == EMPTY else ends[left * nv + right])
            return (
                join((lo[h0 & ml], hi[h0 >> w], line, pack(c0, c1), v0, v1, pad, r[0])),
                join((lo[h1 & ml], hi[h1 >> w], line, pack(c1, c0), v1, v0, pad, r[1])),
            )

    elif n == 3:

        def join_all(h: tuple, p: int, left: int, right: int, v: tuple, r: tuple) -> tuple:
            h0, h1, h2 = h
            c0, c1, c2 = h0.bit_count(), h1.bit_count(), h2.bit_count()
            v0, v1, v2 = vt[v[0]], vt[v[1]], vt[v[2]]
            line = lo[p & ml] + hi[p >> w] + (empty if left == EMPTY else ends[left * nv + right])
            return (
                join((lo[h0 & ml], hi[h0 >> w], line, pack(c0, c1, c2), v0, v1, v2, pad, r[0])),
                join((lo[h1 & ml], hi[h1 >> w], line, pack(c1, c2, c0), v1, v2, v0, pad, r[1])),
                join((lo[h2 & ml], hi[h2 >> w], line, pack(c2, c0, c1), v2, v0, v1, pad, r[2])),
            )

    else:

        def join_all(h: tuple, p: int, left: int, right: int, v: tuple, r: tuple) -> tuple:
            h0, h1, h2, h3 = h
            c0, c1, c2, c3 = h0.bit_count(), h1.bit_count(), h2.bit_count(), h3.bit_count()
            v0, v1, v2, v3 = vt[v[0]], vt[v[1]], vt[v[2]], vt[v[3]]
            line = lo[p & ml] + hi[p >> w] + (empty if left == EMPTY else ends[left * nv + right])
            return (
                join((lo[h0 & ml], hi[h0 >> w], line, pack(c0, c1, c2, c3), v0, v1, v2, v3, r[0])),
                join((lo[h1 & ml], hi[h1 >> w], line, pack(c1, c2, c3, c0), v1, v2, v3, v0, r[1])),
                join((lo[h2 & ml], hi[h2 >> w], line, pack(c2, c3, c0, c1), v2, v3, v0, v1, r[2])),
                join((lo[h3 & ml], hi[h3 >> w], line, pack(c3, c0, c1, c2), v3, v0, v1, v2, r[3])),
            )

    return join_all


@cache
def _encoder(num_players: int, max_pip: int, target: int, partnership: bool) -> BytesEncoder:
    return BytesEncoder(num_players, max_pip, target, partnership)


def bytes_encoder(config: BlockConfig) -> BytesEncoder:
    """The shared encoder of ``config``'s observations."""
    return _encoder(config.num_players, config.max_pip, config.target, bool(config.partnership))
