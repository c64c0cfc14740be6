"""A Block position as SVG text: the whole table, drawn from the rules' state.

``position_svg(state, config, viewer=None)`` returns one ``<svg>`` element (a string) with

* the line of play as dominoes with pips, doubles crosswise, laid out from the opening tile
  outwards and bending into the rows above and below when it reaches the edge (three rows
  of line are kept, so pictures of a game keep their size unless an arm grows very long);
* the two open ends marked by arrows pointing away from the line, each with its value and the
  words "left" and "right";
* one panel per seat: its hand (face up when ``viewer`` is None or that seat, else face down,
  as the observation shows it), tile count, score and target, the values it passed on, its
  team in a partnership, and a band and the words "to act" on the seat to act;
* a header (players, hand, target) and a footer (the last moves, the hand's result).

Text is SVG text scaled by the ``viewBox``, so it stays sharp at any zoom; colours come from
the Okabe-Ito palette, and nothing is told by colour alone (shapes and words go with them).
Every domino is a ``<g>`` of class ``tile`` (``line-tile`` or ``hand-tile``); a face-down one
also has the class ``back`` and carries no pips and no ``data-tile`` (a face-up one's, the
tile's values, low first: ``data-tile="2-5"``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from numbers import Integral
from typing import NamedTuple
from xml.sax.saxutils import escape, quoteattr

from block_env.config import BlockConfig
from block_env.rendering import _PIP_GRID, spatial_line
from block_env.rules import HandResult, State
from block_env.tiles import iter_tiles

__all__ = ["PALETTE", "move_words", "position_svg", "result_words", "seat_name", "tile_svg"]

# Okabe-Ito colours, and the neutral ones around them.
PALETTE = {
    "table": "#143d2e",
    "bar": "#0d2a20",
    "text": "#ffffff",
    "dim": "#c9d8cf",
    "face": "#fffdf4",
    "edge": "#000000",
    "back": "#0072B2",  # blue
    "left": "#E69F00",  # orange
    "right": "#56B4E9",  # sky blue
    "turn": "#F0E442",  # yellow
    "last": "#D55E00",  # vermilion
    "playable": "#009E73",  # bluish green
    "team_a": "#E69F00",
    "team_b": "#56B4E9",
    "passed": "#CC79A7",  # reddish purple
}

WIDTH = 960
MARGIN = 16
HALF = 22  # side of one half of a tile on the line
GAP = 4
ROW = 2 * HALF + 12  # distance between the centres of two rows of the line
MIN_ROWS = 3  # rows of line kept in every picture (more only for a very long arm)
HEADER = 40
SEAT = 44  # height of one seat's panel
SMALL = 15  # half of a tile in a hand
FOOTER = 54
HAND_X = 215  # where the hands start in the seat panels
FONT = "DejaVu Sans, Verdana, Arial, sans-serif"


class _Link(NamedTuple):
    """A tile of one arm of the line: the value touching the line so far, the other one."""

    tile: int
    near: int
    far: int


class _Placed(NamedTuple):
    x: float
    y: float
    vertical: bool  # long side vertical: a double crosswise, or a tile turning a corner
    first: int  # value of the left (or top) half
    second: int
    tile: int


def position_svg(
    state: State,
    config: BlockConfig,
    viewer: int | None = None,
    *,
    labels: Sequence[str] | None = None,
    last_moves: Sequence[tuple[int, int]] = (),
    last_hand: State | None = None,
    playable: Collection[int] = (),
) -> str:
    """The table at ``state`` as an SVG document (a string).

    ``viewer`` None shows every hand face up; a seat shows only that seat's tiles face up.
    ``labels`` names the seats (``"P1 rules"``); ``last_moves`` are (seat, action) pairs of
    the hand, oldest first (the footer shows the last three); ``last_hand`` is the hand just
    finished, whose result the footer shows while ``state`` is the next hand's start;
    ``playable`` tile indices are outlined in the viewer's hand. ValueError for a viewer
    that is not a seat."""
    n = config.num_players
    if viewer is not None and (
        isinstance(viewer, bool) or not isinstance(viewer, Integral) or not 0 <= viewer < n
    ):
        raise ValueError(f"viewer={viewer!r} is not a seat: use None or an int in 0..{n - 1}")
    layout = _layout(state)
    line_height = layout.rows * ROW + 2 * MARGIN
    height = HEADER + line_height + n * SEAT + FOOTER
    names = [seat_name(s, labels) for s in range(n)]
    parts = [_header(state, config, names)]
    parts.append(_line(state, config, layout, HEADER))
    top = HEADER + line_height
    for seat in range(n):
        face_up = viewer is None or viewer == seat
        mine = playable if viewer == seat or viewer is None else ()
        parts.append(
            _seat_panel(state, config, seat, names[seat], top + seat * SEAT, face_up, mine)
        )
    parts.append(_footer(state, config, names, last_moves, last_hand, top + n * SEAT))
    who = "every hand face up" if viewer is None else f"seen by {names[viewer]}"
    label = f"Block position, hand {state.hand_number + 1}, {who}"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" aria-label={quoteattr(label)} '
        f'class="block-position" font-family="{FONT}">'
        f"<title>{escape(label)}</title>"
        f'<rect class="table" width="{WIDTH}" height="{height}" fill="{PALETTE["table"]}"/>'
        + "".join(parts)
        + "</svg>"
    )


# ----------------------------------------------------------------------------- pieces


def _num(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def _text(x: float, y: float, text: str, size: int = 14, **attrs: str) -> str:
    extra = "".join(f" {k.rstrip('_').replace('_', '-')}={quoteattr(v)}" for k, v in attrs.items())
    fill = "" if "fill" in attrs else f' fill="{PALETTE["text"]}"'
    return (
        f'<text x="{_num(x)}" y="{_num(y)}" font-size="{size}"{fill}{extra}>{escape(text)}</text>'
    )


def seat_name(seat: int, labels: Sequence[str] | None = None) -> str:
    """``P1`` and the seat's label when it has one (``P1 rules``)."""
    if labels is not None and seat < len(labels) and labels[seat]:
        return f"P{seat} {labels[seat]}"
    return f"P{seat}"


