"""The compiled solver (``engine="numba"``) against the reference pure-Python search of
``agents.solver``: the same values, the same best actions and the same node counts on the
same positions, for every table and tile set; and PIMC plays the same moves on either."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import solver
from agents.pimc import PIMCAgent
from agents.solver import Position, counted_action_values, position_from_state, solve
from block_env import raw_env, rules
from block_env.config import BlockConfig

pytest.importorskip("numba")

CONFIGS = {
    "2p": BlockConfig(num_players=2),
    "3p": BlockConfig(num_players=3),
    "4p": BlockConfig(num_players=4),
    "partnership": BlockConfig(num_players=4, partnership=True),
    "2p-N3": BlockConfig(num_players=2, max_pip=3),
    "3p-N4": BlockConfig(num_players=3, max_pip=4),
    "partnership-N4": BlockConfig(num_players=4, partnership=True, max_pip=4),
    "2p-N5-h4": BlockConfig(num_players=2, max_pip=5, hand_size=4),
    "2p-highest-double": BlockConfig(num_players=2, opener="highest_double"),
}
# Random plies before solving: partnership from the opening takes the reference seconds.
PLIES = {"partnership": (6, 14), "4p": (0, 8)}


def position(config: BlockConfig, seed: int) -> Position:
    """A dealt hand after a few random legal moves (the hand still running)."""
    rng = np.random.default_rng(seed)
    low, high = PLIES.get(_name(config), (0, 6))
    while True:
        state = rules.new_match(config, rng)
        for _ in range(int(rng.integers(low, high + 1))):
            legal = rules.legal_actions(state)
            state = rules.apply_action(config, state, legal[rng.integers(len(legal))])
            if state.result is not None:
                break
        if state.result is None:
            return position_from_state(state)


def _name(config: BlockConfig) -> str:
    return next(name for name, c in CONFIGS.items() if c == config)


def assert_engines_agree(config: BlockConfig, pos: Position) -> None:
    assert counted_action_values(config, pos, "numba") == counted_action_values(
        config, pos, "python"
    )
    assert solve(config, pos, "numba") == solve(config, pos, "python")


@pytest.mark.parametrize("name", list(CONFIGS))
def test_values_actions_and_nodes_match_the_reference(name: str) -> None:
    config = CONFIGS[name]
    for seed in range(8):
        assert_engines_agree(config, position(config, seed))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["2p", "3p", "4p", "partnership-N4", "3p-N4"]), st.integers(0, 10**9))
def test_random_positions_match_the_reference(name: str, seed: int) -> None:
    config = CONFIGS[name]
    assert_engines_agree(config, position(config, seed))


def test_principal_variations_match_the_reference() -> None:
    config = CONFIGS["3p"]
    for seed in range(4):
        pos = position(config, seed)
        line = solver.principal_variation(config, pos, "numba")
        assert line == solver.principal_variation(config, pos, "python")


def test_a_full_table_is_grown_and_the_position_solved_again(monkeypatch) -> None:
    """A table that passes half full is doubled and the whole search rerun on it: the
    answer and the node count do not depend on where the table started."""
    config = CONFIGS["4p"]
    pos = position(config, 3)
    expected = counted_action_values(config, pos, "python")
    monkeypatch.setattr(solver._CompiledSearch, "capacity", 4)
    assert counted_action_values(config, pos, "numba") == expected
    assert solver._CompiledSearch.capacity > 4


@pytest.mark.parametrize("engine", ["c", "", None, "NUMBA"])
def test_an_unknown_engine_is_refused(engine: object) -> None:
    pos = position(CONFIGS["2p"], 0)
    with pytest.raises(ValueError, match="is not allowed: use one of auto, python, numba"):
        solve(CONFIGS["2p"], pos, engine)
    with pytest.raises(ValueError, match="is not allowed: use one of auto, python, numba"):
        PIMCAgent(engine=engine)


@pytest.mark.parametrize("kwargs", [{"num_players": 2}, {"num_players": 4, "partnership": True}])
def test_pimc_plays_the_same_hand_on_either_engine(kwargs: dict) -> None:
    def play(engine: str) -> list[int]:
        env = raw_env(episode="hand", **kwargs)
        env.reset(seed=5)
        agents = {
            name: PIMCAgent(worlds=4, seed=s, engine=engine)
            for s, name in enumerate(env.possible_agents)
        }
        actions = []
        for name in env.agent_iter():
            _obs, _r, term, trunc, _info = env.last()
            if term or trunc:
                env.step(None)
                continue
            action = agents[name].act(env.observe(name))
            actions.append(action)
            env.step(action)
        return actions

    assert play("numba") == play("python")
