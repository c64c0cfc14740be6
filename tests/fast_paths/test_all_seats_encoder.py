"""``BytesEncoder.all_observation_bytes`` (every seat at once, the parallel view's) equals the
per-seat builders bit for bit, and ``parallel_env`` hands out arrays that share nothing.

The every-seat builder is checked against ``observation_bytes`` (the AEC env's, through the
same memo) and ``encode`` (the reference) for every seat of every position of random
matches: every player count, partnership, both openers, every tile set and other hand
sizes (at least 60 positions per case: thousands in all).
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

import block_env
from block_env.observation import encode
from block_env.observation.bytes_encoder import bytes_encoder
from block_env.parallel import parallel_env

CASES = [
    (n, max_pip, partnership, opener)
    for max_pip in (2, 3, 4, 5, 6)
    for n in (2, 3, 4)
    for partnership in ((False, True) if n == 4 else (False,))
    for opener in ("rotate", "highest_double")
    if (max_pip + 1) * (max_pip + 2) // 2 >= n  # a deal of one tile each fits
]


def play_positions(env: block_env.raw_env, seeds: range, rng: random.Random):
    """Every position of random legal matches on ``env`` (the final ones included)."""
    for seed in seeds:
        env.reset(seed=seed)
        while env.agents:
            yield env.game
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[rng.randrange(len(legal))]))


def check_position(enc, config, game, memo: dict, own_memo: dict) -> None:
    """Every seat's bytes from the every-seat builder, with the env's memo (shared with the
    per-seat path) and with a memo of its own, against ``observation_bytes`` and
    ``encode``."""
    shared = enc.all_observation_bytes(game, memo)
    alone = enc.all_observation_bytes(game, own_memo)
    assert len(shared) == len(alone) == config.num_players
    for seat in range(config.num_players):
        want = encode(config, game, seat).tobytes()
        assert type(shared[seat]) is bytearray and type(alone[seat]) is bytearray
        assert shared[seat] == alone[seat] == want
        assert enc.observation_bytes(game, seat, memo) == want
    assert len({id(b) for b in (*shared, *alone)}) == 2 * config.num_players  # all new


@pytest.mark.parametrize(("n", "max_pip", "partnership", "opener"), CASES)
def test_all_seats_equal_the_per_seat_builders_over_random_play(
    n: int, max_pip: int, partnership: bool, opener: str
) -> None:
    env = block_env.raw_env(
        num_players=n, max_pip=max_pip, partnership=partnership, opener=opener, target_score=60
    )
    enc = bytes_encoder(env.config)
    own_memo: dict = {}
    hand = None
    positions = passes = 0
    for game in play_positions(env, range(4), random.Random(n * 100 + max_pip)):
        key = (game.hand_number, game.scores, game.episode_over, game.leader)
        if key != hand:  # the own memo is emptied whenever the hand changes, as the env's
            own_memo.clear()
            hand = key
        check_position(enc, env.config, game, env._memo, own_memo)
        positions += 1
        passes += any(game.voids)
    assert positions >= 60  # over the cases, thousands of positions
    if n >= 3 and max_pip >= 3:
        assert passes  # voids were shown, so rotated voids were compared


@pytest.mark.parametrize("hand_size", [4, 9, 12])
def test_all_seats_with_other_hand_sizes_and_large_scores(hand_size: int) -> None:
    env = block_env.raw_env(num_players=2, hand_size=hand_size, target_score=1_000_001)
    enc = bytes_encoder(env.config)
    env.reset(seed=hand_size, options={"scores": [999_999, 12_345]})
    rng = random.Random(hand_size)
    for game in itertools.islice(play_positions(env, range(1), rng), 200):
        check_position(enc, env.config, game, env._memo, {})


def test_handed_out_bytearrays_are_the_callers() -> None:
    """Writing into a returned bytearray changes neither the memo nor the next call."""
    env = block_env.raw_env(num_players=4)
    env.reset(seed=2)
    enc = bytes_encoder(env.config)
    first = enc.all_observation_bytes(env.game, env._memo)
    before = [bytes(b) for b in first]
    for b in first:
        b[:] = bytes(len(b))
    again = enc.all_observation_bytes(env.game, env._memo)
    assert [bytes(b) for b in again] == before


@pytest.mark.parametrize(
    "cfg",
    [
        {"num_players": 2},
        {"num_players": 3, "max_pip": 3},
        {"num_players": 4, "partnership": True},
        {"num_players": 4, "partnership": True, "obs_type": "information_state"},
        {"num_players": 3, "max_pip": 2, "obs_type": "information_state"},
    ],
)
def test_parallel_arrays_share_no_memory_and_are_the_callers(cfg: dict) -> None:
    """Every array of a step is writable and shares memory with no other array of that
    step (no seat can read another's hand through its arrays); writing into them changes
    nothing the env hands out next."""
    env, aec = parallel_env(**cfg), block_env.raw_env(**cfg)
    observations, _ = env.reset(seed=4)
    aec.reset(seed=4)
    rng = random.Random(4)
    while env.agents:
        arrays = [a for obs in observations.values() for a in obs.values()]
        assert all(a.flags.writeable for a in arrays)
        for a, b in itertools.combinations(arrays, 2):
            assert not np.shares_memory(a, b)
        current = env.current_agent
        legal = np.flatnonzero(observations[current]["action_mask"])
        move = int(legal[rng.randrange(len(legal))])
        for a in arrays:
            a[...] = 1  # the caller's to write into
        for agent, obs in env._observations().items():  # the same position, unchanged
            mine = aec.observe(agent)
            assert obs["observation"].tobytes() == mine["observation"].tobytes()
            assert obs["action_mask"][: env.wait].tobytes() == mine["action_mask"].tobytes()
        observations, *_ = env.step({**dict.fromkeys(env.agents, env.wait), current: move})
        aec.step(move)
