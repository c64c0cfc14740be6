"""The Tianshou and TorchRL examples as leaderboard entries: a wall-clock budget stops them,
the saved network plays exactly as the trained one did, and a leaderboard row trains and
scores one end to end. Needs the integrations extra (``bash .ci/extra-integrations``);
skipped without it."""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path

import pytest

pytest.importorskip("torchrl", reason="needs the integrations extra: bash .ci/extra-integrations")
pytest.importorskip("tianshou", reason="needs the integrations extra: bash .ci/extra-integrations")

from block_env.benchmark.leaderboard import run_row  # noqa: E402
from block_env.benchmark.tasks import get_task  # noqa: E402
from block_env.evaluate import evaluate  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BUDGET_MIN = 0.02


@pytest.fixture(autouse=True)
def _examples_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))  # as when run from the repository's root


@pytest.mark.parametrize("module", ["tianshou_dqn", "torchrl_ppo"])
def test_a_budgeted_run_saves_the_network_it_trained(module, tmp_path) -> None:
    script = import_module(f"examples.{module}")
    argv = ["--smoke", "--minutes", str(BUDGET_MIN), "--save", str(tmp_path), "--seed", "4"]
    args = script.parse_args(argv)
    out = script.train(args)
    assert out["train_seconds"] >= BUDGET_MIN * 60 * 0.99  # rounded to 0.1 s
    assert out["env_steps"] > 0
    agent = script.load_agent(str(tmp_path / "policy.pt"))
    # the example scores its trained network on these deals; the saved one must score the same
    res = evaluate([agent, "random"], hands=args.eval_hands, seed=10_000 + args.seed)
    assert res.summary(0)["margin"] == out["after"]["margin"]


def test_a_torchrl_row_is_trained_and_scored(tmp_path) -> None:
    row = run_row("torchrl-ppo", get_task("block-2p-v1"), BUDGET_MIN, 2, tmp_path, hands=40)
    assert row["agent"] == f"examples.torchrl_ppo:load_agent:path={tmp_path / 'policy.pt'}"
    assert row["algorithm"]["library"] == "torchrl" and row["algorithm"]["version"]
    assert row["env_steps"] > 0 and row["score"]["elo"] is not None
    assert {r["opponent"] for r in row["score"]["rows"]} >= {"random", "rules", "pimc-20"}
    assert sys.modules["examples.torchrl_ppo"].__file__.startswith(str(ROOT))
