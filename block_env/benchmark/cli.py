"""The command line, ``python -m block_env.benchmark``:

    python -m block_env.benchmark AGENT --task block-2p-v1 [--json FILE] [--hands N]
    python -m block_env.benchmark exploit AGENT --task block-d3-2p-v1 --steps 5000000
    python -m block_env.benchmark tasks                     # the frozen tasks
    python -m block_env.benchmark train ppo --task block-2p-v1 --minutes 10 --seed 0
    python -m block_env.benchmark leaderboard ROW_FILES... --json board.json --markdown
    python -m block_env.benchmark table docs/results/block-2p-v1/*.json   # a docs table

Setup errors are one line on stderr with exit status 2, before anything is played.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from block_env.agent_specs import SetupError
from block_env.benchmark import leaderboard, table
from block_env.benchmark.algorithms import ALGORITHMS
from block_env.benchmark.exploit import ExploitResult, exploit
from block_env.benchmark.runner import BenchmarkResult, benchmark
from block_env.benchmark.tasks import TASKS, Task, field_network, get_task
from block_env.evaluation.cli import Parser, UsageError, check_output, write_json
from block_env.evaluation.results import format_table

PROG = "python -m block_env.benchmark"


OPPONENTS_HELP = "comma-separated opponents of the task's field, the others left out (quick look)"


def _names(text: str) -> list[str]:
    """A comma-separated list of names."""
    return [name.strip() for name in text.split(",") if name.strip()]


def _score_parser(prog: str) -> Parser:
    p = Parser(
        prog=prog,
        description="Score an agent on a frozen task: its reference field, its held-out deals.",
        epilog=f"example: {prog} block-2p --task block-2p-v1 --json block-2p.json "
        f"(tasks: {prog} tasks)",
    )
    p.add_argument(
        "agent",
        help="an agent spec: a shipped policy (block-2p), a policy file, a bot (rules), "
        "pimc-20, rllib:path=RUN, or an importable module:factory",
    )
    p.add_argument("--task", required=True, help=f"one of {', '.join(TASKS)}")
    p.add_argument(
        "--hands",
        type=int,
        default=None,
        help="hands (matches, in a match task) per opponent and lineup for a quick look "
        "(a multiple of the player count; "
        "default: the task's held-out set, fewer deals for the search agents)",
    )
    p.add_argument("--opponents", type=_names, default=None, help=OPPONENTS_HELP)
    p.add_argument("--workers", type=int, default=1, help="processes playing deals (default 1)")
    p.add_argument("--json", default=None, help="also write the result to this JSON file")
    p.add_argument("--allow-mismatch", action="store_true", help="as in block_env.evaluate")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    return p


def _exploit_parser(prog: str) -> Parser:
    p = Parser(
        prog=f"{prog} exploit",
        description="A lower bound on an agent's exploitability: train a best response to it "
        "(the native PPO, the agent frozen in every other seat), measure it on the task's "
        "held-out deals.",
        epilog=f"example: {prog} exploit rules --task block-d3-2p-v1 --steps 5000000 nproc=2",
    )
    p.add_argument("agent", help="an agent spec, as for scoring")
    p.add_argument("overrides", nargs="*", help="key=value training settings (e.g. nproc=2)")
    p.add_argument("--task", required=True, help=f"one of {', '.join(TASKS)}")
    p.add_argument("--steps", type=float, required=True, help="environment steps of training")
    p.add_argument("--hands", type=int, default=None, help="held-out hands (default: all)")
    p.add_argument("--workers", type=int, default=1, help="processes playing the held-out deals")
    p.add_argument("--run-dir", default=None, help="the training's run folder")
    p.add_argument("--force", action="store_true", help="overwrite an existing run folder")
    p.add_argument("--json", default=None, help="also write the result to this JSON file")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    return p


def _exploit_main(prog: str, argv: list[str]) -> int:
    try:
        args = _exploit_parser(prog).parse_intermixed_args(argv)
        task = _task(args.task)
        if args.steps != int(args.steps) or args.steps < 1:
            raise UsageError(f"--steps {args.steps}: use a positive whole number of steps")
        output = None if args.json is None else check_output(args.json)
        res = exploit(
            args.agent,
            task,
            int(args.steps),
            hands=args.hands,
            workers=args.workers,
            run_dir=args.run_dir,
            extra=list(args.overrides),
            force=args.force,
            progress=not args.no_progress,
            command=" ".join([prog, "exploit", *argv]),
        )
    except (UsageError, SetupError) as exc:
        print(f"{prog} exploit: error: {exc}", file=sys.stderr)
        return 2
    return _report(res, output)


def _train_parser(prog: str) -> Parser:
    p = Parser(
        prog=f"{prog} train",
        description="One leaderboard row: train an algorithm from scratch on a task's game for "
        "a wall-clock budget, then score it on the task's held-out deals.",
        epilog=f"example: {prog} train ppo --task block-2p-v1 --minutes 10 --seed 0 --nproc 2",
    )
    p.add_argument("algorithm", help=f"one of {', '.join(ALGORITHMS)}")
    p.add_argument("--task", required=True, help=f"one of {', '.join(TASKS)}")
    p.add_argument("--minutes", type=float, required=True, help="the training's wall-clock budget")
    p.add_argument("--seed", type=int, required=True, help="the training's seed")
    p.add_argument("--nproc", type=int, default=1, help="ranks, for engines that have them")
    p.add_argument("--hands", type=int, default=None, help="held-out hands per row (quick look)")
    p.add_argument("--opponents", type=_names, default=None, help=OPPONENTS_HELP)
    p.add_argument("--workers", type=int, default=1, help="processes playing the held-out deals")
    p.add_argument("--run-dir", default=None, help="the training's run folder")
    p.add_argument("--json", default=None, help="also write the row to this JSON file")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    return p


def _train_main(prog: str, argv: list[str]) -> int:
    try:
        args = _train_parser(prog).parse_args(argv)
        task = _task(args.task)
        output = None if args.json is None else check_output(args.json)
        row = leaderboard.run_row(
            args.algorithm,
            task,
            args.minutes,
            args.seed,
            run_dir=None if args.run_dir is None else Path(args.run_dir),
            nproc=args.nproc,
            workers=args.workers,
            hands=args.hands,
            progress=not args.no_progress,
            command=" ".join([prog, "train", *argv]),
            opponents=args.opponents,
        )
    except (UsageError, SetupError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    print(
        f"{row['algorithm']['name']} on {task.id}, seed {row['seed']}: "
        f"{row['env_steps']:,} env steps in {row['train_wall_s'] / 60:.1f} min"
    )
    print(leaderboard.leaderboard_text(leaderboard.aggregate([row])))
    if output is not None:
        write_json(output, row)
    return 0


def _leaderboard_main(prog: str, argv: list[str]) -> int:
    p = Parser(
        prog=f"{prog} leaderboard",
        description="The leaderboard of the row files given (files or folders): per algorithm "
        "and budget, the IQM over seeds with a bootstrap 95% CI.",
    )
    p.add_argument("paths", nargs="+", help="row JSON files or folders of them")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--opponent", default="rules", help="the margin column's opponent")
    p.add_argument("--json", default=None, help="also write the table and its rows to this file")
    try:
        args = p.parse_args(argv)
        for path in args.paths:
            if not Path(path).exists():
                raise UsageError(f"{path}: no such file or folder")
        output = None if args.json is None else check_output(args.json)
        rows = leaderboard.load_rows(args.paths)
        entries = leaderboard.aggregate(rows, args.opponent)
    except (UsageError, SetupError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    render = leaderboard.leaderboard_markdown if args.markdown else leaderboard.leaderboard_text
    print(render(entries))
    if output is not None:
        write_json(output, leaderboard.leaderboard_file(rows, args.opponent))
    return 0


def _table_main(prog: str, argv: list[str]) -> int:
    p = Parser(
        prog=f"{prog} table",
        description="The Markdown table of result files (benchmark results, evaluations, a "
        "ladder, leaderboard rows, exploitability bounds, a training run's eval.json), as "
        "the docs show it.",
        epilog=f"example: {prog} table docs/results/block-2p-v1/block-2p.json "
        "docs/results/block-2p-v1/rules.json",
    )
    p.add_argument("files", nargs="+", help="result JSON files of one kind")
    p.add_argument("--every", type=int, default=1, help="a training run's every k-th evaluation")
    try:
        args = p.parse_args(argv)
        text = table.render(args.files, args.every)
    except (UsageError, ValueError) as exc:
        print(f"{prog} table: error: {exc}", file=sys.stderr)
        return 2
    print(text)
    return 0


def _task(task_id: str) -> Task:
    try:
        return get_task(task_id)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _report(res: BenchmarkResult | ExploitResult, output: Path | None) -> int:
    print(res.table())
    if output is not None:
        write_json(output, res.to_dict())
    return 0


def tasks_table() -> str:
    """The frozen tasks, one line each."""
    rows = []
    for t in TASKS.values():
        names = []
        for o in t.field:
            sha256 = field_network(t, o.spec)[1]  # a network: the file the task froze
            name = o.spec if sha256 is None else f"{o.spec}@{sha256[:8]}"
            names.append(name if o.deals is None else f"{name} ({o.deals})")
        field = ", ".join(names)
        rows.append([t.id, t.description, f"{t.deals} x {t.num_players}", field])
    head = ["task", "game", "deals x rotations", "field (deals when fewer)"]
    return format_table(head, rows)


def main(argv: Iterable[str] | None = None, prog: str | None = None) -> int:
    """The command line; returns the exit status."""
    prog = PROG if prog is None else prog
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["tasks"]:
        print(tasks_table())
        return 0
    if args_list[:1] == ["exploit"]:
        return _exploit_main(prog, args_list[1:])
    if args_list[:1] == ["train"]:
        return _train_main(prog, args_list[1:])
    if args_list[:1] == ["leaderboard"]:
        return _leaderboard_main(prog, args_list[1:])
    if args_list[:1] == ["table"]:
        return _table_main(prog, args_list[1:])
    try:
        args = _score_parser(prog).parse_args(args_list)
        task = _task(args.task)
        output = None if args.json is None else check_output(args.json)
        res = benchmark(
            args.agent,
            task,
            hands=args.hands,
            workers=args.workers,
            progress=not args.no_progress,
            allow_mismatch=args.allow_mismatch,
            command=" ".join([prog, *args_list]),
            opponents=args.opponents,
        )
    except (UsageError, SetupError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    return _report(res, output)
