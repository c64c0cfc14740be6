"""The play server through Starlette's TestClient: the start page makes a game with the
command line's options, whole games played through the API (agents one move at a time, the
pause between hands, hints), the finished game saved where and as the server names it and
read back by ``replay --check``, several games at once, and every kind of bad request
answered with a 4xx that changes no game."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the play server needs starlette (pip install -e '.[web]')")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx (pip install -e '.[dev]')")

with warnings.catch_warnings():  # Starlette's newest releases prefer httpx2 (Python >= 3.11)
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient

from block_env import play, records, replay  # noqa: E402
from block_env.web import server  # noqa: E402
from block_env.web.session import STATUSES, GameOptions  # noqa: E402


def client_for(tmp_path: Path, **options: Any) -> TestClient:
    options.setdefault("config", {"num_players": 2, "target_score": 20})
    options.setdefault("seed", 11)
    app = server.create_app(GameOptions(delay_ms=0, record_dir=tmp_path, **options))
    return TestClient(app)


def start(client: TestClient) -> tuple[str, dict[str, Any]]:
    answer = client.get("/", follow_redirects=False)
    assert answer.status_code == 303
    game = answer.headers["location"].rsplit("/", 1)[1]
    return game, client.get(f"/api/game/{game}").json()


def step(client: TestClient, game: str, view: dict[str, Any]) -> dict[str, Any]:
    """One step of the game: the person plays the first legal move, or an agent moves."""
    if view["status"] == "your-turn":
        body = {"action": view["legal"][0]["action"], "ply": view["ply"]}
        answer = client.post(f"/api/game/{game}/move", json=body)
    else:
        answer = client.post(f"/api/game/{game}/advance", json={"ply": view["ply"]})
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_start_page_makes_a_game_with_the_options(tmp_path: Path) -> None:
    client = client_for(tmp_path, config={"num_players": 3}, human=2, opponents=("greedy",))
    game, view = start(client)
    assert re.fullmatch(r"[0-9a-f]{16}", game)
    page = client.get(f"/game/{game}")
    assert page.status_code == 200
    assert 'data-status="' in page.text and 'id="board" class="board" data-ply="0"' in page.text
    nonce = re.search(r"script-src 'nonce-([^']+)'", page.headers["content-security-policy"])[1]
    assert f'<script nonce="{nonce}">' in page.text
    embedded = re.search(r'id="initial-view">(.*?)</script>', page.text, re.S)[1]
    assert json.loads(embedded)["game"] == game
    assert view["seat"] == 2 and view["status"] in STATUSES
    assert "P2 you" in view["svg"] and "P0 greedy" in view["svg"] and "P1 greedy" in view["svg"]
    assert view["svg"].count('class="seat') == 3


@pytest.mark.parametrize(
    "options",
    [
        {"config": {"num_players": 2, "target_score": 30}},
        {"config": {"num_players": 4, "partnership": True, "target_score": 30}, "human": 1},
    ],
    ids=["2p", "partnership"],
)
def test_whole_game_agents_one_move_at_a_time(tmp_path: Path, options: dict) -> None:
    client = client_for(tmp_path, **options)
    game, view = start(client)
    hands = 1
    while view["status"] != "over":
        before = view
        view = step(client, game, view)
        assert view["ply"] == before["ply"] + 1
        assert view["status"] in STATUSES
        if before["status"] == "your-turn" or not before["between_hands"]:
            added = view["log"][len(before["log"]) :]
            assert [e["kind"] for e in added][:1] == ["move"]  # one move per step
            assert sum(e["kind"] == "move" for e in added) == 1
        if view["between_hands"]:
            assert view["status"] == "waiting" and "Hand over" in view["svg"]
        if before["between_hands"]:
            hands += 1
            assert view["log"][-1]["text"].startswith(f"Hand {hands}:")
        if view["status"] == "your-turn":
            assert view["legal"] and all(m["words"] for m in view["legal"])
            assert 'class="tile hand-tile playable' in view["svg"] or view["legal"][0]["svg"] == ""
    assert view["legal"] == [] and view["record"] is not None
    files = list(tmp_path.iterdir())
    assert [f.name for f in files] == [view["record"]]
    assert re.fullmatch(rf"game-\d{{8}}-\d{{6}}-{game}\.json", view["record"])
    record = records.load(files[0])
    assert record["finished"] and len(record["hands"]) == hands
    assert record["play"]["human"] == options.get("human", 0)
    assert records.replay(record).finished
    assert replay.main([str(files[0]), "--check"]) == 0


def test_hint_names_a_legal_move_and_changes_nothing(tmp_path: Path) -> None:
    client = client_for(tmp_path)
    game, view = start(client)
    while view["status"] != "your-turn":
        view = step(client, game, view)
    answer = client.post(f"/api/game/{game}/hint", json={"ply": view["ply"]})
    assert answer.status_code == 200
    hint = answer.json()
    assert hint["action"] in [m["action"] for m in view["legal"]]
    assert hint["words"].startswith("Hint (rules): ")
    assert client.get(f"/api/game/{game}").json() == view


def test_games_are_independent(tmp_path: Path) -> None:
    client = client_for(tmp_path)
    first, view_a = start(client)
    second, view_b = start(client)
    assert first != second
    for _ in range(4):
        view_a = step(client, first, view_a)
    assert client.get(f"/api/game/{second}").json() == view_b
    assert view_a["ply"] == 4


def bad_requests(view: dict[str, Any]) -> list[tuple[str, str, dict[str, Any], int]]:
    """(name, path end, request keywords, status) for every kind of bad request, for a game
    whose view is ``view`` (the person to play)."""
    ply = view["ply"]
    legal = [m["action"] for m in view["legal"]]
    illegal = next(a for a in range(57) if a not in legal)
    move = {"action": legal[0], "ply": ply}
    return [
        ("malformed JSON", "move", {"content": b"{not json", "headers": JSON}, 400),
        ("not UTF-8", "move", {"content": b"\xff\xfe", "headers": JSON}, 400),
        ("not an object", "move", {"json": [legal[0], ply]}, 400),
        ("text content type", "move", {"content": json.dumps(move), "headers": TEXT}, 415),
        ("no content type", "move", {"content": json.dumps(move)}, 415),
        ("too large", "move", {"json": {**move, "pad": "x" * 5000}}, 413),
        ("unknown key", "move", {"json": {**move, "file": "../../etc/passwd"}}, 400),
        ("missing action", "move", {"json": {"ply": ply}}, 400),
        ("missing ply", "move", {"json": {"action": legal[0]}}, 400),
        ("action as text", "move", {"json": {"action": str(legal[0]), "ply": ply}}, 400),
        ("action as float", "move", {"json": {"action": float(legal[0]), "ply": ply}}, 400),
        ("action as bool", "move", {"json": {"action": True, "ply": ply}}, 400),
        ("ply as text", "move", {"json": {"action": legal[0], "ply": str(ply)}}, 400),
        ("illegal move", "move", {"json": {"action": illegal, "ply": ply}}, 422),
        ("no such action", "move", {"json": {"action": 10**6, "ply": ply}}, 422),
        ("negative action", "move", {"json": {"action": -1, "ply": ply}}, 422),
        ("stale page", "move", {"json": {**move, "ply": ply - 1}}, 409),
        ("page from the future", "move", {"json": {**move, "ply": ply + 1}}, 409),
        ("advance on the person's turn", "advance", {"json": {"ply": ply}}, 409),
        ("stale hint", "hint", {"json": {"ply": ply + 3}}, 409),
        ("hint with a move", "hint", {"json": move}, 400),
    ]


JSON = {"content-type": "application/json"}
TEXT = {"content-type": "text/plain"}


def test_bad_requests_get_a_4xx_and_change_nothing(tmp_path: Path) -> None:
    client = client_for(tmp_path)
    game, view = start(client)
    while view["status"] != "your-turn" or view["ply"] == 0:
        view = step(client, game, view)
    for name, kind, keywords, status in bad_requests(view):
        answer = client.post(f"/api/game/{game}/{kind}", **keywords)
        assert answer.status_code == status, (name, answer.text)
        assert answer.json()["error"], name
        assert client.get(f"/api/game/{game}").json() == view, name
    # out of turn: a move while an agent is to play
    view = step(client, game, view)
    while view["status"] == "your-turn":
        view = step(client, game, view)
    answer = client.post(f"/api/game/{game}/move", json={"action": 0, "ply": view["ply"]})
    assert answer.status_code == 409 and "turn" in answer.json()["error"]
    answer = client.post(f"/api/game/{game}/hint", json={"ply": view["ply"]})
    assert answer.status_code == 409
    assert client.get(f"/api/game/{game}").json() == view
    assert list(tmp_path.iterdir()) == []


def test_unknown_games_and_paths(tmp_path: Path) -> None:
    client = client_for(tmp_path)
    game, view = start(client)
    for path in ("0123456789abcdef", game.upper(), "x" * 300):
        assert client.get(f"/api/game/{path}").status_code == 404
        assert client.get(f"/game/{path}").status_code == 404
        answer = client.post(f"/api/game/{path}/move", json={"action": 0, "ply": 0})
        assert answer.status_code == 404 and "unknown game" in answer.json()["error"]
    escape = "..%2F..%2F" + str(tmp_path).replace("/", "%2F")
    assert client.post(f"/api/game/{escape}/move", json={"action": 0, "ply": 0}).status_code == 404
    assert client.get(f"/api/game/{game}/../../x").status_code == 404
    assert client.post(f"/api/game/{game}/resign", json={"ply": 0}).status_code == 404
    assert client.get(f"/api/game/{game}/move").status_code == 405
    assert client.get(f"/api/game/{game}").json() == view
    assert list(tmp_path.iterdir()) == []


def test_finished_games_refuse_moves(tmp_path: Path) -> None:
    client = client_for(tmp_path, config={"num_players": 2, "episode": "hand"})
    game, view = start(client)
    while view["status"] != "over":
        view = step(client, game, view)
    for kind, body in (
        ("move", {"action": 0, "ply": view["ply"]}),
        ("advance", {"ply": view["ply"]}),
    ):
        answer = client.post(f"/api/game/{game}/{kind}", json=body)
        assert answer.status_code == 409 and "over" in answer.json()["error"]
    assert client.get(f"/api/game/{game}").json() == view
    assert len(list(tmp_path.iterdir())) == 1


def test_hosts_other_than_the_served_one_are_refused(tmp_path: Path) -> None:
    app = server.create_app(GameOptions(), allowed_hosts=["127.0.0.1", "localhost"])
    assert TestClient(app, base_url="http://evil.example").get("/").status_code == 400
    good = TestClient(app, base_url="http://127.0.0.1:8000")
    assert good.get("/", follow_redirects=False).status_code == 303


def test_command_line(tmp_path: Path, monkeypatch, capsys) -> None:
    served: list[tuple[GameOptions, str, int]] = []
    monkeypatch.setattr(server, "serve", lambda *args: served.append(args))
    folder = tmp_path / "games"
    argv = ["--web", "--partnership", "--seat", "3", "--opponents", "greedy", "random"]
    argv += ["--episode", "hand", "--opener", "highest_double", "--seed", "9", "--port", "8123"]
    assert play.main([*argv, "--record", str(folder), "--delay-ms", "0"]) == 0
    options, host, port = served[0]
    assert (host, port) == ("127.0.0.1", 8123) and folder.is_dir()
    assert options.config == {
        "num_players": 4,
        "opener": "highest_double",
        "episode": "hand",
        "partnership": True,
        "target_score": None,
    }
    assert options.human == 3 and options.opponents == ("greedy", "random")
    assert options.seed == 9 and options.record_dir == folder and options.delay_ms == 0
    for bad in (["--seat", "2"], ["--opponents", "no-such-agent"]):
        assert play.main(["--web", *bad]) == 2
        assert "error" in capsys.readouterr().err
    a_file = tmp_path / "file.json"
    a_file.write_text("{}")
    assert play.main(["--web", "--record", str(a_file)]) == 2
    assert "names a folder" in capsys.readouterr().err
    for bad in (["--resume", str(a_file)], ["--port", "0"], ["--delay-ms", "-1"]):
        with pytest.raises(SystemExit) as exc:
            play.main(["--web", *bad])
        assert exc.value.code == 2
    assert len(served) == 1
