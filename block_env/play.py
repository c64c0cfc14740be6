"""Play Block in the terminal against the agents.

    python -m block_env.play                                  # you against the rule bot
    python -m block_env.play --players 3 --opponents block-3p greedy --record game.json
    python -m block_env.play --resume game.json               # go on with a saved game
    python -m block_env.play --web --record games/            # play in the browser

Each turn shows your hand, the line with its two open ends, every seat's tile count and the
values it passed on, the scores and target, the last moves and your legal moves numbered
from 1. Answer with a number, or a tile and an end (``3-5 left``; the end may be left out
when the tile fits only one way); ``pass`` when nothing fits; ``hint`` shows what an agent
(``--hint-agent``, default ``rules``; ``hint NAME`` for another) would play; ``q`` saves
(with ``--record``) and quits.
Anything else gets a message and the same question again. End of input saves and exits
cleanly. Opponents are any agent name or policy that ``block_env.evaluate`` accepts; as
there, when an opponent or the ``--hint-agent`` reads the information state (a policy
trained with ``obs_type=information_state``), the game env is made with
``obs_type="information_state"`` and every agent that reads the plain observation gets its
first ``obs_dim`` entries. (A ``hint NAME`` for such a policy needs that env: start the game
with ``--hint-agent NAME``.)
Output is coloured with ``rich`` when it is installed and stdout is a terminal, and plain
text otherwise.

``--web`` serves the game to a browser instead (``block_env.web.server``, the ``web`` extra),
on 127.0.0.1 unless ``--host`` says otherwise: each visit of the start page begins a game
with these options, and ``--record`` names the folder finished games are saved in.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from block_env import records, rendering
from block_env.tiles import iter_tiles

__all__ = ["Game", "main", "parse_answer"]

PROG = "python -m block_env.play"
LAST_MOVES = 6  # moves of the current hand shown before each of your turns
_TILE_RE = re.compile(
    r"^\[?\s*(\d)\s*[-|/:, ]\s*(\d)\s*\]?\s*(?:on\s+)?(?:the\s+)?(left|right|l|r)?$"
)


class Screen:
    """Where the game is shown: ``rich`` colour and layout on a terminal, plain text
    otherwise (tests read it)."""

    def __init__(self, out: Any = None, plain: bool | None = None) -> None:
        self.out = sys.stdout if out is None else out
        self.console = None
        if not plain:
            try:
                from rich.console import Console
            except ImportError:
                return
            console = Console(file=self.out, highlight=False)
            if plain is False or console.is_terminal:
                self.console = console

    def say(self, text: str = "", style: str | None = None) -> None:
        if self.console is None:
            print(text, file=self.out, flush=True)
        else:
            from rich.text import Text

            self.console.print(Text(text, style=style or ""))

    def seats(self, rows: list[tuple[str, int, list[str], int]], target: str) -> None:
        """Every seat's name, tile count, values passed on and score: a table on a terminal,
        one line per seat in plain text."""
        if self.console is None:
            for name, count, voids, _ in rows:
                passed = f"; passed on {', '.join(voids)}" if voids else ""
                self.say(f"  {name}: {count} tile{'s' if count != 1 else ''}{passed}")
            return
        from rich.table import Table

        table = Table(box=None, pad_edge=False, header_style="dim")
        for column in ("seat", "tiles", "passed on", f"score{target}"):
            table.add_column(column)
        for name, count, voids, score in rows:
            table.add_row(name, str(count), ", ".join(voids) or "-", str(score))
        self.console.print(table)

    def rule(self, title: str) -> None:
        if self.console is None:
            self.say(f"--- {title} ---")
        else:
            self.console.rule(title)


def _tile(pair: tuple[int, int]) -> str:
    return f"[{pair[0]}|{pair[1]}]"


class Game:
    """One game at the table: the env (recorded), the seats' agents and the person's seat.
    ``ask`` gets each answer (``input`` by default); ``screen`` shows everything."""

    def __init__(
        self,
        env: records.RecordingWrapper,
        agents: dict[int, Any],
        human: int,
        labels: list[str],
        screen: Screen,
        record_path: Path | None = None,
        hint_spec: str = "rules",
        ask: Callable[[str], str] = input,
    ) -> None:
        self.env = env
        self.raw = env.unwrapped
        self.agents = agents
        self.human = human
        self.labels = labels
        self.screen = screen
        self.record_path = record_path
        self.hint_spec = hint_spec
        self.hint_agents: dict[str, Any] = {}
        self.ask = ask
        self.tiles = rendering.tiles_of(self.raw.config)
        self.values = 1 + max(max(pair) for pair in self.tiles.tiles)
        self.moves: list[tuple[int, int]] = []  # this hand's moves

    def observation_for(self, agent: Any, name: str) -> dict[str, Any]:
        """The observation of the seat to act, of the kind ``agent`` reads (as in
        ``block_env.evaluate``): the plain observation cut out of the information state for
        an agent that reads the plain one. ValueError (with what to do) for an agent that
        reads the information state when this game's env does not hand it out."""
        from block_env.agent_specs import agent_obs_type, plain_observation
        from block_env.observation import obs_layout

        observation = self.raw.observe(self.raw.agent_selection)
        wants = agent_obs_type(agent)
        has = getattr(self.raw, "obs_type", "observation")
        if wants == has:
            return observation
        if wants == "observation":
            return plain_observation(observation, obs_layout(self.raw.config).dim)
        raise ValueError(
            f"{name} reads the information state, which this game's env does not hand out: "
            f"start the game with --hint-agent {name} (or seat it as an opponent)"
        )

    # -- naming

    def name(self, seat: int) -> str:
        return f"player_{seat} ({self.labels[seat]})"

    def describe(self, action: int) -> str:
        if action == self.tiles.pass_action:
            return "pass"
        tile, end = divmod(action, 2)
        if not self.raw.game.line:
            return f"open with {_tile(self.tiles.tiles[tile])}"
        return f"{_tile(self.tiles.tiles[tile])} on the {'left' if end == 0 else 'right'}"

    # -- the game

    def play(self) -> int:
        """Play to the end of the game (or until ``q`` / end of input): exit status 0; 1
        when an opponent fails (the game is saved first)."""
        raw = self.raw
        if raw.game.episode_over:
            self.screen.say(f"This game is over: {self._final_text()}")
            return 0
        self.screen.rule(self._hand_title())
        while not raw.game.episode_over:
            seat = raw.possible_agents.index(raw.agent_selection)
            if seat == self.human:
                action = self._human_turn(seat)
                if action is None:
                    return 0
            else:
                try:
                    agent = self.agents[seat]
                    action = int(agent.act(self.observation_for(agent, self.labels[seat])))
                except Exception as exc:  # an agent's bug must not lose the game
                    self._save()
                    self.screen.say(
                        f"{self.name(seat)} failed to choose a move "
                        f"({type(exc).__name__}: {exc}); {self._stop_text()}",
                        "red",
                    )
                    return 1
            self.screen.say(
                f"{self.name(seat)}: {self.describe(action)}",
                "bold" if seat == self.human else None,
            )
            self.env.step(action)
            self.moves.append((seat, action))
            self._after_step()
        self.screen.say(self._final_text(), "bold green")
        self._save()
        return 0

    def _after_step(self) -> None:
        raw = self.raw
        info = raw.infos[raw.possible_agents[0]]
        if info["hand_over"]:
            result = raw.last_hand.result
            self.screen.say(self._result_text(result), "bold yellow")
            self.screen.say(
                "Scores: " + ", ".join(f"{self.name(s)} {v}" for s, v in enumerate(raw.scores))
            )
            self.moves = []
            if not raw.game.episode_over:
                self.screen.rule(self._hand_title())
        self._save()

    def _human_turn(self, seat: int) -> int | None:
        """Show the position and ask until the answer is a legal move; None to stop."""
        legal = self._legal()
        self._show_position(seat, legal)
        while True:
            try:
                answer = self.ask("Your move (number, tile and end such as 3-5 left, hint, q): ")
            except EOFError:
                self.screen.say("")
                self.screen.say("End of input: " + self._stop_text())
                self._save()
                return None
            choice = parse_answer(answer, legal, self.raw.game, self.tiles)
            if choice == "quit":
                self._save()
                self.screen.say("Quit: " + self._stop_text())
                return None
            if isinstance(choice, str) and (choice == "hint" or choice.startswith("hint:")):
                self._hint(legal, choice.partition(":")[2] or self.hint_spec)
                continue
            if choice == "show":
                self._show_position(seat, legal)
                continue
            if isinstance(choice, str):
                self.screen.say(choice, "red")
                continue
            return choice

    def _legal(self) -> list[int]:
        mask = self.raw.observe(self.raw.agent_selection)["action_mask"]
        return [int(a) for a in mask.nonzero()[0]]

    def _hint(self, legal: list[int], spec: str) -> None:
        """Show what agent ``spec`` would play here (built once, on its first hint)."""
        if spec not in self.hint_agents:
            from block_env.agent_specs import SetupError, build_agent

            try:
                self.hint_agents[spec] = build_agent(spec, self.raw, seed=0)
            except SetupError as exc:
                self.screen.say(f"No hint: {exc}", "red")
                return
        try:
            agent = self.hint_agents[spec]
            action = int(agent.act(self.observation_for(agent, spec)))
        except Exception as exc:  # a hint is optional: say why there is none, go on
            self.screen.say(f"No hint: {spec} failed ({type(exc).__name__}: {exc})", "red")
            return
        number = legal.index(action) + 1 if action in legal else "?"
        self.screen.say(f"Hint ({spec}): {number}) {self.describe(action)}", "cyan")

    def _show_position(self, seat: int, legal: list[int]) -> None:
        raw, game, say = self.raw, self.raw.game, self.screen.say
        config = raw.config
        say("")
        say(
            f"Hand {game.hand_number + 1} - you are {self.name(seat)}"
            + (" (partner: player_" + str((seat + 2) % 4) + ")" if config.partnership else "")
            + (f" - target {config.target}" if config.episode == "match" else " - one hand"),
            "bold",
        )
        say("Scores: " + ", ".join(f"{self.name(s)} {v}" for s, v in enumerate(game.scores)))
        if game.line:
            row = "".join(f"[{x}|{y}]" for _, x, y in rendering.spatial_line(game))
            say(f"Line: {row}")
            say(f"Open ends: left {game.left}, right {game.right}", "bold")
        else:
            say("Line: empty (you open)")
        rows = [
            (
                self.name(s),
                bin(game.hands[s]).count("1"),
                [str(v) for v in range(self.values) if game.voids[s] >> v & 1],
                game.scores[s],
            )
            for s in range(config.num_players)
        ]
        self.screen.seats(rows, f" (of {config.target})" if config.episode == "match" else "")
        if self.moves:
            recent = self.moves[-LAST_MOVES:]
            first = len(self.moves) - len(recent)
            opening = next(
                (i for i, (_, x) in enumerate(self.moves) if x != self.tiles.pass_action), -1
            )
            say(
                "Last moves: "
                + "; ".join(
                    f"player_{s} {self.describe_past(a, first + i == opening)}"
                    for i, (s, a) in enumerate(recent)
                )
            )
        say(f"Line described: {rendering.describe_line(game, raw.lang)}", "dim")
        hand = " ".join(_tile(self.tiles.tiles[t]) for t in iter_tiles(game.hands[seat]))
        say(f"Your hand: {hand}", "bold cyan")
        say("Legal moves:")
        for i, action in enumerate(legal, 1):
            say(f"  {i}) {self.describe(action)}", "green")

    def describe_past(self, action: int, opening: bool = False) -> str:
        """A move already played, for the list of last moves."""
        if action == self.tiles.pass_action:
            return "passed"
        tile, end = divmod(action, 2)
        if opening:
            return f"opened with {_tile(self.tiles.tiles[tile])}"
        return f"{_tile(self.tiles.tiles[tile])} {'left' if end == 0 else 'right'}"

    # -- texts and saving

    def _hand_title(self) -> str:
        game = self.raw.game
        return f"hand {game.hand_number + 1}, {self.name(game.leader)} leads"

    def _result_text(self, result: Any) -> str:
        if result.winner is None:
            how = "the hand is blocked with a tie for the lowest total: nobody scores"
        else:
            verb = "wins the blocked hand" if result.blocked else "dominoes"
            how = f"{self.name(result.winner)} {verb} and scores {max(result.points)}"
        pips = ", ".join(f"player_{s} {p}" for s, p in enumerate(result.pips))
        return f"Hand over: {how} (pips left: {pips})"

    def _final_text(self) -> str:
        game = self.raw.game
        scores = ", ".join(f"{self.name(s)} {v}" for s, v in enumerate(game.scores))
        if not game.winners:
            return f"Game over, a draw. Final scores: {scores}"
        won = " and ".join(self.name(s) for s in game.winners)
        you = " You win!" if self.human in game.winners else ""
        return f"Game over: {won} won.{you} Final scores: {scores}"

    def _stop_text(self) -> str:
        if self.record_path is None:
            return "the game was not saved (use --record FILE to keep it)."
        return (
            f"the game is saved in {self.record_path}; continue it with --resume {self.record_path}"
        )

    def _save(self) -> None:
        """Write the record (with ``--record``); a failure is reported, and play goes on."""
        if self.record_path is not None:
            record = self.env.record
            record["play"] = {"human": self.human, "hint": self.hint_spec}
            try:
                records.save(record, self.record_path)
            except OSError as exc:
                self.screen.say(f"Could not save {self.record_path}: {exc}", "red")


