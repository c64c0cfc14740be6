"""The AEC env's per-step shortcuts (the encoder's per-hand memo, the bounded tables of
placements and masks, the reused all-zero rewards) give exactly what the plain definitions
give, on every tile set and player count, and stay bounded."""

from __future__ import annotations

import copy
import importlib
import random

import numpy as np
import pytest

import block_env
from block_env import rules
from block_env.observation import encode
from block_env.observation.bytes_encoder import bytes_encoder
from block_env.tiles import iter_tiles

env_module = importlib.import_module("block_env.env")  # the package exports env() itself

CASES = [
    (n, max_pip, partnership)
    for max_pip in (2, 3, 4, 5, 6)
    for n in (2, 3, 4)
    for partnership in ((False, True) if n == 4 else (False,))
    if (max_pip + 1) * (max_pip + 2) // 2 >= n  # a deal of one tile each fits
]


def _plain_legal(state: rules.State) -> tuple[int, ...]:
    """The legal actions from the rules' definition, without any table."""
    if state.result is not None:
        return ()
    hand = state.hands[state.current]
    if state.left == rules.EMPTY:
        if state.opening_tile >= 0:
            return (2 * state.opening_tile,)
        return tuple(2 * t for t in iter_tiles(hand))
    pairs = state.tiles.tiles
    actions = []
    for t in iter_tiles(hand):
        if state.left in pairs[t]:
            actions.append(2 * t)
        if state.right in pairs[t]:
            actions.append(2 * t + 1)
    return tuple(actions) if actions else (state.tiles.pass_action,)


def _play(env: block_env.raw_env, rng: random.Random, check) -> None:
    """Random legal play to the end of the match, ``check(env)`` before every step."""
    while env.agents:
        check(env)
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[rng.randrange(len(legal))]))


@pytest.mark.parametrize(("n", "max_pip", "partnership"), CASES)
def test_observe_equals_encode_and_the_plain_legal_actions(
    n: int, max_pip: int, partnership: bool
) -> None:
    """Every seat's observation (through the per-hand memo) is ``encode`` bit for bit and
    its mask is the plain legal set, in every position of random matches."""
    env = block_env.raw_env(
        num_players=n, max_pip=max_pip, partnership=partnership, target_score=40
    )
    config = env.config
    hands_seen = 0

    def check(env: block_env.raw_env) -> None:
        nonlocal hands_seen
        game = env.game
        hands_seen += not game.line
        legal = _plain_legal(game) if not game.episode_over else ()
        for seat, agent in enumerate(env.possible_agents):
            obs = env.observe(agent)
            assert obs["observation"].tobytes() == encode(config, game, seat).tobytes()
            want = np.zeros(config.tiles.num_actions, dtype=np.int8)
            if seat == game.current:
                want[list(legal)] = 1
            np.testing.assert_array_equal(obs["action_mask"], want)

    rng = random.Random(n * 10 + max_pip)
    for seed in range(3):
        env.reset(seed=seed)
        _play(env, rng, check)
    assert hands_seen > 3  # several deals went through the memo


def test_encoder_memo_emptied_per_hand_equals_the_encoder() -> None:
    """``observation_bytes`` with a memo emptied whenever the hand changes is the plain
    encoder, for every seat, including the final position."""
    env = block_env.raw_env(num_players=3)
    enc = bytes_encoder(env.config)
    memo: dict = {}
    hand = None

    def check(env: block_env.raw_env) -> None:
        nonlocal hand
        game = env.game
        key = (game.hand_number, game.scores, game.episode_over)
        if key != hand:
            memo.clear()
            hand = key
        for seat in range(3):
            assert enc.observation_bytes(game, seat, memo) == enc(game, seat).tobytes()

    env.reset(seed=11)
    _play(env, random.Random(11), check)
    assert memo  # filled


def test_placement_table_stays_bounded_and_correct(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a tiny bound the table empties itself and the actions stay the plain ones."""
    monkeypatch.setattr(rules, "_PLACEMENTS", {})
    monkeypatch.setattr(rules, "_PLACEMENTS_MAX", 8)
    env = block_env.raw_env()

    def check(env: block_env.raw_env) -> None:
        game = env.game
        if not game.episode_over:
            assert rules.legal_actions(game) == _plain_legal(game)
        assert len(rules._PLACEMENTS) <= 8

    for seed in range(3):
        env.reset(seed=seed)
        _play(env, random.Random(seed), check)


def test_mask_tables_are_per_action_count_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two tile sets played side by side (the legal tuple (12,) is a pass in one and a
    placement in the other) never share masks; a tiny bound keeps the table small."""
    monkeypatch.setattr(env_module, "_MASK_TABLE_MAX", 4)
    env_module._mask_table.cache_clear()
    small = block_env.raw_env(max_pip=2)
    big = block_env.raw_env()
    rng = random.Random(3)
    for seed in range(4):
        for env in (small, big):
            env.reset(seed=seed)
        while small.agents or big.agents:
            for env in (small, big):
                if not env.agents:
                    continue
                obs, _, term, trunc, _ = env.last()
                game = env.game
                if not (term or trunc):
                    want = np.zeros(env.config.tiles.num_actions, dtype=np.int8)
                    want[list(_plain_legal(game))] = 1
                    np.testing.assert_array_equal(obs["action_mask"], want)
                    legal = np.flatnonzero(want)
                    env.step(int(legal[rng.randrange(len(legal))]))
                else:
                    env.step(None)
                assert len(env._masks) <= 4
    assert small._masks is not big._masks
    env_module._mask_table.cache_clear()


def test_rewards_are_zero_between_hand_ends_and_copies_own_their_dicts() -> None:
    """The all-zero rewards dict kept between hand ends holds 0.0 for every agent, is
    replaced at a hand's end, and a copy of the env never shares it."""
    env = block_env.raw_env()
    env.reset(seed=5)
    rng = random.Random(5)
    ended = 0
    while env.agents and ended < 3:
        obs, _, term, trunc, info = env.last()
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[rng.randrange(len(legal))]))
        if env.infos["player_0"]["hand_over"]:
            ended += 1
            assert any(env.rewards.values())  # a hand's points (or a tie: checked below)
            continue
        assert env.rewards == {a: 0.0 for a in env.agents}
        clone = copy.deepcopy(env)
        assert clone.rewards == env.rewards and clone.rewards is not env.rewards
        legal = np.flatnonzero(clone.observe(clone.agent_selection)["action_mask"])
        clone.step(int(legal[0]))
        clone.rewards[clone.agents[0]] = 9.0
        assert env.rewards == {a: 0.0 for a in env.agents}
    assert ended == 3
