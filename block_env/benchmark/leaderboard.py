"""The leaderboard of algorithms at fixed budgets: one row is one algorithm trained from
scratch on a task for a wall-clock budget with one seed, then scored on the task's held-out
deals (``block_env.benchmark.runner.benchmark``); the table aggregates the seeds of each
(algorithm, budget) as marl-eval and rliable recommend: the interquartile mean (IQM) with a
percentile-bootstrap 95% CI over seeds, beside every seed's own figure.

    python -m block_env.benchmark train ppo --task block-2p-v1 --minutes 10 --seed 0 --json F
    python -m block_env.benchmark leaderboard ROW_FILES... --json board.json --markdown
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from block_env.agent_specs import SetupError
from block_env.benchmark.algorithms import get_algorithm
from block_env.benchmark.runner import benchmark, machine_info
from block_env.benchmark.tasks import Task
from block_env.evaluation.results import format_table

ROW_FORMAT = 1  # the row file's format version
BOOTSTRAP = 2000


def default_run_dir(task: Task, algorithm: str, minutes: float, seed: int) -> Path:
    return Path("runs") / f"leaderboard-{task.id}-{algorithm}-{minutes:g}min-seed{seed}"


def run_row(
    algorithm: str,
    task: Task,
    minutes: float,
    seed: int,
    run_dir: Path | None = None,
    nproc: int = 1,
    workers: int = 1,
    hands: int | None = None,
    progress: bool = False,
    command: str | None = None,
    opponents: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Train ``algorithm`` from scratch on ``task`` for ``minutes`` of wall time with
    ``seed`` (``nproc`` ranks where its engine has them), then score it on the task's
    held-out deals (``hands`` per row of the field, or the field's ``opponents`` alone, for
    a quick look; default all): the row's JSON-ready dict. SetupError on a bad setup,
    before training."""
    algo = get_algorithm(algorithm)
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or not minutes > 0:
        raise SetupError(f"minutes={minutes!r} is not allowed: use a positive number")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise SetupError(f"seed={seed!r} is not allowed: use an int in [0, 2**32)")
    if nproc < 1 or workers < 1:
        raise SetupError(f"nproc={nproc}, workers={workers}: use integers >= 1")
    run_dir = default_run_dir(task, algorithm, minutes, seed) if run_dir is None else run_dir
    command = command or " ".join(sys.argv)
    start = time.perf_counter()
    trained = algo.train(task, float(minutes), seed, Path(run_dir), nproc, progress)
    score, exact = None, trained.nash_conv
    if trained.agent is not None:
        score = benchmark(
            trained.agent, task, hands, workers, progress, command=command, opponents=opponents
        )
        if task.max_pip != 6:
            exact = exact_nash_conv(trained.agent, task)
    return {
        "format": ROW_FORMAT,
        "task": {"id": task.id, "version": task.version},
        "algorithm": {
            "name": algo.name,
            "library": algo.library,
            "version": _version(algo.library),
            "recipe": algo.recipe,
            "steps_counted": algo.steps_counted,
        },
        "seed": seed,
        "budget_min": float(minutes),
        "nproc": nproc,
        "env_steps": trained.env_steps,
        "train_wall_s": trained.train_wall_s,
        "agent": trained.agent,
        "score": None if score is None else score.to_dict(),
        "nash_conv": exact,
        "machine": machine_info(),
        "wall_s": time.perf_counter() - start,
        "command": command,
    }


def exact_nash_conv(agent: str, task: Task) -> float | None:
    """NashConv of the policy ``agent`` plays, exactly, on a small-set task's game (OpenSpiel's
    ``exploitability.nash_conv`` on ``python_block_env``); None without the openspiel extra."""
    try:
        from block_env.openspiel import analysis
    except ImportError:
        return None
    from block_env.agent_specs import build_agent
    from block_env.env import raw_env

    player = build_agent(agent, raw_env(**task.env_kwargs()), seed=0)
    game = analysis.load(task.max_pip, task.hand_size, task.num_players)
    tree = analysis.walk(game)
    return analysis.nash_conv(game, analysis.tabular(game, tree, analysis.played_probs(player)))


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


# ------------------------------------------------------------------ aggregation


def iqm(values: Sequence[float]) -> float:
    """The interquartile mean: the mean of the middle half of the sorted values, the values
    at its edges weighted by the share of them inside it (3 values: weights 1/4, 1, 1/4;
    4 values: the middle two). Robust to one outlying seed, unlike the mean."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    if x.ndim != 1 or len(x) == 0:
        raise ValueError("iqm needs a non-empty 1-d sequence")
    return float(_iqm_rows(x[None])[0])


def _iqm_rows(sorted_rows: np.ndarray) -> np.ndarray:
    """``iqm`` of every row of an array whose rows are sorted."""
    n = sorted_rows.shape[1]
    i = np.arange(n)
    w = np.clip(np.minimum(i + 1, 0.75 * n) - np.maximum(i, 0.25 * n), 0.0, None)
    return sorted_rows @ w / w.sum()


def bootstrap_iqm(
    values: Sequence[float], reps: int = BOOTSTRAP, seed: int = 0
) -> tuple[float, float, float]:
    """(IQM, low, high): the IQM and its 95% percentile-bootstrap CI, seeds resampled with
    replacement ``reps`` times (a fixed generator: the same values give the same CI)."""
    x = np.asarray(values, dtype=np.float64)
    centre = iqm(x)
    if len(x) < 2:
        return centre, float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    draws = np.sort(x[rng.integers(0, len(x), size=(reps, len(x)))], axis=1)
    lo, hi = np.percentile(_iqm_rows(draws), [2.5, 97.5])
    return centre, float(lo), float(hi)


def load_rows(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """The rows in the files at ``paths`` (files, or folders searched for ``*.json``): a row
    file, or a leaderboard file (``leaderboard --json``) holding the rows it was made of."""
    rows = []
    for path in map(Path, paths):
        files = sorted(path.rglob("*.json")) if path.is_dir() else [path]
        for f in files:
            data = json.loads(f.read_text(encoding="utf-8"))
            found = data.get("rows", []) if "leaderboard" in data else [data]
            for row in found:
                if row.get("format") != ROW_FORMAT or "algorithm" not in row:
                    raise SetupError(f"{f}: not a leaderboard row (format {ROW_FORMAT})")
            rows += found
    return rows


def leaderboard_file(rows: list[dict[str, Any]], opponent: str = "rules") -> dict[str, Any]:
    """What ``leaderboard --json`` writes: the table's entries and every row they rest on."""
    return {"format": ROW_FORMAT, "leaderboard": aggregate(rows, opponent), "rows": rows}


