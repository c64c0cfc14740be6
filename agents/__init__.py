"""Agents for block-env: baselines, search agents and trained policies.

Every agent has ``act(observation) -> int`` where ``observation`` is the dict returned by
``env.observe(agent)`` (the int8 ``action_mask`` is inside). ``make(name, **kwargs)`` builds
one by name; modules are imported only when their agent is asked for.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from agents.base import Agent

# name -> "module:factory"; the factory takes the keyword arguments given to make().
REGISTRY: dict[str, str] = {
    "random": "agents.baselines:RandomAgent",
    "greedy": "agents.baselines:GreedyAgent",
    "rules": "agents.baselines:RuleAgent",
}


def make(name: str, **kwargs: Any) -> Agent:
    """Build a registered agent by name, e.g. ``make("greedy")`` or ``make("random", seed=0)``."""
    if name not in REGISTRY:
        raise ValueError(f"unknown agent {name!r}: use one of {', '.join(sorted(REGISTRY))}")
    module, factory = REGISTRY[name].split(":")
    return getattr(import_module(module), factory)(**kwargs)


__all__ = ["REGISTRY", "Agent", "make"]
