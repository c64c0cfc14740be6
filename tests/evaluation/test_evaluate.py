"""Duplicate-deal evaluation and the ladder, on agents whose outcomes are known."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from helpers import TWO_PLAYER_HAND_GAME

import agents
from block_env.env import raw_env
from block_env.evaluate import (
    Estimate,
    SetupError,
    bradley_terry,
    build_agent,
    check_game,
    evaluate,
    ladder,
    main,
    parse_spec,
    proportion_estimate,
    ratio_estimate,
    wilson_interval,
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
            result = env.infos["player_0"]
            won = int(result["hand_points"].max())
            if result["hand_winner"] >= 0:
                total += won if result["hand_winner"] == rules_seat else -won
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
    with pytest.raises(SetupError, match="agent indices"):
        evaluate(["random", "greedy"], lineup=["a", "b"])
    with pytest.raises(ValueError, match="no-such-agent"):
        build_agent("no-such-agent")


def test_parse_spec_and_aliases() -> None:
    assert parse_spec("pimc:worlds=20,budget=0.05") == ("pimc", {"worlds": 20, "budget": 0.05})
    assert parse_spec("pimc-20") == ("pimc", {"worlds": 20})
    assert parse_spec("pimc-7") == ("pimc", {"worlds": 7})  # any number of worlds
    assert parse_spec("pimc-7.pt") == ("pimc-7.pt", {})  # a policy file, not the alias
    assert parse_spec("greedy") == ("greedy", {})
    assert build_agent("pimc-3", seed=0).worlds == 3
    with pytest.raises(SetupError, match="worlds=0 is not allowed"):
        build_agent("pimc-0")
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


def test_the_default_ladder_holds_the_shipped_policy_of_the_game() -> None:
    from block_env.evaluation import ladder_specs

    assert "block-3p" in ladder_specs(3) and "block-4p" in ladder_specs(4)
    teams = ladder_specs(4, partnership=True)
    assert "block-partnership" in teams and "block-4p" not in teams
    assert teams[:5] == ["random", "greedy", "rules", "pimc-20", "pimc-100"]


def test_ladder_three_players_uses_both_field_lineups() -> None:
    res = ladder(["random", "greedy"], num_players=3, hands=150, bootstrap=20)
    assert res.margins[1][0].mean > 0 and res.ratings[1].mean > 0


@pytest.mark.parametrize(("players", "partnership"), [(2, False), (3, False), (4, True)])
def test_a_match_ladder_rates_the_matches_won(players: int, partnership: bool) -> None:
    """Each pair plays whole matches; the win shares that rate it are the shares of the
    matches won, which the pair's own evaluation reports (2 players and partnership: one
    lineup; 3 players: the two field lineups, whose matches each have one winner)."""
    n = players
    game = {"num_players": n, "partnership": partnership, "episode": "match", "seed": 3}
    res = ladder(["random", "rules"], matches=2 * n, bootstrap=5, **game)
    assert res.matches_per_pair == 2 * n and res.hands_per_pair > 2 * n
    assert res.config["episode"] == "match" and f"{2 * n} matches" in res.table()
    if n == 3:
        a = evaluate(["random", "rules"], matches=2 * n, **game)
        b = evaluate(["rules", "random"], matches=2 * n, **game)
        won = a.stats[0].match_win.mean * 2 * n + b.stats[1].match_win.mean * 2 * (n - 1) * n
        assert res.win_share[0][1] == pytest.approx(won / (4 * n))
    else:
        direct = evaluate(["random", "rules"], matches=2 * n, **game)
        assert res.win_share[0][1] == pytest.approx(direct.stats[0].match_win.mean)
    assert res.win_share[0][1] + res.win_share[1][0] == pytest.approx(1.0)
    hands = ladder(["random", "rules"], num_players=n, partnership=partnership, hands=4 * n)
    assert hands.matches_per_pair == 0 and "episode" not in hands.config
    with pytest.raises(SetupError, match="episode='match'"):
        ladder(["random", "rules"], num_players=n, partnership=partnership, matches=4)


def test_cli_writes_table_and_json(tmp_path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "e.json"
    assert main(["greedy", "random", "--hands", "100", "--json", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "greedy" in text and "points/hand margin" in text
    data = json.loads(out.read_text())
    assert [s["name"] for s in data["stats"]] == ["greedy", "random"]
    assert data["hands"] == 100 and data["engine"] == "aec"
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


# ----------------------------------------------------------------------------- proportions


@pytest.mark.parametrize(
    ("x", "n", "lo", "hi"),
    # Newcombe (1998), Statistics in Medicine 17:857, Table I, method 3 (Wilson score).
    [
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_interval_known_values(x: int, n: int, lo: float, hi: float) -> None:
    got = wilson_interval(x, n)
    assert got == pytest.approx((lo, hi), abs=5e-5)


def test_proportion_intervals_stay_inside_0_1_on_tiny_samples() -> None:
    for deals in (1, 2, 3):
        for per_deal in (1, 2, 3, 4):
            trials = np.full(deals, per_deal, dtype=float)
            for wins in np.ndindex(*([per_deal + 1] * deals)):
                e = proportion_estimate(np.array(wins, dtype=float), trials)
                assert 0.0 <= e.lo <= e.mean <= e.hi <= 1.0, (wins, trials, e)
                assert e.hi > e.lo  # never a point, not even at 0/n or n/n
                if sum(wins) == 0:
                    assert e.lo == 0.0 and e.hi > 0.0
                if sum(wins) == deals * per_deal:
                    assert e.hi == 1.0 and e.lo < 1.0
    # The example of a 4-hand evaluation: 1 of 4 hands won.
    e = proportion_estimate(np.array([1.0, 0.0]), np.array([2.0, 2.0]))
    assert e.mean == 0.25 and 0.0 < e.lo < 0.25 < e.hi < 1.0


def test_proportion_interval_respects_the_deal_pairing() -> None:
    # Each deal won once in two seatings (no variance over deals): capped at plain Wilson.
    split = proportion_estimate(np.ones(50), np.full(50, 2.0))
    assert (split.lo, split.hi) == pytest.approx(wilson_interval(50, 100))
    # All-or-nothing deals (the two hands of a deal agree): about 50 independent units.
    lumped = proportion_estimate(np.tile([2.0, 0.0], 25), np.full(50, 2.0))
    assert lumped.mean == 0.5
    assert lumped.hi - lumped.lo > split.hi - split.lo
    assert (lumped.lo, lumped.hi) == pytest.approx(wilson_interval(0.5 * 49, 49), abs=1e-9)
    # No variance to estimate (0/n, n/n, one deal): each deal counts as one trial.
    none = proportion_estimate(np.zeros(10), np.full(10, 2.0))
    assert (none.lo, none.hi) == pytest.approx(wilson_interval(0, 10))  # upper 27.75%
    one = proportion_estimate(np.array([1.0]), np.array([2.0]))
    assert (one.lo, one.hi) == pytest.approx(wilson_interval(0.5, 1))


@pytest.mark.parametrize("kind", ["independent", "both-or-none", "one-of-two"])
def test_proportion_interval_covers_about_95_percent(kind: str) -> None:
    """Simulated deals of two hands: independent hands, hands that always agree (positive
    correlation) and exactly one win per deal or none (negative)."""
    rng = np.random.default_rng(1)
    p, deals, reps, covered = 0.3, 20, 2000, 0
    for _ in range(reps):
        if kind == "independent":
            wins = rng.binomial(2, p, deals)
        elif kind == "both-or-none":
            wins = 2 * rng.binomial(1, p, deals)
        else:
            wins = rng.binomial(1, 2 * p, deals)
        e = proportion_estimate(wins.astype(float), np.full(deals, 2.0))
        covered += e.lo <= p <= e.hi
    assert 0.93 <= covered / reps <= 0.995


def test_small_evaluation_reports_win_rates_inside_0_100() -> None:
    res = evaluate(["greedy", "random"], hands=4, seed=1)
    for s in res.stats:
        assert 0.0 <= s.hand_win.lo <= s.hand_win.mean <= s.hand_win.hi <= 1.0
    match = evaluate(["greedy", "random"], episode="match", matches=2, target_score=5)
    for s in match.stats:
        assert 0.0 <= s.match_win.lo <= s.match_win.hi <= 1.0


# ----------------------------------------------------------------------------- command line


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--no-progress"])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, out: str, err: str, *needles: str) -> None:
    assert code == 2
    assert out == ""  # refused before anything was played or printed
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m block_env.evaluate: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["greedy", "random", "--hands", "3"], ["--hands 3", "multiple of 2", "2 or 4"]),
        (["greedy", "random", "--players", "3", "--hands", "4"], ["multiple of 3", "3 or 6"]),
        (["greedy", "random", "--episode", "match", "--matches", "5"], ["--matches 5", "4 or 6"]),
        (["--ladder", "random", "greedy", "--players", "3", "--hands", "400"], ["399 or 402"]),
        (["--ladder", "random", "greedy", "--episode", "match", "--matches", "5"], ["4 or 6"]),
        (["--ladder", "random", "greedy", "--episode", "match", "--hands", "4"], ["--matches"]),
        (["--ladder", "random", "greedy", "--matches", "4"], ["episode='match'"]),
    ],
)
def test_cli_refuses_a_count_that_is_not_whole_deals(capsys, argv, needles) -> None:
    assert_one_line_error(*run_cli(capsys, *argv), *needles)


def test_cli_refuses_a_single_agent(capsys) -> None:
    assert_one_line_error(*run_cli(capsys, "greedy", "--hands", "4"), "two or more agents")
    with pytest.raises(SetupError, match="at least two agents"):
        evaluate(["greedy"], hands=4)


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["no-such-agent", "random"], ["no-such-agent"]),
        (["missing/policy.pt", "random"], ["missing/policy.pt"]),
        (["greedy", "random", "--hands", "abc"], ["--hands", "abc"]),
        (["greedy", "random", "--hands", "0"], ["--hands 0"]),
        (["greedy", "random", "--players", "5"], ["num_players=5"]),
        (["greedy", "random", "--seed", "-1"], ["seed=-1"]),
        (["greedy", "random", "--target", "0"], ["target_score=0"]),
        (["greedy", "random", "--episode", "set"], ["--episode"]),
        (["pimc:20", "random"], ["key=value"]),
        (["greedy", "random", "rules"], ["3 agents", "2-player"]),
    ],
)
def test_cli_errors_are_one_line_with_status_2(capsys, argv, needles) -> None:
    assert_one_line_error(*run_cli(capsys, *argv), *needles)


def test_cli_rejects_a_bad_policy_file_in_one_line(tmp_path, capsys) -> None:
    bad = tmp_path / "empty.pt"
    bad.write_bytes(b"")
    assert_one_line_error(*run_cli(capsys, str(bad), "random"), str(bad), "torch.save")


def test_cli_json_into_a_missing_folder_is_created_first(tmp_path, capsys) -> None:
    out = tmp_path / "new" / "deeper" / "e.json"
    code, text, _ = run_cli(capsys, "greedy", "random", "--hands", "4", "--json", str(out))
    assert code == 0 and f"wrote {out}" in text
    assert json.loads(out.read_text())["hands"] == 4


def test_cli_refuses_an_unwritable_json_path_before_playing(tmp_path, capsys) -> None:
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    for target, needle in [(tmp_path, "folder"), (a_file / "e.json", "cannot create")]:
        assert_one_line_error(
            *run_cli(capsys, "greedy", "random", "--json", str(target)), "--json", needle
        )
    # A setup error found first leaves no folder behind.
    new = tmp_path / "not-made" / "e.json"
    assert_one_line_error(*run_cli(capsys, "no-such-agent", "random", "--json", str(new)))
    assert not new.parent.exists()


def test_cli_refuses_a_policy_trained_for_another_game(capsys) -> None:
    code, out, err = run_cli(capsys, "block-3p", "random", "--hands", "4")
    assert_one_line_error(code, out, err, "block-3p", "num_players=3", "num_players=2")
    assert "--allow-mismatch" in err
    with pytest.raises(SetupError, match="num_players differ"):
        evaluate(["block-2p", "random"], num_players=4, hands=4)
    with pytest.raises(SetupError, match="opener"):
        evaluate(["block-2p", "random"], opener="highest_double", hands=4)


def test_allow_mismatch_plays_it_with_a_warning(capsys) -> None:
    code, out, err = run_cli(capsys, "block-3p", "random", "--hands", "4", "--allow-mismatch")
    assert code == 0 and "warning: block-3p was trained for num_players=3" in err
    assert "block-3p" in out and "warning" not in out  # the table, warnings on stderr
    res = evaluate(["block-3p", "random"], hands=4, allow_mismatch=True)
    assert len(res.notes) == 1 and res.to_dict()["notes"] == res.notes


def test_shipped_policy_in_its_own_game_has_no_warning(capsys) -> None:
    code, _, err = run_cli(capsys, "block-2p", "random", "--hands", "4", "--episode", "hand")
    assert code == 0 and err == ""


def test_old_policy_file_warns_that_its_game_is_not_checked(tmp_path, capsys) -> None:
    import torch

    from agents.network import ActorCritic, NetConfig
    from agents.policy_files import policy_dict

    path = tmp_path / "old.pt"
    torch.save(policy_dict(ActorCritic(NetConfig(hidden=(8,)))), path)
    code, _, err = run_cli(capsys, str(path), "random", "--hands", "4")
    assert code == 0
    assert "warning:" in err and "not checked" in err and "num_players=2" in err
    code, out, err = run_cli(capsys, "--ladder", str(path), "random", "--hands", "4")
    assert code == 0 and "not checked" in err and "not checked" not in out


class _ScoreReader:
    """A policy-like agent that reads the match scores, trained on single 2-player hands."""

    class model:  # noqa: N801 - mimics PolicyAgent.model.net
        class net:  # noqa: N801
            use_scores = True

    game = TWO_PLAYER_HAND_GAME


def test_check_game_compares_episode_and_target_only_for_score_readers() -> None:
    from block_env.config import BlockConfig

    match = BlockConfig(num_players=2, episode="match")
    with pytest.raises(SetupError, match="episode"):
        check_game(_ScoreReader(), "reader", match)
    assert check_game(_ScoreReader(), "reader", BlockConfig(num_players=2, episode="hand")) is None
    blind = agents.load("block-2p")  # use_scores=False: the match scores are hidden from it
    assert check_game(blind, "block-2p", match) is None
    assert check_game(agents.make("greedy"), "greedy", BlockConfig(num_players=4)) is None


def test_ladder_skips_a_policy_for_another_game_and_reports_hands_played() -> None:
    res = ladder(["random", "greedy", "block-3p"], hands=40, bootstrap=5)
    assert "block-3p" in res.skipped and "num_players" in res.skipped["block-3p"]
    assert res.agents == ["random", "greedy"]
    three = ladder(["random", "greedy"], num_players=3, hands=20, bootstrap=5)
    assert three.hands_per_pair == 21  # 7 deals x 3 seatings, as played


def test_summary_is_the_agents_headline_figures():
    res = evaluate(["greedy", "random"], num_players=2, hands=8, seed=3)
    for agent in (0, 1):
        s = res.stats[agent]
        assert res.summary(agent) == {
            "margin": s.margin.mean,
            "margin_lo": s.margin.lo,
            "margin_hi": s.margin.hi,
            "hand_win": s.hand_win.mean,
            "hands": 8,
        }
    assert res.summary(0)["margin"] == -res.summary(1)["margin"]


def test_the_evaluate_module_is_the_package_and_imports_no_agents() -> None:
    """``block_env.evaluate`` re-exports ``block_env.evaluation`` and ``block_env.agent_specs``
    (the same objects), and importing it loads neither ``agents`` nor torch."""
    import subprocess
    import sys

    import block_env.agent_specs as specs
    import block_env.evaluate as ev
    import block_env.evaluation as evaluation

    for name in set(ev.__all__) - {"PROG", "main"}:  # main runs under ev.PROG
        home = evaluation if hasattr(evaluation, name) else specs
        assert getattr(ev, name) is getattr(home, name), name
    code = (
        "import sys, block_env.evaluate, block_env.wrappers, block_env.play\n"
        "print(sorted(m for m in ('agents', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_command_name_in_messages_is_the_modules_prog(monkeypatch, capsys) -> None:
    """The ``block-env evaluate`` console script sets ``block_env.evaluate.PROG``."""
    import block_env.evaluate as ev

    monkeypatch.setattr(ev, "PROG", "block-env evaluate")
    assert ev.main(["rules"]) == 2
    assert capsys.readouterr().err.startswith("block-env evaluate: error: give two or more")
    with pytest.raises(SystemExit):
        ev.main(["--help"])
    assert capsys.readouterr().out.startswith("usage: block-env evaluate ")


def test_cli_lineup_seats_a_bot_as_the_first_agents_partner(
    capsys: pytest.CaptureFixture, tmp_path
) -> None:
    out_file = tmp_path / "adhoc.json"
    args = ["rules", "greedy", "--players", "4", "--partnership", "--hands", "80"]
    code, out, err = run_cli(capsys, *args, "--lineup", "0,1,1,1", "--json", str(out_file))
    assert code == 0, err
    data = json.loads(out_file.read_text())
    assert data["lineup"] == [0, 1, 1, 1]
    # the first agent's margin is its team's; the other agent's averages its partner seat
    # (+the team's) and its two opponent seats (-the team's each)
    first, other = (data["stats"][i]["margin"]["mean"] for i in (0, 1))
    assert other == pytest.approx((first - 2 * first) / 3)
    plain = tmp_path / "teams.json"
    assert run_cli(capsys, *args, "--json", str(plain))[0] == 0
    assert json.loads(plain.read_text())["lineup"] == [0, 1, 0, 1]


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--lineup", "0,x,1,1"], "give one agent index per seat"),
        (["--lineup", "0,0,0,0"], "using every agent"),
        (["--lineup", "0,1,1,1", "--ladder"], "drop --lineup"),
    ],
)
def test_cli_refuses_bad_lineups(capsys: pytest.CaptureFixture, extra: list[str], needle: str):
    args = ["rules", "greedy", "--players", "4", "--partnership", "--hands", "8", *extra]
    assert_one_line_error(*run_cli(capsys, *args), needle)


def test_an_importable_factory_is_an_agent_spec() -> None:
    from block_env.agent_specs import build_agent

    res = evaluate(["agents.baselines:GreedyAgent", "greedy"], hands=40, seed=5)
    assert res.stats[0].margin.mean == 0.0  # the same deterministic bot in both seats
    seeded = build_agent("agents.baselines:RandomAgent:seed=3")
    again = build_agent("agents.baselines:RandomAgent", seed=3)
    env = raw_env()
    env.reset(seed=1)
    obs = env.observe(env.agent_selection)
    assert [seeded.act(obs) for _ in range(20)] == [again.act(obs) for _ in range(20)]
    with pytest.raises(SetupError, match="no_such_module"):
        build_agent("no_such_module:make")
    with pytest.raises(SetupError, match="has no attribute 'nothing'"):
        build_agent("agents.baselines:nothing")


def test_a_result_names_its_engine_and_refuses_an_unknown_one() -> None:
    from block_env.config import BlockConfig
    from block_env.evaluation.results import eval_result

    res = evaluate(["greedy", "random"], hands=4)
    assert res.engine == "aec" and res.to_dict()["engine"] == "aec"
    with pytest.raises(ValueError, match="engine='gpu' is not one of aec, batched"):
        eval_result(["a", "b"], [0, 1], BlockConfig(), "hand", 0, res.per_deal, 0.0, engine="gpu")
