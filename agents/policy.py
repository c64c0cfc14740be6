"""Trained policies as agents: ``PolicyAgent`` plays a network, ``load`` makes one from a
shipped name, a policy file or a training checkpoint. The network is ``agents.network``, the
file format ``agents.policy_files``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.network import ActorCritic, sample_actions
from agents.policy_files import SHIPPED, game_config, read_policy_file
from block_env.config import BlockConfig


class PolicyAgent:
    """Plays a trained network: ``act(observation) -> int`` on one observation dict, and
    ``act_batch(obs, mask)`` on arrays of many (used for fast training opponents).
    ``game`` is the env configuration the network was trained for (``game_config`` keys),
    None when unknown; evaluations use it to refuse a policy made for another game.
    ``obs_type`` (the network's) says which observation it plays on: evaluations make the
    env with ``obs_type="information_state"`` when an agent's ``obs_type`` is that, and
    hand every other agent the plain observation."""

    def __init__(
        self,
        model: ActorCritic,
        device: str | torch.device = "cpu",
        greedy: bool = True,
        seed: int | None = None,
        name: str | None = None,
        game: Mapping[str, Any] | BlockConfig | None = None,
    ) -> None:
        self.game: dict[str, Any] | None = None if game is None else game_config(game)
        self.model = model.to(device).eval()
        self.obs_type: str = model.obs_type
        self.device = torch.device(device)
        self.greedy = greedy
        self.name = name or "policy"
        self.generator = torch.Generator(device=self.device)
        if seed is not None:
            self.generator.manual_seed(seed)

    def reseed(self, seed: int) -> None:
        """Restart the sampling generator from ``seed`` (no effect on greedy play)."""
        self.generator.manual_seed(seed)

    @torch.no_grad()
    def act_batch(self, obs: np.ndarray | torch.Tensor, mask: np.ndarray | torch.Tensor) -> Any:
        """Actions for a batch: numpy in, numpy out; torch in, torch out (on the same device).
        An information-state policy takes full or summarised information states."""
        is_np = not isinstance(obs, torch.Tensor)
        if obs.shape[-1] not in (self.model.input_dim, self.model.summary_dim):
            raise ValueError(self._wrong_length(obs.shape[-1]))
        o = torch.as_tensor(obs, dtype=torch.float32, device=self.device)
        m = torch.as_tensor(mask, device=self.device)
        masked = self.model.masked_logits(o, m)
        actions = sample_actions(masked, self.generator, self.greedy)
        return actions.cpu().numpy() if is_np else actions

    @torch.no_grad()
    def probabilities(self, observation: Mapping[str, np.ndarray]) -> np.ndarray:
        """The network's action probabilities for one observation dict (0 on illegal
        actions): what ``act`` samples from, or takes the argmax of when greedy."""
        obs, mask = self._single(observation)
        o = torch.as_tensor(obs, device=self.device)
        logits = self.model.masked_logits(o, torch.as_tensor(mask, device=self.device))
        return torch.softmax(logits.float(), dim=-1)[0].cpu().numpy()

    def _single(self, observation: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """One observation dict as a batch of one (observation, mask), checked."""
        obs = np.asarray(observation["observation"], dtype=np.float32)[None]
        if obs.shape[-1] != self.model.input_dim:
            raise ValueError(self._wrong_length(obs.shape[-1]))
        mask = np.asarray(observation["action_mask"])[None]
        if not mask.any():
            raise ValueError("the action mask holds no legal action: this seat is not on turn")
        return obs, mask

    def _wrong_length(self, got: int) -> str:
        """The refusal of observations of length ``got``, naming what this policy reads."""
        m = self.model
        if m.obs_type == "observation":
            return (
                f"{self.name} reads obs_type='observation' and plays the set "
                f"max_pip={m.max_pip} (observations of length {m.obs_dim}) but got "
                f"observations of length {got}: it was trained for another tile set, or the "
                "env hands out another obs_type (make it with obs_type='observation', or give "
                f"the policy the first {m.obs_dim} entries)"
            )
        return (
            f"{self.name} reads obs_type='information_state' (length {m.input_dim} for its "
            f"game, max_pip={m.max_pip}, H={m.history_slots}) but got observations of length "
            f"{got}: make the env with obs_type='information_state' for the game it was "
            "trained for"
        )

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        return int(self.act_batch(*self._single(observation))[0])


def load(
    name_or_path: str | Path,
    device: str | torch.device = "cpu",
    greedy: bool = True,
    seed: int | None = None,
) -> PolicyAgent:
    """A ``PolicyAgent`` for a shipped policy (``"block-2p"``, ``"block-3p"``,
    ``"block-4p"``), a policy file or a training checkpoint, with ``agent.game`` the game
    configuration stored in the file (None for older files) and ``agent.obs_type`` the
    observation it plays on (see ``PolicyAgent``). FileNotFoundError when
    missing, ValueError naming the file when it is not a policy (``read_policy_file``)."""
    name = str(name_or_path)
    label = name if name in SHIPPED else Path(name).stem
    pf = read_policy_file(name_or_path)
    return PolicyAgent(pf.model, device, greedy, seed, name=label, game=pf.game)
