"""The command line, ``python -m block_env.evaluate``: two or more agents on duplicate deals,
``--ladder`` or ``--crossplay``. Setup errors are reported in one line on stderr with exit
status 2, before anything is played; ``--json`` also writes the result as strict JSON."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn

from block_env.agent_specs import SetupError
from block_env.config import BlockConfig
from block_env.evaluation.crossplay import crossplay
from block_env.evaluation.ladder import ladder
from block_env.evaluation.runner import prepare, run

PROG = "python -m block_env.evaluate"


class UsageError(Exception):
    """A command-line mistake: reported in one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see --help)")


def _parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The command's arguments, under the name ``prog``."""
    example = "--players 3" if prog.endswith("ladder") else "block-2p rules --hands 4000"
    p = Parser(
        prog=prog,
        description="Evaluate Block agents on duplicate deals (seats rotated), or run a ladder.",
        epilog=f"example: {prog} {example}",
    )
    p.add_argument(
        "agents",
        nargs="*",
        help="two or more agent names/specs (random, greedy, rules, pimc:worlds=20, pimc-20, "
        "block-2p, path/to/policy.pt; name one twice to compare two copies); with --ladder "
        "the default is the shipped ladder",
    )
    p.add_argument("--players", type=int, default=2, help="2, 3 or 4 (default 2)")
    p.add_argument(
        "--hands",
        type=int,
        default=None,
        help="hands in total (hand episodes), a multiple of the seatings (the player count); "
        "default 2000, or 400 per pair for --ladder",
    )
    p.add_argument(
        "--matches",
        type=int,
        default=None,
        help="matches in total (match episodes), a multiple of the player count; default "
        "200, and 200 per pair for --ladder --episode match (rated on the matches won)",
    )
    p.add_argument("--episode", choices=("hand", "match"), default="hand")
    p.add_argument("--opener", choices=("rotate", "highest_double"), default="rotate")
    p.add_argument("--partnership", action="store_true", help="4 players, teams 0&2 and 1&3")
    p.add_argument("--target", type=int, default=None, help="match target score")
    p.add_argument(
        "--max-pip", type=int, default=6, help="tile set [0|0]..[N|N], N from 2 to 6 (default 6)"
    )
    p.add_argument(
        "--hand-size", type=int, default=None, help="tiles per hand (default: the rules' own)"
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="first deal seed: deal d uses env seed seed+d, so runs whose seeds are closer "
        "than their number of deals share deals; keep independent evaluations far apart "
        "(e.g. seeds 1000000, 2000000, ...)",
    )
    p.add_argument(
        "--lineup",
        default=None,
        metavar="I,J,...",
        help="the agent (0 = the first named) at each seat before the seats rotate, e.g. "
        "0,1,1,1 with --partnership: the first agent with the second as its partner against "
        "two more of the second (default: one each, teams A,B,A,B for two agents in "
        "partnership, else the first agent against a field of the others)",
    )
    p.add_argument(
        "--control",
        default=None,
        metavar="AGENT",
        help="also report the first agent's gain over AGENT in its seats, on the same deals "
        "and random draws: games where the two choose apart are replayed with AGENT seated "
        "(in matches, the gain in matches won; often a narrower CI than two separate runs "
        "give, see docs/evaluation.md)",
    )
    p.add_argument("--ladder", action="store_true", help="round robin with ratings")
    p.add_argument(
        "--crossplay",
        action="store_true",
        help="with --partnership: every pair of the agents as partners (itself included) "
        "against two --against, on the same deals; --hands per pair (default 4000)",
    )
    p.add_argument(
        "--against",
        default="rules",
        metavar="AGENT",
        help="the opposing team's agent for --crossplay (default rules)",
    )
    p.add_argument(
        "--allow-mismatch",
        action="store_true",
        help="play a policy in a game other than the one it was trained for (warned, not refused)",
    )
    p.add_argument("--json", default=None, help="also write the results as JSON to this path")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument(
        "--record",
        default=None,
        metavar="DIR",
        help="save every game played as a JSON game record in this folder",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="play the deals in N processes (default 1: here, one after another); deal d "
        "keeps seed seed+d, so deterministic agents give the same figures as a serial run, "
        "while agents with their own randomness (random, pimc) are seeded per chunk of deals "
        "and draw differently than in a serial run (the same for the same seed and N)",
    )
    return p


def _lineup(text: str | None) -> list[int] | None:
    """``--lineup 0,1,1,1`` as a list (checked against the agents and seats by ``prepare``)."""
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",")]
    except ValueError as exc:
        raise UsageError(
            f"--lineup {text}: give one agent index per seat, comma-separated (e.g. 0,1,1,1)"
        ) from exc


def _check_record_dir(path_text: str) -> Path:
    """The ``--record`` folder, created if missing; a file there, or a folder that cannot be
    written, is refused before anything is played."""
    path = Path(path_text).expanduser()
    if path.exists() and not path.is_dir():
        raise UsageError(f"--record {path_text}: that is a file; give a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--record {path_text}: cannot create the folder ({exc})") from exc
    if not os.access(path, os.W_OK):
        raise UsageError(f"--record {path_text}: the folder is not writable")
    return path


