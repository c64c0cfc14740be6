"""Constants and lookup tables shared by both backends of the batched engine.

The batched engine keeps every set of tiles as a 28-bit int64 mask (bit i = tile i, as in
``block_env.tiles``) and turns masks into observation and mask vectors by unpacking bit
words. The tables here are plain numpy arrays; each backend copies them once to its device.
The observation positions are derived from ``block_env.observation.FIELDS`` and the layout
assumptions the fast path relies on are checked at import, so a layout change fails loudly.
"""

from __future__ import annotations

import numpy as np

from block_env.observation import FIELDS, MAX_SEATS, OBS_DIM
from block_env.tiles import (
    ALL_TILES,
    NUM_ACTIONS,
    NUM_TILES,
    NUM_VALUES,
    PASS,
    PIPS,
    TILES,
    TILES_WITH_VALUE,
)

PASS_TILE = PASS // 2  # action 56 >> 1: the "tile" index a pass maps to (no such tile)
PASS_BIT = 1 << PASS  # bit of PASS in a 57-bit legal-action word
COUNT_BITS = 3  # tiles in hand (0..7) packed 3 bits per seat
VOID_BITS = NUM_VALUES  # void values packed 7 bits per seat

# ---- observation layout ------------------------------------------------------------------
# Head: positions 0..HEAD_END-1 are 0/1 flags (tile_counts excepted) written from two
# 64-bit words: word 0 holds positions 0..63, word 1 positions 64..127.
HAND0 = FIELDS["hand"].start
LINE0 = FIELDS["line"].start
ENDS0 = FIELDS["left_end"].start  # left one-hot, right one-hot, empty flag: 15 bits
COUNTS = FIELDS["tile_counts"]
VOIDS0 = FIELDS["voids"].start
HEAD_END = FIELDS["voids"].stop
# Tail: positions HEAD_END..OBS_DIM-1 stay constant during a hand for a given observer.
TAIL_DIM = OBS_DIM - HEAD_END
T_SCORES = FIELDS["scores"].start - HEAD_END
T_TARGET = FIELDS["target"].start - HEAD_END
T_LEADER = FIELDS["leader"].start - HEAD_END
T_TO_ACT = FIELDS["to_act"].start - HEAD_END
T_SEATS = FIELDS["seats"].start - HEAD_END
T_PART = FIELDS["partnership"].start - HEAD_END
T_OUT = FIELDS["out_of_play"].start - HEAD_END

assert (HAND0, LINE0, ENDS0) == (0, NUM_TILES, 2 * NUM_TILES)
assert FIELDS["right_end"].start == ENDS0 + 7 and FIELDS["empty_line"].start == ENDS0 + 14
assert COUNTS.start == ENDS0 + 15 and COUNTS.stop == VOIDS0 and VOIDS0 >= 64
assert FIELDS["scores"].start == HEAD_END and HEAD_END <= 128
assert FIELDS["out_of_play"].stop == OBS_DIM
ENDS_SPLIT = 64 - ENDS0  # bits of the 15-bit ends word that fit in word 0
VOIDS_SHIFT = VOIDS0 - 64  # position of the voids in word 1

# ---- per-action tables (index = action >> 1, so index 28 is PASS) -----------------------
TILE_BIT = np.array([1 << t for t in range(NUM_TILES)] + [0], dtype=np.int64)

# ---- per-value tables (index = value + 1, so index 0 is the empty line) -----------------
WITH_VALUE = np.array([0, *TILES_WITH_VALUE], dtype=np.int64)
VALUE_BIT = np.array([0] + [1 << v for v in range(NUM_VALUES)], dtype=np.int64)


# ---- the two open ends as one index e = (left + 1) * 8 + (right + 1), 0 = empty line ----
NUM_ENDS = 64
EMPTY_ENDS = 0
ENDS_LEFT = np.arange(NUM_ENDS, dtype=np.int64) // 8 - 1
ENDS_RIGHT = np.arange(NUM_ENDS, dtype=np.int64) % 8 - 1


