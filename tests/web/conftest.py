"""Game records for the web tests: whole games of the baseline bots, recorded."""

from __future__ import annotations

from typing import Any

import pytest

import agents
import block_env
from block_env.records import RecordingWrapper


def play_record(seed: int = 3, **config: Any) -> dict[str, Any]:
    """The record of a whole game of greedy and rule bots (seats alternating)."""
    n = config.get("num_players", 2)
    labels = ["greedy" if s % 2 == 0 else "rules" for s in range(n)]
    env = RecordingWrapper(block_env.raw_env(**config), players=labels)
    env.reset(seed=seed)
    bots = {a: agents.make(labels[i]) for i, a in enumerate(env.possible_agents)}
    while not env.unwrapped.game.episode_over:
        seat = env.agent_selection
        env.step(bots[seat].act(env.observe(seat)))
    return env.record


@pytest.fixture(scope="session")
def match_record() -> dict[str, Any]:
    """A 2-player match to 40 points: several hands."""
    return play_record(seed=3, num_players=2, target_score=40)


@pytest.fixture(scope="session")
def partnership_record() -> dict[str, Any]:
    """A partnership game of one hand."""
    return play_record(seed=5, num_players=4, partnership=True, episode="hand")
