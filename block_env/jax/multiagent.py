"""Block as a JaxMARL ``MultiAgentEnv`` over ``block_env.jax``: every live seat acts at
every step, the view of ``block_env.parallel_env`` as pure JAX functions.

``multiagent_env(**kwargs)`` takes ``raw_env``'s keywords. Where JaxMARL is installed the
env is a ``jaxmarl.environments.multi_agent_env.MultiAgentEnv`` (its ``step``, its
``spaces``); otherwise a stand-in with the same methods and the same ``step``.

==================  =======================================================================
agents              ``player_0 .. player_{n-1}``, as ``parallel_env``
actions             ``Discrete(2T + 2)``: the AEC env's ``2T + 1`` and ``wait = 2T + 1``
                    (57 on the standard set), the one legal action of every seat not to act
observations        ``reset`` and ``step`` return ``{agent: float32 (D,)}``, the AEC
                    observation (plus ``"world_state"`` with ``world_state_in_obs=True``)
avail actions       ``get_avail_actions(state)``: ``{agent: bool (2T + 2,)}``, the AEC mask
                    with the wait illegal for the seat to act; exactly ``{wait}`` for every
                    other seat, and for every seat once the episode is over
rewards, dones      every seat's reward of the move (a hand's points on the step that ends
                    it); ``dones[agent]`` and ``dones["__all__"]``: the episode ended;
                    ``infos["hand_over"]`` (one per seat): the move ended a hand
world state         ``world_state(state)``: the privileged full position (all hands), as
                    ``parallel_env.state()``, for a centralised critic
==================  =======================================================================

``step(key, state, actions)`` is JaxMARL's: ``step_env`` with one half of ``key`` (which
also deals a hand the move starts), then, where the episode ended, ``reset`` with the other
half (``jax.lax.select`` over the state and observations); rewards, dones and infos stay
those of the move. Nothing raises inside ``jit``, so bad actions follow pgx's convention
(``block_env.jax``): an action that is not legal for its seat (the seat to act waiting or
playing an illegal or out-of-range move, another seat sending anything but the wait) ends
the episode with the position unchanged; the offender (the seat to act if it offended,
else the lowest other seat that did) gets -1 and every other seat n - 1. A missing or
unknown agent or a non-integer action is a ValueError when the step is traced.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from block_env.information_state import information_state_bounds
from block_env.jax.env import BlockEnv, make
from block_env.jax.state import State
from block_env.observation import MAX_SEATS, obs_layout
from block_env.parallel import wait_action

__all__ = ["HAS_JAXMARL", "BlockMultiAgentEnv", "MultiAgentEnvBase", "multiagent_env"]


class Discrete:
    """JaxMARL's ``spaces.Discrete`` where JaxMARL is absent: ``n`` actions, int32."""

    def __init__(self, num_categories: int, dtype: Any = jnp.int32) -> None:
        self.n, self.shape, self.dtype = num_categories, (), dtype

    def sample(self, rng: jax.Array) -> jax.Array:
        return jax.random.randint(rng, self.shape, 0, self.n).astype(self.dtype)

    def contains(self, x: jax.Array) -> jax.Array:
        return (x >= 0) & (x < self.n)


class Box:
    """JaxMARL's ``spaces.Box`` where JaxMARL is absent: bounds, shape and dtype."""

    def __init__(
        self, low: Any, high: Any, shape: tuple[int, ...], dtype: Any = jnp.float32
    ) -> None:
        self.low, self.high, self.shape, self.dtype = low, high, shape, dtype

    def sample(self, rng: jax.Array) -> jax.Array:
        return jax.random.uniform(rng, self.shape, minval=self.low, maxval=self.high).astype(
            self.dtype
        )

    def contains(self, x: jax.Array) -> jax.Array:
        return jnp.all(x >= self.low) & jnp.all(x <= self.high)


