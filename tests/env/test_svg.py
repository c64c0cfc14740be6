"""The SVG table (``block_env.svg.position_svg``, the env's ``render_mode="svg"``): well-formed
XML with one tile element per domino on the line and in the hands, hidden hands face down
with nothing of them leaking, pips and doubles drawn right, the line bending to fit inside
the picture with no two tiles overlapping, the open ends, teams, seat to act, scores and the
hand's result, and the env's render."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from helpers import CONFIGS, SET_CONFIGS, config_id

import agents
import block_env
from block_env import rules, svg
from block_env.config import BlockConfig
from block_env.rendering import spatial_line
from block_env.tiles import iter_tiles

NS = "{http://www.w3.org/2000/svg}"


def parse(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == f"{NS}svg"
    return root


def classes(element: ET.Element) -> set[str]:
    return set(element.get("class", "").split())


def tiles(root: ET.Element, kind: str = "tile") -> list[ET.Element]:
    return [g for g in root.iter(f"{NS}g") if {"tile", kind} <= classes(g)]


def rect_box(tile: ET.Element) -> tuple[float, float, float, float]:
    """The domino's own rectangle (not its frame) as (x, y, width, height)."""
    rect = next(r for r in tile.findall(f"{NS}rect") if "frame" not in classes(r))
    return tuple(float(rect.get(k)) for k in ("x", "y", "width", "height"))


def texts(root: ET.Element) -> str:
    return " | ".join("".join(t.itertext()) for t in root.iter(f"{NS}text"))


def played_states(config: dict, seed: int, moves: int = 60) -> list[tuple[rules.State, object]]:
    """(state, raw env config) at each step of a greedy game, the finished hands included."""
    env = block_env.raw_env(**config)
    env.reset(seed=seed)
    bot = agents.make("greedy")
    out = [(env.game, env.config)]
    for _ in range(moves):
        if not env.agents or any(env.terminations.values()):
            break
        env.step(bot.act(env.observe(env.agent_selection)))
        if env.infos[env.possible_agents[0]]["hand_over"]:
            out.append((env.last_hand, env.config))
        out.append((env.game, env.config))
    return out


@pytest.mark.parametrize("config", CONFIGS + SET_CONFIGS, ids=config_id)
def test_well_formed_with_one_tile_element_per_domino(config: dict) -> None:
    sizes = set()
    for state, cfg in played_states(config, seed=7)[::3]:
        for viewer in (None, *range(cfg.num_players)):
            root = parse(svg.position_svg(state, cfg, viewer))
            sizes.add(root.get("viewBox"))
            in_hands = sum(bin(h).count("1") for h in state.hands)
            assert len(tiles(root, "line-tile")) == len(state.line)
            assert len(tiles(root, "hand-tile")) == in_hands
            assert len(tiles(root)) == len(state.line) + in_hands
            assert root.get("viewBox").startswith("0 0 ")
    assert len(sizes) == 1  # every picture of a game has the same size


def test_hidden_hands_are_face_down_and_leak_nothing() -> None:
    config = BlockConfig(num_players=3)
    state = played_states({"num_players": 3}, seed=3, moves=5)[-1][0]
    for viewer in range(3):
        root = parse(svg.position_svg(state, config, viewer))
        for seat in range(3):
            hand = [g for g in tiles(root, "hand-tile") if g.get("data-seat") == str(seat)]
            assert len(hand) == bin(state.hands[seat]).count("1")
            if seat == viewer:
                shown = sorted(g.get("data-tile") for g in hand)
                want = sorted(
                    "{}-{}".format(*config.tiles.tiles[t]) for t in iter_tiles(state.hands[seat])
                )
                assert shown == want and not any("back" in classes(g) for g in hand)
            else:
                assert all("back" in classes(g) for g in hand)
                assert all(
                    g.get("data-tile") is None and not g.findall(f".//{NS}circle") for g in hand
                )
    # the other seats' tiles swapped between them: the viewer's picture does not change
    a, b = state.hands[1], state.hands[2]
    both = list(iter_tiles(a | b))
    count_a = bin(a).count("1")
    swapped = state._replace(
        hands=(
            state.hands[0],
            sum(1 << t for t in both[-count_a:]),
            sum(1 << t for t in both[:-count_a]),
        )
    )
    assert swapped.hands != state.hands
    assert svg.position_svg(swapped, config, 0) == svg.position_svg(state, config, 0)
    assert svg.position_svg(swapped, config, None) != svg.position_svg(state, config, None)


