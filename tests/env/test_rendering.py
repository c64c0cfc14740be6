"""Rendering: docs/RULES.md's worked layout examples word for word (en/tr/hi), the ansi view's
privacy, the rgb picture, and that importing the package loads no GUI library."""

from __future__ import annotations

import subprocess
import sys
from typing import NamedTuple

import numpy as np
import pytest
from pettingzoo.test import render_test

import block_env
from block_env import rendering, rules
from block_env.config import BlockConfig
from block_env.tiles import STANDARD_TILES, tile_index


class Example(NamedTuple):
    plays: list[tuple[tuple[int, int], int]]  # (tile, end) in play order; end 0 left, 1 right
    ends: tuple[int, int]  # open values (left, right) after the plays
    en: str  # docs/RULES.md's layout table, as one sentence
    tr: str  # the same description in Turkish
    hi: str  # the same description in Hindi


EXAMPLES = [
    Example(
        [((1, 4), 0)],
        (1, 4),
        "Tiles: [1|4]. Connections: none. Legal continuation points: "
        "[1|4] (big end, 4); [1|4] (small end, 1).",
        "Taşlar: [1|4]. Bağlantılar: yok. Kurallara uygun devam noktaları: "
        "[1|4] (büyük uç, 4); [1|4] (küçük uç, 1).",
        "गोटियाँ: [1|4]. जोड़: कोई नहीं. वैध विस्तार के जोड़-स्थान: "
        "[1|4] (अधिक बिंदु-मूल्य वाला सिरा, 4); [1|4] (कम बिंदु-मूल्य वाला सिरा, 1).",
    ),
    Example(
        [((1, 4), 0), ((1, 1), 0)],
        (1, 4),
        "Tiles: [1|4], [1|1]. Connections: [1|4] (small end) – [1|1] (side A). "
        "Legal continuation points: [1|1] (side B, 1); [1|4] (big end, 4).",
        "Taşlar: [1|4], [1|1]. Bağlantılar: [1|4] (küçük uç) – [1|1] (A doğrusu). "
        "Kurallara uygun devam noktaları: [1|1] (B doğrusu, 1); [1|4] (büyük uç, 4).",
        "गोटियाँ: [1|4], [1|1]. जोड़: [1|4] (कम बिंदु-मूल्य वाला सिरा) – [1|1] (शृंखला A). "
        "वैध विस्तार के जोड़-स्थान: [1|1] (शृंखला B, 1); [1|4] (अधिक बिंदु-मूल्य वाला सिरा, 4).",
    ),
    Example(
        [((3, 6), 0), ((6, 6), 1)],
        (3, 6),
        "Tiles: [3|6], [6|6]. Connections: [3|6] (big end) – [6|6] (side A). "
        "Legal continuation points: [3|6] (small end, 3); [6|6] (side B, 6).",
        "Taşlar: [3|6], [6|6]. Bağlantılar: [3|6] (büyük uç) – [6|6] (A doğrusu). "
        "Kurallara uygun devam noktaları: [3|6] (küçük uç, 3); [6|6] (B doğrusu, 6).",
        "गोटियाँ: [3|6], [6|6]. जोड़: [3|6] (अधिक बिंदु-मूल्य वाला सिरा) – [6|6] (शृंखला A). "
        "वैध विस्तार के जोड़-स्थान: [3|6] (कम बिंदु-मूल्य वाला सिरा, 3); [6|6] (शृंखला B, 6).",
    ),
    Example(
        [((0, 0), 0)],
        (0, 0),
        "Tiles: [0|0]. Connections: none. Legal continuation points: "
        "[0|0] (side A, 0); [0|0] (side B, 0).",
        "Taşlar: [0|0]. Bağlantılar: yok. Kurallara uygun devam noktaları: "
        "[0|0] (A doğrusu, 0); [0|0] (B doğrusu, 0).",
        "गोटियाँ: [0|0]. जोड़: कोई नहीं. वैध विस्तार के जोड़-स्थान: [0|0] (शृंखला A, 0); [0|0] (शृंखला B, 0).",
    ),
    Example(
        [((1, 4), 0), ((1, 1), 0), ((4, 4), 1)],
        (1, 4),
        "Tiles: [1|4], [1|1], [4|4]. Connections: [1|4] (small end) – [1|1] (side A); "
        "[1|4] (big end) – [4|4] (side A). "
        "Legal continuation points: [1|1] (side B, 1); [4|4] (side B, 4).",
        "Taşlar: [1|4], [1|1], [4|4]. Bağlantılar: [1|4] (küçük uç) – [1|1] (A doğrusu); "
        "[1|4] (büyük uç) – [4|4] (A doğrusu). "
        "Kurallara uygun devam noktaları: [1|1] (B doğrusu, 1); [4|4] (B doğrusu, 4).",
        "गोटियाँ: [1|4], [1|1], [4|4]. जोड़: [1|4] (कम बिंदु-मूल्य वाला सिरा) – [1|1] (शृंखला A); "
        "[1|4] (अधिक बिंदु-मूल्य वाला सिरा) – [4|4] (शृंखला A). "
        "वैध विस्तार के जोड़-स्थान: [1|1] (शृंखला B, 1); [4|4] (शृंखला B, 4).",
    ),
    Example(
        [((1, 4), 0), ((1, 1), 0), ((4, 4), 1), ((3, 4), 1)],
        (1, 3),
        "Tiles: [1|4], [1|1], [4|4], [3|4]. Connections: [1|4] (small end) – [1|1] (side A); "
        "[1|4] (big end) – [4|4] (side A); [4|4] (side B) – [3|4] (big end). "
        "Legal continuation points: [1|1] (side B, 1); [3|4] (small end, 3).",
        "Taşlar: [1|4], [1|1], [4|4], [3|4]. Bağlantılar: [1|4] (küçük uç) – [1|1] (A doğrusu); "
        "[1|4] (büyük uç) – [4|4] (A doğrusu); [4|4] (B doğrusu) – [3|4] (büyük uç). "
        "Kurallara uygun devam noktaları: [1|1] (B doğrusu, 1); [3|4] (küçük uç, 3).",
        "गोटियाँ: [1|4], [1|1], [4|4], [3|4]. जोड़: [1|4] (कम बिंदु-मूल्य वाला सिरा) – "
        "[1|1] (शृंखला A); [1|4] (अधिक बिंदु-मूल्य वाला सिरा) – [4|4] (शृंखला A); "
        "[4|4] (शृंखला B) – [3|4] (अधिक बिंदु-मूल्य वाला सिरा). "
        "वैध विस्तार के जोड़-स्थान: [1|1] (शृंखला B, 1); [3|4] (कम बिंदु-मूल्य वाला सिरा, 3).",
    ),
    Example(
        [((2, 2), 0)],
        (2, 2),
        "Tiles: [2|2]. Connections: none. Legal continuation points: "
        "[2|2] (side A, 2); [2|2] (side B, 2).",
        "Taşlar: [2|2]. Bağlantılar: yok. Kurallara uygun devam noktaları: "
        "[2|2] (A doğrusu, 2); [2|2] (B doğrusu, 2).",
        "गोटियाँ: [2|2]. जोड़: कोई नहीं. वैध विस्तार के जोड़-स्थान: [2|2] (शृंखला A, 2); [2|2] (शृंखला B, 2).",
    ),
]

