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
    "pimc": "agents.pimc:PIMCAgent",
    "omniscient": "agents.omniscient:OmniscientAgent",
    "guided": "agents.guided:GuidedSearchAgent",  # guided:policy=block-2p,worlds=50,weight=2
    "block-2p-search": "agents.guided:block_2p_search",  # the 2-player preset
    "block-partnership-search": "agents.guided:block_partnership_search",
    "rllib": "block_env.integrations.rllib:load_agent",  # rllib:path=RUN_OR_CHECKPOINT
}


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


__all__ = ["REGISTRY", "Agent", "load", "make"]
