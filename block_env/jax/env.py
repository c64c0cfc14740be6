"""``BlockEnv``: Block with pgx's ``Env`` interface over the JAX rules of ``game``.

``init(key)``, ``step(state, action, key=None)`` and ``observe(state, player_id)`` are pure
functions of pytrees: ``jax.jit``, ``jax.vmap`` and ``jax.lax.scan`` apply to them. The step
follows pgx's ``Env.step`` (pgx 2.6.0): a terminated state steps to itself with zero
rewards; an illegal action (or one outside 0..2T) ends the game, the mover getting the
penalty -1 and every other seat +(n-1), the position left as it was; a terminated state
marks every action legal. ``key``, when given, supplies the deal of a hand this step
starts; without it the deal comes from the seed the state was dealt from.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from block_env.config import BlockConfig
from block_env.information_state import check_obs_type
from block_env.jax import game
from block_env.jax._compat import EnvBase
from block_env.jax.spec import Spec
from block_env.jax.state import ENV_ID, State

VERSION = "v1"  # the AEC env's version (``block_env.ENV_ID``): the same game
ILLEGAL_ACTION_PENALTY = -1.0


class BlockEnv(EnvBase):
    """One Block configuration as a pgx environment (a ``pgx.Env`` where pgx is installed).

    Build it with ``block_env.jax.make``. ``config`` is the ``BlockConfig``, ``obs_type``
    ``"observation"`` or ``"information_state"`` as for ``raw_env``."""

    def __init__(self, config: BlockConfig, obs_type: str = "observation") -> None:
        super().__init__()
        self.config = config
        self.obs_type = check_obs_type(obs_type)
        self.spec = Spec(config, obs_type == "information_state")

    def __repr__(self) -> str:
        return f"BlockEnv({self.config!r}, obs_type={self.obs_type!r})"

    # -- pgx's interface ------------------------------------------------------------------

    def init(self, key: jax.Array) -> State:
        """The first hand of a new episode (match or hand), dealt from ``key``."""
        return self._finish(self._init(key))

    def step(self, state: State, action: jax.Array, key: jax.Array | None = None) -> State:
        """The state after the seat to act plays ``action`` (see the module docstring)."""
        action = jnp.asarray(action, jnp.int32)
        illegal = self._illegal(state, action)
        seed = state._seed if key is None else game.seed_words(key)
        done = state.terminated | state.truncated
        counted = state.replace(_step_count=state._step_count + 1)
        after = jax.lax.cond(
            done,
            lambda: state.replace(rewards=jnp.zeros_like(state.rewards)),
            lambda: self._step(counted, action, seed),
        )
        after = jax.lax.cond(
            illegal & ~done,
            lambda: self._step_with_illegal_action(counted, state.current_player),
            lambda: after,
        )
        return self._finish(after)

    def step_autoreset(self, state: State, action: jax.Array, key: jax.Array) -> State:
        """``step``, then a new episode where this one ended: what
        ``pgx.experimental.auto_reset(env.step, env.init)`` returns, except that ``key``
        serves both the step's deal and ``init`` (a step deals the next hand or ends the
        episode, never both) and the work is shared: one deal, one observation. As there,
        a terminated state given in starts its episode again from the fresh state, and the
        state returned where an episode ended is ``init(key)``'s with the step's rewards
        and ``terminated`` (the final position is not kept)."""
        action = jnp.asarray(action, jnp.int32)
        cleared = state.replace(
            terminated=jnp.zeros_like(state.terminated),
            truncated=jnp.zeros_like(state.truncated),
            rewards=jnp.zeros_like(state.rewards),
        )
        illegal = self._illegal(state, action)
        seed = game.seed_words(key)
        counted = cleared.replace(_step_count=state._step_count + 1)
        after = game.apply_action(self.spec, counted, action, seed, restart=seed, abandon=illegal)
        penalty = self._step_with_illegal_action(after, state.current_player)
        after = after.replace(
            rewards=jnp.where(illegal, penalty.rewards, after.rewards),
            terminated=after.terminated | illegal,
        )
        # every game is live now (a fresh episode where one ended): its mask, and the
        # observation init gives (with a seat to act), whatever ``terminated`` says
        live = after.replace(terminated=jnp.zeros_like(after.terminated))
        return after.replace(
            legal_action_mask=game.legal_mask(self.spec, after),
            observation=self._observe(live, after.current_player),
        )

    def observe(self, state: State, player_id: jax.Array | None = None) -> jax.Array:
        """``player_id``'s observation vector (default: the seat to act), float32 of length
        ``observation_shape[0]``, as the AEC env's ``observe(agent)["observation"]``."""
        seat = state.current_player if player_id is None else player_id
        return jax.lax.stop_gradient(self._observe(state, seat))

    @property
    def id(self) -> str:
        return ENV_ID

    @property
    def version(self) -> str:
        return VERSION

    @property
    def num_players(self) -> int:
        return self.config.num_players

    @property
    def num_actions(self) -> int:
        """2T + 1: placements ``2 * tile + end``, then pass."""
        return self.spec.num_actions

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return (self.spec.dim,)

    def _illegal(self, state: State, action: jax.Array) -> jax.Array:
        """Whether ``action`` is outside 0..2T or not legal in ``state``."""
        num_actions = self.spec.num_actions
        in_range = (action >= 0) & (action < num_actions)
        return ~(in_range & state.legal_action_mask[jnp.clip(action, 0, num_actions - 1)])

    def _finish(self, state: State) -> State:
        """The mask (every action at a terminal state, as pgx) and the observation."""
        mask = jnp.where(state.terminated, True, game.legal_mask(self.spec, state))
        state = state.replace(legal_action_mask=mask)
        return state.replace(observation=self._observe(state, state.current_player))

    # -- pgx's abstract methods -----------------------------------------------------------

    def _init(self, key: jax.Array) -> State:
        return game.init(self.spec, key)

    def _step(self, state: State, action: jax.Array, key: jax.Array) -> State:
        """The legal move ``action`` applied; ``key`` is the seed of a deal (two uint32)."""
        return game.apply_action(self.spec, state, action, key)

    def _observe(self, state: State, player_id: jax.Array) -> jax.Array:
        return game.observe(self.spec, state, player_id)

    @property
    def _illegal_action_penalty(self) -> float:
        return ILLEGAL_ACTION_PENALTY

    def _step_with_illegal_action(self, state: State, loser: jax.Array) -> State:
        """pgx's rule: the game ends, the mover gets the penalty and the others its
        opposite times n - 1."""
        n = self.num_players
        penalty = jnp.float32(self._illegal_action_penalty)
        rewards = jnp.full(n, -penalty * (n - 1), jnp.float32)
        rewards = jnp.where(jnp.arange(n) == loser, penalty, rewards)
        return state.replace(rewards=rewards, terminated=jnp.ones((), jnp.bool_))


def make(
    num_players: int = 2,
    opener: str = "rotate",
    episode: str = "match",
    partnership: bool = False,
    target_score: int | None = None,
    reward: str = "zero_sum",
    max_pip: int = 6,
    hand_size: int | None = None,
    obs_type: str = "observation",
) -> BlockEnv:
    """A ``BlockEnv`` for the game ``raw_env`` plays with the same keywords (validated by
    ``BlockConfig`` and ``check_obs_type``: the same ValueErrors)."""
    config = BlockConfig(
        num_players=num_players,
        opener=opener,
        episode=episode,
        partnership=partnership,
        target_score=target_score,
        reward=reward,
        max_pip=max_pip,
        hand_size=hand_size,
    )
    return BlockEnv(config, check_obs_type(obs_type))