LABELS = {
    "en": "Legal continuation points: ",
    "tr": "Kurallara uygun devam noktaları: ",
    "hi": "वैध विस्तार के जोड़-स्थान: ",
}


def split_points(sentence: str, lang: str) -> tuple[str, set[str]]:
    """(everything up to the last list, the last list's items as a set)."""
    head, sep, tail = sentence.partition(LABELS[lang])
    assert sep and tail.endswith("."), sentence
    return head, set(tail[:-1].split("; "))


def assert_same_description(got: str, want: str, lang: str) -> None:
    got_head, got_points = split_points(got, lang)
    want_head, want_points = split_points(want, lang)
    assert got_head == want_head
    assert got_points == want_points


def build_hands(example: Example, n: int, leader: int) -> list[list[tuple[int, int]]]:
    """Play i goes to seat (leader + i) % n; every seat also keeps one non-double tile so
    nobody dominoes, and the next seat to act keeps one matching an open end so the hand
    is not blocked after the last play."""
    played = {tuple(t) for t, _ in example.plays}
    spare = [t for t in STANDARD_TILES if t[0] != t[1] and t not in played]
    hands: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for i, (tile, _) in enumerate(example.plays):
        hands[(leader + i) % n].append(tile)
    nxt = (leader + len(example.plays)) % n
    keeper = next(t for t in spare if example.ends[0] in t)
    spare.remove(keeper)
    hands[nxt].append(keeper)
    for seat in range(n):
        if seat != nxt:
            hands[seat].append(spare.pop(0))
    return hands


