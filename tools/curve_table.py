"""Time to strength of a training run, as a markdown table, from its ``eval.json``.

Each periodic evaluation of the run (``eval_every`` updates) becomes a row: wall-clock minutes
of training, environment steps, and the margin in points per hand [95% CI] against each
evaluation opponent. ``--first-above`` names the opponent whose first evaluation with a
confidence interval entirely above zero is reported under the table.

Usage: ``python tools/curve_table.py runs/2p/eval.json [--every 2] [--first-above rules]``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def rows_of(history: list[dict[str, Any]], every: int = 1) -> list[str]:
    """Markdown rows, one per ``every``-th evaluation (the last one always included)."""
    chosen = [h for i, h in enumerate(history) if i % every == 0 or i == len(history) - 1]
    rows = []
    for h in chosen:
        cells = [f"{h['wall'] / 60:.1f}", f"{h['env_steps'] / 1e6:.1f}M"]
        cells += [
            f"{v['margin']:+.2f} [{v['lo']:+.2f}, {v['hi']:+.2f}]" for v in h["eval"].values()
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def first_above_zero(history: list[dict[str, Any]], opponent: str) -> dict[str, Any] | None:
    """The first evaluation whose CI against ``opponent`` lies entirely above zero."""
    for h in history:
        if h["eval"][opponent]["lo"] > 0:
            return h
    return None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("eval_json", type=Path)
    parser.add_argument("--every", type=int, default=1, help="print every k-th evaluation")
    parser.add_argument("--first-above", default="rules", help="opponent to report on")
    args = parser.parse_args(argv)
    history = json.loads(args.eval_json.read_text(encoding="utf-8"))["history"]
    if not history:
        raise SystemExit(f"{args.eval_json} holds no periodic evaluation")
    opponents = list(history[0]["eval"])
    print("| minutes | steps | " + " | ".join(f"vs {o}" for o in opponents) + " |")
    print("|---:|---:|" + "---|" * len(opponents))
    print("\n".join(rows_of(history, args.every)))
    if args.first_above in opponents:
        h = first_above_zero(history, args.first_above)
        where = "never" if h is None else f"at {h['wall'] / 60:.1f} min ({h['env_steps']:,} steps)"
        print(f"\nfirst evaluation with its CI above zero against {args.first_above}: {where}")


if __name__ == "__main__":
    main()
