"""Compiled kernels of the batched engine (``kernels="numba"``): plain loops over the games.

The numpy kernels pay a few microseconds per call and a step makes a few hundred calls; these
kernels do a step in a few compiled calls (``numba_step.NumbaStep`` makes them: the
move and the scoring of the hands that ended, the next hands, the legal actions, the
observation and mask) plus the deal's random draws, which stay with the backend's generator
so that the deals are the same. They read and write the very state arrays and tables of
``engine.Engine`` and hand out the same arrays bit for bit (the tests compare every output
with the numpy kernels and with the AEC env). The step kernels take the game's parameters as
a run-time array (one compile serves every game); the observation kernels are compiled per
layout with its sizes as constants (``observation_kernels``). Needs numba (``pip install
"block-env[fast]"``); compiled code is cached on disk.
"""

from __future__ import annotations

from functools import cache
from types import SimpleNamespace

import numpy as np
from numba import njit

# ---- the scalar parameters of a game, packed in one int64 array (see ``params``) --------
(
    N,  # seats
    T,  # tiles
    A,  # actions (2T + 1)
    PASS_TILE,  # action >> 1 of a pass
    PASS_BIT,  # the pass's bit in a legal word
    COUNT_BITS,
    VOID_BITS,
    PARTNERSHIP,  # 0/1
    HAND_MODE,  # 0/1: one hand is the episode
    TARGET,
    REWARD,  # 0 points, 1 zero_sum, 2 win
    SIDES,  # seats, or 2 teams
    HIGHEST_DOUBLE,  # 0/1: the opener holds the highest double
    FULL_COUNTS,  # packed counts of a full deal
    OBS_DIM,
    HEAD_END,
    LINE0,
    COUNTS0,
    VOIDS_AT,  # 0: word 0, 1: word 1, 2: split
    VOIDS_SHIFT,
    VOIDS_SPLIT,
    TAIL0,  # position of the first byte of the tail words
    TAIL_BYTES,  # bytes per tail row
    T_SCORES,  # the tail's fields, from HEAD_END
    T_TARGET,
    T_OUT,
    HISTORY,  # 0/1
    HIST_W,  # floats of history per seat (H * S)
    SLOT,  # S
    MAX_SEATS,
    NUM_PARAMS,
) = range(31)

REWARD_CODES = {"points": 0, "zero_sum": 1, "win": 2}
_LOW14 = (1 << 14) - 1


def params(engine) -> np.ndarray:  # noqa: ANN001 - an ``engine.Engine``
    """The engine's scalar parameters as the int64 array the kernels read."""
    cfg, L = engine.config, engine.L
    p = np.zeros(NUM_PARAMS, dtype=np.int64)
    p[N], p[T], p[A] = engine.n, L.num_tiles, L.num_actions
    p[PASS_TILE], p[PASS_BIT] = L.PASS_TILE, L.PASS_BIT
    p[COUNT_BITS], p[VOID_BITS] = L.COUNT_BITS, L.VOID_BITS
    p[PARTNERSHIP], p[HAND_MODE] = int(cfg.partnership), int(engine.hand_mode)
    p[TARGET], p[REWARD] = cfg.target, REWARD_CODES[cfg.reward]
    p[SIDES] = int(engine.t_side_seats.shape[0]) - 1
    p[HIGHEST_DOUBLE] = int(cfg.opener == "highest_double")
    p[FULL_COUNTS] = engine.full_counts
    p[OBS_DIM], p[HEAD_END], p[LINE0], p[COUNTS0] = L.obs_dim, L.HEAD_END, L.LINE0, L.COUNTS.start
    p[VOIDS_AT] = {"word0": 0, "word1": 1, "split": 2}[L.VOIDS_AT]
    p[VOIDS_SHIFT], p[VOIDS_SPLIT] = L.VOIDS_SHIFT, L.VOIDS_SPLIT
    p[TAIL0], p[TAIL_BYTES] = 8 * engine.tail_c0, 8 * int(engine.tail.shape[1])
    p[T_SCORES], p[T_TARGET], p[T_OUT] = L.T_SCORES, L.T_TARGET, L.T_OUT
    p[HISTORY] = int(engine.history)
    if engine.history:
        p[HIST_W], p[SLOT] = engine.H * engine.S, engine.S
    p[MAX_SEATS] = 4
    return p


