"""The ``block-env`` console script: one entry point whose subcommands are the modules' own
command lines (same output and exit status), named ``block-env SUBCOMMAND`` in messages,
each ``--help`` with an example, and the installed script itself."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from block_env import cli
from block_env.training import cli as train_cli

NEEDS_PYSPIEL = {"openspiel"}


def test_overview_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in cli.SUBCOMMANDS:
        assert f"  {name} " in out
    assert cli.main([]) == 2  # no subcommand: the overview, and a usage error


def test_unknown_subcommand_is_refused_naming_the_allowed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["trian"]) == 2
    err = capsys.readouterr().err
    assert "unknown subcommand 'trian'" in err and "train, evaluate" in err


@pytest.mark.parametrize("name", sorted(set(cli.SUBCOMMANDS) - NEEDS_PYSPIEL))
def test_each_help_names_the_subcommand_and_gives_an_example(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        cli.main([name, "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: block-env {name}")
    assert f"example: block-env {name} " in out


def test_evaluate_prints_what_the_module_prints(capsys: pytest.CaptureFixture[str]) -> None:
    from block_env import evaluate

    args = ["random", "greedy", "--hands", "40", "--seed", "3", "--no-progress"]
    assert cli.main(["evaluate", *args]) == 0
    via_script = capsys.readouterr().out
    assert evaluate.main(args) == 0
    direct = capsys.readouterr().out

    def table(text: str) -> list[str]:  # the first line holds the wall time
        return text.splitlines()[1:]

    assert table(via_script) == table(direct) and len(table(direct)) >= 4


def test_train_errors_carry_the_script_name_and_the_name_is_restored(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["train", "no/such/config.yaml"]) == 2
    assert capsys.readouterr().err.startswith("block-env train: error: config file")
    assert train_cli.PROG == "train.py"


def test_resume_command_follows_the_command_that_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(train_cli, "PROG", "block-env train")
    assert train_cli.resume_command(["total_steps=1e6", "--force"]) == (
        "block-env train total_steps=1e6 --resume"
    )
    monkeypatch.setattr(train_cli, "PROG", "train.py")
    assert train_cli.resume_command(["seed=2"]).endswith(" train.py seed=2 --resume")


def test_installed_console_script_runs() -> None:
    script = shutil.which("block-env") or str(
        __import__("pathlib").Path(sys.executable).with_name("block-env")
    )
    done = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "usage: block-env SUBCOMMAND" in done.stdout
