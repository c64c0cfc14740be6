"""List a new result file in ``docs/results/manifest.csv``: one row appended, read from what
the file records, every other line left byte for byte as it was.

The columns a file records (kind, players, agents, labels, lineup, seed, hands, the
recorded wall time) come from the file; the command, the commit that ran it and the note
come from the caller (a benchmark file records its own command). The agents are the ids of
the labels as they resolve in this checkout (``block-partnership`` ->
``block-partnership@6e8217f3``; a search preset is named by its network,
``block-partnership-search@f018eba4``), so list a file before a later policy takes its name.

    python tools/manifest_row.py \
        docs/results/benchmark/block-partnership-v1/block-partnership@6e8217f3.json \
        --commit 948efbf --note "the shipped block-partnership on block-partnership-v1"
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import results_tables  # noqa: E402

from agents.guided import BLOCK_2P_SEARCH, BLOCK_PARTNERSHIP_SEARCH  # noqa: E402
from block_env.benchmark import agent_identity  # noqa: E402

RESULTS = ROOT / "docs" / "results"
MANIFEST = RESULTS / "manifest.csv"
KINDS = {  # the first folder under docs/results/ -> the manifest's kind
    **{f"{n}p": "evaluate" for n in (2, 3, 4)},
    "ladders": "ladder",
    **{k: k for k in ("benchmark", "exploit", "leaderboard", "nashconv", "scaling", "training")},
}


# search presets are named by the network that guides them, as in policies.csv
GUIDED = {"block-2p-search": BLOCK_2P_SEARCH, "block-partnership-search": BLOCK_PARTNERSHIP_SEARCH}


def agent_id(label: str) -> str:
    """The manifest's id of the agent ``label`` names in this checkout: a policy file's
    ``name@sha8``, a search preset's name with its network's sha8, a bot's name."""
    if label in GUIDED:
        network = agent_identity(GUIDED[label]["policy"])["id"]
        return f"{label}@{network.rsplit('@', 1)[1]}"
    return agent_identity(label)["id"]


def kind_of(file: str) -> str:
    """The manifest's kind of the result ``file`` (relative to docs/results/)."""
    folder, _, name = file.partition("/")
    if folder not in KINDS:
        raise ValueError(f"{file!r} is not under one of docs/results/{{{', '.join(KINDS)}}}/")
    return "crossplay" if name.startswith("crossplay_") else KINDS[folder]


def manifest_row(file: str, commit: str, note: str, command: str | None = None) -> dict[str, str]:
    """The manifest's row for ``file`` (relative to docs/results/); ``command`` defaults to
    the one the file records."""
    kind = kind_of(file)
    data = json.loads((RESULTS / file).read_text(encoding="utf-8"))
    command = command or data.get("command")
    if not command:
        raise ValueError(f"{file} records no command: give --command")
    row = {"file": file, "kind": kind, **results_tables.recorded(kind, data)}
    labels = row["labels"].split(";") if row["labels"] else []
    if kind in ("benchmark", "exploit"):
        row["agents"] = row["labels"]  # the file records the agent's id
    else:
        row["agents"] = ";".join(map(agent_id, labels))
    if kind == "evaluate":
        row["lineup"] = " ".join(map(str, data["lineup"]))
    seconds = data.get("wall_s", data.get("seconds"))
    rerun = "not re-run" + (f" ({seconds:.0f} s recorded)" if seconds is not None else "")
    row |= {"command": command, "commit": commit, "content_commit": commit, "rerun": rerun}
    return row | {"note": note}


def append(row: dict[str, str], manifest: Path = MANIFEST) -> None:
    """Append ``row`` to ``manifest``; refuses a file already listed."""
    with open(manifest, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        columns, listed = list(reader.fieldnames or []), {r["file"] for r in reader}
    if row["file"] in listed:
        raise ValueError(f"{row['file']} is already in {manifest.name}")
    with open(manifest, "a", newline="", encoding="utf-8") as fh:
        csv.DictWriter(fh, columns, restval="", lineterminator="\n").writerow(row)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("file", type=Path, help="the result file, under docs/results/")
    p.add_argument("--commit", required=True, help="the commit whose code ran it")
    p.add_argument("--note", required=True, help="what the file is, for a reader")
    p.add_argument("--command", help="the command that wrote it (default: the file's own)")
    a = p.parse_args(argv)
    try:
        file = a.file.resolve().relative_to(RESULTS).as_posix()
        append(manifest_row(file, a.commit, a.note, a.command))
    except (ValueError, OSError) as exc:
        p.error(str(exc))
    print(f"listed {file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
