"""A game record as one self-contained HTML page: every position as inline SVG, the move
list, the hands' results and the match scores, with controls and arrow keys.

The page loads nothing (its style and script are inline), so it works from ``file://`` and
offline. Position N (0 is the first deal; each move and each new deal adds one) sits in a
``<template data-position="N">``; the board shows one of them and carries ``data-ply="N"``;
the controls carry ``data-control="first|prev|next|last"`` and each entry of the move list
``data-goto="N"``.
"""

from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any, NamedTuple

from block_env.records import move_action, replay
from block_env.svg import move_words, position_svg, result_words, seat_name
from block_env.web.page import asset, fill

__all__ = ["Position", "positions", "replay_html", "write_html"]


class Position(NamedTuple):
    """One position of the record: its hand (from 1), its move in the hand (0: the deal),
    the picture, a caption, and the move in words ("" for a deal)."""

    hand: int
    move: int
    svg: str
    caption: str
    words: str


def seat_names(record: dict[str, Any]) -> list[str]:
    """``P0 label`` for each seat (``P0`` where the record has no label)."""
    labels = record.get("players")
    return [seat_name(s, labels) for s in range(record["config"].get("num_players", 2))]


def positions(record: dict[str, Any], viewer: int | None = None) -> list[Position]:
    """Every position of ``record`` (replayed and checked as ``records.replay`` does: a
    RecordMismatch or RecordError on the first difference), drawn for ``viewer`` (None: every
    hand face up). The tiles the seat to act can play are outlined where they are shown."""
    n = record["config"].get("num_players", 2)
    if viewer is not None and (isinstance(viewer, bool) or not 0 <= viewer < n):
        raise ValueError(f"viewer={viewer!r} is not a seat: use None or an int in 0..{n - 1}")
    labels = record.get("players")
    names = seat_names(record)
    out: list[Position] = []
    moves: list[tuple[int, int]] = []

    def snap(raw: Any, move: dict[str, Any] | None) -> None:
        hand = sum(p.move == 0 for p in out) + (move is None)
        words = ""
        if move is None:
            moves.clear()
            state = raw.game
            scores = ", ".join(f"{names[s]} {v}" for s, v in enumerate(state.scores))
            caption = f"Hand {hand} dealt; {names[state.leader]} leads. Scores: {scores}."
        else:
            action = move_action(raw.config, move, "move")
            pass_action = raw.config.tiles.pass_action
            opening = action != pass_action and all(a == pass_action for _, a in moves)
            moves.append((move["seat"], action))
            over = raw.infos[raw.possible_agents[0]]["hand_over"]
            state = raw.last_hand if over else raw.game
            words = move_words(raw.config, names, move["seat"], action, opening)
            caption = f"Hand {hand}, move {len(moves)}: {words}."
            if over:
                caption += " " + result_words(state.result, names) + "."
        playable: list[int] = []
        if state.result is None:
            mask = raw.observe(raw.agent_selection)["action_mask"]
            pass_action = raw.config.tiles.pass_action
            playable = sorted({int(a) // 2 for a in mask.nonzero()[0] if a != pass_action})
        picture = position_svg(
            state, raw.config, viewer, labels=labels, last_moves=moves, playable=playable
        )
        out.append(Position(hand, len(moves), picture, caption, words))

    replay(record, on_step=snap)
    return out


def _scores_table(record: dict[str, Any], names: list[str]) -> str:
    head = "".join(
        f"<th scope='col' title='{escape(name, quote=True)}'>P{s}</th>"
        for s, name in enumerate(names)
    )
    rows = []
    for k, hand in enumerate(record["hands"], 1):
        result = hand.get("result")
        if result is None:
            continue
        cells = "".join(f"<td>{v}</td>" for v in result["scores"])
        rows.append(f"<tr><th scope='row'>hand {k}</th>{cells}</tr>")
    final = "".join(f"<td><strong>{v}</strong></td>" for v in record["scores"])
    rows.append(f"<tr><th scope='row'>final</th>{final}</tr>")
    if record.get("finished"):
        won = " and ".join(names[s] for s in record.get("winners") or []) or "a draw"
        verdict = f"<p>Game over: {escape(won)}{' won' if record.get('winners') else ''}.</p>"
    else:
        verdict = "<p>The game is not finished.</p>"
    return (
        f"<table class='scores'><thead><tr><th></th>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>{verdict}"
    )


def _move_list(record: dict[str, Any], found: list[Position], names: list[str]) -> str:
    out = []
    for index, position in enumerate(found):
        hand = record["hands"][position.hand - 1]
        if position.move == 0:
            if out:
                out.append("</ol>")
                out.append(_result_line(record["hands"][position.hand - 2], names))
            leader = names[hand["leader"]]
            out.append(
                f"<h3><button type='button' data-goto='{index}'>Hand {position.hand}: "
                f"{escape(leader)} leads</button></h3><ol>"
            )
            continue
        out.append(
            f"<li><button type='button' data-goto='{index}'>{escape(position.words)}</button></li>"
        )
    out.append("</ol>")
    out.append(_result_line(record["hands"][found[-1].hand - 1], names))
    return "".join(out)


def _result_line(hand: dict[str, Any], names: list[str]) -> str:
    result = hand.get("result")
    if result is None:
        return "<p class='result'>The hand is not finished.</p>"
    if result["winner"] is None:
        how = "Blocked, tied for the lowest total: nobody scores"
    else:
        verb = "wins the block" if result["blocked"] else "dominoes"
        how = f"{names[result['winner']]} {verb}, +{max(result['points'])}"
    pips = ", ".join(map(str, result["pips"]))
    scores = ", ".join(map(str, result["scores"]))
    return f"<p class='result'>{escape(how)}; pips left {pips}; scores {scores}.</p>"


def replay_html(record: dict[str, Any], viewer: int | None = None) -> str:
    """The page (a string) for ``record`` drawn for ``viewer`` (None: every hand face up)."""
    return _page(record, positions(record, viewer), viewer)


def _page(record: dict[str, Any], found: list[Position], viewer: int | None) -> str:
    names = seat_names(record)
    config = record["config"]
    n = config.get("num_players", 2)
    kind = "partnership" if config.get("partnership") else f"{n} players"
    settings = ", ".join(f"{k}={v}" for k, v in config.items())
    summary = (
        f"{len(record['hands'])} hand(s), {sum(p.move > 0 for p in found)} moves; "
        f"seats: {', '.join(names)}; seed {record.get('seed')}; {settings}"
    )
    view = (
        "Every hand is face up."
        if viewer is None
        else f"Seen by {names[viewer]}: only its own tiles are face up."
    )
    templates = "\n".join(
        f"<template data-position='{i}' data-caption='{escape(p.caption, quote=True)}'>"
        f"{p.svg}</template>"
        for i, p in enumerate(found)
    )
    return fill(
        asset("replay.html"),
        title=escape(f"Block replay: {kind}"),
        summary=escape(summary),
        css=asset("board.css"),
        view=escape(view),
        scores=_scores_table(record, names),
        moves=_move_list(record, found, names),
        positions=templates,
        js=asset("replay.js"),
    )


def write_html(record: dict[str, Any], path: str | os.PathLike, viewer: int | None = None) -> int:
    """Write the replay page of ``record`` to ``path``; returns the number of positions."""
    found = positions(record, viewer)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_page(record, found, viewer), encoding="utf-8")
    return len(found)
