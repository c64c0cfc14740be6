"""The demo is short by default (one hand move by move, then a line per hand) and complete
with ``--full``."""

from __future__ import annotations

import contextlib
import io

import pytest

from block_env.demo import main

DEFAULT_MAX_LINES = 100  # the bound the demo's docstring promises


def run_demo(*args: str) -> tuple[dict, list[str]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = main(list(args))
    return result, out.getvalue().splitlines()


@pytest.mark.parametrize(
    "args",
    [(), ("--seed", "4"), ("--players", "3", "--seed", "7"), ("--players", "4", "--seed", "1")],
)
def test_default_demo_is_short_and_still_complete(args: tuple[str, ...]) -> None:
    result, lines = run_demo(*args)
    assert len(lines) < DEFAULT_MAX_LINES, len(lines)
    assert result["match_over"]
    assert sum(line.startswith("=== hand ") for line in lines) == result["num_hands"]
    moves = [line for line in lines if line.startswith(">>> ")]
    assert moves and all(" plays " in line and "line: [" in line for line in moves)
    assert sum(line.startswith("--- hand ") for line in lines) == 1  # one rendered position
    assert lines[-1].startswith("Final scores")


def test_full_demo_renders_every_move_of_every_hand() -> None:
    result, lines = run_demo("--full", "--seed", "4")
    _, short = run_demo("--seed", "4")
    assert result["num_hands"] > 1
    rendered = sum(line.startswith("--- hand ") for line in lines)
    moves = sum(line.startswith(">>> ") for line in lines)
    assert rendered == moves > sum(line.startswith(">>> ") for line in short)
    assert {f"--- hand {h} ---" for h in range(1, result["num_hands"] + 1)} <= set(lines)
    assert len(lines) > 5 * DEFAULT_MAX_LINES


def test_quiet_and_full_do_not_go_together(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--quiet", "--full"])
    assert "not allowed with" in capsys.readouterr().err
