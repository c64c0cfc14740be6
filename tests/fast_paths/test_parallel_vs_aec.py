"""Differential test: ``parallel_env`` against ``raw_env``, in lockstep, bit for bit.

Each configuration plays whole games on both: a ``raw_env`` reset with the same seeds and
``parallel_env``, driven by the same random legal moves (the seat to act's move, the wait
for every other seat). At every step every seat's observation and mask, the seat to act,
rewards, terminations, truncations, infos and the privileged state must be the AEC env's.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import CONFIGS, SET_CONFIGS, config_id

import block_env
from block_env.parallel import parallel_env

DIFF_CONFIGS = [
    *CONFIGS,
    {"num_players": 4, "opener": "highest_double", "partnership": True, "reward": "win"},
    {"num_players": 3, "episode": "hand"},
    {"num_players": 2, "episode": "hand"},
    {"num_players": 4, "episode": "hand"},
    {"num_players": 2, "obs_type": "information_state"},
    {"num_players": 4, "partnership": True, "obs_type": "information_state", "episode": "hand"},
    *SET_CONFIGS,
]
HANDS = 500  # games of one hand per configuration
MATCHES = 10  # whole matches per configuration (a few to a dozen hands each)


def assert_same_infos(ours: dict, theirs: dict) -> None:
    assert ours.keys() == theirs.keys()
    for key, value in theirs.items():
        mine = ours[key]
        assert type(mine) is type(value), key
        if isinstance(value, np.ndarray):
            assert mine.dtype == value.dtype and mine.tobytes() == value.tobytes(), key
        else:
            assert mine == value, key


def assert_same_step(par, aec, observations: dict) -> None:
    """Every seat's observation and mask (``observations``, what the step returned), the
    seat to act and the state, as the AEC env has them."""
    over = aec.game.episode_over
    wait = par.wait
    for agent in aec.possible_agents:
        ours, theirs = observations[agent], aec.observe(agent)
        assert ours["observation"].tobytes() == theirs["observation"].tobytes()
        assert ours["action_mask"].dtype == np.int8
        assert ours["action_mask"][:wait].tobytes() == theirs["action_mask"].tobytes()
        to_act = agent == aec.agent_selection and not over
        assert ours["action_mask"][wait] == (0 if to_act else 1)
        if not to_act:
            assert ours["action_mask"].sum() == 1  # the wait alone
    assert par.current_agent == (None if over else aec.agent_selection)
    assert par.state().tobytes() == aec.state().tobytes()


def play(cfg: dict, games: int, seed: int) -> tuple[int, int]:
    """``games`` games (episodes) in lockstep; the steps and hands played."""
    par, aec = parallel_env(**cfg), block_env.raw_env(**cfg)
    rng = np.random.default_rng(seed)
    steps = hands = 0
    for game in range(games):
        game_seed = None if game % 3 == 2 else seed + game  # or the stream continued
        observations, infos = par.reset(seed=game_seed)
        aec.reset(seed=game_seed)
        assert par.agents == aec.agents
        for agent in aec.agents:
            assert_same_infos(infos[agent], aec.infos[agent])
        assert_same_step(par, aec, observations)
        while par.agents:
            agent = aec.agent_selection
            legal = np.flatnonzero(observations[agent]["action_mask"])
            move = int(legal[rng.integers(legal.size)])
            actions = dict.fromkeys(par.agents, par.wait)
            actions[agent] = move
            observations, rewards, terminations, truncations, infos = par.step(actions)
            aec.step(move)
            steps += 1
            assert rewards == aec.rewards
            assert terminations == aec.terminations
            assert truncations == aec.truncations
            for a in aec.possible_agents:
                assert_same_infos(infos[a], aec.infos[a])
            hands += bool(infos[agent]["hand_over"])
            assert_same_step(par, aec, observations)
            assert (not par.agents) == aec.game.episode_over
        assert all(aec.terminations.values())
    return steps, hands


@pytest.mark.parametrize("cfg", DIFF_CONFIGS, ids=config_id)
def test_parallel_env_matches_aec_env_step_by_step(cfg: dict) -> None:
    games = HANDS if cfg.get("episode") == "hand" else MATCHES
    steps, hands = play(cfg, games, seed=7000 + len(config_id(cfg)))
    assert steps >= hands >= games  # every game was played to its end
