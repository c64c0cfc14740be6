"""``parallel_env``: PettingZoo's parallel API and seed tests, the wait action, the spaces,
the state, copies, and bad input refused with nothing changed."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from helpers import config_id
from pettingzoo.test import parallel_api_test

import block_env
from block_env.parallel import BlockParallelEnv, parallel_env, wait_action

API_CONFIGS = [
    {"num_players": 2},
    {"num_players": 3, "episode": "hand"},
    {"num_players": 4, "partnership": True},
    {"num_players": 4, "opener": "highest_double", "reward": "win"},
    {"num_players": 3, "max_pip": 3, "obs_type": "information_state"},
]


@pytest.mark.parametrize("cfg", API_CONFIGS, ids=config_id)
def test_pettingzoo_parallel_api_test_passes(cfg: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the harness reports problems as warnings
        parallel_api_test(parallel_env(**cfg), num_cycles=1000)


@pytest.mark.parametrize("cfg", API_CONFIGS, ids=config_id)
def test_same_seed_same_game(cfg: dict) -> None:
    """PettingZoo's ``parallel_seed_test`` with masked samples (it samples unmasked actions,
    which this env refuses): equal data, dtypes included, at every step."""
    envs = [parallel_env(**cfg), parallel_env(**cfg)]
    outs = [env.reset(seed=42) for env in envs]
    assert data_equivalence(outs[0], outs[1])
    for env in envs:
        for agent in env.possible_agents:
            env.action_space(agent).seed(7)
    while envs[0].agents:
        actions = [
            {a: env.action_space(a).sample(mask=out[0][a]["action_mask"]) for a in env.agents}
            for env, out in zip(envs, outs)
        ]
        assert data_equivalence(actions[0], actions[1])
        outs = [env.step(act) for env, act in zip(envs, actions)]
        assert data_equivalence(outs[0], outs[1])
    assert not envs[1].agents


def test_exported_from_the_package() -> None:
    assert block_env.parallel_env is parallel_env
    assert isinstance(block_env.parallel_env(), BlockParallelEnv)


@pytest.mark.parametrize(
    ("cfg", "actions"),
    [({}, 58), ({"max_pip": 3}, 22), ({"max_pip": 2, "num_players": 3}, 14)],
)
def test_wait_is_the_last_of_2t_plus_2_actions(cfg: dict, actions: int) -> None:
    env = parallel_env(**cfg)
    aec = block_env.raw_env(**cfg)
    assert env.wait == actions - 1 == wait_action(aec.action_space("player_0").n)
    for agent in env.possible_agents:
        assert env.action_space(agent) is env.action_space("player_0")
        assert env.action_space(agent).n == actions
        space = env.observation_space(agent)
        assert space["action_mask"].shape == (actions,)
        assert space["action_mask"].dtype == np.int8
        assert space["observation"] == aec.observation_space(agent)["observation"]


def test_reset_deals_what_raw_env_deals_and_takes_its_options() -> None:
    env, aec = parallel_env(num_players=3), block_env.raw_env(num_players=3)
    options = {"leader": 2, "scores": [10, 20, 30]}
    observations, infos = env.reset(seed=99, options=options)
    aec.reset(seed=99, options=options)
    assert env.aec.game == aec.game
    assert env.current_agent == "player_2"
    for agent in env.agents:
        assert observations[agent]["observation"].tobytes() == (
            aec.observe(agent)["observation"].tobytes()
        )
        assert infos[agent].keys() == aec.infos[agent].keys()


def test_only_the_seat_to_act_has_moves_the_others_only_wait() -> None:
    env = parallel_env(num_players=4)
    observations, _ = env.reset(seed=3)
    for _ in range(10):
        current = env.current_agent
        for agent, obs in observations.items():
            mask = obs["action_mask"]
            if agent == current:
                assert mask[env.wait] == 0 and mask[: env.wait].sum() >= 1
            else:
                assert np.flatnonzero(mask).tolist() == [env.wait]
        move = int(np.flatnonzero(observations[current]["action_mask"])[0])
        observations, *_ = env.step({**dict.fromkeys(env.agents, env.wait), current: move})


def play_to_end(env: BlockParallelEnv, observations: dict) -> tuple[dict, dict, dict]:
    """Lowest legal moves to the episode's end: the last step's rewards, terminations and
    observations."""
    while True:
        current = env.current_agent
        move = int(np.flatnonzero(observations[current]["action_mask"])[0])
        actions = {**dict.fromkeys(env.agents, env.wait), current: move}
        observations, rewards, terminations, _, _ = env.step(actions)
        if not env.agents:
            return rewards, terminations, observations


def test_the_final_step_pays_every_seat_and_ends_every_seat() -> None:
    env = parallel_env(num_players=4, partnership=True, episode="hand")
    observations, _ = env.reset(seed=11)
    rewards, terminations, observations = play_to_end(env, observations)
    assert all(terminations.values()) and set(terminations) == set(env.possible_agents)
    assert sum(rewards.values()) == 0 and any(rewards.values())  # zero-sum points, paid
    assert rewards["player_0"] == rewards["player_2"]  # partners share the hand's points
    assert env.current_agent is None
    for obs in observations.values():  # nobody is to act: every seat may only wait
        assert np.flatnonzero(obs["action_mask"]).tolist() == [env.wait]
    with pytest.raises(ValueError, match="episode is over"):
        env.step({})


def test_state_is_the_aec_envs_privileged_state() -> None:
    env = parallel_env(num_players=2)
    env.reset(seed=5)
    assert env.state_space is env.aec.state_space
    np.testing.assert_array_equal(env.state(), env.aec.state())
    assert env.state_space.contains(env.state())


def snapshot(env: BlockParallelEnv) -> tuple:
    obs = {a: env.observe(a) for a in env.possible_agents}
    flat = [(o["observation"].tobytes(), o["action_mask"].tobytes()) for o in obs.values()]
    return env.aec.game, list(env.agents), flat, dict(env.aec.rewards), env.aec.agent_selection


def bad_inputs(env: BlockParallelEnv) -> list[tuple[object, str]]:
    current = env.current_agent
    other = next(a for a in env.agents if a != current)
    legal = int(np.flatnonzero(env.observe(current)["action_mask"])[0])
    illegal = next(a for a in range(env.wait) if env.observe(current)["action_mask"][a] == 0)
    good = {**dict.fromkeys(env.agents, env.wait), current: legal}
    return [
        ({**good, current: env.wait}, "may not wait"),
        ({**good, other: legal}, "only legal action is the wait"),
        ({k: v for k, v in good.items() if k != other}, "missing"),
        ({**good, "player_9": env.wait}, "not live"),
        ({**good, current: env.wait + 1}, "out of range"),
        ({**good, current: -1}, "out of range"),
        ({**good, current: illegal}, "may not play"),
        ({**good, other: env.wait + 1}, "only legal action is the wait"),
        ({**good, current: float(legal)}, "expected an int"),
        ({**good, current: True}, "expected an int"),
        ({**good, other: None}, "expected an int"),
        (list(good.values()), "must be a dict"),
    ]


def test_bad_input_raises_value_error_and_changes_nothing() -> None:
    env = parallel_env(num_players=3)
    env.reset(seed=21)
    for actions, message in bad_inputs(env):
        before = snapshot(env)
        with pytest.raises(ValueError, match=message):
            env.step(actions)
        assert snapshot(env) == before
    current = env.current_agent
    move = int(np.flatnonzero(env.observe(current)["action_mask"])[0])
    env.step({**dict.fromkeys(env.agents, env.wait), current: move})  # still playable
    assert env.current_agent != current


def test_numpy_actions_are_accepted() -> None:
    env = parallel_env()
    observations, _ = env.reset(seed=1)
    current = env.current_agent
    move = np.flatnonzero(observations[current]["action_mask"])[0]
    actions = {a: np.int64(env.wait) for a in env.agents}
    actions[current] = np.array(move)  # a 0-d array, as TorchRL's per-agent slice
    env.step(actions)
    assert env.aec.game.line


def test_step_before_reset_raises() -> None:
    with pytest.raises(RuntimeError, match="reset"):
        parallel_env().step({"player_0": 0, "player_1": 57})


@pytest.mark.parametrize("clone", [copy.deepcopy, lambda e: pickle.loads(pickle.dumps(e))])
def test_copies_keep_the_position(clone) -> None:
    env = parallel_env(num_players=4)
    observations, _ = env.reset(seed=8)
    for _ in range(5):
        current = env.current_agent
        move = int(np.flatnonzero(observations[current]["action_mask"])[-1])
        observations, *_ = env.step({**dict.fromkeys(env.agents, env.wait), current: move})
    twin = clone(env)
    assert snapshot(twin) == snapshot(env)
    assert play_to_end(twin, twin._observations())[0] == play_to_end(env, observations)[0]


def test_render_is_the_aec_envs() -> None:
    env = parallel_env(render_mode="ansi")
    env.reset(seed=2)
    assert env.render() == env.aec.render()
    assert isinstance(env.render(), str)
