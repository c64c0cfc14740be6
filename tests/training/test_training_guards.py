"""Training refuses what cannot work, before it runs, with one clear line: impossible or
unsafe configs, bad config files, occupied or locked run folders, unreadable checkpoints;
and a run whose losses turn non-finite stops without replacing its last good checkpoint."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import train  # noqa: E402
from block_env.training import ppo, rollout  # noqa: E402
from block_env.training.config import load_config, run_dir_of  # noqa: E402
from block_env.training.errors import BadCheckpoint, ConfigError, Diverged  # noqa: E402
from block_env.training.runs import RunFolder, read_checkpoint  # noqa: E402

SMOKE = ROOT / "configs" / "smoke.yaml"


def cli(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str]:
    """Exit status and stderr of ``train.py args`` run in this process."""
    status = train.main([str(a) for a in args])
    err = capsys.readouterr().err
    return status, err


def one_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# ---------------------------------------------------------------- configs


@pytest.mark.parametrize(
    ("override", "key", "allowed"),
    [
        ("minibatch_size=1", "minibatch_size", "at least 2"),
        ("minibatch_size=600", "minibatch_size", "at most num_envs x rollout_steps = 512"),
        ("num_envs=1", "minibatch_size", "raise num_envs"),  # smoke: 1 x 16 < 128
        ("lr=inf", "lr", "finite"),
        ("lr=.nan", "lr", "finite"),
        ("lr=0", "lr", "positive"),
        ("ent_coef=-inf", "ent_coef", "finite"),
        ("gamma=nan", "gamma", "finite"),
        ("total_steps=1e400", "total_steps", "int"),
        ("max_grad_norm=0", "max_grad_norm", "positive"),
        ("seed=-1", "seed", "[0, 2**32)"),
        ("seed=4294967296", "seed", "[0, 2**32)"),
        ("eval_opponents=[]", "eval_opponents", "at least one"),
        ("eval_opponents=[random,random]", "eval_opponents", "once"),
        ("name=../../x", "name", "no path separators"),
        ("name=a/b", "name", "no path separators"),
        ("name=..", "name", "no path separators"),
        ("name=", "name", "letters"),
        ("run_dir=../../x", "run_dir", "inside runs/"),
        ("run_dir=runs/../../x", "run_dir", "inside runs/"),
        ("run_dir=runs", "run_dir", "inside runs/"),
        ("run_dir=runs/{nme}", "run_dir", "{name}"),
        ("algo=dqn", "algo", "ppo, sb3, rllib"),
    ],
)
def test_impossible_configs_are_refused_naming_the_key(
    override: str, key: str, allowed: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(SMOKE, [override])
    text = str(info.value)
    assert text.startswith(f"config {key}=") or f"{key}" in text.split(":")[0], text
    assert allowed in text, text


def test_accepted_run_folders_stay_inside_runs_or_are_explicitly_absolute(tmp_path: Path) -> None:
    root = run_dir_of(load_config(None, []))
    assert root.parent.name == "runs" and root.name == "2p"
    assert run_dir_of(load_config(None, ["name=a.b-c_1"])).name == "a.b-c_1"
    assert run_dir_of(load_config(None, [f"run_dir={tmp_path}/x"])) == tmp_path / "x"
    assert run_dir_of(load_config(None, ["run_dir=runs/sub/{name}"])).parts[-3:] == (
        "runs",
        "sub",
        "2p",
    )


@pytest.mark.parametrize(
    "overrides",
    [["num_envs=1", "minibatch_size=16"], ["num_envs=2", "minibatch_size=2"]],
    ids=["num_envs=1", "num_envs=2"],
)
def test_tiny_batches_train_to_finite_weights(tmp_path: Path, overrides: list[str]) -> None:
    # With 1 or 2 games a rollout can end with 0 or 1 trainable decisions: that update is
    # skipped (no advantages to normalise) instead of producing NaN.
    cfg = load_config(SMOKE, [f"run_dir={tmp_path / 'run'}", *overrides, "total_steps=160"])
    train.train(cfg)
    state = torch.load(tmp_path / "run/checkpoints/latest.pt", weights_only=True)
    assert state["update"] == cfg.total_steps // (cfg.num_envs * cfg.rollout_steps)
    assert all(torch.isfinite(w).all() for w in state["policy"]["weights"].values())
    for record in RunFolder(tmp_path / "run").read_log():
        for k in ("pg", "vf", "ent"):
            assert k not in record or math.isfinite(record[k]), record


def test_ppo_update_skips_a_batch_of_one_decision() -> None:
    cfg = load_config(SMOKE, ["minibatch_size=2"])
    model = ppo.ActorCritic(ppo.NetConfig((8,), privileged_critic=False))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    one = rollout.Batch(
        obs=torch.zeros(1, 122).numpy(),
        priv=torch.zeros(1, 0).numpy(),
        mask=torch.ones(1, 57, dtype=torch.int8).numpy(),
        actions=torch.zeros(1, dtype=torch.int64).numpy(),
        logp=torch.zeros(1).numpy(),
        values=torch.zeros(1).numpy(),
        advantages=torch.ones(1).numpy(),
        returns=torch.ones(1).numpy(),
        teacher=torch.zeros(1, dtype=torch.int64).numpy(),
        hands=1,
        reward_sum=1.0,
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    assert ppo.ppo_update(model, optimizer, one, cfg, "cpu", torch.Generator()) == {}
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


# ---------------------------------------------------------------- non-finite training


def test_nan_loss_stops_the_run_and_keeps_the_last_good_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    run = tmp_path / "run"
    real_update, real_entropy = ppo.ppo_update, ppo.log_softmax_entropy
    poison = {"on": False, "updates": 0}

    def update(*args, **kwargs):
        poison["updates"] += 1
        poison["on"] = poison["updates"] == 3
        return real_update(*args, **kwargs)

    def entropy(masked):
        logp, ent = real_entropy(masked)
        return logp, ent * math.nan if poison["on"] else ent

    monkeypatch.setattr(ppo, "ppo_update", update)
    monkeypatch.setattr(ppo, "log_softmax_entropy", entropy)
    status, err = cli(capsys, SMOKE, f"run_dir={run}")
    line = one_line(err)
    assert status == 1
    assert "update 3" in line and "loss is nan" in line and "is kept" in line
    state = torch.load(run / "checkpoints/latest.pt", weights_only=True)
    assert state["update"] == 2
    assert all(torch.isfinite(w).all() for w in state["policy"]["weights"].values())
    assert [r["update"] for r in RunFolder(run).read_log()] == [1, 2]
    assert not (run / "train.lock").exists()
    # The good checkpoint is still a good start.
    monkeypatch.setattr(ppo, "ppo_update", real_update)
    monkeypatch.setattr(ppo, "log_softmax_entropy", real_entropy)
    assert train.main([str(SMOKE), f"run_dir={run}", "--resume"]) == 0
    assert [r["update"] for r in RunFolder(run).read_log()] == [1, 2, 3, 4]


def test_exploding_weights_stop_before_the_next_rollout(tmp_path: Path) -> None:
    cfg = load_config(SMOKE, [f"run_dir={tmp_path / 'run'}", "lr=1e30", "anneal_lr=false"])
    with pytest.raises(Diverged, match="not finite|is nan|is inf"):
        train.train(cfg)
    assert not (tmp_path / "run/checkpoints/latest.pt").exists()


# ---------------------------------------------------------------- command line errors


def test_config_file_problems_are_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    status, err = cli(capsys, tmp_path / "missing.yaml")
    assert status == 2 and "missing.yaml does not exist" in one_line(err)
    evil = tmp_path / "evil.yaml"
    marker = tmp_path / "pwned"
    evil.write_text(f"name: !!python/object/apply:os.system ['touch {marker}']\n")
    status, err = cli(capsys, evil)
    assert status == 2 and "not plain YAML" in one_line(err) and "evil.yaml" in err
    assert not marker.exists()
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\nnum_envs: 4\n")
    status, err = cli(capsys, broken)
    assert status == 2 and "broken.yaml is not plain YAML" in one_line(err)
    listing = tmp_path / "list.yaml"
    listing.write_text("- a\n- b\n")
    status, err = cli(capsys, listing)
    assert status == 2 and "mapping" in one_line(err)
    status, err = cli(capsys, SMOKE, "hidden=[1,")
    assert status == 2 and "not valid YAML" in one_line(err)


def test_existing_run_and_missing_checkpoint_are_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run = tmp_path / "run"
    status, err = cli(capsys, SMOKE, f"run_dir={run}", "--resume")
    assert status == 2 and "nothing to resume" in one_line(err)
    assert not run.exists()  # a refused run leaves nothing behind
    assert cli(capsys, SMOKE, f"run_dir={run}", "total_steps=512")[0] == 0
    status, err = cli(capsys, SMOKE, f"run_dir={run}", "total_steps=512")
    assert status == 2 and "already holds a run" in one_line(err) and "--force" in err
    status, err = cli(capsys, SMOKE, f"run_dir={run}", "--resume", "--checkpoint", run / "no.pt")
    assert status == 2 and "no.pt" in one_line(err)
    status, err = cli(capsys, SMOKE, f"run_dir={run}", "hidden=[16]", "--resume")
    assert status == 2 and "different config" in one_line(err) and "hidden" in err


def test_real_command_line_error_has_no_traceback(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "train.py", str(tmp_path / "nope.yaml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert one_line(done.stderr).startswith("train.py: error: config file")


# ---------------------------------------------------------------- checkpoints


def bad_checkpoints(tmp_path: Path, good: Path) -> dict[str, Path]:
    files = {"empty": b"", "text": b"this is not a checkpoint\n"}
    data = good.read_bytes()
    files["truncated"] = data[: len(data) // 2]
    out = {}
    for name, content in files.items():
        path = tmp_path / f"{name}.pt"
        path.write_bytes(content)
        out[name] = path
    plain = tmp_path / "tensor.pt"
    torch.save(torch.zeros(3), plain)
    out["a tensor"] = plain
    return out


def test_unreadable_checkpoints_name_the_file_and_what_was_expected(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run = tmp_path / "run"
    assert cli(capsys, SMOKE, f"run_dir={run}", "total_steps=512")[0] == 0
    for kind, path in bad_checkpoints(tmp_path, run / "checkpoints/latest.pt").items():
        with pytest.raises(BadCheckpoint) as info:
            read_checkpoint(path)
        assert isinstance(info.value, ValueError)
        assert str(path) in str(info.value) and "train.py checkpoint" in str(info.value), kind
        status, err = cli(capsys, SMOKE, f"run_dir={run}", "--resume", "--checkpoint", path)
        line = one_line(err)
        assert status == 2 and str(path) in line and "torch.save" in line, (kind, line)
        # The policy loader reads checkpoints too: a ValueError naming the file.
        import agents

        with pytest.raises(ValueError, match=str(path)):
            agents.load(str(path))


# ---------------------------------------------------------------- the run-folder lock


HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, str(os.getpid()).encode())
print("locked", flush=True)
time.sleep(120)
"""


