"""Play-time search guided by a trained network: ``agents.make("guided", policy="block-2p")``.

PIMC (``agents.pimc``) values each legal move by solving sampled deals; the network has
learned, from millions of hands, which moves pay off against players who hide their
tiles. The two err in different places: PIMC assumes it will know the deal after this
move (strategy fusion) and reads nothing into how the opponents played, the network is an
approximation. The guided agent plays the move with the best

    PIMC's mean value (points of the hand)  +  weight * log(network probability)

so a move the network finds very unlikely needs a clear gain in the solved deals to be
played, and among moves the network likes, the solved deals decide. ``weight=0`` is PIMC
(ties aside), a large weight the network's greedy move.

``block-2p-search`` (``agents.make("block-2p-search")``) is the preset for 2 players: the
``block-2p-plain`` network (the default training run, on the plain observation; block-2p
is it widened to the information state and fine-tuned), 50 worlds and weight 2, chosen
against that network on 2,000 hands of duplicate deals (weights 0.5 to 8, 50 and 100
worlds), with a node budget that keeps every decision under 100 ms on one core. On fresh
deals it is level with both that network and PIMC-100 (docs/results.md, "2 players"): a
tool, not yet a stronger player.

``block-partnership-search`` is the preset for partnership: its own network
(``agents/policies/block-partnership-search.pt``, the first of block-partnership's two
training stages) beside the 20 worlds of the PIMC-20 it plays against, weight 1. There the
search and the network err apart enough that two copies beat two PIMC-20, where two
networks alone do not, and one beside a PIMC-20 partner beats two PIMC-20 by a third of a
point a hand (docs/results.md, "Partnership").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from agents.pimc import PIMCAgent
from agents.solver import best_action
from block_env.tiles import tile_set

__all__ = [
    "BLOCK_2P_SEARCH",
    "BLOCK_PARTNERSHIP_SEARCH",
    "GuidedSearchAgent",
    "block_2p_search",
    "block_partnership_search",
]

# The shipped preset: network, worlds, weight (points per nat of log-probability).
BLOCK_2P_SEARCH: dict[str, Any] = {
    "policy": "block-2p-plain",  # the network it was tuned and measured with
    "worlds": 50,
    "weight": 2.0,
    "node_budget": 25_000,  # the opening lead (~1,300 nodes a world) stops near 19 worlds
}
# The partnership preset: its network beside PIMC-20's worlds, weight chosen against two
# PIMC-20 on tuning deals.
BLOCK_PARTNERSHIP_SEARCH: dict[str, Any] = {
    "policy": str(Path(__file__).resolve().parent / "policies" / "block-partnership-search.pt"),
    "worlds": 20,
    "weight": 1.0,
    "node_budget": None,
}
_FLOOR = 1e-9  # probability floor: a move the network never plays keeps a finite score


class GuidedSearchAgent:
    """PIMC's mean solved value of each legal move plus ``weight`` times the log of the
    network's probability of it; the best score is played (ties: heaviest tile, then the
    lowest action id). ``policy`` is a shipped policy name, a policy file or a
    ``PolicyAgent``; ``worlds``, ``seed``, ``time_budget`` and ``node_budget`` go to PIMC."""

    def __init__(
        self,
        policy: Any = "block-2p",
        worlds: int = 50,
        weight: float = 1.0,
        seed: int | None = None,
        time_budget: float | None = None,
        node_budget: int | None = None,
    ) -> None:
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
            raise ValueError(f"weight={weight!r} is not allowed: use a number >= 0")
        self.pimc = PIMCAgent(worlds, seed, time_budget, node_budget)
        if isinstance(policy, str):
            from agents.policy import load

            policy = load(policy)
        if not hasattr(policy, "probabilities"):
            raise ValueError(
                f"policy={policy!r} is not allowed: use a policy name or file, or a PolicyAgent"
            )
        self.policy = policy
        self.model = policy.model  # the guiding network (evaluations read its game fit)
        self.weight = float(weight)
        self.game = getattr(policy, "game", None)  # evaluations refuse another game
        self.obs_type: str = policy.obs_type
        self.plain_dim: int = policy.model.obs_dim
        self.tiles = tile_set(policy.model.max_pip)
        self.last_scores: dict[int, float] = {}  # score of each legal move, last decision

    def reseed(self, seed: int) -> None:
        """Restart PIMC's random numbers from ``seed``: the worlds a PIMC agent reseeded
        alike would draw (the network is deterministic)."""
        self.pimc.reseed(seed)

    @property
    def last_worlds(self) -> int:
        """Worlds solved for the last decision (0: forced move)."""
        return self.pimc.last_worlds

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        mask = np.asarray(observation["action_mask"])
        legal = np.flatnonzero(mask)
        if legal.size == 0:
            raise ValueError("the action mask holds no legal action: this seat is not on turn")
        self.pimc.last_worlds = 0
        self.last_scores = {}
        if legal.size == 1:
            return int(legal[0])
        probs = self.policy.probabilities(observation)
        plain = dict(observation)
        plain["observation"] = np.asarray(observation["observation"])[: self.plain_dim]
        totals = self.pimc.action_totals(plain)
        worlds = self.pimc.last_worlds
        self.last_scores = {
            a: totals[a] / worlds + self.weight * math.log(max(float(probs[a]), _FLOOR))
            for a in totals
        }
        return best_action(self.last_scores, self.tiles)


def _preset_builder(preset: Mapping[str, Any], doc: str) -> Callable[..., GuidedSearchAgent]:
    """The factory of a preset: a guided agent with the preset's settings, each overridden by
    a keyword given (``seed``, ``worlds``, ``weight``, ``node_budget``, ``time_budget``)."""

    def build(
        seed: int | None = None,
        worlds: int | None = None,
        weight: float | None = None,
        node_budget: int | None = None,
        time_budget: float | None = None,
    ) -> GuidedSearchAgent:
        return GuidedSearchAgent(
            preset["policy"],
            preset["worlds"] if worlds is None else worlds,
            preset["weight"] if weight is None else weight,
            seed,
            time_budget,
            preset["node_budget"] if node_budget is None else node_budget,
        )

    build.__doc__ = doc
    return build


block_2p_search = _preset_builder(
    BLOCK_2P_SEARCH, "The shipped 2-player search agent (``BLOCK_2P_SEARCH``)."
)
block_partnership_search = _preset_builder(
    BLOCK_PARTNERSHIP_SEARCH,
    "The shipped partnership search agent (``BLOCK_PARTNERSHIP_SEARCH``):"
    " its network guiding PIMC-20's worlds.",
)
