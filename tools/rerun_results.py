"""Re-run the result files that ``docs/results/manifest.csv`` lists and say whether the code
of this checkout writes the same figures, bit for bit.

Each chosen row's command (``block_env.evaluate`` for evaluations, ladders and cross-play
tables; ``block_env.benchmark`` for benchmark files) is run as written, but with its
``--json`` output sent to a scratch folder, and every figure the listed file holds is
compared with the new file's: all but wall times, notes, labels, the machine and the
package versions. A policy file the command names by its
id (``block-3p@8760d310.pt``) that the checkout lacks is taken from the source
``docs/results/policies.csv`` gives for it (the git history, or the file's path); a row
naming a file with no such source (a checkpoint that was not kept) is reported as
``missing`` and not run. With ``--record COMMIT`` the ``rerun`` column of each identical row
becomes ``identical at COMMIT`` (``... but for float rounding: ...`` where only a rating's
last digits differ) as soon as it is found; nothing else in the manifest changes.

    python tools/rerun_results.py --skip "pimc|search|omniscient" --record 1a2b3c4
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "docs" / "results" / "manifest.csv"
# What a result file holds beside its figures (wall times, at any depth, are dropped too):
# notes, labels, and (benchmark files) the command, the machine and the package versions.
NOT_FIGURES = ("notes", "agents", "command", "machine", "versions")
WALL_TIMES = ("seconds", "wall_s")
MODULE = {"benchmark": "block_env.benchmark"}  # every other kind: block_env.evaluate


def chosen_rows(
    rows: list[dict[str, str]], kind: str, skip: str, max_hands: int, files: str = ""
) -> list[dict[str, str]]:
    """The rows of ``kind`` whose command is ``python -m block_env.evaluate ... --json F``
    (``block_env.benchmark`` for benchmark rows), with no agent matching the regex
    ``skip``, at most ``max_hands`` hands, and a file matching the regex ``files``."""
    out, module = [], MODULE.get(kind, "block_env.evaluate")
    for row in rows:
        if files and not re.search(files, row["file"]):
            continue
        args = shlex.split(row["command"])
        if row["kind"] != kind or args[:3] != ["python", "-m", module]:
            continue
        if "--json" not in args or "&&" in args or int(row["hands"] or 0) > max_hands:
            continue
        if skip and re.search(skip, row["agents"]):
            continue
        out.append(row)
    return out


def from_source(name: str, scratch: Path) -> Path | None:
    """A policy file named ``<id>.pt`` that the checkout lacks, written to ``scratch`` from
    the source ``docs/results/policies.csv`` gives for ``<id>`` (``git show C:path``, or a
    path in the checkout) and checked against its sha256; None where there is none."""
    with open(MANIFEST.parent / "policies.csv", newline="", encoding="utf-8") as fh:
        policy = {p["id"]: p for p in csv.DictReader(fh)}.get(name.removesuffix(".pt"))
    if policy is None:
        return None
    source = policy["source"]
    if source.startswith("git show "):
        done = subprocess.run(["git", "show", source[9:]], cwd=ROOT, capture_output=True)
        data = None if done.returncode else done.stdout
    else:
        data = (ROOT / source).read_bytes() if (ROOT / source).is_file() else None
    if data is None or hashlib.sha256(data).hexdigest() != policy["sha256"]:
        return None
    out = scratch / name
    out.write_bytes(data)
    return out


def resolve_files(args: list[str], scratch: Path) -> str | None:
    """Point every ``.pt`` argument the checkout lacks at its copy from its source, in place;
    returns the first one that has none."""
    for i, arg in enumerate(args):
        if arg.endswith(".pt") and not (ROOT / arg).exists():
            found = from_source(arg, scratch)
            if found is None:
                return arg
            args[i] = str(found)
    return None


def figures(result: dict) -> dict:
    """What a result file reports: everything but ``NOT_FIGURES`` and the agents' labels (a
    label is what the command named: a shipped name, or the path of a checkpoint since
    renamed; a benchmark file's ``agent.spec``)."""
    out = {k: v for k, v in _untimed(result).items() if k not in NOT_FIGURES}
    if "agent" in out:
        out["agent"] = {k: v for k, v in out["agent"].items() if k != "spec"}
    if "stats" in out:
        out["stats"] = [{k: v for k, v in a.items() if k != "name"} for a in out["stats"]]
    return out


