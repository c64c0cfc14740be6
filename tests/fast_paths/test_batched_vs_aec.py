"""Differential tests: the batched engine against the AEC env, step by step, bit for bit.

Each batched game i uses ``deal_source="aec"``, so it deals exactly as ``raw_env`` reset with
``seed + i`` (later episodes via ``reset()`` without a seed). Both are driven with the same
random legal actions, and at every step the seat to act, observation, mask, rewards,
terminations, hand results and final observations must be identical.
"""

from __future__ import annotations

import numpy as np
import pytest
from batched_helpers import BACKENDS, Lockstep
from helpers import CONFIGS, SET_CONFIGS, config_id

import block_env

# Every player count, opener, episode mode, reward mode, partnership, a custom target, and
# the smaller tile sets and other hand sizes.
DIFF_CONFIGS = [
    *CONFIGS,
    {"num_players": 4, "opener": "highest_double", "partnership": True, "reward": "win"},
    {"num_players": 3, "episode": "hand"},
    {"num_players": 4, "episode": "hand", "opener": "highest_double", "reward": "win"},
    {"num_players": 2, "reward": "points", "target_score": 25},
    {"num_players": 4, "reward": "zero_sum", "target_score": 20},
    *SET_CONFIGS,
]
NUM_GAMES = 24
NUM_STEPS = 260


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cfg", DIFF_CONFIGS, ids=config_id)
def test_matches_aec_env_step_by_step(cfg: dict, backend: str) -> None:
    run = Lockstep(cfg, backend, NUM_GAMES, seed=1000 * len(config_id(cfg)))
    for _ in range(NUM_STEPS):
        run.step()
    assert run.hands >= NUM_GAMES  # every game played hands to the end, several in most
    assert run.episodes >= 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "cfg",
    [
        {"num_players": 2},
        {"num_players": 3, "opener": "highest_double"},
        {"num_players": 4},
        {"num_players": 3, "max_pip": 3},
        {"num_players": 2, "max_pip": 5, "hand_size": 8},
    ],
    ids=config_id,
)
def test_auto_pass_matches_aec_env_with_forced_passes_played(cfg: dict, backend: str) -> None:
    run = Lockstep(cfg, backend, NUM_GAMES, seed=77, auto_pass=True)
    for _ in range(120):
        run.step()
        only_pass = (run.mask[:, run.pass_action] == 1) & (run.mask.sum(1) == 1)
        assert not only_pass.any()  # nobody is ever asked to make a forced pass
    assert run.hands >= NUM_GAMES


def random_setups(cfg: dict, num_games: int, rng: np.random.Generator) -> list[dict | None]:
    """Per-game reset options: short given hands, a given leader and scores near the target,
    so that matches end within a hand or two (exercising the match end and autoreset)."""
    config = block_env.BlockConfig(**cfg)
    n, k = config.num_players, config.hand_size
    tiles = config.tiles.tiles
    setups: list[dict | None] = []
    for g in range(num_games):
        if g % 4 == 3:
            setups.append(None)
            continue
        order = rng.permutation(len(tiles))
        sizes = rng.integers(1, k + 1, size=n)
        hands, pos = [], 0
        for s in range(n):
            hands.append([tiles[t] for t in order[pos : pos + sizes[s]]])
            pos += sizes[s]
        scores = [int(v) for v in rng.integers(max(0, config.target - 12), config.target, n)]
        if config.partnership:
            scores[2], scores[3] = scores[0], scores[1]
        opt: dict = {"hands": hands, "scores": scores}
        if config.opener == "rotate":
            opt["leader"] = int(rng.integers(n))
        setups.append(opt)
    return setups


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "cfg",
    [
        {"num_players": 2},
        {"num_players": 3, "reward": "win"},
        {"num_players": 4, "partnership": True, "opener": "highest_double"},
        {"num_players": 4, "episode": "hand", "reward": "points"},
        {"num_players": 3, "max_pip": 4},
        {"num_players": 2, "max_pip": 6, "hand_size": 10},
    ],
    ids=config_id,
)
def test_reset_options_match_aec_env(cfg: dict, backend: str) -> None:
    setups = random_setups(cfg, NUM_GAMES, np.random.default_rng(5))
    run = Lockstep(cfg, backend, NUM_GAMES, seed=321, options=setups)
    for _ in range(60):
        run.step()
    assert run.episodes >= NUM_GAMES // 2
