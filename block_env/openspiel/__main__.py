"""``python -m block_env.openspiel nashconv --max-pip 2 --hand-size 2 [...]``: the NashConv
table of one small Block game (uniform random, greedy, rules, PIMC, a trained policy, NFSP,
CFR+), its size and wall times, as a table, a JSON file and a convergence plot."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

PROG = "python -m block_env.openspiel"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Exact analysis on small sets through OpenSpiel (the openspiel extra).",
        epilog=f"example: {PROG} nashconv --max-pip 2 --hand-size 2 --cfr-iterations 100",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    nc = sub.add_parser("nashconv", help="NashConv of bots, learners and CFR+ on a small set")
    nc.add_argument("--max-pip", type=int, default=2, help="the set [0|0]..[N|N] (2..6)")
    nc.add_argument("--hand-size", type=int, default=2, help="tiles per hand")
    nc.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    nc.add_argument("--partnership", action="store_true")
    nc.add_argument("--opener", default="rotate", choices=("rotate", "highest_double"))
    nc.add_argument("--cfr-iterations", type=int, default=100, help="CFR+ iterations (>= 1)")
    nc.add_argument("--nfsp-episodes", type=int, default=2000, help="NFSP episodes (0: skip)")
    nc.add_argument("--nfsp-optimizer", default="sgd", choices=("sgd", "adam"))
    nc.add_argument("--nfsp-lr", type=float, default=0.01, help="NFSP learning rate")
    nc.add_argument("--pimc-worlds", type=int, default=20, help="PIMC worlds (0: skip PIMC)")
    nc.add_argument("--policy", action="append", default=[], help="trained policy file")
    nc.add_argument("--json", type=Path, help="write the results here")
    nc.add_argument("--plot", type=Path, help="write the convergence plot (PNG) here")
    nc.add_argument("--seed", type=int, default=0)
    pl = sub.add_parser("plot", help="one convergence plot from several nashconv JSON files")
    pl.add_argument("results", type=Path, nargs="+", help="JSON files written by nashconv")
    pl.add_argument("--out", type=Path, required=True, help="the PNG to write")
    pl.add_argument(
        "--training-log",
        action="append",
        default=[],
        metavar="LABEL=LOG",
        help="also draw the nash_conv records of a train.py log.jsonl (by update, wall time)",
    )
    return parser


def checkpoints(last: int, factor: float = 1.8, first: int = 1) -> list[int]:
    """Log-spaced iteration counts from ``first`` up to ``last`` (each ``factor`` times the
    one before), ``last`` included."""
    marks, i = set(), first
    while i < last:
        marks.add(i)
        i = max(i + 1, int(i * factor))
    return sorted(marks | {last})


def nashconv_table(args: argparse.Namespace) -> dict[str, Any]:
    """Every row of the table for the game the arguments name."""
    import agents
    from block_env.openspiel import analysis as an

    game = an.load(args.max_pip, args.hand_size, args.players, args.partnership, args.opener)
    tree = an.walk(game)
    rows: list[dict[str, Any]] = []
    curves: dict[str, list[dict[str, float]]] = {}

    def add(name: str, probs, note: str = "") -> None:
        start = time.perf_counter()
        try:
            value = an.nash_conv(game, an.tabular(game, tree, probs))
        except (ValueError, RuntimeError) as exc:  # a bot that cannot play this set
            value, note = None, f"cannot play this set: {str(exc)[:120]}"
        rows.append(
            {
                "method": name,
                "nash_conv": value,
                "seconds": time.perf_counter() - start,
                "note": note,
            }
        )
        print(f"  {name}: {value} {note}", file=sys.stderr, flush=True)

    add("uniform random", an.uniform_probs)
    add("greedy", an.agent_probs(agents.make("greedy").act))
    add("rules", an.agent_probs(agents.make("rules").act))
    if args.pimc_worlds:
        add(f"pimc-{args.pimc_worlds}", an.pimc_probs(args.pimc_worlds, args.seed))
    for path in args.policy:
        add(f"trained ({Path(path).name})", an.network_probs(path), "softmax of the network")
    if args.nfsp_episodes:
        start = time.perf_counter()
        _, curve = an.run_nfsp(
            game,
            tree,
            args.nfsp_episodes,
            args.seed,
            checkpoints(args.nfsp_episodes, 3.0, 1000),
            args.nfsp_optimizer,
            args.nfsp_lr,
        )
        curves["nfsp"] = curve
        rows.append(
            {
                "method": f"NFSP, {args.nfsp_episodes} episodes",
                "nash_conv": curve[-1]["nash_conv"],
                "seconds": time.perf_counter() - start,
                "note": f"training {curve[-1]['seconds']:.1f} s; {args.nfsp_optimizer}, "
                f"lr {args.nfsp_lr:g}",
            }
        )
    start = time.perf_counter()
    _, curve = an.run_cfr_plus(game, args.cfr_iterations, checkpoints(args.cfr_iterations))
    curves["cfr+"] = curve
    rows.append(
        {
            "method": f"CFR+, {args.cfr_iterations} iterations",
            "nash_conv": curve[-1]["nash_conv"],
            "seconds": time.perf_counter() - start,
            "note": f"solving {curve[-1]['seconds']:.1f} s",
        }
    )
    uniform = rows[0]["nash_conv"]
    for row in rows:
        value = row["nash_conv"]
        row["fraction_of_uniform"] = None if value is None else value / uniform
    return {
        "game": str(game),
        "params": {
            "max_pip": args.max_pip,
            "hand_size": args.hand_size,
            "num_players": args.players,
            "partnership": args.partnership,
            "opener": args.opener,
        },
        "size": tree.sizes(),
        "rows": rows,
        "curves": curves,
    }


def format_table(result: dict[str, Any]) -> str:
    """Markdown table of the rows, with the game and its size above it."""
    size = result["size"]
    lines = [
        f"{result['game']}: {size['histories']:,} histories ({size['terminal_histories']:,} "
        f"terminal), {size['information_states']:,} information states "
        f"(tree walk {size['walk_seconds']:.1f} s)",
        "",
        "| method | NashConv | / uniform | wall time (s) | note |",
        "|---|---:|---:|---:|---|",
    ]
    for r in result["rows"]:
        if r["nash_conv"] is None:
            value, share = "–", "–"
        else:
            value, share = f"{r['nash_conv']:.4f}", f"{r['fraction_of_uniform']:.2%}"
        lines.append(f"| {r['method']} | {value} | {share} | {r['seconds']:.1f} | {r['note']} |")
    return "\n".join(lines)


def training_curve(log: Path) -> list[dict[str, float]]:
    """The NashConv records of a ``train.py`` log (``nashconv_every``) as curve points."""
    points = []
    for line in log.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "nash_conv" in record:
            points.append(
                {
                    "iteration": record["update"],
                    "seconds": record["wall"],
                    "nash_conv": record["nash_conv"],
                }
            )
    return points


def plot(
    results: list[dict[str, Any]],
    path: Path,
    training: list[tuple[str, list[dict[str, float]]]] | None = None,
) -> None:
    """NashConv against iterations and against wall time (log-log), one line per method and
    game, the uniform policy as a dotted reference; ``training`` adds PPO runs (by update)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_it, ax_t) = plt.subplots(1, 2, figsize=(11, 4.2))
    for result in results:
        p = result["params"]
        label = f"N={p['max_pip']}, k={p['hand_size']}, {p['num_players']}p"
        uniform = result["rows"][0]["nash_conv"]
        for name, curve in result["curves"].items():
            its = [c["iteration"] for c in curve]
            secs = [max(c["seconds"], 1e-3) for c in curve]
            vals = [max(c["nash_conv"], 1e-6) for c in curve]
            (line,) = ax_it.plot(its, vals, marker="o", ms=3, label=f"{name} ({label})")
            ax_t.plot(secs, vals, marker="o", ms=3, color=line.get_color())
        for ax in (ax_it, ax_t):
            ax.axhline(uniform, ls=":", lw=0.8, color="grey")
    for label, curve in training or []:
        its = [c["iteration"] for c in curve]
        secs = [max(c["seconds"], 1e-3) for c in curve]
        vals = [max(c["nash_conv"], 1e-6) for c in curve]
        (line,) = ax_it.plot(its, vals, ls="--", marker="s", ms=3, label=f"PPO ({label})")
        ax_t.plot(secs, vals, ls="--", marker="s", ms=3, color=line.get_color())
    ax_it.set_xlabel("iterations (CFR+) / episodes (NFSP) / updates (PPO)")
    ax_t.set_xlabel("wall time (s)")
    for ax in (ax_it, ax_t):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylabel("NashConv")
        ax.grid(True, which="both", lw=0.3)
    ax_it.legend(fontsize=7)
    fig.suptitle("NashConv (CFR+, NFSP: average policy; PPO: the network; dotted: uniform)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "plot":
        try:
            results = [json.loads(p.read_text()) for p in args.results]
        except (OSError, ValueError) as exc:
            print(f"error: cannot read the results: {exc}", file=sys.stderr)
            return 2
        training = []
        for item in args.training_log:
            label, sep, log = item.rpartition("=")
            if not sep:
                print(f"error: --training-log {item!r}: use LABEL=PATH", file=sys.stderr)
                return 2
            try:
                training.append((label, training_curve(Path(log))))
            except (OSError, ValueError) as exc:
                print(f"error: cannot read {log}: {exc}", file=sys.stderr)
                return 2
        plot(results, args.out, training)
        return 0
    if args.cfr_iterations < 1 or args.nfsp_episodes < 0 or args.pimc_worlds < 0:
        print(
            "--cfr-iterations must be >= 1, --nfsp-episodes and --pimc-worlds >= 0", file=sys.stderr
        )
        return 2
    try:
        from block_env.openspiel import analysis  # noqa: F401
    except ImportError as exc:
        print(f"open_spiel is needed: pip install -e '.[openspiel]' ({exc})", file=sys.stderr)
        return 2
    try:
        result = nashconv_table(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    if args.plot:
        plot([result], args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
