"""The benchmark command: its rows, its JSON, its refusals, its agent ids and the rating on
the frozen ladder."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from block_env.agent_specs import SetupError
from block_env.benchmark import TASKS, agent_identity, benchmark
from block_env.benchmark.cli import main
from block_env.benchmark.elo import FROZEN_LADDERS, fixed_opponent_rating, rate
from block_env.benchmark.runner import plan_rows
from block_env.benchmark.tasks import FROZEN_NETWORKS, Opponent, field_network
from block_env.evaluation import evaluate

ROOT = Path(__file__).resolve().parents[2]
D2 = TASKS["block-d2-2p-v1"]


def test_rows_cover_the_field_in_every_lineup_and_leave_the_agent_itself_out() -> None:
    task = TASKS["block-4p-v1"]
    rows = plan_rows(task, "rules", None)
    frozen = field_network(task, "block-4p")[0]  # the field's network: the file it froze
    specs = [field_network(task, o.spec)[0] for o in task.field if o.spec != "rules"]
    assert [(s, lineup) for s, lineup, _ in rows] == [
        (spec, lineup) for spec in specs for lineup in ("alone", "field")
    ]
    deals = {s: d for s, _, d in rows}
    assert deals["random"] == task.deals and deals["pimc-20"] == 250
    assert {d for _, _, d in plan_rows(task, "rules", 400)} == {100, 50}  # capped, not raised
    shipped = agent_identity("block-4p")["id"]
    assert frozen in deals and frozen not in {s for s, _, _ in plan_rows(task, shipped, None)}


def test_every_network_of_a_field_is_the_file_its_task_froze() -> None:
    """Every network a field names is a file of block_env/benchmark/networks pinned by
    sha256, and this checkout's file has it; it plays under the field's name."""
    for task in TASKS.values():
        networks = {o.spec for o in task.field if o.spec.startswith("block-")}
        assert set(FROZEN_NETWORKS.get(task.id, {})) == networks, task.id
        for name in networks:
            path, sha256 = field_network(task, name)
            assert agent_identity(path) == {
                "spec": path,
                "id": f"{name}@{sha256[:8]}",
                "sha256": sha256,
            }
    assert field_network(TASKS["block-4p-v1"], "rules") == ("rules", None)


def test_the_frozen_network_plays_and_another_file_is_refused(monkeypatch) -> None:
    from block_env.benchmark import tasks

    task = TASKS["block-partnership-v1"]
    frozen = tasks.field_network(task, "block-partnership")[0]
    specs = {s for s, _, _ in plan_rows(task, "rules", None)}
    assert frozen in specs and "block-partnership" not in specs
    # the shipped block-partnership against the task's frozen one: a row, not left out
    current = agent_identity("block-partnership")["id"]
    assert frozen in {s for s, _, _ in plan_rows(task, current, None)}
    itself = agent_identity(frozen)["id"]
    assert frozen not in {s for s, _, _ in plan_rows(task, itself, None)}
    file = tasks.FROZEN_NETWORKS[task.id]["block-partnership"][0]
    other = {"block-partnership": (file, "0" * 64)}
    pins = {**tasks.FROZEN_NETWORKS, task.id: other}
    monkeypatch.setattr(tasks, "FROZEN_NETWORKS", pins)
    with pytest.raises(SetupError, match="froze its field's block-partnership.*00000000"):
        plan_rows(task, "rules", None)


def test_opponents_keep_only_those_of_the_field_in_the_field_order() -> None:
    task = TASKS["block-partnership-v1"]
    rows = plan_rows(task, "rules", 400, ["block-partnership", "random"])
    frozen = field_network(task, "block-partnership")[0]
    assert [(s, lineup) for s, lineup, _ in rows] == [
        (spec, lineup) for spec in ("random", frozen) for lineup in ("team", "ad_hoc")
    ]


@pytest.mark.parametrize("opponents", [[], ["random", "pimc-7"], ["block-2p"]])
def test_opponents_outside_the_field_are_refused_with_the_field(opponents: list) -> None:
    with pytest.raises(SetupError, match="choose among its field random, greedy"):
        plan_rows(TASKS["block-partnership-v1"], "rules", None, opponents)


@pytest.mark.parametrize("hands", [0, -4, 6, 12500 * 4 + 4, True])
def test_bad_hands_are_refused_with_what_is_allowed(hands: int) -> None:
    with pytest.raises(SetupError, match="hands"):
        plan_rows(TASKS["block-4p-v1"], "rules", hands)


def test_agent_ids_name_policy_files_by_their_sha256() -> None:
    shipped = agent_identity("block-2p")
    path = ROOT / "agents" / "policies" / "block-2p.pt"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert shipped == {"spec": "block-2p", "id": f"block-2p@{digest[:8]}", "sha256": digest}
    assert agent_identity(str(path))["sha256"] == digest
    sampling = agent_identity("block-2p:greedy=False")  # another agent from the same file
    assert sampling["id"] == f"block-2p@{digest[:8]}:greedy=False"
    for spec in ("rules", "pimc-20", "pimc:worlds=5", "agents.baselines:GreedyAgent"):
        assert agent_identity(spec) == {"spec": spec, "id": spec, "sha256": None}
    with pytest.raises(SetupError, match="no-such.pt"):
        agent_identity("no-such.pt")


def test_benchmark_rows_are_the_evaluations_of_the_held_out_deals() -> None:
    res = benchmark("greedy", D2, hands=40)
    assert [r.opponent for r in res.rows] == ["random", "rules", "pimc-20", "pimc-100"]
    direct = evaluate(["greedy", "rules"], hands=40, seed=D2.deal_seed, **D2.env_kwargs())
    row = res.rows[1]
    assert (row.margin, row.hand_win, row.hands) == (
        direct.stats[0].margin,
        direct.stats[0].hand_win,
        40,
    )
    assert res.deal_set["first_seed"] == D2.deal_seed and res.deal_set["deals"] == 20
    assert res.elo is None  # the small-set tasks have no ladder


def test_the_same_agent_on_the_same_task_gives_the_same_numbers() -> None:
    first = benchmark("agents.baselines:RandomAgent", D2, hands=30)
    again = benchmark("agents.baselines:RandomAgent", D2, hands=30)
    assert [r.margin for r in first.rows] == [r.margin for r in again.rows]
    other = benchmark("greedy", D2, hands=30)  # another agent: other numbers
    mine = {r.opponent: r.margin for r in first.rows}
    assert all(mine[r.opponent] != r.margin for r in other.rows if r.opponent in mine)


def test_json_holds_the_protocol(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "res.json"
    argv = ["greedy", "--task", "block-d2-2p-v1", "--hands", "20", "--no-progress"]
    assert main([*argv, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["task"]["id"] == "block-d2-2p-v1" and data["task"]["version"] == 1
    assert data["agent"] == {"spec": "greedy", "id": "greedy", "sha256": None}
    assert data["deal_set"]["hands_option"] == 20 and len(data["deal_set"]["sha256"]) == 64
    for row in data["rows"]:
        assert row["opponent"] in printed and row["hands"] == 20
        assert row["margin"]["lo"] <= row["margin"]["mean"] <= row["margin"]["hi"]
        assert 0 <= row["hand_win"]["mean"] <= 1
    engines = {row["opponent"]: row["engine"] for row in data["rows"]}
    assert engines == {"random": "aec", "rules": "batched", "pimc-20": "aec", "pimc-100": "aec"}
    assert data["versions"]["numpy"] == np.__version__ and data["machine"]["cpus"] >= 1
    assert data["command"].endswith(" ".join(argv) + f" --json {out}")
    assert data["wall_s"] > 0


def test_cli_refuses_bad_setups_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--task", "block-2p"]) == 2
    assert "unknown task 'block-2p': use one of block-2p-v1" in capsys.readouterr().err
    assert main(["no-such-agent", "--task", "block-d2-2p-v1", "--hands", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no-such-agent" in err
    assert main(["block-2p", "--task", "block-4p-v1", "--hands", "4"]) == 2
    assert "block-2p" in capsys.readouterr().err  # a 2-player policy in a 4-player game


def test_tasks_command_lists_every_task(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks"]) == 0
    printed = capsys.readouterr().out
    assert all(task_id in printed for task_id in TASKS)
    assert "block-partnership@0f2fe29b" in printed  # the file it froze


@pytest.mark.parametrize("task_id", sorted(FROZEN_LADDERS))
def test_frozen_ratings_are_the_ladder_files(task_id: str) -> None:
    path, fixed = FROZEN_LADDERS[task_id]
    ladder = json.loads((ROOT / path).read_text())
    by_label = dict(zip(ladder["agents"], ladder["ratings"]))
    for label, rating in fixed.items():
        name = label.split("@")[0]
        assert by_label[name]["mean"] == rating
        if "@" in label:  # a network: the ladder played the file the task's field plays
            assert FROZEN_NETWORKS[task_id][name][1].startswith(label.split("@")[1])


def test_fixed_opponent_rating_solves_the_bradley_terry_equation() -> None:
    assert fixed_opponent_rating([100.0], [50.0], [100.0]) == pytest.approx(100.0, abs=1e-6)
    weaker, stronger = (fixed_opponent_rating([0.0, 100.0], [w, w], [100, 100]) for w in (40, 60))
    assert weaker < 50 < stronger
    # expected wins at the rating equal the observed ones (with the prior of one draw each)
    r = fixed_opponent_rating([0.0, 200.0], [70.0, 30.0], [100.0, 100.0])
    expected = sum(101 / (1 + 10 ** ((o - r) / 400)) for o in (0.0, 200.0))
    assert expected == pytest.approx(101.0, abs=1e-6)


def test_rating_uses_only_opponents_on_the_ladder() -> None:
    wins, hands = np.full(50, 1.0), np.full(50, 2.0)
    est, used = rate("block-2p-v1", {"rules": (wins, hands), "block-2p@00000000": (wins, hands)})
    assert used == ["rules"]
    assert est is not None and est.lo <= est.mean <= est.hi
    assert est.mean == pytest.approx(104.24094404128962, abs=1e-6)  # half the hands: its equal
    assert rate("block-d2-2p-v1", {"rules": (wins, hands)}) == (None, [])


def test_the_rating_draws_the_deals_once_for_every_opponent() -> None:
    """The agent wins each deal's game against exactly one of two opponents: drawn
    jointly, every replicate holds the same games and wins against the pair, so the
    interval is the point; drawn apart per opponent, the wins would vary."""
    wins = (np.arange(200) % 3 == 0).astype(float)
    hands = np.ones(200)
    est, used = rate("block-3p-v1", {"rules": (wins, hands), "pimc-100": (1 - wins, hands)})
    assert used == ["rules", "pimc-100"] and est is not None
    assert est.lo == est.mean == est.hi
    alone, _ = rate("block-3p-v1", {"rules": (wins, hands)})
    assert alone is not None and alone.hi - alone.lo > 20


def test_rows_against_the_bots_on_the_batched_engine_are_the_aec_figures() -> None:
    """A policy against the deterministic bots is played on the batched engine: the same
    figures as the AEC evaluation of the same held-out deals."""
    task = TASKS["block-4p-v1"]
    res = benchmark("block-4p", task, hands=40)
    for row in res.rows:
        assert row.engine == ("batched" if row.opponent in ("greedy", "rules") else "aec")
        if row.engine == "aec":
            continue
        lineup = [1, 0, 0, 0] if row.lineup == "field" else [0, 1, 1, 1]
        aec = evaluate(
            ["block-4p", row.opponent],
            hands=40,
            seed=task.deal_seed,
            lineup=lineup,
            **task.env_kwargs(),
        )
        assert (row.margin, row.hand_win) == (aec.stats[0].margin, aec.stats[0].hand_win)


def test_a_match_task_scores_the_share_of_matches_won() -> None:
    task = replace(TASKS["block-2p-match-v1"], field=(Opponent("random"), Opponent("rules")))
    res = benchmark("greedy", task, hands=4)
    direct = evaluate(["greedy", "rules"], matches=4, seed=task.deal_seed, **task.env_kwargs())
    row = res.rows[1]
    assert row.matches == 4 and row.hands == direct.hands > 4  # a match is several hands
    assert (row.match_win, row.margin) == (direct.stats[0].match_win, direct.stats[0].margin)
    assert "match win %" in res.table() and "match win %" not in benchmark("greedy", D2, 4).table()


def test_a_field_network_plays_off_its_game_but_the_agent_does_not() -> None:
    """block-2p-hd-v1 plays the field's block-2p where the highest double opens (it was
    trained with the rotating lead, and a note says so); the agent under test must fit the
    game, or be allowed not to."""
    hd = TASKS["block-2p-hd-v1"]
    only = replace(hd, field=(Opponent("block-2p"),))
    res = benchmark("rules", only, hands=4)
    assert [r.opponent for r in res.rows] == [agent_identity("block-2p")["id"]]
    assert any("opener differ" in note for note in res.notes)
    with pytest.raises(SetupError, match="opener"):
        benchmark("block-2p", replace(hd, field=(Opponent("rules"),)), hands=4)
    bots = replace(hd, field=(Opponent("rules"),))
    played = benchmark("block-2p", bots, hands=40, allow_mismatch=True)  # the batched engine
    aec = evaluate(
        ["block-2p", "rules"], hands=40, seed=hd.deal_seed, allow_mismatch=True, **hd.env_kwargs()
    )
    assert (played.rows[0].margin, played.rows[0].hand_win) == (
        aec.stats[0].margin,
        aec.stats[0].hand_win,
    )
