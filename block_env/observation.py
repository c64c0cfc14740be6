"""What one seat may know, as a fixed-length float32 vector (seat-relative, padded to 4).

Relative seat r is the seat r places clockwise from the observer (r = 0 is the observer).
Every field is public or the observer's own; no opponent tile and no out-of-play tile ever
appears. The layout is the same for every player count and variant:

==================  ==========  ===========================================================
field               indices     meaning
==================  ==========  ===========================================================
hand                0..27       1 if the observer holds tile i (tiles in ``TILES`` order)
line                28..55      1 if tile i is on the line
left_end            56..62      one-hot value of the left open end (all 0 on an empty line)
right_end           63..69      one-hot value of the right open end
empty_line          70          1 before the opening
tile_counts         71..74      tiles in hand, by relative seat (0 for absent seats)
voids               75..102     7 flags per relative seat: values that seat showed lacking
                                by passing (a pass shows it holds neither end's value)
scores              103..106    match scores, by relative seat (raw points)
target              107         the match target (raw points)
leader              108..111    one-hot relative seat that led this hand
to_act              112..115    one-hot relative seat to act (all 0 once the episode ended)
seats               116..119    1 for relative seats that are in the game
partnership         120         1 in partnership play (the partner is relative seat 2)
out_of_play         121         number of tiles out of play this hand (a count only)
==================  ==========  ===========================================================

Counts and scores are raw integers stored as float32 (exact); ``OBS_SCALE`` divides them
into roughly [0, 1] for networks.
"""

from __future__ import annotations

import numpy as np

from block_env.config import BlockConfig
from block_env.rules import EMPTY, State
from block_env.tiles import NUM_TILES, TILES

MAX_SEATS = 4
FIELDS: dict[str, slice] = {}
_offset = 0
for _name, _size in (
    ("hand", NUM_TILES),
    ("line", NUM_TILES),
    ("left_end", 7),
    ("right_end", 7),
    ("empty_line", 1),
    ("tile_counts", MAX_SEATS),
    ("voids", 7 * MAX_SEATS),
    ("scores", MAX_SEATS),
    ("target", 1),
    ("leader", MAX_SEATS),
    ("to_act", MAX_SEATS),
    ("seats", MAX_SEATS),
    ("partnership", 1),
    ("out_of_play", 1),
):
    FIELDS[_name] = slice(_offset, _offset + _size)
    _offset += _size
OBS_DIM = _offset

_COUNT_FIELDS = ("tile_counts", "out_of_play")
_SCORE_FIELDS = ("scores", "target")

OBS_LOW = np.zeros(OBS_DIM, dtype=np.float32)
OBS_HIGH = np.ones(OBS_DIM, dtype=np.float32)
OBS_HIGH[FIELDS["tile_counts"]] = 7
OBS_HIGH[FIELDS["out_of_play"]] = NUM_TILES
OBS_HIGH[FIELDS["scores"]] = np.inf
OBS_HIGH[FIELDS["target"]] = np.inf

# Per-index divisor that brings every field to about [0, 1] (scores in units of 100).
OBS_SCALE = np.ones(OBS_DIM, dtype=np.float32)
for _name in _COUNT_FIELDS:
    OBS_SCALE[FIELDS[_name]] = 7
for _name in _SCORE_FIELDS:
    OBS_SCALE[FIELDS[_name]] = 100

_SHIFTS28 = np.arange(NUM_TILES, dtype=np.int64)
_SHIFTS7 = np.arange(7, dtype=np.int64)
_H, _L = FIELDS["hand"].start, FIELDS["line"].start
_LE, _RE = FIELDS["left_end"].start, FIELDS["right_end"].start
_EMPTY = FIELDS["empty_line"].start
_CNT, _VOID = FIELDS["tile_counts"].start, FIELDS["voids"].start
_SC, _TG = FIELDS["scores"].start, FIELDS["target"].start
_LEAD, _ACT = FIELDS["leader"].start, FIELDS["to_act"].start
_SEATS, _PART = FIELDS["seats"].start, FIELDS["partnership"].start
_OUT = FIELDS["out_of_play"].start


