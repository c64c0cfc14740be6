"""Game records: record -> save -> load -> replay round trips for every variant, the checks
that catch a tampered record, replays that do not depend on the seed, the replay command
line (--check, listing, --gif with one frame per move) and ``evaluate --record``."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import agents
import block_env
from block_env import records
from block_env.records import RecordError, RecordingWrapper, RecordMismatch, replay

VARIANTS = {
    "2p": {"num_players": 2},
    "3p": {"num_players": 3},
    "4p": {"num_players": 4},
    "partnership": {"num_players": 4, "partnership": True},
    "highest_double": {"num_players": 3, "opener": "highest_double"},
    "hand_episode": {"num_players": 2, "episode": "hand"},
    "target_30": {"num_players": 2, "target_score": 30},
}


def play_recorded(config: dict, seed: int, wrap=block_env.raw_env, bot: str = "greedy") -> dict:
    """A whole game between copies of ``bot`` through a RecordingWrapper; its record."""
    env = RecordingWrapper(wrap(**config), players=[bot] * config["num_players"])
    env.reset(seed=seed)
    seats = [agents.make(bot) for _ in range(config["num_players"])]
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else seats[int(agent.rsplit("_", 1)[1])].act(obs))
    return env.record


@pytest.mark.parametrize("wrap", [block_env.raw_env, block_env.env], ids=["raw", "wrapped"])
@pytest.mark.parametrize("name", list(VARIANTS))
def test_round_trip_every_variant(name: str, wrap, tmp_path: Path) -> None:
    config = VARIANTS[name]
    record = play_recorded(config, seed=7, wrap=wrap)
    path = records.save(record, tmp_path / "game.json")
    loaded = records.load(path)
    assert loaded == json.loads(json.dumps(record))
    report = replay(loaded)
    assert report.finished and loaded["finished"]
    assert report.hands == len(loaded["hands"]) >= 1
    assert report.moves == sum(len(h["moves"]) for h in loaded["hands"])
    assert report.scores == loaded["scores"]
    assert report.seeded_deals == report.hands  # the seed still deals the same hands
    # The record holds what the brief asks for.
    assert loaded["version"] == records.VERSION and loaded["seed"] == 7
    for key, value in config.items():
        assert loaded["config"][key] == value
    env = block_env.raw_env(**config)
    n = env.config.num_players
    for hand in loaded["hands"]:
        assert len(hand["deal"]) == n and all(len(tiles) >= 1 for tiles in hand["deal"])
        assert all(0 <= m["seat"] < n for m in hand["moves"])
        assert hand["result"] is not None and len(hand["result"]["points"]) == n
    # The final scores are those of the game itself.
    assert loaded["scores"] == loaded["hands"][-1]["result"]["scores"]
    if config.get("episode") == "hand":
        assert len(loaded["hands"]) == 1
    else:
        assert max(loaded["scores"]) >= env.config.target


def test_records_match_the_env_infos() -> None:
    """Every recorded hand result is what the env reported in its infos."""
    env = RecordingWrapper(block_env.raw_env(num_players=3))
    env.reset(seed=3)
    bot = agents.make("rules")
    seen = []
    for _agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        env.step(bot.act(obs))
        info = env.infos["player_0"]
        if info["hand_over"]:
            seen.append((info["hand_points"].tolist(), info["hand_pips"].tolist()))
    got = [(h["result"]["points"], h["result"]["pips"]) for h in env.record["hands"]]
    assert got == seen


def test_replay_does_not_need_the_seed() -> None:
    """Deals are stored in full: without the seed (or with a seed that deals otherwise)
    every hand is set from the record and the replay still checks out."""
    record = play_recorded({"num_players": 2}, seed=11)
    for seed in (None, 12345):
        other = copy.deepcopy(record)
        other["seed"] = seed
        report = replay(other)
        assert report.scores == record["scores"]
        assert report.seeded_deals < report.hands


def test_a_game_reset_with_options_replays() -> None:
    """A game set up with reset options (hands, leader, scores) records and replays."""
    env = RecordingWrapper(block_env.raw_env(num_players=2, target_score=40))
    hands = [[(0, 0), (0, 1), (1, 1)], [(0, 2), (2, 2), (1, 2)]]
    env.reset(seed=0, options={"hands": hands, "leader": 1, "scores": [10, 20]})
    bot = agents.make("greedy")
    for _agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else bot.act(obs))
    record = env.record
    assert record["hands"][0]["deal"] == [sorted(list(t) for t in h) for h in hands]
    assert record["hands"][0]["leader"] == 1 and record["hands"][0]["scores"] == [10, 20]
    assert replay(record).scores == record["scores"]


def test_illegal_move_in_the_wrapped_env_is_not_recorded() -> None:
    env = RecordingWrapper(block_env.env(num_players=2))
    env.reset(seed=0)
    obs = env.observe(env.agent_selection)
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    env.step(illegal)  # the classic wrapper ends the game; nothing was played
    assert env.record["hands"][0]["moves"] == []


def tampered(record: dict, change) -> dict:
    bad = copy.deepcopy(record)
    change(bad)
    return bad


def _swap_move(record: dict) -> None:
    """Replace the first placement by another tile of the same hand (not legal there)."""
    hand = record["hands"][0]
    move = next(m for m in hand["moves"] if not m.get("pass"))
    held = [t for t in hand["deal"][move["seat"]] if t != move["tile"]]
    move["tile"] = held[-1]


CASES = {
    "points": (lambda r: r["hands"][0]["result"]["points"].__setitem__(0, 99), "'points'"),
    "pips": (lambda r: r["hands"][0]["result"]["pips"].__setitem__(1, 99), "'pips'"),
    "winner": (lambda r: r["hands"][0]["result"].__setitem__("winner", None), "'winner'"),
    "final scores": (lambda r: r["scores"].__setitem__(0, r["scores"][0] + 1), "final scores"),
    "seat": (lambda r: r["hands"][0]["moves"][1].__setitem__("seat", 5), "seat"),
    "move": (_swap_move, "cannot play"),
    "extra move": (
        lambda r: r["hands"][0]["moves"].append(dict(r["hands"][0]["moves"][-1])),
        "already ended",
    ),
    "lost move": (lambda r: r["hands"][0]["moves"].pop(), "still running"),
    "leader": (lambda r: r["hands"][0].__setitem__("leader", 1 - r["hands"][0]["leader"]), "seat"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_tampered_record_is_caught(case: str, tmp_path: Path) -> None:
    record = play_recorded({"num_players": 2}, seed=5)
    change, words = CASES[case]
    bad = tampered(record, change)
    with pytest.raises(RecordMismatch, match=words):
        replay(bad)
    # The command line says MISMATCH in one line and exits with status 1.
    path = records.save(bad, tmp_path / "bad.json")
    out = subprocess.run(
        [sys.executable, "-m", "block_env.replay", str(path), "--check"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert "MISMATCH" in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("not json", "not JSON"),
        ('{"format": "something else"}', "not a block-env game record"),
        (json.dumps({"format": records.FORMAT, "version": 99}), "version 99"),
        (
            json.dumps(
                {"format": records.FORMAT, "version": 1, "config": {}, "hands": [], "scores": []}
            ),
            "no hands",
        ),
    ],
)
def test_malformed_record_is_refused(content: str, words: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(RecordError, match=words):
        records.load(path)
    out = subprocess.run(
        [sys.executable, "-m", "block_env.replay", str(path)], capture_output=True, text=True
    )
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr


def test_unknown_configuration_keyword_is_refused() -> None:
    record = play_recorded({"num_players": 2, "episode": "hand"}, seed=1)
    record["config"]["wild_rule"] = True
    with pytest.raises(RecordError, match="wild_rule"):
        replay(record)


def test_replay_cli_check_and_listing(tmp_path: Path) -> None:
    record = play_recorded({"num_players": 2, "episode": "hand"}, seed=2)
    path = records.save(record, tmp_path / "game.json")
    out = subprocess.run(
        [sys.executable, "-m", "block_env.replay", str(path), "--check"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and "every result matches" in out.stdout
    assert len(out.stdout.strip().splitlines()) == 1
    listed = subprocess.run(
        [sys.executable, "-m", "block_env.replay", str(path)], capture_output=True, text=True
    )
    moves = sum(len(h["moves"]) for h in record["hands"])
    assert listed.returncode == 0
    assert sum(line.strip()[:1].isdigit() for line in listed.stdout.splitlines()) == moves


@pytest.mark.parametrize("config", [VARIANTS["hand_episode"], VARIANTS["4p"]], ids=["2p", "4p"])
def test_gif_has_one_frame_per_move(config: dict, tmp_path: Path) -> None:
    from PIL import Image  # pillow comes with the train extra (matplotlib)

    record = play_recorded({**config, "episode": "hand"}, seed=4)
    path = records.save(record, tmp_path / "game.json")
    gif = tmp_path / "out" / "game.gif"
    out = subprocess.run(
        [sys.executable, "-m", "block_env.replay", str(path), "--gif", str(gif), "--viewer", "0"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    moves = sum(len(h["moves"]) for h in record["hands"])
    with Image.open(gif) as image:
        assert image.n_frames == moves
        assert image.is_animated


def test_gif_of_a_tampered_record_fails(tmp_path: Path) -> None:
    record = play_recorded(VARIANTS["hand_episode"], seed=4)
    bad = tampered(record, CASES["points"][0])
    path = records.save(bad, tmp_path / "bad.json")
    gif = tmp_path / "bad.gif"
    out = subprocess.run(
        [sys.executable, "-m", "block_env.replay", str(path), "--gif", str(gif)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1 and "MISMATCH" in out.stderr


def test_evaluate_record_dir(tmp_path: Path) -> None:
    from block_env.evaluate import main

    folder = tmp_path / "games"
    assert main(["rules", "greedy", "--hands", "4", "--no-progress", "--record", str(folder)]) == 0
    files = sorted(folder.glob("*.json"))
    assert len(files) == 4  # 2 deals x 2 seatings
    for path in files:
        record = records.load(path)
        assert sorted(record["players"]) == ["greedy", "rules"]
        assert replay(record).finished


def test_evaluate_record_refuses_a_file(tmp_path: Path, capsys) -> None:
    from block_env.evaluate import main

    path = tmp_path / "file.txt"
    path.write_text("x")
    assert main(["rules", "greedy", "--hands", "2", "--record", str(path)]) == 2
    assert "give a folder" in capsys.readouterr().err


@pytest.mark.parametrize(
    "config", [{"num_players": 3, "max_pip": 4}, {"num_players": 2, "max_pip": 2}]
)
def test_round_trip_on_a_smaller_tile_set(config: dict, tmp_path: Path) -> None:
    record = play_recorded({**config, "target_score": 30}, seed=3, bot="random")
    assert record["config"]["max_pip"] == config["max_pip"]
    loaded = records.load(records.save(record, tmp_path / "game.json"))
    assert replay(loaded).scores == loaded["scores"] and loaded["finished"]
    # The replay runs on the recorded tile set.
    report = replay(loaded)
    assert report.env.config.max_pip == config["max_pip"]
    assert report.env.config.hand_size == loaded["config"]["hand_size"]