class MultiAgentEnvBase:
    """JaxMARL's ``MultiAgentEnv`` contract where JaxMARL is absent: agents ``agent_i``
    (a subclass renames them), the spaces by agent, and ``step`` with auto-reset."""

    def __init__(self, num_agents: int) -> None:
        self.num_agents = num_agents
        self.agents = [f"agent_{i}" for i in range(num_agents)]
        self.observation_spaces: dict[str, Any] = {}
        self.action_spaces: dict[str, Any] = {}

    @partial(jax.jit, static_argnums=(0,))
    def step(
        self, key: jax.Array, state: Any, actions: dict, reset_state: Any = None
    ) -> tuple[dict, Any, dict, dict, dict]:
        """``step_env`` with one half of ``key``; where ``dones["__all__"]``, the state and
        observations of ``reset`` with the other half (or of ``reset_state``)."""
        key, key_reset = jax.random.split(key)
        obs_step, state_step, rewards, dones, infos = self.step_env(key, state, actions)
        if reset_state is None:
            obs_reset, state_reset = self.reset(key_reset)
        else:
            state_reset, obs_reset = reset_state, self.get_obs(reset_state)
        done = dones["__all__"]
        state = jax.tree.map(lambda x, y: jax.lax.select(done, x, y), state_reset, state_step)
        obs = jax.tree.map(lambda x, y: jax.lax.select(done, x, y), obs_reset, obs_step)
        return obs, state, rewards, dones, infos

    def observation_space(self, agent: str) -> Any:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> Any:
        return self.action_spaces[agent]

    @property
    def name(self) -> str:
        return type(self).__name__


try:  # JaxMARL is optional: the env is its MultiAgentEnv only where it is installed
    from jaxmarl.environments import spaces as _spaces
    from jaxmarl.environments.multi_agent_env import MultiAgentEnv as _Base
except ImportError:  # pragma: no cover - exercised where JaxMARL is absent
    _Base, _spaces = MultiAgentEnvBase, None

HAS_JAXMARL = _spaces is not None
_DiscreteSpace = _spaces.Discrete if HAS_JAXMARL else Discrete
_BoxSpace = _spaces.Box if HAS_JAXMARL else Box


def multiagent_env(world_state_in_obs: bool = False, **kwargs: Any) -> BlockMultiAgentEnv:
    """Block as a JaxMARL ``MultiAgentEnv``; the keyword arguments are ``raw_env``'s."""
    return BlockMultiAgentEnv(world_state_in_obs=world_state_in_obs, **kwargs)


