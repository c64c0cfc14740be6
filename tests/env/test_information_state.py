"""The information-state observation: layout, AEC env, batched engine, leaks and spaces."""

from __future__ import annotations

import copy
import functools
import pickle

import numpy as np
import pytest
from batched_helpers import Lockstep
from helpers import CONFIGS, SET_CONFIGS, config_id, run_pettingzoo_test
from pettingzoo.test import api_test
from test_no_leaks_and_seeds import test_hidden_tiles_never_change_an_observation as leak_check

import block_env
from block_env.batched import BatchedEnv
from block_env.information_state import (
    decode_information_state,
    history_slots,
    information_state_dim,
)
from block_env.observation import obs_layout

INFO = {"obs_type": "information_state"}


def _random_match(cfg: dict, seed: int, steps: int = 400):
    """Yield (env, moves by seat this hand, leader) before each move of a random match
    played in both observation types side by side."""
    plain = block_env.raw_env(**cfg)
    info = block_env.raw_env(**cfg, **INFO)
    plain.reset(seed=seed)
    info.reset(seed=seed)
    rng = np.random.default_rng(seed)
    moves: list[list[object]] = [[] for _ in range(info.config.num_players)]
    for _ in range(steps):
        yield plain, info, moves
        agent = info.agent_selection
        if info.terminations[agent]:
            return
        mask = info.observe(agent)["action_mask"]
        action = int(rng.choice(np.flatnonzero(mask)))
        seat = info.possible_agents.index(agent)
        tiles = info.config.tiles
        if action == tiles.pass_action:
            moves[seat].append("pass")
        else:
            moves[seat].append((tiles.tiles[action // 2], "right" if action % 2 else "left"))
        hand = info.game.hand_number
        plain.step(action)
        info.step(action)
        if info.game.hand_number != hand:
            moves = [[] for _ in moves]


@pytest.mark.parametrize("cfg", CONFIGS + SET_CONFIGS, ids=config_id)
def test_history_reads_back_every_move_and_observation_is_unchanged(cfg: dict) -> None:
    config = block_env.BlockConfig(**cfg)
    dim = information_state_dim(config)
    t = config.tiles.num_tiles
    n, k = config.num_players, config.hand_size
    assert dim == obs_layout(config).dim + 4 * (n * (k - 1) + 1) * (t + 3)
    longest = 0
    for seed in range(3):
        for plain, info, moves in _random_match(cfg, seed):
            for seat, agent in enumerate(info.possible_agents):
                vec = info.observe(agent)["observation"]
                base = plain.observe(agent)["observation"]
                assert vec.shape == (dim,) and vec.dtype == np.float32
                assert vec[: base.shape[0]].tobytes() == base.tobytes()
                assert info.observation_space(agent)["observation"].contains(vec)
                got = decode_information_state(vec, config)["history"]
                want = [moves[(seat + r) % n] for r in range(n)]
                assert got == want
                longest = max(longest, *map(len, want))
    assert longest <= history_slots(config)
    assert longest >= 1


def test_default_is_the_plain_observation_and_bad_obs_type_is_refused() -> None:
    default = block_env.raw_env()
    plain = block_env.raw_env(obs_type="observation")
    default.reset(seed=3)
    plain.reset(seed=3)
    a = default.observe("player_0")["observation"]
    assert a.shape == (122,) and a.tobytes() == plain.observe("player_0")["observation"].tobytes()
    assert information_state_dim(default.config) == 122 + 4 * 13 * 31
    for bad in ("info", None, 1):
        with pytest.raises(ValueError, match="obs_type"):
            block_env.raw_env(obs_type=bad)
        with pytest.raises(ValueError, match="obs_type"):
            block_env.env(obs_type=bad)
        with pytest.raises(ValueError, match="obs_type"):
            BatchedEnv(2, obs_type=bad)
    with pytest.raises(ValueError, match="information state of shape"):
        decode_information_state(np.zeros(122, np.float32), default.config)


def test_history_resets_at_each_new_hand() -> None:
    env = block_env.raw_env(**INFO)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    seen_new_hand = False
    while not env.game.episode_over:
        hand = env.game.hand_number
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
        if env.game.hand_number != hand and not env.game.episode_over:
            seen_new_hand = True
            for agent in env.possible_agents:
                vec = env.observe(agent)["observation"]
                assert not vec[obs_layout(env.config).dim :].any()
    assert seen_new_hand


@pytest.mark.parametrize("cfg", CONFIGS[:4] + SET_CONFIGS[::3], ids=config_id)
def test_swapping_hidden_tiles_never_changes_the_information_state(cfg: dict) -> None:
    leak_check({**cfg, **INFO})


@pytest.mark.parametrize("cfg", [{"num_players": 2}, {"num_players": 4, "partnership": True}])
def test_spaces_identical_for_every_agent_and_api_test_passes(cfg: dict) -> None:
    env = block_env.env(**cfg, **INFO)
    space = env.observation_space(env.possible_agents[0])
    assert all(env.observation_space(a) == space for a in env.possible_agents)
    assert space["observation"].shape == (information_state_dim(env.unwrapped.config),)
    run_pettingzoo_test(lambda: api_test(block_env.env(**cfg, **INFO), num_cycles=200))


DIFF = [
    {"num_players": 2},
    {"num_players": 3, "opener": "highest_double", "reward": "points"},
    {"num_players": 4, "partnership": True, "opener": "highest_double", "target_score": 20},
    {"num_players": 4, "episode": "hand"},
    {"num_players": 2, "max_pip": 3, "hand_size": 4, "target_score": 20},
    {"num_players": 3, "max_pip": 5, "hand_size": 6, "target_score": 30},
    {"num_players": 2, "max_pip": 6, "hand_size": 12, "episode": "hand"},
]


def _info_lockstep(monkeypatch, cfg: dict, backend: str, seed: int, **kwargs) -> Lockstep:
    """The batched differential harness with both sides giving information states."""
    monkeypatch.setattr(block_env, "raw_env", functools.partial(block_env.raw_env, **INFO))
    run = Lockstep(cfg, backend, 16, seed=seed, obs_type="information_state", **kwargs)
    assert run.batched.obs_dim == information_state_dim(run.batched.config)
    return run


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("cfg", DIFF, ids=config_id)
def test_batched_information_state_matches_aec_env(monkeypatch, cfg: dict, backend: str) -> None:
    run = _info_lockstep(monkeypatch, cfg, backend, seed=11)
    for _ in range(160):
        run.step()  # obs and final_obs compared bit for bit at every step
    assert run.hands >= 16 and run.episodes >= 1
    space = run.batched.single_observation_space
    assert space.shape == (information_state_dim(run.batched.config),)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("cfg", [{"num_players": 3}, {"num_players": 4}], ids=config_id)
def test_batched_information_state_records_forced_passes(monkeypatch, cfg, backend) -> None:
    run = _info_lockstep(monkeypatch, cfg, backend, seed=5, auto_pass=True)
    for _ in range(100):
        run.step()
    assert run.hands >= 16


def test_copies_and_pickles_keep_the_history() -> None:
    env = block_env.raw_env(num_players=3, **INFO)
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    for _ in range(5):
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
    fresh = pickle.loads(pickle.dumps(block_env.raw_env(num_players=3, **INFO)))
    assert fresh.obs_type == "information_state"
    for twin in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
        for agent in env.possible_agents:
            want = env.observe(agent)["observation"]
            assert twin.observe(agent)["observation"].tobytes() == want.tobytes()
        assert len(decode_information_state(want, env.config)["history"][0]) >= 1
        twin.step(int(np.flatnonzero(twin.observe(twin.agent_selection)["action_mask"])[0]))
        assert env._moves != twin._moves  # the copy's history is its own
