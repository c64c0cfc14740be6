"""The repository stands on its own in a user's clone: no file cites material outside it (a
sibling shared folder, tracker issue numbers, paths of one machine), every relative link in
the markdown files resolves inside the repository, and the README opens with the two
commands it promises."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The patterns are assembled from pieces so that this file does not match them itself.
_SHARED = re.escape("..") + "/" + "shared"
_ISSUE = r"\b[Ii]ss" + r"ues?\s*#?\s*\d+"
_MACHINE_PATHS = "|".join(
    [
        "/" + r"work/",
        "/" + r"tmp/[\w./-]*\.lock\b",
        "/" + r"root/",
        "/" + r"home/",
    ]
)
FORBIDDEN = {
    "a sibling shared folder": re.compile(_SHARED),
    "an issue number": re.compile(_ISSUE),
    "a machine-specific path": re.compile(_MACHINE_PATHS),
}

SKIP_DIRS = {".git", "__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis", "runs"}
SKIP_DIR_PATTERNS = (re.compile(r"^\.?venv"), re.compile(r"\.egg-info$"), re.compile("^build$"))


def repo_files() -> list[str]:
    """Repository files as posix paths relative to ROOT: what git tracks plus untracked files
    it does not ignore (so new files are checked before their first commit); without git, a
    walk of the tree that skips virtual environments, caches and run folders."""
    if shutil.which("git") and (ROOT / ".git").exists():
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode("utf-8")
        return sorted({p for p in out.split("\0") if p and (ROOT / p).is_file()})
    found = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [
            d
            for d in dirnames
            if d not in SKIP_DIRS and not any(p.search(d) for p in SKIP_DIR_PATTERNS)
        ]
        for name in filenames:
            found.append((Path(dirpath) / name).relative_to(ROOT).as_posix())
    return sorted(found)


def text_of(path: str) -> str | None:
    """The file's text, or None for binary files (NUL bytes or not UTF-8)."""
    data = (ROOT / path).read_bytes()
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def outside_references(text: str) -> list[tuple[int, str, str]]:
    """(line number, what was found, the line) for every line citing something outside."""
    hits = []
    for number, line in enumerate(text.splitlines(), start=1):
        for what, pattern in FORBIDDEN.items():
            if pattern.search(line):
                hits.append((number, what, line.strip()))
    return hits


FILES = repo_files()


def test_the_file_list_is_the_repository() -> None:
    for expected in ("README.md", "pyproject.toml", "block_env/rules.py", "docs/RULES.md"):
        assert expected in FILES
    assert not any(".venv" in f.split("/")[0] for f in FILES)


def test_the_scanner_flags_what_it_should() -> None:
    bad = [
        "see the " + ".." + "/sha" + "red/RULES.md file",
        "fixed for " + "iss" + "ue 8",
        "as " + "Iss" + "ue #12 asks",
        "lock " + "/" + "tmp/heavy.lock first",
        "cd " + "/" + "work/main",
        "in " + "/" + "root/.cache",
        "at " + "/" + "home/user/x",
    ]
    for line in bad:
        assert outside_references(line), line
    good = [
        "see docs/RULES.md",
        "the tiss" + "ue 8 cm",
        "greedy#2 plays itself",
        "a lock file in the run folder: runs/2p/.lock",
        "tmp_path / 'run.lock'",
        "issues are tracked elsewhere",
    ]
    for line in good:
        assert not outside_references(line), line


def test_no_file_cites_anything_outside_the_repository() -> None:
    problems = []
    for path in FILES:
        text = text_of(path)
        if text is None:
            continue
        for number, what, line in outside_references(text):
            problems.append(f"{path}:{number}: {what}: {line[:120]}")
    assert not problems, "files cite material outside the repository:\n" + "\n".join(problems)


# ------------------------------------------------------------------ markdown links

LINK_RE = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE_RE = re.compile(r"^\s*(```|~~~)")
MARKDOWN = [f for f in FILES if f.endswith(".md")]