def json_safe(value: Any) -> Any:
    """NaN/inf -> None so the file is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def check_output(path_text: str) -> Path:
    """The ``--json`` path, checked before anything is played: its folder is created if
    missing; a folder given as the file, or a place that cannot be written, is refused."""
    path = Path(path_text).expanduser()
    if path.is_dir():
        raise UsageError(f"--json {path_text}: that is a folder; give a file path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--json {path_text}: cannot create its folder ({exc})") from exc
    target = path if path.exists() else path.parent
    if not os.access(target, os.W_OK):
        raise UsageError(f"--json {path_text}: {target} is not writable")
    return path


def _check_count(option: str, value: int | None, players: int) -> None:
    """Refuse a game count that is not a whole number of deals (each deal is played once
    per seating), naming the nearest allowed values."""
    if value is None:
        return
    if value < 1:
        raise UsageError(f"{option} {value}: use a positive multiple of {players}")
    if value % players:
        lower, upper = value - value % players, value + players - value % players
        allowed = " or ".join(str(v) for v in (lower, upper) if v > 0)
        raise UsageError(
            f"{option} {value} is not a whole number of deals: each deal is played once per "
            f"seating ({players} with {players} players), so use a multiple of {players}, "
            f"e.g. {allowed}"
        )


def main(argv: Iterable[str] | None = None, prog: str | None = None) -> int:
    """The command line; returns the exit status (2, with one line on stderr, for a bad
    setup found before anything is played). ``prog`` names the command in its messages
    (default ``PROG``)."""
    prog = PROG if prog is None else prog
    try:
        args = _parser(prog).parse_args(None if argv is None else list(argv))
        config: dict[str, Any] = {"opener": args.opener}
        if args.partnership:
            config["partnership"] = True
        if args.target is not None:
            config["target_score"] = args.target
        if args.max_pip != 6:
            config["max_pip"] = args.max_pip
        if args.hand_size is not None:
            config["hand_size"] = args.hand_size
        try:
            game = BlockConfig(num_players=args.players, **config)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        n = game.num_players
        _check_count("--hands", args.hands, n)
        _check_count("--matches", args.matches, n)
        if args.workers < 1:
            raise UsageError(
                f"--workers {args.workers}: use an integer >= 1 (the number of processes "
                "playing deals; 1 plays them one after another)"
            )
        progress = not args.no_progress
        if args.crossplay:
            output = None if args.json is None else check_output(args.json)
            res: Any = _crossplay(args, config, progress)
        elif args.ladder:
            if args.hands is not None and args.episode == "match":
                raise UsageError("a match ladder counts matches: give --matches, not --hands")
            if args.record is not None:
                raise UsageError("--record saves the games of an evaluation, not of --ladder")
            if args.lineup is not None:
                raise UsageError("--ladder seats every pair its own way: drop --lineup")
            if args.control is not None:
                raise UsageError("--control compares one agent with another: drop --ladder")
            output = None if args.json is None else check_output(args.json)
            res = ladder(
                args.agents or None,
                num_players=args.players,
                hands=args.hands or -(-400 // n) * n,
                matches=args.matches or (-(-200 // n) * n if args.episode == "match" else None),
                episode=args.episode,
                seed=args.seed,
                progress=progress,
                allow_mismatch=args.allow_mismatch,
                workers=args.workers,
                **config,
            )
            for note in res.notes:
                print(f"{prog}: warning: {note}", file=sys.stderr)
        else:
            if len(args.agents) < 2:
                raise UsageError(
                    "give two or more agents, e.g. `rules greedy` (one agent alone would only "
                    "play itself; name it twice to compare two copies), or use --ladder"
                )
            plan = prepare(
                args.agents,
                num_players=args.players,
                hands=args.hands,
                matches=args.matches,
                episode=args.episode,
                seed=args.seed,
                lineup=_lineup(args.lineup),
                allow_mismatch=args.allow_mismatch,
                workers=args.workers,
                control=args.control,
                **config,
            )
            output = None if args.json is None else check_output(args.json)
            for note in plan.notes:
                print(f"{prog}: warning: {note}", file=sys.stderr)
            record_dir = None if args.record is None else _check_record_dir(args.record)
            res = run(plan, progress, record_dir)
    except (UsageError, SetupError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    print(res.table())
    if output is not None:
        write_json(output, res.to_dict())
    return 0


def _crossplay(args: argparse.Namespace, config: dict[str, Any], progress: bool) -> Any:
    """``--crossplay``: its options checked, then played."""
    if not args.partnership:
        raise UsageError("--crossplay seats partners: add --partnership (4 players)")
    if args.episode != "hand" or args.matches is not None:
        raise UsageError("--crossplay compares teams on single hands: drop --episode/--matches")
    for flag, value in (
        ("--ladder", args.ladder),
        ("--lineup", args.lineup),
        ("--control", args.control),
    ):
        if value:
            raise UsageError(f"--crossplay seats every pair its own way: drop {flag}")
    if args.record is not None:
        raise UsageError("--record saves the games of an evaluation, not of --crossplay")
    if len(args.agents) < 2:
        raise UsageError("--crossplay needs two or more agents, e.g. block-partnership rules")
    config = {key: value for key, value in config.items() if key != "partnership"}
    res = crossplay(
        args.agents,
        against=args.against,
        hands=args.hands or 4000,
        seed=args.seed,
        progress=progress,
        allow_mismatch=args.allow_mismatch,
        workers=args.workers,
        **config,
    )
    for note in res.notes:
        print(f"{PROG}: warning: {note}", file=sys.stderr)
    return res


def write_json(output: Path, data: Any) -> None:
    """Write ``data`` as strict JSON (NaN as null), atomically, and say so."""
    tmp = output.with_name(output.name + ".tmp")
    tmp.write_text(json.dumps(json_safe(data), indent=2), encoding="utf-8")
    os.replace(tmp, output)
    print(f"wrote {output}")
