"""The omniscient ceiling: ``agents.make("omniscient", env=env)``.

It reads the true deal from the environment it is given (``env.unwrapped.game``, the
privileged rules state) and plays the exact solver's best move for the current hand's
points margin. It is never a fair opponent: it measures how far a policy is from perfect
play, and an honest policy that beats it signals a leak of hidden information.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from agents.solver import position_from_state, solve
from block_env import rules


class OmniscientAgent:
    """Plays the perfect-information best move of the seat to act in ``env``."""

    def __init__(self, env: Any = None) -> None:
        if env is None or not hasattr(getattr(env, "unwrapped", env), "game"):
            raise ValueError(
                f"env={env!r} is not allowed: pass the block-env environment (raw_env or "
                "env()) whose game this agent plays"
            )
        self.env = env

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        legal = np.flatnonzero(observation["action_mask"])
        if legal.size == 0:
            raise ValueError("the action mask holds no legal action: this seat is not on turn")
        if legal.size == 1:
            return int(legal[0])
        base = getattr(self.env, "unwrapped", self.env)
        state = base.game
        if state is None or state.result is not None:
            raise ValueError("the environment has no hand in progress: call reset() first")
        if set(rules.legal_actions(state)) != {int(a) for a in legal}:
            raise ValueError(
                "the observation's action mask does not match the seat to act in the env's "
                f"game (seat {state.current}): was this agent given another environment?"
            )
        return solve(base.config, position_from_state(state)).action
