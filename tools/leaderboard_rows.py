"""The leaderboard's row commands, one per (algorithm, budget, seed), each with the Python of
the venv its extra needs; rows whose JSON file exists are left out, and so are the algorithms
that walk the whole game tree (CFR+) on full-game tasks. ``--run`` runs them one after another
(one heavy job at a time on a small machine). ``--manifest COMMIT`` then lists the task's
new row files in ``docs/results/manifest.csv``, COMMIT being the code that ran them.

    python tools/leaderboard_rows.py --task block-2p-v1 --minutes 3 10 --seeds 0 1 2
    python tools/leaderboard_rows.py --task block-2p-v1 --minutes 10 --seeds 0 --run
    python tools/leaderboard_rows.py --task block-2p-v1 --manifest 59a740d
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from manifest_row import append as append_row  # noqa: E402
from results_tables import recorded  # noqa: E402

from block_env.benchmark.algorithms import ALGORITHMS  # noqa: E402
from block_env.benchmark.tasks import get_task  # noqa: E402

# the venv each extra lives in (.ci/run and .ci/extra-* create them)
VENVS = {
    "train": ".venv",
    "integrations": ".venv-integrations",
    "rllib": ".venv-rllib",
    "openspiel": ".venv-openspiel",
}
RANKED = {"ppo"}  # engines with data-parallel ranks: they get both cores
RESULTS = ROOT / "docs" / "results"
MANIFEST = RESULTS / "manifest.csv"


def row_file(task: str, algorithm: str, minutes: float, seed: int) -> Path:
    return Path("docs/results/leaderboard") / task / f"{algorithm}_{minutes:g}min_seed{seed}.json"


def row_command(task: str, algorithm: str, minutes: float, seed: int, workers: int) -> list[str]:
    """The command of one row, run from the repository's root. Small-set rows of the core
    engines run in the openspiel venv too (it holds the train extra): their rows then
    record the exact NashConv."""
    extra = ALGORITHMS[algorithm].extra
    if get_task(task).max_pip != 6 and extra == "train":
        extra = "openspiel"
    python = f"{VENVS[extra]}/bin/python"
    cmd = [python, "-m", "block_env.benchmark", "train", algorithm, "--task", task]
    cmd += ["--minutes", f"{minutes:g}", "--seed", str(seed), "--workers", str(workers)]
    if algorithm in RANKED:
        cmd += ["--nproc", "2"]
    return [*cmd, "--no-progress", "--json", str(row_file(task, algorithm, minutes, seed))]


def missing_rows(
    task: str, minutes: list[float], seeds: list[int], algorithms: list[str], workers: int
) -> list[list[str]]:
    """The commands of the rows not yet on disk, budget by budget; tree-walking algorithms
    only on small-set tasks."""
    full_game = get_task(task).max_pip == 6
    algorithms = [a for a in algorithms if not (full_game and ALGORITHMS[a].small_sets_only)]
    return [
        row_command(task, a, m, s, workers)
        for m in minutes
        for a in algorithms
        for s in seeds
        if not (ROOT / row_file(task, a, m, s)).exists()
    ]


def manifest_row(file: str, commit: str) -> dict[str, str]:
    """The manifest's row for a leaderboard row file (``file`` relative to docs/results/),
    read from what the file records; ``commit`` is the code that ran it."""
    data = json.loads((RESULTS / file).read_text(encoding="utf-8"))
    name = data["algorithm"]["name"]
    note = f"leaderboard row: {name} trained from scratch for {data['budget_min']:g} minutes"
    note += " of wall time, scored on the held-out deals"
    if data["nash_conv"] is not None:
        note += ", exact NashConv"
    row = {"file": file, "kind": "leaderboard", "agents": name, **recorded("leaderboard", data)}
    row["command"] = data["command"]
    row |= {"commit": commit, "content_commit": commit, "rerun": "not re-run", "note": note}
    return row


def add_to_manifest(task: str, commit: str) -> list[str]:
    """List the task's row files that the manifest lacks; returns their names."""
    with open(MANIFEST, newline="", encoding="utf-8") as fh:
        listed = {row["file"] for row in csv.DictReader(fh)}
    files = sorted(
        p.relative_to(RESULTS).as_posix() for p in (RESULTS / "leaderboard" / task).glob("*.json")
    )
    new = [f for f in files if f not in listed]
    for file in new:
        append_row(manifest_row(file, commit), MANIFEST)
    return new


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="block-2p-v1")
    p.add_argument("--minutes", type=float, nargs="+", default=[3.0, 10.0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=list(ALGORITHMS))
    p.add_argument("--workers", type=int, default=2, help="processes scoring each row")
    p.add_argument("--run", action="store_true", help="run the commands, one at a time")
    p.add_argument("--manifest", metavar="COMMIT", help="list new row files in the manifest")
    args = p.parse_args(argv)
    if args.manifest:
        for file in add_to_manifest(args.task, args.manifest):
            print(f"listed {file}")
        return 0
    todo = missing_rows(args.task, args.minutes, args.seeds, args.algorithms, args.workers)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for cmd in todo:
        print(shlex.join(cmd), flush=True)
        if args.run:
            status = subprocess.run(cmd, cwd=ROOT, env=env).returncode
            if status != 0:
                print(f"exit status {status}", file=sys.stderr)
                return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
