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
from block_env.batched import BatchedEnv
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
    assert (aec.to_dict()["engine"], batched.to_dict()["engine"]) == ("aec", "batched")


def network_agent(max_pip=6, seed=0):
    torch.manual_seed(seed)
    model = ActorCritic(NetConfig((64, 64)), max_pip=max_pip)
    return PolicyAgent(model, "cpu", greedy=True, name="policy")


class RowByRow:
    """A network policy whose batch moves are its single moves: each row of a batch goes
    through the network alone, as ``act`` sends it."""

    def __init__(self, agent: PolicyAgent) -> None:
        self.agent, self.obs_type, self.name = agent, agent.obs_type, agent.name

    def act_batch(self, obs, mask):
        rows = zip(obs, mask, strict=True)
        return np.array([self.agent.act({"observation": o, "action_mask": m}) for o, m in rows])


class Watched:
    """A network policy playing its batch moves, noting each decision where the batch's
    arithmetic and the single row's (``act``) choose apart, with the two logits' gap."""

    def __init__(self, agent: PolicyAgent) -> None:
        self.agent, self.obs_type, self.name = agent, agent.obs_type, agent.name
        self.gaps: list[float] = []
        self.decisions = 0

    def act_batch(self, obs, mask):
        got = np.asarray(self.agent.act_batch(obs, mask))
        single = RowByRow(self.agent).act_batch(obs, mask)
        self.decisions += len(got)
        for r in np.flatnonzero(got != single):
            with torch.no_grad():
                logits = self.agent.model.logits(torch.as_tensor(obs[r : r + 1]))[0]
            self.gaps.append(abs(float(logits[got[r]] - logits[single[r]])))
        return got


NETWORK_GAMES = [{"num_players": 2}, {"num_players": 4, "partnership": True}]


@pytest.mark.parametrize("kw", NETWORK_GAMES, ids=["2p", "partnership"])
def test_a_network_playing_its_single_moves_gets_exactly_the_aec_figures(kw):
    """The engine, deals, seatings and statistics agree to the last digit: a network whose
    batch moves are its single moves gets exactly the AEC evaluation's figures."""
    agent = network_agent()
    aec = evaluate([agent, "rules"], hands=300, seed=11, **kw)
    batched = evaluate_batched(RowByRow(agent), single_hand(**kw), "rules", 300, 11)
    for key, value in aec.per_deal.items():
        np.testing.assert_array_equal(batched.per_deal[key], value, err_msg=key)
    assert batched.stats == aec.stats and aec.stats[0].margin.mean != 0.0
    assert (aec.engine, batched.engine) == ("aec", "batched")


@pytest.mark.parametrize("kw", NETWORK_GAMES, ids=["2p", "partnership"])
def test_a_network_on_batches_departs_from_the_aec_games_only_on_near_ties(kw):
    """A network's batched matrix products round differently from one-row ones (in the
    last bits of float32): a greedy decision can only go the other way between two logits
    that close, and without such a decision every deal is the AEC evaluation's."""
    agent = network_agent()
    with torch.no_grad():  # the rounding differs: the batch's logits are not the rows'
        obs = torch.as_tensor(BatchedEnv(64, num_players=2).reset(seed=0)[0])
        rows = torch.cat([agent.model.logits(o[None]) for o in obs])
        batch = agent.model.logits(obs)
    assert torch.allclose(batch, rows, rtol=1e-5, atol=1e-6)
    watched = Watched(agent)
    aec = evaluate([agent, "rules"], hands=300, seed=11, **kw)
    batched = evaluate_batched(watched, single_hand(**kw), "rules", 300, 11)
    assert watched.decisions > 1000 and all(gap < 1e-5 for gap in watched.gaps)
    if not watched.gaps:
        for key, value in aec.per_deal.items():
            np.testing.assert_array_equal(batched.per_deal[key], value, err_msg=key)
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
