"""Evaluation against a control (``evaluate(..., control=...)``, ``--control``): the control's
games are the games it would play seated, bit for bit (the skipped ones included), so an
agent's gain over a control is minus the control's gain over it on the same deals."""

from __future__ import annotations

import json

import numpy as np
import pytest

import agents
from agents.guided import GuidedSearchAgent
from agents.pimc import PIMCAgent
from block_env.env import raw_env
from block_env.evaluate import SetupError, evaluate, main


def _swap_checks(first: str, control: str, other: str, **kwargs) -> tuple:
    """The evaluation of ``first`` against ``control`` and the swapped one, after checking
    that each one's games are the other's control games, per deal and agent."""
    ahead = evaluate([first, other], control=control, **kwargs)
    swapped = evaluate([control, other], control=first, **kwargs)
    for own, of_control in (("reward", "control_reward"), ("match_wins", "control_match_wins")):
        assert np.array_equal(ahead.per_deal[own], swapped.per_deal[of_control])
        assert np.array_equal(swapped.per_deal[own], ahead.per_deal[of_control])
    assert np.array_equal(ahead.per_deal["games_apart"], swapped.per_deal["games_apart"])
    return ahead, swapped


@pytest.mark.parametrize(
    ("first", "control", "other", "kwargs"),
    [
        ("greedy", "rules", "rules", {"hands": 200, "seed": 3}),
        ("random", "rules", "greedy", {"num_players": 3, "hands": 60, "seed": 11}),
        ("pimc:worlds=3", "random", "rules", {"num_players": 3, "hands": 30, "seed": 5}),
    ],
    ids=["deterministic", "random-agent", "pimc"],
)
def test_the_control_games_are_the_games_it_plays_seated(first, control, other, kwargs) -> None:
    """Skipped control games (the control agreed all game) and replayed ones alike equal the
    game played with the control seated: the same deals and, through reseeding, the same
    random draws (PIMC's worlds, the random agent's picks)."""
    ahead, swapped = _swap_checks(first, control, other, **kwargs)
    assert 0 < ahead.control.games_apart < ahead.hands  # both kinds of game were checked
    assert ahead.control.gain.mean == pytest.approx(-swapped.control.gain.mean, abs=1e-12)
    assert ahead.control.margin.mean == pytest.approx(swapped.stats[0].margin.mean, abs=1e-12)
    gain = ahead.stats[0].margin.mean - ahead.control.margin.mean
    assert ahead.control.gain.mean == pytest.approx(gain, abs=1e-12)


@pytest.mark.parametrize(
    ("first", "control", "other", "kwargs"),
    [
        ("greedy", "rules", "rules", {"matches": 40, "seed": 8, "target_score": 30}),
        (
            "random",
            "rules",
            "pimc:worlds=2",
            {"num_players": 3, "matches": 12, "seed": 2, "target_score": 20},
        ),
    ],
    ids=["deterministic", "random-agent-beside-pimc"],
)
def test_in_matches_the_gain_is_in_matches_won_over_the_control_games(
    first, control, other, kwargs
) -> None:
    """In whole matches the control's games are its matches seated, bit for bit, and the
    gain is the difference of the two shares of seat-matches won."""
    ahead, swapped = _swap_checks(first, control, other, episode="match", **kwargs)
    assert ahead.control.unit == "match win share"
    assert ahead.control.games == ahead.matches
    assert 0 < ahead.control.games_apart <= ahead.matches
    assert ahead.control.gain.mean == pytest.approx(-swapped.control.gain.mean, abs=1e-12)
    assert ahead.control.margin.mean == pytest.approx(swapped.stats[0].match_win.mean, abs=1e-12)
    gain = ahead.stats[0].match_win.mean - ahead.control.margin.mean
    assert ahead.control.gain.mean == pytest.approx(gain, abs=1e-12)
    assert ahead.control.gain.lo < ahead.control.gain.mean < ahead.control.gain.hi
    assert "percentage points of matches won" in ahead.table()


