"""One game of the play server: the env (recorded), the agents, the person's seat, and the
checks on every request, with no web library in sight.

A game moves on by *steps*: a move by the person, a move by an agent, or the end of the
pause after a hand. ``ply`` counts them; every request names the ply its page shows, and a
request for another ply is stale. The page asks for the agents' moves one at a time
(``advance``), so each is shown before the next. A request that cannot be granted raises
``RequestError`` with an HTTP status (4xx; 500 when an agent fails to move) and a message,
and changes nothing.
"""

from __future__ import annotations

import dataclasses
import secrets
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from block_env import records
from block_env.rendering import describe_line
from block_env.svg import move_words, position_svg, result_words, seat_name, tile_svg

__all__ = ["GameOptions", "Games", "PlaySession", "RequestError"]

STATUSES = ("your-turn", "waiting", "over")


class RequestError(Exception):
    """A request the game refuses: ``status`` is the HTTP status, ``message`` says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclasses.dataclass(frozen=True)
class GameOptions:
    """What every new game is made of: the env's game keywords, the person's seat, the
    opponents (clockwise from that seat, repeated if fewer), the first seed (None: a random
    one per game; else game k gets ``seed + k``), the hint agent, the pause between the
    agents' moves, and the folder finished games are saved in (None: not saved)."""

    config: dict[str, Any] = dataclasses.field(default_factory=dict)
    lang: str = "en"
    human: int = 0
    opponents: tuple[str, ...] = ("rules",)
    seed: int | None = None
    hint_agent: str = "rules"
    allow_mismatch: bool = False
    delay_ms: int = 600
    record_dir: Path | None = None


def _seat_agents(raw: Any, options: GameOptions, seed: int) -> tuple[dict[int, Any], list[str]]:
    from block_env.agent_specs import SetupError, build_agent, check_game

    n = raw.config.num_players
    if not 0 <= options.human < n:
        raise SetupError(f"--seat {options.human} is not a seat: use 0..{n - 1}")
    agents: dict[int, Any] = {}
    labels = [""] * n
    labels[options.human] = "you"
    for i in range(1, n):
        seat = (options.human + i) % n
        spec = options.opponents[(i - 1) % len(options.opponents)]
        agents[seat] = build_agent(spec, raw, seed=seed * 1009 + seat)
        check_game(agents[seat], spec, raw.config, options.allow_mismatch)
        labels[seat] = spec
    return agents, labels


