"""The static description of one game for the JAX rules: sizes, variant flags and the
constant tables the traced functions read (numpy arrays, constants of the compiled code)."""

from __future__ import annotations

import dataclasses
from functools import cached_property
from types import SimpleNamespace

import jax.numpy as jnp
import numpy as np

from block_env.config import BlockConfig
from block_env.information_state import history_slots, information_state_dim, slot_size
from block_env.observation import MAX_SEATS, obs_layout


@dataclasses.dataclass(frozen=True)
class Spec:
    """Everything about a game that is fixed at ``make``: hashable, so traced functions may
    close over it. ``config`` is the validated ``BlockConfig``; ``info_state`` says whether
    observations carry the hand's history (``obs_type="information_state"``)."""

    config: BlockConfig
    info_state: bool

    @property
    def n(self) -> int:
        return self.config.num_players

    @property
    def num_tiles(self) -> int:
        return self.config.tiles.num_tiles

    @property
    def num_values(self) -> int:
        return self.config.tiles.num_values

    @property
    def hand_size(self) -> int:
        return self.config.hand_size

    @property
    def num_actions(self) -> int:
        return self.config.tiles.num_actions

    @property
    def pass_action(self) -> int:
        return self.config.tiles.pass_action

    @property
    def obs_dim(self) -> int:
        """Length of the plain observation (the history, if any, follows it)."""
        return obs_layout(self.config).dim

    @property
    def dim(self) -> int:
        """Length of the vector ``observe`` returns."""
        if self.info_state:
            return information_state_dim(self.config)
        return self.obs_dim

    @property
    def slots(self) -> int:
        """H: history slots per seat kept in the state (0 without the history)."""
        return history_slots(self.config) if self.info_state else 0

    @property
    def slot_size(self) -> int:
        return slot_size(self.config)

    @cached_property
    def tables_np(self) -> Tables:
        """The constant tables as numpy arrays (for static look-ups while tracing)."""
        return Tables(self.config)

    @property
    def tables(self) -> SimpleNamespace:
        """The constant tables as JAX arrays, made anew for each trace (a JAX array made
        inside one trace must not be kept for the next)."""
        return SimpleNamespace(**{k: jnp.asarray(v) for k, v in vars(self.tables_np).items()})


class Tables:
    """Constant arrays of one game (int32; tile masks fit 28 bits)."""

    def __init__(self, config: BlockConfig) -> None:
        ts = config.tiles
        t = ts.num_tiles
        self.tile_a = np.array([a for a, _ in ts.tiles], dtype=np.int32)
        self.tile_b = np.array([b for _, b in ts.tiles], dtype=np.int32)
        self.tile_bit = (1 << np.arange(t)).astype(np.int32)
        self.with_value = np.array(ts.with_value, dtype=np.int32)
        # pip_bits[j]: the tiles whose pip sum has bit j set, so that the pips of a mask are
        # sum_j popcount(mask & pip_bits[j]) << j
        pips = np.array(ts.pips)
        self.pip_bits = np.array(
            [sum(1 << i for i in range(t) if pips[i] >> j & 1) for j in range(4)], dtype=np.int32
        )
        # highest_double: the dealt tile of highest rank opens (doubles by value first, then
        # the pip sum, then the higher half), as rules.opening_for
        self.open_rank = np.array(
            [1000 + a if a == b else 10 * (a + b) + b for a, b in ts.tiles], dtype=np.int32
        )
        self.seats_present = (np.arange(MAX_SEATS) < config.num_players).astype(np.float32)
        self.team = np.array(config.teams, dtype=np.int32)
        # loss[a]: -a / (sides - 1) as rules.spread_reward computes it (float64, then the
        # float32 the env hands out), for every amount a hand can score (XLA's float32
        # division by a constant may differ from it in the last bit)
        sides = 2 if config.partnership else config.num_players
        most = sum(ts.pips)
        self.loss = np.array([-a / (sides - 1) for a in range(most + 1)], dtype=np.float32)
