"""The tile sets and the action encoding shared by every part of block-env.

A set runs from [0|0] to [N|N] (``max_pip`` N from 2 to 6; 6 is the standard double-six set
of 28 tiles). Its T = (N+1)(N+2)/2 tiles are indexed 0..T-1 in the canonical order
(0,0), (0,1), ..., (0,N), (1,1), ..., (N,N): the standard order restricted to values <= N.
Sets of tiles are Python ints used as T-bit masks (bit i = tile i), which keeps the rules
engine small and fast. Action ``a = 2 * tile + end`` (end 0 = left, 1 = right) in the set's
own order; pass is ``2 * T`` (56 for the standard set).

``tile_set(max_pip)`` (or ``BlockConfig.tiles``) gives a set's tables as a ``TileSet``; the
module-level names say that they are the standard set's (``STANDARD``, ``STANDARD_TILES``,
``STANDARD_NUM_TILES``, ``STANDARD_PASS``, ``STANDARD_NUM_ACTIONS``), and so are the module's
functions.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from functools import cache

import numpy as np

MIN_PIP = 2
MAX_PIP = 6  # the standard double-six set
PIP_RANGE = tuple(range(MIN_PIP, MAX_PIP + 1))


def num_tiles_for(max_pip: int) -> int:
    """T = (N+1)(N+2)/2: the number of tiles of the set [0|0]..[N|N]."""
    return (max_pip + 1) * (max_pip + 2) // 2


def check_max_pip(max_pip: object) -> int:
    """``max_pip`` as an int after checking it is an int in 2..6; ValueError otherwise."""
    if (
        isinstance(max_pip, (bool, np.bool_))
        or not isinstance(max_pip, (int, np.integer))
        or not MIN_PIP <= max_pip <= MAX_PIP
    ):
        raise ValueError(
            f"max_pip={max_pip!r} is not allowed: use an int from {MIN_PIP} to {MAX_PIP} "
            f"(the set [0|0]..[N|N]; {MAX_PIP} is the standard 28 tiles)"
        )
    return int(max_pip)


class TileSet:
    """The tables of one tile set: tiles in canonical order, masks, pips and action ids.

    One object per ``max_pip`` (``tile_set`` caches them); copies and pickles resolve to
    that same object, so states holding a set stay cheap to copy and compare."""

    __slots__ = (
        "max_pip",
        "tiles",
        "num_tiles",
        "num_values",
        "pass_action",
        "num_actions",
        "all_tiles",
        "index",
        "pips",
        "is_double",
        "doubles_mask",
        "with_value",
        "_pip_bytes",
    )

    def __init__(self, max_pip: int) -> None:
        n = check_max_pip(max_pip)
        self.max_pip = n
        self.tiles: tuple[tuple[int, int], ...] = tuple(
            (a, b) for a in range(n + 1) for b in range(a, n + 1)
        )
        self.num_tiles = len(self.tiles)
        self.num_values = n + 1
        self.pass_action = 2 * self.num_tiles
        self.num_actions = self.pass_action + 1
        self.all_tiles = (1 << self.num_tiles) - 1
        self.index: dict[tuple[int, int], int] = {t: i for i, t in enumerate(self.tiles)}
        self.pips: tuple[int, ...] = tuple(a + b for a, b in self.tiles)
        self.is_double: tuple[bool, ...] = tuple(a == b for a, b in self.tiles)
        self.doubles_mask = sum(1 << i for i, d in enumerate(self.is_double) if d)
        # _pip_bytes[k][b]: pips on the tiles 8k..8k+7 selected by the bits of b
        self._pip_bytes = tuple(
            tuple(
                sum(
                    self.pips[8 * k + i]
                    for i in range(8)
                    if b >> i & 1 and 8 * k + i < len(self.pips)
                )
                for b in range(256)
            )
            for k in range((self.num_tiles + 7) // 8)
        )
        # with_value[v]: mask of the tiles showing value v on either half.
        self.with_value: tuple[int, ...] = tuple(
            sum(1 << i for i, (a, b) in enumerate(self.tiles) if v in (a, b))
            for v in range(self.num_values)
        )

    def __repr__(self) -> str:
        return f"tile_set({self.max_pip})"

    def __reduce__(self) -> tuple:
        return (tile_set, (self.max_pip,))

    def __deepcopy__(self, memo: dict) -> TileSet:
        return self

    def __copy__(self) -> TileSet:
        return self

    def tile_index(self, tile: tuple[int, int]) -> int:
        """Index of a tile given as a pair ``(a, b)`` of ints 0..N in either order (Python
        or numpy ints; not bools, floats or strings); ValueError otherwise."""
        top = self.max_pip
        if isinstance(tile, (str, bytes)) or not hasattr(tile, "__len__") or len(tile) != 2:
            raise ValueError(f"{tile!r} is not a tile: expected a pair (a, b) of values 0..{top}")
        a, b = tile
        for v in (a, b):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise ValueError(
                    f"{tile!r} is not a tile: its values must be ints 0..{top}, got {v!r} "
                    f"({type(v).__name__})"
                )
        key = (min(int(a), int(b)), max(int(a), int(b)))
        if key not in self.index:
            raise ValueError(
                f"{tile!r} is not a tile of the double-{_NAMES[top]} set: values must be 0..{top}"
            )
        return self.index[key]

    def other_half(self, tile: int, value: int) -> int:
        """The value of the half of ``tile`` that is not matched to ``value``."""
        a, b = self.tiles[tile]
        return b if a == value else a

    def pip_total(self, mask: int) -> int:
        """Sum of the pips on the tiles of a mask (both halves of each tile)."""
        total = 0
        for table in self._pip_bytes:  # one look-up per 8 tiles (a hot path: hand ends)
            total += table[mask & 255]
            mask >>= 8
        return total

    def describe_action(self, action: int) -> str:
        """Human-readable action, e.g. ``'[1|4] on left'`` or ``'pass'``."""
        if action == self.pass_action:
            return "pass"
        a, b = self.tiles[action // 2]
        return f"[{a}|{b}] on {'left' if action % 2 == 0 else 'right'}"

    def tile_str(self, tile: int) -> str:
        a, b = self.tiles[tile]
        return f"[{a}|{b}]"

    def short_action(self, action: int) -> str:
        """Compact action for move lists: ``'1-2L'``, ``'1-2R'`` or ``'P'`` (pass)."""
        if action == self.pass_action:
            return "P"
        a, b = self.tiles[action // 2]
        return f"{a}-{b}{'LR'[action % 2]}"


_NAMES = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


@cache
def _tile_set(max_pip: int) -> TileSet:
    return TileSet(max_pip)


def tile_set(max_pip: int = MAX_PIP) -> TileSet:
    """The ``TileSet`` of [0|0]..[N|N] for ``max_pip`` N in 2..6 (one shared object per N);
    ValueError naming the allowed range otherwise."""
    return _tile_set(check_max_pip(max_pip))


STANDARD = tile_set(MAX_PIP)
STANDARD_TILES: tuple[tuple[int, int], ...] = STANDARD.tiles
STANDARD_NUM_TILES = STANDARD.num_tiles
NUM_VALUES = STANDARD.num_values
STANDARD_PASS = STANDARD.pass_action
STANDARD_NUM_ACTIONS = STANDARD.num_actions
ALL_TILES = STANDARD.all_tiles

# names of the standard set's values before they said so; read with a DeprecationWarning
RENAMED = {f"{old}": f"STANDARD_{old}" for old in ("TILES", "NUM_TILES", "PASS", "NUM_ACTIONS")}


def renamed_getattr(module: str, renamed: dict[str, str], namespace: dict) -> Callable:
    """A module ``__getattr__`` that serves each old name of ``renamed`` as its new one,
    with a DeprecationWarning saying which to use (and that other sets have their own)."""

    def __getattr__(name: str) -> object:
        new = renamed.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{name} is the standard set's value: use {new}, or the game's own "
            f"(BlockConfig.tiles, obs_layout(config)) for any set",
            DeprecationWarning,
            stacklevel=2,
        )
        return namespace[new]

    return __getattr__


__getattr__ = renamed_getattr(__name__, RENAMED, globals())

TILE_INDEX: dict[tuple[int, int], int] = STANDARD.index
PIPS: tuple[int, ...] = STANDARD.pips
IS_DOUBLE: tuple[bool, ...] = STANDARD.is_double
DOUBLES_MASK = STANDARD.doubles_mask
# TILES_WITH_VALUE[v]: mask of the tiles showing value v on either half.
TILES_WITH_VALUE: tuple[int, ...] = STANDARD.with_value


def tile_index(tile: tuple[int, int]) -> int:
    """Index of a tile of the standard set (see ``TileSet.tile_index``)."""
    return STANDARD.tile_index(tile)


def other_half(tile: int, value: int) -> int:
    """The value of the half of ``tile`` (standard set) that is not matched to ``value``."""
    a, b = STANDARD_TILES[tile]
    return b if a == value else a


def iter_tiles(mask: int) -> Iterator[int]:
    """Tile indices of a mask, ascending (any set)."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def mask_of(tiles: list[int] | tuple[int, ...]) -> int:
    """Bit mask of a collection of tile indices (any set)."""
    m = 0
    for t in tiles:
        m |= 1 << t
    return m


def pip_total(mask: int) -> int:
    """Sum of the pips on the tiles of a mask of the standard set."""
    return sum(PIPS[t] for t in iter_tiles(mask))


def action_for(tile: int, end: int) -> int:
    """Action id of placing ``tile`` on ``end`` (0 = left, 1 = right), in any set."""
    return 2 * tile + end


def describe_action(action: int) -> str:
    """Human-readable action of the standard set, e.g. ``'[1|4] on left'`` or ``'pass'``."""
    return STANDARD.describe_action(action)


def tile_str(tile: int) -> str:
    """``'[a|b]'`` of a tile of the standard set."""
    a, b = STANDARD_TILES[tile]
    return f"[{a}|{b}]"
