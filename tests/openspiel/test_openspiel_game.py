"""The OpenSpiel game ``python_block_env``: OpenSpiel's own checks, serialization, the exact
deal probabilities, and a differential test against the AEC env on the same deals and moves."""

from __future__ import annotations

import math

import numpy as np
import pytest

pyspiel = pytest.importorskip(
    "pyspiel", reason="open_spiel is not installed (pip install -e '.[openspiel]')"
)

import block_env  # noqa: E402
from block_env.openspiel import game as os_game  # noqa: E402

SETS = [
    {"max_pip": 2, "hand_size": 2},
    {"max_pip": 2, "hand_size": 2, "num_players": 3},
    {"max_pip": 3, "hand_size": 3, "opener": "highest_double"},
    {"max_pip": 4, "hand_size": 3, "num_players": 4, "partnership": True},
    {"max_pip": 6},
    {"max_pip": 6, "num_players": 3, "opener": "highest_double"},
    {"max_pip": 6, "num_players": 4, "partnership": True},
]


def _load(params: dict) -> pyspiel.Game:
    return pyspiel.load_game(os_game.GAME_NAME, params)


@pytest.mark.parametrize("params", SETS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_openspiel_random_sim_test_with_serialization(params: dict) -> None:
    game = _load(params)
    pyspiel.random_sim_test(game, num_sims=3, serialize=True, verbose=False)


def test_sizes_follow_the_set() -> None:
    game = _load({"max_pip": 3, "hand_size": 2})
    assert game.num_distinct_actions() == 2 * 10 + 1
    assert game.num_players() == 2
    assert game.max_game_length() == 4 + 3 * 1
    state = game.new_initial_state()
    assert len(state.information_state_tensor(0)) == 2 + 2 + 10 + 7 * 21
    assert state.tiles.tiles == game.config.tiles.tiles  # the set's canonical order
    standard = _load({})
    assert standard.num_distinct_actions() == 57
    assert standard.observation_tensor_size() == block_env.STANDARD_OBS_DIM


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="max_pip"):
        _load({"max_pip": 7})
    with pytest.raises(ValueError, match="hand_size"):
        _load({"max_pip": 2, "hand_size": 4})
    with pytest.raises(ValueError, match="partnership"):
        _load({"partnership": True})


@pytest.mark.parametrize("params", [SETS[0], SETS[1], {"max_pip": 3, "hand_size": 2}])
def test_every_deal_has_its_exact_probability(params: dict) -> None:
    """Summing the chance probabilities over the whole deal tree gives each full deal
    (lot included) probability 1 / (n * multinomial), and the deals cover every split."""
    game = _load(params)
    n = game.num_players()
    t = game.num_distinct_actions() // 2
    k = game.config.hand_size  # the Python game object carries the block-env config
    deals: dict[tuple, float] = {}
    stack = [(game.new_initial_state(), 1.0)]
    while stack:
        state, p = stack.pop()
        if not state.is_chance_node():
            key = (state.leader, tuple(tuple(h) for h in state.dealt))
            deals[key] = deals.get(key, 0.0) + p
            continue
        outcomes = state.chance_outcomes()
        assert math.isclose(sum(q for _, q in outcomes), 1.0)
        stack.extend((state.child(a), p * q) for a, q in outcomes)
    ways = n
    left = t
    for _ in range(n):
        ways *= math.comb(left, k)
        left -= k
    assert len(deals) == ways
    assert all(math.isclose(p, 1.0 / ways) for p in deals.values())


def _aec_for(game: pyspiel.Game, state) -> block_env.env:
    c = game.config
    env = block_env.raw_env(
        num_players=c.num_players,
        opener=c.opener,
        partnership=c.partnership,
        episode="hand",
        reward="zero_sum",
        max_pip=c.max_pip,
        hand_size=c.hand_size,
    )
    tiles = state.tiles.tiles
    options = {"hands": [[tiles[t] for t in hand] for hand in state.dealt]}
    if c.opener == "rotate":
        options["leader"] = state.leader
    env.reset(seed=0, options=options)
    return env


@pytest.mark.parametrize("params", SETS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_differential_against_the_aec_env(params: dict) -> None:
    """Same deal, same moves: identical seat to act, legal actions, every seat's observation
    (OpenSpiel's observation tensor and the dict the bots read) and returns at every step."""
    game = _load(params)
    rng = np.random.default_rng(7)
    n = game.num_players()
    for _ in range(4):
        state = game.new_initial_state()
        while state.is_chance_node():
            outcomes = state.chance_outcomes()
            probs = np.array([p for _, p in outcomes])
            state.apply_action(outcomes[rng.choice(len(outcomes), p=probs / probs.sum())][0])
        env = _aec_for(game, state)
        total = np.zeros(n)
        while True:
            for p in range(n):
                aec = env.observe(f"player_{p}")
                np.testing.assert_array_equal(state.observation_tensor(p), aec["observation"])
                mine = state.env_observation(p)
                np.testing.assert_array_equal(mine["observation"], aec["observation"])
                np.testing.assert_array_equal(mine["action_mask"], aec["action_mask"])
            if state.is_terminal():
                break
            seat = state.current_player()
            assert env.agent_selection == f"player_{seat}"
            legal = state.legal_actions()
            assert legal == np.flatnonzero(env.observe(env.agent_selection)["action_mask"]).tolist()
            action = int(rng.choice(legal))
            state.apply_action(action)
            env.step(action)
            total += [env.rewards[f"player_{p}"] for p in range(n)]
        assert all(env.terminations.values())
        np.testing.assert_allclose(state.returns(), total)
        assert math.isclose(sum(state.returns()), 0.0, abs_tol=1e-9)


def test_information_state_is_perfect_recall_and_private() -> None:
    """Two histories differing only in the opponent's hand share seat 0's information state;
    differing in seat 0's own hand they do not."""
    game = _load({"max_pip": 2, "hand_size": 2})
    root = game.new_initial_state().child(0)  # seat 0 leads
    # seat 0 gets [0|0] [0|1]; seat 1 gets [0|2] [1|1] or [1|2] [2|2]
    base = root.child(0).child(1)
    a = base.child(2).child(3)
    b = base.child(4)  # [2|2] is then forced: dealt without a chance node
    assert b.dealt == [[0, 1], [4, 5]]
    assert a.current_player() == b.current_player() == 0
    assert a.information_state_string(0) == b.information_state_string(0)
    np.testing.assert_array_equal(a.information_state_tensor(0), b.information_state_tensor(0))
    assert a.information_state_string(1) != b.information_state_string(1)
    a.apply_action(a.legal_actions()[0])
    assert "0-0L" in a.information_state_string(1)
    assert a.information_state_tensor(1)[2 + 2 + 6 + 0] == 1  # first move: action 0
