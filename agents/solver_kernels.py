"""Compiled alpha-beta search of ``agents.solver`` (``engine="numba"``): the same search,
node for node.

``agents.solver`` is the reference: its pure-Python search defines the values, the move
ordering and the node counts. This module runs that search as compiled code on two arrays:
``g``, one int64 vector with the position's hands and pips (mutated and restored move by
move, as the reference does), the seat and tile tables, the counters and the move lists of
every ply; and ``tt``, the transposition table, an open-addressing hash table whose rows
carry the number of the search context that wrote them (a new context starts empty without
clearing anything). The table never evicts: it is grown and the context solved again when
it passes half full, so every position the reference stores is stored here too and the two
visit the same nodes in the same order. The tests compare values, best actions and node
counts with the reference on many positions. Needs numba (``pip install
"block-env[fast]"``); compiled code is cached on disk.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

INF = 1 << 30
MAX_DEPTH = 160  # plies of one search: at most 28 placements, each after up to 3 passes
MAX_MOVES = 16  # moves of one ply: at most 7 tiles on each of the two ends

# The layout of ``g``: four entries per seat, then the game's scalars, the counters and
# the tables of the tile set (values 0..6, tiles 0..27).
HANDS, PIPS, NXT, FLIP, TEAMS, SIDE = 0, 4, 8, 12, 16, 20
SEATS, TWO_SIDES, ROOT, MASK = 24, 25, 26, 27  # MASK: rows in use by this context - 1
CONTEXT, STORED, OVERFLOW, NODES = 28, 29, 30, 31  # the counters
FIRST_ROWS = 1 << 10  # a context starts on this many rows and doubles them as it fills
TWV = 32  # with_value: 7 tile masks
TILE_PIPS = 40  # 28
OTHER = 68  # 8 * 28: the other half of tile t when its v half is matched
END_CODE = OTHER + 224  # 7 * 7
MOVES = END_CODE + 56  # MAX_DEPTH * MAX_MOVES: the move list of each ply
SIZE = MOVES + MAX_DEPTH * MAX_MOVES
# The columns of ``tt``.
KEY0, KEY1, OWNER, LO, HI, MOVE = 0, 1, 2, 3, 4, 5
_LOW56 = (1 << 56) - 1


def tables(
    nxt: Sequence[int],
    flip: Sequence[bool],
    teams: Sequence[int],
    side: Sequence[int],
    root: int,
    two_sides: bool,
    with_value: Sequence[int],
    tile_pips: Sequence[int],
    other: Sequence[int],
    end_code: Sequence[Sequence[int]],
    rows: int,
) -> np.ndarray:
    """A ``g`` vector holding one search context's tables (hands, pips and counters zero),
    starting on ``rows`` rows of the table (a power of two)."""
    g = np.zeros(SIZE, np.int64)
    n = len(nxt)
    g[NXT : NXT + n] = nxt
    g[FLIP : FLIP + n] = flip
    g[TEAMS : TEAMS + n] = teams
    g[SIDE : SIDE + n] = side
    g[SEATS], g[TWO_SIDES], g[ROOT], g[MASK] = n, two_sides, root, rows - 1
    g[TWV : TWV + len(with_value)] = with_value
    g[TILE_PIPS : TILE_PIPS + len(tile_pips)] = tile_pips
    g[OTHER : OTHER + len(other)] = other
    g[END_CODE : END_CODE + 49] = np.asarray(end_code, np.int64).reshape(-1)
    return g


def new_table(capacity: int) -> np.ndarray:
    """An empty transposition table of ``capacity`` rows (a power of two)."""
    return np.zeros((capacity, 6), np.int64)


def split_key(hkey: int) -> tuple[int, int]:
    """The reference's hands key (28 bits a seat) as two words: seats 0-1 and 2-3."""
    return hkey & _LOW56, hkey >> 56


