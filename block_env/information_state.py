"""The information-state observation: the observation followed by the hand's public history.

``obs_type="information_state"`` (``raw_env``, ``env()``, ``BatchedEnv``) hands out this
vector instead of the plain observation. It is the observation of ``observation.encode``,
unchanged, followed by every move of the current hand, grouped by the seat that made it:

* for each relative seat r = 0..3 (the observer first, then clockwise; seats absent from
  the game stay all zero, as in the observation), H slots in the order of that seat's turns;
* each slot is S = T + 3 floats: the one-hot tile played (T), the end it went to (2: left,
  right; the opening is always ``2 * tile``, so left) and a pass flag (1). A slot the seat
  has not reached yet is all zero.

H = n(k - 1) + 1 for n players and hand size k: at most n(k - 1) + 1 tiles are played in a
hand (it ends when a hand empties), at most n - 1 passes come between two plays (n in a row
would have blocked the hand at the play before), and the leader, who makes every n-th
move, makes the most. Turns rotate strictly clockwise from the leader (who is in the
observation), so slot j of relative seat r is the hand's move number
n*j + ((r - leader) mod n): the full order of the moves is exact.

Length: ``obs_dim + 4 * H * (T + 3)`` (122 + 4 * 13 * 31 = 1734 for the standard 2-player
game; 122 + 4 * 25 * 31 = 3222 for partnership). The history holds the current hand only
(the match scores are in the observation) and only public moves: no hidden tile enters it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from block_env.config import BlockConfig
from block_env.observation import MAX_SEATS, decode, encode, obs_layout
from block_env.rules import State

OBS_TYPES = ("observation", "information_state")

__all__ = [
    "OBS_TYPES",
    "check_obs_type",
    "decode_information_state",
    "encode_information_state",
    "history_slots",
    "information_state_bounds",
    "information_state_dim",
]


def check_obs_type(obs_type: object) -> str:
    """``obs_type`` after checking it is one of ``OBS_TYPES``; ValueError otherwise."""
    if not isinstance(obs_type, str) or obs_type not in OBS_TYPES:
        raise ValueError(
            f"obs_type={obs_type!r} is not allowed: use one of {', '.join(map(repr, OBS_TYPES))}"
        )
    return obs_type


def history_slots(config: BlockConfig) -> int:
    """H = n(k - 1) + 1: the most moves one seat can make in one hand."""
    return config.num_players * (config.hand_size - 1) + 1


def slot_size(config: BlockConfig) -> int:
    """S = T + 3: tile one-hot, end (left, right), pass flag."""
    return config.tiles.num_tiles + 3


def information_state_dim(config: BlockConfig) -> int:
    """Length of the information state: obs_dim + 4 * H * (T + 3)."""
    return obs_layout(config).dim + MAX_SEATS * history_slots(config) * slot_size(config)


def information_state_bounds(config: BlockConfig) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of the information state: the observation's, then 0..1 for the history."""
    lay = obs_layout(config)
    extra = information_state_dim(config) - lay.dim
    low = np.concatenate([lay.low, np.zeros(extra, dtype=np.float32)])
    high = np.concatenate([lay.high, np.ones(extra, dtype=np.float32)])
    return low, high


def encode_history(config: BlockConfig, leader: int, moves: Sequence[int], seat: int) -> np.ndarray:
    """The history part for observer ``seat``: ``moves`` are the action ids of the current
    hand in play order (the first one by ``leader``)."""
    n = config.num_players
    h, s = history_slots(config), slot_size(config)
    t = config.tiles.num_tiles
    out = np.zeros(MAX_SEATS * h * s, dtype=np.float32)
    pass_action = config.tiles.pass_action
    for i, action in enumerate(moves):
        rel = (leader + i - seat) % n
        base = (rel * h + i // n) * s
        if action == pass_action:
            out[base + t + 2] = 1
        else:
            out[base + (action >> 1)] = 1
            out[base + t + (action & 1)] = 1
    return out


def encode_information_state(
    config: BlockConfig, state: State, moves: Sequence[int], seat: int
) -> np.ndarray:
    """The information state of ``seat``: ``encode(config, state, seat)`` followed by the
    history of ``moves`` (the current hand's action ids in play order)."""
    return np.concatenate(
        [encode(config, state, seat), encode_history(config, state.leader, moves, seat)]
    )


def decode_information_state(vector: np.ndarray, config: BlockConfig) -> dict[str, object]:
    """``decode`` of the observation part plus ``"history"``: per relative seat (present
    seats only), that seat's moves in order, each ``"pass"`` or ``((a, b), "left"|"right")``.
    ValueError when the length is not ``information_state_dim(config)``."""
    vector = np.asarray(vector)
    dim = information_state_dim(config)
    if vector.shape != (dim,):
        raise ValueError(
            f"expected an information state of shape ({dim},) for this config, got {vector.shape}"
        )
    lay = obs_layout(config)
    out = decode(vector[: lay.dim])
    h, s = history_slots(config), slot_size(config)
    t = config.tiles.num_tiles
    slots = vector[lay.dim :].reshape(MAX_SEATS, h, s)
    history: list[list[object]] = []
    for r in range(config.num_players):
        moves: list[object] = []
        for slot in slots[r]:
            if slot[t + 2]:
                moves.append("pass")
            elif slot[:t].any():
                tile = config.tiles.tiles[int(np.flatnonzero(slot[:t])[0])]
                moves.append((tile, "right" if slot[t + 1] else "left"))
            else:
                break
        history.append(moves)
    out["history"] = history
    return out