def relative_links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every relative link outside fenced code blocks."""
    links = []
    in_fence = False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE_RE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for target in LINK_RE.findall(line):
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
                continue  # a URL (https:, mailto:) or an anchor in the same page
            links.append((number, target))
    return links


def test_markdown_files_are_checked() -> None:
    assert "README.md" in MARKDOWN and "docs/RULES.md" in MARKDOWN


def _known_dirs(files: list[str]) -> set[str]:
    dirs = set()
    for f in files:
        parent = Path(f).parent
        while parent.as_posix() not in ("", "."):
            dirs.add(parent.as_posix())
            parent = parent.parent
    return dirs


def link_problems(path: str, text: str, files: list[str]) -> list[str]:
    """'file:line: why' for each relative link of markdown file ``path`` (its ``text``) that
    leaves the repository or names neither a file nor a folder of ``files``."""
    known, known_dirs = set(files), _known_dirs(files)
    broken = []
    for number, target in relative_links(text):
        plain = target.split("#", 1)[0].split("?", 1)[0]
        if not plain:
            continue
        resolved = ((ROOT / path).parent / plain).resolve()
        try:
            rel = resolved.relative_to(ROOT).as_posix()
        except ValueError:
            broken.append(f"{path}:{number}: {target} leaves the repository")
            continue
        if rel not in known and rel not in known_dirs:
            broken.append(f"{path}:{number}: {target} is not a file of the repository")
    return broken


def test_relative_markdown_links_resolve_inside_the_repository() -> None:
    # One test over all files (not one per file): the file list must not shape collection,
    # so that parallel workers always collect the same tests.
    broken = [p for path in MARKDOWN for p in link_problems(path, text_of(path) or "", FILES)]
    assert not broken, "\n".join(broken)


def test_link_checker_catches_broken_links() -> None:
    outside = ".." + "/sha" + "red/RULES.md"
    text = (
        f"see [the rules]({outside}), [ok](docs/RULES.md), [dir](docs/), [gone](docs/nope.md)"
        "\n[web](https://pettingzoo.farama.org) [top](#speed)\n```\n[x](y)\n```\n"
    )
    assert relative_links(text) == [
        (1, outside),
        (1, "docs/RULES.md"),
        (1, "docs/"),
        (1, "docs/nope.md"),
    ]
    assert link_problems("README.md", text, FILES) == [
        f"README.md:1: {outside} leaves the repository",
        "README.md:1: docs/nope.md is not a file of the repository",
    ]


# ------------------------------------------------------------------ README's first lines


def test_readme_opens_with_what_it_is_then_the_commands() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "# block-env"
    first = next(i for i, line in enumerate(lines[1:], start=1) if line.strip())
    assert lines[first].startswith("block-env is "), "the first sentence says what it is"
    fence = next(i for i, line in enumerate(lines) if line.startswith("```"))
    assert first < fence and "." in " ".join(lines[first:fence]), "one sentence, then code"
    assert fence + 3 < 12, "the two commands must be within the README's first 12 lines"
    install, test = lines[fence + 1], lines[fence + 2]
    assert "pip install" in install and 'torch==2.13.0 -e ".[train,dev]"' in install
    _, sep, args = install.rstrip().rpartition("python train.py")
    assert sep and args.strip() == "nproc=2", "the main job: the default config on two ranks"
    from block_env.training.config import load_config

    assert load_config(None, args.split()).nproc == 2  # a valid config for the ranks
    assert test.rstrip().endswith("pytest -n 2")
    assert lines[fence + 3].startswith("```")
    ci = ROOT / ".ci" / "run"
    if ci.exists():  # the README says CI runs the same test command
        assert "pytest -n 2" in ci.read_text(encoding="utf-8")


# ------------------------------------------------------------------ README and the docs site

README_MAX_LINES = 200


def test_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines; reference text belongs in docs/ (the site)"
    )


def test_readme_links_name_files() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    known = set(FILES)
    missing = []
    for number, target in relative_links(text):
        plain = target.split("#", 1)[0]
        rel = ((ROOT / plain).resolve()).relative_to(ROOT).as_posix() if plain else ""
        if plain and rel not in known:
            missing.append(f"README.md:{number}: {target}")
    assert not missing, "README links that name no file:\n" + "\n".join(missing)


def _readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Using the environment", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the README's environment example is a python code block"
    return match.group(1)


def test_readme_example_runs(capsys) -> None:
    code = _readme_example()
    assert "agent_iter()" in code and len(code.splitlines()) <= 16
    exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
    scores = capsys.readouterr().out.strip()
    assert scores.startswith("[") and scores.endswith("]"), scores


def _nav_pages(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [p for item in node for p in _nav_pages(item)]
    if isinstance(node, dict):
        return [p for value in node.values() for p in _nav_pages(value)]
    return []


def _mkdocs_config() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))


def test_every_nav_page_exists_and_every_page_is_in_the_nav() -> None:
    config = _mkdocs_config()
    assert config["docs_dir"] == "docs" and config.get("strict") is True
    nav = _nav_pages(config["nav"])
    assert len(nav) == len(set(nav)), "a page listed twice in the nav"
    missing = [p for p in nav if f"docs/{p}" not in FILES]
    assert not missing, f"nav pages that are not files: {missing}"
    pages = {f[len("docs/") :] for f in FILES if f.startswith("docs/") and f.endswith(".md")}
    assert not pages - set(nav), f"docs pages left out of the nav: {sorted(pages - set(nav))}"
    for expected in ("index.md", "RULES.md", "environment.md", "training.md", "results.md"):
        assert expected in nav


def test_api_pages_name_modules_of_the_repository() -> None:
    api = sorted(f for f in FILES if f.startswith("docs/api/") and f.endswith(".md"))
    assert {Path(f).stem for f in api} >= {
        "env",
        "rules",
        "batched",
        "agents",
        "training",
        "evaluation",
    }
    for page in api:
        modules = re.findall(r"^::: ([\w.]+)\s*$", text_of(page) or "", re.M)
        assert modules, f"{page} documents no module"
        for module in modules:
            path = module.replace(".", "/")
            assert f"{path}.py" in FILES or f"{path}/__init__.py" in FILES, (page, module)


def test_ci_builds_the_docs_strictly() -> None:
    script = (ROOT / ".ci" / "extra-docs").read_text(encoding="utf-8")
    assert '".[docs]"' in script and "mkdocs build --strict" in script
    assert ".ci/extra-docs" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
