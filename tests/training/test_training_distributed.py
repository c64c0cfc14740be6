"""Data-parallel PPO on several ranks (``block_env.training.distributed``): two gloo ranks
hold bit-identical weights after every update, rank 0 alone writes one run folder whose log
counts every rank's steps, the config is global (split across ranks, refused when it does
not divide), two torchrun "nodes" make the same run as ``nproc=2``, a resume continues
exactly on the same world size and is refused on another,
Ctrl-C saves and exits 130 with no traceback, ``kill -9`` of a rank under ``torchrun
--max-restarts`` ends bit for bit as an uninterrupted run, and a rank that fails (a bad or
different config, a NaN loss, a stall past the timeout, drifting weights) stops every rank
with one line instead of a hang."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import distributed_helpers as dh  # noqa: E402
from helpers import assert_same_training, final_state  # noqa: E402

from block_env.training.config import load_config, split_across  # noqa: E402
from block_env.training.distributed import rank_seed  # noqa: E402
from block_env.training.errors import ConfigError  # noqa: E402
from block_env.training.runs import RunFolder  # noqa: E402

SMOKE = str(ROOT / "configs" / "smoke.yaml")
# 8 updates of 512 steps (256 per rank with 2 ranks); checkpoints every 2.
EIGHT = ["total_steps=4096", "checkpoint_every=2", "eval_every=3", "snapshot_every=2"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def train_cmd(run: Path, *extra: str) -> list[str]:
    return [sys.executable, str(ROOT / "train.py"), SMOKE, f"run_dir={run}", *EIGHT, *extra]


def run_cmd(cmd: list[str], timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=timeout)


def log_of(run: Path) -> list[dict]:
    return RunFolder(run).read_log()


@pytest.fixture(scope="module")
def two_rank_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An uninterrupted 2-rank run (nproc=2) of 8 updates."""
    run = tmp_path_factory.mktemp("two") / "run"
    done = run_cmd(train_cmd(run, "nproc=2"))
    assert done.returncode == 0, done.stderr
    return run


# ---------------------------------------------------------------- the config is global


def test_num_envs_and_minibatch_that_do_not_divide_are_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"num_envs=33 .*multiple of 2"):
        load_config(SMOKE, ["nproc=2", "num_envs=33"])
    with pytest.raises(ConfigError, match=r"minibatch_size=129 .*multiple of 2"):
        load_config(SMOKE, ["nproc=2", "minibatch_size=129"])
    cfg = load_config(SMOKE)  # under torchrun the world size is known only at run time
    with pytest.raises(ConfigError, match=r"num_envs=32 is not allowed with 3 ranks"):
        split_across(cfg, 3)
    assert split_across(cfg, 2) == (16, 64)
    with pytest.raises(ConfigError, match="algo=ppo"):
        load_config(SMOKE, ["nproc=2", "algo=sb3"])


def test_rank_0_keeps_the_run_seed_and_other_ranks_get_streams_of_their_own() -> None:
    assert rank_seed(7, 0) == 7
    seeds = {rank_seed(7, r) for r in range(1, 16)}
    assert len(seeds) == 15 and 7 not in seeds and all(0 <= s < 2**32 for s in seeds)


# ---------------------------------------------------------------- one run on two ranks


def test_two_ranks_hold_identical_weights_after_every_update(tmp_path: Path) -> None:
    argv = [SMOKE, f"run_dir={tmp_path / 'run'}", *EIGHT]
    (s0, (rc0, d0), _), (s1, (rc1, d1), _) = dh.run_ranks(dh.digests_per_update, 2, argv)
    assert (s0, s1, rc0, rc1) == ("ok", "ok", 0, 0)
    assert len(d0) == 8 and d0 == d1
    assert len(set(d0)) == 8  # the weights did change at every update


def test_rank_0_alone_writes_one_log_that_counts_every_rank(two_rank_run: Path) -> None:
    records = log_of(two_rank_run)
    assert [r["update"] for r in records] == list(range(1, 9))
    assert [r["env_steps"] for r in records] == [512 * u for u in range(1, 9)]
    assert all(r["world_size"] == 2 for r in records)
    assert all(r["time_allreduce"] > 0 for r in records)
    names = {p.name for p in two_rank_run.iterdir()}
    assert names == {"checkpoints", "log.jsonl", "policy.pt", "eval.txt", "eval.json", "curve.png"}
    state = final_state(two_rank_run)
    assert state["world_size"] == 2 and len(state["ranks"]) == 1  # rank 1's games and streams
    assert state["config"]["num_envs"] == 32  # the global config, as given


