"""The play server of ``block-env play --web``: a Starlette application (served by uvicorn)
where a person plays one seat of Block against or beside the agents.

    GET  /                        start a game with the server's options; redirect to it
    GET  /game/{id}               the game's page
    GET  /api/game/{id}           the game as JSON (the page's view)
    POST /api/game/{id}/move      {"action": A, "ply": N}: the person's move
    POST /api/game/{id}/advance   {"ply": N}: the next agent move (or the pause after a hand)
    POST /api/game/{id}/hint      {"ply": N}: what the hint agent would play

Every game has its own random id, so several tabs play several games. A POST must send a
JSON object of at most 4 KiB with only those keys; a request the game refuses gets a 4xx
answer ``{"error": message}`` and changes nothing (``session.RequestError``). Finished
games are saved in the record folder under names the server makes. Pages carry a strict
Content-Security-Policy (their one script and style run by nonce; nothing is loaded).
"""

from __future__ import annotations

import json
import secrets
from html import escape
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from block_env.web.page import asset, fill, json_for_script
from block_env.web.session import GameOptions, Games, PlaySession, RequestError

__all__ = ["MAX_BODY", "create_app", "serve"]

MAX_BODY = 4096
FIELDS = {"move": {"action", "ply"}, "advance": {"ply"}, "hint": {"ply"}}
ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect x="9" y="1" width="14" '
    'height="30" rx="3" fill="#fffdf4" stroke="#000" stroke-width="2"/><line x1="10" y1="16" '
    'x2="22" y2="16" stroke="#000" stroke-width="2"/><circle cx="16" cy="8.5" r="2.5"/>'
    '<circle cx="16" cy="23.5" r="2.5"/></svg>'
)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _headers(nonce: str | None = None) -> dict[str, str]:
    script = f"'nonce-{nonce}'" if nonce else "'none'"
    policy = (
        f"default-src 'none'; script-src {script}; style-src {script}; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    return {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }


async def _body(request: Request, kind: str) -> dict[str, Any]:
    """The request's JSON object, checked: RequestError 415, 413 or 400 otherwise."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise RequestError(415, "send JSON with Content-Type: application/json")
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise RequestError(413, f"the request body is over {MAX_BODY} bytes")
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise RequestError(400, "the request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise RequestError(400, "the request body must be a JSON object")
    allowed = FIELDS[kind]
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise RequestError(400, f"unknown keys {unknown}: a {kind} takes {sorted(allowed)}")
    missing = sorted(allowed - set(data))
    if missing:
        raise RequestError(400, f"missing keys {missing}: a {kind} takes {sorted(allowed)}")
    return data


def game_page(session: PlaySession) -> HTMLResponse:
    """The page of one game, its first view inside it."""
    nonce = secrets.token_urlsafe(16)
    view = session.view()
    page = fill(
        asset("play.html"),
        nonce=nonce,
        title=escape(f"Block: {len(session.names)} players, seat {session.human}"),
        css=asset("board.css"),
        js=asset("play.js"),
        view=json_for_script(view),
        game=escape(session.game_id),
        hint=escape(session.options.hint_agent),
    )
    return HTMLResponse(page, headers=_headers(nonce))


def create_app(options: GameOptions, allowed_hosts: list[str] | None = None) -> Starlette:
    """The application: games made from ``options``; requests whose Host header is not in
    ``allowed_hosts`` (None: any) are refused (a guard against DNS rebinding)."""
    games = Games(options)

    async def start(request: Request) -> Response:
        session = await run_in_threadpool(games.new)
        return RedirectResponse(f"/game/{session.game_id}", status_code=303)

    async def page(request: Request) -> Response:
        try:
            session = games.get(request.path_params["game"])
        except RequestError as exc:
            body = f"<!DOCTYPE html><title>Block</title><p>{escape(exc.message)}</p>"
            return HTMLResponse(body, status_code=exc.status, headers=_headers())
        return game_page(session)

    async def view(request: Request) -> Response:
        try:
            session = games.get(request.path_params["game"])
        except RequestError as exc:
            return _error(exc.status, exc.message)
        return JSONResponse(session.view(), headers=_headers())

    def action(kind: str):
        async def endpoint(request: Request) -> Response:
            try:
                session = games.get(request.path_params["game"])
                data = await _body(request, kind)
                if kind == "move":
                    result = await run_in_threadpool(session.move, data["action"], data["ply"])
                else:
                    result = await run_in_threadpool(getattr(session, kind), data["ply"])
            except RequestError as exc:
                return _error(exc.status, exc.message)
            return JSONResponse(result, headers=_headers())

        return endpoint

    async def icon(request: Request) -> Response:
        return Response(ICON, media_type="image/svg+xml", headers=_headers())

    routes = [
        Route("/", start, methods=["GET"]),
        Route("/favicon.ico", icon, methods=["GET"]),
        Route("/game/{game}", page, methods=["GET"]),
        Route("/api/game/{game}", view, methods=["GET"]),
        *(Route(f"/api/game/{{game}}/{k}", action(k), methods=["POST"]) for k in FIELDS),
    ]
    middleware = []
    if allowed_hosts is not None:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts))
    app = Starlette(routes=routes, middleware=middleware)
    app.state.games = games
    return app


def serve(options: GameOptions, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Run the server until interrupted (uvicorn)."""
    import uvicorn

    loopback = host in ("127.0.0.1", "localhost", "::1")
    allowed = ["127.0.0.1", "localhost", "[::1]", host] if loopback else None
    app = create_app(options, allowed_hosts=allowed)
    shown = f"[{host}]" if ":" in host else host
    print(f"Block at http://{shown}:{port}/ (each visit of that page starts a game; Ctrl+C stops)")
    if options.record_dir is not None:
        print(f"finished games are saved in {options.record_dir}")
    uvicorn.run(app, host=host, port=port, log_level="warning")
