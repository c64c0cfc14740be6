"""What one seat may know, as a fixed-length float32 vector (seat-relative, padded to 4).

Relative seat r is the seat r places clockwise from the observer (r = 0 is the observer).
Every field is public or the observer's own; no opponent tile and no out-of-play tile ever
appears. The layout depends only on the tile set (T tiles, values 0..N; see ``obs_layout``):
the same for every player count and variant. For the standard set (T = 28, N = 6):

==================  ==========  ===========================================================
field               indices     meaning (size for any set)
==================  ==========  ===========================================================
hand                0..27       1 if the observer holds tile i (tiles in the set's order; T)
line                28..55      1 if tile i is on the line (T)
left_end            56..62      one-hot value of the left open end, all 0 on an empty line
                                (N+1)
right_end           63..69      one-hot value of the right open end (N+1)
empty_line          70          1 before the opening
tile_counts         71..74      tiles in hand, by relative seat (0 for absent seats)
voids               75..102     N+1 flags per relative seat: values that seat showed lacking
                                by passing (a pass shows it holds neither end's value)
scores              103..106    match scores, by relative seat (raw points)
target              107         the match target (raw points)
leader              108..111    one-hot relative seat that led this hand
to_act              112..115    one-hot relative seat to act (all 0 once the episode ended)
seats               116..119    1 for relative seats that are in the game
partnership         120         1 in partnership play (the partner is relative seat 2)
out_of_play         121         number of tiles out of play this hand (a count only)
==================  ==========  ===========================================================

Length: 2T + 6(N+1) + 24 (122 for the standard set). Counts and scores are raw integers
stored as float32 (exact); ``OBS_SCALE`` (or ``ObsLayout.scale``) divides them into roughly
[0, 1] for networks. The module-level names are those of the standard set.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from block_env.config import BlockConfig
from block_env.rules import EMPTY, State
from block_env.tiles import MAX_PIP, PIP_RANGE, tile_set

MAX_SEATS = 4
_COUNT_FIELDS = ("tile_counts", "out_of_play")
_SCORE_FIELDS = ("scores", "target")


def obs_dim_for(num_tiles: int, num_values: int) -> int:
    """Observation length for a set of T tiles with values 0..N (N + 1 values):
    2T + 6(N+1) + 24."""
    return 2 * num_tiles + 6 * num_values + 24


class ObsLayout:
    """Field positions, bounds and scale of the observation (and privileged state) for one
    tile set and largest hand. One shared object per (max_pip, count_high): see
    ``obs_layout``."""

    def __init__(self, max_pip: int, count_high: int) -> None:
        ts = tile_set(max_pip)
        t, v = ts.num_tiles, ts.num_values
        self.tiles = ts
        self.num_tiles = t
        self.num_values = v
        self.fields: dict[str, slice] = {}
        offset = 0
        for name, size in (
            ("hand", t),
            ("line", t),
            ("left_end", v),
            ("right_end", v),
            ("empty_line", 1),
            ("tile_counts", MAX_SEATS),
            ("voids", v * MAX_SEATS),
            ("scores", MAX_SEATS),
            ("target", 1),
            ("leader", MAX_SEATS),
            ("to_act", MAX_SEATS),
            ("seats", MAX_SEATS),
            ("partnership", 1),
            ("out_of_play", 1),
        ):
            self.fields[name] = slice(offset, offset + size)
            offset += size
        self.dim = offset
        assert offset == obs_dim_for(t, v)
        f = self.fields
        self.low = np.zeros(self.dim, dtype=np.float32)
        self.high = np.ones(self.dim, dtype=np.float32)
        self.high[f["tile_counts"]] = count_high
        self.high[f["out_of_play"]] = t
        self.high[f["scores"]] = np.inf
        self.high[f["target"]] = np.inf
        # Per-index divisor that brings every field to about [0, 1] (scores in units of 100).
        self.scale = np.ones(self.dim, dtype=np.float32)
        for name in _COUNT_FIELDS:
            self.scale[f[name]] = 7
        for name in _SCORE_FIELDS:
            self.scale[f[name]] = 100
        self.state_dim = MAX_SEATS * t + self.dim
        self.state_low = np.zeros(self.state_dim, dtype=np.float32)
        self.state_high = np.concatenate([np.ones(MAX_SEATS * t, dtype=np.float32), self.high])
        self.shifts_tiles = np.arange(t, dtype=np.int64)
        self.shifts_values = np.arange(v, dtype=np.int64)
        # field offsets as plain ints, for ``encode``'s hot path
        self.o_right = 2 * t + v
        self.o_empty = f["empty_line"].start
        self.o_counts = f["tile_counts"].start
        self.o_voids = f["voids"].start
        self.o_scores = f["scores"].start
        self.o_seats = f["seats"].start
        self.o_target = f["target"].start
        self.o_leader = f["leader"].start
        self.o_to_act = f["to_act"].start
        self.o_part = f["partnership"].start
        self.o_out = f["out_of_play"].start
        self._key = (max_pip, count_high)
        # everything ``encode`` reads, unpacked in one step on its hot path
        self.hot = (
            t,
            v,
            self.dim,
            self.shifts_tiles,
            self.shifts_values,
            self.o_empty,
            self.o_right,
            self.o_counts,
            self.o_voids,
            self.o_scores,
            self.o_seats,
            self.o_target,
            self.o_leader,
            self.o_to_act,
            self.o_part,
            self.o_out,
        )

    def __reduce__(self) -> tuple:
        return (_layout, self._key)

    def __deepcopy__(self, memo: dict) -> ObsLayout:
        return self


@cache
def _layout(max_pip: int, count_high: int) -> ObsLayout:
    return ObsLayout(max_pip, count_high)


def obs_layout(config: BlockConfig | None = None) -> ObsLayout:
    """The observation layout of a game (the standard one for None). Tile counts are
    bounded by max(7, hand_size), so the standard games share one layout."""
    if config is None:
        return _layout(MAX_PIP, 7)
    lay = config.__dict__.get("_obs_layout")  # kept on the config: encode's hot path
    if lay is None:
        lay = _layout(config.max_pip, max(7, config.hand_size))
        object.__setattr__(config, "_obs_layout", lay)
    return lay


def layout_for_dim(dim: int) -> ObsLayout:
    """The layout whose observation length is ``dim`` (the length identifies the set: it
    grows with N); ValueError naming the lengths allowed otherwise."""
    for n in PIP_RANGE:
        ts = tile_set(n)
        if obs_dim_for(ts.num_tiles, ts.num_values) == dim:
            return _layout(n, 7)
    allowed = ", ".join(
        f"{obs_dim_for(tile_set(n).num_tiles, tile_set(n).num_values)} (max_pip={n})"
        for n in PIP_RANGE
    )
    raise ValueError(f"expected an observation of length {allowed}; got {dim}")


_STANDARD = obs_layout()
FIELDS: dict[str, slice] = _STANDARD.fields
OBS_DIM = _STANDARD.dim
OBS_LOW = _STANDARD.low
OBS_HIGH = _STANDARD.high
OBS_SCALE = _STANDARD.scale


def encode(config: BlockConfig, state: State, seat: int) -> np.ndarray:
    """The observation vector of ``seat`` in ``state`` (a new float32 array)."""
    lay = config.__dict__.get("_obs_layout") or obs_layout(config)
    (t, v, dim, shifts, shifts_v, o_empty, o_right, cnt, void, sc, seats0, o_target, o_leader,
     o_to_act, o_part, o_out) = lay.hot  # fmt: skip
    n = config.num_players
    obs = np.zeros(dim, dtype=np.float32)
    obs[:t] = (state.hands[seat] >> shifts) & 1
    obs[t : 2 * t] = (state.played >> shifts) & 1
    if state.left == EMPTY:
        obs[o_empty] = 1
    else:
        obs[2 * t + state.left] = 1
        obs[o_right + state.right] = 1
    in_hands = 0
    for r in range(n):
        s = (seat + r) % n
        hand = state.hands[s]
        in_hands |= hand
        obs[cnt + r] = hand.bit_count()
        if state.voids[s]:
            obs[void + v * r : void + v * r + v] = (state.voids[s] >> shifts_v) & 1
        obs[sc + r] = state.scores[s]
        obs[seats0 + r] = 1
    obs[o_target] = config.target
    obs[o_leader + (state.leader - seat) % n] = 1
    if not state.episode_over:
        obs[o_to_act + (state.current - seat) % n] = 1
    obs[o_part] = config.partnership
    obs[o_out] = t - (in_hands | state.played).bit_count()
    return obs


def decode(obs: np.ndarray) -> dict[str, object]:
    """Readable view of one observation vector of any tile set (its length identifies the
    set): tiles as lists of (a, b), ends as values (None when the line is empty), per-seat
    fields as lists by relative seat."""
    obs = np.asarray(obs)
    if obs.ndim != 1:
        raise ValueError(f"expected an observation of shape ({OBS_DIM},), got {obs.shape}")
    lay = layout_for_dim(obs.shape[0])
    fields, pairs = lay.fields, lay.tiles.tiles

    def tiles(name: str) -> list[tuple[int, int]]:
        return [pairs[i] for i in np.flatnonzero(obs[fields[name]])]

    def one_hot(name: str) -> int | None:
        hot = np.flatnonzero(obs[fields[name]])
        return int(hot[0]) if hot.size else None

    seats = int(obs[fields["seats"]].sum())
    voids = obs[fields["voids"]].reshape(MAX_SEATS, lay.num_values)
    return {
        "hand": tiles("hand"),
        "line": tiles("line"),
        "left_end": one_hot("left_end"),
        "right_end": one_hot("right_end"),
        "empty_line": bool(obs[fields["empty_line"]][0]),
        "tile_counts": [int(c) for c in obs[fields["tile_counts"]][:seats]],
        "voids": [[int(v) for v in np.flatnonzero(row)] for row in voids[:seats]],
        "scores": [int(s) for s in obs[fields["scores"]][:seats]],
        "target": int(obs[fields["target"]][0]),
        "leader": one_hot("leader"),
        "to_act": one_hot("to_act"),
        "num_players": seats,
        "partnership": bool(obs[fields["partnership"]][0]),
        "out_of_play": int(obs[fields["out_of_play"]][0]),
    }


STATE_DIM = _STANDARD.state_dim


def encode_state(config: BlockConfig, state: State) -> np.ndarray:
    """Privileged full position: every seat's hand (4 x T, absolute seats, padded) followed
    by seat 0's observation. For centralized critics and oracle agents only."""
    lay = obs_layout(config)
    t = lay.tiles.num_tiles
    out = np.zeros(lay.state_dim, dtype=np.float32)
    for s, hand in enumerate(state.hands):
        out[s * t : (s + 1) * t] = (hand >> lay.shifts_tiles) & 1
    out[MAX_SEATS * t :] = encode(config, state, 0)
    return out


STATE_LOW = _STANDARD.state_low
STATE_HIGH = _STANDARD.state_high
