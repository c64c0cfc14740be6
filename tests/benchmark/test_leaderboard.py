"""The leaderboard of algorithms: the interquartile mean and its bootstrap CI, the grouping of
row files by algorithm and budget, one budgeted row trained and scored end to end, the SB3
policy file the sb3 rows are scored from, and the command line's refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from block_env.agent_specs import SetupError
from block_env.benchmark.cli import main
from block_env.benchmark.leaderboard import (
    aggregate,
    bootstrap_iqm,
    iqm,
    leaderboard_markdown,
    load_rows,
    run_row,
)
from block_env.benchmark.tasks import get_task


def test_iqm_is_the_mean_of_the_middle_half() -> None:
    assert iqm([4, 1, 3, 2]) == pytest.approx(2.5)  # the middle two
    assert iqm([0, 1, 10]) == pytest.approx((0.25 * 0 + 1 + 0.25 * 10) / 1.5)
    assert iqm([7.0]) == 7.0
    # one wild seed moves the mean far more than the IQM
    assert iqm([1, 2, 3, 4, 1000]) == pytest.approx((0.75 * 2 + 3 + 0.75 * 4) / 2.5)
    with pytest.raises(ValueError):
        iqm([])


def test_bootstrap_ci_brackets_the_iqm_and_repeats() -> None:
    values = [10.0, 14.0, 30.0]
    centre, lo, hi = bootstrap_iqm(values)
    assert lo <= centre <= hi and lo >= 10.0 and hi <= 30.0 and hi > lo
    assert bootstrap_iqm(values) == (centre, lo, hi)
    assert bootstrap_iqm([5.0, 5.0, 5.0]) == (5.0, 5.0, 5.0)
    assert np.isnan(bootstrap_iqm([5.0])[1])


def _row(name: str, seed: int, elo: float, margin: float, budget: float = 10.0) -> dict:
    return {
        "format": 1,
        "task": {"id": "block-2p-v1", "version": 1},
        "algorithm": {"name": name, "library": f"lib-{name}"},
        "seed": seed,
        "budget_min": budget,
        "env_steps": 1000 * (seed + 1),
        "train_wall_s": 600.0,
        "score": {
            "elo": {"mean": elo},
            "rows": [{"opponent": "rules", "margin": {"mean": margin}}],
        },
    }


def test_aggregate_groups_seeds_and_ranks_by_elo() -> None:
    rows = [_row("b", s, 100.0 + s, 0.1) for s in range(3)]
    rows += [_row("a", s, 200.0 + 10 * s, 0.5) for s in (2, 0, 1)]
    rows.append(_row("a", 0, 0.0, 0.0, budget=30.0))
    entries = aggregate(rows)
    assert [(e["algorithm"], e["budget_min"]) for e in entries] == [
        ("a", 10.0),
        ("b", 10.0),
        ("a", 30.0),
    ]
    a = entries[0]
    assert a["seeds"] == [0, 1, 2] and a["elo_per_seed"] == [200.0, 210.0, 220.0]
    assert a["elo"][0] == pytest.approx(210.0) and a["margin"][0] == pytest.approx(0.5)
    assert a["env_steps"] == pytest.approx(2000.0) and a["train_min"] == pytest.approx(10.0)
    text = leaderboard_markdown(entries)
    assert text.count("\n") == 4 and "| block-2p-v1 | 10 min | a | lib-a | 3 |" in text
    with pytest.raises(SetupError, match="seed listed twice"):
        aggregate([_row("a", 0, 1.0, 0.0), _row("a", 0, 2.0, 0.0)])


@pytest.fixture(scope="module")
def ppo_row(tmp_path_factory):
    run = tmp_path_factory.mktemp("lb") / "run"
    task = get_task("block-d2-2p-v1")
    return run_row("ppo", task, 0.05, 5, run_dir=run, hands=200, command="test")


def test_a_row_trains_for_its_budget_and_is_scored_on_the_held_out_deals(ppo_row) -> None:
    row = ppo_row
    assert row["task"] == {"id": "block-d2-2p-v1", "version": 1}
    assert row["algorithm"]["name"] == "ppo" and row["algorithm"]["version"]
    assert row["seed"] == 5 and row["budget_min"] == 0.05
    assert row["train_wall_s"] >= 0.05 * 60  # it stops only once the budget has passed
    assert row["env_steps"] > 0 and row["agent"].endswith("policy.pt")
    trained = json.loads((Path(row["agent"]).parent / "eval.json").read_text())
    assert trained["config"]["progress"] is False  # no bar from training when none is asked
    score = row["score"]
    assert (
        score["agent"]["sha256"]
        and score["deal_set"]["first_seed"] == get_task("block-d2-2p-v1").deal_seed
    )
    assert {r["opponent"] for r in score["rows"]} >= {"random", "greedy", "rules"}
    assert all(r["hands"] == 200 for r in score["rows"])
    assert score["command"] == row["command"] == "test"
    json.dumps(row)  # JSON-ready as it is


def test_the_cli_aggregates_row_files(ppo_row, tmp_path, capsys) -> None:
    (tmp_path / "a.json").write_text(json.dumps(ppo_row))
    assert load_rows([tmp_path])[0]["seed"] == 5
    assert main(["leaderboard", str(tmp_path), "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "| block-d2-2p-v1 | 0.05 min | ppo | block-env | 1 |" in out


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["train", "nope", "--task", "block-2p-v1", "--minutes", "1", "--seed", "0"], "unknown"),
        (["train", "ppo", "--task", "block-2p-v1", "--minutes", "0", "--seed", "0"], "minutes"),
        (["train", "ppo", "--task", "block-9p-v1", "--minutes", "1", "--seed", "0"], "task"),
        (["train", "ppo", "--task", "block-2p-v1", "--minutes", "1", "--seed", "-1"], "seed"),
        (["leaderboard", "/no/such/place"], "no such file"),
    ],
)
def test_the_cli_refuses_bad_rows_in_one_line(argv, needle, capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_a_file_that_is_not_a_row_is_refused(tmp_path, capsys) -> None:
    (tmp_path / "x.json").write_text(json.dumps({"task": "block-2p-v1"}))
    assert main(["leaderboard", str(tmp_path)]) == 2
    assert "not a leaderboard row" in capsys.readouterr().err


def test_the_sb3_policy_file_plays_as_the_model_did(tmp_path) -> None:
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from block_env.training.config import TrainConfig
    from block_env.training.sb3 import SB3Agent, load_agent, save_policy
    from block_env.wrappers import SingleAgentBlockEnv

    cfg = TrainConfig(algo="sb3", hidden=[32, 32], max_pip=3, hand_size=2)
    env = SingleAgentBlockEnv(opponents="random", scale_obs=True, max_pip=3, hand_size=2)
    model = MaskablePPO("MlpPolicy", env, policy_kwargs={"net_arch": [32, 32]}, seed=0)
    save_policy(model.policy, cfg, tmp_path / "p.pt")
    loaded, original = load_agent(str(tmp_path / "p.pt")), SB3Agent(model)
    from block_env.env import raw_env

    game = raw_env(max_pip=3, hand_size=2)
    for seed in range(30):
        game.reset(seed=seed)
        while not all(game.terminations.values()):
            obs = game.observe(game.agent_selection)
            action = original.act(obs)
            assert loaded.act(obs) == action
            game.step(action)


def test_a_leaderboard_file_holds_its_rows_and_renders_as_they_do(tmp_path, capsys) -> None:
    """``leaderboard --json`` writes the entries and every row; that file loads as the rows
    it holds and renders the same table, and a file holding no row is refused."""
    from block_env.benchmark.table import render

    rows = [_row("a", s, 100.0 + s, 0.1) for s in range(3)] + [_row("b", 0, 90.0, -0.2)]
    for i, row in enumerate(rows):
        (tmp_path / f"r{i}.json").write_text(json.dumps(row))
    out = tmp_path / "board.json"
    assert (
        main(
            ["leaderboard", *(str(tmp_path / f"r{i}.json") for i in range(4))]
            + ["--json", str(out)]
        )
        == 0
    )
    board = json.loads(out.read_text())
    assert board["rows"] == rows and [e["algorithm"] for e in board["leaderboard"]] == ["a", "b"]
    assert load_rows([out]) == rows
    assert render([out]) == leaderboard_markdown(aggregate(rows))
    (tmp_path / "bad.json").write_text(json.dumps({"leaderboard": [], "rows": [{"x": 1}]}))
    with pytest.raises(SetupError, match="not a leaderboard row"):
        load_rows([tmp_path / "bad.json"])


@pytest.mark.parametrize("algorithm", ["openspiel-nfsp", "tianshou-dqn", "torchrl-ppo"])
def test_trainers_of_the_plain_hand_refuse_the_variant_tasks(algorithm: str, tmp_path) -> None:
    """The examples and OpenSpiel's game play one hand with the rotating lead: a task where
    the highest double opens, or whole matches, is refused before anything trains."""
    from block_env.benchmark import TASKS
    from block_env.benchmark.algorithms import ALGORITHMS

    for task_id in ("block-2p-hd-v1", "block-2p-match-v1"):
        with pytest.raises(SetupError, match="rotating lead"):
            ALGORITHMS[algorithm].train(TASKS[task_id], 0.1, 0, tmp_path, 1, False)
