"""Arrays handed out by the AEC env are the caller's: writing into an observation, a mask, the
state or the infos never changes the game, later observations or what is legal."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest
from helpers import CONFIGS, config_id, random_legal

import block_env
from block_env.env import INFO_KEYS
from block_env.tiles import STANDARD_NUM_ACTIONS


def _illegal(mask: np.ndarray) -> int:
    """An action that is not legal now but names a tile (not a pass)."""
    return int(next(a for a in range(STANDARD_NUM_ACTIONS - 1) if not mask[a]))


@pytest.mark.parametrize("via_last", [False, True])
def test_writing_a_mask_cannot_make_an_illegal_move_legal_raw(via_last: bool) -> None:
    env = block_env.raw_env()
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(3):  # into the hand, where an opponent's tile could be "played"
        env.step(random_legal(env.observe(env.agent_selection), rng))
    obs = env.last()[0] if via_last else env.observe(env.agent_selection)
    k = _illegal(obs["action_mask"])
    obs["action_mask"][k] = 1
    obs["action_mask"][:] = 1
    before, selection = env.game, env.agent_selection
    with pytest.raises(ValueError, match="not legal"):
        env.step(k)
    assert env.game is before and env.agent_selection == selection
    assert env.observe(selection)["action_mask"][k] == 0


def test_writing_a_mask_cannot_make_an_illegal_move_legal_wrapped() -> None:
    env = block_env.env()
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(3):
        env.step(random_legal(env.observe(env.agent_selection), rng))
    obs, *_ = env.last()
    k = _illegal(obs["action_mask"])
    obs["action_mask"][k] = 1
    mover, line = env.agent_selection, env.unwrapped.game.line
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.step(k)  # the classic convention: an illegal move ends the game, -1 for the mover
    assert all(env.terminations.values())
    assert env.rewards[mover] == -1
    assert env.unwrapped.game.line == line  # the tile was never placed


def test_writing_observations_never_changes_later_observations(config: dict) -> None:
    env = block_env.raw_env(**config)
    twin = block_env.raw_env(**config)
    env.reset(seed=8)
    twin.reset(seed=8)
    rng = np.random.default_rng(1)
    while env.agents:
        for agent in env.possible_agents:  # scribble over everything handed out
            obs = env.observe(agent)
            obs["observation"][:] = -7.0
            obs["action_mask"][:] = 1
            obs["observation"] = None
            last = env.last()[0]
            last["action_mask"][:] = 1
        env.state()[:] = 3.0
        for agent in env.possible_agents:
            got, want = env.observe(agent), twin.observe(agent)
            np.testing.assert_array_equal(got["observation"], want["observation"])
            np.testing.assert_array_equal(got["action_mask"], want["action_mask"])
        np.testing.assert_array_equal(env.state(), twin.state())
        _, _, term, trunc, _ = twin.last()
        action = None if term or trunc else random_legal(twin.observe(twin.agent_selection), rng)
        env.step(action)
        twin.step(action)


def test_each_observe_call_returns_new_arrays() -> None:
    env = block_env.raw_env(num_players=3)
    env.reset(seed=2)
    a, b = env.observe("player_1"), env.observe("player_1")
    assert a is not b
    assert not np.shares_memory(a["observation"], b["observation"])
    assert not np.shares_memory(a["action_mask"], b["action_mask"])
    assert a["observation"].flags.writeable and a["action_mask"].flags.writeable
    s1, s2 = env.state(), env.state()
    assert not np.shares_memory(s1, s2)


def _env_at(when: str) -> block_env.raw_env:
    """A 3-player env just reset, after a step that ended no hand, or after a hand's end."""
    env = block_env.raw_env(num_players=3)
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    if when != "reset":
        env.step(random_legal(env.observe(env.agent_selection), rng))
    while when == "hand end" and not env.infos["player_0"]["hand_over"]:
        env.step(random_legal(env.observe(env.agent_selection), rng))
    return env


@pytest.mark.parametrize("when", ["reset", "hand end"])
def test_info_arrays_at_reset_and_hand_end_belong_to_each_agent(when: str) -> None:
    env = _env_at(when)
    want = copy.deepcopy(env.infos["player_1"])
    for key in ("hand_pips", "hand_points", "match_winners"):
        env.infos["player_0"][key][:] = 1  # writable, and nobody else's
        env.infos["player_2"][key] = None
    for key in INFO_KEYS:
        np.testing.assert_array_equal(env.infos["player_1"][key], want[key])


def test_running_info_arrays_are_shared_read_only_zeros() -> None:
    env = _env_at("running")
    info = env.infos["player_0"]
    assert not info["hand_over"]
    for key in ("hand_pips", "hand_points", "match_winners"):
        with pytest.raises(ValueError, match="read-only"):
            info[key][0] = 1
        with pytest.raises(ValueError):
            info[key].flags.writeable = True  # cannot be turned back on
        assert not info[key].any()
    env.infos["player_0"]["hand_points"] = None  # the dicts are separate per agent
    assert not env.infos["player_1"]["hand_points"].any()


def test_hand_ends_and_resets_give_new_info_dicts() -> None:
    """A step that ends no hand changes nothing in the infos, which are then kept; every
    hand end and reset gives every agent new dicts with the whole schema."""
    env = block_env.raw_env(num_players=2)
    env.reset(seed=6)
    rng = np.random.default_rng(6)
    ends = 0
    while not all(env.terminations.values()):
        for info in env.infos.values():
            info["hand_over"] = "scribbled"
            info.pop("hand_points", None)
        env.step(random_legal(env.observe(env.agent_selection), rng))
        if env.infos["player_0"]["hand_over"] is True:
            ends += 1
            for info in env.infos.values():
                assert tuple(info) == INFO_KEYS and info["hand_points"].flags.writeable
    env.reset()
    assert all(tuple(info) == INFO_KEYS for info in env.infos.values())
    assert ends >= 2


def test_clones_keep_the_shared_zero_arrays_read_only() -> None:
    env = _env_at("running")
    for clone in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
        for agent in clone.possible_agents:
            assert not clone.infos[agent]["hand_points"].flags.writeable
        assert not np.shares_memory(clone.infos["player_0"]["hand_pips"], env._running["hand_pips"])


@pytest.mark.parametrize("cfg", CONFIGS[:4], ids=config_id)
def test_state_writes_do_not_reach_the_game(cfg: dict) -> None:
    env = block_env.raw_env(**cfg)
    env.reset(seed=9)
    game = env.game
    state = env.state()
    state[:] = 1.0
    assert env.game is game
    assert not np.array_equal(env.state(), state)
