"""Render a ladder JSON (``python -m block_env.evaluate --ladder --json``) as Markdown tables.

Why: docs/ladder.md quotes the measured ladders; generating its tables from the saved JSON
keeps the page and the data identical (``tools/results_tables.py`` renders the page's blocks
with ``render``).

    python tools/ladder_tables.py docs/results/ladders/ladder_2p_*.json
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _fmt(est: dict[str, Any] | None, digits: int) -> str:
    if est is None:
        return "–"
    m, lo, hi = est["mean"], est["lo"], est["hi"]
    if lo is None or hi is None:
        return f"{m:+.{digits}f}"
    return f"{m:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]"


def render(data: dict[str, Any]) -> str:
    """Ratings table (best first), then the margin matrix and the hand-win-share matrix."""
    names = data["agents"]
    games = "matches" if data.get("matches_per_pair") else "hands"  # what the ratings rest on
    order = sorted(range(len(names)), key=lambda i: -data["ratings"][i]["mean"])
    out = [f"| # | agent | rating (Elo scale, BT on {games} won) [95% CI] |", "|---|---|---|"]
    for rank, i in enumerate(order, 1):
        out.append(f"| {rank} | {names[i]} | {_fmt(data['ratings'][i], 0)} |")
    head = "| row vs column | " + " | ".join(names[i] for i in order) + " |"
    sep = "|---" * (len(order) + 1) + "|"
    out += ["", "Margin of row over column, points per hand [95% CI]:", "", head, sep]
    for i in order:
        cells = [_fmt(data["margins"][i][j], 2) for j in order]
        out.append(f"| **{names[i]}** | " + " | ".join(cells) + " |")
    share = "matches" if games == "matches" else "hands"
    tied = "" if games == "matches" else " (tied blocks count half)"
    out += ["", f"Share of {share} won by row against column{tied}:", "", head, sep]
    for i in order:
        cells = [
            "–" if data["win_share"][i][j] is None else f"{100 * data['win_share'][i][j]:.1f}%"
            for j in order
        ]
        out.append(f"| **{names[i]}** | " + " | ".join(cells) + " |")
    if data.get("skipped"):
        out += ["", "Not in the ladder (could not be built):", ""]
        out += [f"- {name}: {why}" for name, why in data["skipped"].items()]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    for path in argv:
        with open(path, encoding="utf-8") as fh:
            print(render(json.load(fh)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