def play_example(example: Example, leader: int | None, **config) -> block_env.raw_env:
    env = block_env.raw_env(**config)
    n = env.config.num_players
    hands = build_hands(example, n, 0 if leader is None else leader)
    options: dict = {"hands": hands}
    if leader is not None:
        options["leader"] = leader
    env.reset(seed=1, options=options)
    for tile, end in example.plays:
        env.step(2 * tile_index(tile) + end)
    game = env.game
    assert game.result is None and len(game.line) == len(example.plays)
    assert (game.left, game.right) == example.ends
    return env


CONFIGS = [
    ({"num_players": 2}, 0),
    ({"num_players": 2, "episode": "hand"}, 1),
    ({"num_players": 3}, 2),
    ({"num_players": 3, "episode": "hand", "reward": "points"}, 0),
    ({"num_players": 4}, 3),
    ({"num_players": 4, "partnership": True}, 1),
]


@pytest.mark.parametrize("number", range(1, 8))
@pytest.mark.parametrize(("config", "leader"), CONFIGS, ids=lambda c: str(c))
def test_worked_layout_examples(number: int, config: dict, leader: int) -> None:
    example = EXAMPLES[number - 1]
    env = play_example(example, leader, **config)
    for lang in ("en", "tr", "hi"):
        assert_same_description(
            rendering.describe_line(env.game, lang), getattr(example, lang), lang
        )


@pytest.mark.parametrize("number", [4, 7])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_opening_double_examples_under_highest_double(number: int, n: int) -> None:
    # With no other double dealt, the opening double is the highest one and is forced.
    example = EXAMPLES[number - 1]
    env = play_example(example, None, num_players=n, opener="highest_double")
    for lang in ("en", "tr", "hi"):
        assert_same_description(
            rendering.describe_line(env.game, lang), getattr(example, lang), lang
        )


def state_after(plays: list[tuple[tuple[int, int], int]], keep: tuple[int, int] = (5, 6)):
    """Rules state after ``plays``, all made by seat 0 of a 2-player game; seat 0 also keeps
    ``keep`` (matching a final end) so the hand neither ends by domino nor blocks."""
    config = BlockConfig(num_players=2)
    hand = sum(1 << tile_index(t) for t, _ in plays) | 1 << tile_index(keep)
    state = rules.start_hand(config, (hand, 0), 0, (0, 0))
    for tile, end in plays:
        state = rules.apply_action(config, state._replace(current=0), 2 * tile_index(tile) + end)
    assert state.result is None
    return state


def test_tiles_placed_on_an_opening_double_use_its_two_sides() -> None:
    state = state_after([((2, 2), 0), ((2, 5), 0), ((1, 2), 1)])
    assert rendering.describe_line(state) == (
        "Tiles: [2|2], [2|5], [1|2]. Connections: [2|2] (side A) – [2|5] (small end); "
        "[2|2] (side B) – [1|2] (big end). "
        "Legal continuation points: [2|5] (big end, 5); [1|2] (small end, 1)."
    )


def test_double_on_a_double_side_b_then_big_end_out() -> None:
    # [3|5] opens; [5|5] on its big end; [0|5] on the double's side B leaves the small end 0.
    state = state_after([((3, 5), 0), ((5, 5), 1), ((0, 5), 1)], keep=(0, 3))
    assert rendering.describe_line(state, "tr") == (
        "Taşlar: [3|5], [5|5], [0|5]. Bağlantılar: [3|5] (büyük uç) – [5|5] (A doğrusu); "
        "[5|5] (B doğrusu) – [0|5] (büyük uç). "
        "Kurallara uygun devam noktaları: [3|5] (küçük uç, 3); [0|5] (küçük uç, 0)."
    )


