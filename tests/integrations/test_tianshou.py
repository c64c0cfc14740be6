"""Tianshou 2.0 on the unchanged env: its PettingZooEnv adapter, multi-agent manager, masked
policies and Collector take block-env's flat infos into the replay buffer; the DQN example
trains and plays only legal moves. Needs the integrations extra (``bash
.ci/extra-integrations``); skipped without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tianshou", reason="needs the integrations extra: bash .ci/extra-integrations")

from hand_scoring import INFO_KEYS, expected_points, zero_sum  # noqa: E402
from tianshou.algorithm import (  # noqa: E402
    MARLRandomDiscreteMaskedOffPolicyAlgorithm,
    MultiAgentOffPolicyAlgorithm,
)
from tianshou.data import Batch, Collector, CollectStats, VectorReplayBuffer  # noqa: E402
from tianshou.env import DummyVectorEnv  # noqa: E402
from tianshou.env.pettingzoo_env import PettingZooEnv  # noqa: E402

import block_env  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def collected() -> tuple[Batch, int]:
    """The transitions of at least 2,000 steps of 3-player match play by Tianshou's masked
    random policies, as stored in its replay buffer."""
    players = 3

    def make() -> PettingZooEnv:
        return PettingZooEnv(block_env.env(num_players=players))

    envs = DummyVectorEnv([make] * 4)
    envs.seed(0)
    np.random.seed(0)
    env = make()
    manager = MultiAgentOffPolicyAlgorithm(
        algorithms=[
            MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
            for _ in env.agents
        ],
        env=env,
    )
    buffer = VectorReplayBuffer(10_000, len(envs))
    collector = Collector[CollectStats](manager, envs, buffer)
    collector.reset()
    stats = collector.collect(n_step=2400)
    assert stats.n_collected_steps >= 2000
    stored = buffer[buffer.sample_indices(0)]  # every stored transition (not the empty slots)
    assert len(stored) == stats.n_collected_steps
    return stored, players


def test_buffer_holds_the_flat_infos(collected: tuple[Batch, int]) -> None:
    stored, n = collected
    assert len(stored) >= 2000
    info = stored.info
    assert set(info.keys()) >= INFO_KEYS
    assert set(info.keys()) - INFO_KEYS <= {"env_id"}  # Tianshou adds the env index
    for key in ("hand_pips", "hand_points", "match_winners"):
        assert info[key].shape == (len(stored), n)
    for key in ("hand_over", "hand_blocked", "match_over"):
        assert info[key].dtype == bool


def test_every_stored_action_was_legal(collected: tuple[Batch, int]) -> None:
    stored, _ = collected
    mask = np.asarray(stored.obs.mask, dtype=bool)
    act = np.asarray(stored.act)
    assert mask.shape == (len(stored), block_env.STANDARD_NUM_ACTIONS)
    assert mask[np.arange(len(stored)), act].all()


def test_hand_results_match_the_scoring(collected: tuple[Batch, int]) -> None:
    stored, n = collected
    info, rew = stored.info, np.asarray(stored.rew)
    over = info.hand_over
    assert over.sum() >= 100  # plenty of finished hands to check
    # Steps that end no hand carry no result and pay nothing.
    assert not info.hand_points[~over].any() and not info.hand_pips[~over].any()
    assert (info.hand_winner[~over] == -1).all() and not rew[~over].any()
    for i in np.flatnonzero(over):
        pips, points = info.hand_pips[i], info.hand_points[i]
        winner, expected = expected_points(
            pips, bool(info.hand_blocked[i]), int(info.hand_winner[i])
        )
        assert info.hand_winner[i] == winner
        np.testing.assert_array_equal(points, expected)
        # zero_sum rewards on the hand's last step, to every seat: they sum to zero per hand
        # and are +points for the scorer, -points/(n-1) for each other seat.
        assert rew[i].sum() == pytest.approx(0.0)
        np.testing.assert_allclose(rew[i], zero_sum(points))


def test_match_results(collected: tuple[Batch, int]) -> None:
    stored, _ = collected
    info = stored.info
    ended = np.flatnonzero(info.match_over)
    assert len(ended) >= 1
    assert (info.hand_over[ended]).all()  # a match ends with a hand
    assert (info.match_winner[~info.match_over] == -1).all()
    assert not info.match_winners[~info.match_over].any()
    for i in ended:
        winners = np.flatnonzero(info.match_winners[i])
        assert info.match_winner[i] == (winners[0] if len(winners) == 1 else -1)
    assert np.asarray(stored.terminated)[ended].all()


def run_example(script: str, tmp_path: Path) -> dict:
    out = tmp_path / "out.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), "--smoke", "--json", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "vs random" in proc.stdout
    return json.loads(out.read_text())


def test_dqn_example_smoke(tmp_path: Path) -> None:
    res = run_example("tianshou_dqn.py", tmp_path)
    assert res["env_steps"] >= 600 and res["gradient_steps"] > 0
    assert np.isfinite(res["last_loss"])
    # block_env.evaluate plays a raw env, which raises on an illegal move: finishing the
    # evaluation means every move of the greedy Q-policy was legal.
    for phase in ("before", "after"):
        assert res[phase]["hands"] >= 40
        assert np.isfinite(res[phase]["margin"]) and 0.0 <= res[phase]["hand_win"] <= 1.0
