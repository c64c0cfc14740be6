"""tools/rerun_results.py: which rows it re-runs, how it judges a re-run, and that recording
touches only the identical rows' lines."""

from __future__ import annotations

import copy
import csv
import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import rerun_results  # noqa: E402

COLUMNS = ["file", "kind", "agents", "hands", "command", "rerun", "note"]
EVAL = "python -m block_env.evaluate random greedy --hands 20 --seed 3 --json {out}"


def row(file: str, command: str, kind: str = "evaluate", agents: str = "random;greedy") -> dict:
    return dict(zip(COLUMNS, [file, kind, agents, "20", command, "not re-run", "a note"]))


def test_chosen_rows_keep_plain_evaluations_within_the_filters() -> None:
    rows = [
        row("a.json", EVAL.format(out="a.json")),
        row("b.json", EVAL.format(out="b.json"), agents="pimc-20;rules"),
        row("c.json", EVAL.format(out="c.json"), kind="ladder"),
        row("d.json", "python train.py && cp runs/2p/eval.json d.json"),
        row("e.json", "python -m block_env.evaluate random greedy --hands 20"),  # no --json
    ]
    chosen = rerun_results.chosen_rows(rows, "evaluate", "pimc", 10**9)
    assert [r["file"] for r in chosen] == ["a.json"]
    assert rerun_results.chosen_rows(rows, "evaluate", "pimc", 10) == []  # 20 hands > 10
    assert rerun_results.chosen_rows(rows, "evaluate", "", 10**9, files="^b") == [rows[1]]


def test_benchmark_rows_are_chosen_by_their_own_command() -> None:
    bench = "python -m block_env.benchmark rules --task block-2p-v1 --json b.json"
    rows = [row("b.json", bench, kind="benchmark"), row("e.json", EVAL.format(out="e.json"))]
    assert rerun_results.chosen_rows(rows, "benchmark", "", 10**9) == [rows[0]]
    assert rerun_results.chosen_rows(rows, "evaluate", "", 10**9) == [rows[1]]


def test_a_benchmark_file_is_judged_on_its_figures_only() -> None:
    listed = {
        "agent": {"spec": "block-2p", "id": "block-2p@82065c70"},
        "rows": [{"opponent": "rules", "margin": {"mean": 0.5, "hi": 0.7}, "seconds": 9.7}],
        "wall_s": 30.2,
        "command": "python -m block_env.benchmark block-2p --json old.json",
        "versions": {"numpy": "2.4.6"},
        "machine": {"cpus": 2},
    }
    fresh = copy.deepcopy(listed)  # the same figures, written elsewhere by newer code:
    fresh.update(wall_s=25.0, command="... --json /tmp/rerun.json", machine={"cpus": 16})
    fresh.update(versions={"numpy": "2.5.0"})
    fresh["agent"]["spec"] = "/tmp/x/block-2p@82065c70.pt"
    fresh["rows"][0].update(seconds=7.1, matches=0, match_win=None)  # fields it added
    compare = rerun_results.compare
    assert compare(listed, fresh) == "identical"
    fresh["rows"][0]["margin"]["hi"] = 0.7 * (1 + 1e-15)
    rounding = "identical but for float rounding: rows (1e-15 relative at most)"
    assert compare(listed, fresh) == rounding
    fresh["rows"][0]["margin"]["hi"] = 0.71
    assert compare(listed, fresh) == "different: rows"
    del fresh["rows"][0]["margin"]["hi"]  # a listed figure gone
    assert compare(listed, fresh) == "different: rows"
    fresh["rows"][0]["margin"]["hi"], fresh["agent"]["id"] = 0.7, "block-2p@00000000"
    assert compare(listed, fresh) == "different: agent"


@pytest.fixture
def listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """A manifest in tmp_path listing one small evaluation written by its own command."""
    out = tmp_path / "2p" / "random_vs_greedy.json"
    out.parent.mkdir()
    command = EVAL.format(out=out)
    subprocess.run([sys.executable, *command.split()[1:]], cwd=ROOT, check=True)
    monkeypatch.setattr(rerun_results, "MANIFEST", tmp_path / "manifest.csv")
    return row("2p/random_vs_greedy.json", command)


