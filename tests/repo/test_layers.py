"""The package's layers, as ARCHITECTURE.md lists them, and its import graph: every import in
``block_env/`` and ``agents/`` (at module level or inside a function, or a module named in a
string for ``import_module`` or a registry, ``"agents.baselines:RandomAgent"``) reaches only
its own layer or the layers above it, and no chain of them comes back to where it started,
inside a layer or across layers."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("block_env", "agents")
# a string naming a module of the package: "pkg.mod", "pkg.mod:attr" or an agent spec
# "pkg.mod:factory:key=value"; one name alone (``"agents"``) is a word, not a module
MODULE_STRING = re.compile(
    r"((?:block_env|agents)(?:\.\w+)*):\w+(?::.*)?|((?:block_env|agents)(?:\.\w+)+)", re.S
)


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


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources() -> dict[str, Path]:
    """Every module of ``block_env/`` and ``agents/`` by dotted name."""
    paths = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    return {module_name(p): p for p in sorted(paths)}


def named_module(name: str, modules: set[str]) -> str | None:
    """The module of the package that importing ``name`` runs last: ``name`` itself or its
    longest prefix that is a module (``block_env.config.BlockConfig`` -> ``block_env.config``).
    The parent packages it also imports are not counted: a package naming its own modules
    (``agents``' registry) would otherwise be a circle by construction."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def module_in_string(node: ast.AST) -> str | None:
    """The dotted module a string constant (or an f-string's leading constant, for an agent
    spec ``f"pkg.mod:factory:path={x}"``) names, None for any other text."""
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
            return None
        found = re.match(r"((?:block_env|agents)(?:\.\w+)+):\w+:", first.value)
        return found[1] if found else None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        found = MODULE_STRING.fullmatch(node.value)
        return (found[1] or found[2]) if found else None
    return None


def imports_of(path: Path, me: str, modules: set[str]) -> list[tuple[str, int]]:
    """(module, line) of every module in ``modules`` that the file of module ``me`` imports, at
    any depth, or names in a string; ``from block_env import x`` imports ``block_env.x`` when
    that is a module, else ``block_env`` itself."""
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    strings = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up level - 1
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            names = [f"{base}.{a.name}" for a in node.names]
        elif id(node) not in strings and (named := module_in_string(node)):
            names = [named]
        for name in names:
            target = named_module(name, modules)
            if target is not None and target != me:
                out.append((target, node.lineno))
    return out


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {module it imports: the first line that does}."""
    modules = sources()
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        edges = graph.setdefault(name, {})
        for target, line in imports_of(path, name, set(modules)):
            edges[target] = min(line, edges.get(target, line))
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One circle ``[a, b, ..., a]`` through each group of modules that reach each other
    (Tarjan's strongly connected components, then a shortest way back to the first)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_circle_through(group[0], set(group), graph) for group in groups]


def _circle_through(start: str, group: set[str], graph: dict[str, dict[str, int]]) -> list[str]:
    """The shortest chain of imports from ``start`` back to it, inside ``group``."""
    paths = {w: [start, w] for w in graph[start] if w in group}
    frontier = list(paths)
    while start not in paths:
        nxt = []
        for v in frontier:
            for w in graph[v]:
                if w in group and w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return paths[start]


def describe(circle: list[str], graph: dict[str, dict[str, int]]) -> str:
    """``a (line 3) -> b (line 9) -> a``: each import with the line that makes it."""
    steps = [f"{a} (line {graph[a][b]})" for a, b in zip(circle, circle[1:])]
    return " -> ".join([*steps, circle[-1]])


def test_architecture_lists_every_module_in_one_layer() -> None:
    table = layers()
    assert len(table) >= 8 and all(table)
    unplaced = [
        name for name in sources() if name not in PACKAGES and layer_of(name, table) is None
    ]
    assert not unplaced, f"modules ARCHITECTURE.md does not place in a layer: {unplaced}"


def test_no_module_imports_a_layer_below_it() -> None:
    table = layers()
    upward = []
    for name, edges in import_graph().items():
        me = layer_of(name, table)
        for module, line in edges.items():
            theirs = layer_of(module, table)
            if me is not None and theirs is not None and theirs > me:
                upward.append(f"{sources()[name].relative_to(ROOT)}:{line} imports {module}")
    assert not upward, "imports against ARCHITECTURE.md's layers:\n" + "\n".join(upward)


def test_no_import_circle() -> None:
    graph = import_graph()
    found = cycles(graph)
    assert not found, "import circles:\n" + "\n".join(describe(c, graph) for c in found)


def test_the_graph_sees_lazy_imports_and_module_strings(tmp_path: Path) -> None:
    """The circle finder's own check: a function-level import, an ``import_module`` string,
    a registry string and an agent spec's f-string each make an edge, a docstring or a word
    does not, and a circle made of them is reported with its path."""
    mods = {"agents", "agents.a", "agents.b", "agents.c", "block_env.d"}
    src = {
        "a": "def f():\n    from agents import b\n",
        "b": 'import importlib\nX = importlib.import_module("agents.c")\n',
        "c": '"""agents.a is named here."""\nR = {"x": "agents.a:make", "y": "agents"}\n'
        'S = f"block_env.d:make:path={R}"\n',
    }
    graph = {}
    for name, text in src.items():
        path = tmp_path / "agents" / f"{name}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        graph[f"agents.{name}"] = dict(imports_of(path, f"agents.{name}", mods))
    assert graph == {
        "agents.a": {"agents.b": 2},
        "agents.b": {"agents.c": 2},
        "agents.c": {"agents.a": 2, "block_env.d": 3},
    }
    assert cycles(graph) == [["agents.a", "agents.b", "agents.c", "agents.a"]]
    assert describe(cycles(graph)[0], graph) == (
        "agents.a (line 2) -> agents.b (line 2) -> agents.c (line 2) -> agents.a"
    )
    assert cycles({"x": {"y": 1}, "y": {}}) == []


def test_no_test_folder_shadows_a_package() -> None:
    """``pytest`` puts ``tests/`` on ``sys.path`` (for its conftest): a test folder named like a
    top-level package (``tests/agents``) would be imported instead of it."""
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    folders = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir()}
    assert packages and not packages & folders, sorted(packages & folders)
