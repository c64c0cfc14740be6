"""Scores and targets above 255: the batched engine stages observations as bytes and rewrites
the values a byte cannot hold as floats. Driven against the AEC env step by step (as
``test_batched.py``), from positions near the target so that matches end within a hand or
two, with a target above 255 (every observation rewritten) and a target just below 256
(only final observations, where the winner's score passes 255)."""

from __future__ import annotations

import numpy as np
import pytest
from batched_helpers import BACKENDS, Lockstep
from helpers import config_id

from block_env.config import BlockConfig
from block_env.observation import obs_layout

WIDE_CONFIGS = [
    {"num_players": 2, "target_score": 255},
    {"num_players": 3, "target_score": 300, "reward": "points"},
    {"num_players": 4, "partnership": True, "target_score": 400, "opener": "highest_double"},
    {"num_players": 2, "max_pip": 3, "target_score": 256},
]


def near_target(cfg: dict, num_games: int, rng: np.random.Generator) -> list[dict]:
    config = BlockConfig(**cfg)
    setups = []
    for _ in range(num_games):
        scores = [
            int(v) for v in rng.integers(config.target - 12, config.target, config.num_players)
        ]
        if config.partnership:
            scores[2], scores[3] = scores[0], scores[1]
        setups.append({"scores": scores})
    return setups


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cfg", WIDE_CONFIGS, ids=config_id)
def test_scores_above_255_match_aec_env(cfg: dict, backend: str) -> None:
    run = Lockstep(cfg, backend, 24, seed=9, options=near_target(cfg, 24, np.random.default_rng(1)))
    sc = obs_layout(BlockConfig(**cfg)).fields["scores"]
    top = 0.0
    for _ in range(50):
        run.step()  # every output compared with the AEC env's
        if run.last_final.size:
            top = max(top, float(np.max(run.last_final[..., sc])))
    assert run.episodes >= 12
    assert top > 255  # a final observation needed the float rewrite
