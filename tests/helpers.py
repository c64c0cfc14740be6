"""Shared helpers for the tests: the configurations covered and random legal play."""

from __future__ import annotations

import numpy as np

CONFIGS = [
    {"num_players": 2},
    {"num_players": 3},
    {"num_players": 4},
    {"num_players": 4, "partnership": True},
    {"num_players": 2, "opener": "highest_double"},
    {"num_players": 3, "opener": "highest_double", "reward": "points"},
    {"num_players": 2, "episode": "hand", "reward": "win"},
    {"num_players": 4, "episode": "hand", "partnership": True, "reward": "points"},
    {"num_players": 3, "reward": "win", "target_score": 30},
]


def config_id(cfg: dict) -> str:
    return "-".join(f"{k}={v}" for k, v in cfg.items())


def to_np(x) -> np.ndarray:
    """A numpy array from a numpy array or a torch tensor (on any device)."""
    if type(x).__module__.startswith("torch"):
        return x.cpu().numpy()
    return np.asarray(x)


def tiles_of(mask: int) -> set[int]:
    """Tile indices of a 28-bit mask."""
    return {t for t in range(28) if mask >> t & 1}


def random_legal(obs: dict, rng: np.random.Generator) -> int:
    legal = np.flatnonzero(obs["action_mask"])
    return int(legal[rng.integers(len(legal))])
