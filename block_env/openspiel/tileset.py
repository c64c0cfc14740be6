"""The tile set of a configuration, seen from the OpenSpiel game: its tiles in canonical
order ((0,0), (0,1), ..., (N,N)), names for tiles and actions, and building the config.

The set's size follows ``max_pip`` N: T = (N+1)(N+2)/2 tiles, 2T+1 actions, pass = 2T
(docs/RULES.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from block_env.config import BlockConfig


@dataclass(frozen=True)
class TileSet:
    """Tiles of the set [0|0]..[N|N] in canonical order, with naming helpers."""

    max_pip: int

    @property
    def tiles(self) -> tuple[tuple[int, int], ...]:
        n = self.max_pip
        return tuple((a, b) for a in range(n + 1) for b in range(a, n + 1))

    @property
    def count(self) -> int:
        return (self.max_pip + 1) * (self.max_pip + 2) // 2

    @property
    def pass_action(self) -> int:
        return 2 * self.count

    def mask(self, tiles: list[int]) -> int:
        """Bit mask of tile indices."""
        m = 0
        for t in tiles:
            m |= 1 << t
        return m

    def name(self, tile: int) -> str:
        a, b = self.tiles[tile]
        return f"[{a}|{b}]"

    def describe(self, action: int) -> str:
        """E.g. ``'[1|2] on left'`` or ``'pass'``."""
        if action == self.pass_action:
            return "pass"
        return f"{self.name(action // 2)} on {'left' if action % 2 == 0 else 'right'}"

    def short(self, action: int) -> str:
        """Compact form for history strings: ``'1-2L'``, ``'1-2R'`` or ``'P'``."""
        if action == self.pass_action:
            return "P"
        a, b = self.tiles[action // 2]
        return f"{a}-{b}{'LR'[action % 2]}"


def make_config(
    num_players: int = 2,
    max_pip: int = 6,
    hand_size: int = 0,
    partnership: bool = False,
    opener: str = "rotate",
) -> BlockConfig:
    """The one-hand, zero-sum ``BlockConfig`` of these game parameters (``hand_size`` 0:
    the rules' default for the set). ValueError for values the configuration refuses."""
    return BlockConfig(
        num_players=num_players,
        opener=opener,
        episode="hand",
        partnership=partnership,
        reward="zero_sum",
        max_pip=max_pip,
        hand_size=hand_size or None,
    )


def tile_set_of(config: BlockConfig) -> TileSet:
    """The tile set a configuration plays with."""
    return TileSet(config.max_pip)