def test_a_live_process_holding_the_lock_refuses_a_second_run(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(run / "train.lock")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        status, err = cli(capsys, SMOKE, f"run_dir={run}")
        line = one_line(err)
        assert status == 2 and f"in use by process {holder.pid}" in line
        assert sorted(p.name for p in run.iterdir()) == ["train.lock"]  # nothing touched
        assert (run / "train.lock").read_text().strip() == str(holder.pid)
        status, err = cli(capsys, SMOKE, f"run_dir={run}", "--force")
        assert status == 2 and "in use" in one_line(err)
    finally:
        holder.kill()
        holder.wait()
    # Its holder gone (killed: nothing cleaned up), the folder is free again.
    assert cli(capsys, SMOKE, f"run_dir={run}", "total_steps=512")[0] == 0
    assert not (run / "train.lock").exists()


def test_a_stale_lock_file_is_taken_over(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run = tmp_path / "run"
    run.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (run / "train.lock").write_text(f"{dead.pid}\n")  # a dead process's pid
    assert cli(capsys, SMOKE, f"run_dir={run}", "total_steps=512")[0] == 0
    assert not (run / "train.lock").exists()  # released at the end
    # A live pid that holds no lock (a recycled pid) and garbage are stale too.
    (run / "train.lock").write_text(f"{os.getppid()}\n")
    assert cli(capsys, SMOKE, f"run_dir={run}", "total_steps=1024", "--resume")[0] == 0
    (run / "train.lock").write_text("garbage")
    assert cli(capsys, SMOKE, f"run_dir={run}", "total_steps=1536", "--resume")[0] == 0


def test_two_runs_started_together_one_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    cmd = [sys.executable, "train.py", str(SMOKE), f"run_dir={run}", "total_steps=4096"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    results = [(p.wait(timeout=300), p.stderr.read().decode()) for p in procs]
    assert sorted(r for r, _ in results) == [0, 2], results
    refused = next(e for r, e in results if r == 2)
    assert "in use by process" in refused or "already holds a run" in refused
    assert [r["update"] for r in RunFolder(run).read_log()] == list(range(1, 9))


def test_a_checkpoint_with_non_finite_weights_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run = tmp_path / "run"
    assert cli(capsys, SMOKE, f"run_dir={run}", "total_steps=512")[0] == 0
    state = torch.load(run / "checkpoints/latest.pt", weights_only=True)
    next(iter(state["policy"]["weights"].values()))[0] = math.nan
    poisoned = tmp_path / "poisoned.pt"
    torch.save(state, poisoned)
    status, err = cli(capsys, SMOKE, f"run_dir={run}", "--resume", "--checkpoint", poisoned)
    assert status == 2 and "not finite" in one_line(err) and str(poisoned) in err


def test_sb3_runs_refuse_resume_instead_of_ignoring_it(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    status, err = cli(capsys, SMOKE, f"run_dir={tmp_path / 'run'}", "algo=sb3", "--resume")
    assert status == 2 and "cannot be resumed" in one_line(err)
    assert not (tmp_path / "run").exists()


def test_a_checkpoint_whose_training_state_does_not_fit_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run = tmp_path / "run"
    assert cli(capsys, SMOKE, f"run_dir={run}", "total_steps=512")[0] == 0
    state = torch.load(run / "checkpoints/latest.pt", weights_only=True)
    del state["collector"]["env"]["arrays"]["hands"]  # as if the engine had changed
    odd = tmp_path / "odd.pt"
    torch.save(state, odd)
    status, err = cli(capsys, SMOKE, f"run_dir={run}", "--resume", "--checkpoint", odd)
    assert status == 2 and "does not fit" in one_line(err) and str(odd) in err


def test_checkpoint_written_before_the_teacher_and_obs_type_keys_resumes_as_it_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run = tmp_path / "run"
    assert cli(capsys, SMOKE, f"run_dir={run}", "total_steps=512", "teacher=none")[0] == 0
    latest = run / "checkpoints" / "latest.pt"
    state = torch.load(latest, weights_only=True)
    for key in ("teacher", "teacher_coef", "teacher_steps", "obs_type"):
        del state["config"][key]  # as a checkpoint of the same format written before them
    torch.save(state, latest)
    status, err = cli(capsys, SMOKE, f"run_dir={run}", "total_steps=1024", "--resume")
    assert status == 2 and "teacher: checkpoint 'none' vs now 'auto'" in one_line(err)
    assert "obs_type" not in err  # a missing obs_type is the plain observation
    resumed = [f"run_dir={run}", "total_steps=1024", "teacher=none", "--resume"]
    assert cli(capsys, SMOKE, *resumed)[0] == 0
