"""The agent registry: this package's agents by name, and agents that another package (an
integration) adds without ``agents`` naming it, by ``agents.register`` when it is imported or
by an entry point of the group ``block_env.agents``; ``agents.make`` and the agent specs
build both."""

from __future__ import annotations

import ast
import importlib
import re
import sys
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

import agents
from block_env.agent_specs import SetupError, build_agent

ROOT = Path(__file__).resolve().parents[2]
FAKE_INTEGRATION = """
import agents
from agents.baselines import RandomAgent

calls = []


def make_agent(seed=None, tag="plain"):
    calls.append(tag)
    return RandomAgent(seed=seed)


agents.register("fake-integration", f"{__name__}:make_agent")
"""


@pytest.fixture
def fake_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The name of an importable module that registers the agent ``fake-integration`` when
    imported (not imported yet); the registry is restored afterwards."""
    name = f"fake_integration_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(FAKE_INTEGRATION, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(agents.REGISTRY, "_entries", dict(agents.REGISTRY._entries))
    monkeypatch.setattr(agents.REGISTRY, "_plugins", None)
    yield name
    sys.modules.pop(name, None)


def test_an_integration_registers_itself_when_imported(fake_module: str) -> None:
    assert "fake-integration" not in agents.REGISTRY
    with pytest.raises(ValueError, match="unknown agent 'fake-integration'"):
        agents.make("fake-integration")
    module = importlib.import_module(fake_module)
    assert agents.REGISTRY["fake-integration"] == f"{fake_module}:make_agent"
    assert hasattr(agents.make("fake-integration", seed=3), "act")
    assert hasattr(build_agent("fake-integration:tag='spec'", seed=1), "act")
    assert module.calls == ["plain", "spec"]
    importlib.reload(module)  # registering the same target again is allowed
    assert agents.REGISTRY["fake-integration"] == f"{fake_module}:make_agent"


def test_an_entry_point_is_found_without_importing_its_module(
    fake_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    declared = [EntryPoint("fake-plugin", f"{fake_module}:make_agent", agents.ENTRY_POINT_GROUP)]
    asked = []

    def entry_points(group: str) -> list[EntryPoint]:
        asked.append(group)
        return declared

    monkeypatch.setattr(agents, "entry_points", entry_points)
    assert "greedy" in agents.REGISTRY and not asked  # the package's own: no metadata read
    assert "fake-plugin" in agents.REGISTRY and "fake-plugin" in sorted(agents.REGISTRY)
    assert fake_module not in sys.modules
    assert hasattr(build_agent("fake-plugin:tag='ep'", seed=0), "act")
    assert sys.modules[fake_module].calls == ["ep"]
    assert hasattr(agents.make("fake-plugin"), "act")
    assert asked == [agents.ENTRY_POINT_GROUP]  # read once
    with pytest.raises(ValueError, match="already registered"):
        agents.register("fake-plugin", "agents.baselines:GreedyAgent")
    agents.REGISTRY["fake-plugin"] = "agents.baselines:GreedyAgent"  # set here: it wins
    assert type(agents.make("fake-plugin")).__name__ == "GreedyAgent"


@pytest.mark.parametrize(
    ("name", "target", "message"),
    [
        ("x", "agents.baselines", "is not 'package.module:factory'"),
        ("x", "agents.baselines:Greedy Agent", "is not 'package.module:factory'"),
        ("x", 3, "is not 'package.module:factory'"),
        ("x:y", "agents.baselines:GreedyAgent", "agent name 'x:y' is not allowed"),
        ("", "agents.baselines:GreedyAgent", "agent name '' is not allowed"),
        ("greedy", "agents.baselines:RandomAgent", "'greedy' is already registered"),
    ],
)
def test_register_refuses_a_bad_or_taken_name(
    fake_module: str, name: object, target: object, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        agents.register(name, target)  # type: ignore[arg-type]
    assert agents.REGISTRY["greedy"] == "agents.baselines:GreedyAgent"


def test_an_unknown_agent_names_the_registered_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown agent 'nobody': use one of .*greedy"):
        agents.make("nobody")
    with pytest.raises(SetupError, match="registered agents: .*greedy"):
        build_agent("nobody")


def test_the_registry_names_only_this_package_and_rllib_is_an_entry_point() -> None:
    """``agents`` names none of its users; block-env's RLlib agent is declared in the
    packaging metadata, pointing at a function that exists (checked without importing Ray)."""
    assert all(t.startswith("agents.") for t in agents.REGISTRY._entries.values())
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split('[project.entry-points."block_env.agents"]', 1)[1].split("\n[", 1)[0]
    declared = dict(re.findall(r'^([\w-]+) = "([\w.:]+)"', section, re.M))
    assert declared == {"rllib": "block_env.integrations.rllib:load_agent"}
    module, factory = declared["rllib"].split(":")
    tree = ast.parse((ROOT / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8"))
    assert factory in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
