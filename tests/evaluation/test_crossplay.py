"""Cross-play: every pair of agents as partners, checked against plain evaluations of the
same lineups on the same deals, and its refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from block_env.evaluate import SetupError, evaluate, main
from block_env.evaluation.crossplay import crossplay

HANDS = 80
SEED = 7_000


@pytest.fixture(scope="module")
def table():
    return crossplay(["rules", "greedy", "random"], against="rules", hands=HANDS, seed=SEED)


def _team(agents, lineup=None):
    res = evaluate(agents, num_players=4, partnership=True, hands=HANDS, seed=SEED, lineup=lineup)
    return res.stats[0].margin


def test_every_cell_is_the_evaluation_of_that_team_on_the_same_deals(table) -> None:
    assert table.margins[1][1] == _team(["greedy", "rules"])
    assert table.margins[0][1] == _team(["rules", "greedy", "rules"], [0, 2, 1, 2])
    assert table.margins[1][2].mean == _team(["greedy", "random", "rules"], [0, 2, 1, 2]).mean


def test_the_matrix_is_symmetric_because_the_rotations_play_both_orders(table) -> None:
    # greedy beside rules and rules beside greedy are the same games, seat-rotated
    assert _team(["greedy", "rules", "rules"], [0, 2, 1, 2]) == table.margins[0][1]
    for i in range(3):
        for j in range(3):
            assert table.margins[i][j] == table.margins[j][i]


def test_self_and_cross_play_summaries(table) -> None:
    for i in range(3):
        others = [table.margins[i][j].mean for j in range(3) if j != i]
        assert table.self_play[i] == table.margins[i][i]
        assert table.cross_play[i].mean == pytest.approx(np.mean(others))
        assert table.gap[i].mean == pytest.approx(table.self_play[i].mean - np.mean(others))
        assert table.gap[i].lo < table.gap[i].mean < table.gap[i].hi
    # a random partner costs a team of rule bots points: rules' gap is positive here
    assert table.margins[0][2].mean < table.margins[0][0].mean
    assert table.hands_per_pair == HANDS


def test_the_cli_prints_and_writes_the_table(tmp_path, capsys) -> None:
    out = tmp_path / "cp.json"
    argv = ["--crossplay", "rules", "greedy", "--players", "4", "--partnership"]
    argv += ["--hands", "40", "--seed", "3", "--json", str(out), "--no-progress"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "Cross-play, partners against two rules" in text and "gap" in text
    data = json.loads(out.read_text())
    assert data["agents"] == ["rules", "greedy"] and data["against"] == "rules"
    assert data["hands_per_pair"] == 40 and len(data["margins"]) == 2
    assert data["margins"][0][1] == data["margins"][1][0]


@pytest.mark.parametrize(
    "extra, needle",
    [
        ([], "add --partnership"),
        (["--partnership", "--episode", "match"], "single hands"),
        (["--partnership", "--lineup", "0,1,0,1"], "drop --lineup"),
        (["--partnership", "--ladder"], "drop --ladder"),
    ],
)
def test_the_cli_refuses_what_cross_play_cannot_do(capsys, extra, needle) -> None:
    assert main(["--crossplay", "rules", "greedy", "--players", "4", *extra]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_bad_setups_are_refused_before_playing() -> None:
    with pytest.raises(SetupError, match="at least two agents"):
        crossplay(["rules"])
    with pytest.raises(SetupError, match="num_players must be 4"):
        crossplay(["rules", "greedy"], num_players=2)
    with pytest.raises(SetupError, match="partnership=True"):
        crossplay(["rules", "greedy"], partnership=False)
    with pytest.raises(SetupError):
        crossplay(["rules", "no-such-agent"])
