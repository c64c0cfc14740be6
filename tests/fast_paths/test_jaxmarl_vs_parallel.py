"""Differential test: the JaxMARL view (``block_env.jax.multiagent``) against
``parallel_env``, in lockstep, bit for bit; then its interface (JaxMARL's auto-reset, jit and
vmap, bad actions, spaces, the world state, the stand-in base where JaxMARL is absent).

B JAX games run under ``jax.jit(jax.vmap(...))`` beside B ``parallel_env``s, driven by the
same random legal actions (the seat to act's move, the wait for every other seat). At every
step every seat's observation, available actions, reward, done and ``hand_over``, and the
world state, must be the parallel env's; where an episode ends, the final ones (``step_env``)
and then the new episode's (``step``'s auto-reset, against a ``parallel_env`` reset to the
same deal with ``block_env.jax.reset_options``). A later deal of a match reaches the
parallel env's AEC env as in test_jax_vs_aec.py (``Dealt``, its generator for one draw).
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

import block_env.jax as bj  # noqa: E402
from block_env.jax import multiagent  # noqa: E402
from block_env.jax.multiagent import MultiAgentEnvBase, multiagent_env  # noqa: E402
from block_env.parallel import parallel_env  # noqa: E402

CONFIGS = [
    {"num_players": 2, "episode": "hand"},
    {"num_players": 2, "target_score": 40},
    {"num_players": 3, "episode": "hand", "reward": "points"},
    {"num_players": 3, "opener": "highest_double", "reward": "win", "target_score": 30},
    {"num_players": 4, "episode": "hand"},
    {"num_players": 4, "partnership": True, "episode": "hand"},
    {
        "num_players": 4,
        "partnership": True,
        "opener": "highest_double",
        "reward": "win",
        "target_score": 40,
    },
    {"num_players": 2, "max_pip": 2, "target_score": 10},
    {"num_players": 3, "max_pip": 3, "obs_type": "information_state", "target_score": 15},
    {"num_players": 4, "max_pip": 4, "partnership": True, "hand_size": 3, "target_score": 20},
    {"num_players": 2, "obs_type": "information_state", "episode": "hand"},
]
NUM_GAMES = 32
NUM_STEPS = 300


def config_id(cfg: dict) -> str:
    return "-".join(f"{k}={v}" for k, v in cfg.items())


def by_seat(tree: dict, agents: list[str]) -> np.ndarray:
    """A dict of per-agent (B, ...) arrays as one (B, n, ...) array."""
    return np.stack([np.asarray(tree[a]) for a in agents], axis=1)


def views(env: multiagent.BlockMultiAgentEnv, obs: dict, state: bj.State) -> tuple:
    """Every seat's observation and available actions, and the world state (one game)."""
    rows = jnp.stack([obs[a] for a in env.agents])
    avail = env.get_avail_actions(state)
    return rows, jnp.stack([avail[a] for a in env.agents]), env.world_state(state)


