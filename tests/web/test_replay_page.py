"""The replay page (``block-env replay REC --html OUT``) without a browser: one position per
deal and per move, each a well-formed SVG; the controls, the board and the move list of the
testing contract; nothing loaded from anywhere; one seat's view hiding the other hands; the
match scores and each hand's result; the command's exit statuses."""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from block_env import replay
from block_env.web.replay_page import positions, replay_html

NS = "{http://www.w3.org/2000/svg}"


class Elements(HTMLParser):
    """Every start tag of a page as (tag, attributes), and the text of the page."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def having(self, attribute: str) -> list[dict[str, str | None]]:
        return [attrs for _, attrs in self.tags if attribute in attrs]


def moves_in(record: dict[str, Any]) -> int:
    return sum(len(hand["moves"]) for hand in record["hands"])


def svgs(page: str) -> list[ET.Element]:
    found = re.findall(r"<template data-position='\d+'[^>]*>(.*?)</template>", page, re.S)
    return [ET.fromstring(text) for text in found]


def test_one_position_per_deal_and_move(match_record: dict) -> None:
    page = replay_html(match_record)
    tree = Elements(page)
    count = len(match_record["hands"]) + moves_in(match_record)
    assert len(match_record["hands"]) > 1
    numbers = [int(a["data-position"]) for a in tree.having("data-position")]
    assert numbers == list(range(count))
    pictures = svgs(page)
    assert len(pictures) == count
    in_line = [
        sum("line-tile" in g.get("class", "") for g in svg.iter(f"{NS}g")) for svg in pictures
    ]
    assert in_line[0] == 0 and max(in_line) > 5
    captions = [a["data-caption"] for a in tree.having("data-caption")]
    assert captions[0].startswith("Hand 1 dealt")
    assert captions[1].startswith("Hand 1, move 1: P")
    assert sum(c.startswith("Hand ") and " dealt" in c for c in captions) == len(
        match_record["hands"]
    )


def test_testing_contract_controls_board_and_move_list(match_record: dict) -> None:
    page = replay_html(match_record)
    tree = Elements(page)
    controls = [a["data-control"] for a in tree.having("data-control")]
    assert sorted(controls) == ["first", "last", "next", "prev"]
    boards = tree.having("data-ply")
    assert len(boards) == 1 and boards[0]["id"] == "board" and boards[0]["data-ply"] == "0"
    goto = [int(a["data-goto"]) for a in tree.having("data-goto")]
    assert goto == list(range(len(match_record["hands"]) + moves_in(match_record)))


def test_the_page_loads_nothing(match_record: dict) -> None:
    page = replay_html(match_record)
    tree = Elements(page)
    for tag, attrs in tree.tags:
        assert tag not in ("link", "iframe", "img", "object", "embed"), tag
        assert "src" not in attrs and "href" not in attrs, (tag, attrs)
    assert "url(" not in page and "@import" not in page and "fetch(" not in page
    # the only address is the SVG namespace, which names and loads nothing
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) == {"http://www.w3.org/2000/svg"}
    assert page.count("<script>") == 1 and "<script src" not in page


def test_scores_and_results(match_record: dict) -> None:
    page = replay_html(match_record)
    text = " ".join(Elements(page).text)
    final = re.search(r"final\s*((?:\d+\s*)+)", text)
    assert [int(v) for v in final.group(1).split()] == match_record["scores"]
    finished = [h for h in match_record["hands"] if h.get("result")]
    results = re.findall(r"<p class='result'>([^<]*)</p>", page)
    assert len(results) == len(finished)
    for line, hand in zip(results, finished):
        assert "pips left " + ", ".join(map(str, hand["result"]["pips"])) in line
        assert "scores " + ", ".join(map(str, hand["result"]["scores"])) in line
    assert "Game over:" in text


def test_one_seats_view_hides_the_other_hands(partnership_record: dict) -> None:
    page = replay_html(partnership_record, viewer=1)
    assert "Seen by P1 rules" in page
    for svg in svgs(page):
        for g in svg.iter(f"{NS}g"):
            if "hand-tile" not in g.get("class", ""):
                continue
            mine = g.get("data-seat") == "1"
            assert ("back" in g.get("class")) != mine
            assert (g.get("data-tile") is not None) == mine
    face_up = svgs(replay_html(partnership_record))[0]
    assert not [g for g in face_up.iter(f"{NS}g") if "back" in g.get("class", "")]


def test_positions_check_the_record(match_record: dict) -> None:
    tampered = copy.deepcopy(match_record)
    move = next(m for m in tampered["hands"][0]["moves"] if not m.get("pass"))
    move["end"] = "right" if move["end"] == "left" else "left"
    tampered["hands"][0]["moves"][0] = {"seat": 1 - move["seat"], "pass": True}
    with pytest.raises(ValueError):
        positions(tampered)
    with pytest.raises(ValueError, match="is not a seat"):
        positions(match_record, viewer=2)


def test_command(match_record: dict, tmp_path: Path, capsys) -> None:
    rec = tmp_path / "game.json"
    rec.write_text(json.dumps(match_record))
    out = tmp_path / "pages" / "game.html"
    assert replay.main([str(rec), "--html", str(out), "--viewer", "0"]) == 0
    count = len(match_record["hands"]) + moves_in(match_record)
    assert f"({count} positions)" in capsys.readouterr().out
    assert "Seen by P0 greedy" in out.read_text()
    with pytest.raises(SystemExit) as exc:
        replay.main([str(rec), "--html", str(out), "--viewer", "2"])
    assert exc.value.code == 2
    blocked = tmp_path / "a_file"
    blocked.write_text("")
    assert replay.main([str(rec), "--html", str(blocked / "x.html")]) == 2
    assert "cannot write" in capsys.readouterr().err
    tampered = copy.deepcopy(match_record)
    tampered["hands"][0]["moves"][0]["seat"] = 1 - tampered["hands"][0]["moves"][0]["seat"]
    rec.write_text(json.dumps(tampered))
    bad = tmp_path / "bad.html"
    assert replay.main([str(rec), "--html", str(bad)]) == 1
    assert not bad.exists()
