"""Training runs that stop and go on: exact resume on CPU (weights bit for bit, log without
duplicates), after an exception mid-update and after ``kill -9``; SIGINT/SIGTERM save a
checkpoint and exit with 130, also during the periodic evaluation."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from helpers import assert_same_training, crash_in_update, final_state  # noqa: E402

import train  # noqa: E402
from block_env.training import ppo, rollout  # noqa: E402
from block_env.training.config import load_config  # noqa: E402
from block_env.training.errors import Interrupted  # noqa: E402
from block_env.training.runs import RunFolder  # noqa: E402

SMOKE = ROOT / "configs" / "smoke.yaml"
# 6 updates of 512 steps; checkpoints every 2 so a stop leaves logged updates to cut back.
SIX = ["total_steps=3072", "checkpoint_every=2", "eval_every=3", "snapshot_every=2"]


def config(run_dir: Path, *extra: str):
    return load_config(SMOKE, [f"run_dir={run_dir}", *SIX, *extra])


def log_updates(run_dir: Path) -> list[int]:
    return [r["update"] for r in RunFolder(run_dir).read_log()]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("whole") / "run"
    train.train(config(run))
    assert log_updates(run) == [1, 2, 3, 4, 5, 6]
    return run


def test_resume_after_a_crash_mid_update_is_exact(
    tmp_path: Path, uninterrupted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    restore = crash_in_update(monkeypatch, 4)
    with pytest.raises(RuntimeError, match="simulated crash"):
        train.train(config(run))
    assert final_state(run)["update"] == 2 and log_updates(run) == [1, 2, 3]
    restore()
    assert train.main([str(SMOKE), f"run_dir={run}", *SIX, "--resume"]) == 0
    assert log_updates(run) == [1, 2, 3, 4, 5, 6]  # update 3 was logged once, then cut back
    assert_same_training(run, uninterrupted)


def test_resume_after_kill_9_is_exact(tmp_path: Path, uninterrupted: Path) -> None:
    run = tmp_path / "run"
    # A checkpoint after every update (checkpoint_every may differ on resume and changes
    # nothing in the training); kill -9 as soon as the first one is there.
    args = [str(SMOKE), f"run_dir={run}", *SIX, "checkpoint_every=1"]
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "train.py"), *args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    latest = run / "checkpoints/latest.pt"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if latest.exists():
            try:
                if torch.load(latest, weights_only=True)["update"] >= 1:
                    break
            except Exception:  # noqa: BLE001 - mid-replace on a slow disk
                pass
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert (run / "train.lock").exists()  # kill -9 leaves a stale lock behind
    assert final_state(run)["update"] < 6
    assert train.main([*args, "--resume"]) == 0  # takes the stale lock over
    assert log_updates(run) == [1, 2, 3, 4, 5, 6]
    assert not (run / "train.lock").exists()
    assert_same_training(run, uninterrupted)


def test_sigint_during_the_periodic_evaluation_saves_and_resumes_exactly(
    tmp_path: Path, uninterrupted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    real = ppo.evaluate_against
    calls = {"n": 0}

    def interrupted_evaluation(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:  # the evaluation at update 3
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # the handler raises inside this call, well before 5 s
            pytest.fail("SIGINT did not interrupt the evaluation")
        return real(*args, **kwargs)

    monkeypatch.setattr(ppo, "evaluate_against", interrupted_evaluation)
    with pytest.raises(Interrupted) as info:
        train.train(config(run))
    assert info.value.exit_status == 130 and info.value.update == 3
    state = final_state(run)
    assert state["update"] == 3 and state["owes_eval"] and json.loads(state["history"]) == []
    assert not (run / "train.lock").exists()
    monkeypatch.setattr(ppo, "evaluate_against", real)
    train.train(config(run), resume=True)
    assert log_updates(run) == [1, 2, 3, 4, 5, 6]
    assert_same_training(run, uninterrupted)


def test_sigint_to_the_command_saves_prints_the_resume_command_and_exits_130(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    args = [str(SMOKE), f"run_dir={run}", "total_steps=1e6", "eval_every=1000"]
    proc = subprocess.Popen(
        [sys.executable, "train.py", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if (run / "log.jsonl").exists() and len(log_updates(run)) >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "Traceback" not in out
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "SIGINT" in lines[0]
    python = Path(sys.executable).name
    assert lines[0].endswith(f"resume with: {python} train.py {' '.join(args)} --resume")
    state = final_state(run)
    assert state["update"] == log_updates(run)[-1] >= 2
    assert not (run / "train.lock").exists()


def test_sigterm_is_a_clean_stop_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    real = ppo.ppo_update
    calls = {"n": 0}

    def terminated_in_update_2(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            os.kill(os.getpid(), signal.SIGTERM)  # remembered: the update finishes first
        return real(*args, **kwargs)

    monkeypatch.setattr(ppo, "ppo_update", terminated_in_update_2)
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with pytest.raises(Interrupted, match="SIGTERM at update 2"):
        train.train(config(run))
    assert final_state(run)["update"] == 2 and log_updates(run) == [1, 2]
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_collector_state_round_trip_continues_the_same_games() -> None:
    cfg = load_config(SMOKE, ["num_envs=8", "rollout_steps=12", "minibatch_size=32"])
    torch.manual_seed(0)
    model = ppo.ActorCritic(ppo.NetConfig((16,)))
    a = rollout.Collector(cfg, model, "cpu", np.random.default_rng(0))
    a.reset(seed=3)
    a.collect()
    saved = a.state_dict()
    rng_state = a.rng.bit_generator.state
    first = a.collect()
    b = rollout.Collector(cfg, model, "cpu", np.random.default_rng(99))
    b.reset(seed=42)
    b.load_state_dict(saved)
    b.rng.bit_generator.state = rng_state
    second = b.collect()
    for name in ("obs", "mask", "actions", "logp", "returns"):
        assert np.array_equal(getattr(first, name), getattr(second, name)), name


@pytest.mark.parametrize(
    "game",
    [["num_players=3", "opener=highest_double"], ["num_players=4", "partnership=true"]],
    ids=["3p-highest-double", "partnership"],
)
def test_resume_is_exact_for_other_games(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, game: list[str]
) -> None:
    train.train(config(tmp_path / "whole", *game))
    real = ppo.ppo_update
    calls = {"n": 0}

    def dies_in_update_5(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:
            raise RuntimeError("simulated crash")
        return real(*args, **kwargs)

    monkeypatch.setattr(ppo, "ppo_update", dies_in_update_5)
    with pytest.raises(RuntimeError, match="simulated crash"):
        train.train(config(tmp_path / "cut", *game))
    monkeypatch.setattr(ppo, "ppo_update", real)
    train.train(config(tmp_path / "cut", *game), resume=True)
    assert log_updates(tmp_path / "cut") == [1, 2, 3, 4, 5, 6]
    assert_same_training(tmp_path / "cut", tmp_path / "whole")


def test_sigint_during_the_final_evaluation_resumes_into_the_final_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    real = ppo.finish

    def interrupted_finish(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
        pytest.fail("SIGINT did not interrupt the final evaluation")

    monkeypatch.setattr(ppo, "finish", interrupted_finish)
    with pytest.raises(Interrupted) as info:
        train.train(config(run, "total_steps=1024"))
    assert info.value.update == 2 and final_state(run)["update"] == 2
    assert not (run / "eval.txt").exists()
    monkeypatch.setattr(ppo, "finish", real)
    summary = train.train(config(run, "total_steps=1024"), resume=True)
    assert (run / "eval.txt").is_file() and set(summary["final"]) == {"random", "greedy"}
    assert log_updates(run) == [1, 2]