class PlaySession:
    """One game: ``view()`` is what the page shows; ``move``, ``advance`` and ``hint`` are
    the page's requests (each checked, under the game's lock)."""

    def __init__(self, options: GameOptions, game_id: str, seed: int) -> None:
        from block_env.agent_specs import agent_obs_type, build_agent
        from block_env.env import raw_env

        self.options = options
        self.game_id = game_id
        self.seed = seed
        raw = raw_env(**options.config, lang=options.lang)
        agents, labels = _seat_agents(raw, options, seed)
        hint = build_agent(options.hint_agent, raw, seed=0)
        if any(agent_obs_type(a) == "information_state" for a in [*agents.values(), hint]):
            # as in evaluate and the terminal game: the env hands out the information state
            raw = raw_env(**options.config, lang=options.lang, obs_type="information_state")
            agents, labels = _seat_agents(raw, options, seed)
            hint = build_agent(options.hint_agent, raw, seed=0)
        self.agents, self.labels, self.hint_agent = agents, labels, hint
        self.names = [seat_name(s, labels) for s in range(raw.config.num_players)]
        self.env = records.RecordingWrapper(raw, players=labels)
        self.env.reset(seed=seed)
        self.raw = raw
        self.lock = threading.Lock()
        self.ply = 0
        self.hand_moves: list[tuple[int, int]] = []
        self.between_hands = False
        self.log: list[dict[str, str]] = [self._hand_entry()]
        self.record_name: str | None = None

    # -- reading

    @property
    def human(self) -> int:
        return self.options.human

    def status(self) -> str:
        if self.raw.game.episode_over:
            return "over"
        if self.between_hands or self._seat_to_act() != self.human:
            return "waiting"
        return "your-turn"

    def _seat_to_act(self) -> int:
        return self.raw.possible_agents.index(self.raw.agent_selection)

    def legal_actions(self) -> list[int]:
        mask = self.raw.observe(self.raw.agent_selection)["action_mask"]
        return [int(a) for a in mask.nonzero()[0]]

    def _observation_for(self, agent: Any) -> dict[str, Any]:
        from block_env.agent_specs import agent_obs_type, plain_observation
        from block_env.observation import obs_layout

        observation = self.raw.observe(self.raw.agent_selection)
        if agent_obs_type(agent) == getattr(self.raw, "obs_type", "observation"):
            return observation
        return plain_observation(observation, obs_layout(self.raw.config).dim)

    def _words(self, action: int) -> str:
        """A legal move of the person, as its button says it."""
        tiles = self.raw.config.tiles
        if action == tiles.pass_action:
            return "pass (nothing fits)"
        a, b = tiles.tiles[action // 2]
        if not self.raw.game.line:
            return f"open with [{a}|{b}]"
        end = "left" if action % 2 == 0 else "right"
        value = self.raw.game.left if end == "left" else self.raw.game.right
        return f"[{a}|{b}] on the {end} ({value})"

    def view(self) -> dict[str, Any]:
        """Everything the page shows, as JSON-ready values."""
        status = self.status()
        game = self.raw.last_hand if self.between_hands else self.raw.game
        legal = self.legal_actions() if status == "your-turn" else []
        tiles = self.raw.config.tiles
        playable = sorted({a // 2 for a in legal if a != tiles.pass_action})
        picture = position_svg(
            game,
            self.raw.config,
            self.human,
            labels=self.labels,
            last_moves=self.hand_moves,
            playable=playable,
        )
        moves = [
            {
                "action": a,
                "words": self._words(a),
                "svg": "" if a == tiles.pass_action else tile_svg(tiles.tiles[a // 2]),
            }
            for a in legal
        ]
        wait = self.options.delay_ms * (5 if self.between_hands else 1)
        return {
            "game": self.game_id,
            "ply": self.ply,
            "status": status,
            "status_words": self._status_words(status),
            "seat": self.human,
            "svg": picture,
            "legal": moves,
            "log": self.log,
            "describe": describe_line(game, self.options.lang),
            "record": self.record_name,
            "hint_agent": self.options.hint_agent,
            "wait_ms": wait if status == "waiting" else None,
            "between_hands": self.between_hands,
        }

    def _status_words(self, status: str) -> str:
        if status == "over":
            game = self.raw.game
            if not game.winners:
                return "Game over: a draw"
            won = " and ".join(self.names[s] for s in game.winners)
            return f"Game over: {won} won" + (" - you win!" if self.human in game.winners else "")
        if self.between_hands:
            return "Hand over: the next hand starts in a moment"
        if status == "waiting":
            return f"Waiting for {self.names[self._seat_to_act()]}"
        return f"Your turn, {self.names[self.human]}"

    # -- requests

    def _check(self, ply: Any, wanted: str) -> None:
        if isinstance(ply, bool) or not isinstance(ply, int):
            raise RequestError(400, f"'ply' must be an int, got {ply!r}")
        if ply != self.ply:
            raise RequestError(
                409, f"stale page: it shows ply {ply}, the game is at ply {self.ply}; reload it"
            )
        status = self.status()
        if status == "over":
            raise RequestError(409, "the game is over")
        if status != wanted:
            who = "yours" if status == "your-turn" else self.names[self._seat_to_act()] + "'s"
            if self.between_hands:
                who = "the pause after the hand (advance to go on)"
            raise RequestError(409, f"not a {wanted} request now: the turn is {who}")

    def move(self, action: Any, ply: Any) -> dict[str, Any]:
        """The person plays ``action`` (an int): 400 not an int, 409 stale or not their
        turn, 422 not a legal move."""
        with self.lock:
            if isinstance(action, bool) or not isinstance(action, int):
                raise RequestError(400, f"'action' must be an int, got {action!r}")
            self._check(ply, "your-turn")
            legal = self.legal_actions()
            if action not in legal:
                raise RequestError(422, f"action {action} is not a legal move here; legal: {legal}")
            self._step(self.human, action)
            return self.view()

    def advance(self, ply: Any) -> dict[str, Any]:
        """The next step that is not the person's: the seat to act's agent moves, or the
        pause after a hand ends."""
        with self.lock:
            self._check(ply, "waiting")
            if self.between_hands:
                self.between_hands = False
                self.hand_moves = []
                self.log.append(self._hand_entry())
                self.ply += 1
                return self.view()
            seat = self._seat_to_act()
            agent = self.agents[seat]
            try:
                action = int(agent.act(self._observation_for(agent)))
            except Exception as exc:  # an agent's bug is reported, and the game stays
                raise RequestError(
                    500, f"{self.names[seat]} failed to choose a move ({type(exc).__name__})"
                ) from exc
            self._step(seat, action)
            return self.view()

    def hint(self, ply: Any) -> dict[str, Any]:
        """What the hint agent would play for the person now."""
        with self.lock:
            self._check(ply, "your-turn")
            agent = self.hint_agent
            try:
                action = int(agent.act(self._observation_for(agent)))
            except Exception as exc:
                raise RequestError(
                    500, f"{self.options.hint_agent} gave no hint ({type(exc).__name__})"
                ) from exc
            return {
                "action": action,
                "words": f"Hint ({self.options.hint_agent}): {self._words(action)}",
            }

    # -- stepping

    def _step(self, seat: int, action: int) -> None:
        pass_action = self.raw.config.tiles.pass_action
        opening = action != pass_action and all(a == pass_action for _, a in self.hand_moves)
        self.log.append(
            {
                "kind": "move",
                "text": move_words(self.raw.config, self.names, seat, action, opening),
            }
        )
        self.env.step(action)
        self.hand_moves.append((seat, action))
        self.ply += 1
        info = self.raw.infos[self.raw.possible_agents[0]]
        if not info["hand_over"]:
            return
        result = self.raw.last_hand.result
        scores = ", ".join(f"{self.names[s]} {v}" for s, v in enumerate(self.raw.scores))
        self.log.append(
            {"kind": "result", "text": f"{result_words(result, self.names)}. Scores: {scores}."}
        )
        if self.raw.game.episode_over:
            self.log.append({"kind": "result", "text": self._status_words("over") + "."})
            self._save()
        else:
            self.between_hands = True

    def _hand_entry(self) -> dict[str, str]:
        game = self.raw.game
        return {
            "kind": "hand",
            "text": f"Hand {game.hand_number + 1}: {self.names[game.leader]} leads",
        }

    def _save(self) -> None:
        """Write the finished game in the record folder, under a name the server makes."""
        folder = self.options.record_dir
        if folder is None:
            return
        record = self.env.record
        record["play"] = {"human": self.human, "hint": self.options.hint_agent}
        name = f"game-{time.strftime('%Y%m%d-%H%M%S')}-{self.game_id}.json"
        records.save(record, Path(folder) / name)
        self.record_name = name


class Games:
    """The games of one server, by id: each new one gets the next seed and a random id; the
    oldest are dropped past ``limit``."""

    def __init__(self, options: GameOptions, limit: int = 200) -> None:
        self.options = options
        self.limit = limit
        self.started = 0
        self.games: OrderedDict[str, PlaySession] = OrderedDict()
        self.lock = threading.Lock()

    def new(self) -> PlaySession:
        with self.lock:
            if self.options.seed is None:
                seed = secrets.randbelow(2**31)
            else:
                seed = self.options.seed + self.started
            self.started += 1
            game_id = secrets.token_hex(8)
        session = PlaySession(self.options, game_id, seed)
        with self.lock:
            self.games[game_id] = session
            while len(self.games) > self.limit:
                self.games.popitem(last=False)
        return session

    def get(self, game_id: str) -> PlaySession:
        """The game ``game_id``; RequestError 404 when there is none."""
        session = self.games.get(game_id)
        if session is None:
            raise RequestError(404, "unknown game: open the start page for a new one")
        return session
