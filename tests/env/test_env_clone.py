"""Cloning a position: ``copy.deepcopy`` and ``pickle`` of a mid-game env give an independent
env at the same position (observations, masks, rewards, infos, scores, random generator),
whose future under the same actions is the original's, and which leaves the original alone."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import numpy as np
import pytest
from helpers import CONFIGS, config_id, random_legal

import block_env


def snapshot(env: Any) -> dict[str, Any]:
    """Everything an agent or a trainer can read from the env, as plain values."""
    raw = env.unwrapped
    return {
        "agent_selection": env.agent_selection,
        "agents": list(env.agents),
        "observations": {a: env.observe(a) for a in raw.possible_agents},
        "rewards": dict(env.rewards),
        "cumulative": dict(raw._cumulative_rewards),
        "terminations": dict(env.terminations),
        "truncations": dict(env.truncations),
        "infos": copy.deepcopy(dict(env.infos)),
        "scores": raw.scores,
        "rng": raw.np_random.bit_generator.state,
    }


def assert_same(a: Any, b: Any, where: str = "") -> None:
    """Deep equality with numpy arrays compared by dtype, shape and value, types exact."""
    assert type(a) is type(b), (where, type(a), type(b))
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            assert_same(a[k], b[k], f"{where}/{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    else:
        assert a == b, (where, a, b)


def play_step(env: Any, rng: np.random.Generator) -> Any:
    """One AEC step (a dead step when the agent is done); returns the action taken."""
    obs, _, term, trunc, _ = env.last()
    action = None if term or trunc else random_legal(obs, rng)
    env.step(action)
    return action


def advance(env: Any, rng: np.random.Generator, steps: int) -> None:
    for _ in range(steps):
        if not env.agents:
            return
        play_step(env, rng)


def play_twins(env: Any, twin: Any, rng: np.random.Generator) -> int:
    """Step both envs with the same actions to the end of the episode, comparing all."""
    steps = 0
    while env.agents:
        obs, *_ = env.last()
        tobs, *_ = twin.last()
        assert_same(obs, tobs)
        _, _, term, trunc, _ = env.last()
        action = None if term or trunc else random_legal(obs, rng)
        env.step(action)
        twin.step(action)
        assert_same(snapshot(env), snapshot(twin))
        steps += 1
    assert not twin.agents
    return steps


CLONERS = {
    "deepcopy": copy.deepcopy,
    "pickle": lambda env: pickle.loads(pickle.dumps(env)),
}


@pytest.mark.parametrize("how", CLONERS)
@pytest.mark.parametrize("cfg", CONFIGS, ids=config_id)
def test_clone_mid_game_is_the_same_position_and_future(cfg: dict, how: str) -> None:
    rng = np.random.default_rng(hash((config_id(cfg), how)) % 2**32)
    for trial in range(3):
        seed = int(rng.integers(2**31))
        env = block_env.raw_env(**cfg)
        env.reset(seed=seed)
        actions = []
        while env.agents:  # a whole episode, to clone it at a random step of it
            actions.append(play_step(env, rng))
        env.reset(seed=seed)
        for action in actions[: int(rng.integers(len(actions)))]:
            env.step(action)
        clone = CLONERS[how](env)
        assert clone is not env and clone.game == env.game
        before = snapshot(env)
        assert_same(snapshot(clone), before)
        # the clone moves on alone: the original is untouched
        side = copy.deepcopy(clone)
        advance(side, np.random.default_rng(trial), 30)
        assert_same(snapshot(env), before)
        # same actions from here to the end of the match: same observations, rewards, infos
        play_twins(env, clone, rng)
        # the generators stayed in step: the next match is dealt alike
        env.reset()
        clone.reset()
        assert_same(snapshot(env), snapshot(clone))


@pytest.mark.parametrize("how", CLONERS)
def test_stepping_the_clone_never_changes_the_original(how: str) -> None:
    env = block_env.raw_env(num_players=4)
    env.reset(seed=11)
    rng = np.random.default_rng(0)
    advance(env, rng, 9)
    before = snapshot(env)
    clone = CLONERS[how](env)
    while clone.agents:  # to the end of the match, dealing new hands from its generator
        play_step(clone, rng)
    assert_same(snapshot(env), before)
    assert env.game.hand_number == 0 and clone.game.hand_number > 0


@pytest.mark.parametrize("how", CLONERS)
def test_wrapped_env_clones_with_its_wrappers(how: str) -> None:
    env = block_env.env(num_players=3)
    env.reset(seed=5)
    rng = np.random.default_rng(2)
    advance(env, rng, 14)
    clone = CLONERS[how](env)
    assert type(clone) is type(env) and clone.unwrapped is not env.unwrapped
    assert_same(snapshot(clone), snapshot(env))
    play_twins(env, clone, rng)


def test_clone_at_the_end_of_an_episode_and_before_reset() -> None:
    env = block_env.raw_env(episode="hand")
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    while not all(env.terminations.values()):
        play_step(env, rng)
    clone = copy.deepcopy(env)
    assert_same(snapshot(clone), snapshot(env))
    play_twins(env, clone, rng)  # the dead steps
    fresh = pickle.loads(pickle.dumps(block_env.raw_env(num_players=3)))
    with pytest.raises(RuntimeError, match="reset"):
        fresh.observe("player_0")
    fresh.reset(seed=1)
    assert fresh.config.num_players == 3


def test_a_constructor_only_pickle_still_loads() -> None:
    """Pickles written by EzPickle's default (constructor arguments only) rebuild the env."""
    env = block_env.raw_env(num_players=4, partnership=True)
    state = {"_ezpickle_args": env._ezpickle_args, "_ezpickle_kwargs": env._ezpickle_kwargs}
    rebuilt = block_env.raw_env.__new__(block_env.raw_env)
    rebuilt.__setstate__(state)
    rebuilt.reset(seed=0)
    assert rebuilt.config.partnership and rebuilt.config.hand_size == 7
