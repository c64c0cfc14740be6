"""Validation of the position-setting reset options: ``hands``, ``leader``, ``scores``."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from block_env.config import BlockConfig


class Setup(NamedTuple):
    hands: tuple[int, ...] | None
    leader: int | None
    scores: tuple[int, ...] | None


def parse_reset_options(config: BlockConfig, options: dict | None) -> Setup:
    """Check and convert the options the env understands; other keys are ignored (test
    harnesses pass their own). Raises ValueError saying what is wrong and what is allowed."""
    if options is None:
        return Setup(None, None, None)
    if not isinstance(options, dict):
        raise ValueError(f"options must be a dict or None, got {type(options).__name__}")
    hands = options.get("hands")
    leader = options.get("leader")
    scores = options.get("scores")
    return Setup(
        None if hands is None else _parse_hands(config, hands),
        None if leader is None else _parse_leader(config, leader),
        None if scores is None else _parse_scores(config, scores),
    )


def check_seed(seed: Any) -> int | None:
    """``seed`` as a Python int (None stays None): any int >= 0, of any size, Python or
    numpy (what ``numpy.random.default_rng`` accepts); ValueError for anything else."""
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed={seed!r} is not allowed: use None or an int >= 0")
    return int(seed)


def _is_sequence(x: Any) -> bool:
    """A list, tuple or array (ordered and sized), not a string, a dict or a set."""
    return isinstance(x, (list, tuple, np.ndarray))


def _parse_hands(config: BlockConfig, hands: Any) -> tuple[int, ...]:
    n, k = config.num_players, config.hand_size
    if not _is_sequence(hands) or len(hands) != n:
        raise ValueError(
            f"options['hands'] must be a list of {n} hands, one per seat (each a list of "
            f"(a, b) tiles); got {type(hands).__name__}"
            + (f" of length {len(hands)}" if _is_sequence(hands) else "")
        )
    masks = []
    seen: dict[int, int] = {}
    for seat, hand in enumerate(hands):
        if not (_is_sequence(hand) or isinstance(hand, (set, frozenset))):
            raise ValueError(
                f"options['hands'][{seat}]={hand!r} is not a hand: use a list of (a, b) tiles"
            )
        try:
            tiles = [config.tiles.tile_index(t) for t in hand]
        except ValueError as err:
            raise ValueError(f"options['hands'][{seat}]: {err}") from None
        if not 1 <= len(tiles) <= k:
            raise ValueError(
                f"options['hands'][{seat}] has {len(tiles)} tiles: each hand needs 1 to {k}"
            )
        mask = 0
        for t in tiles:
            if t in seen:
                raise ValueError(
                    f"tile {t} appears twice in options['hands'] (seats {seen[t]} and {seat})"
                )
            seen[t] = seat
            mask |= 1 << t
        masks.append(mask)
    return tuple(masks)


def _parse_leader(config: BlockConfig, leader: Any) -> int:
    n = config.num_players
    if config.opener == "highest_double":
        raise ValueError("options['leader'] is not allowed with opener='highest_double'")
    if (
        isinstance(leader, (bool, np.bool_))
        or not isinstance(leader, (int, np.integer))
        or not 0 <= leader < n
    ):
        raise ValueError(f"options['leader']={leader!r} is not a seat: use an int in 0..{n - 1}")
    return int(leader)


def _parse_scores(config: BlockConfig, scores: Any) -> tuple[int, ...]:
    n = config.num_players
    if not _is_sequence(scores) or len(scores) != n:
        raise ValueError(
            f"options['scores'] must be a list of {n} ints, one per seat; "
            f"got {type(scores).__name__}"
        )
    out = []
    for seat, v in enumerate(scores):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"options['scores'][{seat}]={v!r} is not an int")
        if not 0 <= v < config.target:
            raise ValueError(
                f"options['scores'][{seat}]={v} is outside 0..{config.target - 1}: "
                "starting scores must be below the target"
            )
        out.append(int(v))
    if config.partnership and (out[0] != out[2] or out[1] != out[3]):
        raise ValueError("in partnership, partners (seats 0&2, 1&3) must have equal scores")
    return tuple(out)