@njit(cache=True)
def first_illegal(actions: np.ndarray, legal: np.ndarray, num_actions: int) -> int:
    """The first game whose action is out of range or not legal, or -1."""
    for g in range(actions.shape[0]):
        a = actions[g]
        if a < 0 or a >= num_actions or (legal[g] >> a) & 1 == 0:
            return g
    return -1


@njit(cache=True)
def hands_from_permutations(perm: np.ndarray, n: int, hand_size: int) -> np.ndarray:
    """(K, n) hands from K permutations of the tiles: seat s takes the tiles at positions
    s*k .. s*k+k-1 (as ``deals._hands_from_permutations``)."""
    hands = np.zeros((perm.shape[0], n), dtype=np.int64)
    for j in range(perm.shape[0]):
        for q in range(n * hand_size):
            hands[j, q // hand_size] |= 1 << perm[j, q]
    return hands


@njit(cache=True)
def _popcount(x) -> int:  # noqa: ANN001
    x = x - ((x >> 1) & 0x5555555555555555)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    return (x * 0x0101010101010101) >> 56


@njit(cache=True)
def select_bits(words, u) -> np.ndarray:  # noqa: ANN001
    """One set bit of each word (bits 0..62, none zero) chosen by ``u`` in [0, 1): the bit of
    rank min(floor(u * count), count - 1), as ``backend._select_random_bit_words`` (float32
    ``u``, torch's draws, ranked in float32)."""
    out = np.empty(words.shape[0], dtype=np.int64)
    for g in range(words.shape[0]):
        w = words[g]
        total = _popcount(w)
        rank = min(np.int64(u[g] * np.float32(total)), total - 1)
        at = 0  # binary search for the bit, without branches: halves of 32, 16, ..., 1 bits
        for half in (32, 16, 8, 4, 2, 1):
            below = _popcount(w & ((1 << half) - 1))
            up = rank >= below
            rank -= below if up else 0
            w = (w >> half) if up else w
            at += half if up else 0
        out[g] = at
    return out


@njit(cache=True)
def select_from_mask(mask, u) -> tuple[np.ndarray, int]:  # noqa: ANN001
    """One legal action per row of ``mask`` (M, W) (nonzero = legal) chosen by ``u`` as
    ``select_bits`` chooses (the rank min(floor(u * count), count - 1) among the legal
    columns), and the first row without a legal action (-1 if none; nothing chosen then)."""
    m, width = mask.shape
    out = np.empty(m, dtype=np.int64)
    for g in range(m):
        total = 0
        for a in range(width):
            total += mask[g, a] != 0
        if total == 0:
            return out, g
        rank = min(np.int64(u[g] * np.float32(total)), total - 1)
        for a in range(width):
            if mask[g, a] != 0:
                if rank == 0:
                    out[g] = a
                    break
                rank -= 1
    return out, -1


# ---- helpers of the kernels: module-level (a kernel refers to them as globals, which keeps
# its on-disk cache valid across processes); ``p`` is the game's parameter tuple, a constant
# of the calling kernel, so its entries fold into the compiled code


@njit(cache=True, inline="always")
def _spread(p, rewards, g, winner, amount, side_seats) -> None:  # noqa: ANN001
    """As ``Engine._spread`` for game ``g``: +amount to the winner's side, the opposite split
    over the others; float64 then cast to float32."""
    side = (winner & 1) if p[PARTNERSHIP] else winner
    row = side if winner >= 0 else p[SIDES]
    loss = (0.0 - amount) / (p[SIDES] - 1)
    for s in range(p[N]):
        rewards[g, s] = np.float32(amount if side_seats[row, s] else loss)


@njit(cache=True, inline="always")
def _score(
    p, g, actor, domino, hands, scores, pips_lo, pips_hi, side_seats, rewards,  # noqa: ANN001
    hand_winner, hand_pips, hand_points, terminated, match_winner, match_winners,
) -> bool:  # fmt: skip
    """Score game ``g``'s ended hand as ``Engine._end_hands``; True when the episode ended."""
    n, partnership = p[N], p[PARTNERSHIP]
    m = 2 if partnership else n  # the sides that score
    pips = np.empty(4, dtype=np.int64)
    for s in range(n):
        h = hands[g, s]
        pips[s] = pips_lo[h & _LOW14] + pips_hi[h >> 14]
        hand_pips[g, s] = pips[s]
    side = np.empty(4, dtype=np.int64)
    if partnership:
        side[0] = pips[0] + pips[2]
        side[1] = pips[1] + pips[3]
        actor_side = actor & 1
    else:
        for s in range(n):
            side[s] = pips[s]
        actor_side = actor
    total = 0
    low = side[0]
    for s in range(m):
        total += side[s]
        low = min(low, side[s])
    lowest = 0
    at_low = 0
    for s in range(m - 1, -1, -1):  # the first side at the lowest total
        if side[s] == low:
            lowest = s
            at_low += 1
    tied = at_low > 1 and not domino
    win_side = actor_side if domino else lowest
    if domino:
        gained = total - (side[actor_side] if partnership else 0)
    else:
        gained = 0 if tied else total - 2 * low
    winner = -1 if tied else (actor if domino else win_side)
    row = m if tied else win_side
    for s in range(n):
        points = gained if side_seats[row, s] else 0
        hand_points[g, s] = points
        scores[g, s] += points
    hand_winner[g] = winner
    if p[HAND_MODE]:
        over = True
        mwin = -1 if tied else win_side
        win_row = row
    else:
        top = scores[g, 0]
        for s in range(1, n):
            top = max(top, scores[g, s])
        over = top >= p[TARGET]
        first = -1
        for s in range(n - 1, -1, -1):
            if scores[g, s] == top:
                first = s
        at_top = 0
        if partnership:
            for team in range(2):
                if scores[g, team] == top or scores[g, team + 2] == top:
                    at_top += 1
        else:
            for s in range(n):
                if scores[g, s] == top:
                    at_top += 1
        decided = over and at_top == 1
        mwin = first if decided else -1
        first_side = (first & 1) if partnership else first
        win_row = first_side if decided else m
    for s in range(n):
        match_winners[g, s] = side_seats[win_row, s]
    match_winner[g] = mwin
    terminated[g] = over
    if p[REWARD] == 0:
        for s in range(n):
            rewards[g, s] = np.float32(hand_points[g, s])
    elif p[REWARD] == 1:
        _spread(p, rewards, g, winner, np.float64(gained), side_seats)
    else:
        _spread(p, rewards, g, mwin, 1.0 if mwin >= 0 else 0.0, side_seats)
    return over


@njit(cache=True, inline="always")
def _legal_word(pass_bit, hand, fit, e, both_lo, both_hi, fit_actions) -> int:  # noqa: ANN001
    held = hand & fit
    word = (both_lo[held & _LOW14] | both_hi[held >> 14]) & fit_actions[e]
    return pass_bit if word == 0 else word


@njit(cache=True, inline="always")
def _write_row(
    p, bits, out, g, c, hand, played, e, v, cnt, tail, scores, wide, target, hist,  # noqa: ANN001
    ends_word0, ends_word1,
) -> None:  # fmt: skip
    """Write seat ``c``'s observation of game ``g`` into one row (``bits``: the row as
    uint32): the head's flags as the bit patterns of 0.0 and 1.0, the tile counts, the tail
    from its bytes (``tail``), as ``Engine._write``."""
    n, vb, cb, obs_dim, head_end = p[N], p[VOID_BITS], p[COUNT_BITS], p[OBS_DIM], p[HEAD_END]
    total = vb * n
    shift = c * vb
    rotated = ((v >> shift) | (v << (total - shift))) & ((1 << total) - 1)
    w0 = hand | (played << p[LINE0]) | ends_word0[e]
    w1 = 0
    if p[VOIDS_AT] == 0:
        w0 |= rotated << p[VOIDS_SHIFT]
    elif p[VOIDS_AT] == 1:
        w1 = ends_word1[e] | (rotated << p[VOIDS_SHIFT])
    else:
        w0 |= (rotated & ((1 << p[VOIDS_SPLIT]) - 1)) << p[VOIDS_SHIFT]
        w1 = ends_word1[e] | (rotated >> p[VOIDS_SPLIT])
    x = np.uint64(w0)
    y = np.uint64(w1)
    one = np.uint32(0x3F800000)  # the bits of 1.0 as a float32
    head = min(obs_dim, 128)
    for q in range(min(head, 64)):
        bits[q] = np.uint32((x >> np.uint64(q)) & np.uint64(1)) * one
    for q in range(64, head):
        bits[q] = np.uint32((y >> np.uint64(q - 64)) & np.uint64(1)) * one
    for r in range(n):
        out[p[COUNTS0] + r] = np.float32((cnt >> (cb * ((c + r) % n))) & ((1 << cb) - 1))
    for q in range(head_end, obs_dim):
        out[q] = np.float32(tail[q - p[TAIL0]])
    if wide:
        for r in range(n):
            out[head_end + p[T_SCORES] + r] = np.float32(scores[g, (c + r) % n])
        out[head_end + p[T_TARGET]] = np.float32(target)
    if p[HISTORY]:
        w = p[HIST_W]
        for r in range(n):
            src = hist[g * n + (c + r) % n]
            at = obs_dim + r * w
            for i in range(w):
                out[at + i] = src[i]
        for q in range(obs_dim + n * w, obs_dim + p[MAX_SEATS] * w):
            out[q] = 0.0


# ---- the step: compiled once for every game (its parameters are a run-time array)


@njit(cache=True)
def play(
    p, actions, hands, in_hands, played, counts, voids, ends, fit, current,  # noqa: ANN001
    scores, hist, turn, tile_bit, shown, next_ends, fit_table, pips_lo, pips_hi,
    side_seats, idx, over, rewards, hand_winner, hand_pips, hand_points, terminated,
    match_winner, match_winners, hand_over, hand_blocked,
) -> int:  # fmt: skip
    """Apply every game's (checked) action and score the hands that ended; returns K,
    the number of games whose hand ended, listed in ``idx[:K]`` with ``over[:K]`` (the
    episode ended too). Scores are updated (what final observations show); the outputs
    are the step's rewards and info arrays, pre-filled with their no-event values."""
    n, t, num_actions, slot = p[N], p[T], p[A], p[SLOT]
    pass_tile, history, count_bits, void_bits = (
        p[PASS_TILE],
        p[HISTORY],
        p[COUNT_BITS],
        p[VOID_BITS],
    )
    k = 0
    for g in range(actions.shape[0]):
        a = actions[g]
        c = current[g]
        tile = a >> 1
        is_pass = tile == pass_tile
        if history:
            base = (turn[g] // n) * slot
            row = g * n + c
            hist[row, base + (t + 2 if is_pass else tile)] = 1.0
            hist[row, base + (t + 2 if is_pass else t + (a & 1))] = 1.0
            turn[g] += 1
        bit = tile_bit[tile]
        hand = hands[g, c] ^ bit
        hands[g, c] = hand
        in_hands[g] ^= bit
        played[g] |= bit
        counts[g] -= (bit >> tile) << (c * count_bits)
        e = ends[g]
        if is_pass:
            voids[g] |= shown[e] << (c * void_bits)
        e = next_ends[e * num_actions + a]
        ends[g] = e
        fit[g] = fit_table[e]
        current[g] = c + 1 if c + 1 < n else 0  # (no division)
        domino = hand == 0
        if not domino and in_hands[g] & fit[g] != 0:
            continue
        idx[k] = g
        over[k] = _score(
            p, g, c, domino, hands, scores, pips_lo, pips_hi, side_seats, rewards,
            hand_winner, hand_pips, hand_points, terminated, match_winner, match_winners,
        )  # fmt: skip
        hand_over[g] = True
        hand_blocked[g] = not domino
        k += 1
    return k


@njit(cache=True)
def deal(
    p, idx, k, new_hands, lots, over, hands, in_hands, played, ends, fit,  # noqa: ANN001
    current, leader, voids, counts, scores, out_of_play, hand_number, hist, turn,
    tail_bytes, tail_table, tile_bit, open_rank, all_tiles, full_out,
) -> bool:  # fmt: skip
    """Start the next hand (a new match where ``over``) in games ``idx[:k]`` with the
    drawn ``new_hands`` (K, n) and lots, as ``Engine._start_hands`` with a full deal;
    True when a score above 255 is dealt into play (the observation's float rewrite)."""
    n, t = p[N], p[T]
    width = p[TAIL_BYTES]
    at = p[HEAD_END] + p[T_SCORES] - p[TAIL0]  # the scores' bytes in a tail row
    wide = False
    for j in range(k):
        g = idx[j]
        new_match = over[j]
        lead = lots[j] if new_match else (leader[g] + 1) % n
        dealt = 0
        for s in range(n):
            hands[g, s] = new_hands[j, s]
            dealt |= new_hands[j, s]
        if p[HIGHEST_DOUBLE]:
            best = -1
            tile = 0
            for i in range(t):
                if (dealt >> i) & 1 and open_rank[i] > best:
                    best = open_rank[i]
                    tile = i
            for s in range(n - 1, -1, -1):
                if (new_hands[j, s] >> tile) & 1:
                    lead = s
            fit[g] = tile_bit[tile]
        else:
            fit[g] = all_tiles
        in_hands[g] = dealt
        played[g] = 0
        ends[g] = 0
        current[g] = lead
        leader[g] = lead
        voids[g] = 0
        counts[g] = p[FULL_COUNTS]
        out_of_play[g] = full_out
        if new_match:
            hand_number[g] = 0
            for s in range(n):
                scores[g, s] = 0
        else:
            hand_number[g] += 1
        if p[HISTORY]:
            for s in range(n):
                hist[g * n + s, :] = 0.0
            turn[g] = 0
        for o in range(n):
            row = g * n + o
            for i in range(width):
                tail_bytes[row, i] = tail_table[lead, o * width + i]
            for r in range(n):
                tail_bytes[row, at + r] = np.uint8(scores[g, (o + r) % n] & 0xFF)
        for s in range(n):
            if scores[g, s] > 255:
                wide = True
    return wide


@njit(cache=True)
def legal_actions(
    p, hands, fit, ends, current, voids, legal, hist, turn, shown, both_lo,  # noqa: ANN001
    both_hi, fit_actions, auto_pass,
) -> None:  # fmt: skip
    """The legal words of the seat to act in every game; with ``auto_pass``, forced
    passes played (at most n - 1 in a row) and recorded, as ``Engine._auto_pass``."""
    n, t, slot, pass_bit = p[N], p[T], p[SLOT], p[PASS_BIT]
    for g in range(current.shape[0]):
        c = current[g]
        word = _legal_word(pass_bit, hands[g, c], fit[g], ends[g], both_lo, both_hi, fit_actions)
        if auto_pass:
            for _ in range(n - 1):
                if word != pass_bit:
                    break
                if p[HISTORY]:
                    hist[g * n + c, (turn[g] // n) * slot + t + 2] = 1.0
                    turn[g] += 1
                voids[g] |= shown[ends[g]] << (c * p[VOID_BITS])
                c = c + 1 if c + 1 < n else 0
                word = _legal_word(
                    pass_bit, hands[g, c], fit[g], ends[g], both_lo, both_hi, fit_actions
                )
            current[g] = c
        legal[g] = word


# ---- the observation: compiled once per layout, with its sizes and positions as constants


def layout_key(p: np.ndarray) -> tuple[int, ...]:
    """The parameters the observation kernels depend on (the rest zeroed): games that differ
    only in their rules (target, reward, episode, opener, hand size) share these kernels."""
    key = [int(x) for x in p]
    for rule in (PASS_TILE, PASS_BIT, PARTNERSHIP, HAND_MODE, TARGET, REWARD, SIDES):
        key[rule] = 0
    key[HIGHEST_DOUBLE] = key[FULL_COUNTS] = 0
    return tuple(key)


@cache
def observation_kernels(p: tuple[int, ...]) -> SimpleNamespace:
    """The observation kernels of one layout (``layout_key``), compiled with its sizes and
    positions as constants, so that their loops compile to vector code (with them as run-time
    values the observation is several times slower). Each layout compiles once per machine:
    the compiled code is cached on disk."""
    n, num_actions = p[N], p[A]

    @njit(cache=True)
    def observe(
        hands, current, played, ends, voids, counts, legal, scores, tail_bytes,  # noqa: ANN001
        hist, ends_word0, ends_word1, wide, target, obs, mask,
    ) -> None:  # fmt: skip
        """The observation (B, width) float32 and mask (B, A) int8 of the seat to act in
        every game, as ``Engine.observe``."""
        bits = obs.view(np.uint32)
        flat_mask = mask.reshape(-1)
        room = flat_mask.shape[0] - 64  # a row starting at or below it may write 64 flags
        for g in range(current.shape[0]):
            c = current[g]
            _write_row(
                p, bits[g], obs[g], g, c, hands[g, c], played[g], ends[g], voids[g], counts[g],
                tail_bytes[g * n + c], scores, wide, target, hist, ends_word0, ends_word1,
            )  # fmt: skip
            word = np.uint64(legal[g])
            at = g * num_actions
            if at <= room:  # 64 flags (vector code): those past A land in rows written later
                for a in range(64):
                    flat_mask[at + a] = np.int8((word >> np.uint64(a)) & np.uint64(1))
            else:
                for a in range(num_actions):
                    mask[g, a] = np.int8((word >> np.uint64(a)) & np.uint64(1))

    @njit(cache=True)
    def final_observe(
        games, hands, played, ends, voids, counts, leader, scores, out_of_play,  # noqa: ANN001
        hist, tail_table, ends_word0, ends_word1, target, obs,
    ) -> None:  # fmt: skip
        """Every seat's observation of games ``games`` as they stand, nobody to act: rows
        (game j, seat s) at j * n + s of ``obs``, as ``Engine.final_observations``."""
        width = p[TAIL_BYTES]
        at_scores = p[HEAD_END] + p[T_SCORES] - p[TAIL0]
        at_out = p[HEAD_END] + p[T_OUT] - p[TAIL0]
        wide = target > 255
        for g in games:
            for s in range(n):
                if scores[g, s] > 255:
                    wide = True
        bits = obs.view(np.uint32)
        tail = np.empty(width, dtype=np.uint8)
        for j in range(games.shape[0]):
            g = games[j]
            for c in range(n):
                tail[:] = tail_table[leader[g], c * width : (c + 1) * width]
                for r in range(n):
                    tail[at_scores + r] = np.uint8(scores[g, (c + r) % n] & 0xFF)
                tail[at_out] = np.uint8(out_of_play[g] & 0xFF)
                row = j * n + c
                _write_row(
                    p, bits[row], obs[row], g, c, hands[g, c], played[g], ends[g], voids[g],
                    counts[g], tail, scores, wide, target, hist, ends_word0, ends_word1,
                )  # fmt: skip

    return SimpleNamespace(observe=observe, final_observe=final_observe)
