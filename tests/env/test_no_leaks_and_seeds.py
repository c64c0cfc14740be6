"""Observations leak nothing hidden, and seeds reproduce games in any process."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import CONFIGS, SET_CONFIGS, config_id, random_legal

import block_env
from block_env.tiles import STANDARD_TILES


def _play(cfg: dict, seed: int, hands=None, leader=None, actions=None):
    """Play one hand with episode='hand'. Returns (actions, observations of every seat at
    every step) or None when a recorded action is not legal in this deal."""
    env = block_env.raw_env(**{**cfg, "episode": "hand"})
    options = None if hands is None else {"hands": hands, "leader": leader}
    if cfg.get("opener") == "highest_double" and options:
        options.pop("leader")
    env.reset(seed=seed, options=options)
    rng = np.random.default_rng(seed)
    record, observed = [], []
    while not env.game.episode_over:
        observed.append([env.observe(a)["observation"].copy() for a in env.possible_agents])
        obs = env.observe(env.agent_selection)
        if actions is None:
            action = random_legal(obs, rng)
        else:
            if len(record) == len(actions):
                return None  # this deal goes on where the recorded one ended
            action = actions[len(record)]
            if not obs["action_mask"][action]:
                return None
        record.append(action)
        env.step(action)
    observed.append([env.observe(a)["observation"].copy() for a in env.possible_agents])
    return record, observed, env


@pytest.mark.parametrize("cfg", CONFIGS + SET_CONFIGS, ids=config_id)
def test_hidden_tiles_never_change_an_observation(cfg):
    """Swap one opponent's never-played tile with an out-of-play tile (or with another
    opponent's): whenever the same public history can be replayed, the observer's
    observations are identical at every step."""
    compared = 0
    for seed in range(60):
        base = _play(cfg, seed)
        actions, observed, env = base
        n = env.config.num_players
        tiles = env.config.tiles
        t = tiles.num_tiles
        start = block_env.raw_env(**{**cfg, "episode": "hand"})
        start.reset(seed=seed)
        hands = [set(i for i in range(t) if h >> i & 1) for h in start.game.hands]
        played = {a // 2 for a in actions if a != tiles.pass_action}
        out = set(range(t)) - set().union(*hands)
        rng = np.random.default_rng(seed)
        for observer in range(n):
            opponents = [s for s in range(n) if s != observer]
            victim = opponents[rng.integers(len(opponents))]
            kept = sorted(hands[victim] - played)
            pool = sorted(out) + [t for s in opponents if s != victim for t in hands[s] - played]
            if not kept or not pool:
                continue
            a, b = kept[rng.integers(len(kept))], pool[rng.integers(len(pool))]
            new_hands = [set(h) for h in hands]
            new_hands[victim].discard(a)
            new_hands[victim].add(b)
            for s in opponents:
                if s != victim and b in new_hands[s]:
                    new_hands[s].discard(b)
                    new_hands[s].add(a)
            replay = _play(
                cfg,
                seed,
                hands=[[tiles.tiles[i] for i in sorted(h)] for h in new_hands],
                leader=start.game.leader,
                actions=actions,
            )
            if replay is None or len(replay[0]) != len(actions):
                continue
            # every observation until the hand's end (its result reveals the pips, so the
            # scores after it may differ)
            for step_obs, replay_obs in zip(observed[:-1], replay[1][:-1], strict=True):
                assert step_obs[observer].tobytes() == replay_obs[observer].tobytes()
            compared += 1
    assert compared >= 20  # enough swapped deals replayed to make the check meaningful


def test_observation_holds_only_own_hand_and_public_counts():
    env = block_env.raw_env(num_players=4)
    env.reset(seed=11)
    for seat, agent in enumerate(env.possible_agents):
        decoded = block_env.decode(env.observe(agent)["observation"])
        own = [STANDARD_TILES[i] for i in range(28) if env.game.hands[seat] >> i & 1]
        assert decoded["hand"] == own
        assert decoded["tile_counts"] == [5, 5, 5, 5]
        assert decoded["out_of_play"] == 8 and decoded["num_players"] == 4


def test_voids_are_public_and_seat_relative():
    env = block_env.raw_env(num_players=3, episode="hand")
    env.reset(
        seed=0,
        options={"hands": [[(1, 4), (1, 5)], [(0, 2), (3, 3)], [(4, 6), (0, 1)]], "leader": 0},
    )
    env.step(2 * 10)  # seat 0 opens [1|4]; seat 1 holds no 1 and no 4
    env.step(56)
    for observer in range(3):
        decoded = block_env.decode(env.observe(f"player_{observer}")["observation"])
        relative = (1 - observer) % 3
        assert decoded["voids"][relative] == [1, 4]
        assert all(decoded["voids"][r] == [] for r in range(3) if r != relative)


SCRIPT = """
import hashlib, sys
import numpy as np
import block_env
h = hashlib.sha256()
for cfg in ({"num_players": 2}, {"num_players": 4, "partnership": True}, {"num_players": 3}):
    env = block_env.raw_env(**cfg)
    env.reset(seed=1234)
    rng = np.random.default_rng(7)
    for agent in env.agent_iter(max_iter=3000):
        obs, reward, term, trunc, info = env.last()
        h.update(agent.encode()); h.update(obs["observation"].tobytes())
        h.update(obs["action_mask"].tobytes()); h.update(repr((reward, term)).encode())
        if term or trunc:
            env.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[rng.integers(legal.size)]))
