"""Text and picture views of a Block position, in pure Python and numpy.

* ``describe_line`` gives the three-list description of the line (tiles in play order,
  connections, legal continuation points) in English, Turkish or Hindi, in fixed words, so the
  worked layout examples of docs/RULES.md can be checked exactly.
* ``render_text`` is the ``"ansi"`` / ``"human"`` view for one seat: the line, the open ends,
  that seat's hand only, the tile counts, scores and turn, then the description.
* ``render_rgb`` is the ``"rgb_array"`` view: the line drawn with pip dots, doubles crosswise,
  and coloured markers on the two legal continuation points.

Vocabulary (docs/RULES.md): a non-double has a *small end* (lower value) and a *big end*; a
double has *side A* (the side that first touches the line) and *side B*; a double that opens
the line has both sides open, side A on the left and side B on the right. No GUI library is
used.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import NamedTuple

import numpy as np

from block_env.config import BlockConfig
from block_env.rules import EMPTY, HandResult, State
from block_env.tiles import iter_tiles

__all__ = [
    "LANGS",
    "LEFT_MARKER",
    "RIGHT_MARKER",
    "Connection",
    "EndPoint",
    "describe_line",
    "line_structure",
    "render_rgb",
    "render_table",
    "render_text",
    "spatial_line",
    "tiles_of",
]

SMALL, BIG, SIDE_A, SIDE_B = "small", "big", "A", "B"

# The same description's words in English (docs/RULES.md), Turkish and Hindi.
TERMS: dict[str, dict[str, str]] = {
    "en": {
        "tiles": "Tiles",
        "connections": "Connections",
        "points": "Legal continuation points",
        "none": "none",
        SMALL: "small end",
        BIG: "big end",
        SIDE_A: "side A",
        SIDE_B: "side B",
    },
    "tr": {
        "tiles": "Taşlar",
        "connections": "Bağlantılar",
        "points": "Kurallara uygun devam noktaları",
        "none": "yok",
        SMALL: "küçük uç",
        BIG: "büyük uç",
        SIDE_A: "A doğrusu",
        SIDE_B: "B doğrusu",
    },
    "hi": {
        "tiles": "गोटियाँ",
        "connections": "जोड़",
        "points": "वैध विस्तार के जोड़-स्थान",
        "none": "कोई नहीं",
        SMALL: "कम बिंदु-मूल्य वाला सिरा",
        BIG: "अधिक बिंदु-मूल्य वाला सिरा",
        SIDE_A: "शृंखला A",
        SIDE_B: "शृंखला B",
    },
}
LANGS = tuple(TERMS)


class EndPoint(NamedTuple):
    """One end of one tile: which tile, which end (small/big/A/B) and the value it shows."""

    tile: int
    kind: str
    value: int


class Connection(NamedTuple):
    """A joint of the line: the existing tile's end and the end of the tile placed on it."""

    existing: EndPoint
    new: EndPoint


class LineStructure(NamedTuple):
    connections: tuple[Connection, ...]
    left: EndPoint | None  # owner of the left open end, None on the empty line
    right: EndPoint | None


def line_structure(state: State) -> LineStructure:
    """Rebuild which tile end owns each open end and every connection, from ``state.line``
    ((tile, end) in play order, the opening first) and the tiles' values."""
    if not state.line:
        return LineStructure((), None, None)
    (first, _), *rest = state.line
    a, b = state.tiles.tiles[first]
    if a == b:
        ends = [EndPoint(first, SIDE_A, a), EndPoint(first, SIDE_B, b)]
    else:
        ends = [EndPoint(first, SMALL, a), EndPoint(first, BIG, b)]
    connections = []
    for tile, end in rest:
        owner = ends[end]
        lo, hi = state.tiles.tiles[tile]
        if lo == hi:
            touch, free = EndPoint(tile, SIDE_A, lo), EndPoint(tile, SIDE_B, lo)
        elif owner.value == lo:
            touch, free = EndPoint(tile, SMALL, lo), EndPoint(tile, BIG, hi)
        elif owner.value == hi:
            touch, free = EndPoint(tile, BIG, hi), EndPoint(tile, SMALL, lo)
        else:
            raise ValueError(
                f"line is inconsistent: {state.tiles.tile_str(tile)} does not match the open "
                f"value {owner.value} of {state.tiles.tile_str(owner.tile)}"
            )
        connections.append(Connection(owner, touch))
        ends[end] = free
    return LineStructure(tuple(connections), ends[0], ends[1])