def _pips(x: float, y: float, half: float, value: int) -> str:
    step, radius = half / 4, max(half / 10, 1.2)
    return "".join(
        f'<circle cx="{_num(x + step * (c + 1))}" cy="{_num(y + step * (r + 1))}" '
        f'r="{_num(radius)}"/>'  # SVG fills black by default
        for r, c in _PIP_GRID[value]
    )


def _tile(
    x: float,
    y: float,
    half: float,
    vertical: bool,
    values: tuple[int, int] | None,
    classes: str,
    attrs: str = "",
    outline: str | None = None,
) -> str:
    """A domino with its top-left corner at (x, y): face up with ``values`` (left/top half
    first), or face down (``values`` None)."""
    w, h = (half, 2 * half) if vertical else (2 * half, half)
    if values is None:
        inset = half / 5
        return (
            f'<g class="{classes} back"{attrs}>'
            f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(w)}" height="{_num(h)}" rx="3" '
            f'fill="{PALETTE["back"]}" stroke="{PALETTE["edge"]}"/>'
            f'<rect x="{_num(x + inset)}" y="{_num(y + inset)}" width="{_num(w - 2 * inset)}" '
            f'height="{_num(h - 2 * inset)}" rx="2" fill="none" stroke="{PALETTE["face"]}" '
            'stroke-width="1"/></g>'
        )
    a, b = values
    if vertical:
        divider = (
            f'x1="{_num(x + 2)}" y1="{_num(y + half)}" x2="{_num(x + w - 2)}" y2="{_num(y + half)}"'
        )
        pips = _pips(x, y, half, a) + _pips(x, y + half, half, b)
    else:
        divider = (
            f'x1="{_num(x + half)}" y1="{_num(y + 2)}" x2="{_num(x + half)}" y2="{_num(y + h - 2)}"'
        )
        pips = _pips(x, y, half, a) + _pips(x + half, y, half, b)
    frame = ""
    if outline is not None:
        frame = (
            f'<rect class="frame" x="{_num(x - 3)}" y="{_num(y - 3)}" width="{_num(w + 6)}" '
            f'height="{_num(h + 6)}" rx="5" fill="none" stroke="{outline}" stroke-width="3" '
            'stroke-dasharray="6 3"/>'
        )
    return (
        f'<g class="{classes}" data-tile="{min(a, b)}-{max(a, b)}"{attrs}>{frame}'
        f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(w)}" height="{_num(h)}" rx="3" '
        f'fill="{PALETTE["face"]}" stroke="{PALETTE["edge"]}"/>'
        f'<line {divider} stroke="{PALETTE["edge"]}" stroke-width="1.2"/>{pips}</g>'
    )


