"""Game configuration: player count, variants, tile set, episode and reward modes, validated
once."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from block_env.tiles import MAX_PIP, TileSet, tile_set

OPENERS = ("rotate", "highest_double")
EPISODES = ("match", "hand")
REWARDS = ("zero_sum", "points", "win")
PLAYER_COUNTS = (2, 3, 4)
HAND_SIZES = {2: 7, 3: 5, 4: 5}  # the standard (double-six) hand sizes
DEFAULT_TARGETS = {2: 100, 3: 61, 4: 61}
PARTNERSHIP_HAND_SIZE = 7
PARTNERSHIP_TARGET = 100
STANDARD_TILES = 28
SET_KEYS = ("max_pip", "hand_size")  # the fields that choose the tile set and the hand size


def default_hand_size(num_players: int, partnership: bool, max_pip: int) -> int:
    """The hand size dealt when none is given: the standard one for the double-six set;
    for a smaller set the same share of the set, k * T / 28 rounded half up, capped at
    T // num_players so the deal fits (never below 1)."""
    k = PARTNERSHIP_HAND_SIZE if partnership else HAND_SIZES[num_players]
    t = tile_set(max_pip).num_tiles
    return max(1, min(t // num_players, (2 * t * k + STANDARD_TILES) // (2 * STANDARD_TILES)))


@dataclass(frozen=True)
class BlockConfig:
    """One Block game's rules. Invalid values raise ValueError at construction.

    ``max_pip`` picks the tile set [0|0]..[N|N] (6: the standard 28 tiles); ``hand_size``
    None means ``default_hand_size``; after construction it holds the size dealt."""

    num_players: int = 2
    opener: str = "rotate"
    episode: str = "match"
    partnership: bool = False
    target_score: int | None = None
    reward: str = "zero_sum"
    max_pip: int = MAX_PIP
    hand_size: int | None = None
    target: int = field(init=False)
    tiles: TileSet = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = self.num_players
        if isinstance(n, bool) or not isinstance(n, int) or n not in PLAYER_COUNTS:
            raise ValueError(f"num_players={n!r} is not allowed: use 2, 3 or 4")
        _check_choice("opener", self.opener, OPENERS)
        _check_choice("episode", self.episode, EPISODES)
        _check_choice("reward", self.reward, REWARDS)
        if not isinstance(self.partnership, bool):
            raise ValueError(f"partnership={self.partnership!r} is not allowed: use True or False")
        if self.partnership and n != 4:
            raise ValueError(
                f"partnership=True needs num_players=4 (teams 0&2 and 1&3), got num_players={n}"
            )
        t = self.target_score
        if t is not None and (isinstance(t, bool) or not isinstance(t, int) or t < 1):
            raise ValueError(f"target_score={t!r} is not allowed: use a positive int or None")
        tiles = tile_set(self.max_pip)  # ValueError naming max_pip and 2..6
        most = tiles.num_tiles // n
        k = self.hand_size
        if k is None:
            k = default_hand_size(n, self.partnership, tiles.max_pip)
        elif (
            isinstance(k, (bool, np.bool_))
            or not isinstance(k, (int, np.integer))
            or not (1 <= k <= most)
        ):
            raise ValueError(
                f"hand_size={k!r} is not allowed: with max_pip={tiles.max_pip} "
                f"({tiles.num_tiles} tiles) and {n} players use an int from 1 to {most} "
                "(or None for the default)"
            )
        default_target = PARTNERSHIP_TARGET if self.partnership else DEFAULT_TARGETS[n]
        object.__setattr__(self, "max_pip", tiles.max_pip)
        object.__setattr__(self, "hand_size", int(k))
        object.__setattr__(self, "tiles", tiles)
        object.__setattr__(self, "target", default_target if t is None else t)

    @property
    def teams(self) -> tuple[int, ...]:
        """Team id of each seat: seat % 2 in partnership, the seat itself otherwise."""
        if self.partnership:
            return tuple(s % 2 for s in range(self.num_players))
        return tuple(range(self.num_players))

    @property
    def is_standard_set(self) -> bool:
        """True for the double-six set with the rules' hand size (the default game)."""
        return self.max_pip == MAX_PIP and self.hand_size == default_hand_size(
            self.num_players, self.partnership, MAX_PIP
        )


def _check_choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not allowed: use one of {', '.join(allowed)}")
