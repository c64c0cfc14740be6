"""Exact analysis on the smallest Block game (double-two, 2 tiles each, 2 players): game
size, NashConv of fixed policies computed two ways, and CFR+ converging."""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("pyspiel", reason="open_spiel is not installed (pip install -e '.[openspiel]')")

from open_spiel.python.algorithms import exploitability  # noqa: E402

import agents  # noqa: E402
from block_env.openspiel import analysis as an  # noqa: E402


@pytest.fixture(scope="module")
def small():
    game = an.load(max_pip=2, hand_size=2)
    return game, an.walk(game)


def test_tree_size_of_the_smallest_game(small) -> None:
    game, tree = small
    # The lot, then per leader: seat 0's first tile (1 node), its second unless forced
    # (first tile 0..3: 4 nodes), seat 1's first tile for each of the 15 hands of seat 0,
    # its second unless forced (2 of the 3 possible first tiles: 30 nodes).
    assert tree.chance_nodes == 1 + 2 * (1 + 4 + 15 + 30)
    assert tree.terminals >= 2 * 15 * 6  # at least one terminal per deal
    assert tree.histories == tree.terminals + tree.chance_nodes + tree.decision_nodes
    assert 0 < len(tree.info_states) < tree.decision_nodes


def test_nash_conv_of_fixed_policies_agrees_between_python_and_cpp_best_responses(small) -> None:
    game, tree = small
    for probs in (an.uniform_probs, an.agent_probs(agents.make("greedy").act)):
        pol = an.tabular(game, tree, probs)
        py = exploitability.nash_conv(game, pol)
        cpp = exploitability.nash_conv(game, pol, use_cpp_br=True)
        assert py > 0.1
        assert math.isclose(py, cpp, rel_tol=1e-9, abs_tol=1e-9)


def test_greedy_is_a_pure_policy_that_plays_its_heaviest_tile(small) -> None:
    game, tree = small
    pol = an.tabular(game, tree, an.agent_probs(agents.make("greedy").act))
    for key, state in list(tree.info_states.items())[:50]:
        row = pol.policy_for_key(key)
        assert sorted(row)[-1] == 1.0 and row.sum() == 1.0
        assert int(row.argmax()) in state.legal_actions()


def test_cfr_plus_comes_within_one_percent_of_uniform(small) -> None:
    game, tree = small
    uniform = an.nash_conv(game, an.tabular(game, tree, an.uniform_probs))
    _, curve = an.run_cfr_plus(game, 30, [3, 30])
    assert curve[0]["nash_conv"] > curve[-1]["nash_conv"]
    assert curve[-1]["nash_conv"] <= 0.01 * uniform


def test_nashconv_command_writes_table_json_and_plot(tmp_path, capsys) -> None:
    from block_env.openspiel.__main__ import main

    out, png = tmp_path / "r.json", tmp_path / "r.png"
    argv = ["nashconv", "--max-pip", "2", "--hand-size", "2", "--cfr-iterations", "3"]
    argv += ["--nfsp-episodes", "0", "--pimc-worlds", "0", "--json", str(out), "--plot", str(png)]
    assert main(argv) == 0
    assert "| uniform random | 1.1222 | 100.00% |" in capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["size"]["histories"] == 2093
    assert [c["iteration"] for c in result["curves"]["cfr+"]] == [1, 2, 3]
    assert result["rows"][-1]["nash_conv"] == result["curves"]["cfr+"][-1]["nash_conv"]
    assert png.stat().st_size > 10_000


def test_nashconv_command_refuses_bad_arguments(capsys) -> None:
    from block_env.openspiel.__main__ import main

    assert main(["nashconv", "--max-pip", "7"]) == 2
    assert "max_pip=7" in capsys.readouterr().err
    assert main(["nashconv", "--cfr-iterations", "0"]) == 2
    assert "--cfr-iterations" in capsys.readouterr().err