def encode(config: BlockConfig, state: State, seat: int) -> np.ndarray:
    """The observation vector of ``seat`` in ``state`` (a new float32 array)."""
    n = config.num_players
    obs = np.zeros(OBS_DIM, dtype=np.float32)
    obs[_H : _H + NUM_TILES] = (state.hands[seat] >> _SHIFTS28) & 1
    obs[_L : _L + NUM_TILES] = (state.played >> _SHIFTS28) & 1
    if state.left == EMPTY:
        obs[_EMPTY] = 1
    else:
        obs[_LE + state.left] = 1
        obs[_RE + state.right] = 1
    in_hands = 0
    for r in range(n):
        s = (seat + r) % n
        hand = state.hands[s]
        in_hands |= hand
        obs[_CNT + r] = hand.bit_count()
        if state.voids[s]:
            obs[_VOID + 7 * r : _VOID + 7 * r + 7] = (state.voids[s] >> _SHIFTS7) & 1
        obs[_SC + r] = state.scores[s]
        obs[_SEATS + r] = 1
    obs[_TG] = config.target
    obs[_LEAD + (state.leader - seat) % n] = 1
    if not state.episode_over:
        obs[_ACT + (state.current - seat) % n] = 1
    obs[_PART] = config.partnership
    obs[_OUT] = NUM_TILES - (in_hands | state.played).bit_count()
    return obs


def decode(obs: np.ndarray) -> dict[str, object]:
    """Readable view of one observation vector: tiles as lists of (a, b), ends as values
    (None when the line is empty), per-seat fields as lists by relative seat."""
    obs = np.asarray(obs)
    if obs.shape != (OBS_DIM,):
        raise ValueError(f"expected an observation of shape ({OBS_DIM},), got {obs.shape}")

    def tiles(name: str) -> list[tuple[int, int]]:
        return [TILES[i] for i in np.flatnonzero(obs[FIELDS[name]])]

    def one_hot(name: str) -> int | None:
        hot = np.flatnonzero(obs[FIELDS[name]])
        return int(hot[0]) if hot.size else None

    seats = int(obs[FIELDS["seats"]].sum())
    voids = obs[FIELDS["voids"]].reshape(MAX_SEATS, 7)
    return {
        "hand": tiles("hand"),
        "line": tiles("line"),
        "left_end": one_hot("left_end"),
        "right_end": one_hot("right_end"),
        "empty_line": bool(obs[FIELDS["empty_line"]][0]),
        "tile_counts": [int(c) for c in obs[FIELDS["tile_counts"]][:seats]],
        "voids": [[int(v) for v in np.flatnonzero(row)] for row in voids[:seats]],
        "scores": [int(s) for s in obs[FIELDS["scores"]][:seats]],
        "target": int(obs[FIELDS["target"]][0]),
        "leader": one_hot("leader"),
        "to_act": one_hot("to_act"),
        "num_players": seats,
        "partnership": bool(obs[FIELDS["partnership"]][0]),
        "out_of_play": int(obs[FIELDS["out_of_play"]][0]),
    }


STATE_DIM = MAX_SEATS * NUM_TILES + OBS_DIM


def encode_state(config: BlockConfig, state: State) -> np.ndarray:
    """Privileged full position: every seat's hand (4 x 28, absolute seats, padded) followed
    by seat 0's observation. For centralized critics and oracle agents only."""
    out = np.zeros(STATE_DIM, dtype=np.float32)
    for s, hand in enumerate(state.hands):
        out[s * NUM_TILES : (s + 1) * NUM_TILES] = (hand >> _SHIFTS28) & 1
    out[MAX_SEATS * NUM_TILES :] = encode(config, state, 0)
    return out


STATE_LOW = np.zeros(STATE_DIM, dtype=np.float32)
STATE_HIGH = np.concatenate([np.ones(MAX_SEATS * NUM_TILES, dtype=np.float32), OBS_HIGH])
