"""Markdown tables of result files, the tables the docs show: ``block-env benchmark table F...``.

The kind of each file is read from its keys; all files of one table are of one kind:

* a benchmark result (``block-env benchmark AGENT --task TASK --json F``): one column per
  file (its agent), one row per opponent and lineup, the rating last; files of one task;
* an evaluation (``block-env evaluate A B ... --json F``): one row per file; files of one
  pairing end with their pooled figure (means weighted by hands, standard errors combined);
* a ladder (``block-env ladder ... --json F``): the ratings, then the margins of row over column;
* leaderboard rows (``block-env benchmark train ... --json F``, or ``leaderboard --json``'s
  file of several): ``block_env.benchmark.leaderboard``'s table;
* an exploitability bound (``block-env benchmark exploit ... --json F``): one row per file;
* an exact NashConv (``python -m block_env.openspiel nashconv ... --json F``): its rows;
* a training run's ``eval.json``: every ``every``-th periodic evaluation, then the final one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from block_env.benchmark import leaderboard
from block_env.benchmark.tasks import FROZEN_NETWORKS
from block_env.evaluation.stats import Estimate

Cells = list[list[str]]


def kind_of(data: Any) -> str:
    """Which result a file's JSON holds; ValueError for anything else."""
    if isinstance(data, dict):
        if "exploitability_lower_bound" in data:
            return "exploit"
        if "algorithm" in data or "leaderboard" in data:
            return "leaderboard"
        if "deal_set" in data and "rows" in data:
            return "benchmark"
        if "size" in data and "rows" in data:
            return "nashconv"
        if "ratings" in data and "margins" in data:
            return "ladder"
        if "stats" in data and "config" in data:
            return "evaluate"
        if "history" in data and "final" in data:
            return "training"
    raise ValueError("not a result file of block-env (benchmark, evaluate, ladder, ...)")


def markdown(head: Sequence[str], rows: Cells, right: int = 0) -> str:
    """A Markdown table; the last ``right`` columns are aligned right."""
    align = ["---"] * (len(head) - right) + ["---:"] * right
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _est(d: dict[str, float] | None, digits: int = 2, pct: bool = False) -> str:
    """``+0.27 [+0.15, +0.40]``, or a share ``50.3% [49.2%, 51.4%]``; ``-`` for None."""
    if d is None:
        return "-"
    lo, hi = (math.nan if d.get(k) is None else d[k] for k in ("lo", "hi"))
    text = Estimate(d["mean"], lo, hi).fmt(digits, pct)
    if not pct:
        return text
    return (
        text.replace(",", "%,").replace("]", "%]").replace(" [", "% [")
        if "[" in text
        else text + "%"
    )


def _opponent(task_id: str, label: str) -> str:
    """A field network by its name in the task's field and its file's sha256 prefix."""
    digest = label.partition("@")[2]
    for name, (_, sha256) in FROZEN_NETWORKS.get(task_id, {}).items():
        if digest and sha256.startswith(digest):
            return f"{name}@{digest}"
    return label


def _agent_name(agent: dict[str, Any]) -> str:
    spec = str(agent["spec"])
    return agent["id"] if "/" in spec or spec.endswith(".pt") else spec


def benchmark_table(files: Sequence[dict[str, Any]]) -> str:
    tasks = {f["task"]["id"] for f in files}
    if len(tasks) != 1:
        raise ValueError(f"benchmark results of one task make a table, not of {sorted(tasks)}")
    task = tasks.pop()
    matches = any(r.get("match_win") is not None for f in files for r in f["rows"])
    lineups = len({r["lineup"] for f in files for r in f["rows"]}) > 1
    cells: dict[tuple[str, str], list[str]] = {}
    for i, f in enumerate(files):
        for r in f["rows"]:
            key = (_opponent(task, r["opponent"]), r["lineup"])
            if matches:
                text = f"{_est(r['match_win'], 1, pct=True)} ({r['matches']:,})"
            else:
                text = f"{_est(r['margin'])} ({r['hands']:,})"
            cells.setdefault(key, ["-"] * len(files))[i] = text
    rows = [[opp, *([lineup] if lineups else []), *c] for (opp, lineup), c in cells.items()]
    if any(f["elo"] for f in files):
        elo = [_est(f["elo"], 0) if f["elo"] else "-" for f in files]
        rows.append(["Elo (random = 0)", *([""] if lineups else []), *elo])
    what = "matches won" if matches else "points per hand"
    head = ["opponent", *(["lineup"] if lineups else [])]
    return markdown(head + [f"{_agent_name(f['agent'])}, {what}" for f in files], rows)


