"""The tables of result files (``block-env benchmark table``): each kind of file renders as
the docs show it, the docs' tables are exactly what the command prints for the files they
name, the results folder holds only what the docs quote, and the benchmark repeats itself."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from block_env.benchmark import TASKS, benchmark
from block_env.benchmark.cli import main
from block_env.benchmark.table import kind_of, render

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
# a table's command: the last line of a ```bash block, the table right after the block
COMMAND_RE = re.compile(r"^block-env benchmark table (?P<args>[^\n]+)\n```\n\n", re.MULTILINE)


def _estimate(mean: float, half: float = 0.1) -> dict[str, float]:
    return {"mean": mean, "lo": mean - half, "hi": mean + half}


def _benchmark_file(agent: str, task: str, rows: list[tuple[str, str, float]]) -> dict[str, Any]:
    return {
        "task": {"id": task},
        "agent": {"spec": agent, "id": agent, "sha256": None},
        "deal_set": {},
        "rows": [
            {"opponent": o, "lineup": lineup, "hands": 800, "margin": _estimate(m)}
            | {"matches": 0, "match_win": None}
            for o, lineup, m in rows
        ],
        "elo": None,
    }


def _evaluate_file(seed: int, mean: float, half: float, hands: int = 400) -> dict[str, Any]:
    stats = {"margin": _estimate(mean, half), "hand_win": _estimate(0.5, 0.01)}
    config = {"num_players": 2, "episode": "hand", "opener": "rotate", "seed": seed}
    return {
        "agents": ["a", "b"],
        "lineup": [0, 1],
        "config": config,
        "hands": hands,
        "stats": [stats, stats],
    }


def _write(tmp_path: Path, files: list[dict[str, Any]]) -> list[Path]:
    paths = []
    for i, data in enumerate(files):
        paths.append(tmp_path / f"f{i}.json")
        paths[-1].write_text(json.dumps(data))
    return paths


def test_a_benchmark_table_has_a_column_per_agent_and_names_field_networks(tmp_path) -> None:
    """Rows follow the opponents in order, a missing cell is a dash, and a field network is
    named by the task's field name with its sha256 prefix, whatever label the file holds."""
    task = "block-partnership-v1"
    a = _benchmark_file("x", task, [("rules", "team", 1.0), ("old-name@0f2fe29b", "team", 0.5)])
    b = _benchmark_file("rules", task, [("random", "team", 9.0)])
    lines = render(_write(tmp_path, [a, b])).splitlines()
    assert lines[0] == "| opponent | x, points per hand | rules, points per hand |"
    assert lines[2] == "| rules | +1.00 [+0.90, +1.10] (800) | - |"
    assert lines[3] == "| block-partnership@0f2fe29b | +0.50 [+0.40, +0.60] (800) | - |"
    assert lines[4] == "| random | - | +9.00 [+8.90, +9.10] (800) |"
    other = _benchmark_file("y", "block-2p-v1", [("rules", "alone", 0.0)])
    with pytest.raises(ValueError, match="one task"):
        render(_write(tmp_path, [a, other]))


def test_evaluations_of_one_pairing_end_with_their_pooled_figure(tmp_path) -> None:
    """Pooled: means weighted by hands, half-widths combined as standard errors."""
    files = [_evaluate_file(0, 1.0, 0.3), _evaluate_file(10**6, 0.0, 0.4)]
    lines = render(_write(tmp_path, files)).splitlines()
    assert lines[2].startswith("| a vs b | 0,1 | 0 | 400 | +1.00 [+0.70, +1.30] |")
    assert lines[-1] == "| pooled |  |  | 800 | +0.50 [+0.25, +0.75] |  |"
    files[1]["lineup"] = [1, 0]  # another pairing: no pooled figure
    assert "pooled" not in render(_write(tmp_path, files))


def test_a_training_table_shows_every_kth_evaluation_then_the_final(tmp_path) -> None:
    point = {"margin": 0.5, "lo": 0.25, "hi": 0.75}
    history = [
        {"wall": 60.0 * i, "env_steps": 10**6 * i, "eval": {"rules": point}} for i in range(5)
    ]
    data = {"history": history, "final": {"rules": {**point, "hands": 4000}}}
    lines = render(_write(tmp_path, [data]), every=2).splitlines()
    assert [line.split(" | ")[0] for line in lines[2:]] == [
        "| 0.0",
        "| 2.0",
        "| 4.0",
        "| final (4,000 hands)",
    ]
    with pytest.raises(ValueError, match="every"):
        render(_write(tmp_path, [data]), every=0)


