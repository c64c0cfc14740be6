"""Where each field of the observation lies, for any tile set: ``ObsLayout``, its bounds and
scale, and the standard double-six set's (``STANDARD_OBS_DIM``, ``FIELDS``, ``OBS_SCALE``, ...).
The fields themselves are described in ``block_env.observation``."""

from __future__ import annotations

from functools import cache

import numpy as np

from block_env.config import BlockConfig
from block_env.tiles import MAX_PIP, PIP_RANGE, renamed_getattr, tile_set

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
STANDARD_OBS_DIM = _STANDARD.dim
OBS_LOW = _STANDARD.low
OBS_HIGH = _STANDARD.high
OBS_SCALE = _STANDARD.scale

STATE_DIM = _STANDARD.state_dim
STATE_LOW = _STANDARD.state_low
STATE_HIGH = _STANDARD.state_high

__getattr__ = renamed_getattr(__name__, {"OBS_DIM": "STANDARD_OBS_DIM"}, globals())