def spatial_line(state: State) -> list[tuple[int, int, int]]:
    """The line left to right as ``(tile, left_half, right_half)``, halves oriented so that
    touching halves match (the opening keeps its low half on the left)."""
    if not state.line:
        return []
    (first, _), *rest = state.line
    a, b = state.tiles.tiles[first]
    row = [(first, a, b)]
    for tile, end in rest:
        lo, hi = state.tiles.tiles[tile]
        if end == 0:
            v = row[0][1]
            row.insert(0, (tile, hi if v == lo else lo, v))
        else:
            v = row[-1][2]
            row.append((tile, v, hi if v == lo else lo))
    return row


def _check_lang(lang: str) -> dict[str, str]:
    if lang not in TERMS:
        raise ValueError(f"lang={lang!r} is not allowed: use one of {', '.join(LANGS)}")
    return TERMS[lang]


def describe_line(state: State, lang: str = "en") -> str:
    """The three-list description of the line (docs/RULES.md), e.g. ``Tiles: [1|4], [1|1].
    Connections: [1|4] (small end) – [1|1] (side A). Legal continuation points: [1|1] (side B,
    1); [1|4] (big end, 4).`` in ``lang`` "en", "tr" or "hi", each with fixed words and
    punctuation so that tests can compare whole sentences."""
    words = _check_lang(lang)
    none = words["none"]
    structure = line_structure(state)
    tiles = ", ".join(state.tiles.tile_str(t) for t, _ in state.line) or none
    connections = (
        "; ".join(
            f"{state.tiles.tile_str(c.existing.tile)} ({words[c.existing.kind]}) – "
            f"{state.tiles.tile_str(c.new.tile)} ({words[c.new.kind]})"
            for c in structure.connections
        )
        or none
    )
    if structure.left is None or structure.right is None:
        points = none
    else:
        points = "; ".join(
            f"{state.tiles.tile_str(p.tile)} ({words[p.kind]}, {p.value})"
            for p in (structure.left, structure.right)
        )
    return (
        f"{words['tiles']}: {tiles}. {words['connections']}: {connections}. "
        f"{words['points']}: {points}."
    )


def render_text(
    config: BlockConfig,
    state: State,
    viewer: int,
    lang: str = "en",
    last_result: HandResult | None = None,
) -> str:
    """The view of seat ``viewer``: the line (left to right, and in play order), the open
    ends, the viewer's own hand (never another seat's), every seat's tile count, scores and
    target, whose turn it is, the hand result when ``state.result`` (or ``last_result``, the
    previous hand's) is set, then ``describe_line`` in ``lang``."""
    n = config.num_players
    if isinstance(viewer, bool) or not isinstance(viewer, (int, np.integer)):
        raise ValueError(f"viewer={viewer!r} is not a seat: use an int in 0..{n - 1}")
    if not 0 <= viewer < n:
        raise ValueError(f"viewer={viewer} is not a seat: use an int in 0..{n - 1}")
    _check_lang(lang)
    names = [f"player_{s}" for s in range(n)]
    mode = "partnership (teams 0&2, 1&3)" if config.partnership else "individual"
    lines = [
        f"Block, {n} players, {mode}; hand {state.hand_number + 1}, leader {names[state.leader]}"
    ]
    if state.line:
        lines.append("Line: " + "".join(f"[{x}|{y}]" for _, x, y in spatial_line(state)))
        lines.append("Play order: " + ", ".join(state.tiles.tile_str(t) for t, _ in state.line))
        lines.append(f"Open ends: left {state.left}, right {state.right}")
    else:
        lines.append("Line: empty")
        lines.append("Open ends: none (the leader opens with any tile)")
        if state.opening_tile >= 0:
            opening = state.tiles.tile_str(state.opening_tile)
            lines[-1] = f"Open ends: none (the opening must be {opening})"
    hand = state.hands[viewer]
    shown = " ".join(state.tiles.tile_str(t) for t in iter_tiles(hand)) or "(empty)"
    lines.append(f"Your hand ({names[viewer]}): {shown}  ({state.tiles.pip_total(hand)} pips)")
    lines.append(
        "Tiles in hand: "
        + ", ".join(f"{names[s]} {bin(h).count('1')}" for s, h in enumerate(state.hands))
    )
    lines.append(
        "Scores: "
        + ", ".join(f"{names[s]} {v}" for s, v in enumerate(state.scores))
        + f" (target {config.target})"
    )
    if state.result is not None:
        lines.append("Hand over: " + _result_text(state.result, names))
        if state.episode_over:
            winners = ", ".join(names[s] for s in state.winners) or "draw"
            lines.append(f"Episode over: {winners}")
    else:
        if last_result is not None:
            lines.append("Last hand: " + _result_text(last_result, names))
        lines.append(f"To act: {names[state.current]}")
    lines.append(describe_line(state, lang))
    return "\n".join(lines)