def test_ranks_pinned_to_cores_train_as_unpinned_ranks(two_rank_run: Path, tmp_path: Path) -> None:
    unpinned = tmp_path / "unpinned"
    done = run_cmd(train_cmd(unpinned, "nproc=2", "pin_cores=false"))
    assert done.returncode == 0, done.stderr
    assert_same_training(two_rank_run, unpinned)


def test_pin_to_cores_gives_each_local_rank_cores_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from block_env.training import distributed

    bound: list[list[int]] = []
    monkeypatch.setattr(distributed.os, "sched_getaffinity", lambda pid: {4, 5, 6, 7})
    monkeypatch.setattr(distributed.os, "sched_setaffinity", lambda pid, c: bound.append(c))
    assert distributed.pin_to_cores(1, 2, 2) == [6, 7] and bound == [[6, 7]]
    assert distributed.pin_to_cores(0, 4, 1) == [4]
    assert distributed.pin_to_cores(0, 3, 2) is None  # 6 cores wanted, 4 allowed: unchanged
    assert distributed.pin_to_cores(0, 1, 1) is None  # one rank: nothing to separate
    assert len(bound) == 2


def test_a_one_rank_launch_is_the_single_process_run(tmp_path: Path) -> None:
    alone, launched = tmp_path / "alone", tmp_path / "launched"
    assert run_cmd(train_cmd(alone)).returncode == 0
    argv = [SMOKE, f"run_dir={launched}", *EIGHT]
    ((status, rc, err),) = dh.run_ranks(dh.main_with, 1, [argv])
    assert (status, rc) == ("ok", 0), err
    assert_same_training(alone, launched)