def tile_svg(pair: tuple[int, int], height: int = 24) -> str:
    """One domino face up, ``pair`` left to right, ``height`` units tall, as an SVG element of
    its own."""
    a, b = pair
    w, h = 2 * height + 2, height + 2
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="-1 -1 {w} {h}" width="{w}" '
        f'height="{h}" role="img" aria-label="[{a}|{b}]">'
        + _tile(0, 0, height, False, (a, b), "tile-icon")
        + "</svg>"
    )


# ----------------------------------------------------------------------------- the line


def _arms(state: State) -> tuple[tuple[int, int, int], list[_Link], list[_Link]]:
    """The opening (tile, left value, right value) and the two arms growing from it, each
    from the opening outwards."""
    row = spatial_line(state)
    opening_tile = state.line[0][0]
    k = next(i for i, item in enumerate(row) if item[0] == opening_tile)
    right = [_Link(t, a, b) for t, a, b in row[k + 1 :]]
    left = [_Link(t, b, a) for t, a, b in reversed(row[:k])]
    return row[k], left, right


def _walk(
    links: Sequence[tuple[int, int, int]], start: float, direction: int, rows_step: int
) -> tuple[list[_Placed], float, int, int]:
    """Lay out one arm from x ``start`` (the edge of the opening) going ``direction`` (+1
    right, -1 left); at the edge a tile turns the corner into the next row (``rows_step``
    +1 down, -1 up) and the arm comes back. Returns the tiles (rows relative to the
    opening's), and the x, direction and row where the arm ends."""
    placed: list[_Placed] = []
    x, d, row = start + direction * GAP, direction, 0
    low, high = MARGIN + HALF + GAP, WIDTH - MARGIN - HALF - GAP
    for tile, near, far in links:
        double = near == far
        w = HALF if double else 2 * HALF
        end = x + d * w
        if low <= end <= high:
            left_x = x if d > 0 else end
            first, second = (near, far) if d > 0 else (far, near)
            placed.append(_Placed(left_x, row, double, first, second, tile))
            x = end + d * GAP
            continue
        # the corner: the tile stands upright at the edge, between this row and the next
        left_x = x if d > 0 else x - HALF
        first, second = (near, far) if rows_step > 0 else (far, near)
        placed.append(_Placed(left_x, row + rows_step / 2, True, first, second, tile))
        x = left_x - GAP if d > 0 else left_x + HALF + GAP
        d, row = -d, row + rows_step
    return placed, x, d, row


class _Layout(NamedTuple):
    placed: list[_Placed]  # rows relative to the opening's
    ends: list[tuple[float, int, int]]  # (x, direction, row) of the right and left ends
    rows: int  # rows of line the picture keeps


def _layout(state: State) -> _Layout:
    """Where each tile of the line goes, and how many rows the picture keeps for it: at
    least ``MIN_ROWS``, and more, one above and one below, for each corner the longer arm
    turns beyond them."""
    if not state.line:
        return _Layout([], [], MIN_ROWS)
    (tile, a, b), left, right = _arms(state)
    double = a == b
    w = HALF if double else 2 * HALF
    placed = [_Placed(WIDTH / 2 - w / 2, 0, double, a, b, tile)]
    ends = []
    for links, start, d, step in (
        (right, WIDTH / 2 + w / 2, 1, 1),
        (left, WIDTH / 2 - w / 2, -1, -1),
    ):
        tiles, x, end_d, row = _walk(links, start, d, step)
        placed += tiles
        ends.append((x, end_d, row))
    turns = max(abs(row) for _, _, row in ends)
    return _Layout(placed, ends, max(MIN_ROWS, 2 * turns + 1))


