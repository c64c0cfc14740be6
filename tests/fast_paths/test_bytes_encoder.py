"""The AEC env's fast observation builder equals ``observation.encode`` bit for bit."""

from __future__ import annotations

import copy
import pickle
import random

import numpy as np
import pytest

import block_env
from block_env.observation import encode
from block_env.observation.bytes_encoder import bytes_encoder

CASES = [
    (n, max_pip, partnership, opener)
    for max_pip in (2, 3, 4, 5, 6)
    for n in (2, 3, 4)
    for partnership in ((False, True) if n == 4 else (False,))
    for opener in ("rotate", "highest_double")
]


@pytest.mark.parametrize(("n", "max_pip", "partnership", "opener"), CASES)
def test_bytes_encoder_equals_encode_over_random_play(
    n: int, max_pip: int, partnership: bool, opener: str
) -> None:
    """Every seat's vector in every position of random matches (passes, hand ends, new
    deals and the final position included), compared as raw bytes."""
    env = block_env.raw_env(num_players=n, max_pip=max_pip, partnership=partnership, opener=opener)
    rng = random.Random(0)
    seen_pass = seen_over = False
    for seed in range(6):
        env.reset(seed=seed)
        enc = bytes_encoder(env.config)
        while env.agents:
            game = env.game
            seen_over |= game.episode_over
            for seat in range(n):
                fast = enc(game, seat)
                assert fast.dtype == np.float32
                assert fast.tobytes() == encode(env.config, game, seat).tobytes()
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            action = int(legal[rng.randrange(len(legal))])
            seen_pass |= action == env.config.tiles.pass_action
            env.step(action)
    assert seen_over
    if n >= 3 and max_pip >= 3:  # (4 players on the 6 tiles of double-two: no pass)
        assert seen_pass


def test_bytes_encoder_scores_and_target_exact() -> None:
    """Large scores and targets come out as float32 exactly as numpy stores them."""
    env = block_env.raw_env(target_score=1_000_001)
    env.reset(seed=3, options={"scores": [999_999, 12_345]})
    for seat in (0, 1):
        assert (
            bytes_encoder(env.config)(env.game, seat).tobytes()
            == encode(env.config, env.game, seat).tobytes()
        )


def test_env_with_bytes_encoder_copies_and_pickles() -> None:
    """deepcopy and pickle of the env keep the shared encoder and the observations."""
    env = block_env.raw_env(num_players=3)
    env.reset(seed=5)
    for other in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
        assert other._encode is env._encode
        a, b = env.observe("player_1"), other.observe("player_1")
        assert a["observation"].tobytes() == b["observation"].tobytes()
        assert np.array_equal(a["action_mask"], b["action_mask"])
    assert len(pickle.dumps(env)) < 20_000