def test_empty_line_description_in_each_language() -> None:
    state = rules.start_hand(BlockConfig(), (1, 2), 0, (0, 0))
    assert rendering.describe_line(state) == (
        "Tiles: none. Connections: none. Legal continuation points: none."
    )
    assert rendering.describe_line(state, "tr") == (
        "Taşlar: yok. Bağlantılar: yok. Kurallara uygun devam noktaları: yok."
    )
    assert rendering.describe_line(state, "hi") == (
        "गोटियाँ: कोई नहीं. जोड़: कोई नहीं. वैध विस्तार के जोड़-स्थान: कोई नहीं."
    )


def test_unknown_language_is_rejected() -> None:
    state = rules.start_hand(BlockConfig(), (1, 2), 0, (0, 0))
    with pytest.raises(ValueError, match="'fr'.*en, tr, hi"):
        rendering.describe_line(state, "fr")
    with pytest.raises(ValueError, match="viewer=2"):
        rendering.render_text(BlockConfig(), state, 2)


# ---------------------------------------------------------------- ansi / human


def hand_section(text: str) -> str:
    (line,) = [s for s in text.splitlines() if s.startswith("Your hand")]
    return line


def test_ansi_shows_the_viewer_hand_only() -> None:
    env = block_env.raw_env(num_players=2, render_mode="ansi")
    env.reset(options={"hands": [[(1, 4), (2, 3)], [(4, 6), (5, 5)]], "leader": 0})
    text = env.render()
    assert isinstance(text, str)
    assert "[1|4]" in hand_section(text) and "[2|3]" in hand_section(text)
    assert "[4|6]" not in text and "[5|5]" not in text
    assert "Line: empty" in text and "To act: player_0" in text
    env.step(2 * tile_index((1, 4)))
    text = env.render()  # now player_1 is to act and views
    assert "[4|6]" in hand_section(text) and "[5|5]" in hand_section(text)
    assert "[2|3]" not in text
    assert "Tiles in hand: player_0 1, player_1 2" in text
    assert "Open ends: left 1, right 4" in text
    assert text.endswith(rendering.describe_line(env.game))


def test_ansi_line_is_shown_left_to_right_with_oriented_halves() -> None:
    env = play_example(EXAMPLES[5], 0, num_players=2)
    env.render_mode = "ansi"
    text = env.render()
    # [1|1] went left of [1|4]; [4|4] then [3|4] went right, shown as [4|3].
    assert "Line: [1|1][1|4][4|4][4|3]\n" in text
    assert "Play order: [1|4], [1|1], [4|4], [3|4]\n" in text
    assert "Scores: player_0 0, player_1 0 (target 100)" in text


@pytest.mark.parametrize(("lang", "word"), [("tr", "Taşlar:"), ("hi", "गोटियाँ:"), ("en", "Tiles:")])
def test_ansi_description_language(lang: str, word: str) -> None:
    env = block_env.raw_env(num_players=3, render_mode="ansi", lang=lang)
    env.reset(seed=3)
    assert word in env.render()


def test_ansi_reports_a_finished_hand() -> None:
    env = block_env.raw_env(num_players=2, episode="hand", render_mode="ansi")
    env.reset(options={"hands": [[(1, 4)], [(4, 6), (5, 5)]], "leader": 0})
    env.step(2 * tile_index((1, 4)))  # player_0 plays their last tile
    text = env.render()
    assert "player_0 dominoed" in text
    assert "points: player_0 20, player_1 0" in text  # [4|6] + [5|5] left with player_1
    # The episode is over and the selection moved on: player_1 views, and sees only their own.
    assert hand_section(text) == "Your hand (player_1): [4|6] [5|5]  (20 pips)"


def test_human_mode_prints(capsys) -> None:
    env = block_env.raw_env(num_players=2, render_mode="human")
    env.reset(options={"hands": [[(1, 4), (2, 3)], [(4, 6), (5, 5)]], "leader": 0})
    assert env.render() is None
    out = capsys.readouterr().out
    assert "Your hand (player_0): [1|4] [2|3]" in out


def test_pettingzoo_render_test() -> None:
    render_test(lambda render_mode: block_env.env(render_mode=render_mode))


# ---------------------------------------------------------------- rgb


def count(img: np.ndarray, colour: tuple[int, int, int]) -> int:
    return int(np.all(img == np.array(colour, dtype=np.uint8), axis=-1).sum())


