"""``python train.py obs_type=information_state``: the config key and its refusals, the
collector (bots and the teacher read the plain observation, the rollouts store the
network's summary), a tiny run whose policy plays in both evaluations with the same figures,
and an exact resume."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from helpers import assert_same_training, crash_in_update, final_state  # noqa: E402

import agents  # noqa: E402
import train  # noqa: E402
from agents.network import ActorCritic, NetConfig, summarize_history  # noqa: E402
from block_env.evaluate import evaluate  # noqa: E402
from block_env.evaluation.batched import evaluate_batched  # noqa: E402
from block_env.training import ppo, rollout  # noqa: E402
from block_env.training.config import game_of, load_config, obs_of  # noqa: E402
from block_env.training.errors import BadCheckpoint, ConfigError  # noqa: E402
from block_env.training.runs import RunFolder  # noqa: E402

SMOKE = ROOT / "configs" / "smoke.yaml"
INFO = ["obs_type=information_state", "eval_opponents=[random,rules]"]
# 6 updates of 512 steps; checkpoints every 2 (as tests/training/test_training_resume.py)
SIX = ["total_steps=3072", "checkpoint_every=2", "eval_every=3", "snapshot_every=2"]


def config(run_dir: Path, *extra: str) -> Any:
    return load_config(SMOKE, [f"run_dir={run_dir}", *SIX, *INFO, *extra])


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("info") / "run"
    train.train(config(run))
    assert [r["update"] for r in RunFolder(run).read_log()] == [1, 2, 3, 4, 5, 6]
    return run


def test_the_key_defaults_to_the_observation_and_bad_values_are_refused() -> None:
    assert load_config(SMOKE).obs_type == "observation"
    assert obs_of(load_config(SMOKE)) == {}
    assert obs_of(load_config(SMOKE, INFO)) == {
        "obs_type": "information_state",
        "history_slots": 13,
    }
    with pytest.raises(ConfigError, match="obs_type='pixels' is not allowed: use one of"):
        load_config(SMOKE, ["obs_type=pixels"])
    for algo in ("sb3", "rllib"):
        with pytest.raises(ConfigError, match=f"algo={algo} trains on the plain observation"):
            load_config(SMOKE, [f"algo={algo}", "obs_type=information_state"])
    with pytest.raises(ConfigError, match="NashConv probe"):
        load_config(SMOKE, ["obs_type=information_state", "nashconv_every=1"])


def _collect(cfg: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, list]:
    """One rollout of a fresh model with the teacher on; records (kind, width) of every
    ``Opponents.act`` call."""
    torch.manual_seed(0)
    model = ActorCritic(
        NetConfig((16,), privileged_critic=True), **ppo.set_of_model(cfg), **obs_of(cfg)
    )
    seen: list[tuple[str, int]] = []
    real = rollout.Opponents.act

    def spy(self: Any, kind: str, obs: np.ndarray, mask: np.ndarray, policy: Any) -> Any:
        seen.append((kind, obs.shape[1]))
        return real(self, kind, obs, mask, policy)

    monkeypatch.setattr(rollout.Opponents, "act", spy)
    collector = rollout.Collector(cfg, model, "cpu", np.random.default_rng(0))
    collector.teaching = True
    collector.snapshot = model  # a past self: a network opponent
    collector.reset(seed=0)
    return collector, collector.collect(), seen


def test_the_collector_feeds_bots_the_plain_observation_and_stores_summaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = config(tmp_path / "x", "teacher=rules")
    collector, batch, seen = _collect(cfg, monkeypatch)
    model = collector.model
    assert collector.obs.shape[1] == model.input_dim == 1734
    assert batch.obs.shape[1] == model.summary_dim == 122 + 4 * 31
    widths = {kind: {w for k, w in seen if k == kind} for kind, _ in seen}
    for kind in ("random", "greedy", "rules"):
        assert widths[kind] == {122}, kind  # bots and the teacher (a "rules" call)
    assert widths["snapshot"] == {model.summary_dim}
    # stored summaries give the recorded log-probabilities of the actions
    with torch.no_grad():
        logits = model.masked_logits(torch.from_numpy(batch.obs), torch.from_numpy(batch.mask))
        logp = torch.log_softmax(logits, -1).gather(1, torch.from_numpy(batch.actions)[:, None])
    np.testing.assert_allclose(logp.squeeze(1).numpy(), batch.logp, rtol=1e-5, atol=1e-6)
    assert (batch.teacher >= 0).all()
    # what the learner acted on is the summary of the env's information state
    plain, feats = collector._views(collector.obs)
    assert plain.shape[1] == 122 and np.array_equal(plain, collector.obs[:, :122])
    assert np.array_equal(feats, summarize_history(collector.obs, 122, 13))


def test_the_plain_default_collector_is_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = load_config(SMOKE, [f"run_dir={tmp_path / 'x'}", "teacher=rules"])
    collector, batch, seen = _collect(cfg, monkeypatch)
    assert collector.env.obs_type == "observation" and batch.obs.shape[1] == 122
    assert {w for _, w in seen} == {122}
    plain, feats = collector._views(collector.obs)
    assert plain is collector.obs and feats is collector.obs  # no copy, no slicing


def test_the_run_writes_an_information_state_policy_that_both_evaluations_play(
    whole: Path,
) -> None:
    agent = agents.load(whole / "policy.pt")
    assert agent.obs_type == "information_state" and agent.model.input_dim == 1734
    assert final_state(whole)["policy"]["obs_type"] == "information_state"
    assert final_state(whole)["config"]["obs_type"] == "information_state"
    cfg = config(whole)
    aec = evaluate([str(whole / "policy.pt"), "rules"], hands=200, seed=11)
    batched = evaluate_batched(agent, game_of(cfg), "rules", 200, 11)
    for key, value in aec.per_deal.items():
        np.testing.assert_array_equal(batched.per_deal[key], value, err_msg=key)
    for field in ("margin", "hand_win", "seat_hands"):
        assert getattr(batched.stats[0], field) == getattr(aec.stats[0], field)
    # the run's final evaluation (batched, seed 1,000,000) is the AEC evaluation's figure
    final = json.loads((whole / "eval.json").read_text())["final"]["rules"]
    again = evaluate([str(whole / "policy.pt"), "rules"], hands=40, seed=1_000_000)
    assert final["margin"] == again.stats[0].margin.mean
    assert final["hands"] == again.hands


def test_resume_of_an_information_state_run_is_exact(
    tmp_path: Path, whole: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    restore = crash_in_update(monkeypatch, 4)
    with pytest.raises(RuntimeError, match="simulated crash"):
        train.train(config(run))
    assert final_state(run)["update"] == 2
    restore()
    assert train.main([str(SMOKE), f"run_dir={run}", *SIX, *INFO, "--resume"]) == 0
    assert_same_training(run, whole)
    assert len(json.loads(final_state(run)["history"])) == 2
    # resuming it as a plain run is refused: another config
    with pytest.raises(BadCheckpoint, match="obs_type: checkpoint 'information_state'"):
        train.train(load_config(SMOKE, [f"run_dir={run}", *SIX]), resume=True)