class Lockstep:
    """B JaxMARL-view games and B ``parallel_env``s, compared after every step."""

    def __init__(self, cfg: dict, num_games: int, seed: int) -> None:
        env = self.env = multiagent_env(**cfg)
        self.pars = [parallel_env(**cfg) for _ in range(num_games)]
        self.num_tiles = env.game.config.tiles.num_tiles

        def advance(keys: jax.Array, state: bj.State, actions: dict) -> tuple:
            """step_env and reset with the halves of each key (as JaxMARL's step splits
            it), their views, and the games continued (reset where the episode ended)."""
            halves = jax.vmap(jax.random.split)(keys)
            moved = jax.vmap(env.step_env)(halves[:, 0], state, actions)
            fresh = jax.vmap(env.reset)(halves[:, 1])
            final = jax.vmap(lambda o, s: views(env, o, s))(moved[0], moved[1])
            start = jax.vmap(lambda o, s: views(env, o, s))(fresh[0], fresh[1])
            done = moved[3]["__all__"]
            pick = lambda new, old: jnp.where(  # noqa: E731
                done.reshape((-1,) + (1,) * (old.ndim - 1)), new, old
            )
            return moved, final, start, jax.tree.map(pick, fresh[1], moved[1])

        self.advance = jax.jit(advance)
        self.key = jax.random.PRNGKey(seed)
        self.rng = np.random.default_rng(seed)
        self.hands = self.episodes = 0
        # the first games: a batch of finished games restarted (the same compiled program)
        keys = self._keys(num_games)
        shapes = jax.eval_shape(jax.vmap(env.game.init), keys)
        over = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)
        over = over.replace(terminated=jnp.ones(num_games, jnp.bool_))
        waits = dict.fromkeys(env.agents, jnp.full(num_games, env.wait, jnp.int32))
        out = self.advance(keys, over, waits)
        _, _, start, self.host = jax.device_get(out)
        self.state = out[3]
        for i, par in enumerate(self.pars):
            got, _ = par.reset(seed=i, options=bj.reset_options(self._game(self.host, i)))
            self._same_view(par, got, start, i)

    def _keys(self, count: int) -> jax.Array:
        self.key, sub = jax.random.split(self.key)
        return jax.random.split(sub, count)

    @staticmethod
    def _game(tree: bj.State, i: int) -> bj.State:
        return jax.tree.map(lambda x: x[i], tree)

    def _same_view(self, par, observations: dict, view: tuple, i: int) -> None:
        """Game ``i``'s observations, available actions and world state (``view``, host
        arrays of the batch) against ``parallel_env``'s (``observations`` it returned)."""
        obs, avail, world = view
        agents = par.possible_agents
        want_obs = np.stack([observations[a]["observation"] for a in agents])
        want_mask = np.stack([observations[a]["action_mask"] for a in agents])
        np.testing.assert_array_equal(bits(obs[i]), bits(want_obs))
        assert avail[i].dtype == np.bool_
        np.testing.assert_array_equal(avail[i].astype(np.int8), want_mask)
        np.testing.assert_array_equal(bits(world[i]), bits(par.state()))

    def step(self) -> None:
        env, pars = self.env, self.pars
        chosen = np.full((len(pars), env.num_agents), env.wait, np.int32)
        for i, par in enumerate(pars):
            seat = par.possible_agents.index(par.current_agent)
            legal = np.flatnonzero(par.observe(par.current_agent)["action_mask"])
            chosen[i, seat] = legal[self.rng.integers(legal.size)]
        actions = {a: jnp.asarray(chosen[:, s]) for s, a in enumerate(env.agents)}
        out = self.advance(self._keys(len(pars)), self.state, actions)
        (_, moved, rewards, dones, infos), final, start, host = jax.device_get(out)
        before = self.host._hand_number
        for i, par in enumerate(pars):
            if moved._hand_number[i] != before[i] and not moved.terminated[i]:
                par.aec.np_random = Dealt(moved._hands[i], self.num_tiles)  # the JAX deal
            acts = {a: int(chosen[i, s]) for s, a in enumerate(par.agents)}
            got, want_r, terms, truncs, want_infos = par.step(acts)
            agents = par.possible_agents
            got_r = np.array([rewards[a][i] for a in agents])
            np.testing.assert_array_equal(bits(got_r), bits([want_r[a] for a in agents]))
            want_done = [terms[a] or truncs[a] for a in agents]
            assert [bool(dones[a][i]) for a in agents] == want_done
            assert bool(dones["__all__"][i]) == all(want_done) == (not par.agents)
            hand_over = [want_infos[a]["hand_over"] for a in agents]
            assert infos["hand_over"][i].tolist() == hand_over
            self.hands += hand_over[0]
            self._same_view(par, got, final, i)
            if dones["__all__"][i]:  # the new episode, dealt alike in the parallel env
                got, _ = par.reset(seed=i, options=bj.reset_options(self._game(host, i)))
                self._same_view(par, got, start, i)
                self.episodes += 1
        self.state, self.host = out[3], host


@pytest.mark.parametrize("cfg", CONFIGS, ids=config_id)
def test_matches_parallel_env_step_by_step(cfg: dict) -> None:
    run = Lockstep(cfg, NUM_GAMES, seed=len(config_id(cfg)))
    for _ in range(NUM_STEPS):
        run.step()
    assert run.hands >= 2 * NUM_GAMES  # several hands in every game, on average
    assert run.episodes >= NUM_GAMES // 2


# ---- the interface ----------------------------------------------------------------------


def random_actions(env: multiagent.BlockMultiAgentEnv, state: bj.State, key: jax.Array) -> dict:
    """One uniformly random available action per agent (the wait for all but one)."""
    avail = env.get_avail_actions(state)
    keys = jax.random.split(key, env.num_agents)
    return {
        a: jax.random.categorical(k, jnp.where(avail[a], 0.0, -jnp.inf)).astype(jnp.int32)
        for a, k in zip(env.agents, keys)
    }