def _result_text(result: HandResult, names: list[str]) -> str:
    if result.winner is None:
        how = "blocked, tied lowest total, nobody scores"
    elif result.blocked:
        how = f"blocked, {names[result.winner]} has the lowest total"
    else:
        how = f"{names[result.winner]} dominoed"
    pips = ", ".join(f"{names[s]} {p}" for s, p in enumerate(result.pips))
    points = ", ".join(f"{names[s]} {p}" for s, p in enumerate(result.points))
    return f"{how}; pips left: {pips}; points: {points}"


# ---------------------------------------------------------------- picture

HALF = 24  # side of one tile half, pixels
GAP = 6  # space between items in a row
MARGIN = 12
WIDTH = 800
MIN_ROWS = 3  # enough for all 28 tiles at WIDTH, so the picture size stays fixed
ROW_HEIGHT = 2 * HALF + 16

BACKGROUND = (24, 96, 56)
FACE = (246, 241, 226)
EDGE = (20, 20, 20)
PIP = (25, 25, 25)
LEFT_MARKER = (255, 196, 0)  # left legal continuation point
RIGHT_MARKER = (0, 176, 255)  # right legal continuation point
HIGHLIGHT = (230, 40, 40)  # frame of the tile played last

# Pip positions on a 3x3 grid (row, col) for the values 0..6.
_PIP_GRID: dict[int, tuple[tuple[int, int], ...]] = {
    0: (),
    1: ((1, 1),),
    2: ((0, 0), (2, 2)),
    3: ((0, 0), (1, 1), (2, 2)),
    4: ((0, 0), (0, 2), (2, 0), (2, 2)),
    5: ((0, 0), (0, 2), (1, 1), (2, 0), (2, 2)),
    6: ((0, 0), (1, 0), (2, 0), (0, 2), (1, 2), (2, 2)),
}


class _Item(NamedTuple):
    kind: str  # "tile", "double" or "marker"
    first: int  # value of the left (or top) half, or the marker's value
    second: int
    colour: tuple[int, int, int]
    width: int
    height: int
    tile: int = -1  # tile index of a "tile"/"double" item (-1 for a marker)


def _items(state: State) -> list[_Item]:
    items = []
    row = spatial_line(state)
    if row:
        items.append(_Item("marker", state.left, 0, LEFT_MARKER, HALF, HALF))
    for tile, x, y in row:
        if x == y:
            items.append(_Item("double", x, y, FACE, HALF, 2 * HALF, tile))
        else:
            items.append(_Item("tile", x, y, FACE, 2 * HALF, HALF, tile))
    if row:
        items.append(_Item("marker", state.right, 0, RIGHT_MARKER, HALF, HALF))
    return items


def _layout(items: list[_Item]) -> list[list[_Item]]:
    rows: list[list[_Item]] = [[]]
    used = 0
    for item in items:
        if rows[-1] and used + item.width > WIDTH - 2 * MARGIN:
            rows.append([])
            used = 0
        rows[-1].append(item)
        used += item.width + GAP
    return rows


def render_rgb(state: State) -> np.ndarray:
    """A uint8 H×W×3 picture of the line, left to right, wrapping onto new rows: tiles with
    pip dots, doubles crosswise, a yellow marker showing the left open value before the
    first tile and a blue one showing the right open value after the last. The size is fixed
    (800×216) for every line a deal allows, so video recorders get equal frames."""
    height = 2 * MARGIN + MIN_ROWS * ROW_HEIGHT
    img = np.empty((height, WIDTH, 3), dtype=np.uint8)
    img[:] = BACKGROUND
    return _draw_line(img, state)


