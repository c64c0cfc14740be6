"""``agents.baselines.rule_actions`` (the rule bot on a batch) against ``RuleAgent.act``,
position by position, over random games of every configuration."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import rule_bot_positions

import block_env
from agents.baselines import RuleAgent, rule_actions
from block_env.tiles import tile_set

# (num_players, partnership, max_pip, hand_size or None for the rules' default)
CONFIGS = [(n, False, pip, None) for n in (2, 3, 4) for pip in (2, 3, 4, 5, 6)] + [
    (4, True, 6, None),
    (4, True, 4, None),
    (4, True, 3, 2),
    (2, False, 6, 14),  # every tile dealt
    (2, False, 6, 1),
    (3, False, 6, 3),
    (4, False, 5, 5),
    (3, False, 2, 2),
    (2, False, 3, 5),
    (4, False, 6, 7),  # every tile dealt, 4 players
]


def positions(num_players, partnership, max_pip, hand_size, games, seed):
    """(obs, mask) of every decision in ``games`` random hands, half of the seats played by
    the rule bot (so its own lines of play appear), the rest uniformly at random."""
    kw = {"hand_size": hand_size} if hand_size is not None else {}
    env = block_env.raw_env(
        num_players=num_players, partnership=partnership, max_pip=max_pip, episode="hand", **kw
    )
    seeds = (seed * 1000 + g for g in range(games))
    return rule_bot_positions(env, seeds, np.random.default_rng(seed))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "n{}{}-pip{}-k{}".format(*c))
def test_rule_actions_equals_rule_agent_row_by_row(config):
    obs, mask = positions(*config, games=60, seed=sum(config[:1]) + config[2])
    bot = RuleAgent()
    expected = np.array([bot.act({"observation": o, "action_mask": m}) for o, m in zip(obs, mask)])
    got = rule_actions(obs, mask)
    bad = np.flatnonzero(got != expected)
    assert bad.size == 0, (
        f"{bad.size} of {len(obs)} positions differ, first at row {bad[0]}: "
        f"rule_actions {got[bad[0]]}, RuleAgent {expected[bad[0]]}"
    )
    # The positions reach the cases the bot's score tells apart.
    assert len(np.unique(expected)) > 3


def test_rule_actions_with_other_weights_follow_the_agent():
    obs, mask = positions(3, False, 6, None, games=40, seed=7)
    for weights in ({"pass": 0.0, "block": 25.0}, {"pips": -1.0, "double": 0.0}):
        bot = RuleAgent(weights)
        expected = [bot.act({"observation": o, "action_mask": m}) for o, m in zip(obs, mask)]
        assert rule_actions(obs, mask, weights).tolist() == expected
        assert bot.act_batch(obs, mask).tolist() == expected


@pytest.mark.parametrize(
    "config", [(2, False, 6, 14), (4, False, 6, 7), (4, True, 6, None), (3, False, 4, 5)]
)
def test_rule_actions_block_margins_follow_the_agent(config):
    """Deals of (nearly) every tile, where moves that block the hand are common; a heavy
    block weight makes the expected block margin decide, for each seat count."""
    obs, mask = positions(*config, games=40, seed=11)
    bot = RuleAgent({"block": 40.0})
    expected = np.array([bot.act({"observation": o, "action_mask": m}) for o, m in zip(obs, mask)])
    assert rule_actions(obs, mask, {"block": 40.0}).tolist() == expected.tolist()
    # The block term does decide some of these positions.
    assert (expected != rule_actions(obs, mask)).any()


def test_rule_actions_takes_float32_int8_batches_and_an_empty_one():
    obs, mask = positions(2, False, 6, None, games=5, seed=3)
    assert obs.dtype == np.float32 and mask.dtype == np.int8
    out = rule_actions(obs, mask)
    assert out.dtype == np.int64 and out.shape == (len(obs),)
    assert rule_actions(obs[:0], mask[:0]).shape == (0,)


def test_rule_actions_refuses_bad_input():
    obs, mask = positions(2, False, 6, None, games=1, seed=1)
    with pytest.raises(ValueError, match="no legal action in rows \\[1\\]"):
        bad = mask.copy()
        bad[1] = 0
        rule_actions(obs, bad)
    with pytest.raises(ValueError, match="does not fit"):
        rule_actions(obs, np.ones((len(obs), tile_set(5).num_actions), dtype=np.int8))
    with pytest.raises(ValueError, match="same M"):
        rule_actions(obs, mask[:-1])
    with pytest.raises(ValueError, match="unknown RuleAgent weights"):
        rule_actions(obs, mask, {"speed": 1.0})


def test_the_trainers_rules_opponent_is_the_rule_agent():
    from block_env.training.rollout import Opponents

    obs, mask = positions(3, False, 6, None, games=10, seed=5)
    opponents = Opponents(["rules"], np.random.default_rng(0))
    expected = [RuleAgent().act({"observation": o, "action_mask": m}) for o, m in zip(obs, mask)]
    assert opponents.act("rules", obs, mask, None).tolist() == expected