class BlockMultiAgentEnv(_Base):
    """Every live seat acts each step: the seat to act plays, the others send ``wait``.

    ``game`` is the ``block_env.jax`` env the states belong to (``block_env.jax.State``).
    With ``world_state_in_obs`` the observation dict also holds ``"world_state"``: the
    privileged position, one row per agent (JaxMARL's MAPPO scripts read it there)."""

    def __init__(self, world_state_in_obs: bool = False, **kwargs: Any) -> None:
        self.game: BlockEnv = make(**kwargs)
        config = self.game.config
        super().__init__(num_agents=config.num_players)
        self.agents = [f"player_{i}" for i in range(config.num_players)]
        self.world_state_in_obs = bool(world_state_in_obs)
        self.wait = wait_action(self.game.num_actions)
        self.num_actions = self.wait + 1
        layout = obs_layout(config)
        if self.game.obs_type == "information_state":
            low, high = information_state_bounds(config)
        else:
            low, high = layout.low, layout.high
        self.world_state_size = layout.state_dim
        obs_space = _BoxSpace(low, high, low.shape, jnp.float32)
        self.observation_spaces = dict.fromkeys(self.agents, obs_space)
        self.action_spaces = dict.fromkeys(self.agents, _DiscreteSpace(self.num_actions))

    def __repr__(self) -> str:
        return f"BlockMultiAgentEnv({self.game!r}, world_state_in_obs={self.world_state_in_obs})"

    @property
    def agent_classes(self) -> dict[str, list[str]]:
        """The teams (``team_0``, ``team_1``) in partnership play, else one class per seat."""
        config = self.game.config
        if not config.partnership:
            return {a: [a] for a in self.agents}
        teams = config.teams
        return {
            f"team_{t}": [a for a, s in zip(self.agents, teams) if s == t]
            for t in sorted(set(teams))
        }

    # -- JaxMARL's interface --------------------------------------------------------------

    @partial(jax.jit, static_argnums=(0,))
    def reset(self, key: jax.Array) -> tuple[dict[str, jax.Array], State]:
        """Every seat's observation of a new episode dealt from ``key``, and its state."""
        state = self.game.init(key)
        return self.get_obs(state), state

    @partial(jax.jit, static_argnums=(0,))
    def step_env(
        self, key: jax.Array, state: State, actions: dict[str, Any]
    ) -> tuple[dict, State, dict, dict, dict]:
        """One move of the seat to act (``key`` deals a hand it starts), without reset; bad
        actions end the episode as the module docstring says."""
        acts = self._action_vector(actions)
        current = state.current_player
        done = state.terminated | state.truncated
        is_actor = jnp.arange(self.num_agents) == current
        played = acts[current]
        actor_bad = self.game._illegal(state, played)
        offenders = jnp.where(is_actor, actor_bad, acts != self.wait)
        offence = offenders.any() & ~done
        loser = jnp.where(actor_bad, current, jnp.argmax(offenders))
        after = self.game.step(state, jnp.where(offence, -1, played), key)
        penalty = self.game._step_with_illegal_action(after, loser).rewards
        after = after.replace(rewards=jnp.where(offence, penalty, after.rewards))
        ended = after.terminated | after.truncated
        hand_over = ~done & ~offence & (ended | (after._hand_number != state._hand_number))
        rewards = {a: after.rewards[i] for i, a in enumerate(self.agents)}
        dones = dict.fromkeys(self.agents, ended) | {"__all__": ended}
        infos = {"hand_over": jnp.full(self.num_agents, hand_over)}
        return self.get_obs(after), after, rewards, dones, infos

    def get_obs(self, state: State) -> dict[str, jax.Array]:
        """Every seat's observation (and ``"world_state"`` with ``world_state_in_obs``)."""
        seats = jnp.arange(self.num_agents)
        rows = jax.vmap(lambda seat: self.game.observe(state, seat))(seats)
        obs = {a: rows[i] for i, a in enumerate(self.agents)}
        if self.world_state_in_obs:
            ws = self.world_state(state)
            obs["world_state"] = jnp.broadcast_to(ws, (self.num_agents, ws.shape[0]))
        return obs

    @partial(jax.jit, static_argnums=(0,))
    def get_avail_actions(self, state: State) -> dict[str, jax.Array]:
        """Every seat's legal actions (bool, ``2T + 2``): the seat to act's AEC mask and a
        False wait; the wait alone for the others and once the episode is over."""
        live = ~(state.terminated | state.truncated)
        actor_row = jnp.append(state.legal_action_mask, False)
        wait_row = jnp.arange(self.num_actions) == self.wait
        to_act = (jnp.arange(self.num_agents) == state.current_player) & live
        rows = jnp.where(to_act[:, None], actor_row, wait_row)
        return {a: rows[i] for i, a in enumerate(self.agents)}

    def world_state(self, state: State) -> jax.Array:
        """The privileged full position as ``parallel_env.state()`` (the AEC env's
        ``state()``): every seat's hand (4 x T bits, absolute seats, padded), then seat 0's
        observation without history; float32 of length ``world_state_size``."""
        spec = self.game.spec
        shifts = jnp.arange(spec.num_tiles, dtype=jnp.int32)
        hands = ((state._hands[:, None] >> shifts) & 1).astype(jnp.float32)
        hands = jnp.pad(hands, ((0, MAX_SEATS - spec.n), (0, 0))).reshape(-1)
        seat0 = self.game.observe(state, jnp.zeros((), jnp.int32))[: spec.obs_dim]
        return jnp.concatenate([hands, seat0])

    # -- input ----------------------------------------------------------------------------

    def _action_vector(self, actions: dict[str, Any]) -> jax.Array:
        """The actions as int32 by seat; ValueError (at trace time) for a missing or unknown
        agent or an action that is not one integer."""
        if not isinstance(actions, dict) or set(actions) != set(self.agents):
            got = sorted(actions) if isinstance(actions, dict) else type(actions).__name__
            raise ValueError(
                f"actions must be a dict with one action per agent {self.agents}, got {got}"
            )
        acts = []
        for agent in self.agents:
            a = jnp.asarray(actions[agent])
            if a.shape != () or not jnp.issubdtype(a.dtype, jnp.integer):
                raise ValueError(
                    f"the action of {agent} must be one integer, got {a.dtype} of shape {a.shape}"
                )
            acts.append(a.astype(jnp.int32))
        return jnp.stack(acts)
