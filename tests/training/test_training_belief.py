"""The belief head (``belief_coef`` > 0): an auxiliary head on the actor's features that
learns which other seat holds each tile, which play never reads."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import train  # noqa: E402
from agents.network import ActorCritic, NetConfig  # noqa: E402
from agents.policy_files import read_policy_file  # noqa: E402
from block_env.training.config import load_config  # noqa: E402
from block_env.training.errors import ConfigError  # noqa: E402

SMOKE = ROOT / "configs" / "smoke.yaml"


@pytest.mark.parametrize("shared", [False, True])
def test_the_belief_head_reads_the_actors_features_and_changes_no_other_output(
    shared: bool,
) -> None:
    torch.manual_seed(0)
    net = NetConfig((16, 16), shared=shared, privileged_critic=not shared, belief_head=True)
    model = ActorCritic(net)
    obs, priv = torch.rand(5, 122) * 3, torch.rand(5, 84)
    logits, value, belief = model.forward_beliefs(obs, priv)
    plain_logits, plain_value = model(obs, priv)
    torch.testing.assert_close(logits, plain_logits)
    torch.testing.assert_close(value, plain_value)
    assert belief.shape == (5, 84)
    features = model.actor_body(model._inputs(obs))
    torch.testing.assert_close(belief, model.belief_head(features))
    with pytest.raises(ValueError, match="no belief head"):
        ActorCritic(NetConfig((16,))).forward_beliefs(obs)


@pytest.mark.parametrize(
    ("overrides", "wanted"),
    [
        (["belief_coef=-0.5"], "belief_coef"),
        (["belief_coef=1", "algo=sb3", "teacher=auto"], "only algo=ppo has a belief head"),
    ],
)
def test_bad_belief_settings_are_refused(overrides: list[str], wanted: str) -> None:
    with pytest.raises(ConfigError, match=wanted):
        load_config(SMOKE, overrides)


def _bce_log(run: Path) -> list[float]:
    lines = (run / "log.jsonl").read_text().splitlines()
    return [json.loads(line)["belief_bce"] for line in lines if "belief_bce" in line]


@pytest.mark.parametrize("privileged", [True, False])
def test_a_belief_run_learns_who_holds_the_tiles(tmp_path: Path, privileged: bool) -> None:
    """The head's cross-entropy against the dealt hands falls as the run trains (with or
    without a privileged critic, which would otherwise be the only reader of the hands),
    and the policy file keeps the head."""
    run = tmp_path / "run"
    cfg = load_config(
        SMOKE,
        [
            f"run_dir={run}",
            "belief_coef=1",
            "lr=0.003",
            "total_steps=8192",
            f"privileged_critic={str(privileged).lower()}",
        ],
    )
    train.train(cfg)
    bce = _bce_log(run)
    assert len(bce) >= 10
    assert sum(bce[-3:]) / 3 < 0.8 * sum(bce[:3]) / 3, bce
    model = read_policy_file(run / "policy.pt").model
    assert model.net.belief_head and model.belief_head is not None


def test_a_run_without_the_head_logs_no_belief_loss(tmp_path: Path) -> None:
    train.train(load_config(SMOKE, [f"run_dir={tmp_path / 'run'}"]))
    assert _bce_log(tmp_path / "run") == []
    assert read_policy_file(tmp_path / "run" / "policy.pt").model.belief_head is None