def test_rgb_image_shape_and_markers() -> None:
    empty = rendering.render_rgb(rules.start_hand(BlockConfig(), (1, 2), 0, (0, 0)))
    assert empty.dtype == np.uint8 and empty.ndim == 3 and empty.shape[2] == 3
    assert count(empty, rendering.LEFT_MARKER) == 0 and count(empty, rendering.RIGHT_MARKER) == 0
    one = play_example(EXAMPLES[0], 0, num_players=2).game
    img = rendering.render_rgb(one)
    assert img.shape == empty.shape and img.dtype == np.uint8
    assert count(img, rendering.LEFT_MARKER) > 0 and count(img, rendering.RIGHT_MARKER) > 0
    # The left marker sits left of the right one.
    left_cols = np.flatnonzero(np.all(img == rendering.LEFT_MARKER, axis=-1).any(axis=0))
    right_cols = np.flatnonzero(np.all(img == rendering.RIGHT_MARKER, axis=-1).any(axis=0))
    assert left_cols.max() < right_cols.min()


def test_rgb_differs_between_positions_and_shows_pips() -> None:
    a = rendering.render_rgb(play_example(EXAMPLES[0], 0, num_players=2).game)
    b = rendering.render_rgb(play_example(EXAMPLES[1], 0, num_players=2).game)
    assert a.shape == b.shape and not np.array_equal(a, b)
    blank = rendering.render_rgb(play_example(EXAMPLES[3], 0, num_players=2).game)  # [0|0]
    sixes = rendering.render_rgb(state_after([((6, 6), 0)]))
    assert count(sixes, rendering.PIP) > count(blank, rendering.PIP)


def test_rgb_doubles_are_crosswise() -> None:
    def face_rows(state: rules.State) -> int:
        return int(np.all(rendering.render_rgb(state) == rendering.FACE, axis=-1).any(axis=1).sum())

    single = face_rows(state_after([((3, 6), 0)]))
    with_double = face_rows(state_after([((3, 6), 0), ((6, 6), 1)]))
    assert with_double >= 1.5 * single


def eulerian_line() -> list[tuple[int, int]]:
    """All 28 tiles as one legal line (each value's degree is even), by Hierholzer."""
    edges = {v: [t for t in STANDARD_TILES if v in t] for v in range(7)}
    used: set[tuple[int, int]] = set()
    stack, path = [0], []
    while stack:
        v = stack[-1]
        nxt = next((t for t in edges[v] if t not in used), None)
        if nxt is None:
            path.append(stack.pop())
        else:
            used.add(nxt)
            stack.append(nxt[1] if nxt[0] == v else nxt[0])
    return [tuple(sorted(p)) for p in zip(path, path[1:])]


def test_rgb_full_line_keeps_the_size_and_wraps() -> None:
    tiles = eulerian_line()
    assert len(set(tiles)) == 28
    plays = [(t, 0 if i == 0 else 1) for i, t in enumerate(tiles)]
    config = BlockConfig(num_players=4, partnership=True)
    hands = (sum(1 << tile_index(t) for t in tiles), 0, 0, 0)
    state = rules.start_hand(config, hands, 0, (0,) * 4)
    for tile, end in plays[:-1]:  # keep one tile in hand so the hand stays open
        state = rules.apply_action(config, state._replace(current=0), 2 * tile_index(tile) + end)
    empty = rendering.render_rgb(rules.start_hand(config, hands, 0, (0,) * 4))
    img = rendering.render_rgb(state)
    assert img.shape == empty.shape
    left_rows = np.flatnonzero(np.all(img == rendering.LEFT_MARKER, axis=-1).any(axis=1))
    right_rows = np.flatnonzero(np.all(img == rendering.RIGHT_MARKER, axis=-1).any(axis=1))
    assert right_rows.min() > left_rows.max()  # the line wrapped onto a lower row
    assert rendering.describe_line(state).count(" – ") == 26


# ---------------------------------------------------------------- imports


def test_import_loads_no_gui_library() -> None:
    code = (
        "import sys, block_env, block_env.rendering\n"
        "env = block_env.raw_env(render_mode='rgb_array'); env.reset(seed=0); env.render()\n"
        "bad = [m for m in ('matplotlib', 'pygame', 'PIL', 'torch') if m in sys.modules]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
