"""Agents for block-env: baselines, search agents and trained policies.

Every agent has ``act(observation) -> int`` where ``observation`` is the dict returned by
``env.observe(agent)`` (the int8 ``action_mask`` is inside). ``make(name, **kwargs)`` builds
one by name; modules are imported only when their agent is asked for.

``REGISTRY`` names this package's agents. Another package (an integration, a user's own
agents) adds its agents without this one naming it: it calls ``register(name,
"module:factory")`` when it is imported, or declares ``name = "module:factory"`` as an entry
point of the group ``block_env.agents`` in its packaging metadata, read the first time a name
is not found (block-env's RLlib agent, ``rllib``, is declared so; nothing is imported until
the agent is built).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, MutableMapping
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any

from agents.base import Agent

ENTRY_POINT_GROUP = "block_env.agents"
_TARGET = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")


class Registry(MutableMapping[str, str]):
    """Agent name -> ``"module:factory"`` (the factory takes the keyword arguments given to
    ``make``): the entries set here, then the entry points of ``ENTRY_POINT_GROUP`` of the
    installed packages, read once, the first time a name is not among the entries. An entry
    set here wins over an entry point of the same name."""

    def __init__(self, entries: dict[str, str]) -> None:
        self._entries: dict[str, str] = {}
        self._plugins: dict[str, str] | None = None
        self.update(entries)

    def plugins(self) -> dict[str, str]:
        """The agents the installed packages declare as entry points (read once)."""
        if self._plugins is None:
            found = entry_points(group=ENTRY_POINT_GROUP)
            self._plugins = {ep.name: ep.value for ep in found}
        return self._plugins

    def __getitem__(self, name: str) -> str:
        if name in self._entries:
            return self._entries[name]
        return self.plugins()[name]

    def __setitem__(self, name: str, target: str) -> None:
        if not isinstance(name, str) or not name or ":" in name:
            raise ValueError(f"agent name {name!r} is not allowed: a non-empty string without ':'")
        if not isinstance(target, str) or not _TARGET.fullmatch(target):
            raise ValueError(
                f"agent {name!r}: {target!r} is not 'package.module:factory' (an importable "
                "module and the name of a callable in it)"
            )
        self._entries[name] = target

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter({**self.plugins(), **self._entries})

    def __len__(self) -> int:
        return len({**self.plugins(), **self._entries})


REGISTRY = Registry(
    {
        "random": "agents.baselines:RandomAgent",
        "greedy": "agents.baselines:GreedyAgent",
        "rules": "agents.baselines:RuleAgent",
        "pimc": "agents.pimc:PIMCAgent",
        "omniscient": "agents.omniscient:OmniscientAgent",
        "guided": "agents.guided:GuidedSearchAgent",  # guided:policy=block-2p,worlds=50,weight=2
        "block-2p-search": "agents.guided:block_2p_search",  # the 2-player preset
        "block-partnership-search": "agents.guided:block_partnership_search",
    }
)


def register(name: str, target: str) -> None:
    """Make ``name`` build the agent ``target`` (``"package.module:factory"``; the module is
    imported when the agent is first built). Registering a name again with the same target
    does nothing; ValueError for a malformed name or target, or a name that already builds
    another agent."""
    if name in REGISTRY and REGISTRY[name] != target:
        raise ValueError(f"agent {name!r} is already registered as {REGISTRY[name]!r}")
    REGISTRY[name] = target


def make(name: str, **kwargs: Any) -> Agent:
    """Build a registered agent by name, e.g. ``make("greedy")`` or ``make("random", seed=0)``."""
    if name not in REGISTRY:
        raise ValueError(f"unknown agent {name!r}: use one of {', '.join(sorted(REGISTRY))}")
    module, factory = REGISTRY[name].split(":")
    return getattr(import_module(module), factory)(**kwargs)


def load(name_or_path: str, **kwargs: Any) -> Agent:
    """A trained policy agent: a shipped name (``agents.policy_files.SHIPPED``: ``"block-2p"``,
    ``"block-3p"``, ``"block-4p"``, ``"block-partnership"``, ...) or a policy/checkpoint path;
    keywords go to ``agents.policy.load`` (needs torch). The agent's ``game`` is the env
    configuration it was trained for (None when the file does not record it).
    FileNotFoundError when missing; ValueError naming the file when it is not a policy or
    checkpoint (empty, text, truncated, a pickle that would run code)."""
    return import_module("agents.policy").load(name_or_path, **kwargs)


__all__ = ["ENTRY_POINT_GROUP", "REGISTRY", "Agent", "Registry", "load", "make", "register"]
