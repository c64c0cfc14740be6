"""The network-guided search agent (``agents.guided``): its score is PIMC's mean solved value
plus ``weight`` times the network's log-probability, checked against PIMC and the network
computed separately on the same positions; the limits (weight 0 is PIMC, a huge weight the
network's greedy move), forced moves, bad arguments, the game check and the preset."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import agents
from agents.guided import BLOCK_2P_SEARCH, BLOCK_PARTNERSHIP_SEARCH, GuidedSearchAgent
from agents.network import ActorCritic, NetConfig
from agents.pimc import PIMCAgent
from agents.policy import PolicyAgent
from block_env.config import BlockConfig
from block_env.env import raw_env
from block_env.evaluate import SetupError, evaluate
from block_env.information_state import history_slots


def decisions(num_players: int, seeds: range, obs_type: str = "observation") -> list[dict]:
    """Observations (copied) of every decision with two or more legal moves, in hands played
    by the rule bot from the given deal seeds."""
    env = raw_env(num_players=num_players, episode="hand", obs_type=obs_type)
    bot = agents.make("rules")
    out = []
    for seed in seeds:
        env.reset(seed=seed)
        while not any(env.terminations.values()):
            observation = env.observe(env.agent_selection)
            copy = {k: np.array(v) for k, v in observation.items()}
            if copy["action_mask"].sum() > 1:
                out.append(copy)
            plain = dict(copy, observation=copy["observation"][:122])
            env.step(bot.act(plain))
    return out


@pytest.fixture(scope="module")
def positions() -> list[dict]:
    return decisions(2, range(6))


@pytest.fixture(scope="module")
def network() -> PolicyAgent:
    """The preset's network, which reads the plain observation of these positions."""
    return agents.load(BLOCK_2P_SEARCH["policy"])


def test_score_is_pimc_mean_plus_weighted_log_probability(positions, network) -> None:
    guided = GuidedSearchAgent(network, worlds=7, weight=1.5, seed=3)
    pimc = PIMCAgent(worlds=7, seed=3)  # same seed: the same worlds, decision by decision
    assert len(positions) > 20
    for observation in positions:
        action = guided.act(observation)
        totals = pimc.action_totals(observation)
        probs = network.probabilities(observation)
        want = {a: totals[a] / 7 + 1.5 * math.log(max(float(probs[a]), 1e-9)) for a in totals}
        assert guided.last_worlds == 7
        assert guided.last_scores.keys() == want.keys()
        for a in want:
            assert guided.last_scores[a] == pytest.approx(want[a], abs=1e-9)
        assert want[action] == pytest.approx(max(want.values()), abs=1e-9)


def test_weight_zero_plays_pimc(positions, network) -> None:
    guided = GuidedSearchAgent(network, worlds=5, weight=0.0, seed=11)
    pimc = PIMCAgent(worlds=5, seed=11)
    assert [guided.act(o) for o in positions] == [pimc.act(o) for o in positions]


def test_huge_weight_plays_the_network(positions, network) -> None:
    guided = GuidedSearchAgent(network, worlds=3, weight=1e6, seed=0)
    moves = [guided.act(o) for o in positions]
    assert moves == [network.act(o) for o in positions]
    # and PIMC alone disagrees somewhere, so the weight is what made the difference
    pimc = PIMCAgent(worlds=3, seed=0)
    assert moves != [pimc.act(o) for o in positions]