def _ends_word(left: int, right: int) -> int:
    """The 15 observation flags left_end one-hot, right_end one-hot, empty_line."""
    if left < 0:
        return 1 << 14
    return (1 << left) | (1 << (7 + max(right, 0)))


_ENDS_WORD = np.array([_ends_word(lf, rt) for lf, rt in zip(ENDS_LEFT, ENDS_RIGHT)], np.int64)
ENDS_WORD0 = (_ENDS_WORD & ((1 << (64 - ENDS0)) - 1)) << ENDS0  # part in head word 0
ENDS_WORD1 = _ENDS_WORD >> (64 - ENDS0)  # part in head word 1
# Tiles that fit each end (0 on the empty line, where the hand start sets the choices).
FIT_LEFT = WITH_VALUE[ENDS_LEFT + 1]
FIT_RIGHT = WITH_VALUE[ENDS_RIGHT + 1]
# Values a pass shows the passer lacks: both ends' values.
SHOWN = VALUE_BIT[ENDS_LEFT + 1] | VALUE_BIT[ENDS_RIGHT + 1]


def _next_ends(e: int, action: int) -> int:
    left, right = int(ENDS_LEFT[e]), int(ENDS_RIGHT[e])
    if action == PASS:
        return e
    low, high = TILES[action // 2]
    if left < 0:
        return (low + 1) * 8 + (high + 1)
    end_value = left if action % 2 == 0 else right
    if end_value not in (low, high):
        return e  # not a legal placement: never looked up
    new_value = low + high - end_value
    if action % 2 == 0:
        return (new_value + 1) * 8 + (right + 1)
    return (left + 1) * 8 + (new_value + 1)


# NEXT_ENDS[e * 57 + action]: the ends index after playing ``action`` on ends ``e``.
NEXT_ENDS = np.array(
    [_next_ends(e, a) for e in range(NUM_ENDS) for a in range(NUM_ACTIONS)], dtype=np.int64
)

# SELECT8[byte * 8 + r]: position of the r-th set bit of ``byte`` (0 where there is none).
SELECT8 = np.zeros(256 * 8, dtype=np.int64)
for _byte in range(256):
    for _r, _j in enumerate(j for j in range(8) if _byte >> j & 1):
        SELECT8[_byte * 8 + _r] = _j

# ---- 14-bit chunk tables (a 28-bit mask is two chunks) ----------------------------------
_CHUNK = np.arange(1 << 14, dtype=np.int64)
_CHUNK_BITS = (_CHUNK[:, None] >> np.arange(14)) & 1
# SPREAD14[x]: bit j of x moved to bit 2j (tile t -> action 2t).
SPREAD14 = (_CHUNK_BITS << (2 * np.arange(14))).sum(1).astype(np.int64)
POP14 = _CHUNK_BITS.sum(1).astype(np.int64)
PIPS_LO14 = (_CHUNK_BITS * np.array(PIPS[:14])).sum(1).astype(np.int64)
PIPS_HI14 = (_CHUNK_BITS * np.array(PIPS[14:])).sum(1).astype(np.int64)
del _CHUNK, _CHUNK_BITS

# COUNTS_F32[w]: the 4 tile counts packed 3 bits each in w, as float32.
_W = np.arange(1 << (COUNT_BITS * MAX_SEATS), dtype=np.int64)
COUNTS_F32 = ((_W[:, None] >> (COUNT_BITS * np.arange(MAX_SEATS))) & 7).astype(np.float32)
del _W

# Highest-double opener: rank of each tile, the dealt tile of highest rank opens
# (doubles by value first, then pip sum, then the higher half).
OPEN_RANK = np.array(
    [1000 + a if a == b else 10 * (a + b) + b for a, b in TILES],
    dtype=np.int64,
)

ALL = ALL_TILES
assert NUM_ACTIONS == PASS + 1 == 57