def test_an_exploit_table_names_where_the_responder_started(tmp_path) -> None:
    def bound(agent: str, args: list[str]) -> dict[str, Any]:
        return {
            "exploitability_lower_bound": 0.5,
            "ci95": [0.25, 0.75],
            "agent": {"spec": agent, "id": agent},
            "task": {"id": "block-2p-v1"},
            "train_args": ["teacher=none", *args],
            "steps": 30_000_000,
            "train_wall_s": 600.0,
            "hands": 8000,
        }

    files = [bound("rules", ["teacher=auto"]), bound("x", ["init_policy=block-2p"]), bound("y", [])]
    lines = render(_write(tmp_path, files)).splitlines()
    start = [line.split(" | ")[2] for line in lines[2:]]
    assert start == ["rule bot (teacher)", "block-2p network", "scratch"]
    assert lines[2].endswith("| 30.0M, 10.0 min | +0.50 [+0.25, +0.75] | 8,000 |")


def test_files_that_are_no_results_or_of_two_kinds_are_refused(tmp_path, capsys) -> None:
    evaluation = _evaluate_file(0, 1.0, 0.3)
    bench = _benchmark_file("x", "block-2p-v1", [])
    with pytest.raises(ValueError, match="one kind"):
        render(_write(tmp_path, [evaluation, bench]))
    (tmp_path / "x.json").write_text(json.dumps({"hello": 1}))
    with pytest.raises(ValueError, match="x.json: not a result file"):
        render([tmp_path / "x.json"])
    assert main(["table", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "x.json" in err
    assert main(["table", str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err


def _docs_tables() -> list[tuple[Path, list[str], str]]:
    """(page, the command's arguments, the page's text after the command's code block)."""
    found = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for m in COMMAND_RE.finditer(text):
            found.append((page, shlex.split(m["args"]), text[m.end() :]))
    return found


def test_every_docs_table_is_what_the_command_above_it_prints(capsys) -> None:
    tables = _docs_tables()
    pages = {page.name for page, _, _ in tables}
    assert {"results.md", "benchmark.md", "policies.md", "exploitability.md"} <= pages
    for page, args, after in tables:
        assert main(["table", *args]) == 0, (page.name, args)
        printed = capsys.readouterr().out
        assert after.startswith(printed), (
            f"{page.name}: the table under `block-env benchmark table {shlex.join(args)}` "
            "differs from what the command prints: paste its output there"
        )


def test_the_results_folder_holds_only_what_the_docs_quote() -> None:
    """At most 60 result files, each named by a docs page (in a table's command or a link),
    and every docs/results path that a page or the package names exists."""
    files = sorted(p.relative_to(ROOT).as_posix() for p in RESULTS.rglob("*") if p.is_file())
    assert 0 < len(files) <= 60
    pages = [p.read_text(encoding="utf-8") for p in (ROOT / "docs").rglob("*.md")]
    text = "\n".join(pages).replace("](results/", "](docs/results/")
    orphans = [f for f in files if f not in text]
    assert not orphans, f"result files no page quotes: {orphans}"
    sources = [*(ROOT / "block_env").rglob("*.py"), *(ROOT / "docs").rglob("*.md")]
    named = set()
    for path in sources:
        body = path.read_text(encoding="utf-8").replace("](results/", "](docs/results/")
        named |= set(re.findall(r"docs/results/[\w@.+/-]+\.json", body))
    assert not sorted(named - set(files)), "named result files that do not exist"
    for f in files:
        if "/scaling/" not in f:  # the speed benchmarks' files, read by their pages
            kind_of(json.loads((ROOT / f).read_text(encoding="utf-8")))


def _without_times(result: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in result.items() if k not in ("wall_s", "command")}
    out["rows"] = [{k: v for k, v in r.items() if k != "seconds"} for r in result["rows"]]
    return out


def test_the_benchmark_repeats_itself_but_for_wall_times() -> None:
    """The same agent on the same task and hands gives the same rows and rating, for an
    agent with its own randomness and a field with search agents in it."""
    task = TASKS["block-d2-2p-v1"]
    first = benchmark("random", task, hands=40).to_dict()
    again = benchmark("random", task, hands=40).to_dict()
    assert _without_times(first) == _without_times(again)
    assert [r["opponent"] for r in first["rows"]] == ["greedy", "rules", "pimc-20", "pimc-100"]