def _draw_line(img: np.ndarray, state: State, highlight: int = -1) -> np.ndarray:
    """Draw the line into ``img`` (its top MARGIN + MIN_ROWS * ROW_HEIGHT rows at least),
    the tile ``highlight`` (a tile index; -1 for none) framed in ``HIGHLIGHT``."""
    rows = _layout(_items(state))
    for r, row in enumerate(rows):
        centre = MARGIN + r * ROW_HEIGHT + ROW_HEIGHT // 2
        x = MARGIN
        for item in row:
            top = centre - item.height // 2
            _draw_item(img, item, top, x)
            if item.kind != "marker" and item.tile == highlight:
                for d in (2, 3):
                    _outline(
                        img, top - d, x - d, item.height + 2 * d, item.width + 2 * d, HIGHLIGHT
                    )
            x += item.width + GAP
    if state.left == EMPTY:
        _outline(img, MARGIN + ROW_HEIGHT // 2 - HALF // 2, MARGIN, HALF, 2 * HALF, FACE)
    return img


def _draw_item(img: np.ndarray, item: _Item, top: int, left: int) -> None:
    h, w = item.height, item.width
    img[top : top + h, left : left + w] = item.colour
    _outline(img, top, left, h, w, EDGE)
    if item.kind == "marker":
        _pips(img, top, left, item.first)
    elif item.kind == "double":  # crosswise: halves stacked vertically
        img[top + HALF, left + 2 : left + w - 2] = EDGE
        _pips(img, top, left, item.first)
        _pips(img, top + HALF, left, item.second)
    else:
        img[top + 2 : top + h - 2, left + HALF] = EDGE
        _pips(img, top, left, item.first)
        _pips(img, top, left + HALF, item.second)


def _outline(img: np.ndarray, top: int, left: int, h: int, w: int, colour) -> None:
    img[top, left : left + w] = colour
    img[top + h - 1, left : left + w] = colour
    img[top : top + h, left] = colour
    img[top : top + h, left + w - 1] = colour


def _pips(img: np.ndarray, top: int, left: int, value: int, half: int = HALF) -> None:
    """Draw ``value`` pip dots in the half×half square at (top, left)."""
    step = half // 4
    radius = max(half / 10, 1.2)
    yy, xx = np.mgrid[0:half, 0:half]
    for r, c in _PIP_GRID[value]:
        cy, cx = step * (r + 1) - 0.5, step * (c + 1) - 0.5
        dot = (yy - cy) ** 2 + (xx - cx) ** 2 <= radius**2
        img[top : top + half, left : left + half][dot] = PIP


# ---------------------------------------------------------------- the whole table


def tiles_of(source: object) -> object:
    """The tile set (``.tiles`` pairs, ``.pass_action``, ``.tile_index``) of a game config or
    state; the standard double-six set for objects that carry none."""
    found = getattr(source, "tiles", None)
    if found is not None and hasattr(found, "pass_action"):
        return found
    from block_env import tiles

    if hasattr(tiles, "tile_set"):
        return tiles.tile_set(getattr(source, "max_pip", 6))
    return SimpleNamespace(
        tiles=tiles.STANDARD_TILES, pass_action=tiles.STANDARD_PASS, tile_index=tiles.tile_index
    )


TEXT = (240, 240, 230)
BAR = (16, 64, 38)  # top and bottom bars, seat panel lines
DIM_TEXT = (170, 200, 180)
BACK = (48, 62, 140)  # a tile lying face down
TURN = (255, 214, 64)  # band beside the seat to act
PASSED = (230, 120, 60)  # text of the values a seat passed on
HEADER = 34  # height of the top bar
SEAT_ROW = 40  # height of one seat's panel
FOOTER = 46  # height of the last move / result bar
SMALL_HALF = 14  # half of a tile in a seat's hand
FONT_SCALE = 2

# A 3×5 pixel font (drawn at FONT_SCALE): upper case, digits and the few signs used.
_GLYPHS: dict[str, str] = {
    "0": "###/#.#/#.#/#.#/###", "1": ".#./##./.#./.#./###", "2": "###/..#/###/#../###",
    "3": "###/..#/.##/..#/###", "4": "#.#/#.#/###/..#/..#", "5": "###/#../###/..#/###",
    "6": "###/#../###/#.#/###", "7": "###/..#/.#./.#./.#.", "8": "###/#.#/###/#.#/###",
    "9": "###/#.#/###/..#/###", "A": ".#./#.#/###/#.#/#.#", "B": "##./#.#/##./#.#/##.",
    "C": ".##/#../#../#../.##", "D": "##./#.#/#.#/#.#/##.", "E": "###/#../##./#../###",
    "F": "###/#../##./#../#..", "G": ".##/#../#.#/#.#/.##", "H": "#.#/#.#/###/#.#/#.#",
    "I": "###/.#./.#./.#./###", "J": "..#/..#/..#/#.#/.#.", "K": "#.#/#.#/##./#.#/#.#",
    "L": "#../#../#../#../###", "M": "#.#/###/###/#.#/#.#", "N": "##./#.#/#.#/#.#/#.#",
    "O": ".#./#.#/#.#/#.#/.#.", "P": "##./#.#/##./#../#..", "Q": ".#./#.#/#.#/##./.##",
    "R": "##./#.#/##./#.#/#.#", "S": ".##/#../.#./..#/##.", "T": "###/.#./.#./.#./.#.",
    "U": "#.#/#.#/#.#/#.#/###", "V": "#.#/#.#/#.#/#.#/.#.", "W": "#.#/#.#/###/###/#.#",
    "X": "#.#/#.#/.#./#.#/#.#", "Y": "#.#/#.#/.#./.#./.#.", "Z": "###/..#/.#./#../###",
    " ": ".../.../.../.../...", ":": ".../.#./.../.#./...", "|": ".#./.#./.#./.#./.#.",
    "[": "##./#../#../#../##.", "]": ".##/..#/..#/..#/.##", "-": ".../.../###/.../...",
    "/": "..#/..#/.#./#../#..", ",": ".../.../.../.#./#..", ".": ".../.../.../.../.#.",
    "(": ".#./#../#../#../.#.", ")": ".#./..#/..#/..#/.#.", "&": ".#./#.#/.#./#.#/.##",
    ">": "#../.#./..#/.#./#..", "+": ".../.#./###/.#./...", "=": ".../###/.../###/...",
    "?": "###/..#/.#./.../.#.", ";": ".../.#./.../.#./#..", "#": "#.#/###/#.#/###/#.#",
}  # fmt: skip
_FONT = {
    ch: np.array([[c == "#" for c in row] for row in rows.split("/")], dtype=bool)
    for ch, rows in _GLYPHS.items()
}
CHAR_WIDTH = 4 * FONT_SCALE  # 3 pixels and a gap


def _text(img: np.ndarray, top: int, left: int, text: str, colour=TEXT) -> int:
    """Write ``text`` (upper-cased; unknown characters as ``?``) at (top, left), clipped to
    the picture; returns the x after the last character."""
    x = left
    for ch in text.upper():
        glyph = np.kron(_FONT.get(ch, _FONT["?"]), np.ones((FONT_SCALE, FONT_SCALE), bool))
        h, w = glyph.shape
        if x + w > img.shape[1] or top + h > img.shape[0]:
            break
        img[top : top + h, x : x + w][glyph] = colour
        x += CHAR_WIDTH
    return x


def _small_tile(img: np.ndarray, top: int, left: int, pair: tuple[int, int] | None) -> None:
    """A hand tile, 2·SMALL_HALF wide: face up with pips, or face down (``pair`` None)."""
    h, w = SMALL_HALF, 2 * SMALL_HALF
    img[top : top + h, left : left + w] = FACE if pair is not None else BACK
    _outline(img, top, left, h, w, EDGE)
    if pair is not None:
        img[top + 2 : top + h - 2, left + SMALL_HALF] = EDGE
        _pips(img, top, left, pair[0], SMALL_HALF)
        _pips(img, top, left + SMALL_HALF, pair[1], SMALL_HALF)


def _seat_name(config: BlockConfig, seat: int, labels: list[str] | None) -> str:
    name = f"P{seat}"
    if labels is not None and seat < len(labels) and labels[seat]:
        name += f" {labels[seat]}"[:12]
    return name


def _move_text(config: BlockConfig, seat: int, action: int, labels: list[str] | None) -> str:
    tiles = tiles_of(config)
    who = _seat_name(config, seat, labels)
    if action == tiles.pass_action:
        return f"{who} PASSED"
    a, b = tiles.tiles[action // 2]
    return f"{who} PLAYED {a}-{b} {'LEFT' if action % 2 == 0 else 'RIGHT'}"


def _outcome_text(config: BlockConfig, result: HandResult) -> str:
    if result.winner is None:
        return "HAND OVER: BLOCKED, TIED - NOBODY SCORES"
    how = "WINS THE BLOCK" if result.blocked else "DOMINOED"
    return f"HAND OVER: P{result.winner} {how}, +{max(result.points)}"


def render_table(
    config: BlockConfig,
    state: State,
    viewer: int | None = None,
    last_moves: list[tuple[int, int]] | None = None,
    last_hand: State | None = None,
    labels: list[str] | None = None,
) -> np.ndarray:
    """The whole table as a uint8 H×W×3 picture: a top bar (hand, target, seat to act), the
    line (as ``render_rgb``, the tile played last framed in red), one panel per seat (its
    hand, face up when ``viewer`` is None or that seat, else face down; tile count; score and
    target; the values it passed on; a yellow band on the seat to act) and a bottom bar with
    the last moves (``last_moves``: (seat, action) pairs, oldest first; without them the tile
    played last) and the hand result (of ``state``, or of ``last_hand`` just finished).
    The size depends on nothing but the picture's constants (800×466), so all frames of a
    game match."""
    n = config.num_players
    if viewer is not None and (isinstance(viewer, bool) or not 0 <= int(viewer) < n):
        raise ValueError(f"viewer={viewer!r} is not a seat: use None or an int in 0..{n - 1}")
    tiles = tiles_of(config)
    line_height = 2 * MARGIN + MIN_ROWS * ROW_HEIGHT
    height = HEADER + line_height + 4 * SEAT_ROW + FOOTER
    img = np.empty((height, WIDTH, 3), dtype=np.uint8)
    img[:] = BACKGROUND
    over = state.result is not None
    # top bar
    img[:HEADER] = BAR
    mode = "PARTNERSHIP" if config.partnership else f"{n} PLAYERS"
    turn = "HAND OVER" if over else f"TO ACT: {_seat_name(config, state.current, labels)}"
    goal = f"TARGET {config.target}" if config.episode == "match" else "ONE-HAND GAME"
    head = f"BLOCK {mode}  HAND {state.hand_number + 1}  {goal}  {turn}"
    _text(img, (HEADER - 5 * FONT_SCALE) // 2, MARGIN, head)
    # the line
    highlight = state.line[-1][0] if state.line else -1
    _draw_line(img[HEADER : HEADER + line_height], state, highlight)
    # seat panels
    top = HEADER + line_height
    for seat in range(n):
        y = top + seat * SEAT_ROW
        img[y, :] = BAR
        if seat == state.current and not over:
            img[y + 2 : y + SEAT_ROW - 1, :6] = TURN
        text_y = y + (SEAT_ROW - 5 * FONT_SCALE) // 2
        _text(img, text_y, MARGIN, _seat_name(config, seat, labels))
        hand = list(iter_tiles(state.hands[seat]))
        x = 150
        for t in hand:
            face_up = viewer is None or viewer == seat
            _small_tile(
                img, y + (SEAT_ROW - SMALL_HALF) // 2, x, tiles.tiles[t] if face_up else None
            )
            x += 2 * SMALL_HALF + 4
        info = f"{len(hand)} TILE{'S' if len(hand) != 1 else ' '}  SCORE {state.scores[seat]}"
        if config.episode == "match":
            info += f"/{config.target}"
        if config.partnership:
            info = f"TEAM {'AB'[seat % 2]}  " + info
        x = _text(img, text_y, 400, info)
        voids = [v for v in range(len(_PIP_GRID)) if state.voids[seat] >> v & 1]
        if voids:
            _text(img, text_y, x + CHAR_WIDTH, "PASSED " + " ".join(map(str, voids)), PASSED)
    # bottom bar
    y = top + 4 * SEAT_ROW
    img[y:] = BAR
    if last_moves:
        moves = "; ".join(_move_text(config, s, a, labels) for s, a in last_moves[-3:])
        _text(img, y + 6, MARGIN, "LAST: " + moves)
    elif state.line:
        a, b = tiles.tiles[state.line[-1][0]]
        side = "LEFT" if state.line[-1][1] == 0 else "RIGHT"
        if len(state.line) == 1:
            side = "OPENING"
        _text(img, y + 6, MARGIN, f"LAST TILE PLAYED: {a}-{b} {side}", DIM_TEXT)
    result = state.result if over else None if last_hand is None else last_hand.result
    if result is not None:
        words = _outcome_text(config, result) + "  PIPS LEFT " + " ".join(map(str, result.pips))
        if over and state.episode_over:
            won = " ".join(f"P{s}" for s in state.winners) or "DRAW"
            words += f"  GAME OVER: {won}"
        _text(img, y + 6 + 8 * FONT_SCALE, MARGIN, words, TURN)
    return img