def parse_answer(answer: str, legal: list[int], state: Any, tiles: Any) -> int | str:
    """An answer to "your move": a legal action id, ``"quit"``, ``"hint"`` (``"hint:NAME"``
    for ``hint NAME``), ``"show"``, or a
    message (any other string) saying what was wrong and what is allowed."""
    text = " ".join(answer.strip().lower().split())
    count = len(legal)
    allowed = (
        f"answer with a move number from 1 to {count}, a tile and end such as 3-5 left, "
        "'pass', 'hint', 'show' or 'q' to quit"
    )
    if text in ("q", "quit", "exit"):
        return "quit"
    if text in ("hint", "h"):
        return "hint"
    if text.startswith("hint "):
        return "hint:" + answer.strip().split(None, 1)[1].strip()
    if text in ("show", "s", "?", "help"):
        return "show"
    if not text:
        return f"Please answer: {allowed}."
    if text.isdigit():
        number = int(text)
        if 1 <= number <= count:
            return legal[number - 1]
        return f"There is no move {number}: choose a number from 1 to {count}."
    if text in ("pass", "p"):
        if legal == [tiles.pass_action]:
            return tiles.pass_action
        return "You cannot pass: a tile of yours fits. Choose one of the legal moves."
    match = _TILE_RE.match(text)
    if match is None:
        return f"{answer.strip()!r} is not a move: {allowed}."
    a, b, end = int(match.group(1)), int(match.group(2)), match.group(3)
    try:
        tile = tiles.tile_index((a, b))
    except ValueError as exc:
        return f"{exc}."
    pair = _tile(tiles.tiles[tile])
    if not state.hands[state.current] >> tile & 1:
        return f"You do not hold {pair}."
    fits = [x for x in legal if x != tiles.pass_action and x // 2 == tile]
    if not fits:
        return f"{pair} fits neither open end ({state.left} and {state.right})."
    if end is None:
        if len(fits) == 1:
            return fits[0]
        return f"{pair} fits both ends: say which, e.g. {a}-{b} left or {a}-{b} right."
    side = 0 if end in ("left", "l") else 1
    if not state.line:
        return fits[0]  # the opening has no side
    for x in fits:
        if x % 2 == side:
            return x
    value = state.left if side == 0 else state.right
    return f"{pair} does not fit the {'left' if side == 0 else 'right'} end ({value})."


# ----------------------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description=__doc__.split("\n")[0],
        epilog=f"example: {PROG} --players 3 --opponents rules block-3p --seat 1",
    )
    p.add_argument(
        "--players", type=int, default=None, choices=(2, 3, 4), help="default 2 (4 in partnership)"
    )
    p.add_argument(
        "--opponents",
        nargs="+",
        default=None,
        metavar="NAME",
        help="agents in the other seats, clockwise from yours, repeated if fewer (any name or "
        "policy block_env.evaluate accepts: random, greedy, rules, pimc-20, block-2p, "
        "path/to/policy.pt, ...; default rules)",
    )
    p.add_argument("--seat", type=int, default=0, help="your seat (default 0)")
    p.add_argument("--opener", choices=("rotate", "highest_double"), default="rotate")
    p.add_argument("--episode", choices=("match", "hand"), default="match")
    p.add_argument("--partnership", action="store_true", help="4 players, teams 0&2 and 1&3")
    p.add_argument("--target", type=int, default=None, help="match target score")
    p.add_argument("--max-pip", type=int, default=None, help="tile set [0|0]..[N|N], N in 2..6")
    p.add_argument("--lang", choices=("en", "tr", "hi"), default="en", help="line description")
    p.add_argument("--seed", type=int, default=None, help="deal seed (default: random)")
    p.add_argument(
        "--record", default=None, metavar="FILE", help="save the game here (JSON; --web: a folder)"
    )
    p.add_argument("--resume", default=None, metavar="FILE", help="continue a saved game")
    p.add_argument("--hint-agent", default="rules", metavar="NAME", help="agent behind 'hint'")
    p.add_argument(
        "--allow-mismatch", action="store_true", help="seat a policy trained for another game"
    )
    p.add_argument("--plain", action="store_true", help="no colour even on a terminal")
    web = p.add_argument_group("in the browser")
    web.add_argument("--web", action="store_true", help="serve the game to a browser")
    web.add_argument("--host", default="127.0.0.1", help="with --web: address (127.0.0.1)")
    web.add_argument("--port", type=int, default=8000, help="with --web: port (8000)")
    web.add_argument(
        "--delay-ms", type=int, default=600, help="with --web: pause between agents' moves"
    )
    return p


