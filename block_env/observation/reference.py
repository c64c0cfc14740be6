"""The reference encoder of the observation (``encode``), its reader (``decode``) and the
privileged full position (``encode_state``). Every fast path that writes observations (the
AEC env's ``BytesEncoder``, the batched engine's writers and compiled kernels) must equal
``encode`` bit for bit; see ARCHITECTURE.md for the tests that bind them."""

from __future__ import annotations

import numpy as np

from block_env.config import BlockConfig
from block_env.observation.layout import MAX_SEATS, layout_for_dim, obs_layout
from block_env.rules import EMPTY, State


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
        raise ValueError(f"expected one observation vector (1-D), got shape {obs.shape}")
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
