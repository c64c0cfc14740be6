"""Duplicate-deal evaluation and the ladder, on agents whose outcomes are known."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

import agents
from block_env.env import raw_env
from block_env.evaluate import (
    Estimate,
    bradley_terry,
    build_agent,
    evaluate,
    ladder,
    main,
    parse_spec,
    ratio_estimate,
)


def _contains_zero(e: Estimate) -> bool:
    return e.lo <= 0.0 <= e.hi


def test_identical_deterministic_agents_have_exactly_zero_margin() -> None:
    res = evaluate(["greedy", "greedy"], hands=200)
    for s in res.stats:
        # Rotating the seats mirrors each deal exactly: every deal's total is zero.
        assert s.margin.mean == 0.0 and s.margin.lo == 0.0 and s.margin.hi == 0.0
    assert res.agents == ["greedy", "greedy#2"]
    assert res.hands == 200 and res.deals == 100


@pytest.mark.parametrize("num_players", [2, 3])
def test_random_against_itself_ci_contains_zero(num_players: int) -> None:
    res = evaluate(["random"] * num_players, num_players=num_players, hands=600, seed=3)
    for s in res.stats:
        assert _contains_zero(s.margin)


def test_greedy_beats_random_with_ci_above_zero() -> None:
    res = evaluate(["greedy", "random"], hands=2000, seed=11)
    greedy, rand = res.stats
    assert greedy.margin.lo > 0.5
    assert rand.margin.mean == pytest.approx(-greedy.margin.mean)  # zero-sum, two seats
    assert greedy.hand_win.mean > rand.hand_win.mean


def test_margin_matches_an_independent_replay() -> None:
    """Replay the deals by hand through the AEC env and score the hands from the rules."""
    from agents.baselines import GreedyAgent, RuleAgent

    seeds, total, hands = range(5, 35), 0.0, 0
    for seed in seeds:
        for rules_seat in (0, 1):
            env = raw_env(episode="hand")
            env.reset(seed=seed)
            players = {rules_seat: RuleAgent(), 1 - rules_seat: GreedyAgent()}
            while not all(env.terminations.values()):
                seat = env.possible_agents.index(env.agent_selection)
                env.step(players[seat].act(env.observe(env.agent_selection)))
            result = env.infos["player_0"]["hand_result"]
            won = max(result["points"])
            if result["winner"] is not None:
                total += won if result["winner"] == rules_seat else -won
            hands += 1
    res = evaluate([RuleAgent(), GreedyAgent()], hands=len(seeds) * 2, seed=5)
    assert res.hands == hands
    assert res.stats[0].margin.mean == pytest.approx(total / hands)


SEEN: Counter = Counter()


class SeatRecorder:
    """Lowest legal action; counts the absolute seats it is asked to play (reads the env
    that evaluate passes to factories accepting ``env``)."""

    def __init__(self, env, tag: str = "x") -> None:
        self.env, self.tag = env, tag

    def act(self, observation) -> int:
        SEEN[(self.tag, self.env.agent_selection)] += 1
        return int(np.flatnonzero(observation["action_mask"])[0])


def test_every_agent_plays_every_seat(monkeypatch: pytest.MonkeyPatch) -> None:
    SEEN.clear()
    monkeypatch.setitem(agents.REGISTRY, "seat-recorder", f"{__name__}:SeatRecorder")
    specs = ["seat-recorder:tag='a'", "seat-recorder:tag='b'", "random"]
    res = evaluate(specs, num_players=3, hands=30)
    assert res.agents == specs
    for tag in ("a", "b"):
        assert all(SEEN[(tag, f"player_{s}")] > 0 for s in range(3))
    assert res.stats[0].seat_hands == 30 and res.stats[1].seat_hands == 30


def test_field_lineup_and_partnership_lineup() -> None:
    res = evaluate(["rules", "random"], num_players=3, hands=300)
    assert res.lineup == [0, 1, 1]
    rules, rand = res.stats
    assert rules.seat_hands == 300 and rand.seat_hands == 600
    # Zero-sum: the lone seat's points equal minus the field's two seats' points.
    assert rules.margin.mean == pytest.approx(-2 * rand.margin.mean)
    team = evaluate(["greedy", "random"], num_players=4, partnership=True, hands=80)
    assert team.lineup == [0, 1, 0, 1]
    assert team.stats[0].margin.mean == pytest.approx(-team.stats[1].margin.mean)


def test_match_mode_reports_match_wins() -> None:
    res = evaluate(["greedy", "random"], episode="match", matches=20, target_score=30)
    assert res.matches == 20
    a, b = res.stats
    assert a.seat_matches == 20 and b.seat_matches == 20
    assert 0 <= a.match_win.mean <= 1 and a.match_win.mean + b.match_win.mean <= 1
    assert res.hands > 20
    assert "match win" in res.table()


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError, match="3 agents"):
        evaluate(["random"] * 3, num_players=2)
    with pytest.raises(ValueError, match="positive int"):
        evaluate(["random", "greedy"], hands=0)
    with pytest.raises(ValueError, match="matches="):
        evaluate(["random", "greedy"], matches=10)
    with pytest.raises(ValueError, match="lineup"):
        evaluate(["random", "greedy"], lineup=[0, 0])
    with pytest.raises(ValueError, match="no-such-agent"):
        build_agent("no-such-agent")


def test_parse_spec_and_aliases() -> None:
    assert parse_spec("pimc:worlds=20,budget=0.05") == ("pimc", {"worlds": 20, "budget": 0.05})
    assert parse_spec("pimc-20") == ("pimc", {"worlds": 20})
    assert parse_spec("greedy") == ("greedy", {})
    with pytest.raises(ValueError, match="key=value"):
        parse_spec("pimc:20")


def test_ratio_estimate_known_values() -> None:
    den = np.array([2.0, 2.0, 4.0, 2.0])
    exact = ratio_estimate(3 * den, den)
    assert exact.mean == pytest.approx(3.0) and exact.hi - exact.lo == pytest.approx(0.0)
    x = np.array([1.0, -1.0, 3.0, 1.0])
    e = ratio_estimate(x, np.ones(4))
    se = np.std(x, ddof=1) / 2
    assert e.mean == pytest.approx(1.0) and e.hi == pytest.approx(1.0 + 1.959963984540054 * se)


def test_bradley_terry_recovers_known_strengths() -> None:
    # A beats B 3:1 and B beats C 3:1 over many games -> 400*log10(3) Elo steps.
    wins = np.array([[0, 75000, 90000], [25000, 0, 75000], [10000, 25000, 0]], dtype=float)
    games = wins + wins.T
    elo = bradley_terry(3, wins, games)
    step = 400 * np.log10(3)
    assert elo[0] == 0.0
    assert elo[1] == pytest.approx(-step, abs=2) and elo[2] == pytest.approx(-2 * step, abs=5)


def test_ladder_orders_baselines_and_reports_unbuildable_agents() -> None:
    res = ladder(["random", "greedy", "rules", "no-such-agent"], hands=400, bootstrap=50)
    assert "no-such-agent" in res.skipped and "no-such-agent" in res.table()
    names = res.agents
    r = {n: res.ratings[i].mean for i, n in enumerate(names)}
    assert r["greedy"] > r["random"] and r["rules"] > r["random"]
    g, rnd = names.index("greedy"), names.index("random")
    assert res.margins[g][rnd].lo > 0
    assert res.margins[rnd][g].mean == pytest.approx(-res.margins[g][rnd].mean)
    assert res.win_share[g][rnd] + res.win_share[rnd][g] == pytest.approx(1.0)


def test_ladder_three_players_uses_both_field_lineups() -> None:
    res = ladder(["random", "greedy"], num_players=3, hands=150, bootstrap=20)
    assert res.margins[1][0].mean > 0 and res.ratings[1].mean > 0


def test_cli_writes_table_and_json(tmp_path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "e.json"
    assert main(["greedy", "random", "--hands", "100", "--json", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "greedy" in text and "points/hand margin" in text
    data = json.loads(out.read_text())
    assert [s["name"] for s in data["stats"]] == ["greedy", "random"]
    assert data["hands"] == 100
    lad = tmp_path / "l.json"
    main(["--ladder", "random", "greedy", "--hands", "60", "--json", str(lad), "--no-progress"])
    assert json.loads(lad.read_text())["agents"] == ["random", "greedy"]


@pytest.mark.parametrize(("name", "players"), [("block-2p", 2), ("block-3p", 3), ("block-4p", 4)])
def test_shipped_policies_load_and_beat_the_baselines(name: str, players: int) -> None:
    agent = agents.load(name)
    assert agent.name == name
    vs_random = evaluate([name, "random"], num_players=players, hands=600, seed=77)
    assert vs_random.stats[0].margin.lo > 0.0
    if players == 2:
        vs_greedy = evaluate([agent, "greedy"], hands=1000, seed=78)
        assert vs_greedy.stats[0].margin.lo > 0.5
