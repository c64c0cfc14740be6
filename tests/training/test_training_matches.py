"""``episode=match``: the native PPO trains on whole matches (scores kept to the target),
with ``reward=win`` (+1 to the match's winner) or each hand's zero-sum points. A decision's
return runs to the end of its match, and a match still running when the rollout stops
bootstraps from its seat's last decision in the buffer; the trainer's evaluations still play
single hands."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import tiny_collector

from block_env.training import rollout
from block_env.training.config import game_of, hand_game_of, load_config
from block_env.training.errors import ConfigError

SMOKE = Path(__file__).resolve().parents[2] / "configs" / "smoke.yaml"


def test_the_match_game_is_trained_and_single_hands_evaluated(tmp_path: Path) -> None:
    cfg = load_config(SMOKE, [f"run_dir={tmp_path}", "episode=match", "reward=win"])
    assert game_of(cfg)["episode"] == "match" and game_of(cfg)["reward"] == "win"
    assert hand_game_of(cfg) == {**game_of(cfg), "episode": "hand", "reward": "zero_sum"}
    default = load_config(SMOKE, [f"run_dir={tmp_path}"])
    assert game_of(default) == hand_game_of(default)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["episode=season"], "episode='season' is not allowed: use hand or match"),
        (["reward=points"], "reward='points' is not allowed: use zero_sum or win"),
        (["reward=win"], "use reward=win with episode=match"),
        (["episode=match", "algo=sb3"], "only algo=ppo trains on whole matches"),
    ],
)
def test_bad_match_settings_fail_at_construction(tmp_path, overrides, message) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(SMOKE, [f"run_dir={tmp_path}", *overrides])


def test_win_rewards_reach_only_decisions_of_finished_matches(tmp_path: Path) -> None:
    """gamma = lambda = 1 and reward=win: a decision of a match that ended in the buffer
    returns exactly +-1 (2 players); one of a running match returns its seat's bootstrap
    value; the seat's last decision of a running match is not trained."""
    c = tiny_collector(
        tmp_path / "run",
        ["episode=match", "reward=win", "reward_scale=1", "num_envs=64", "rollout_steps=400"],
    )
    c.cfg.gamma = c.cfg.gae_lambda = 1.0
    batch = c.collect()
    assert batch.hands > 0  # matches finished in the buffer
    finished = np.isclose(np.abs(batch.returns), 1.0, atol=1e-6)
    assert finished.sum() > 0
    # Returns of running matches are critic values (an untrained network's: near 0).
    assert np.all(np.abs(batch.returns[~finished]) < 1.0)


def test_gae_bootstraps_a_running_match_from_its_last_decision() -> None:
    # One game, one learning seat: decisions at t = 0, 1, 2, the episode still running.
    T, B = 3, 1
    seats = np.zeros((T, B), dtype=np.int64)
    valid = np.ones((T, B), dtype=bool)
    values = np.array([[0.5], [0.1], [0.7]], dtype=np.float32)
    rewards = np.array([[0.0], [0.25], [0.0]], dtype=np.float32)
    dones = np.zeros((T, B), dtype=bool)
    adv, trainable = rollout.gae(rewards, values, dones, valid, seats, 1, 1.0, 1.0, True)
    assert trainable[:, 0].tolist() == [True, True, False]
    # returns: t=1 -> 0.25 + V(t=2); t=0 -> 0 + 0.25 + V(t=2)
    assert (adv + values)[:2, 0].tolist() == pytest.approx([0.95, 0.95])
    _, trainable_hands = rollout.gae(rewards, values, dones, valid, seats, 1, 1.0, 1.0)
    assert not trainable_hands.any()  # without bootstrap a running episode trains nothing
