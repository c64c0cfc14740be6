"""Results as data: every file in docs/results/ is in its manifest (and back), each row says
what its JSON holds, policy ids name the right files, and the tables in the docs pages are
exactly what tools/results_tables.py renders from the JSON files."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
sys.path.insert(0, str(ROOT / "tools"))

import results_tables  # noqa: E402

INDEXES = {"manifest.csv", "policies.csv"}
BOTS = {"random", "greedy", "rules", "pimc-20", "pimc-100", "omniscient"}
ID_RE = re.compile(r"^(?P<name>[\w.+-]+)@(?P<sha>[0-9a-f]{8}|unknown)$")


def _csv(name: str) -> list[dict[str, str]]:
    with open(RESULTS / name, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


MANIFEST = _csv("manifest.csv")
POLICIES = {row["id"]: row for row in _csv("policies.csv")}


def _json(row: dict[str, str]) -> dict:
    return json.loads((RESULTS / row["file"]).read_text(encoding="utf-8"))


def test_every_result_file_is_in_the_manifest_and_back() -> None:
    files = sorted(
        p.relative_to(RESULTS).as_posix()
        for p in RESULTS.rglob("*")
        if p.is_file() and p.name not in INDEXES
    )
    listed = [row["file"] for row in MANIFEST]
    assert len(listed) == len(set(listed)), "a file listed twice in the manifest"
    assert not set(files) - set(listed), f"not in the manifest: {sorted(set(files) - set(listed))}"
    assert not set(listed) - set(files), f"listed but missing: {sorted(set(listed) - set(files))}"


def test_manifest_columns() -> None:
    needed = {"file", "kind", "agents", "labels", "seed", "hands", "command", "commit", "note"}
    assert needed <= set(MANIFEST[0])
    for row in MANIFEST:
        assert re.fullmatch(r"[0-9a-f]{7,40}", row["commit"]), row["file"]
        assert row["command"].startswith("python "), row["file"]


def test_each_row_says_what_its_json_holds() -> None:
    for row in MANIFEST:
        found = results_tables.recorded(row["kind"], _json(row))
        for column, value in found.items():
            assert row[column] == value, (row["file"], column, row[column], value)
        agents = row["agents"].split(";") if row["agents"] else []
        labels = row["labels"].split(";") if row["labels"] else []
        assert len(agents) == len(labels), row["file"]


def test_evaluation_files_are_named_by_agents_seed_and_hands_or_matches() -> None:
    for row in MANIFEST:
        if row["kind"] != "evaluate":
            continue
        agents = row["agents"].split(";")
        assert len(agents) >= 2, row["file"]
        data = _json(row)
        count = (
            f"{data['matches']}m" if data["config"]["episode"] == "match" else f"{row['hands']}h"
        )
        name = f"{row['players']}p/{'_vs_'.join(agents)}_seed{row['seed']}_{count}.json"
        assert row["file"] == name
        assert row["lineup"] == " ".join(map(str, _json(row)["lineup"]))


def test_agents_are_bots_or_policy_ids() -> None:
    for row in MANIFEST:
        for agent in filter(None, row["agents"].split(";")):
            if row["kind"] in ("nashconv", "leaderboard") and "@" not in agent:
                continue  # the methods of a NashConv table or a leaderboard row
            if agent in BOTS:
                continue
            match = ID_RE.match(agent)
            assert match, f"{row['file']}: {agent!r} is neither a bot nor name@sha256-prefix"
            if match["sha"] == "unknown":
                assert "UNIDENTIFIED" in row["note"], f"{row['file']}: say why {agent} is unknown"
            else:
                assert agent in POLICIES, f"{row['file']}: {agent} is not in policies.csv"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_policy_ids_are_their_files_sha256() -> None:
    for pid, row in POLICIES.items():
        assert row["sha256"].startswith(pid.rsplit("@", 1)[1]), pid
        source = row["source"]
        if not source.startswith("git show "):
            assert _sha256(ROOT / source) == row["sha256"], (
                f"{source} is no longer {pid}: a new file under that name needs a new row in "
                "docs/results/policies.csv (and the old row's source becomes `git show ...`)"
            )


def _command_agents(row: dict[str, str]) -> list[str]:
    """The agent specs of an evaluate or ladder command (its positional arguments)."""
    words = shlex.split(row["command"].split("&&")[-1])
    assert words[:3] == ["python", "-m", "block_env.evaluate"], row["file"]
    specs, skip = [], False
    for word in words[3:]:
        if skip:
            skip = False
        elif word in (
            "--ladder",
            "--crossplay",
            "--no-progress",
            "--partnership",
            "--allow-mismatch",
        ):
            pass
        elif word.startswith("--"):
            skip = True
        else:
            specs.append(word)
    return specs


def test_commands_name_the_files_that_were_evaluated() -> None:
    # (shipped name, id): a file keeps its id when it is shipped under a new name
    shipped = {(row["shipped_as"], pid) for pid, row in POLICIES.items() if row["shipped_as"]}
    for row in MANIFEST:
        if row["kind"] not in ("evaluate", "ladder", "crossplay"):
            continue
        assert f"--json docs/results/{row['file']}" in row["command"], row["file"]
        specs = _command_agents(row)
        agents, labels = row["agents"].split(";"), row["labels"].split(";")
        assert len(specs) == len(agents), row["file"]
        for spec, agent, label in zip(specs, agents, labels):
            if agent.endswith("@unknown"):
                assert spec == label, row["file"]
            elif "@" in agent:
                named = (f"{agent}.pt", POLICIES[agent]["source"])
                assert spec in named or (spec, agent) in shipped, (
                    f"{row['file']}: {spec!r} does not name {agent}"
                )
            else:
                assert spec == agent, row["file"]
        assert f"--seed {row['seed']}" in row["command"], row["file"]
        data = _json(row)
        if row["kind"] == "evaluate" and data["config"]["episode"] == "match":
            assert f"--matches {data['matches']}" in row["command"], row["file"]
        elif row["kind"] == "ladder" and data.get("matches_per_pair"):
            assert f"--matches {data['matches_per_pair']}" in row["command"], row["file"]
        else:
            assert f"--hands {row['hands']}" in row["command"], row["file"]


def test_leaderboard_rows_are_listed_as_the_row_tool_lists_them() -> None:
    import leaderboard_rows

    rows = [row for row in MANIFEST if row["kind"] == "leaderboard"]
    assert rows
    for row in rows:
        made = leaderboard_rows.manifest_row(row["file"], row["commit"])
        assert made == {k: v for k, v in row.items() if v}, row["file"]


def test_the_row_tool_lists_only_the_files_the_manifest_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import leaderboard_rows

    lines = (RESULTS / "manifest.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (dropped,) = [
        i
        for i, line in enumerate(lines)
        if line.startswith("leaderboard/block-2p-v1/ppo_10min_seed0.json,")
    ]
    kept = lines[:dropped] + lines[dropped + 1 :]
    (tmp_path / "manifest.csv").write_text("".join(kept), encoding="utf-8")
    rows = tmp_path / "leaderboard" / "block-2p-v1"
    rows.mkdir(parents=True)
    for name in ("ppo_10min_seed0.json", "ppo_10min_seed1.json"):
        (rows / name).write_bytes((RESULTS / "leaderboard/block-2p-v1" / name).read_bytes())
    monkeypatch.setattr(leaderboard_rows, "RESULTS", tmp_path)
    monkeypatch.setattr(leaderboard_rows, "MANIFEST", tmp_path / "manifest.csv")
    commit = MANIFEST[dropped - 1]["commit"]  # the header is line 0
    assert leaderboard_rows.add_to_manifest("block-2p-v1", commit) == [
        "leaderboard/block-2p-v1/ppo_10min_seed0.json"
    ]
    assert (tmp_path / "manifest.csv").read_text(encoding="utf-8") == "".join(
        kept + [lines[dropped]]
    )
    assert leaderboard_rows.add_to_manifest("block-2p-v1", commit) == []  # nothing twice


@pytest.mark.parametrize(
    "file",
    [
        "benchmark/block-partnership-hd-v1/block-partnership@6e8217f3.json",
        "4p/partnership_long@6e8217f3_vs_pimc-20_seed131000000_4000h.json",
        "ladders/ladder_partnership_hd_block-partnership@6e8217f3_seed134000000_400h.json",
    ],
)
def test_the_manifest_row_tool_reads_a_row_from_its_file(file: str) -> None:
    """What a file records (kind, players, agents with a search preset named by its network,
    labels, lineup, seed, hands) is read back as its row holds it."""
    import manifest_row

    (row,) = [r for r in MANIFEST if r["file"] == file]
    made = manifest_row.manifest_row(file, row["commit"], row["note"], row["command"])
    recorded = {"kind", "players", "agents", "labels", "lineup", "seed", "hands"}
    assert {k: made.get(k, "") for k in recorded} == {k: row[k] for k in recorded}
    assert made["command"] == row["command"] and made["rerun"].startswith("not re-run (")


def test_the_manifest_row_tool_appends_one_line_and_refuses_a_listed_file(
    tmp_path: Path,
) -> None:
    import manifest_row

    file = "benchmark/block-partnership-hd-v1/block-partnership@6e8217f3.json"
    lines = (RESULTS / "manifest.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (dropped,) = [i for i, line in enumerate(lines) if line.startswith(file + ",")]
    kept = lines[:dropped] + lines[dropped + 1 :]
    manifest = tmp_path / "manifest.csv"
    manifest.write_text("".join(kept), encoding="utf-8")
    note = MANIFEST[dropped - 1]["note"]  # the header is line 0; the file records its command
    manifest_row.append(manifest_row.manifest_row(file, "3daa1eb", note), manifest)
    assert manifest.read_text(encoding="utf-8") == "".join(kept + [lines[dropped]])
    with pytest.raises(ValueError, match="already in manifest.csv"):
        manifest_row.append(manifest_row.manifest_row(file, "3daa1eb", note), manifest)
    with pytest.raises(ValueError, match="is not under one of"):
        manifest_row.kind_of("elsewhere/x.json")


def test_the_docs_tables_are_what_the_script_renders() -> None:
    stale = results_tables.stale()
    assert not stale, (
        "tables in the docs differ from their JSON files (run `python tools/results_tables.py "
        "--write`):\n" + "\n".join(stale)
    )
    used = {
        name
        for page in results_tables.pages()
        for name, _ in results_tables.blocks(page.read_text(encoding="utf-8"))
    }
    assert used == set(results_tables.TABLES), sorted(set(results_tables.TABLES) ^ used)


def test_the_block_markers_are_found_and_rewritten() -> None:
    text = "a\n\n<!-- results-table: strength-3p -->\n\nold\n\n<!-- /results-table -->\n\nb\n"
    assert results_tables.blocks(text) == [("strength-3p", "\nold\n\n")]
    new = results_tables.rewrite(text)
    assert results_tables.blocks(new) == [
        ("strength-3p", results_tables.render_block("strength-3p"))
    ]
    assert new.startswith("a\n\n<!-- results-table: strength-3p -->\n\n| lone seat vs field |")
    assert new.endswith("|\n\n<!-- /results-table -->\n\nb\n")


def test_pooled_margin_averages_means_and_combines_errors() -> None:
    # block-2p vs PIMC-100 on the two fresh 8,000-hand sets: the README's +0.26 [+0.17, +0.34]
    names = [f for _, f, _ in results_tables.INFOSTATE[:2]]
    assert results_tables.pooled(names) == "+0.26 [+0.17, +0.34]"


def test_a_file_is_one_row_of_a_table_whatever_name_a_result_recorded() -> None:
    """Ids move to the name their file ships under now; bots and current names stay."""
    assert results_tables.current_id("block-partnership@f018eba4") == (
        "block-partnership-stage1@f018eba4"
    )
    assert results_tables.current_id("block-partnership@0f2fe29b") == (
        "block-partnership-scratch@0f2fe29b"
    )
    for same in ("block-partnership@6e8217f3", "block-4p@34e65c11", "rules", "pimc-20"):
        assert results_tables.current_id(same) == same


MENTION_RE = re.compile(r"docs/results/[\w@.+/-]+\.(?:json|csv)")
OLD_PATHS = re.compile(
    r"docs/lineups/|lineups/\w|docs/(?:curve_table|expected_margins|ladder_sanity|ladder_tables"
    r"|pimc_decision_time)\.py|docs/(?:ladder_[234]p|nashconv_n\w+|time_to_strength_2p)\.json"
    r"|distributed/\w+\.json"
)


def _texts() -> list[Path]:
    paths = [ROOT / "README.md", ROOT / "mkdocs.yml", *sorted((ROOT / "docs").rglob("*.md"))]
    paths += sorted((ROOT / "tools").glob("*.py")) + sorted((ROOT / ".ci").glob("*"))
    return [p for p in paths if p.is_file()]


def test_pages_name_result_files_that_exist_and_no_old_paths() -> None:
    for path in _texts():
        text = path.read_text(encoding="utf-8")
        old = OLD_PATHS.findall(text)
        assert not old, f"{path.relative_to(ROOT)} names moved paths: {old}"
        for mention in MENTION_RE.findall(text):
            assert (ROOT / mention).is_file(), f"{path.relative_to(ROOT)}: {mention} is missing"
