"""Property tests of the batched engine with its own fast (vectorized) deals, both backends:
every rule checked after every step against naive re-implementations written here from
docs/RULES.md, independent of block_env.rules and of the engine's bit tricks."""

from __future__ import annotations

import numpy as np
import pytest
from batched_helpers import BACKENDS, engine
from helpers import CONFIGS, SET_CONFIGS, config_id, naive_points, tiles_of, to_np

from block_env.batched import BatchedEnv
from block_env.observation import obs_layout
from block_env.tiles import STANDARD_TILES

PROPERTY_CONFIGS = CONFIGS + SET_CONFIGS
NUM_GAMES = 64
NUM_STEPS = 150


def naive_opening(hands: list[set[int]], tiles=STANDARD_TILES) -> int:
    """The forced opening tile under highest_double, straight from docs/RULES.md."""
    dealt = set().union(*hands)
    doubles = [t for t in dealt if tiles[t][0] == tiles[t][1]]
    if doubles:
        return max(doubles, key=lambda t: tiles[t][0])
    return max(dealt, key=lambda t: (sum(tiles[t]), max(tiles[t])))


def naive_legal(
    hand: set[int], left: int, right: int, forced: int | None, tiles=STANDARD_TILES
) -> set[int]:
    if left < 0:
        return {2 * forced} if forced is not None else {2 * t for t in hand}
    acts = {2 * t for t in hand if left in tiles[t]} | {
        2 * t + 1 for t in hand if right in tiles[t]
    }
    return acts or {2 * len(tiles)}  # pass is 2T