def test_forced_move_draws_no_world(network) -> None:
    env = raw_env(num_players=2, episode="hand")
    guided = GuidedSearchAgent(network, worlds=4, seed=0)
    env.reset(seed=0)
    observation = env.observe(env.agent_selection)
    mask = np.zeros_like(observation["action_mask"])
    legal = int(np.flatnonzero(observation["action_mask"])[0])
    mask[legal] = 1
    assert guided.act(dict(observation, action_mask=mask)) == legal
    assert guided.last_worlds == 0 and guided.last_scores == {}
    with pytest.raises(ValueError, match="no legal action"):
        guided.act(dict(observation, action_mask=np.zeros_like(mask)))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"weight": -1.0}, "weight=-1.0 is not allowed"),
        ({"weight": True}, "weight=True is not allowed"),
        ({"weight": "2"}, "weight='2' is not allowed"),
        ({"worlds": 0}, "worlds=0 is not allowed"),
        ({"policy": 3}, "policy=3 is not allowed"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GuidedSearchAgent(**kwargs)


def test_missing_policy_file_is_named(tmp_path) -> None:
    with pytest.raises(FileNotFoundError):
        GuidedSearchAgent(str(tmp_path / "none.pt"))


def test_policy_for_another_game_is_refused_by_evaluate() -> None:
    with pytest.raises(SetupError, match="block-2p-search was trained for .* num_players"):
        evaluate(["block-2p-search", "rules"], num_players=3, hands=3)


def test_preset_plays_in_evaluate_hands_and_matches() -> None:
    """Built by name as the command line builds it (with the env and a seed), in single
    hands and in matches (the network does not read the scores, so a match fits it)."""
    hands = evaluate(["block-2p-search:worlds=2", "random"], hands=4, seed=1)
    matches = evaluate(["block-2p-search:worlds=2", "random"], episode="match", matches=2)
    assert hands.hands == 4 and matches.matches == 2 and not hands.notes


# the network block-partnership-search was tuned and measured with, in the preset's own file
PARTNERSHIP_SEARCH_NETWORK = str(
    Path(agents.__file__).parent / "policies/block-partnership-search.pt"
)
PARTNERSHIP_SEARCH_SHA256 = "f018eba4e594164bc4c93811b1a43851e4c2832fdd3db4ff481d8499e34fd7bc"


def test_partnership_preset_plays_the_network_it_was_measured_with() -> None:
    """The preset's file is byte for byte the network its figures were measured with (the
    network the partnership highest-double and match tasks froze too)."""
    from block_env.benchmark.tasks import FROZEN_NETWORKS

    data = Path(PARTNERSHIP_SEARCH_NETWORK).read_bytes()
    assert hashlib.sha256(data).hexdigest() == PARTNERSHIP_SEARCH_SHA256
    assert FROZEN_NETWORKS["block-partnership-hd-v1"]["block-partnership"][1] == (
        PARTNERSHIP_SEARCH_SHA256
    )
    assert agents.make("block-partnership-search").policy.name == "block-partnership-search"


@pytest.mark.parametrize(
    ("name", "preset", "network"),
    [
        ("block-2p-search", BLOCK_2P_SEARCH, "block-2p-plain"),
        ("block-partnership-search", BLOCK_PARTNERSHIP_SEARCH, PARTNERSHIP_SEARCH_NETWORK),
    ],
)
def test_preset_is_the_shipped_network_with_its_settings(
    name: str, preset: dict[str, Any], network: str
) -> None:
    agent = agents.make(name, seed=0)
    assert isinstance(agent, GuidedSearchAgent)
    assert preset["policy"] == network
    assert agent.pimc.worlds == preset["worlds"]
    assert agent.weight == preset["weight"]
    assert agent.pimc.node_budget == preset["node_budget"]
    assert agent.game == agents.load(network).game
    override = agents.make(name, worlds=3, weight=0.25)
    assert override.pimc.worlds == 3 and override.weight == 0.25
    assert override.pimc.node_budget == preset["node_budget"]


def test_2p_preset_reads_the_plain_observation_of_block_2p_s_game() -> None:
    agent = agents.make("block-2p-search", seed=0)
    assert agent.game == agents.load("block-2p").game == agents.load("block-2p-plain").game
    assert agent.obs_type == "observation"  # block-2p-plain, the network it was tuned with


def test_partnership_preset_plays_partnership_and_refuses_individual_play() -> None:
    hands = evaluate(
        ["block-partnership-search:worlds=2", "rules"], num_players=4, partnership=True, hands=4
    )
    assert hands.hands == 4 and not hands.notes
    assert agents.make("block-partnership-search").game["partnership"] is True
    with pytest.raises(SetupError, match="block-partnership-search was trained for .*partnership"):
        evaluate(["block-partnership-search", "rules"], num_players=4, hands=4)


def test_reads_an_information_state_network() -> None:
    """An information-state network gets the whole vector, PIMC the plain part."""
    torch.manual_seed(0)
    game = BlockConfig(num_players=2, episode="hand")
    model = ActorCritic(
        NetConfig(hidden=(16,)), obs_type="information_state", history_slots=history_slots(game)
    )
    network = PolicyAgent(model)
    guided = GuidedSearchAgent(network, worlds=4, weight=1.0, seed=2)
    pimc = PIMCAgent(worlds=4, seed=2)
    assert guided.obs_type == "information_state"
    for observation in decisions(2, range(2), obs_type="information_state")[:10]:
        guided.act(observation)
        plain = dict(observation, observation=observation["observation"][:122])
        totals = pimc.action_totals(plain)
        probs = network.probabilities(observation)
        for a, score in guided.last_scores.items():
            assert score == pytest.approx(totals[a] / 4 + math.log(max(float(probs[a]), 1e-9)))


def test_plays_whole_hands_in_evaluate() -> None:
    result = evaluate(["guided:worlds=3,weight=2", "random"], hands=8, seed=0)
    assert result.hands == 8
    assert result.stats[0].margin.mean > 0  # a searching network against random play


def test_node_budget_reaches_pimc(network) -> None:
    env = raw_env(num_players=2, episode="hand")
    env.reset(seed=4)
    opening = env.observe(env.agent_selection)
    guided = GuidedSearchAgent(network, worlds=50, node_budget=1, seed=0)
    guided.act(opening)
    assert guided.last_worlds == 1
    unlimited = GuidedSearchAgent(network, worlds=50, seed=0)
    unlimited.act(opening)
    assert unlimited.last_worlds == 50
