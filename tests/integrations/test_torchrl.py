"""TorchRL 0.14 on the unchanged env: ``PettingZooWrapper(use_mask=True)`` carries the hand
results into the tensordict, masks hold, a Collector gathers frames for the masked PPO
example, and the example trains. Needs the integrations extra (``bash
.ci/extra-integrations``); skipped without it."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

pytest.importorskip("torchrl", reason="needs the integrations extra: bash .ci/extra-integrations")

import torch  # noqa: E402
from hand_scoring import INFO_KEYS, expected_points, zero_sum  # noqa: E402
from torchrl.collectors import Collector  # noqa: E402
from torchrl.envs import PettingZooWrapper  # noqa: E402
from torchrl.envs.utils import MarlGroupMapType, check_env_specs  # noqa: E402

import block_env  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("torchrl_ppo", ROOT / "examples/torchrl_ppo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wrap(**config) -> PettingZooWrapper:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PettingZoo in TorchRL is tested")
        return PettingZooWrapper(
            block_env.env(**config),
            use_mask=True,
            group_map=MarlGroupMapType.ALL_IN_ONE_GROUP,
            categorical_actions=True,
            seed=0,
        )


def acting_seats(td) -> np.ndarray:
    acting = td["agents", "mask"].numpy()
    assert (acting.sum(-1) == 1).all(), "exactly one seat acts at each step"
    return acting.argmax(-1)


def test_specs_and_info_keys() -> None:
    env = wrap(num_players=3)
    check_env_specs(env)
    assert set(env.observation_spec["agents", "info"].keys()) == INFO_KEYS


@pytest.mark.parametrize("seed", range(4))
def test_rollout_carries_the_hand_results(seed: int) -> None:
    """A whole 3-player match: every hand's result reaches the tensordict on the step that
    ends it, equals the scoring of the pips left, pays the zero-sum rewards to every seat,
    and the points add up to the env's final match scores."""
    torch.manual_seed(seed)  # TorchRL draws the random actions from torch's generator
    env = wrap(num_players=3, target_score=40)
    env.set_seed(seed)
    td = env.rollout(5000, break_when_any_done=True)
    info = td["next", "agents", "info"]
    assert td["next", "done"][-1].item(), "the match ended inside the rollout"
    # every seat sees the same results
    for key in INFO_KEYS:
        value = info[key]
        assert torch.equal(value, value[:, :1].expand_as(value)), key
    over = info["hand_over"][:, 0].bool().numpy()
    pips = info["hand_pips"][:, 0].numpy().astype(np.int64)
    points = info["hand_points"][:, 0].numpy().astype(np.int64)
    winner = info["hand_winner"][:, 0].numpy().astype(np.int64)
    blocked = info["hand_blocked"][:, 0].bool().numpy()
    reward = td["next", "agents", "reward"][..., 0].numpy()
    assert over.sum() >= 1 and over[-1]
    assert not points[~over].any() and not reward[~over].any() and (winner[~over] == -1).all()
    for t in np.flatnonzero(over):
        want_winner, want_points = expected_points(pips[t], bool(blocked[t]), int(winner[t]))
        assert winner[t] == want_winner
        np.testing.assert_array_equal(points[t], want_points)
        np.testing.assert_allclose(reward[t], zero_sum(points[t]))
    scores = np.asarray(env._env.unwrapped.scores)
    np.testing.assert_array_equal(points[over].sum(0), scores)
    assert max(scores) >= 40
    match_over = info["match_over"][:, 0].bool().numpy()
    assert match_over[-1] and not match_over[:-1].any()
    match_winner = int(info["match_winner"][-1, 0])
    winners = np.flatnonzero(info["match_winners"][-1, 0].numpy())
    assert match_winner == (winners[0] if len(winners) == 1 else -1)
    if match_winner >= 0:
        assert scores[match_winner] == max(scores)
    # the random actions TorchRL drew from the masked action spec were all legal
    seats = acting_seats(td)
    steps = np.arange(len(td))
    mask = td["agents", "action_mask"].numpy()[steps, seats]
    action = td["agents", "action"].numpy()[steps, seats]
    assert mask[np.arange(len(td)), action].all()


def test_collector_frames_and_decisions() -> None:
    """The PPO example's policy in a Collector: legal actions only, and ``decisions()``
    gives each kept decision its seat's zero-sum hand reward as the return."""
    ppo = load_example()
    torch.manual_seed(0)
    net = ppo.mlp(block_env.STANDARD_NUM_ACTIONS, (32,))
    collector = Collector(
        ppo.make_env(2, 0),
        ppo.make_actor(net, ppo.GROUP),
        frames_per_batch=300,
        total_frames=300,
        auto_register_policy_transforms=False,
    )
    batch = next(iter(collector))
    collector.shutdown()
    assert batch.shape == (300,)
    seats = acting_seats(batch)
    steps = np.arange(300)
    mask = batch["agents", "action_mask"].numpy()[steps, seats]
    action = batch["agents", "action"].numpy()[steps, seats]
    assert mask[steps, action].all()
    assert ("next", "agents", "info", "hand_points") in batch.keys(True)

    scale = 0.05
    rows = ppo.decisions(batch, scale)
    done = batch["next", "done"][:, 0].numpy()
    last_end = np.flatnonzero(done)[-1]
    assert len(rows) == last_end + 1  # decisions of the unfinished last hand are left out
    points = batch["next", "agents", "info", "hand_points"][:, 0].numpy()
    hand_end = np.array([np.flatnonzero(done[t:])[0] + t for t in range(last_end + 1)])
    want = np.array([zero_sum(points[e])[s] for e, s in zip(hand_end, seats[: last_end + 1])])
    np.testing.assert_allclose(rows["value_target"][:, 0].numpy(), want * scale, atol=1e-6)
    np.testing.assert_array_equal(rows["action"].numpy(), action[: last_end + 1])


def test_ppo_example_smoke(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples/torchrl_ppo.py"), "--smoke", "--json", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    res = json.loads(out.read_text())
    assert res["frames"] == 400 and res["updates"] > 0 and res["decisions_used"] > 0
    assert all(np.isfinite(v) for v in res["last_losses"].values())
    # block_env.evaluate plays a raw env, which raises on an illegal move: finishing the
    # evaluation means every move of the greedy policy was legal.
    for phase in ("before", "after"):
        assert res[phase]["hands"] >= 40
        assert np.isfinite(res[phase]["margin"]) and 0.0 <= res[phase]["hand_win"] <= 1.0