def _pooled(files: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The first agent's margin over all ``files``: means weighted by hands, standard
    errors (from each normal CI) combined."""
    hands = [f["hands"] for f in files]
    margins = [f["stats"][0]["margin"] for f in files]
    mean = sum(h * m["mean"] for h, m in zip(hands, margins)) / sum(hands)
    var = sum((h * (m["hi"] - m["lo"]) / 2) ** 2 for h, m in zip(hands, margins))
    half = math.sqrt(var) / sum(hands)
    return {"mean": mean, "lo": mean - half, "hi": mean + half}


def evaluate_table(files: Sequence[dict[str, Any]]) -> str:
    matches = any(f["config"]["episode"] == "match" for f in files)
    rows = []
    for f in files:
        s = f["stats"][0]
        row = [
            " vs ".join(f["agents"]),
            ",".join(map(str, f["lineup"])),
            f"{f['config']['seed']:,}",
        ]
        row += [f"{f['hands']:,}", _est(s["margin"]), _est(s["hand_win"], 1, pct=True)]
        if matches:
            row += [f"{f['matches']:,}", _est(s["match_win"], 1, pct=True)]
        rows.append(row)
    pairing = {
        json.dumps([f["agents"], f["lineup"], {**f["config"], "seed": 0, "workers": 0}])
        for f in files
    }
    if len(files) > 1 and len(pairing) == 1 and not matches:
        total = sum(f["hands"] for f in files)
        rows.append(["pooled", "", "", f"{total:,}", _est(_pooled(files)), ""])
    head = ["agents", "lineup", "seed", "hands", "points per hand [95% CI]", "hands won"]
    return markdown(head + (["matches", "matches won"] if matches else []), rows)


def ladder_table(data: dict[str, Any]) -> str:
    names, ratings = data["agents"], data["ratings"]
    order = sorted(range(len(names)), key=lambda i: -ratings[i]["mean"])
    top = [[str(k + 1), names[i], _est(ratings[i], 0)] for k, i in enumerate(order)]
    grid = []
    for i in order:
        grid.append([f"**{names[i]}**"] + [_est(data["margins"][i][j]) for j in order])
    return (
        markdown(["#", "agent", "rating (Elo, random = 0) [95% CI]"], top)
        + "\n\nMargin of row over column, points per hand [95% CI]:\n\n"
        + markdown(["row vs column", *(names[i] for i in order)], grid)
    )


def exploit_table(files: Sequence[dict[str, Any]]) -> str:
    rows = []
    for f in files:
        args = dict(a.split("=", 1) for a in f["train_args"])
        if "init_policy" in args:
            start = f"{args['init_policy']} network"
        else:
            start = "rule bot (teacher)" if args.get("teacher") == "auto" else "scratch"
        steps = leaderboard._steps(f["steps"])
        bound = dict(zip(("lo", "hi"), f["ci95"]), mean=f["exploitability_lower_bound"])
        rows.append([_agent_name(f["agent"]), f["task"]["id"], start])
        rows[-1] += [f"{steps}, {f['train_wall_s'] / 60:.1f} min", _est(bound), f"{f['hands']:,}"]
    head = ["agent", "task", "responder starts from", "training", "lower bound [95% CI]"]
    return markdown([*head, "held-out hands"], rows, right=1)


def training_table(data: dict[str, Any], every: int = 1) -> str:
    history = data["history"]
    chosen = [h for i, h in enumerate(history) if i % every == 0 or i == len(history) - 1]
    opponents = list(data["final"])
    rows = [
        [f"{h['wall'] / 60:.1f}", f"{h['env_steps'] / 1e6:.1f}M"]
        + [_est({"mean": h["eval"][o]["margin"], **h["eval"][o]}) for o in opponents]
        for h in chosen
    ]
    final = data["final"]
    hands = final[opponents[0]]["hands"]
    rows.append([f"final ({hands:,} hands)", ""])
    rows[-1] += [_est({"mean": final[o]["margin"], **final[o]}) for o in opponents]
    return markdown(["minutes", "steps", *(f"vs {o}" for o in opponents)], rows)


def nashconv_table(files: Sequence[dict[str, Any]]) -> str:
    rows = []
    for f in files:
        for r in f["rows"]:
            exact = r["nash_conv"] is not None
            value = f"{r['nash_conv']:.4f}" if exact else "-"
            share = f"{r['fraction_of_uniform']:.2%}" if exact else "-"
            rows.append([r["method"], value, share, f"{r['seconds']:.1f}", r["note"]])
    return markdown(["method", "NashConv", "/ uniform", "wall time (s)", "note"], rows)


def _single(render: Callable[[dict[str, Any]], str]) -> Callable[[list[dict[str, Any]]], str]:
    def one(files: list[dict[str, Any]]) -> str:
        return "\n\n".join(render(f) for f in files)

    return one


def render(paths: Sequence[str | Path], every: int = 1) -> str:
    """The Markdown table of the result files at ``paths`` (see the module's docstring);
    ValueError for a file that is not a result, files of several kinds or a bad ``every``."""
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ValueError(f"every={every!r} is not allowed: use a whole number >= 1")
    files, kinds = [], set()
    for path in map(Path, paths):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            kinds.add(kind_of(data))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: {exc}") from None
        files.append(data)
    if len(kinds) != 1:
        raise ValueError(f"give result files of one kind, not {sorted(kinds) or 'none'}")
    kind = kinds.pop()
    if kind == "leaderboard":
        return leaderboard.leaderboard_markdown(leaderboard.aggregate(leaderboard.load_rows(paths)))
    renderers: dict[str, Callable[[list[dict[str, Any]]], str]] = {
        "benchmark": benchmark_table,
        "evaluate": evaluate_table,
        "exploit": exploit_table,
        "nashconv": nashconv_table,
        "ladder": _single(ladder_table),
        "training": _single(lambda d: training_table(d, every)),
    }
    return renderers[kind](files)
