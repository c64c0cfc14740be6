"""Differential tests: ``block_env.jax.rule_bot`` against ``agents.baselines``.

Positions come from random hands of the AEC env (the reference), half of the seats played by
the rule bot so that its own lines of play appear, over every player count, partnership,
the smaller tile sets and other hand sizes, and the information-state observation (read
through its plain prefix). At every position the JAX rule bot must pick
``rule_actions``' move and the JAX greedy bot ``greedy_actions``' move.
"""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest

if os.environ.get("BLOCK_ENV_REQUIRE_JAX"):  # the extra CI script: missing JAX is a failure
    import jax
else:
    jax = pytest.importorskip("jax")

from helpers import rule_bot_positions  # noqa: E402

import block_env  # noqa: E402
from agents.baselines import DEFAULT_WEIGHTS, greedy_actions, rule_actions  # noqa: E402
from block_env.jax import make  # noqa: E402
from block_env.jax.rule_bot import RULE_WEIGHTS, greedy_bot, rule_bot  # noqa: E402

ROWS = 4096  # positions per configuration (one compiled shape)

# raw_env keywords: every player count, partnership, the smaller sets, other hand sizes
CONFIGS = [
    {"num_players": 2},
    {"num_players": 3},
    {"num_players": 4},
    {"num_players": 4, "partnership": True},
    {"num_players": 2, "max_pip": 2},
    {"num_players": 3, "max_pip": 3},
    {"num_players": 4, "max_pip": 4},
    {"num_players": 2, "max_pip": 5},
    {"num_players": 4, "partnership": True, "max_pip": 3, "hand_size": 2},
    {"num_players": 2, "hand_size": 14},  # every tile dealt
    {"num_players": 2, "hand_size": 1},
    {"num_players": 4, "hand_size": 7},  # every tile dealt, 4 players
    {"num_players": 3, "max_pip": 2, "hand_size": 2},
    {"num_players": 2, "obs_type": "information_state"},
    {"num_players": 4, "partnership": True, "obs_type": "information_state"},
]


def positions(config: dict, rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(observations, masks) of the first ``rows`` decisions of random hands."""
    env = block_env.raw_env(episode="hand", **config)
    seeds = (seed * 100_000 + game for game in itertools.count())
    return rule_bot_positions(env, seeds, np.random.default_rng(seed), rows)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(f"{v}" for v in c.values()))
def test_jax_bots_pick_the_reference_moves(config: dict) -> None:
    obs, mask = positions(config, ROWS, seed=len(config) + config["num_players"])
    env = make(episode="hand", **config)
    plain = obs[:, : env.spec.obs_dim]
    expected = rule_actions(plain, mask)
    got = np.asarray(jax.jit(rule_bot(env))(obs, mask))
    bad = np.flatnonzero(got != expected)
    assert bad.size == 0, (
        f"{bad.size} of {len(obs)} positions differ, first at row {bad[0]}: "
        f"JAX {got[bad[0]]}, rule_actions {expected[bad[0]]}"
    )
    greedy = np.asarray(jax.jit(greedy_bot(env.config))(obs, mask))
    np.testing.assert_array_equal(greedy, greedy_actions(mask))
    if config.get("hand_size") == 1:
        return  # one tile in hand: every move is forced
    # the positions reach the choices the bots tell apart, not only forced moves
    choices = mask.sum(1) > 1
    assert choices.mean() > 0.2
    assert len(np.unique(expected[choices])) > 3
    assert (expected[choices] != greedy[choices]).any()


def test_one_position_and_vmap_agree_with_the_batch() -> None:
    obs, mask = positions({"num_players": 3}, 64, seed=5)
    bot = rule_bot(make(num_players=3))
    batch = np.asarray(jax.jit(bot)(obs, mask))
    single = jax.jit(bot)
    one = [int(single(o, m)) for o, m in zip(obs[:8], mask[:8])]
    assert one == batch[:8].tolist()
    mapped = np.asarray(jax.jit(jax.vmap(bot))(obs, mask))
    np.testing.assert_array_equal(mapped, batch)


def test_weights_are_the_reference_bot_s() -> None:
    assert RULE_WEIGHTS == DEFAULT_WEIGHTS


def test_bad_shapes_and_games_are_refused() -> None:
    bot = rule_bot(make(num_players=2))
    with pytest.raises(ValueError, match="width 57"):
        bot(np.zeros(122, np.float32), np.ones(29, bool))
    with pytest.raises(ValueError, match="D >= 122"):
        bot(np.zeros(60, np.float32), np.ones(57, bool))
    with pytest.raises(ValueError, match="BlockConfig"):
        rule_bot({"num_players": 2})