def same_trees(a, b) -> None:
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(leaves_a, leaves_b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_is_a_jaxmarl_env_where_jaxmarl_is_installed() -> None:
    env = multiagent_env()
    if os.environ.get("BLOCK_ENV_REQUIRE_JAX"):  # .ci/extra-jax installs JaxMARL
        assert multiagent.HAS_JAXMARL
    if multiagent.HAS_JAXMARL:
        from jaxmarl.environments import spaces
        from jaxmarl.environments.multi_agent_env import MultiAgentEnv

        assert isinstance(env, MultiAgentEnv)
        assert isinstance(env.action_space("player_0"), spaces.Discrete)
        assert isinstance(env.observation_space("player_0"), spaces.Box)
    else:
        assert isinstance(env, MultiAgentEnvBase)


@pytest.mark.parametrize(
    "cfg",
    [
        {},
        {"num_players": 3, "max_pip": 4},
        {"num_players": 4, "partnership": True, "obs_type": "information_state"},
    ],
    ids=str,
)
def test_spaces_and_sizes_are_parallel_envs(cfg: dict) -> None:
    env, par = multiagent_env(**cfg), parallel_env(**cfg)
    assert env.agents == par.possible_agents and env.num_agents == len(par.possible_agents)
    assert env.wait == par.wait and env.num_actions == par.wait + 1
    assert env.world_state_size == par.state_space.shape[0]
    for agent in env.agents:
        assert env.action_space(agent).n == par.action_space(agent).n
        box, want = env.observation_space(agent), par.observation_space(agent)["observation"]
        assert tuple(box.shape) == want.shape
        np.testing.assert_array_equal(box.low, want.low)
        np.testing.assert_array_equal(box.high, want.high)
    key = jax.random.PRNGKey(0)
    action = jax.jit(env.action_space("player_0").sample)(key)
    assert 0 <= int(action) < env.num_actions
    obs, state = env.reset(key)
    assert bool(env.observation_space("player_0").contains(obs["player_0"]))
    if cfg.get("partnership"):
        assert env.agent_classes == {
            "team_0": ["player_0", "player_2"],
            "team_1": ["player_1", "player_3"],
        }
    else:
        assert env.agent_classes == {a: [a] for a in env.agents}
    assert multiagent_env().num_actions == 58  # the standard set: wait = 57


def test_step_resets_where_the_episode_ended_as_jaxmarl_does() -> None:
    """step = step_env with one half of the key, reset with the other where done (or the
    reset_state given); the stand-in base's step is the same function as JaxMARL's."""
    env = multiagent_env(num_players=2, episode="hand")
    batch = 64
    _, state = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(1), batch))
    _, given = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(2), batch))

    def parts(keys, state, actions):
        halves = jax.vmap(jax.random.split)(keys)
        return jax.vmap(env.step_env)(halves[:, 0], state, actions), jax.vmap(env.reset)(
            halves[:, 1]
        )

    step = jax.jit(jax.vmap(env.step))
    stand_in = jax.jit(jax.vmap(lambda k, s, a: MultiAgentEnvBase.step(env, k, s, a)))
    choose = jax.jit(jax.vmap(lambda s, k: random_actions(env, s, k)))
    key, ended = jax.random.PRNGKey(3), 0
    for _ in range(30):
        key, k_act, k_step = jax.random.split(key, 3)
        actions = choose(state, jax.random.split(k_act, batch))
        keys = jax.random.split(k_step, batch)
        got = step(keys, state, actions)
        moved, fresh = parts(keys, state, actions)
        done = np.asarray(moved[3]["__all__"])
        ended += int(done.sum())

        def pick(new, old, done=done):
            return np.where(done.reshape((-1,) + (1,) * (np.ndim(old) - 1)), new, old)

        same_trees(got[0], jax.tree.map(pick, fresh[0], moved[0]))
        same_trees(got[1], jax.tree.map(pick, fresh[1], moved[1]))
        same_trees(got[2:], moved[2:])
        same_trees(stand_in(keys, state, actions), got)
        reset_to = step(keys, state, actions, given)[1]
        same_trees(reset_to, jax.tree.map(pick, given, moved[1]))
        state = got[1]
    assert ended >= batch