def _untimed(value: object) -> object:
    """``value`` without the wall times nested in it (a benchmark row's ``seconds``)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in WALL_TIMES}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _as_listed(new: object, old: object) -> object:
    """``new`` cut to the fields ``old`` holds: a file written before a field existed lacks
    it (a hand task's ``matches``), and what newer code adds contradicts nothing listed."""
    if isinstance(new, dict) and isinstance(old, dict):
        return {k: _as_listed(v, old[k]) for k, v in new.items() if k in old}
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        return [_as_listed(n, o) for n, o in zip(new, old)]
    return new


def _largest_gap(a: object, b: object) -> float | None:
    """The largest relative difference between the numbers at the same places of ``a`` and
    ``b``; None where they differ in anything but numbers."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return None
        a, b = [a[k] for k in a], [b[k] for k in a]  # paired by key, whatever the order
    if isinstance(a, list) and isinstance(b, list):
        gaps = [_largest_gap(x, y) for x, y in zip(a, b)] if len(a) == len(b) else [None]
        return None if None in gaps else max(gaps, default=0.0)
    if isinstance(a, bool) or isinstance(b, bool) or a == b:
        return 0.0 if a == b else None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) / max(abs(a), abs(b))
    return None


def compare(listed: dict, fresh: dict) -> str:
    """``identical`` when ``fresh`` reports every figure of ``listed`` equally, bit for bit;
    ``identical but for float rounding: <fields> (...)`` when only the last digits of some
    floats differ (another CPU's vectorised ``exp`` and ``log`` give that); else
    ``different: <fields>``."""
    old = figures(listed)
    new = _as_listed(figures(fresh), old)
    differ = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    if not differ:
        return "identical"
    gap = _largest_gap([old.get(k) for k in differ], [new.get(k) for k in differ])
    if gap is not None and gap < 1e-12:
        return f"identical but for float rounding: {', '.join(differ)} ({gap:.0e} relative at most)"
    return f"different: {', '.join(differ)}"


def rerun(row: dict[str, str], scratch: Path) -> str:
    """What ``compare`` says (``identical``, ``identical but for float rounding: ...`` or
    ``different: <fields>``), ``missing: <file>`` or ``failed: <error>``."""
    args = shlex.split(row["command"])
    args[0] = sys.executable  # "python": this checkout's interpreter
    args[args.index("--json") + 1] = str(scratch / "rerun.json")
    absent = resolve_files(args, scratch)
    if absent:
        return f"missing: {absent}"
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        return f"failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ''}"
    listed = json.loads((MANIFEST.parent / row["file"]).read_text(encoding="utf-8"))
    return compare(listed, json.loads((scratch / "rerun.json").read_text(encoding="utf-8")))


def record(results: dict[str, str], commit: str, manifest: Path | None = None) -> int:
    """Set the ``rerun`` column of the identical rows of ``manifest`` (the project's by
    default) to ``identical at COMMIT`` (``... but for float rounding: ...``), every other
    line left byte for byte as it was (a row is one line); returns how many rows changed."""
    manifest = manifest or MANIFEST
    lines = manifest.read_text(encoding="utf-8").splitlines(keepends=True)
    columns = next(csv.reader(lines[:1]))
    changed = 0
    for i, line in enumerate(lines[1:], 1):
        row = dict(zip(columns, next(csv.reader([line]))))
        verdict = results.get(row["file"], "")
        mark = verdict.replace("identical", f"identical at {commit}", 1)
        if verdict.startswith("identical") and row["rerun"] != mark:
            row["rerun"] = mark
            out = io.StringIO()
            csv.DictWriter(out, columns, lineterminator="\n").writerow(row)
            lines[i], changed = out.getvalue(), changed + 1
    manifest.write_text("".join(lines), encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kind", default="evaluate", help="the manifest kind to re-run")
    p.add_argument("--skip", default="", help="leave out rows with an agent matching this regex")
    p.add_argument("--max-hands", type=int, default=10**9, help="leave out larger rows")
    p.add_argument("--file", default="", help="only the files matching this regex")
    p.add_argument("--record", metavar="COMMIT", help="mark identical rows 'identical at COMMIT'")
    a = p.parse_args(argv)
    with open(MANIFEST, newline="", encoding="utf-8") as fh:
        rows = chosen_rows(list(csv.DictReader(fh)), a.kind, a.skip, a.max_hands, a.file)
    weight = {r["file"]: int(r["hands"] or 1) for r in rows}  # ETA by hands (benchmarks: rows)
    total = sum(weight.values()) or 1
    results: dict[str, str] = {}
    start, done, marked = time.monotonic(), 0, 0
    with tempfile.TemporaryDirectory() as scratch:
        for i, row in enumerate(rows, 1):
            results[row["file"]] = rerun(row, Path(scratch))
            if a.record:  # row by row, so that a stopped sweep keeps what it found
                marked += record({row["file"]: results[row["file"]]}, a.record)
            done += weight[row["file"]]
            elapsed = time.monotonic() - start
            eta = elapsed * (total - done) / max(done, 1)
            print(
                f"[{i}/{len(rows)} {elapsed:.0f} s, ETA {eta:.0f} s] {results[row['file']]}: "
                f"{row['file']}",
                flush=True,
            )
    bad = {f: r for f, r in results.items() if r.startswith(("different", "failed"))}
    count = {k: sum(r.startswith(k) for r in results.values()) for k in ("identical", "missing")}
    rounding = sum(r.startswith("identical but") for r in results.values())
    print(
        f"{count['identical']} identical ({rounding} of them but for float rounding), "
        f"{count['missing']} missing, {len(bad)} not"
    )
    if a.record:
        print(f"marked {marked} rows of the manifest's rerun column")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
