"""The leaderboard's OpenSpiel pieces: the policy an agent plays as an OpenSpiel policy (its
distribution when it samples, its move when it does not), the exact NashConv a small-set row
records, and NFSP trained for a budget and played in the AEC env."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyspiel", reason="open_spiel is not installed (pip install -e '.[openspiel]')")

import agents  # noqa: E402
from block_env.benchmark.leaderboard import exact_nash_conv, run_row  # noqa: E402
from block_env.benchmark.tasks import get_task  # noqa: E402
from block_env.env import raw_env  # noqa: E402
from block_env.openspiel import analysis as an  # noqa: E402
from block_env.openspiel.learners import load_agent, train_nfsp  # noqa: E402


@pytest.fixture(scope="module")
def small():
    game = an.load(max_pip=2, hand_size=2)
    return game, an.walk(game)


def test_a_sampling_agent_plays_its_distribution_and_a_greedy_one_its_move(small) -> None:
    game, tree = small
    uniform = an.nash_conv(game, an.tabular(game, tree, an.uniform_probs))
    random_bot = agents.make("random", seed=0)
    assert an.nash_conv(game, an.tabular(game, tree, an.played_probs(random_bot))) == (
        pytest.approx(uniform, abs=1e-12)
    )
    rules = agents.make("rules")
    direct = an.nash_conv(game, an.tabular(game, tree, an.agent_probs(rules.act)))
    assert an.nash_conv(game, an.tabular(game, tree, an.played_probs(rules))) == direct


def test_the_rows_nash_conv_is_the_exact_one_of_the_issue() -> None:
    # uniform random and the rule bot on block-d3-2p-v1: 1.131 and 0.241
    task = get_task("block-d3-2p-v1")
    assert exact_nash_conv("random", task) == pytest.approx(1.131, abs=5e-4)
    assert exact_nash_conv("rules", task) == pytest.approx(0.241, abs=5e-4)


def test_nfsp_trains_for_its_budget_and_plays_its_average_policy(tmp_path) -> None:
    out = train_nfsp(2, 0.02, 3, tmp_path, max_pip=2, hand_size=2, hidden=[16])
    assert out["train_seconds"] >= 0.02 * 60 and out["env_steps"] > 0 and out["episodes"] > 0
    agent = load_agent(str(tmp_path / "policy.pt"), seed=5)
    again = load_agent(str(tmp_path / "policy.pt"), seed=5)
    env = raw_env(max_pip=2, hand_size=2)
    for seed in range(20):
        env.reset(seed=seed)
        while not all(env.terminations.values()):
            obs = env.observe(env.agent_selection)
            p = agent.probabilities(obs)
            assert p.sum() == pytest.approx(1.0) and (p[obs["action_mask"] == 0] == 0).all()
            action = agent.act(obs)
            assert again.act(obs) == action and obs["action_mask"][action] == 1
            env.step(action)


def test_a_small_set_row_records_the_exact_nash_conv(tmp_path) -> None:
    task = get_task("block-d2-2p-v1")
    row = run_row("openspiel-nfsp", task, 0.02, 1, tmp_path, hands=40)
    assert row["agent"].startswith("block_env.openspiel.learners:load_agent:path=")
    assert 0.0 <= row["nash_conv"] == pytest.approx(exact_nash_conv(row["agent"], task))
    assert np.isfinite(row["score"]["rows"][0]["margin"]["mean"])


def test_a_cfr_plus_row_is_its_average_policys_exact_nash_conv(tmp_path) -> None:
    task = get_task("block-d2-2p-v1")
    row = run_row("openspiel-cfr-plus", task, 0.01, 0, tmp_path)
    assert row["score"] is None and row["agent"] is None and row["env_steps"] >= 1
    game = an.load(max_pip=2, hand_size=2)
    _, curve = an.run_cfr_plus(game, row["env_steps"])
    assert row["nash_conv"] == pytest.approx(curve[-1]["nash_conv"], abs=1e-12)
    with pytest.raises(ValueError, match="small-set tasks only"):
        run_row("openspiel-cfr-plus", get_task("block-2p-v1"), 0.01, 0, tmp_path)