def test_resume_on_two_ranks_continues_exactly_and_another_world_size_is_refused(
    tmp_path: Path, two_rank_run: Path
) -> None:
    run = tmp_path / "run"
    proc = subprocess.Popen(
        train_cmd(run, "nproc=2"), cwd=ROOT, env=ENV, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 120
    while len(log_of(run)) < 3 and time.monotonic() < deadline:  # stop it mid-run
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    lines = [x for x in err.splitlines() if x.startswith("train.py:")]
    assert len(lines) == 1 and "stopped by SIGINT" in lines[0], err
    assert "nproc=2" in lines[0] and lines[0].endswith("--resume")
    stopped_at = final_state(run)["update"]
    assert 0 < stopped_at < 8
    again = run_cmd(train_cmd(run, "--resume"))  # one rank: refused, nothing changed
    assert again.returncode == 2 and "on 2 rank(s)" in again.stderr
    assert again.stderr.count("\n") == 1 and final_state(run)["update"] == stopped_at
    resumed = run_cmd(train_cmd(run, "nproc=2", "--resume"))
    assert resumed.returncode == 0, resumed.stderr
    assert [r["update"] for r in log_of(run)] == list(range(1, 9))
    assert_same_training(run, two_rank_run)


# ---------------------------------------------------------------- faults


def rank_pid(launcher: int, rank: int) -> int | None:
    """The pid of a live child of ``launcher`` whose environment says RANK=rank."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            environ = (entry / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == launcher and f"RANK={rank}".encode() in environ:
            return int(entry.name)
    return None


def test_kill_9_of_a_rank_under_torchrun_restarts_and_ends_bit_for_bit(
    tmp_path: Path, two_rank_run: Path
) -> None:
    run = tmp_path / "run"
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    cmd = [*torchrun, "--nproc-per-node=2", "--max-restarts=1", *train_cmd(run, "--force")[1:]]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (
        len(log_of(run)) >= 3 and (run / "checkpoints" / "latest.pt").exists()
    ):
        time.sleep(0.02)
    victim = rank_pid(proc.pid, 1)
    assert victim is not None, "rank 1 was not found running"
    os.kill(victim, signal.SIGKILL)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    # the restart resumed (despite --force): the log has every update once
    assert [r["update"] for r in log_of(run)] == list(range(1, 9))
    assert_same_training(run, two_rank_run)


def test_nproc_names_a_rank_killed_by_a_signal(tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = subprocess.Popen(
        train_cmd(run, "nproc=2"), cwd=ROOT, env=ENV, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 120
    while len(log_of(run)) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    victim = rank_pid(proc.pid, 1)
    assert victim is not None, "rank 1 was not found running"
    os.kill(victim, signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGKILL
    assert err.strip().splitlines()[-1] == "train.py: rank 1 was killed by SIGKILL"
    assert "Traceback" not in err


def test_two_torchrun_nodes_make_the_same_run_as_nproc_2(
    tmp_path: Path, two_rank_run: Path
) -> None:
    run = tmp_path / "run"
    endpoint = f"127.0.0.1:{dh.free_port()}"
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=1"]
    rdzv = ["--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint}", "--rdzv-id=test"]
    nodes = [
        subprocess.Popen(
            [*torchrun, f"--node-rank={r}", *rdzv, *train_cmd(run)[1:]],
            cwd=ROOT,
            env=ENV,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in range(2)
    ]
    errs = [node.communicate(timeout=180)[1] for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], errs
    assert_same_training(run, two_rank_run)


def test_a_bad_config_on_one_rank_stops_every_rank_with_one_line(tmp_path: Path) -> None:
    good = [SMOKE, f"run_dir={tmp_path / 'run'}", *EIGHT]
    results = dh.run_ranks(dh.main_with, 2, [good, [*good, "lr=-1"]])
    assert [(s, rc) for s, rc, _ in results] == [("ok", 2), ("ok", 2)]
    assert results[0][2].strip().splitlines() == [
        "train.py: error: rank 1: config lr=-1.0 is not allowed: use a positive number"
    ]
    assert results[1][2] == ""  # only rank 0 speaks
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("other", "named"),
    [("seed=5", "seed: 0 vs 5"), ("total_steps=8192", "total_steps: 4096 vs 8192")],
)
def test_ranks_started_with_different_configs_are_refused(
    tmp_path: Path, other: str, named: str
) -> None:
    good = [SMOKE, f"run_dir={tmp_path / 'run'}", *EIGHT]
    results = dh.run_ranks(dh.main_with, 2, [good, [*good, other]])
    assert [(s, rc) for s, rc, _ in results] == [("ok", 2), ("ok", 2)]
    assert f"rank 1 was started with another config than rank 0 ({named})" in results[0][2]


def test_a_nan_loss_on_one_rank_stops_every_rank_and_keeps_the_checkpoint(tmp_path: Path) -> None:
    run = tmp_path / "run"
    argv = [SMOKE, f"run_dir={run}", *EIGHT]
    results = dh.run_ranks(dh.nan_loss_on_rank_1, 2, argv, 4)
    assert [(s, rc) for s, rc, _ in results] == [("ok", 1), ("ok", 1)]
    (line,) = results[0][2].strip().splitlines()
    assert line.startswith("train.py: error: update 4: rank 1: the PPO loss is nan")
    assert "the last good checkpoint" in line
    assert final_state(run)["update"] == 2


def test_a_rank_that_stops_answering_ends_the_run_after_the_timeout(tmp_path: Path) -> None:
    argv = [SMOKE, f"run_dir={tmp_path / 'run'}", *EIGHT, "dist_timeout_s=2"]
    t0 = time.monotonic()
    results = dh.run_ranks(dh.rank_1_stalls, 2, argv, 10.0, timeout=60)
    assert results[0][:2] == ("ok", 1)
    assert "lost the other ranks" in results[0][2] and "for 2 s" in results[0][2]
    assert results[1][:2] == ("ok", 1)  # the stalled rank finds rank 0 gone, and stops too
    assert time.monotonic() - t0 < 40


def test_ranks_whose_weights_drift_apart_are_stopped(tmp_path: Path) -> None:
    argv = [SMOKE, f"run_dir={tmp_path / 'run'}", *EIGHT]
    results = dh.run_ranks(dh.perturbs_rank_1, 2, argv)
    assert [(s, rc) for s, rc, _ in results] == [("ok", 1), ("ok", 1)]
    assert "after update 1 the weights of rank(s) [1] differ from rank 0's" in results[0][2]
