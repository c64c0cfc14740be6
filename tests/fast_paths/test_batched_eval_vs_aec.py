"""The trainer's batched evaluation (``block_env.evaluation.batched``) against the AEC
evaluation (``block_env.evaluate``): the same deals, seatings and statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from agents.baselines import RuleAgent, greedy_actions
from agents.network import ActorCritic, NetConfig
from agents.policy import PolicyAgent
from block_env.evaluation import evaluate, prepare
from block_env.evaluation.batched import evaluate_batched, zero_sum_rewards
from block_env.training.config import TrainConfig, game_of
from block_env.training.results import evaluate_against, evaluate_agent

GAMES = [
    {"num_players": 2},
    {"num_players": 3},
    {"num_players": 4},
    {"num_players": 4, "partnership": True},
    {"num_players": 2, "opener": "highest_double"},
    {"num_players": 3, "max_pip": 4, "hand_size": 4},
    {"num_players": 2, "max_pip": 2, "hand_size": 2},
]


def single_hand(**kw):
    base = {"opener": "rotate", "episode": "hand", "partnership": False}
    return {**base, "target_score": None, "reward": "zero_sum", **kw}


class Greedy:
    """The greedy bot with ``act_batch`` (a deterministic agent other than the rule bot)."""

    name = "greedy-agent"

    def act(self, observation):
        return int(greedy_actions(observation["action_mask"][None])[0])

    def act_batch(self, obs, mask):
        return greedy_actions(mask)


@pytest.mark.parametrize("kw", GAMES, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
@pytest.mark.parametrize("opponent", ["greedy", "rules"])
def test_deterministic_agents_get_exactly_the_aec_figures(kw, opponent):
    agent = RuleAgent() if opponent == "greedy" else Greedy()
    name = "RuleAgent" if opponent == "greedy" else Greedy.name
    aec = evaluate([agent, opponent], hands=150, seed=3, **kw)
    batched = evaluate_batched(agent, single_hand(**kw), opponent, 150, 3, name=name)
    assert (batched.deals, batched.hands, batched.lineup) == (aec.deals, aec.hands, aec.lineup)
    for key, value in aec.per_deal.items():
        np.testing.assert_array_equal(batched.per_deal[key], value, err_msg=key)
    assert batched.stats == aec.stats
    assert batched.table().splitlines()[1:] == aec.table().splitlines()[1:]
    assert aec.stats[0].margin.mean != 0.0  # the two agents differ on these deals


def network_agent(max_pip=6, seed=0):
    torch.manual_seed(seed)
    model = ActorCritic(NetConfig((64, 64)), max_pip=max_pip)
    return PolicyAgent(model, "cpu", greedy=True, name="policy")


@pytest.mark.parametrize("kw", [{"num_players": 2}, {"num_players": 4, "partnership": True}])
def test_a_network_policy_plays_the_aec_games(kw):
    """A greedy network plays every deal as in the AEC evaluation, but for the rare
    decision where batched and single-row float arithmetic break a near tie differently."""
    agent = network_agent()
    aec = evaluate([agent, "rules"], hands=300, seed=11, **kw)
    batched = evaluate_batched(agent, single_hand(**kw), "rules", 300, 11)
    same = np.all(batched.per_deal["reward"] == aec.per_deal["reward"], axis=1)
    assert same.mean() >= 0.97, f"{(~same).sum()} of {len(same)} deals differ"
    a, b = aec.stats[0].margin, batched.stats[0].margin
    assert abs(a.mean - b.mean) < 0.25 * (a.hi - a.lo)


def test_against_random_agrees_statistically():
    """Random draws differ between the two paths; the margins agree within their CIs."""
    agent = network_agent(seed=1)
    aec = evaluate([agent, "random"], hands=1000, seed=5, num_players=2)
    batched = evaluate_batched(agent, single_hand(num_players=2), "random", 1000, 5)
    a, b = aec.stats[0].margin, batched.stats[0].margin
    se = math.hypot((a.hi - a.lo) / 3.92, (b.hi - b.lo) / 3.92)
    assert abs(a.mean - b.mean) < 3 * se, (a, b)
    wa, wb = aec.stats[0].hand_win, batched.stats[0].hand_win
    assert abs(wa.mean - wb.mean) < 0.1


def test_trainer_evaluation_matches_the_aec_one():
    """``evaluate_against`` (what the trainer calls) against ``evaluate_agent`` (the AEC
    path it replaced) on a small network, greedy and rules opponents."""
    cfg = TrainConfig(hidden=[32], privileged_critic=False)
    torch.manual_seed(2)
    model = ActorCritic(NetConfig((32,)))
    agent = PolicyAgent(model, "cpu", greedy=True, name="policy")
    new = evaluate_against(model, cfg, ["greedy", "rules"], 200, seed=10_000)
    old = evaluate_agent(agent, cfg, ["greedy", "rules"], 200, seed=10_000)
    for opp in ("greedy", "rules"):
        assert new[opp]["hands"] == old[opp]["hands"] == 200
        assert abs(new[opp]["margin"] - old[opp]["margin"]) < 0.25 * (
            old[opp]["hi"] - old[opp]["lo"]
        )
        assert set(new[opp]) == set(old[opp])
    assert game_of(cfg)["episode"] == "hand"


def test_zero_sum_rewards_are_the_aec_rewards():
    from block_env.config import BlockConfig

    three = BlockConfig(num_players=3, episode="hand")
    got = zero_sum_rewards(three, np.array([[0, 10, 0], [0, 0, 0]]), np.array([1, -1]))
    np.testing.assert_array_equal(got, [[-5.0, 10.0, -5.0], [0.0, 0.0, 0.0]])
    teams = BlockConfig(num_players=4, partnership=True, episode="hand")
    got = zero_sum_rewards(teams, np.array([[7, 0, 7, 0]]), np.array([2]))
    np.testing.assert_array_equal(got, [[7.0, -7.0, 7.0, -7.0]])


def test_bad_arguments_are_refused():
    agent = network_agent()
    with pytest.raises(ValueError, match="not 'pimc-20'"):
        evaluate_batched(agent, single_hand(num_players=2), "pimc-20", 10, 0)
    with pytest.raises(ValueError, match="single hands"):
        evaluate_batched(agent, {**single_hand(num_players=2), "episode": "match"}, "rules", 10, 0)
    with pytest.raises(ValueError, match="positive int"):
        evaluate_batched(agent, single_hand(num_players=2), "rules", 0, 0)


@pytest.mark.parametrize("kw", GAMES[:4], ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
def test_a_hand_episode_is_one_match_won_by_the_hand_winners(kw):
    """What the batched evaluation's per-deal totals take for granted: in single hands the
    AEC play counts one seat-match per seat-hand, won exactly by the seats that won it."""
    from block_env.evaluation.duplicate import play_deals
    from block_env.evaluation.results import DEAL_KEYS

    plan = prepare(["rules", "greedy"], hands=120, seed=5, **kw)
    totals = play_deals(plan, 0, plan.deals, None)
    assert sorted(totals) == sorted(DEAL_KEYS)
    np.testing.assert_array_equal(totals["seat_matches"], totals["seat_hands"])
    np.testing.assert_array_equal(totals["match_wins"], totals["seat_wins"])


@pytest.mark.parametrize(
    ("kw", "lineup"),
    [
        ({"num_players": 3}, [1, 0, 0]),
        ({"num_players": 4}, [1, 0, 0, 0]),
        ({"num_players": 4, "partnership": True}, [0, 1, 1, 1]),
        ({"num_players": 4, "partnership": True}, [0, 1, 0, 1]),
    ],
)
def test_other_lineups_get_exactly_the_aec_figures(kw, lineup):
    aec = evaluate([Greedy(), "rules"], hands=120, seed=5, lineup=lineup, **kw)
    batched = evaluate_batched(
        Greedy(), single_hand(**kw), "rules", 120, 5, Greedy.name, None, lineup
    )
    assert batched.lineup == aec.lineup == lineup
    for key, value in aec.per_deal.items():
        np.testing.assert_array_equal(batched.per_deal[key], value, err_msg=key)
    assert batched.stats == aec.stats and aec.stats[0].margin.mean != 0.0


def test_a_lineup_without_both_agents_is_refused():
    with pytest.raises(ValueError, match="both agents"):
        evaluate_batched(Greedy(), single_hand(num_players=3), "rules", 30, 0, lineup=[0, 0, 0])


@pytest.mark.parametrize(("first", "second"), [("greedy", "block-2p"), ("block-2p", "rules")])
def test_an_information_state_agent_on_either_side_gets_exactly_the_aec_figures(first, second):
    """block-2p reads the information state: as the agent, or as an opponent given by
    ``agent_actor(..., information_state=True)`` beside a plain-observation agent, the
    batched evaluation plays the AEC games."""
    import agents
    from block_env.evaluation.batched import actor_obs_type, agent_actor

    game = single_hand(num_players=2)
    aec = evaluate([first, second], hands=200, seed=9, num_players=2)
    me = agents.load("block-2p") if first == "block-2p" else Greedy()
    opponent = agent_actor(second, game, 0, information_state=True)
    assert actor_obs_type(opponent) == (
        "information_state" if second == "block-2p" else "observation"
    )
    batched = evaluate_batched(me, game, second, 200, 9, first, opponent)
    for key, value in aec.per_deal.items():
        np.testing.assert_array_equal(batched.per_deal[key], value, err_msg=key)
    assert batched.stats == aec.stats and aec.stats[0].margin.mean != 0.0


def test_an_information_state_actor_is_refused_unless_asked_for():
    from block_env.agent_specs import SetupError
    from block_env.evaluation.batched import agent_actor

    with pytest.raises(SetupError, match="plays on the information state"):
        agent_actor("block-2p", single_hand(num_players=2), 0)
