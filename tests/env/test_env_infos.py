"""The infos schema for vectorized clients: from ``reset`` on, every agent's infos hold the
same flat keys with the same types and shapes at every step, and they agree with the game."""

from __future__ import annotations

from typing import Any

import numpy as np
from helpers import random_legal

import block_env
from block_env.env import INFO_KEYS

SCALARS = {
    "hand_over": bool,
    "hand_winner": int,
    "hand_blocked": bool,
    "match_over": bool,
    "match_winner": int,
}
ARRAYS = {"hand_pips": np.int64, "hand_points": np.int64, "match_winners": np.bool_}


def check_schema(info: dict[str, Any], n: int) -> None:
    assert tuple(info) == INFO_KEYS  # exactly these keys, in this order
    for key, kind in SCALARS.items():
        assert type(info[key]) is kind, (key, info[key])
    for key, dtype in ARRAYS.items():
        value = info[key]
        assert type(value) is np.ndarray and value.dtype == dtype and value.shape == (n,), key


def test_every_step_has_the_same_flat_schema_and_consistent_values(config: dict) -> None:
    env = block_env.raw_env(**config)
    cfg = env.config
    n = cfg.num_players
    rng = np.random.default_rng(7)
    hands = matches = 0
    for seed in (0, 1):
        env.reset(seed=seed)
        for agent in env.possible_agents:
            check_schema(env.infos[agent], n)
            assert not env.infos[agent]["hand_over"] and env.infos[agent]["hand_winner"] == -1
        while not all(env.terminations.values()):
            scores = env.scores
            mover = env.agent_selection
            env.step(random_legal(env.observe(mover), rng))
            first = env.infos[env.possible_agents[0]]
            for agent in env.possible_agents:
                info = env.infos[agent]
                check_schema(info, n)
                for key in INFO_KEYS:  # every agent sees the same values
                    np.testing.assert_array_equal(info[key], first[key])
            over = all(env.terminations.values())
            assert first["match_over"] == over
            if not first["hand_over"]:
                assert first["hand_winner"] == -1 and not first["hand_blocked"]
                assert not first["hand_pips"].any() and not first["hand_points"].any()
                assert not over and first["match_winner"] == -1
                assert not first["match_winners"].any()
                continue
            hands += 1
            result = env.last_hand.result
            assert first["hand_winner"] == (-1 if result.winner is None else result.winner)
            assert first["hand_blocked"] == result.blocked
            assert first["hand_pips"].tolist() == list(result.pips)
            assert first["hand_points"].tolist() == list(result.points)
            assert (np.array(scores) + first["hand_points"]).tolist() == list(env.last_hand.scores)
            winners = np.flatnonzero(first["match_winners"]).tolist()
            if over:
                matches += 1
                assert winners == list(env.last_hand.winners)
                assert first["match_winner"] == (winners[0] if winners else -1)
            else:
                assert winners == [] and first["match_winner"] == -1
    assert hands >= 2 and matches == 2


def test_the_domino_that_ends_the_match_names_its_winner() -> None:
    env = block_env.raw_env(num_players=3, target_score=10)
    env.reset(seed=0, options={"hands": [[(3, 3)], [(1, 2)], [(2, 6)]], "leader": 0})
    env.step(2 * 18)  # [3|3] is tile 18: player_0 dominoes at once, scoring 3 + 8
    info = env.infos["player_2"]
    assert info["hand_over"] and info["match_over"]
    assert info["hand_winner"] == 0 and info["match_winner"] == 0
    assert info["match_winners"].tolist() == [True, False, False]


def test_tied_block_gives_minus_one_winners_not_none() -> None:
    """A tied block scores nothing; with ``episode="hand"`` it is a drawn episode."""
    env = block_env.raw_env(num_players=3, episode="hand")
    env.reset(
        seed=0, options={"hands": [[(3, 3), (0, 1), (0, 2)], [(1, 2)], [(2, 6)]], "leader": 0}
    )
    env.step(2 * 18)
    info = env.infos["player_1"]
    assert info["hand_over"] and info["hand_blocked"] and info["match_over"]
    assert info["hand_winner"] == -1 and info["match_winner"] == -1
    assert not info["match_winners"].any() and not info["hand_points"].any()
    assert info["hand_pips"].tolist() == [3, 3, 8]