@njit(cache=True)
def _terminal(mover, domino, g):
    """Value for ``mover``'s side (scaled ints) of the hand that ``mover`` just ended."""
    n = g[SEATS]
    if g[TWO_SIDES]:
        mine = 0
        theirs = 0
        for s in range(n):
            if g[TEAMS + s] == g[TEAMS + mover]:
                mine += g[PIPS + s]
            else:
                theirs += g[PIPS + s]
        return theirs if domino else theirs - mine
    total = 0
    for s in range(n):
        total += g[PIPS + s]
    if domino:
        winner = mover
        gain = total - g[PIPS + mover]
    else:
        low = g[PIPS]
        for s in range(1, n):
            low = min(low, g[PIPS + s])
        winner = -1
        for s in range(n):
            if g[PIPS + s] == low:
                if winner >= 0:
                    return 0
                winner = s
        gain = total - 2 * low
    root_value = gain * (n - 1) if winner == g[ROOT] else -gain
    return root_value if g[SIDE + mover] else -root_value


@njit(cache=True)
def _slot(tt, context, k0, k1, mask):
    """The row of key (k0, k1): where it is stored, or the empty row that ends its probe."""
    # Mix every bit of both words into the low bits (the ends and the seat sit in k0's top
    # byte, which a multiplication alone would never carry down).
    h = k0 ^ (k1 * -4658895280553007687)
    h ^= h >> 31
    h *= -7046029254386353131
    h ^= h >> 29
    i = h & mask
    while tt[i, OWNER] == context:
        if tt[i, KEY0] == k0 and tt[i, KEY1] == k1:
            return i
        i = (i + 1) & mask
    return i


@njit(cache=True)
def _grow(tt, g):
    """Double the rows this context uses and rehash its entries into them (none is lost,
    so the search goes on as the reference's would); OVERFLOW when ``tt`` has no more rows."""
    context = g[CONTEXT]
    rows = g[MASK] + 1
    if 2 * rows > tt.shape[0]:
        g[OVERFLOW] = 1
        return
    kept = np.empty((g[STORED], tt.shape[1]), np.int64)
    count = 0
    for i in range(rows):
        if tt[i, OWNER] == context:
            kept[count] = tt[i]
            count += 1
            tt[i, OWNER] = -1
    g[MASK] = 2 * rows - 1
    for j in range(count):
        i = _slot(tt, context, kept[j, KEY0], kept[j, KEY1], g[MASK])
        tt[i] = kept[j]


@njit(cache=True)
def _low_bit(m):
    """The index of the lowest set bit of ``m`` (> 0)."""
    t = 0
    while not (m >> t) & 1:
        t += 1
    return t


# An explicit signature: numba can cache a self-recursive function only when it is typed.
_SEARCH_TYPE = "int64(" + "int64," * 9 + "int64[::1], int64[:, ::1])"