def test_pips_and_doubles_crosswise() -> None:
    for state, cfg in played_states({"num_players": 2}, seed=11, moves=12):
        root = parse(svg.position_svg(state, cfg))
        for g in tiles(root):
            a, b = map(int, g.get("data-tile").split("-"))
            assert len(g.findall(f"{NS}circle")) == a + b
            if "line-tile" in classes(g):
                x, y, w, h = rect_box(g)
                if a == b:
                    assert h > w  # a double lies across the line
        row = [g for g in tiles(root, "line-tile")]
        horizontal = [g for g in row if rect_box(g)[2] > rect_box(g)[3]]
        assert len(horizontal) >= len(row) - sum(a == b for _, a, b in spatial_line(state)) - 2


def euler_chain(max_pip: int) -> list[tuple[int, int]]:
    """Every tile of the set [0|0]..[N|N] (N even) in one chain of matching ends."""
    unused = {(a, b) for a in range(max_pip + 1) for b in range(a, max_pip + 1)}
    stack, path = [(0, None)], []
    while stack:
        value, _ = stack[-1]
        nxt = min((t for t in unused if value in t), default=None)
        if nxt is None:
            path.append(stack.pop()[1])
            continue
        unused.remove(nxt)
        stack.append((nxt[1] if nxt[0] == value else nxt[0], nxt))
    return [t for t in reversed(path) if t is not None]


def line_state(config: BlockConfig, chain: list[tuple[int, int]], opening: int) -> rules.State:
    """A state whose line, left to right, is ``chain`` (or the chain reversed, so that the
    opening shows its low half on the left as the rules lay it), opened with
    ``chain[opening]``, then grown to the right and afterwards to the left."""
    oriented = [chain[0] if chain[0][1] in chain[1] else chain[0][::-1]]
    for tile in chain[1:]:
        oriented.append(tile if tile[0] == oriented[-1][1] else tile[::-1])
    if oriented[opening][0] > oriented[opening][1]:
        chain, opening = chain[::-1], len(chain) - 1 - opening
    index = config.tiles.tile_index
    order = [(opening, 0)] + [(i, 1) for i in range(opening + 1, len(chain))]
    order += [(i, 0) for i in range(opening - 1, -1, -1)]
    line = tuple((index(tuple(sorted(chain[i]))), end) for i, end in order)
    state = rules.start_hand(config, (0,) * config.num_players, 0, (0,) * config.num_players)
    state = state._replace(line=line, played=sum(1 << t for t, _ in line))
    row = spatial_line(state)
    assert all(a[2] == b[1] for a, b in zip(row, row[1:]))  # a line the rules could lay
    return state._replace(left=row[0][1], right=row[-1][2])


