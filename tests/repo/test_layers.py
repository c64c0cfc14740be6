"""The package's layers, as ARCHITECTURE.md lists them: every import in ``block_env/`` and
``agents/`` (at module level or inside a function) reaches only its own layer or the layers
above it, so there are no cycles and nothing imports upward."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def layers() -> list[list[str]]:
    """The module prefixes of each numbered layer of ARCHITECTURE.md, in order."""
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    items = re.split(r"\n(?=\d+\. )", section)
    found = []
    for item in items:
        if not re.match(r"\d+\. ", item):
            continue
        paths = re.findall(r"`((?:block_env|agents)[\w/]*(?:\.py|/)?)`", item)
        found.append([p.removesuffix(".py").removesuffix("/").replace("/", ".") for p in paths])
    return found


def layer_of(module: str, table: list[list[str]]) -> int | None:
    """The layer whose longest prefix names ``module`` (None: the package root or outside)."""
    best: tuple[int, int] | None = None
    for i, prefixes in enumerate(table):
        for prefix in prefixes:
            named = module == prefix or module.startswith(prefix + ".")
            if named and (best is None or len(prefix) > best[1]):
                best = (i, len(prefix))
    return None if best is None else best[0]


def imports_of(path: Path) -> list[tuple[str, int]]:
    """(module, line) of every absolute import in the file; ``from block_env import x``
    counts as importing ``block_env.x``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module in ("block_env", "agents"):
                out += [(f"{node.module}.{a.name}", node.lineno) for a in node.names]
            else:
                out.append((node.module, node.lineno))
    return out


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def test_architecture_lists_every_module_in_one_layer() -> None:
    table = layers()
    assert len(table) >= 8 and all(table)
    sources = sorted([*(ROOT / "block_env").rglob("*.py"), *(ROOT / "agents").rglob("*.py")])
    unplaced = [
        module_name(p)
        for p in sources
        if module_name(p) not in ("block_env", "agents") and layer_of(module_name(p), table) is None
    ]
    assert not unplaced, f"modules ARCHITECTURE.md does not place in a layer: {unplaced}"


def test_no_module_imports_a_layer_below_it() -> None:
    table = layers()
    upward = []
    for path in sorted([*(ROOT / "block_env").rglob("*.py"), *(ROOT / "agents").rglob("*.py")]):
        me = layer_of(module_name(path), table)
        for module, line in imports_of(path):
            theirs = layer_of(module, table)
            if me is not None and theirs is not None and theirs > me:
                upward.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not upward, "imports against ARCHITECTURE.md's layers:\n" + "\n".join(upward)


def test_no_test_folder_shadows_a_package() -> None:
    """``pytest`` puts ``tests/`` on ``sys.path`` (for its conftest): a test folder named like a
    top-level package (``tests/agents``) would be imported instead of it."""
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    folders = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir()}
    assert packages and not packages & folders, sorted(packages & folders)