def naive_play(left: int, right: int, action: int, tiles=STANDARD_TILES) -> tuple[int, int]:
    """Open ends after placing ``action``."""
    a, b = tiles[action // 2]
    if left < 0:
        return a, b
    if action % 2 == 0:
        return (b if a == left else a), right
    return left, (b if a == right else a)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cfg", PROPERTY_CONFIGS, ids=config_id)
def test_rules_hold_in_random_batched_play(cfg: dict, backend: str) -> None:
    env = BatchedEnv(NUM_GAMES, **engine(backend), **cfg)
    config = env.config
    n = config.num_players
    sides = list(config.teams)
    tiles = [(a, b) for a in range(config.max_pip + 1) for b in range(a, config.max_pip + 1)]
    total, pass_action = len(tiles), 2 * len(tiles)
    fields = obs_layout(config).fields
    raw_obs, raw_mask, raw_seat = env.reset(seed=11)
    hand_start = np.ones(NUM_GAMES, dtype=bool)
    forced: list[int | None] = [None] * NUM_GAMES
    ended_hands = 0
    for _ in range(NUM_STEPS):
        before = env.snapshot()
        obs, mask, seat = to_np(raw_obs), to_np(raw_mask), to_np(raw_seat)
        actions = to_np(env.sample_actions(raw_mask))
        for g in range(NUM_GAMES):
            hands = [tiles_of(int(h)) for h in before["hands"][g]]
            line = tiles_of(int(before["played"][g]))
            s, left, right = int(seat[g]), int(before["left"][g]), int(before["right"][g])
            # the T tiles are accounted for: hands, line and out of play are disjoint
            assert sum(map(len, hands)) + len(line) + before["out_of_play"][g] == total
            assert len(set().union(*hands, line)) == total - before["out_of_play"][g]
            assert before["out_of_play"][g] == total - n * config.hand_size
            if hand_start[g]:
                assert left < 0 and not line
                if config.opener == "highest_double":
                    forced[g] = naive_opening(hands, tiles)
                    assert forced[g] in hands[s]  # the holder of the opening tile leads
            legal = set(np.flatnonzero(mask[g]).tolist())
            assert legal == naive_legal(hands[s], left, right, forced[g], tiles)
            assert s == before["current"][g]
            # the observation holds the observer's hand, the line, the counts
            assert set(np.flatnonzero(obs[g, fields["hand"]])) == hands[s]
            assert set(np.flatnonzero(obs[g, fields["line"]])) == line
            counts = obs[g, fields["tile_counts"]][:n]
            assert counts.tolist() == [len(hands[(s + r) % n]) for r in range(n)]
            assert int(actions[g]) in legal
        raw_obs, raw_mask, raw_seat, rewards, terminated, info = env.step(actions)
        after = env.snapshot()
        info = {k: to_np(v) for k, v in info.items()}
        rewards, terminated = to_np(rewards), to_np(terminated)
        for g in range(NUM_GAMES):
            a, s = int(actions[g]), int(before["current"][g])
            hands = [tiles_of(int(h)) for h in before["hands"][g]]
            left, right = int(before["left"][g]), int(before["right"][g])
            if a != pass_action:
                hands[s].discard(a // 2)
                left, right = naive_play(left, right, a, tiles)
            domino = a != pass_action and not hands[s]
            can_place = any(left in tiles[t] or right in tiles[t] for h in hands for t in h)
            hand_over = domino or not can_place
            assert bool(info["hand_over"][g]) == hand_over
            hand_start[g] = hand_over
            old_scores = before["scores"][g]
            if not hand_over:
                assert not rewards[g].any() and not terminated[g]
                np.testing.assert_array_equal(after["scores"][g], old_scores)
                assert after["current"][g] == (s + 1) % n
                continue
            ended_hands += 1
            points = naive_points(sides, hands, s if domino else None, tiles)
            assert info["hand_points"][g].tolist() == points
            assert bool(info["hand_blocked"][g]) == (not domino)
            new_scores = old_scores + np.array(points)
            over = config.episode == "hand" or new_scores.max() >= config.target
            assert bool(terminated[g]) == over
            if config.reward == "points":
                assert rewards[g].tolist() == [float(p) for p in points]
            else:
                assert abs(float(rewards[g].sum())) < 1e-4  # zero-sum
            if not over:
                # scores never decrease; the lead passes one seat clockwise
                np.testing.assert_array_equal(after["scores"][g], new_scores)
                if config.opener == "rotate":
                    assert after["leader"][g] == (before["leader"][g] + 1) % n
                    assert after["current"][g] == after["leader"][g]
            else:
                assert not after["scores"][g].any()  # a new match started
    assert ended_hands >= NUM_GAMES


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_leak_same_hand_and_public_history_same_observation(backend: str) -> None:
    """Pairs of games give seat 0 the same hand while the opponent's hands differ (tiles
    swapped with the out-of-play pool); played in lockstep with the same public actions,
    seat 0 sees identical observations."""
    rng = np.random.default_rng(3)
    pairs = 32
    options = []
    for _ in range(pairs):
        order = rng.permutation(28)
        mine, theirs, spare = order[:7], order[7:14], order[14:]
        other = theirs.copy()
        other[:3] = spare[:3]  # the opponent differs by three tiles
        for opp in (theirs, other):
            options.append(
                {"hands": [[STANDARD_TILES[t] for t in mine], [STANDARD_TILES[t] for t in opp]]}
            )
            options[-1]["leader"] = 0
    env = BatchedEnv(2 * pairs, **engine(backend), num_players=2)
    obs, mask, seat = (to_np(x) for x in env.reset(seed=0, options=options))
    alive = np.ones(pairs, dtype=bool)
    compared = 0
    for _ in range(20):
        actions = np.zeros(2 * pairs, dtype=np.int64)
        for p in range(pairs):
            a, b = 2 * p, 2 * p + 1
            common = np.flatnonzero(mask[a] & mask[b])
            if alive[p] and seat[a] == seat[b] == 0:
                np.testing.assert_array_equal(obs[a], obs[b])
                compared += 1
            if not alive[p] or seat[a] != seat[b] or not len(common):
                alive[p] = False
                actions[a] = np.flatnonzero(mask[a])[0]
                actions[b] = np.flatnonzero(mask[b])[0]
                continue
            actions[a] = actions[b] = common[rng.integers(len(common))]
        obs, mask, seat, _, _, info = env.step(actions)
        obs, mask, seat = to_np(obs), to_np(mask), to_np(seat)
        alive &= ~to_np(info["hand_over"]).reshape(pairs, 2).any(1)
    assert compared >= 3 * pairs


@pytest.mark.parametrize("backend", BACKENDS)
def test_fast_deals_are_reproducible_and_fair(backend: str) -> None:
    def trajectory(seed: int) -> list[np.ndarray]:
        env = BatchedEnv(16, **engine(backend), num_players=3)
        obs, mask, _ = env.reset(seed=seed)
        out = [to_np(obs)]
        for _ in range(40):
            obs, mask, *_ = env.step(env.sample_actions(mask))
            out.append(to_np(obs))
        return out

    first, again, other = trajectory(5), trajectory(5), trajectory(6)
    assert all(np.array_equal(x, y) for x, y in zip(first, again))
    assert not all(np.array_equal(x, y) for x, y in zip(first, other))

    games = 6000
    env = BatchedEnv(games, **engine(backend), num_players=3)
    env.reset(seed=1)
    snap = env.snapshot()
    leaders = np.bincount(snap["leader"], minlength=3)
    assert np.all(np.abs(leaders - games / 3) < 5 * np.sqrt(games * 2 / 9))  # a fair lot
    held = (snap["hands"][:, :, None] >> np.arange(28)) & 1  # (games, seat, tile)
    freq = held.mean(0)  # each seat holds each tile with probability 5/28
    sigma = np.sqrt(5 / 28 * 23 / 28 / games)
    assert np.all(np.abs(freq - 5 / 28) < 5 * sigma)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sample_actions_is_uniform_over_the_legal_actions(backend: str) -> None:
    rows = 20000
    legal = [3, 10, 11, 40, 56]
    mask = np.zeros((rows, 57), dtype=np.int8)
    mask[:, legal] = 1
    mask[: rows // 2, 3] = 0  # half the rows have one legal action fewer
    env = BatchedEnv(1, **engine(backend))
    env.reset(seed=0)
    given = mask
    if backend.startswith("torch"):
        import torch

        given = torch.as_tensor(mask)
    picks = to_np(env.sample_actions(given))
    assert mask[np.arange(rows), picks].all()
    for half, choices in ((picks[: rows // 2], legal[1:]), (picks[rows // 2 :], legal)):
        counts = np.array([(half == a).sum() for a in choices])
        expected = len(half) / len(choices)
        chi2 = ((counts - expected) ** 2 / expected).sum()
        assert chi2 < 25, (counts, chi2)  # df <= 4: p ~ 5e-5 when uniform


@pytest.mark.parametrize("backend", BACKENDS)
def test_fast_deals_of_a_small_set_are_fair(backend: str) -> None:
    games = 6000
    env = BatchedEnv(games, **engine(backend), num_players=3, max_pip=3)  # 10 tiles, 2 each
    env.reset(seed=2)
    snap = env.snapshot()
    held = (snap["hands"][:, :, None] >> np.arange(10)) & 1  # (games, seat, tile)
    assert not (snap["hands"] >> 10).any()  # only the set's tiles are dealt
    assert (held.sum(2) == 2).all()
    freq = held.mean(0)  # each seat holds each tile with probability 2/10
    sigma = np.sqrt(0.2 * 0.8 / games)
    assert np.all(np.abs(freq - 0.2) < 5 * sigma)
    assert (snap["out_of_play"] == 4).all()
