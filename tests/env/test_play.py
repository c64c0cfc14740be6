"""The terminal game, driven through its input: whole games for 2, 3 and 4 players (answers
by number and by tile and end), bad answers, hint, q with a saved and resumed game, end of
input, opponents by any evaluate name, and the answer parser."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import agents
from block_env import play, records, rules
from block_env.config import BlockConfig
from block_env.env import raw_env
from block_env.tiles import tile_index


class Answers:
    """``ask`` for the game: the given answers, then a default (or end of input)."""

    def __init__(self, answers: list[str], then: str | None = None) -> None:
        self.answers = list(answers)
        self.then = then
        self.prompts = 0

    def __call__(self, prompt: str) -> str:
        self.prompts += 1
        if self.answers:
            return self.answers.pop(0)
        if self.then is None:
            raise EOFError
        return self.then


def human_moves(record: dict, seat: int = 0) -> int:
    return sum(m["seat"] == seat for h in record["hands"] for m in h["moves"])


@pytest.mark.parametrize(
    "options",
    [
        ["--players", "2", "--opponents", "rules"],
        ["--players", "3", "--opponents", "greedy", "random"],
        ["--players", "4", "--opponents", "rules", "greedy", "random"],
        ["--partnership", "--opponents", "rules", "omniscient"],  # 4 players by default
        ["--players", "3", "--opener", "highest_double", "--seat", "2"],
    ],
    ids=["2p", "3p", "4p", "partnership", "3p-highest-double-seat2"],
)
def test_whole_game_by_numbers(options: list[str], tmp_path: Path, capsys) -> None:
    path = tmp_path / "game.json"
    ask = Answers([], then="1")
    status = play.main([*options, "--seed", "4", "--record", str(path)], ask=ask)
    out = capsys.readouterr().out
    assert status == 0
    assert "Game over" in out and "Traceback" not in out
    record = records.load(path)
    assert record["finished"]
    report = records.replay(record)
    assert report.scores == record["scores"]
    seat = int(options[options.index("--seat") + 1]) if "--seat" in options else 0
    assert human_moves(record, seat) == ask.prompts  # every answer was one move
    target = BlockConfig(**record["config"]).target
    assert max(record["scores"]) >= target
    # What each turn shows.
    for words in ("Your hand:", "Open ends: left", "Legal moves:", "Scores:", "Last moves:"):
        assert words in out
    assert re.search(r"player_\d \([^)]*\): \d+ tiles?", out)
    assert f"target {target}" in out


def test_text_is_plain_when_not_a_terminal(capsys) -> None:
    play.main(["--seed", "1", "--episode", "hand"], ask=Answers([], then="1"))
    out = capsys.readouterr().out
    assert "\x1b[" not in out  # no escape codes for a pipe or a file


@pytest.mark.parametrize("players", [2, 3, 4])
def test_whole_game_by_tile_and_end(players: int) -> None:
    """Answers given as ``a-b left/right`` (or ``pass``) for a random legal move."""
    rng = np.random.default_rng(players)
    raw = raw_env(num_players=players, target_score=40)
    env = records.RecordingWrapper(raw)
    env.reset(seed=players)
    bots = {s: agents.make("greedy") for s in range(1, players)}
    out = io.StringIO()

    def ask(prompt: str) -> str:
        mask = raw.observe(raw.agent_selection)["action_mask"]
        action = int(rng.choice(np.flatnonzero(mask)))
        ask.chosen.append(action)
        tiles = play.rendering.tiles_of(raw.config)
        if action == tiles.pass_action:
            return "pass"
        a, b = tiles.tiles[action // 2]
        return f"{a}-{b} {'left' if action % 2 == 0 else 'right'}"

    ask.chosen = []
    game = play.Game(env, bots, 0, ["you", "g", "g", "g"][:players], play.Screen(out), ask=ask)
    assert game.play() == 0
    assert raw.game.episode_over
    mine = [m["action"] for h in env.record["hands"] for m in h["moves"] if m["seat"] == 0]
    assert mine == ask.chosen  # every answer became exactly the move it named
    assert "Game over" in out.getvalue()


def test_bad_answers_get_a_message_and_the_same_question(tmp_path: Path, capsys) -> None:
    path = tmp_path / "game.json"
    bad = ["", "xyz", "0", "99", "9-9 left", "1-2-3", "pass please"]
    ask = Answers([*bad, "1", "q"])
    status = play.main(["--seed", "0", "--record", str(path)], ask=ask)
    out = capsys.readouterr().out
    assert status == 0
    assert out.count("Legal moves:") >= 2  # shown again only after a real move
    assert "Please answer" in out
    assert "'xyz' is not a move" in out
    assert "There is no move 0" in out and "There is no move 99" in out
    assert "not a tile" in out  # 9-9 is not in the set
    assert out.count("is not a move") >= 3  # xyz, 1-2-3, pass please
    record = records.load(path)
    assert human_moves(record) == 1  # only the "1" was played
    assert ask.prompts == len(bad) + 2


def test_parse_answer_tile_forms() -> None:
    config = BlockConfig(num_players=2)
    hands = (
        sum(1 << tile_index(t) for t in [(3, 5), (5, 5), (1, 2)]),
        sum(1 << tile_index(t) for t in [(0, 0), (6, 6)]),
    )
    state = rules.start_hand(config, hands, 0, (0, 0))
    # A position with open ends 5 (left) and 3 (right), seat 0 to play.
    state = state._replace(line=((tile_index((3, 6)), 0),), left=5, right=3)
    legal = list(rules.legal_actions(state))
    tiles = play.rendering.tiles_of(config)
    t35, t55 = tile_index((3, 5)), tile_index((5, 5))
    assert play.parse_answer("3-5 left", legal, state, tiles) == 2 * t35
    assert play.parse_answer("[5|3] right", legal, state, tiles) == 2 * t35 + 1
    assert "fits both ends" in play.parse_answer("3-5", legal, state, tiles)
    assert play.parse_answer("5 5", legal, state, tiles) == 2 * t55  # only the left fits
    assert "does not fit the right end (3)" in play.parse_answer("5-5 r", legal, state, tiles)
    assert "fits neither open end" in play.parse_answer("1-2 left", legal, state, tiles)
    assert "You do not hold [0|1]" in play.parse_answer("0-1 left", legal, state, tiles)
    assert "cannot pass" in play.parse_answer("pass", legal, state, tiles)
    assert play.parse_answer(str(len(legal)), legal, state, tiles) == legal[-1]
    assert play.parse_answer(" Q ", legal, state, tiles) == "quit"
    assert play.parse_answer("hint", legal, state, tiles) == "hint"
    assert play.parse_answer("hint pimc-20", legal, state, tiles) == "hint:pimc-20"


def test_hint_shows_the_agents_move(capsys) -> None:
    status = play.main(["--seed", "2", "--episode", "hand"], ask=Answers(["hint", "q"]))
    out = capsys.readouterr().out
    assert status == 0
    hint = re.search(r"Hint \(rules\): (\d+)\) (.+)", out)
    assert hint is not None
    number, text = int(hint.group(1)), hint.group(2)
    assert re.search(rf"^  {number}\) {re.escape(text)}$", out, re.MULTILINE)


def test_hint_by_another_agent(capsys) -> None:
    answers = Answers(["hint greedy", "hint nobody", "q"])
    assert play.main(["--seed", "2", "--episode", "hand"], ask=answers) == 0
    out = capsys.readouterr().out
    assert re.search(r"Hint \(greedy\): \d+\) ", out)
    assert "No hint: agent 'nobody' cannot be built" in out


def test_q_saves_and_resume_continues_the_same_game(tmp_path: Path, capsys) -> None:
    whole = tmp_path / "whole.json"
    play.main(["--seed", "9", "--record", str(whole)], ask=Answers([], then="1"))
    part = tmp_path / "part.json"
    play.main(["--seed", "9", "--record", str(part)], ask=Answers(["1", "1", "1", "q"]))
    out = capsys.readouterr().out
    assert f"saved in {part}" in out and "--resume" in out
    saved = records.load(part)
    assert not saved["finished"] and human_moves(saved) == 3
    assert records.replay(saved).finished is False
    assert play.main(["--resume", str(part)], ask=Answers([], then="1")) == 0
    resumed, uninterrupted = records.load(part), records.load(whole)
    assert resumed["finished"]
    assert resumed["hands"] == uninterrupted["hands"]  # deals, moves and results
    assert resumed["scores"] == uninterrupted["scores"]
    # A finished game resumes to its end at once.
    assert play.main(["--resume", str(part)], ask=Answers([])) == 0
    assert "This game is over" in capsys.readouterr().out


def test_end_of_input_exits_cleanly_through_stdin(tmp_path: Path) -> None:
    path = tmp_path / "game.json"
    out = subprocess.run(
        [sys.executable, "-m", "block_env.play", "--players", "3", "--seed", "1"]
        + ["--record", str(path)],
        input="1\nnonsense\n1\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "End of input" in out.stdout and f"saved in {path}" in out.stdout
    assert "Traceback" not in out.stderr + out.stdout
    record = records.load(path)
    assert human_moves(record) == 2 and not record["finished"]
    records.replay(record)


def test_whole_game_through_stdin() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "block_env.play", "--players", "4", "--seed", "3"]
        + ["--episode", "hand", "--opponents", "random"],
        input="1\n" * 30,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "Game over" in out.stdout and "Hand over" in out.stdout


def test_policy_opponent_and_language(capsys) -> None:
    status = play.main(
        ["--seed", "5", "--episode", "hand", "--opponents", "block-2p", "--lang", "tr"],
        ask=Answers([], then="1"),
    )
    out = capsys.readouterr().out
    assert status == 0 and "player_1 (block-2p)" in out
    assert "Line described: Taşlar:" in out


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (["--opponents", "nobody"], "cannot be built"),
        (["--seat", "3"], "is not a seat"),
        (["--players", "3", "--partnership"], "partnership"),
        (["--players", "3", "--opponents", "block-2p"], "trained for"),
        (["--hint-agent", "nobody"], "cannot be built"),
        (["--record", "/proc/no/such/place.json"], "cannot write it"),
    ],
)
def test_bad_setup_is_one_line(options: list[str], words: str, capsys) -> None:
    assert play.main(options, ask=Answers([])) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


def test_resume_of_a_tampered_record_is_refused(tmp_path: Path, capsys) -> None:
    path = tmp_path / "game.json"
    play.main(["--seed", "9", "--record", str(path)], ask=Answers(["1", "q"]))
    record = records.load(path)
    record["hands"][0]["moves"][0]["seat"] = 1 - record["hands"][0]["moves"][0]["seat"]
    records.save(record, path)
    assert play.main(["--resume", str(path)], ask=Answers([])) == 2
    assert "does not replay" in capsys.readouterr().err


class Broken:
    def act(self, observation: dict) -> int:
        raise RuntimeError("out of order")


def test_a_failing_opponent_saves_the_game(tmp_path: Path) -> None:
    raw = raw_env(num_players=2)
    env = records.RecordingWrapper(raw, players=["you", "broken"])
    env.reset(seed=0, options={"leader": 1})
    out = io.StringIO()
    path = tmp_path / "game.json"
    game = play.Game(env, {1: Broken()}, 0, ["you", "broken"], play.Screen(out), path)
    assert game.play() == 1
    assert "failed to choose a move (RuntimeError: out of order)" in out.getvalue()
    assert records.load(path)["hands"][0]["moves"] == []


def test_smaller_tile_set_game_records_and_replays(tmp_path: Path, capsys) -> None:
    path = tmp_path / "game.json"
    options = ["--max-pip", "3", "--episode", "hand", "--opponents", "random", "--seed", "1"]
    assert play.main([*options, "--record", str(path)], ask=Answers([], then="1")) == 0
    record = records.load(path)
    assert record["config"]["max_pip"] == 3 and record["finished"]
    assert all(max(max(t) for t in hand) <= 3 for hand in record["hands"][0]["deal"] if hand)
    assert records.replay(record).scores == record["scores"]