def test_a_control_that_always_agrees_gains_exactly_nothing() -> None:
    res = evaluate(["pimc:worlds=2", "rules"], num_players=3, hands=30, control="pimc:worlds=2")
    gain = res.control.gain
    assert res.control.games_apart == 0 and res.control.games == 30
    assert gain.mean == 0.0 and gain.lo == 0.0 and gain.hi == 0.0
    assert np.array_equal(res.per_deal["reward"], res.per_deal["control_reward"])


def test_guided_search_draws_the_worlds_of_the_pimc_it_stands_beside() -> None:
    """With weight 0 the guided agent plays PIMC's move on the same worlds, so beside a PIMC
    control reseeded alike it never chooses apart (partnership, information-state network)."""
    res = evaluate(
        ["guided:policy=block-partnership,worlds=2,weight=0", "rules"],
        num_players=4,
        partnership=True,
        hands=8,
        lineup=[0, 1, 1, 1],
        control="pimc:worlds=2",
    )
    assert res.control.games_apart == 0 and res.control.gain.mean == 0.0


def test_a_control_run_repeats_in_worker_processes_bit_for_bit() -> None:
    """Every game is reseeded from (seed, deal, seating), so the worker count changes nothing,
    not even for an agent with its own randomness."""
    kwargs = {"num_players": 3, "hands": 48, "seed": 9, "control": "greedy"}
    serial = evaluate(["random", "rules"], **kwargs)
    parallel = evaluate(["random", "rules"], workers=2, **kwargs)
    for key in serial.per_deal:
        assert np.array_equal(serial.per_deal[key], parallel.per_deal[key]), key
    assert serial.control == parallel.control


@pytest.mark.parametrize(
    ("make", "seed"),
    [
        (lambda seed: PIMCAgent(worlds=3, seed=seed), 4),
        (lambda seed: agents.make("random", seed=seed), 5),
        (lambda seed: agents.load("block-2p-plain", greedy=False, seed=seed), 6),
        (lambda seed: GuidedSearchAgent("block-2p-plain", worlds=3, seed=seed), 7),
    ],
    ids=["pimc", "random", "sampling-policy", "guided"],
)
def test_reseed_restarts_an_agent_as_if_built_with_that_seed(make, seed) -> None:
    env = raw_env(episode="hand")
    env.reset(seed=2)
    observation = env.observe(env.agent_selection)
    fresh = make(seed)
    want = [fresh.act(observation) for _ in range(12)]
    used = make(seed + 100)
    [used.act(observation) for _ in range(5)]
    used.reseed(seed)
    assert [used.act(observation) for _ in range(12)] == want


def test_the_result_reports_the_control_only_when_there_is_one(tmp_path, capsys) -> None:
    plain = evaluate(["greedy", "rules"], hands=20)
    assert plain.control is None and "control" not in plain.to_dict()
    assert "control_reward" not in plain.per_deal
    out = tmp_path / "res.json"
    argv = ["greedy", "rules", "--hands", "20", "--control", "rules", "--json", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    line = "greedy in place of control rules (same deals and draws): gain"
    assert line in capsys.readouterr().out
    data = json.loads(out.read_text())["control"]
    assert data["control"] == "rules" and data["games"] == 20
    assert set(data["gain"]) == {"mean", "lo", "hi"}


def test_setups_a_control_cannot_replay_are_refused_before_play() -> None:
    with pytest.raises(SetupError, match="time_budget"):
        evaluate(["pimc:worlds=2,time_budget=0.5", "rules"], hands=4, control="rules")
    with pytest.raises(SetupError, match="time_budget"):
        evaluate(["greedy", "rules"], hands=4, control="pimc:worlds=2,time_budget=0.5")
    with pytest.raises(SetupError, match="is an object"):
        evaluate(["greedy", "rules"], hands=4, control=agents.make("rules"), workers=2)
    with pytest.raises(SetupError, match="neither a spec string"):
        evaluate(["greedy", "rules"], hands=4, control=3)


@pytest.mark.parametrize(
    "extra", [["--ladder"], ["--crossplay", "--partnership", "--players", "4"]]
)
def test_cli_refuses_a_control_with_a_ladder_or_crossplay(extra, capsys) -> None:
    assert main(["greedy", "rules", "--control", "rules", *extra]) == 2
    assert "--control" in capsys.readouterr().err
