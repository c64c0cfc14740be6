"""Kickstarting: the teacher's weight schedule, its config checks, and that it teaches."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import train  # noqa: E402
from agents.baselines import rule_actions  # noqa: E402
from agents.network import mask_logits  # noqa: E402
from block_env.batched import BatchedEnv  # noqa: E402
from block_env.training.config import load_config, teacher_of  # noqa: E402
from block_env.training.errors import ConfigError  # noqa: E402
from block_env.training.ppo import teacher_weight  # noqa: E402

SMOKE = ROOT / "configs" / "smoke.yaml"


def test_weight_falls_linearly_to_zero_and_is_zero_without_a_teacher() -> None:
    cfg = load_config(SMOKE, ["teacher=rules", "teacher_coef=2", "teacher_steps=1000"])
    assert teacher_weight(cfg, 0) == 2.0
    assert teacher_weight(cfg, 250) == pytest.approx(1.5)
    assert teacher_weight(cfg, 1000) == 0.0
    assert teacher_weight(cfg, 5000) == 0.0
    assert teacher_weight(load_config(SMOKE, ["teacher=none"]), 0) == 0.0


def test_auto_is_the_rule_bot_for_ppo_and_nothing_for_the_other_engines() -> None:
    assert load_config(None, []).teacher == "auto"
    assert teacher_of(load_config(SMOKE, [])) == "rules"
    assert teacher_of(load_config(SMOKE, ["algo=sb3"])) == "none"
    assert teacher_of(load_config(SMOKE, ["algo=sb3", "teacher=none"])) == "none"


@pytest.mark.parametrize(
    "overrides, key",
    [
        (["teacher=pimc"], "teacher"),
        (["teacher=rules", "algo=sb3"], "teacher"),
        (["teacher_coef=-1"], "teacher_coef"),
        (["teacher_steps=0"], "teacher_steps"),
    ],
)
def test_bad_teacher_settings_are_refused(overrides: list[str], key: str) -> None:
    with pytest.raises(ConfigError, match=f"config {key}="):
        load_config(SMOKE, overrides)


def _agreement_with_rules(policy_path: Path) -> float:
    """Share of positions (random play, 2 players) where the policy's greedy move is the
    rule bot's, over positions with a real choice."""
    from agents.policy_files import load_model

    model = load_model(str(policy_path))
    env = BatchedEnv(256, auto_pass=True, episode="hand")
    obs, mask, _ = env.reset(seed=123)
    agree = total = 0
    for _ in range(30):
        choice = mask.sum(1) > 1
        with torch.no_grad():
            logits = mask_logits(model.logits(torch.from_numpy(obs)), torch.from_numpy(mask))
        mine = logits.argmax(1).numpy()
        teacher = rule_actions(obs, mask)
        agree += int((mine == teacher)[choice].sum())
        total += int(choice.sum())
        obs, mask, *_ = env.step(env.sample_actions())
    return agree / total


def test_a_rules_teacher_pulls_the_policy_towards_the_rule_bot(tmp_path: Path) -> None:
    common = ["total_steps=8192", "lr=0.003", "anneal_lr=false", "eval_every=100"]
    taught = load_config(
        SMOKE,
        [f"run_dir={tmp_path / 'taught'}", *common, "teacher=rules", "teacher_coef=5"]
        + ["teacher_steps=8192"],
    )
    alone = load_config(SMOKE, [f"run_dir={tmp_path / 'alone'}", *common, "teacher=none"])
    train.train(taught)
    train.train(alone)
    log = [json.loads(x) for x in (tmp_path / "taught/log.jsonl").read_text().splitlines()]
    assert log[0]["teacher_coef"] == 5.0 and "teacher_ce" in log[0]
    assert log[-1]["teacher_ce"] < log[0]["teacher_ce"]  # it learns the teacher's moves
    with_teacher = _agreement_with_rules(tmp_path / "taught/checkpoints/latest.pt")
    without = _agreement_with_rules(tmp_path / "alone/checkpoints/latest.pt")
    assert with_teacher > without + 0.1, (with_teacher, without)