def _line(state: State, config: BlockConfig, layout: _Layout, top: float) -> str:
    centre_y = top + MARGIN + (layout.rows // 2) * ROW + ROW / 2
    out = ['<g class="line">']
    if not state.line:
        x, y = WIDTH / 2 - HALF - 8, centre_y - HALF / 2 - 8
        out.append(
            f'<rect class="empty-line" x="{_num(x)}" y="{_num(y)}" width="{2 * HALF + 16}" '
            f'height="{HALF + 16}" rx="4" fill="none" stroke="{PALETTE["dim"]}" '
            'stroke-dasharray="5 4"/>'
        )
        words = "empty line: the leader opens"
        if state.opening_tile >= 0:
            a, b = config.tiles.tiles[state.opening_tile]
            words = f"empty line: the opening must be [{a}|{b}]"
        out.append(_text(WIDTH / 2, y + HALF + 40, words, 14, text_anchor="middle"))
        return "".join(out) + "</g>"
    last = state.line[-1][0]
    for p in layout.placed:
        row_y = centre_y + p.y * ROW
        y = row_y - HALF if p.vertical else row_y - HALF / 2
        frame = PALETTE["last"] if p.tile == last else None
        out.append(
            _tile(p.x, y, HALF, p.vertical, (p.first, p.second), "tile line-tile", "", frame)
        )
    (rx, rd, rrow), (lx, ld, lrow) = layout.ends
    out.append(_end_marker(lx, ld, centre_y + lrow * ROW, state.left, "left"))
    out.append(_end_marker(rx, rd, centre_y + rrow * ROW, state.right, "right"))
    return "".join(out) + "</g>"


def _end_marker(x: float, d: int, y: float, value: int, side: str) -> str:
    """An arrow at x pointing ``d`` away from the line's end, with the open value in it and
    the end's name under it."""
    base = x + d * 3  # clear of the frame of a tile played last
    tip = base + d * (HALF + 4)
    notch = base + d * 8
    h = HALF / 2 + 2
    corners = [(base, y - h), (notch, y - h), (tip, y), (notch, y + h), (base, y + h)]
    points = " ".join(f"{_num(px)},{_num(py)}" for px, py in corners)
    centre = (base + notch) / 2 + d * 2
    return (
        f'<g class="end-marker" data-end="{side}" data-value="{value}">'
        f"<title>{side} open end: {value}</title>"
        f'<polygon points="{points}" fill="{PALETTE[side]}" stroke="{PALETTE["edge"]}"/>'
        + _text(
            centre,
            y + 5,
            str(value),
            15,
            fill=PALETTE["edge"],
            text_anchor="middle",
            font_weight="bold",
        )
        + _text((base + tip) / 2, y + h + 13, side, 11, text_anchor="middle", fill=PALETTE["dim"])
        + "</g>"
    )


# ----------------------------------------------------------------------------- around it


def _header(state: State, config: BlockConfig, names: list[str]) -> str:
    n = config.num_players
    mode = "partnership, teams A: P0 & P2, B: P1 & P3" if config.partnership else f"{n} players"
    goal = f"first to {config.target}" if config.episode == "match" else "one hand"
    head = f"Block · {mode} · hand {state.hand_number + 1} · {goal}"
    if state.result is not None:
        turn = "game over" if state.episode_over else "hand over"
    else:
        turn = f"to act: {names[state.current]}"
    return (
        f'<g class="header"><rect width="{WIDTH}" height="{HEADER}" fill="{PALETTE["bar"]}"/>'
        + _text(MARGIN, 26, head, 15)
        + _text(
            WIDTH - MARGIN, 26, turn, 15, text_anchor="end", font_weight="bold", class_="turn-text"
        )
        + "</g>"
    )


def _seat_panel(
    state: State,
    config: BlockConfig,
    seat: int,
    name: str,
    y: float,
    face_up: bool,
    playable: Collection[int],
) -> str:
    to_act = state.result is None and seat == state.current
    out = [f'<g class="seat{" to-act" if to_act else ""}" data-seat="{seat}">']
    out.append(
        f'<line x1="0" y1="{y}" x2="{WIDTH}" y2="{y}" stroke="{PALETTE["bar"]}" stroke-width="2"/>'
    )
    mid = y + SEAT / 2
    if to_act:
        out.append(
            f'<rect class="turn-band" x="0" y="{y + 2}" width="8" height="{SEAT - 3}" '
            f'fill="{PALETTE["turn"]}"/>'
        )
    x = MARGIN
    if config.partnership:
        team = "AB"[seat % 2]
        colour = PALETTE["team_a" if team == "A" else "team_b"]
        shape = (
            f'<circle cx="{x + 11}" cy="{mid}" r="11" fill="{colour}"/>'
            if team == "A"
            else f'<rect x="{x}" y="{mid - 11}" width="22" height="22" fill="{colour}"/>'
        )
        out.append(
            f'<g class="team" data-team="{team}"><title>team {team}</title>{shape}'
            + _text(
                x + 11,
                mid + 5,
                team,
                14,
                fill=PALETTE["edge"],
                text_anchor="middle",
                font_weight="bold",
            )
            + "</g>"
        )
        x += 30
    out.append(_text(x, mid + 5, name[:18], 15, font_weight="bold" if to_act else "normal"))
    if to_act:
        out.append(_text(x, mid + 19, "to act", 11, fill=PALETTE["turn"]))
    hand = list(iter_tiles(state.hands[seat]))
    room = 640 - HAND_X
    step = min(2 * SMALL + 6, room / max(len(hand), 1))
    for i, t in enumerate(hand):
        values = config.tiles.tiles[t] if face_up else None
        mark = PALETTE["playable"] if face_up and t in playable else None
        classes = "tile hand-tile" + (" playable" if mark else "")
        attrs = f' data-seat="{seat}"'
        out.append(
            _tile(HAND_X + i * step, mid - SMALL / 2, SMALL, False, values, classes, attrs, mark)
        )
    info = f"{len(hand)} tile{'s' if len(hand) != 1 else ''} · score {state.scores[seat]}"
    if config.episode == "match":
        info += f"/{config.target}"
    out.append(_text(WIDTH - MARGIN, mid - 2, info, 14, text_anchor="end"))
    voids = [v for v in range(config.tiles.num_values) if state.voids[seat] >> v & 1]
    if voids:
        words = "passed on " + ", ".join(map(str, voids))
        out.append(
            _text(WIDTH - MARGIN, mid + 14, words, 12, text_anchor="end", fill=PALETTE["passed"])
        )
    return "".join(out) + "</g>"


def move_words(
    config: BlockConfig, names: Sequence[str], seat: int, action: int, opening: bool
) -> str:
    """One line for a move: who passed, opened with a tile, or played it on an end."""
    tiles = config.tiles
    if action == tiles.pass_action:
        return f"{names[seat]} passed"
    a, b = tiles.tiles[action // 2]
    if opening:
        return f"{names[seat]} opened with [{a}|{b}]"
    return f"{names[seat]} played [{a}|{b}] on the {'left' if action % 2 == 0 else 'right'}"


def result_words(result: HandResult, names: Sequence[str]) -> str:
    """One line for a hand's result: who won it and how, or the tied block."""
    if result.winner is None:
        return "Hand over: blocked, tied for the lowest total; nobody scores"
    how = "wins the block" if result.blocked else "dominoes"
    return f"Hand over: {names[result.winner]} {how}, +{max(result.points)}"


def _footer(
    state: State,
    config: BlockConfig,
    names: list[str],
    last_moves: Sequence[tuple[int, int]],
    last_hand: State | None,
    y: float,
) -> str:
    out = [
        f'<g class="footer"><rect y="{y}" width="{WIDTH}" height="{FOOTER}" '
        f'fill="{PALETTE["bar"]}"/>'
    ]
    if last_moves:
        moves = list(last_moves)
        first_tile = next(
            (i for i, (_, a) in enumerate(moves) if a != config.tiles.pass_action), -1
        )
        shown = range(max(0, len(moves) - 3), len(moves))
        words = "; ".join(move_words(config, names, *moves[i], i == first_tile) for i in shown)
        out.append(_text(MARGIN, y + 21, "Last: " + words, 13, class_="last-moves"))
    result = (
        state.result
        if state.result is not None
        else None
        if last_hand is None
        else last_hand.result
    )
    if result is not None:
        words = result_words(result, names) + " · pips left " + ", ".join(map(str, result.pips))
        if state.result is not None and state.episode_over:
            won = " & ".join(names[s] for s in state.winners) or "a draw"
            words += f" · game over: {won}" + (" won" if state.winners else "")
        out.append(_text(MARGIN, y + 43, words, 13, fill=PALETTE["turn"], class_="result"))
    return "".join(out) + "</g>"
