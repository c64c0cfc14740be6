"""NashConv of a policy network during training, for tile sets small enough to walk.

The game tree is walked once; every information state's observation and mask are stacked
into two arrays, so each measurement is one batched forward pass (the network's softmax over
the legal actions becomes a tabular policy) plus OpenSpiel's exact best responses.
"""

from __future__ import annotations

from math import comb
from typing import Any

import numpy as np

from block_env.openspiel import analysis as an

# Largest game the probe accepts: deals (checked before the walk) and histories. On the
# double-three set with 2 tiles each (2,520 deals, 24,721 histories) one NashConv takes
# about half a minute on one core.
MAX_DEALS = 3_000
MAX_HISTORIES = 50_000


def deal_count(num_players: int, num_tiles: int, hand_size: int, lots: int) -> int:
    """Different deals (lot included): lots x the multinomial of the hands."""
    ways, left = lots, num_tiles
    for _ in range(num_players):
        ways *= comb(left, hand_size)
        left -= hand_size
    return ways


class NashConvProbe:
    """Measures the NashConv of ``model`` (an ``agents.network.ActorCritic``) on one game."""

    def __init__(
        self,
        num_players: int,
        max_pip: int,
        hand_size: int | None,
        partnership: bool = False,
        opener: str = "rotate",
    ) -> None:
        self.game = an.load(max_pip, hand_size or 0, num_players, partnership, opener)
        config = self.game.config
        lots = num_players if opener == "rotate" else 1
        deals = deal_count(num_players, config.tiles.num_tiles, config.hand_size, lots)
        if deals > MAX_DEALS:
            raise ValueError(
                f"the game has {deals:,} deals, more than the {MAX_DEALS:,} a NashConv during "
                f"training allows: use a smaller set (max_pip, hand_size) or nashconv_every=0"
            )
        self.tree = an.walk(self.game)
        if self.tree.histories > MAX_HISTORIES:
            raise ValueError(
                f"the game has {self.tree.histories:,} histories, more than the "
                f"{MAX_HISTORIES:,} a NashConv during training allows: use a smaller set "
                f"(max_pip, hand_size) or nashconv_every=0"
            )
        self.keys = list(self.tree.info_states)
        views = [s.env_observation(s.current_player()) for s in self.tree.info_states.values()]
        self.obs = np.stack([v["observation"] for v in views])
        self.mask = np.stack([v["action_mask"] for v in views])

    def probabilities(self, model: Any) -> np.ndarray:
        """(information states, actions) softmax of the masked logits, rows summing to 1."""
        import torch

        device = next(model.parameters()).device
        with torch.no_grad():
            o = torch.as_tensor(self.obs, dtype=torch.float32, device=device)
            m = torch.as_tensor(self.mask, device=device)
            p = torch.softmax(model.masked_logits(o, m).double(), dim=-1).cpu().numpy()
        p = np.where(self.mask > 0, p, 0.0)
        return p / p.sum(axis=1, keepdims=True)

    def __call__(self, model: Any) -> float:
        """NashConv of the network's stochastic policy."""
        probs = self.probabilities(model)
        pol = an.os_policy.TabularPolicy(self.game)
        for key, row in zip(self.keys, probs):
            pol.policy_for_key(key)[:] = row
        return an.nash_conv(self.game, pol)
