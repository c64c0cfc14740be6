"""The JAX state of one Block game: pgx's fields, then the position (private fields).

Tile sets are T-bit int32 masks (bit i = tile i of the set, as in ``block_env.tiles``). The
position is that of ``block_env.rules.State`` without the line's order (the observation
needs only the tiles on it and the two ends): ``_hands`` by absolute seat, ``_played``,
``_left``/``_right`` (-1 on the empty line), ``_leader``, ``_opening`` (the tile the opening
must be under ``opener="highest_double"``, else -1), ``_voids`` ((N+1)-bit masks by seat),
``_scores``, ``_hand_number``; ``_history`` (n, H) holds each seat's moves of the current
hand as action ids (-1: not yet; H = 0 unless ``obs_type="information_state"``) and
``_turn`` the moves made in the hand; ``_seed`` (two uint32) is where ``step`` draws the
next deal from when it is given no key.
"""

from __future__ import annotations

from pathlib import Path

import jax

from block_env.jax._compat import StateBase, dataclass

ENV_ID = "block"


@dataclass
class State(StateBase):
    """A Block position as a pytree (see the module docstring for the fields)."""

    current_player: jax.Array
    observation: jax.Array
    rewards: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    legal_action_mask: jax.Array
    _step_count: jax.Array
    _hands: jax.Array
    _played: jax.Array
    _left: jax.Array
    _right: jax.Array
    _leader: jax.Array
    _opening: jax.Array
    _voids: jax.Array
    _scores: jax.Array
    _hand_number: jax.Array
    _history: jax.Array
    _turn: jax.Array
    _seed: jax.Array

    @property
    def env_id(self) -> str:
        return ENV_ID

    def to_svg(self, *, color_theme: str | None = None, scale: float | None = None) -> str:
        """The position (every game of a batch) as an SVG of text lines."""
        from block_env.jax.bridge import state_svg

        return state_svg(self, dark=color_theme == "dark", scale=scale or 1.0)

    def save_svg(
        self,
        filename: str | Path,
        *,
        color_theme: str | None = None,
        scale: float | None = None,
    ) -> None:
        """Write ``to_svg`` to ``filename``."""
        Path(filename).write_text(self.to_svg(color_theme=color_theme, scale=scale))