def test_a_rerun_of_an_untouched_file_is_identical(listed: dict, tmp_path: Path) -> None:
    assert rerun_results.rerun(listed, tmp_path) == "identical"
    path = tmp_path / listed["file"]
    data = json.loads(path.read_text())
    data["stats"][0]["name"] = data["agents"][0] = "runs/old/checkpoint.pt"  # renamed since
    path.write_text(json.dumps(data))
    assert rerun_results.rerun(listed, tmp_path) == "identical"


def test_a_changed_figure_is_reported(listed: dict, tmp_path: Path) -> None:
    path = tmp_path / listed["file"]
    data = json.loads(path.read_text())
    data["stats"][0]["margin"]["mean"] += 0.01
    data["seconds"] += 5.0  # a wall time is not a figure
    data["stats"][1]["name"] = "runs/old/checkpoint.pt"  # nor is a label
    path.write_text(json.dumps(data))
    assert rerun_results.rerun(listed, tmp_path) == "different: stats"


def test_a_command_naming_an_absent_policy_is_not_run(tmp_path: Path) -> None:
    command = "python -m block_env.evaluate no-such@0000.pt rules --hands 20 --json x.json"
    assert rerun_results.rerun(row("x.json", command), tmp_path) == "missing: no-such@0000.pt"


def test_record_rewrites_only_the_identical_rows(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.csv"
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    for name in ("a.json", "b.json"):
        writer.writerow(row(name, EVAL.format(out=name)))
    quoted = '"c.json",evaluate,rules,20,"python x",not re-run,"quoted though it need not be"\n'
    before = out.getvalue() + quoted
    manifest.write_text(before)
    rounding = "identical but for float rounding: ratings (1e-15 relative at most)"
    results = {"a.json": "identical", "b.json": "different: stats", "c.json": rounding}
    assert rerun_results.record(results, "abc1234", manifest) == 2
    after = manifest.read_text().splitlines(keepends=True)
    lines = before.splitlines(keepends=True)
    assert after[2] == lines[2]  # b.json differed: left as it was
    assert after[1] == lines[1].replace("not re-run", "identical at abc1234")
    assert next(csv.reader([after[3]]))[5] == rounding.replace("identical", "identical at abc1234")
    assert rerun_results.record(results, "abc1234", manifest) == 0  # nothing twice


def test_a_policy_named_by_its_id_comes_from_its_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = ROOT / "agents" / "policies" / "block-2p.pt"
    sha = hashlib.sha256(shipped.read_bytes()).hexdigest()
    policies = tmp_path / "policies.csv"
    policies.write_text(
        "id,sha256,shipped_as,source,note\n"
        f"old@{sha[:8]},{sha},,git show HEAD:agents/policies/block-2p.pt,a\n"
        f"bad@{sha[:8]},{'0' * 64},,git show HEAD:agents/policies/block-2p.pt,wrong sha\n"
        f"path@{sha[:8]},{sha},,agents/policies/block-2p.pt,a path in the checkout\n"
    )
    monkeypatch.setattr(rerun_results, "MANIFEST", tmp_path / "manifest.csv")
    args = ["python", "-m", "block_env.evaluate", f"old@{sha[:8]}.pt", "rules"]
    assert rerun_results.resolve_files(args, tmp_path) is None
    assert Path(args[3]).read_bytes() == shipped.read_bytes()
    assert rerun_results.resolve_files([f"bad@{sha[:8]}.pt"], tmp_path) == f"bad@{sha[:8]}.pt"
    args = [f"path@{sha[:8]}.pt"]
    assert rerun_results.resolve_files(args, tmp_path) is None
    assert Path(args[0]).read_bytes() == shipped.read_bytes()


def test_the_command_marks_what_it_reran_identically(listed: dict, tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.csv"
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerow(listed)
    manifest.write_text(out.getvalue())
    assert rerun_results.main(["--record", "abc1234"]) == 0
    (marked,) = csv.DictReader(io.StringIO(manifest.read_text()))
    assert marked == {**listed, "rerun": "identical at abc1234"}