print(h.hexdigest())
"""


def test_same_seed_same_trajectory_in_fresh_processes():
    digests = set()
    for hash_seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
        )
        digests.add(out.stdout.strip())
    assert len(digests) == 1
    assert len(next(iter(digests))) == 64
    assert hashlib.sha256(b"").hexdigest() not in digests


def test_different_seeds_give_different_deals():
    env = block_env.raw_env()
    deals = set()
    for seed in range(20):
        env.reset(seed=seed)
        deals.add(env.game.hands)
    assert len(deals) == 20


# The digest of seeded default games (observations, masks, privileged state, rewards) as the
# env produced them before the tile set became configurable: the default game must stay
# exactly the same, deal for deal and bit for bit.
DEFAULT_GAMES_DIGEST = "7449705447c3da92ce395a62fd4b1d65d68b649664457435dc4fcd53d65e3380"


def test_default_games_are_bit_for_bit_what_they_always_were():
    h = hashlib.sha256()
    for cfg in (
        {"num_players": 2},
        {"num_players": 3, "opener": "highest_double"},
        {"num_players": 4},
        {"num_players": 4, "partnership": True},
    ):
        env = block_env.raw_env(**cfg)
        for seed in range(4):
            env.reset(seed=seed)
            rng = np.random.default_rng(seed)
            for agent in env.agent_iter(max_iter=400):
                obs, reward, term, trunc, _ = env.last()
                h.update(obs["observation"].tobytes())
                h.update(obs["action_mask"].tobytes())
                h.update(env.state().tobytes())
                h.update(repr((agent, reward, term)).encode())
                if term or trunc:
                    env.step(None)
                    continue
                legal = np.flatnonzero(obs["action_mask"])
                env.step(int(legal[rng.integers(legal.size)]))
    assert h.hexdigest() == DEFAULT_GAMES_DIGEST


@pytest.mark.parametrize("cfg", SET_CONFIGS, ids=config_id)
def test_seeds_reproduce_games_of_every_set(cfg):
    def trajectory() -> list[bytes]:
        env = block_env.raw_env(**cfg)
        env.reset(seed=99)
        rng = np.random.default_rng(1)
        out = []
        for _agent in env.agent_iter(max_iter=300):
            obs, _, term, trunc, _ = env.last()
            out.append(obs["observation"].tobytes())
            env.step(None if term or trunc else random_legal(obs, rng))
        return out

    assert trajectory() == trajectory()