@pytest.mark.parametrize("max_pip", [6, 4])
def test_long_lines_bend_inside_the_picture_without_overlaps(max_pip: int) -> None:
    tiles_in_set = (max_pip + 1) * (max_pip + 2) // 2
    config = BlockConfig(num_players=4, max_pip=max_pip, hand_size=tiles_in_set // 4)
    chain = euler_chain(max_pip)
    assert len(chain) == tiles_in_set
    chain = chain[: config.num_players * config.hand_size]
    rows_used = set()
    for opening in range(0, len(chain), 2):
        state = line_state(config, chain, opening)
        root = parse(svg.position_svg(state, config))
        width, height = map(float, root.get("viewBox").split()[2:])
        boxes = {g.get("data-tile"): rect_box(g) for g in tiles(root, "line-tile")}
        assert len(boxes) == len(chain)
        for x, y, w, h in boxes.values():
            assert x >= 0 and x + w <= width and y >= 0 and y + h <= height
        items = list(boxes.values())
        for i, (x, y, w, h) in enumerate(items):
            for x2, y2, w2, h2 in items[i + 1 :]:
                assert x + w <= x2 or x2 + w2 <= x or y + h <= y2 or y2 + h2 <= y
        # neighbours on the line are neighbours in the picture
        centres = [
            (x + w / 2, y + h / 2)
            for x, y, w, h in (boxes["{}-{}".format(*sorted(t))] for t in chain)
        ]
        steps = [np.hypot(x2 - x1, y2 - y1) for (x1, y1), (x2, y2) in zip(centres, centres[1:])]
        assert max(steps) <= 2 * svg.HALF + svg.GAP + 3
        rows_used.add(len({round(y) for _, y in centres}))
    assert max(rows_used) >= 3  # the longest arms turned a corner into a new row


def test_open_ends_marked_by_value_shape_and_word() -> None:
    state, cfg = played_states({"num_players": 2}, seed=5, moves=4)[-1]
    root = parse(svg.position_svg(state, cfg))
    markers = {g.get("data-end"): g for g in root.iter(f"{NS}g") if "end-marker" in classes(g)}
    assert set(markers) == {"left", "right"}
    for end, value in (("left", state.left), ("right", state.right)):
        g = markers[end]
        assert g.get("data-value") == str(value)
        assert g.find(f"{NS}polygon") is not None
        words = [t.text for t in g.iter(f"{NS}text")]
        assert str(value) in words and end in words
        assert g.find(f"{NS}polygon").get("fill") == svg.PALETTE[end]
    empty = rules.start_hand(cfg, state.hands, 0, (0, 0))
    root = parse(svg.position_svg(empty, cfg))
    assert not [g for g in root.iter(f"{NS}g") if "end-marker" in classes(g)]
    assert "empty line" in texts(root)


def test_teams_turn_scores_and_target() -> None:
    states = played_states({"num_players": 4, "partnership": True}, seed=2, moves=9)
    state, cfg = states[-1]
    state = state._replace(scores=(12, 30, 12, 30))
    root = parse(svg.position_svg(state, cfg, 0, labels=["you", "rules", "rules", "greedy"]))
    seats = {g.get("data-seat"): g for g in root.iter(f"{NS}g") if "seat" in classes(g)}
    assert len(seats) == 4
    for seat, g in seats.items():
        team = next(t for t in g.iter(f"{NS}g") if "team" in classes(t))
        assert team.get("data-team") == "AB"[int(seat) % 2]
        assert "".join(team.itertext()).strip().endswith("AB"[int(seat) % 2])
        assert f"score {state.scores[int(seat)]}/{cfg.target}" in texts(g)
    acting = [s for s, g in seats.items() if "to-act" in classes(g)]
    assert acting == [str(state.current)]
    assert "to act" in texts(seats[str(state.current)])
    assert f"to act: P{state.current}" in texts(root)
    assert "P0 you" in texts(root)
    individual = parse(svg.position_svg(*played_states({"num_players": 3}, seed=2, moves=2)[-1]))
    assert not [g for g in individual.iter(f"{NS}g") if "team" in classes(g)]


def test_hand_result_passes_and_game_over_are_written() -> None:
    states = played_states({"num_players": 2, "episode": "hand"}, seed=4, moves=80)
    over, cfg = next((s, c) for s, c in states if s.result is not None)
    words = texts(parse(svg.position_svg(over, cfg)))
    assert "Hand over" in words and "game over" in words
    assert not [
        g for g in parse(svg.position_svg(over, cfg)).iter(f"{NS}g") if "to-act" in classes(g)
    ]
    running, cfg = states[3]
    marked = running._replace(voids=(0b101000, 0))
    assert "passed on 3, 5" in texts(parse(svg.position_svg(marked, cfg)))
    assert "passed on" not in texts(parse(svg.position_svg(running._replace(voids=(0, 0)), cfg)))


def test_playable_tiles_are_outlined_for_their_seat_only() -> None:
    state, cfg = played_states({"num_players": 2}, seed=1, moves=0)[0]
    mine = list(iter_tiles(state.hands[state.current]))[:2]
    root = parse(svg.position_svg(state, cfg, state.current, playable=mine))
    outlined = [g for g in tiles(root, "playable")]
    assert len(outlined) == 2 and all(g.get("data-seat") == str(state.current) for g in outlined)
    other = 1 - state.current
    root = parse(svg.position_svg(state, cfg, other, playable=mine))
    assert not tiles(root, "playable")


@pytest.mark.parametrize("viewer", [-1, 2, True, "0", 1.0])
def test_viewer_must_be_a_seat(viewer: object) -> None:
    state, cfg = played_states({"num_players": 2}, seed=1, moves=0)[0]
    with pytest.raises(ValueError, match="is not a seat"):
        svg.position_svg(state, cfg, viewer)
    assert svg.position_svg(state, cfg, np.int64(1)) == svg.position_svg(state, cfg, 1)


def test_palette_is_okabe_ito_and_text_is_text() -> None:
    okabe_ito = {"#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7"}
    for key in ("left", "right", "turn", "last", "playable", "back", "team_a", "team_b", "passed"):
        assert svg.PALETTE[key] in okabe_ito
    assert svg.PALETTE["left"] != svg.PALETTE["right"]
    state, cfg = played_states({"num_players": 2}, seed=1, moves=3)[-1]
    root = parse(svg.position_svg(state, cfg))
    assert len(list(root.iter(f"{NS}text"))) > 10
    assert not list(root.iter(f"{NS}image"))
    assert root.find(f"{NS}title") is not None and root.get("role") == "img"


def test_env_render_mode_svg() -> None:
    env = block_env.raw_env(num_players=3, render_mode="svg")
    env.reset(seed=8)
    bot = agents.make("greedy")
    for _ in range(25):
        picture = env.render()
        assert isinstance(picture, str)
        assert picture == svg.position_svg(env.game, env.config, last_hand=env.last_hand)
        root = parse(picture)
        assert not tiles(root, "back")  # the env's picture shows every hand
        env.step(bot.act(env.observe(env.agent_selection)))
    assert "svg" in env.metadata["render_modes"]
    wrapped = block_env.env(num_players=2, render_mode="svg")
    wrapped.reset(seed=1)
    assert parse(wrapped.render()) is not None
