"""Property tests over many random games, for every player count, variant and tile set,
against independent naive re-implementations written here from docs/RULES.md."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import CONFIGS, SET_CONFIGS, config_id, naive_points, tiles_of
from hypothesis import given, settings
from hypothesis import strategies as st

import block_env

GAMES_PER_CONFIG = 200
GAMES_PER_SET_CONFIG = 60


def naive_tiles(max_pip: int) -> list[tuple[int, int]]:
    """The set [0|0]..[N|N] in the documented order (0,0), (0,1), ..., (0,N), (1,1), ..."""
    return [(a, b) for a in range(max_pip + 1) for b in range(a, max_pip + 1)]


def naive_legal(
    tiles: list[tuple[int, int]], hand: set[int], left: int, right: int, forced: int
) -> set[int]:
    if left < 0:
        return {2 * forced} if forced >= 0 else {2 * t for t in hand}
    on_left = {2 * t for t in hand if left in tiles[t]}
    on_right = {2 * t + 1 for t in hand if right in tiles[t]}
    return (on_left | on_right) or {2 * len(tiles)}  # pass is 2T


def can_place(tiles: list[tuple[int, int]], hand: set[int], left: int, right: int) -> bool:
    return any(left in tiles[t] or right in tiles[t] for t in hand)


def check_episode(cfg_kwargs: dict, seed: int) -> int:
    """Play one random episode, checking every rule after every step; returns hands played."""
    env = block_env.raw_env(**cfg_kwargs)
    cfg = env.config
    n = cfg.num_players
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    tiles = naive_tiles(cfg_kwargs.get("max_pip", 6))
    total = len(tiles)
    STANDARD_PASS = 2 * total  # noqa: N806 (the pass action of this set)
    assert env.action_space("player_0").n == 2 * total + 1
    out_of_play = total - n * cfg.hand_size
    hands_played = 0
    while not env.game.episode_over:
        game = env.game
        seat = game.current
        assert env.agent_selection == f"player_{seat}"
        hands = [tiles_of(h) for h in game.hands]
        line = tiles_of(game.played)
        # the T tiles are always accounted for: hands, line and out of play are disjoint
        assert sum(len(h) for h in hands) + len(line) + out_of_play == total
        assert len(set().union(*hands, line)) == total - out_of_play
        assert max(set().union(*hands, line)) < total
        assert len(line) == len(game.line)
        mask = env.observe(f"player_{seat}")["action_mask"]
        legal = set(np.flatnonzero(mask))
        assert legal == naive_legal(tiles, hands[seat], game.left, game.right, game.opening_tile)
        if game.left >= 0:
            assert (legal == {STANDARD_PASS}) == (
                not can_place(tiles, hands[seat], game.left, game.right)
            )
        action = int(list(legal)[rng.integers(len(legal))])
        scores_before = list(game.scores)
        env.step(action)
        ended = env.infos[f"player_{seat}"]["hand_over"]
        if action == STANDARD_PASS:
            assert not ended
            continue
        after_hands = [set(h) for h in hands]
        after_hands[seat].discard(action // 2)
        tile = tiles[action // 2]
        if game.left < 0:
            left, right = tile
        elif action % 2 == 0:
            left, right = (tile[1] if tile[0] == game.left else tile[0]), game.right
        else:
            left, right = game.left, (tile[1] if tile[0] == game.right else tile[0])
        domino = not after_hands[seat]
        blocked = not domino and not any(can_place(tiles, h, left, right) for h in after_hands)
        assert ended == (domino or blocked)
        if not ended:
            assert (env.game.left, env.game.right) == (left, right)
            continue
        hands_played += 1
        result = env.infos["player_0"]
        assert all(
            env.infos[a]["hand_winner"] == result["hand_winner"]
            and env.infos[a]["hand_points"].tolist() == result["hand_points"].tolist()
            for a in env.possible_agents
        )
        assert result["hand_blocked"] == blocked
        sides = [s % 2 for s in range(n)] if cfg.partnership else list(range(n))
        points = naive_points(sides, after_hands, seat if domino else None, tiles)
        assert result["hand_points"].tolist() == points
        scores = env.scores
        assert scores == [s + p for s, p in zip(scores_before, points)]
        assert all(a >= b for a, b in zip(scores, scores_before))  # never decreases
        reached = max(scores) >= cfg.target
        if cfg.episode == "match":
            assert env.game.episode_over == reached
        else:
            assert env.game.episode_over
        if not env.game.episode_over:
            assert env.game.hand_number == game.hand_number + 1
            if cfg.opener == "rotate":
                assert env.game.leader == (game.leader + 1) % n
            assert env.agent_selection == f"player_{env.game.leader}"
    assert all(env.terminations.values())
    assert hands_played >= 1
    return hands_played


@pytest.mark.parametrize("cfg", CONFIGS, ids=config_id)
def test_random_games_follow_the_rules(cfg):
    hands = sum(check_episode(cfg, seed) for seed in range(GAMES_PER_CONFIG))
    assert hands >= GAMES_PER_CONFIG


@pytest.mark.parametrize("cfg", SET_CONFIGS, ids=config_id)
def test_random_games_of_every_tile_set_follow_the_rules(cfg):
    hands = sum(check_episode(cfg, seed) for seed in range(GAMES_PER_SET_CONFIG))
    assert hands >= GAMES_PER_SET_CONFIG


@settings(max_examples=150, deadline=None, derandomize=True)
@given(cfg=st.sampled_from(CONFIGS), seed=st.integers(0, 2**32 - 1))
def test_random_games_follow_the_rules_hypothesis(cfg, seed):
    check_episode(cfg, seed)


@settings(max_examples=120, deadline=None, derandomize=True)
@given(
    max_pip=st.integers(2, 6),
    num_players=st.integers(2, 4),
    partnership=st.booleans(),
    opener=st.sampled_from(["rotate", "highest_double"]),
    hand_fraction=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_tile_set_and_hand_size_follows_the_rules_hypothesis(
    max_pip, num_players, partnership, opener, hand_fraction, seed
):
    """Any set, player count and valid hand size: one single-hand episode checked rule by
    rule (hands of up to T // n tiles, so the whole set may be dealt)."""
    partnership = partnership and num_players == 4
    most = len(naive_tiles(max_pip)) // num_players
    hand_size = 1 + int(hand_fraction * (most - 1))
    cfg = {
        "num_players": num_players,
        "partnership": partnership,
        "opener": opener,
        "max_pip": max_pip,
        "hand_size": hand_size,
        "episode": "hand",
    }
    check_episode(cfg, seed)
