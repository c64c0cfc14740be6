"""The native PPO's callbacks and resolved settings: a callback sees every update's record and
every evaluation, what it adds to a record is logged, the NashConv probe is attached by the
command line only when the config asks for it, and ``ppo.py`` does not import it."""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import train  # noqa: E402
from block_env.training import ppo, probes  # noqa: E402
from block_env.training.config import load_config  # noqa: E402
from block_env.training.distributed import Ranks  # noqa: E402
from block_env.training.errors import ConfigError  # noqa: E402
from block_env.training.runs import RunFolder  # noqa: E402

SMOKE = ROOT / "configs" / "smoke.yaml"
PPO_SOURCE = ROOT / "block_env" / "training" / "ppo.py"


class Recorder(ppo.Callback):
    """Keeps what the loop hands it, and adds ``doubled`` to every record."""

    def __init__(self) -> None:
        self.started: list[int] = []
        self.records: list[dict[str, Any]] = []
        self.entries: list[dict[str, Any]] = []

    def on_start(self, spec: ppo.RunSpec, model: Any) -> None:
        self.started.append(spec.total_updates)

    def on_update(self, spec: ppo.RunSpec, model: Any, record: dict[str, Any]) -> None:
        record["doubled"] = 2 * record["update"]
        self.records.append(dict(record))

    def on_evaluation(self, spec: ppo.RunSpec, model: Any, entry: dict[str, Any]) -> None:
        self.entries.append(json.loads(json.dumps(entry)))


def test_a_callback_sees_every_record_and_every_evaluation(tmp_path: Path) -> None:
    run = tmp_path / "run"
    cfg = load_config(SMOKE, [f"run_dir={run}", "total_steps=1536", "eval_every=2"])
    recorder = Recorder()
    summary = ppo.train_ppo(cfg, callbacks=[recorder])
    assert recorder.started == [3]  # once, knowing the run's 3 updates
    log = RunFolder(run).read_log()
    assert [r["update"] for r in recorder.records] == [1, 2, 3]
    assert [r["doubled"] for r in log] == [2, 4, 6]  # what a callback adds is logged
    assert [r["pg"] for r in recorder.records] == [r["pg"] for r in log]
    # update 2 (eval_every) and update 3 (the last), each with its figures per opponent
    assert [e["update"] for e in recorder.entries] == [2, 3]
    assert recorder.entries == summary["history"]
    assert set(recorder.entries[0]["eval"]) == {"random", "greedy"}
    assert set(recorder.entries[0]["eval"]["greedy"]) == {"margin", "lo", "hi", "hand_win"}


def test_the_nashconv_probe_is_attached_only_when_configured() -> None:
    assert probes.callbacks_of(load_config(SMOKE, [])) == []
    (callback,) = probes.callbacks_of(load_config(SMOKE, ["nashconv_every=2"]))
    assert isinstance(callback, probes.NashConvCallback)
    with pytest.raises(ValueError, match="nashconv_every=0"):
        probes.NashConvCallback(load_config(SMOKE, []))


def test_train_py_logs_nash_conv_through_the_callback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe (here a stand-in: the sum of the first weight matrix) is measured every
    ``nashconv_every`` updates and after the last, and only when configured."""
    games: list[tuple] = []

    def stand_in(cfg: Any) -> Any:
        games.append((cfg.num_players, cfg.max_pip, cfg.hand_size))
        return lambda model: float(next(model.parameters()).detach().sum())

    monkeypatch.setattr(probes, "nashconv_probe", stand_in)
    run = tmp_path / "run"
    common = [str(SMOKE), f"run_dir={run}", "total_steps=1536"]
    assert train.main([*common, "nashconv_every=2"]) == 0
    log = RunFolder(run).read_log()
    assert [r["update"] for r in log if "nash_conv" in r] == [2, 3]
    assert all(isinstance(r["nash_conv"], float) for r in log if "nash_conv" in r)
    assert games == [(2, 6, 0)]  # built once, for the run's game
    assert train.main([*common, "--force"]) == 0
    assert not any("nash_conv" in r for r in RunFolder(run).read_log())
    assert games == [(2, 6, 0)]


def test_a_missing_open_spiel_is_a_config_error_naming_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "block_env.openspiel.probe", None)  # import fails
    status = train.main([str(SMOKE), f"run_dir={tmp_path / 'r'}", "nashconv_every=1"])
    assert status == 2
    err = capsys.readouterr().err
    assert "nashconv_every=1 needs open_spiel" in err
    assert not (tmp_path / "r" / "log.jsonl").exists()


def _imported_modules(path: Path) -> set[str]:
    """Every module an ``import`` statement of the file names (inside functions too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_ppo_does_not_import_openspiel_or_the_probes() -> None:
    imported = _imported_modules(PPO_SOURCE)
    assert "block_env.training.rollout" in imported  # the check reads ppo.py's imports
    banned = [m for m in imported if m.startswith(("block_env.openspiel", "block_env.training.p"))]
    assert banned == []
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, block_env.training.ppo; "
            "print(sorted(m for m in sys.modules if 'openspiel' in m or m.endswith('probes')))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert loaded.stdout.strip() == "[]"


def test_the_run_spec_is_frozen_and_resolved_once_per_rank() -> None:
    cfg = load_config(SMOKE, ["teacher_coef=2", "teacher_steps=1000", "total_steps=1537"])
    spec = ppo.RunSpec.of(cfg, "cpu", Ranks(rank=1, world_size=2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.lr = 1.0  # type: ignore[misc]
    cfg.lr = 1.0  # the spec holds its own copy of the config
    assert spec.config.lr == 0.0003 and spec.lr == 0.0003
    assert (spec.num_envs, spec.minibatch_size) == (16, 64)  # rank 1's halves
    assert spec.seed != cfg.seed and spec.steps_per_update == 512
    assert spec.total_updates == 4  # 1537 steps need a 4th update
    assert [spec.due(u, 3) for u in (1, 2, 3, 4)] == [False, False, True, True]
    for steps in (0, 250, 999, 1000, 5000):
        assert spec.teacher_weight(steps) == ppo.teacher_weight(cfg, steps)
    untaught = ppo.RunSpec.of(load_config(SMOKE, ["teacher=none"]), "cpu", Ranks.single())
    assert untaught.teacher_weight(0) == 0.0


def test_a_split_that_does_not_divide_is_refused_when_the_spec_is_made() -> None:
    with pytest.raises(ConfigError, match="num_envs=32 is not allowed with 3 ranks"):
        ppo.RunSpec.of(load_config(SMOKE, []), "cpu", Ranks(rank=0, world_size=3))