def game_of_args(args: argparse.Namespace) -> dict[str, Any]:
    """The ``raw_env`` keywords that the command line's game options ask for."""
    config: dict[str, Any] = {
        "num_players": args.players or (4 if args.partnership else 2),
        "opener": args.opener,
        "episode": args.episode,
        "partnership": args.partnership,
        "target_score": args.target,
    }
    if args.max_pip is not None:
        config["max_pip"] = args.max_pip
    return config


def _web(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``--web``: check the options by setting up one game, then serve until interrupted."""
    if args.resume is not None:
        parser.error("--resume continues a game in the terminal; it does not go with --web")
    if not 1 <= args.port <= 65535:
        parser.error(f"--port {args.port}: use 1..65535")
    if args.delay_ms < 0:
        parser.error(f"--delay-ms {args.delay_ms}: use 0 or more")
    from block_env.agent_specs import SetupError
    from block_env.web.session import GameOptions, PlaySession

    config = game_of_args(args)
    record_dir = None if args.record is None else Path(args.record)
    options = GameOptions(
        config=config,
        lang=args.lang,
        human=args.seat,
        opponents=tuple(args.opponents or ["rules"]),
        seed=args.seed,
        hint_agent=args.hint_agent,
        allow_mismatch=args.allow_mismatch,
        delay_ms=args.delay_ms,
        record_dir=record_dir,
    )
    try:
        if record_dir is not None:
            if record_dir.exists() and not record_dir.is_dir():
                raise SetupError(f"--record {record_dir}: with --web it names a folder")
            record_dir.mkdir(parents=True, exist_ok=True)
        PlaySession(options, "check", 0 if args.seed is None else args.seed)
        from block_env.web.server import serve
    except ImportError as exc:
        print(
            f"{PROG}: error: --web needs the web extra ({exc}): pip install -e '.[web]'",
            file=sys.stderr,
        )
        return 2
    except (OSError, SetupError, TypeError, ValueError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    serve(options, args.host, args.port)
    return 0


def _seat_agents(
    raw: Any, human: int, opponents: list[str], seed: int, allow_mismatch: bool
) -> tuple[dict[int, Any], list[str]]:
    from block_env.agent_specs import build_agent, check_game

    n = raw.config.num_players
    agents: dict[int, Any] = {}
    labels = [""] * n
    labels[human] = "you"
    others = [(human + i) % n for i in range(1, n)]
    for i, seat in enumerate(others):
        spec = opponents[i % len(opponents)]
        agents[seat] = build_agent(spec, raw, seed=seed * 1009 + seat)
        check_game(agents[seat], spec, raw.config, allow_mismatch)
        labels[seat] = spec
    return agents, labels


def _reads_information_state(players: list[Any]) -> bool:
    """Does any of ``players`` (None: none) read the information state? SetupError for an
    ``obs_type`` that is not one of the env's."""
    from block_env.agent_specs import agent_obs_type

    return any(p is not None and agent_obs_type(p) == "information_state" for p in players)


def main(argv: Sequence[str] | None = None, ask: Callable[[str], str] = input) -> int:
    """The command line; returns the exit status (2 with one line for a bad setup)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.web:
        return _web(args, parser)
    from block_env.agent_specs import SetupError, build_agent
    from block_env.env import raw_env

    screen = Screen(plain=True if args.plain else None)
    record_path = None if args.record is None else Path(args.record)
    try:
        if args.resume is not None:
            record = records.load(args.resume)
            report = records.replay(record)
            raw = report.env
            seed = record.get("seed") or 0
            played = record.get("play") or {}
            human = int(played.get("human", args.seat))
            labels_before = record.get("players") or []
            opponents = args.opponents or [
                labels_before[(human + i) % len(labels_before)]
                for i in range(1, raw.config.num_players)
            ]
            if record_path is None:
                record_path = Path(args.resume)
        else:
            raw = raw_env(**game_of_args(args), lang=args.lang)
            report = None
            human = args.seat
            opponents = args.opponents or ["rules"]
            seed = args.seed
        n = raw.config.num_players
        if not 0 <= human < n:
            raise SetupError(f"--seat {human} is not a seat: use 0..{n - 1}")
        if seed is None:
            import secrets

            seed = secrets.randbelow(2**31)
        agents, labels = _seat_agents(raw, human, opponents, seed, args.allow_mismatch)
        # Checked here, so a bad name is found before the game: the default is built on the
        # first hint.
        hint = None if args.hint_agent == "rules" else build_agent(args.hint_agent, raw, seed=0)
        if _reads_information_state([*agents.values(), hint]):
            # as in evaluate: the env hands out the information state, and the agents are
            # built again on it (oracles read the env they were given)
            if args.resume is not None:
                env_info = records.make_env(record, obs_type="information_state")
                report = records.replay(record, env=env_info)
                raw = report.env
            else:
                raw = raw_env(**game_of_args(args), lang=args.lang, obs_type="information_state")
            agents, labels = _seat_agents(raw, human, opponents, seed, args.allow_mismatch)
        env = records.RecordingWrapper(raw, players=labels)
        if args.resume is not None:
            env.recorder = report.recorder
            env.recorder.record["players"] = labels
            screen.say(f"Resumed {args.resume}: {report.summary()}")
        else:
            env.reset(seed=seed)
        if record_path is not None:
            if record_path.is_dir():
                raise SetupError(f"--record {record_path} is a folder: give a file path")
            try:  # written once now, so a place that cannot be written is found at once
                records.save({**env.record, "play": {"human": human}}, record_path)
            except OSError as exc:
                raise SetupError(f"--record {record_path}: cannot write it ({exc})") from None
    except (SetupError, records.RecordError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except records.RecordMismatch as exc:
        print(f"{PROG}: error: {args.resume} does not replay: {exc}", file=sys.stderr)
        return 2
    except (TypeError, ValueError) as exc:  # e.g. a game option this env does not take
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    game = Game(env, agents, human, labels, screen, record_path, args.hint_agent, ask)
    screen.say(
        f"Block, {n} players"
        + (", partnership" if raw.config.partnership else "")
        + f"; you are player_{human}; opponents: "
        + ", ".join(game.name(s) for s in range(n) if s != human)
        + f"; seed {seed}"
    )
    return game.play()


if __name__ == "__main__":
    sys.exit(main())
