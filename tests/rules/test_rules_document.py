"""docs/RULES.md and the engine agree: its tables are read from the file and replayed on the
rules engine, every test it names exists, and the examples it states in prose are checked."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import block_env
from block_env import rendering, rules
from block_env.config import BlockConfig
from block_env.tiles import STANDARD_NUM_TILES, STANDARD_TILES, other_half, tile_index

ROOT = Path(__file__).resolve().parents[2]
RULES_MD = ROOT / "docs" / "RULES.md"
TILE_RE = re.compile(r"\[(\d)\|(\d)\]")


def table(first_header: str) -> list[dict[str, str]]:
    """Rows of the markdown table in docs/RULES.md whose first header cell is
    ``first_header``, as dicts keyed by header; escaped pipes are unescaped."""
    lines = RULES_MD.read_text(encoding="utf-8").splitlines()
    start = next(
        (i for i, line in enumerate(lines) if _cells(line)[:1] == [first_header]),
        None,
    )
    assert start is not None, f"docs/RULES.md has no table starting with {first_header!r}"
    header = _cells(lines[start])
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = _cells(line)
        assert len(cells) == len(header), line
        rows.append(dict(zip(header, cells)))
    return rows


def _cells(line: str) -> list[str]:
    if not line.startswith("|"):
        return []
    parts = re.split(r"(?<!\\)\|", line.strip()[1:-1])
    return [p.replace("\\|", "|").strip() for p in parts]


def tiles_in(text: str) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in TILE_RE.findall(text)]


def ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(","))


def config_for(game: str) -> BlockConfig:
    if game == "partnership":
        return BlockConfig(num_players=4, partnership=True)
    match = re.fullmatch(r"([234]) players", game)
    assert match, f"unknown game {game!r}"
    return BlockConfig(num_players=int(match.group(1)))


# ------------------------------------------------------------------ the deal


def test_deal_table_matches_the_configuration() -> None:
    rows = table("game")
    assert [r["game"] for r in rows] == [
        "2 players",
        "3 players",
        "4 players",
        "4 players in partnership",
    ]
    for row in rows:
        game = row["game"]
        if game.endswith("partnership"):
            cfg = BlockConfig(num_players=4, partnership=True)
        else:
            cfg = config_for(game)
        in_play = cfg.num_players * cfg.hand_size
        assert int(row["tiles per hand"]) == cfg.hand_size, game
        assert int(row["tiles in play"]) == in_play, game
        assert int(row["tiles out of play"]) == STANDARD_NUM_TILES - in_play, game
        assert int(row["match target"]) == cfg.target, game


@pytest.mark.parametrize("players", [2, 3, 4])
def test_out_of_play_count_in_a_real_deal(players: int) -> None:
    env = block_env.raw_env(num_players=players)
    env.reset(seed=7)
    held = sum(h.bit_count() for h in env.game.hands)
    expected = {2: 14, 3: 13, 4: 8}[players]
    assert STANDARD_NUM_TILES - held == expected
    obs = env.observe(env.agent_selection)
    assert block_env.decode(obs["observation"])["out_of_play"] == expected


# ------------------------------------------------------------------ scoring table

SCORING = table("example")


def test_scoring_table_is_complete() -> None:
    assert [r["example"] for r in SCORING] == [f"S{i}" for i in range(1, 14)]


@pytest.mark.parametrize("row", SCORING, ids=[r["example"] for r in SCORING])
def test_scoring_example(row: dict[str, str]) -> None:
    cfg = config_for(row["game"])
    seats = row["tiles left, by seat"].split(";")
    assert len(seats) == cfg.num_players
    hands = tuple(sum(1 << tile_index(t) for t in tiles_in(s)) for s in seats)
    ended = row["ended by"]
    if ended == "block":
        domino_seat = None
    else:
        match = re.fullmatch(r"domino by seat (\d)", ended)
        assert match, ended
        domino_seat = int(match.group(1))
        assert hands[domino_seat] == 0, "the seat that dominoes holds no tile"
    result = rules.score_hand(cfg, hands, domino_seat)
    assert result.blocked == (domino_seat is None)
    assert result.pips == ints(row["pips, by seat"])
    assert result.points == ints(row["points, by seat"])
    winner = row["winner"]
    assert result.winner == (None if winner == "none" else int(winner.removeprefix("seat ")))


def test_scoring_example_through_the_env() -> None:
    # S3 played out: [0|0] opens and nobody holds a blank, so the hand blocks at once with
    # 3, 7, 8 left; the holder of 3 scores 7 + 8 - 3 = 12.
    env = block_env.raw_env(num_players=3, episode="hand", reward="points")
    env.reset(seed=0, options={"hands": [[(0, 0), (1, 2)], [(3, 4)], [(2, 6)]], "leader": 0})
    env.step(2 * tile_index((0, 0)))
    assert env.game.result == rules.HandResult(0, True, (3, 7, 8), (12, 0, 0))
    assert env.scores == [12, 0, 0]
    assert env.rewards == {"player_0": 12.0, "player_1": 0.0, "player_2": 0.0}


# ------------------------------------------------------------------ layout table

LAYOUTS = table("layout")
PLAY_RE = re.compile(r"\[(\d)\|(\d)\] (opens|on the left end|on the right end)")


def test_layout_table_has_the_seven_examples() -> None:
    assert [r["layout"] for r in LAYOUTS] == [f"L{i}" for i in range(1, 8)]


def play_layout(plays: list[tuple[tuple[int, int], int]]) -> rules.State:
    """Seat 0 of a 2-player game makes every play; it also keeps one non-double tile that
    matches the final left end, so the hand neither ends by domino nor blocks."""
    cfg = BlockConfig(num_players=2)
    tiles = [t for t, _ in plays]
    state = rules.start_hand(cfg, (0, 0), 0, (0, 0))
    left = tiles[0][0]  # the opening's lower value is the left end
    for tile, end in plays[1:]:
        if end == 0:
            left = other_half(tile_index(tile), left)
    keep = next(t for t in STANDARD_TILES if t[0] != t[1] and left in t and t not in tiles)
    hand = sum(1 << tile_index(t) for t in [*tiles, keep])
    state = state._replace(hands=(hand, 0))
    for tile, end in plays:
        state = rules.apply_action(cfg, state._replace(current=0), 2 * tile_index(tile) + end)
    assert state.result is None
    return state


@pytest.mark.parametrize("row", LAYOUTS, ids=[r["layout"] for r in LAYOUTS])
def test_layout_example(row: dict[str, str]) -> None:
    items = row["plays, in order"].split("; ")
    plays = []
    for i, item in enumerate(items):
        match = PLAY_RE.fullmatch(item)
        assert match, item
        assert (match.group(3) == "opens") == (i == 0), item
        end = 1 if match.group(3) == "on the right end" else 0
        plays.append(((int(match.group(1)), int(match.group(2))), end))
    state = play_layout(plays)
    assert (state.left, state.right) == ints(row["open ends (left, right)"])

    text = rendering.describe_line(state, "en")
    match = re.fullmatch(
        r"Tiles: (.*)\. Connections: (.*)\. Legal continuation points: (.*)\.", text
    )
    assert match, text
    assert tiles_in(match.group(1)) == [t for t, _ in plays]
    assert match.group(2) == row["connections"]
    assert set(match.group(3).split("; ")) == set(row["legal continuation points"].split("; "))


# ------------------------------------------------------------------ named tests exist


def test_every_test_the_document_names_exists() -> None:
    text = RULES_MD.read_text(encoding="utf-8")
    named = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", text)
    assert len(named) >= 10
    for path, name in named:
        source = (ROOT / path).read_text(encoding="utf-8")
        if name:
            assert re.search(rf"^def {name}\(", source, re.M), f"{path}::{name} is missing"


# ------------------------------------------------------------------ prose examples


def test_single_hand_domino_wins_and_tied_block_draws() -> None:
    env = block_env.raw_env(num_players=2, episode="hand")
    env.reset(seed=0, options={"hands": [[(1, 2)], [(5, 5)]], "leader": 0})
    env.step(2 * tile_index((1, 2)))
    assert all(env.terminations.values())
    assert env.game.episode_over and env.game.winners == (0,) and env.scores == [10, 0]

    env = block_env.raw_env(num_players=3, episode="hand", reward="win")
    # [3|3] opens, nobody can follow: totals 3, 3, 8, a tie on the lowest count.
    hands = [[(3, 3), (0, 1), (0, 2)], [(1, 2)], [(2, 6)]]
    env.reset(seed=0, options={"hands": hands, "leader": 0})
    env.step(2 * tile_index((3, 3)))
    assert all(env.terminations.values())
    assert env.game.episode_over and env.game.winners == ()  # a draw
    assert env.game.result.winner is None and env.scores == [0, 0, 0]
    assert set(env.rewards.values()) == {0.0}


def test_highest_double_leads_every_hand_of_a_match() -> None:
    env = block_env.raw_env(num_players=3, opener="highest_double")
    rng = np.random.default_rng(0)
    hands_checked = 0
    for seed in range(3):
        env.reset(seed=seed)
        while not all(env.terminations.values()):
            game = env.game
            if not game.line:  # a fresh hand: the holder of the highest double leads with it
                seat, tile = rules.opening_for(game.hands)
                assert game.leader == seat and game.current == seat
                assert rules.legal_actions(game) == (2 * tile,)
                hands_checked += 1
            legal = np.flatnonzero(env.observe(env.agent_selection)["action_mask"])
            env.step(int(rng.choice(legal)))
    assert hands_checked > 10  # later hands of the match were checked, not only the first


def test_partners_always_carry_equal_scores() -> None:
    env = block_env.raw_env(num_players=4, partnership=True)
    rng = np.random.default_rng(1)
    env.reset(seed=4)
    assert all(h.bit_count() == 7 for h in env.game.hands)  # all 28 tiles dealt
    while not all(env.terminations.values()):
        legal = np.flatnonzero(env.observe(env.agent_selection)["action_mask"])
        env.step(int(rng.choice(legal)))
        scores = env.scores
        assert scores[0] == scores[2] and scores[1] == scores[3]
    assert max(env.scores) >= 100
