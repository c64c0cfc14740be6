"""Constants and lookup tables shared by both backends of the batched engine.

The batched engine keeps every set of tiles as a T-bit int64 mask (bit i = tile i, as in
``block_env.tiles``; T <= 28) and turns masks into observation and mask vectors by
unpacking bit words. A ``Layout`` holds the tables of one tile set (and the width of the
packed tile counts, which depends on the hand size); they are plain numpy arrays, which each
backend copies once to its device. The observation positions are derived from the
observation layout of the set and the layout assumptions the fast path relies on are
checked when a layout is built, so a layout change fails loudly.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from block_env.config import BlockConfig
from block_env.observation import MAX_SEATS, obs_layout
from block_env.tiles import MAX_PIP

# SELECT8[byte * 8 + r]: position of the r-th set bit of ``byte`` (0 where there is none).
SELECT8 = np.zeros(256 * 8, dtype=np.int64)
for _byte in range(256):
    for _r, _j in enumerate(j for j in range(8) if _byte >> j & 1):
        SELECT8[_byte * 8 + _r] = _j

# ---- the two open ends as one index e = (left + 1) * 8 + (right + 1), 0 = empty line ----
# (values are at most 6 in every set, so one 64-entry index serves them all)
NUM_ENDS = 64
EMPTY_ENDS = 0
ENDS_LEFT = np.arange(NUM_ENDS, dtype=np.int64) // 8 - 1
ENDS_RIGHT = np.arange(NUM_ENDS, dtype=np.int64) % 8 - 1
CHUNK = 14  # a mask of up to 28 tiles is two 14-bit chunks


class Layout:
    """The tables of the batched engine for one tile set and count width."""

    def __init__(self, max_pip: int, count_bits: int) -> None:
        config = BlockConfig(max_pip=max_pip, hand_size=1)
        lay = obs_layout(config)
        ts = config.tiles
        fields = lay.fields
        t, v = ts.num_tiles, ts.num_values
        self.tiles = ts
        self.num_tiles, self.num_actions, self.obs_dim = t, ts.num_actions, lay.dim
        self.pass_action = ts.pass_action
        self.PASS_TILE = ts.pass_action // 2  # the "tile" index a pass maps to (no such tile)
        self.PASS_BIT = 1 << ts.pass_action  # bit of pass in a (2T+1)-bit legal-action word
        self.COUNT_BITS = count_bits  # tiles in hand packed count_bits bits per seat
        self.VOID_BITS = v  # void values packed N+1 bits per seat
        self.ALL = ts.all_tiles
        self.EMPTY_ENDS, self.ENDS_LEFT, self.ENDS_RIGHT = EMPTY_ENDS, ENDS_LEFT, ENDS_RIGHT

        # ---- observation layout ------------------------------------------------------
        # Head: positions 0..HEAD_END-1 are 0/1 flags (tile_counts excepted) written from
        # two 64-bit words: word 0 holds positions 0..63, word 1 positions 64..127.
        self.HAND0 = fields["hand"].start
        self.LINE0 = fields["line"].start
        self.ENDS0 = ends0 = fields["left_end"].start  # left, right one-hots, empty flag
        self.COUNTS = fields["tile_counts"]
        self.VOIDS0 = voids0 = fields["voids"].start
        self.HEAD_END = head_end = fields["voids"].stop
        # Tail: positions HEAD_END..OBS_DIM-1 stay constant during a hand for an observer.
        self.TAIL_DIM = lay.dim - head_end
        self.T_SCORES = fields["scores"].start - head_end
        self.T_TARGET = fields["target"].start - head_end
        self.T_LEADER = fields["leader"].start - head_end
        self.T_TO_ACT = fields["to_act"].start - head_end
        self.T_SEATS = fields["seats"].start - head_end
        self.T_PART = fields["partnership"].start - head_end
        self.T_OUT = fields["out_of_play"].start - head_end
        assert (self.HAND0, self.LINE0, ends0) == (0, t, 2 * t) and ends0 < 64
        assert fields["right_end"].start == ends0 + v
        assert fields["empty_line"].start == ends0 + 2 * v
        assert self.COUNTS.start == ends0 + 2 * v + 1 and self.COUNTS.stop == voids0
        assert fields["scores"].start == head_end and head_end <= 128
        assert fields["out_of_play"].stop == lay.dim
        # Where the packed voids go: all in word 0, all in word 1, or across both.
        if head_end <= 64:
            self.VOIDS_AT = "word0"
        elif voids0 >= 64:
            self.VOIDS_AT = "word1"
        else:
            self.VOIDS_AT = "split"
        self.VOIDS_SHIFT = voids0 - 64 if voids0 >= 64 else voids0  # in its word
        self.VOIDS_SPLIT = 64 - voids0  # bits of the voids that fit in word 0 ("split")

        # ---- per-action tables (index = action >> 1, so index T is pass) ---------------
        self.TILE_BIT = np.array([1 << i for i in range(t)] + [0], dtype=np.int64)
        # ---- per-value tables (index = value + 1, 0 the empty line; padded to 8) -------
        with_value = list(ts.with_value) + [0] * (7 - v)
        self.WITH_VALUE = np.array([0, *with_value], dtype=np.int64)
        self.VALUE_BIT = np.array([0] + [1 << x if x < v else 0 for x in range(7)], np.int64)

        def ends_word(left: int, right: int) -> int:
            """The 2(N+1)+1 observation flags left_end, right_end one-hots, empty_line."""
            if left < 0:
                return 1 << (2 * v)
            if left >= v or right >= v:
                return 0  # no such ends in this set: never looked up
            return (1 << left) | (1 << (v + max(right, 0)))

        words = np.array([ends_word(lf, rt) for lf, rt in zip(ENDS_LEFT, ENDS_RIGHT)], np.int64)
        self.ENDS_WORD0 = (words & ((1 << (64 - ends0)) - 1)) << ends0  # part in head word 0
        self.ENDS_WORD1 = words >> (64 - ends0)  # part in head word 1
        # Tiles that fit each end (0 on the empty line, where the hand start sets them).
        self.FIT_LEFT = self.WITH_VALUE[ENDS_LEFT + 1]
        self.FIT_RIGHT = self.WITH_VALUE[ENDS_RIGHT + 1]
        self.FIT = self.FIT_LEFT | self.FIT_RIGHT  # tiles that fit either end
        # Values a pass shows the passer lacks: both ends' values.
        self.SHOWN = self.VALUE_BIT[ENDS_LEFT + 1] | self.VALUE_BIT[ENDS_RIGHT + 1]

        def next_ends(e: int, action: int) -> int:
            left, right = int(ENDS_LEFT[e]), int(ENDS_RIGHT[e])
            if action == ts.pass_action:
                return e
            low, high = ts.tiles[action // 2]
            if left < 0:
                return (low + 1) * 8 + (high + 1)
            end_value = left if action % 2 == 0 else right
            if end_value not in (low, high):
                return e  # not a legal placement: never looked up
            new_value = low + high - end_value
            if action % 2 == 0:
                return (new_value + 1) * 8 + (right + 1)
            return (left + 1) * 8 + (new_value + 1)

        # NEXT_ENDS[e * (2T+1) + action]: the ends index after ``action`` on ends ``e``.
        self.NEXT_ENDS = np.array(
            [next_ends(e, a) for e in range(NUM_ENDS) for a in range(ts.num_actions)],
            dtype=np.int64,
        )

        # ---- 14-bit chunk tables (a mask of up to 28 tiles is two chunks) --------------
        chunk = np.arange(1 << CHUNK, dtype=np.int64)
        chunk_bits = (chunk[:, None] >> np.arange(CHUNK)) & 1
        # SPREAD14[x]: bit j of x moved to bit 2j (tile t -> action 2t).
        self.SPREAD14 = (chunk_bits << (2 * np.arange(CHUNK))).sum(1).astype(np.int64)

        def spread(tiles: np.ndarray) -> np.ndarray:
            return self.SPREAD14[tiles & ((1 << CHUNK) - 1)] | (self.SPREAD14[tiles >> CHUNK] << 28)

        # FIT_ACTIONS[e]: the placements that fit ends e (tile t on the left end: action 2t,
        # on the right: 2t+1); on the empty line every tile on end 0.
        self.FIT_ACTIONS = spread(self.FIT_LEFT) | (spread(self.FIT_RIGHT) << 1)
        self.FIT_ACTIONS[EMPTY_ENDS] = spread(np.array(self.ALL))
        self.POP14 = chunk_bits.sum(1).astype(np.int64)
        pips = np.array(list(ts.pips) + [0] * (2 * CHUNK - t), dtype=np.int64)
        self.PIPS_LO14 = (chunk_bits * pips[:CHUNK]).sum(1).astype(np.int64)
        self.PIPS_HI14 = (chunk_bits * pips[CHUNK:]).sum(1).astype(np.int64)

        # COUNTS_F32[w]: the 4 tile counts packed count_bits bits each in w, as float32.
        w = np.arange(1 << (count_bits * MAX_SEATS), dtype=np.int64)
        shifts = count_bits * np.arange(MAX_SEATS)
        self.COUNTS_F32 = ((w[:, None] >> shifts) & ((1 << count_bits) - 1)).astype(np.float32)

        # Highest-double opener: rank of each tile, the dealt tile of highest rank opens
        # (doubles by value first, then pip sum, then the higher half).
        self.OPEN_RANK = np.array(
            [1000 + a if a == b else 10 * (a + b) + b for a, b in ts.tiles], dtype=np.int64
        )
        assert self.num_actions == self.pass_action + 1 == 2 * t + 1 <= 63


@cache
def _layout(max_pip: int, count_bits: int) -> Layout:
    return Layout(max_pip, count_bits)


def layout_for(config: BlockConfig) -> Layout:
    """The tables for a game: its tile set, counts packed in 3 bits (4 for hands above 7)."""
    return _layout(config.max_pip, 3 if config.hand_size <= 7 else 4)


STANDARD = _layout(MAX_PIP, 3)