def test_jit_and_vmap_play_as_one_game_at_a_time() -> None:
    """A compiled lax.scan of vmapped steps gives, game by game, what plain calls give."""
    env = multiagent_env(num_players=4, partnership=True, target_score=20)
    batch, steps = 8, 40

    def play(key):
        k_reset, k_play = jax.random.split(key)
        _, state = jax.vmap(env.reset)(jax.random.split(k_reset, batch))

        def one(state, key):
            k_act, k_step = jax.random.split(key)
            actions = jax.vmap(lambda s, k: random_actions(env, s, k))(
                state, jax.random.split(k_act, batch)
            )
            out = jax.vmap(env.step)(jax.random.split(k_step, batch), state, actions)
            return out[1], (actions, out[0], out[2], out[3]["__all__"])

        return jax.lax.scan(one, state, jax.random.split(k_play, steps))

    key = jax.random.PRNGKey(7)
    final, (actions, obs, rewards, dones) = jax.jit(play)(key)
    same_trees(jax.jit(play)(key), (final, (actions, obs, rewards, dones)))  # deterministic
    assert np.asarray(dones).any()
    k_reset, k_play = jax.random.split(key)
    for g in (0, 5):
        _, state = env.reset(jax.random.split(k_reset, batch)[g])
        for t, k in enumerate(jax.random.split(k_play, steps)):
            k_step = jax.random.split(jax.random.split(k)[1], batch)[g]
            acts = {a: actions[a][t, g] for a in env.agents}
            o, state, r, d, _ = env.step(k_step, state, acts)
            for a in env.agents:
                np.testing.assert_array_equal(bits(o[a]), bits(obs[a][t, g]))
                assert bits(r[a]) == bits(rewards[a][t, g])
            assert bool(d["__all__"]) == bool(dones[t, g])
        same_trees(state, jax.tree.map(lambda x, g=g: x[g], final))


def offences(n: int, legal: np.ndarray, actor: int, wait: int) -> list[tuple]:
    """(name, actions by seat, the seat that pays) for each kind of bad action."""
    others = [s for s in range(n) if s != actor]
    illegal = np.flatnonzero(~legal)
    base = np.full(n, wait, np.int32)
    base[actor] = np.flatnonzero(legal)[0]
    cases = []

    def case(name, changes, loser):
        acts = base.copy()
        for seat, a in changes.items():
            acts[seat] = a
        cases.append((name, acts, loser))

    case("seat to act waits", {actor: wait}, actor)
    case("seat to act plays an illegal move", {actor: illegal[0]}, actor)
    case("seat to act out of range", {actor: wait + 1}, actor)
    case("seat to act negative", {actor: -3}, actor)
    case("another seat plays", {others[0]: base[actor]}, others[0])
    case("another seat out of range", {others[-1]: 999}, others[-1])
    case("the seat to act first", {actor: wait, others[-1]: 0}, actor)
    if n > 2:
        case("the lowest other seat", {others[-1]: 0, others[0]: 1}, min(others[0], others[-1]))
    return cases


@pytest.mark.parametrize("n", [2, 3, 4])
def test_bad_actions_end_the_episode_with_pgx_penalty(n: int) -> None:
    """Where parallel_env raises ValueError, the JAX view ends the episode: the offender
    gets -1, every other seat n - 1, the position is unchanged and every seat may only
    wait; step() then starts a new episode."""
    env = multiagent_env(num_players=n)
    _, state = env.reset(jax.random.PRNGKey(n))
    actor = int(state.current_player)
    legal = np.asarray(state.legal_action_mask)
    step_env, step = jax.jit(env.step_env), jax.jit(env.step)
    for name, acts, loser in offences(n, legal, actor, env.wait):
        actions = {a: jnp.int32(acts[s]) for s, a in enumerate(env.agents)}
        par = parallel_env(num_players=n)
        par.reset(seed=0, options=bj.reset_options(state))
        with pytest.raises(ValueError):
            par.step({a: int(acts[s]) for s, a in enumerate(env.agents)})
        key = jax.random.PRNGKey(99)
        obs, after, rewards, dones, infos = step_env(key, state, actions)
        want = [-1.0 if s == loser else float(n - 1) for s in range(n)]
        assert [float(rewards[a]) for a in env.agents] == want, name
        assert all(bool(d) for d in dones.values()), name
        assert not np.asarray(infos["hand_over"]).any(), name
        for field in ("_hands", "_played", "_left", "_right", "_scores", "current_player"):
            np.testing.assert_array_equal(getattr(after, field), getattr(state, field))
        avail = env.get_avail_actions(after)
        assert all(int(avail[a].sum()) == 1 and bool(avail[a][env.wait]) for a in env.agents)
        _, restarted, *_ = step(key, state, actions)
        same_trees(restarted, env.reset(jax.random.split(key)[1])[1])


