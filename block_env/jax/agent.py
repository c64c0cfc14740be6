"""A ``block_env.jax.ppo`` policy file as an agent: ``act(observation) -> int``.

As an agent spec: ``block_env.jax.agent:load_agent:path=policy.msgpack`` (``block-env
evaluate``, ``block-env benchmark``, ``block_env.play``). The agent plays the legal action
with the highest logit (greedy). Its ``game`` is the configuration the file was trained
for, so the evaluation's fit check applies to it as to any trained policy, and
``load_agent`` given the env it will play refuses a file made for another game.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import numpy as np

from block_env.agent_specs import check_game
from block_env.config import BlockConfig
from block_env.jax.ppo import load_policy

__all__ = ["JaxPolicyAgent", "load_agent"]


class JaxPolicyAgent:
    """Greedy play of a flax actor-critic over the legal actions of an AEC observation."""

    obs_type = "observation"

    def __init__(self, path: str | Path) -> None:
        net, params, header = load_policy(path)
        self.name = f"jax-ppo:{Path(path).name}"
        self.game: dict[str, Any] = dict(header["game"])
        self.header = header
        self._apply = jax.jit(net.apply)
        self._params = params
        BlockConfig(**self.game)  # a malformed recorded game raises ValueError here

    def act(self, observation: dict[str, Any]) -> int:
        """The legal action with the highest logit for ``observe(agent)``'s dict."""
        obs = np.asarray(observation["observation"], np.float32)[None]
        mask = np.asarray(observation["action_mask"], bool)[None]
        if not mask.any():
            raise ValueError("no legal action in the observation's action_mask")
        logits, _ = self._apply(self._params, obs, mask)
        logits = np.where(mask[0], np.asarray(logits[0]), -np.inf)
        return int(np.argmax(logits))

    def __repr__(self) -> str:
        return f"JaxPolicyAgent({self.name!r}, game={self.game!r})"


def load_agent(path: str, env: Any = None) -> JaxPolicyAgent:
    """The agent of the policy file ``path``. With ``env`` (an AEC env; evaluations pass the
    one they play), a file trained for another game raises a ValueError naming both
    configurations, as ``block-env evaluate`` refuses a policy for another game."""
    agent = JaxPolicyAgent(path)
    if env is not None:
        config = getattr(getattr(env, "unwrapped", env), "config", None)
        if isinstance(config, BlockConfig):
            check_game(agent, agent.name, config)
    return agent
