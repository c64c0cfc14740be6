"""Differential tests: the JAX env (``block_env.jax``) against the AEC env, step by step.

B JAX games run under ``jax.jit(jax.vmap(...))`` beside B ``raw_env``s, driven by the same
random legal actions. At every step the seat to act, the observation (bit for bit), the
mask, every seat's reward and the end of the episode must be equal; when an episode ends,
every seat's final observation too, and every fourth step every seat's observation.

Each AEC env is reset with ``block_env.jax.reset_options`` of the JAX game's first state
(its deal, leader and scores). Later deals of a match: when a JAX step ends a hand and
deals the next one, the AEC env's generator is replaced, for its next draw only, by one
whose permutation lays out that deal (``Dealt``), so ``raw_env`` deals it through its own
``rules.next_hand``; the new hand's leader, opener and scores stay the AEC env's own.
Finished JAX games restart as pgx pipelines do: ``jnp.where(terminated, init(new keys),
state)``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

if os.environ.get("BLOCK_ENV_REQUIRE_JAX"):  # the extra CI script: missing JAX is a failure
    import jax
else:
    jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from helpers import Dealt, bits  # noqa: E402

import block_env  # noqa: E402
import block_env.jax as bj  # noqa: E402

# Every player count, opener, episode mode, reward, partnership, a small target (matches of
# a few hands), every smaller tile set, other hand sizes (1 and above 7) and both obs types.
CONFIGS = [
    {"num_players": 2},
    {"num_players": 3, "reward": "points"},
    {"num_players": 4, "opener": "highest_double", "target_score": 40},
    {
        "num_players": 4,
        "partnership": True,
        "opener": "highest_double",
        "reward": "win",
        "target_score": 60,
    },
    {"num_players": 2, "opener": "highest_double", "reward": "win", "target_score": 30},
    {"num_players": 3, "episode": "hand", "opener": "highest_double", "reward": "win"},
    {"num_players": 4, "episode": "hand", "partnership": True, "reward": "points"},
    {"num_players": 2, "episode": "hand"},
    {"num_players": 4, "episode": "hand"},
    {"num_players": 2, "max_pip": 2, "target_score": 10},
    {
        "num_players": 3,
        "max_pip": 3,
        "reward": "win",
        "target_score": 15,
        "obs_type": "information_state",
    },
    {"num_players": 4, "max_pip": 4, "partnership": True, "hand_size": 3, "target_score": 20},
    {"num_players": 2, "max_pip": 5, "hand_size": 9, "episode": "hand", "reward": "points"},
    {"num_players": 3, "max_pip": 6, "hand_size": 1, "target_score": 12},
    {"num_players": 2, "obs_type": "information_state", "target_score": 40},
    {
        "num_players": 4,
        "partnership": True,
        "obs_type": "information_state",
        "reward": "win",
        "target_score": 30,
    },
]
NUM_GAMES = 48
NUM_STEPS = 240


def config_id(cfg: dict) -> str:
    return "-".join(f"{k}={v}" for k, v in cfg.items())


class Lockstep:
    """B JAX games and B ``raw_env``s, compared after every step."""

    def __init__(self, cfg: dict, num_games: int, seed: int, use_keys: bool) -> None:
        env = self.env = bj.make(**cfg)
        self.aecs = [block_env.raw_env(**cfg) for _ in range(num_games)]
        self.num_tiles = env.config.tiles.num_tiles
        seats = jnp.arange(env.num_players)

        def advance(state: bj.State, actions: jax.Array, keys: jax.Array, fresh: jax.Array):
            """One step of every game (with the deal keys or without), every seat's
            observation after it, and the games restarted where they ended."""
            if use_keys:
                after = jax.vmap(env.step)(state, actions, keys)
            else:
                after = jax.vmap(lambda s, a: env.step(s, a))(state, actions)
            finals = jax.vmap(lambda s: jax.vmap(lambda p: env.observe(s, p))(seats))(after)
            restarted = jax.tree.map(
                lambda new, old: jnp.where(
                    after.terminated.reshape((-1,) + (1,) * (old.ndim - 1)), new, old
                ),
                jax.vmap(env.init)(fresh),
                after,
            )
            return after, finals, restarted

        self.advance = jax.jit(advance)
        self.key = jax.random.PRNGKey(seed)
        self.rng = np.random.default_rng(seed)
        self.hands = self.episodes = self.steps = 0
        # the first states: every game of a finished batch restarted (one compiled program)
        keys = self._keys(num_games)
        shapes = jax.eval_shape(jax.vmap(env.init), keys)
        done = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)
        done = done.replace(terminated=jnp.ones(num_games, jnp.bool_))
        _, _, self.state = self.advance(done, jnp.zeros(num_games, jnp.int32), keys, keys)
        self.host = jax.device_get(self.state)
        for i, aec in enumerate(self.aecs):
            aec.reset(seed=i, options=bj.reset_options(self._game(i)))
        self.check()

    def _keys(self, count: int) -> jax.Array:
        self.key, sub = jax.random.split(self.key)
        return jax.random.split(sub, count)

    def _game(self, i: int) -> bj.State:
        """Game ``i`` of the host copy of the state."""
        return jax.tree.map(lambda x: x[i], self.host)

    def check(self) -> None:
        """Seat to act, observation and mask of every game against its AEC env."""
        s = self.host
        seats = [aec.possible_agents.index(aec.agent_selection) for aec in self.aecs]
        np.testing.assert_array_equal(s.current_player, seats)
        views = [aec.observe(aec.agent_selection) for aec in self.aecs]
        want_obs = np.stack([v["observation"] for v in views])
        np.testing.assert_array_equal(bits(s.observation), bits(want_obs))
        np.testing.assert_array_equal(
            s.legal_action_mask.astype(np.int8), np.stack([v["action_mask"] for v in views])
        )
        assert not s.terminated.any()
        self.mask = s.legal_action_mask

    def step(self) -> None:
        b = len(self.aecs)
        actions = np.array([self.rng.choice(np.flatnonzero(m)) for m in self.mask], np.int32)
        before = self.host._hand_number
        after, finals, self.state = self.advance(
            self.state, jnp.asarray(actions), self._keys(b), self._keys(b)
        )
        got, finals, self.host = jax.device_get((after, finals, self.state))
        want_rewards, ended = [], []
        for i, aec in enumerate(self.aecs):
            if got._hand_number[i] != before[i] and not got.terminated[i]:
                aec.np_random = Dealt(got._hands[i], self.num_tiles)  # the JAX deal, once
            actor = aec.agent_selection
            aec.step(int(actions[i]))
            want_rewards.append([aec.rewards[a] for a in aec.possible_agents])
            ended.append(all(aec.terminations.values()))
            self.hands += aec.infos[actor]["hand_over"]
        np.testing.assert_array_equal(bits(got.rewards), bits(np.array(want_rewards)))
        np.testing.assert_array_equal(got.terminated, ended)
        assert not got.truncated.any()
        for i in np.flatnonzero(ended):
            self._check_final(got, finals, int(i))
        self.steps += 1
        if self.steps % 4 == 0:  # every seat's view, not only the seat to act's
            for i in np.flatnonzero(~np.array(ended)):
                aec = self.aecs[i]
                want = np.stack([aec.observe(a)["observation"] for a in aec.possible_agents])
                np.testing.assert_array_equal(bits(finals[i]), bits(want))
        self.check()

    def _check_final(self, got: bj.State, finals: np.ndarray, i: int) -> None:
        """Game ``i`` ended: every seat's observation, the next seat (the AEC env's
        agent_selection) and an all-True mask (pgx's convention at a terminal state); then
        its AEC env restarts with the JAX game's new deal."""
        aec = self.aecs[i]
        want = np.stack([aec.observe(a)["observation"] for a in aec.possible_agents])
        np.testing.assert_array_equal(bits(finals[i]), bits(want))
        assert got.current_player[i] == aec.possible_agents.index(aec.agent_selection)
        assert got.legal_action_mask[i].all()
        aec.reset(seed=i, options=bj.reset_options(self._game(i)))
        self.episodes += 1


@pytest.mark.parametrize("cfg", CONFIGS, ids=config_id)
def test_matches_aec_env_step_by_step(cfg: dict) -> None:
    run = Lockstep(cfg, NUM_GAMES, seed=len(config_id(cfg)), use_keys=len(cfg) % 2 == 0)
    long_matches = cfg.get("episode") != "hand" and "target_score" not in cfg
    for _ in range(2 * NUM_STEPS if long_matches else NUM_STEPS):
        run.step()
    assert run.hands >= 2 * NUM_GAMES  # several hands in every game, on average
    assert run.episodes >= 1