def row_margin(row: dict[str, Any], opponent: str) -> float | None:
    """The row's margin against ``opponent`` in the task's first lineup (None if absent)."""
    for r in (row["score"] or {}).get("rows", []):
        if r["opponent"] == opponent:
            return float(r["margin"]["mean"])
    return None


def aggregate(rows: list[dict[str, Any]], opponent: str = "rules") -> list[dict[str, Any]]:
    """One entry per (task, algorithm, budget): its seeds, the IQM of their Elo ratings with
    a bootstrap CI, each seed's rating, the IQM margin against ``opponent``, and the mean
    environment steps and training minutes. Best first within a task and budget."""
    groups: dict[tuple[str, str, float], list[dict[str, Any]]] = {}
    for row in rows:
        key = (row["task"]["id"], row["algorithm"]["name"], row["budget_min"])
        groups.setdefault(key, []).append(row)
    out = []
    for (task, name, budget), group in groups.items():
        group.sort(key=lambda r: r["seed"])
        elos = [r["score"]["elo"]["mean"] for r in group if (r["score"] or {}).get("elo")]
        margins = [m for m in (row_margin(r, opponent) for r in group) if m is not None]
        exact = [r["nash_conv"] for r in group if r.get("nash_conv") is not None]
        seeds = [r["seed"] for r in group]
        if len(set(seeds)) != len(seeds):
            raise SetupError(f"{task} {name} {budget:g} min: seed listed twice in {seeds}")
        out.append(
            {
                "task": task,
                "algorithm": name,
                "library": group[0]["algorithm"]["library"],
                "budget_min": budget,
                "seeds": seeds,
                "elo": bootstrap_iqm(elos) if elos else None,
                "elo_per_seed": elos,
                "margin": bootstrap_iqm(margins) if margins else None,
                "nash_conv": bootstrap_iqm(exact) if exact else None,
                "nash_conv_per_seed": exact,
                "opponent": opponent,
                "env_steps": float(np.mean([r["env_steps"] for r in group])),
                "train_min": float(np.mean([r["train_wall_s"] for r in group]) / 60),
            }
        )
    out.sort(key=lambda e: (e["task"], e["budget_min"], -_strength(e)))
    return out


def _strength(entry: dict[str, Any]) -> float:
    """What orders the entries: the Elo IQM; where the task has no ladder, the exact
    NashConv's (lower is better), else the margin's."""
    if entry["elo"]:
        return entry["elo"][0]
    if entry["nash_conv"]:
        return -entry["nash_conv"][0]
    return entry["margin"][0] if entry["margin"] else 0.0


def _ci(est: tuple[float, float, float] | None, digits: int, sign: str = "+") -> str:
    if est is None:
        return "-"
    m, lo, hi = est
    f = f"{sign}.{digits}f"
    return f"{m:{f}}" if np.isnan(lo) else f"{m:{f}} [{lo:{f}}, {hi:{f}}]"


def table_rows(entries: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """The leaderboard's header and rows (text cells) for ``entries`` of ``aggregate``."""
    head = ["task", "budget", "algorithm", "library", "seeds", "steps (mean)"]
    head += ["training (mean)", "Elo, IQM [95% CI]", "Elo per seed"]
    head.append(f"vs {entries[0]['opponent']}, IQM [95% CI]" if entries else "margin")
    exact = any(e["nash_conv"] for e in entries)
    if exact:
        head.append("NashConv, IQM [95% CI]")
    rows = []
    for e in entries:
        rows.append(
            [
                e["task"],
                f"{e['budget_min']:g} min",
                e["algorithm"],
                e["library"],
                str(len(e["seeds"])),
                _steps(e["env_steps"]),
                f"{e['train_min']:.1f} min",
                _ci(e["elo"], 0),
                ", ".join(f"{x:.0f}" for x in e["elo_per_seed"]) or "-",
                _ci(e["margin"], 2),
            ]
        )
        if exact:
            rows[-1].append(_ci(e["nash_conv"], 3, sign=""))
    return head, rows


def _steps(n: float) -> str:
    """Steps in millions, thousands or units: 30.2M, 41k, 12."""
    if n >= 1e6:
        return f"{n / 1e6:.1f}M"
    return f"{n / 1e3:.0f}k" if n >= 1e4 else f"{n:,.0f}"


def leaderboard_text(entries: list[dict[str, Any]]) -> str:
    """The leaderboard as plain text."""
    head, rows = table_rows(entries)
    return format_table(head, rows)


def leaderboard_markdown(entries: list[dict[str, Any]]) -> str:
    """The leaderboard as a Markdown table."""
    head, rows = table_rows(entries)
    lines = ["| " + " | ".join(head) + " |"]
    lines.append(
        "|" + "|".join("---:" if h.startswith(("seeds", "steps")) else "---" for h in head)
    )
    lines[-1] += "|"
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)