@njit(_SEARCH_TYPE, cache=True)
def search(cur, left, right, k_lo, k_hi, allh, alpha, beta, depth, g, tt):
    """The reference's ``search``: the value for ``cur``'s side of the position after the
    opening, within the window (alpha, beta). ``k_lo``/``k_hi``: the hands key (``split_key``)."""
    g[NODES] += 1
    h = g[HANDS + cur]
    ml = h & g[TWV + left]
    mr = h & g[TWV + right] if left != right else 0
    nc = g[NXT + cur]
    if ml == 0 and mr == 0:
        if g[FLIP + cur]:
            return -search(nc, left, right, k_lo, k_hi, allh, -beta, -alpha, depth + 1, g, tt)
        return search(nc, left, right, k_lo, k_hi, allh, alpha, beta, depth + 1, g, tt)
    n2 = g[TWO_SIDES] != 0 and g[SEATS] == 2
    ub = 0
    if n2:
        # The side to act can win at most the other side's pips and lose at most its own.
        ub = g[PIPS + (cur ^ 1)]
        if ub <= alpha:
            return ub
        if -g[PIPS + cur] >= beta:
            return -g[PIPS + cur]
    elif g[TWO_SIDES]:
        ub = g[PIPS + (cur ^ 1)] + g[PIPS + (cur ^ 3)]
        lb = -g[PIPS + cur] - g[PIPS + (cur ^ 2)]
        if ub <= alpha:
            return ub
        if lb >= beta:
            return lb
    context = g[CONTEXT]
    k0 = k_lo | ((g[END_CODE + 7 * left + right] * 4 + cur) << 56)
    slot = _slot(tt, context, k0, k_hi, g[MASK])
    found = tt[slot, OWNER] == context
    mask = g[MASK]
    tt_move = -1
    lo = -INF
    hi = INF
    if found:
        lo = tt[slot, LO]
        hi = tt[slot, HI]
        tt_move = tt[slot, MOVE]
        if lo >= beta:
            return lo
        if hi <= alpha:
            return hi
        if lo == hi:
            return lo
        alpha = max(alpha, lo)
        beta = min(beta, hi)
    # Move ordering as the reference sorts its tuples (score, tile, new left, new right,
    # matched end) in descending order, each packed into one int.
    nh_next = g[HANDS + nc]
    base = MOVES + MAX_MOVES * depth
    count = 0
    m = ml
    fits = g[TWV + right]
    while m:
        t = _low_bit(m)
        o = g[OTHER + 8 * t + left]
        s = g[TILE_PIPS + t]
        if not nh_next & (g[TWV + o] | fits):
            s += 20
        if 8 * t + left == tt_move:
            s += 1000
        g[base + count] = (((s * 32 + t) * 8 + o) * 8 + right) * 8 + left
        count += 1
        m &= m - 1
    m = mr
    fits = g[TWV + left]
    while m:
        t = _low_bit(m)
        o = g[OTHER + 8 * t + right]
        s = g[TILE_PIPS + t]
        if not nh_next & (fits | g[TWV + o]):
            s += 20
        if 8 * t + right == tt_move:
            s += 1000
        g[base + count] = (((s * 32 + t) * 8 + left) * 8 + o) * 8 + right
        count += 1
        m &= m - 1
    for i in range(1, count):  # insertion sort, descending
        key = g[base + i]
        j = i - 1
        while j >= 0 and g[base + j] < key:
            g[base + j + 1] = g[base + j]
            j -= 1
        g[base + j + 1] = key
    alpha0 = alpha
    beta0 = beta
    best = -INF
    best_move = -1
    fl = g[FLIP + cur]
    mine = g[PIPS + cur]
    for i in range(count):
        key = g[base + i]
        matched = key & 7
        nr = (key >> 3) & 7
        nl = (key >> 6) & 7
        t = (key >> 9) & 31
        bit = np.int64(1) << t
        nh = h ^ bit
        rest = allh ^ bit
        g[HANDS + cur] = nh
        g[PIPS + cur] = mine - g[TILE_PIPS + t]
        n_lo = k_lo
        n_hi = k_hi
        if cur < 2:
            n_lo ^= bit << (28 * cur)
        else:
            n_hi ^= bit << (28 * (cur - 2))
        if nh == 0:
            v = ub if n2 else _terminal(cur, True, g)
        elif not rest & (g[TWV + nl] | g[TWV + nr]):
            v = _terminal(cur, False, g)
        elif fl:
            v = -search(nc, nl, nr, n_lo, n_hi, rest, -beta, -alpha, depth + 1, g, tt)
        else:
            v = search(nc, nl, nr, n_lo, n_hi, rest, alpha, beta, depth + 1, g, tt)
        g[HANDS + cur] = h
        g[PIPS + cur] = mine
        if v > best:
            best = v
            best_move = 8 * t + matched
            if v > alpha:
                alpha = v
                if alpha >= beta:
                    break
    if best <= alpha0:
        hi = best
    elif best >= beta0:
        lo = best
    else:
        lo = best
        hi = best
    if found and g[MASK] != mask:
        slot = _slot(tt, context, k0, k_hi, g[MASK])  # deeper plies rehashed the table
    elif not found:
        if 2 * (g[STORED] + 1) > g[MASK] + 1:
            _grow(tt, g)
            if g[OVERFLOW]:
                return best
        # Deeper plies may have taken the empty row found above, or rehashed: probe again.
        slot = _slot(tt, context, k0, k_hi, g[MASK])
        g[STORED] += 1
        tt[slot, OWNER] = context
        tt[slot, KEY0] = k0
        tt[slot, KEY1] = k_hi
    tt[slot, LO] = lo
    tt[slot, HI] = hi
    tt[slot, MOVE] = best_move
    return best


@njit(cache=True)
def exact(cur, left, right, k_lo, k_hi, allh, guess, g, tt):
    """The reference's ``exact``: MTD(f) null-window searches around ``guess``."""
    lo = -INF
    hi = INF
    v = guess
    while lo < hi:
        beta = v + 1 if v == lo else v
        v = search(cur, left, right, k_lo, k_hi, allh, beta - 1, beta, 0, g, tt)
        if g[OVERFLOW]:
            return v
        if v < beta:
            hi = v
        else:
            lo = v
    return v
