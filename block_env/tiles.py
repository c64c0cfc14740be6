"""The double-six set and the action encoding shared by every part of block-env.

Tiles are indexed 0..27 in the order (0,0), (0,1), ..., (0,6), (1,1), ..., (6,6).
Sets of tiles are Python ints used as 28-bit masks (bit i = tile i), which keeps the
rules engine small and fast. Action ``a = 2 * tile + end`` (end 0 = left, 1 = right);
``PASS = 56``.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

TILES: tuple[tuple[int, int], ...] = tuple((a, b) for a in range(7) for b in range(a, 7))
NUM_TILES = len(TILES)
NUM_VALUES = 7
PASS = 2 * NUM_TILES
NUM_ACTIONS = PASS + 1
ALL_TILES = (1 << NUM_TILES) - 1

TILE_INDEX: dict[tuple[int, int], int] = {t: i for i, t in enumerate(TILES)}
PIPS: tuple[int, ...] = tuple(a + b for a, b in TILES)
IS_DOUBLE: tuple[bool, ...] = tuple(a == b for a, b in TILES)
DOUBLES_MASK = sum(1 << i for i, d in enumerate(IS_DOUBLE) if d)
# TILES_WITH_VALUE[v]: mask of the tiles showing value v on either half.
TILES_WITH_VALUE: tuple[int, ...] = tuple(
    sum(1 << i for i, (a, b) in enumerate(TILES) if v in (a, b)) for v in range(NUM_VALUES)
)


def tile_index(tile: tuple[int, int]) -> int:
    """Index of a tile given as a pair ``(a, b)`` of ints 0..6 in either order (Python or
    numpy ints; not bools, floats or strings); ValueError otherwise."""
    if isinstance(tile, (str, bytes)) or not hasattr(tile, "__len__") or len(tile) != 2:
        raise ValueError(f"{tile!r} is not a tile: expected a pair (a, b) of values 0..6")
    a, b = tile
    for v in (a, b):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise ValueError(
                f"{tile!r} is not a tile: its values must be ints 0..6, got {v!r} "
                f"({type(v).__name__})"
            )
    key = (min(int(a), int(b)), max(int(a), int(b)))
    if key not in TILE_INDEX:
        raise ValueError(f"{tile!r} is not a tile of the double-six set: values must be 0..6")
    return TILE_INDEX[key]


def other_half(tile: int, value: int) -> int:
    """The value of the half of ``tile`` that is not matched to ``value``."""
    a, b = TILES[tile]
    return b if a == value else a


def iter_tiles(mask: int) -> Iterator[int]:
    """Tile indices of a 28-bit mask, ascending."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def mask_of(tiles: list[int] | tuple[int, ...]) -> int:
    """28-bit mask of a collection of tile indices."""
    m = 0
    for t in tiles:
        m |= 1 << t
    return m


def pip_total(mask: int) -> int:
    """Sum of the pips on the tiles of a mask (both halves of each tile)."""
    return sum(PIPS[t] for t in iter_tiles(mask))


def action_for(tile: int, end: int) -> int:
    """Action id of placing ``tile`` on ``end`` (0 = left, 1 = right)."""
    return 2 * tile + end


def describe_action(action: int) -> str:
    """Human-readable action, e.g. ``'[1|4] on left'`` or ``'pass'``."""
    if action == PASS:
        return "pass"
    a, b = TILES[action // 2]
    return f"[{a}|{b}] on {'left' if action % 2 == 0 else 'right'}"


def tile_str(tile: int) -> str:
    a, b = TILES[tile]
    return f"[{a}|{b}]"
