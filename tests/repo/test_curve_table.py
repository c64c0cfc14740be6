"""tools/curve_table.py: rows of a run's evaluation history and the first win over a bot."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import curve_table  # noqa: E402


def _entry(minutes: float, steps: int, lo: float) -> dict:
    return {
        "wall": minutes * 60,
        "env_steps": steps,
        "eval": {"rules": {"margin": lo + 0.2, "lo": lo, "hi": lo + 0.4}},
    }


HISTORY = [_entry(1, 10**6, -0.5), _entry(2, 2 * 10**6, 0.0), _entry(3, 3 * 10**6, 0.1)]


def test_first_above_zero_needs_the_whole_interval_above_zero() -> None:
    assert curve_table.first_above_zero(HISTORY, "rules") is HISTORY[2]
    assert curve_table.first_above_zero(HISTORY[:2], "rules") is None


def test_rows_keep_every_kth_and_the_last(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    rows = curve_table.rows_of(HISTORY, every=2)
    assert [r.split(" | ")[0] for r in rows] == ["| 1.0", "| 3.0"]
    assert rows[1] == "| 3.0 | 3.0M | +0.30 [+0.10, +0.50] |"
    path = tmp_path / "eval.json"
    path.write_text(json.dumps({"history": HISTORY}))
    curve_table.main([str(path)])
    out = capsys.readouterr().out
    assert "against rules: at 3.0 min (3,000,000 steps)" in out
    assert sum(line.startswith("|") for line in out.splitlines()) == 5  # header, rule, 3 rows
