"""From JAX states to the AEC env's terms, on the host: the reset options that set the same
position in ``raw_env`` (to play the two in lockstep) and a text picture of a position."""

from __future__ import annotations

from html import escape
from typing import Any

import numpy as np

from block_env.tiles import PIP_RANGE, TileSet, iter_tiles, tile_set


def _tile_set_of(state: Any) -> TileSet:
    """The tile set of a state, told by the length of its action mask (2T + 1)."""
    num_actions = state.legal_action_mask.shape[-1]
    for max_pip in PIP_RANGE:
        if tile_set(max_pip).num_actions == num_actions:
            return tile_set(max_pip)
    raise ValueError(f"no tile set has {num_actions} actions: not a block_env.jax state")


def _games(state: Any) -> tuple[dict[str, np.ndarray], int | None]:
    """The host copy of the position's fields and the batch size (None for one game)."""
    fields = {
        "hands": np.asarray(state._hands),
        "leader": np.asarray(state._leader),
        "scores": np.asarray(state._scores),
        "played": np.asarray(state._played),
        "left": np.asarray(state._left),
        "right": np.asarray(state._right),
        "current": np.asarray(state.current_player),
        "terminated": np.asarray(state.terminated),
        "opening": np.asarray(state._opening),
    }
    if fields["hands"].ndim == 1:
        return fields, None
    size = fields["hands"].shape[0]
    if fields["hands"].ndim != 2:
        raise ValueError(
            "expected one state or a batch of states (one batch axis), got hands of shape "
            f"{fields['hands'].shape}"
        )
    return fields, size


def _game_options(tiles: TileSet, f: dict[str, Any], i: int | None) -> dict[str, Any]:
    pick = (lambda x: x) if i is None else (lambda x: x[i])
    pairs = tiles.tiles
    options: dict[str, Any] = {
        "hands": [[pairs[t] for t in iter_tiles(int(h))] for h in pick(f["hands"])],
        "scores": [int(s) for s in pick(f["scores"])],
    }
    if int(pick(f["opening"])) < 0:  # opener="rotate" (highest_double always names a tile)
        options["leader"] = int(pick(f["leader"]))
    return options


def reset_options(state: Any) -> dict[str, Any] | list[dict[str, Any]]:
    """The ``raw_env.reset(options=...)`` that deals the hand ``state`` starts with: every
    seat's ``hands`` (lists of (a, b) tiles), the ``leader`` (only with
    ``opener="rotate"``: ``highest_double`` finds it from the hands) and the ``scores``.
    ``state`` is one that ``init`` returned or the first state of any later hand; a batch
    of states (one leading axis) gives a list of options, one per game."""
    tiles = _tile_set_of(state)
    fields, size = _games(state)
    if size is None:
        return _game_options(tiles, fields, None)
    return [_game_options(tiles, fields, i) for i in range(size)]


def _game_lines(ts: TileSet, f: dict[str, Any], i: int | None) -> list[str]:
    pick = (lambda x: x) if i is None else (lambda x: x[i])
    lines = []
    left, right = int(pick(f["left"])), int(pick(f["right"]))
    line = " ".join(ts.tile_str(t) for t in iter_tiles(int(pick(f["played"]))))
    ends = "empty" if left < 0 else f"ends {left} and {right}"
    lines.append(f"line ({ends}): {line or '-'}")
    current = int(pick(f["current"]))
    for seat, (hand, score) in enumerate(zip(pick(f["hands"]), pick(f["scores"]))):
        tiles = " ".join(ts.tile_str(t) for t in iter_tiles(int(hand)))
        mark = ">" if seat == current and not bool(pick(f["terminated"])) else " "
        lines.append(f"{mark} seat {seat} ({int(score)}): {tiles or '-'}")
    return lines


def state_svg(state: Any, dark: bool = False, scale: float = 1.0) -> str:
    """Every game of ``state`` as lines of text in one SVG (seat to act marked ``>``)."""
    tiles = _tile_set_of(state)
    fields, size = _games(state)
    games = [None] if size is None else list(range(size))
    text: list[str] = []
    for g in games:
        if size is not None:
            text.append(f"game {g}")
        text.extend(_game_lines(tiles, fields, g))
        text.append("")
    height = 16 * len(text) + 8
    width = 8 * max(len(t) for t in text) + 16
    fg, bg = ("#e8e8e8", "#202020") if dark else ("#101010", "#ffffff")
    rows = "".join(
        f'<text x="8" y="{16 * (j + 1)}">{escape(t)}</text>' for j, t in enumerate(text) if t
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width * scale}" '
        f'height="{height * scale}" viewBox="0 0 {width} {height}">'
        f'<rect width="100%" height="100%" fill="{bg}"/>'
        f'<g font-family="monospace" font-size="13" fill="{fg}">{rows}</g></svg>'
    )
