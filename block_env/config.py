"""Game configuration: player count, variants, episode and reward modes, validated once."""

from __future__ import annotations

from dataclasses import dataclass, field

OPENERS = ("rotate", "highest_double")
EPISODES = ("match", "hand")
REWARDS = ("zero_sum", "points", "win")
PLAYER_COUNTS = (2, 3, 4)
HAND_SIZES = {2: 7, 3: 5, 4: 5}
DEFAULT_TARGETS = {2: 100, 3: 61, 4: 61}
PARTNERSHIP_HAND_SIZE = 7
PARTNERSHIP_TARGET = 100


@dataclass(frozen=True)
class BlockConfig:
    """One Block game's rules. Invalid values raise ValueError at construction."""

    num_players: int = 2
    opener: str = "rotate"
    episode: str = "match"
    partnership: bool = False
    target_score: int | None = None
    reward: str = "zero_sum"
    hand_size: int = field(init=False)
    target: int = field(init=False)

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
        if self.partnership:
            hand_size, default_target = PARTNERSHIP_HAND_SIZE, PARTNERSHIP_TARGET
        else:
            hand_size, default_target = HAND_SIZES[n], DEFAULT_TARGETS[n]
        object.__setattr__(self, "hand_size", hand_size)
        object.__setattr__(self, "target", default_target if t is None else t)

    @property
    def teams(self) -> tuple[int, ...]:
        """Team id of each seat: seat % 2 in partnership, the seat itself otherwise."""
        if self.partnership:
            return tuple(s % 2 for s in range(self.num_players))
        return tuple(range(self.num_players))


def _check_choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not allowed: use one of {', '.join(allowed)}")
