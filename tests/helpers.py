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


def random_legal(obs: dict, rng: np.random.Generator) -> int:
    legal = np.flatnonzero(obs["action_mask"])
    return int(legal[rng.integers(len(legal))])