def test_a_finished_episode_steps_to_itself_with_zero_rewards() -> None:
    env = multiagent_env(num_players=3)
    _, state = env.reset(jax.random.PRNGKey(4))
    actions = dict.fromkeys(env.agents, jnp.int32(env.wait))
    _, over, *_ = env.step_env(jax.random.PRNGKey(5), state, actions)  # the actor waited
    garbage = {a: jnp.int32(5 + i) for i, a in enumerate(env.agents)}
    _, again, rewards, dones, infos = env.step_env(jax.random.PRNGKey(6), over, garbage)
    assert all(float(r) == 0.0 for r in rewards.values())
    assert all(bool(d) for d in dones.values())
    assert not np.asarray(infos["hand_over"]).any()
    np.testing.assert_array_equal(again._hands, over._hands)


@pytest.mark.parametrize(
    ("actions", "match"),
    [
        ({"player_0": 57}, "one action per agent"),
        ({"player_0": 57, "player_1": 57, "player_2": 57}, "one action per agent"),
        ([57, 57], "one action per agent"),
        ({"player_0": 57, "player_1": 1.0}, "must be one integer"),
        ({"player_0": 57, "player_1": True}, "must be one integer"),
        ({"player_0": 57, "player_1": jnp.array([1, 2])}, "must be one integer"),
    ],
    ids=["missing", "unknown", "not a dict", "float", "bool", "vector"],
)
def test_a_malformed_action_dict_is_a_value_error_when_traced(actions, match: str) -> None:
    env = multiagent_env()
    _, state = env.reset(jax.random.PRNGKey(0))
    key = jax.random.PRNGKey(1)
    with pytest.raises(ValueError, match=match):
        env.step_env(key, state, actions)
    with pytest.raises(ValueError, match=match):
        jax.jit(env.step)(key, state, actions)


def test_world_state_in_obs_is_every_agents_copy_of_world_state() -> None:
    plain = multiagent_env(num_players=4, partnership=True)
    env = multiagent_env(world_state_in_obs=True, num_players=4, partnership=True)
    obs, state = env.reset(jax.random.PRNGKey(8))
    want, _ = plain.reset(jax.random.PRNGKey(8))
    assert set(obs) == set(want) | {"world_state"}
    assert obs["world_state"].shape == (4, env.world_state_size)
    for row in np.asarray(obs["world_state"]):
        np.testing.assert_array_equal(row, plain.world_state(state))
    actions = dict.fromkeys(env.agents, env.wait)
    actions[env.agents[int(state.current_player)]] = int(np.flatnonzero(state.legal_action_mask)[0])
    obs, state, *_ = env.step(jax.random.PRNGKey(9), state, actions)
    np.testing.assert_array_equal(obs["world_state"][2], plain.world_state(state))


def test_without_jaxmarl_the_env_is_the_same() -> None:
    """Where JaxMARL is absent the env stands on the stand-in base: the same play, in a
    process that cannot import JaxMARL."""
    import subprocess
    import sys

    script = (
        "import sys; sys.modules['jaxmarl'] = None\n"
        "import jax, numpy as np\n"
        "from block_env.jax import multiagent as m\n"
        "assert not m.HAS_JAXMARL\n"
        "env = m.multiagent_env(num_players=3)\n"
        "obs, s = env.reset(jax.random.PRNGKey(5))\n"
        "av = env.get_avail_actions(s)\n"
        "acts = {a: av[a].argmax() for a in env.agents}\n"
        "obs, s, r, d, i = env.step(jax.random.PRNGKey(6), s, acts)\n"
        "print(type(env).__mro__[1].__name__)\n"
        "print(sum(float(o.sum()) for o in obs.values()), int(np.asarray(s._hands).sum()))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[0] == "MultiAgentEnvBase"
    env = multiagent_env(num_players=3)
    obs, s = env.reset(jax.random.PRNGKey(5))
    av = env.get_avail_actions(s)
    obs, s, *_ = env.step(jax.random.PRNGKey(6), s, {a: av[a].argmax() for a in env.agents})
    assert (
        out[1] == f"{sum(float(o.sum()) for o in obs.values())} {int(np.asarray(s._hands).sum())}"
    )
