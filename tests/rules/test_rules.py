"""Every rule and scoring example of docs/RULES.md, checked on the engine and through the env."""

from __future__ import annotations

import numpy as np
import pytest

import block_env
from block_env import rules
from block_env.config import BlockConfig
from block_env.tiles import STANDARD_PASS, TILE_INDEX, mask_of


def t(a: int, b: int) -> int:
    return TILE_INDEX[(min(a, b), max(a, b))]


def hand(*tiles: tuple[int, int]) -> int:
    return mask_of([t(*x) for x in tiles])


def act(a: int, b: int, end: int = 0) -> int:
    return 2 * t(a, b) + end


# --- scoring examples of docs/RULES.md --------------------------------------------------


def test_domino_opponent_with_only_double_blank_does_not_tie():
    cfg = BlockConfig(num_players=3)
    res = rules.score_hand(cfg, (0, hand((0, 0)), hand((2, 6))), domino_seat=0)
    assert res.winner == 0 and not res.blocked
    assert res.points == (8, 0, 0)


def test_domino_both_opponents_hold_five():
    cfg = BlockConfig(num_players=3)
    res = rules.score_hand(cfg, (hand((1, 4)), 0, hand((2, 3))), domino_seat=1)
    assert res.points == (0, 10, 0)


def test_blocked_3_7_8_scores_12():
    cfg = BlockConfig(num_players=3)
    res = rules.score_hand(cfg, (hand((1, 2)), hand((3, 4)), hand((2, 6))), domino_seat=None)
    assert res.blocked and res.winner == 0
    assert res.pips == (3, 7, 8)
    assert res.points == (12, 0, 0)


def test_blocked_tied_lowest_scores_nothing():
    cfg = BlockConfig(num_players=3)
    res = rules.score_hand(cfg, (hand((1, 2)), hand((0, 3)), hand((2, 6))), domino_seat=None)
    assert res.winner is None and res.points == (0, 0, 0)


@pytest.mark.parametrize(
    ("n", "hands", "expected"),
    [
        (2, [[(1, 2)], [(3, 4)]], (4, 0)),
        (4, [[(3, 4)], [(1, 2)], [(2, 6)], [(0, 5)]], (0, 7 + 8 + 5 - 3, 0, 0)),
        (4, [[(3, 4)], [(1, 2)], [(0, 3)], [(0, 5)]], (0, 0, 0, 0)),
    ],
)
def test_blocked_scoring_for_2_and_4_players(n, hands, expected):
    cfg = BlockConfig(num_players=n)
    res = rules.score_hand(cfg, tuple(hand(*h) for h in hands), domino_seat=None)
    assert res.points == expected


def test_partnership_scores_as_teams():
    cfg = BlockConfig(num_players=4, partnership=True)
    hands = (hand((1, 1)), hand((0, 4)), hand((0, 3)), hand((2, 4)))  # team A 2+3, team B 4+6
    blocked = rules.score_hand(cfg, hands, domino_seat=None)
    assert blocked.points == (5, 0, 5, 0) and blocked.winner == 0
    domino = rules.score_hand(cfg, (0, hands[1], hands[2], hands[3]), domino_seat=0)
    assert domino.points == (10, 0, 10, 0)  # the two opposing hands, not the partner's
    tied = rules.score_hand(cfg, (hand((1, 1)), hand((0, 1)), hand((0, 3)), hand((0, 4))), None)
    assert tied.points == (0, 0, 0, 0) and tied.winner is None


def test_points_are_raw_and_match_keeps_points_past_target():
    env = block_env.raw_env(num_players=2)
    env.reset(
        seed=0, options={"hands": [[(1, 2)], [(2, 3), (6, 6)]], "leader": 0, "scores": [95, 40]}
    )
    env.step(act(1, 2))
    assert env.scores == [95 + 17, 40]  # 17 raw points, not rounded to a multiple of 5
    info = env.infos["player_1"]
    assert info["hand_points"].tolist() == [17, 0]
    assert info["match_over"] and info["match_winner"] == 0
    assert info["match_winners"].tolist() == [True, False]
    assert all(env.terminations.values())


# --- play rules ---------------------------------------------------------------------------


def test_empty_line_allows_any_tile_on_left_only_and_sets_ends():
    env = block_env.raw_env()
    env.reset(seed=3, options={"hands": [[(1, 4), (5, 5)], [(4, 6)]], "leader": 0})
    mask = env.observe("player_0")["action_mask"]
    assert set(np.flatnonzero(mask)) == {act(1, 4), act(5, 5)}
    env.step(act(1, 4))
    assert (env.game.left, env.game.right) == (1, 4)


def test_double_keeps_end_value_and_never_branches():
    env = block_env.raw_env()
    env.reset(seed=0, options={"hands": [[(1, 4), (4, 4), (0, 0)], [(1, 1), (0, 1)]], "leader": 0})
    env.step(act(1, 4))
    env.step(act(1, 1, 0))
    assert (env.game.left, env.game.right) == (1, 4)
    env.step(act(4, 4, 1))
    assert (env.game.left, env.game.right) == (1, 4)
    assert len(env.game.line) == 3


def test_same_value_on_both_ends_gives_two_actions():
    env = block_env.raw_env()
    env.reset(seed=0, options={"hands": [[(2, 2), (6, 6)], [(2, 5), (0, 0)]], "leader": 0})
    env.step(act(2, 2))
    legal = set(np.flatnonzero(env.observe("player_1")["action_mask"]))
    assert legal == {act(2, 5, 0), act(2, 5, 1)}


def test_must_play_if_able_and_pass_only_when_nothing_fits():
    env = block_env.raw_env()
    env.reset(
        seed=0, options={"hands": [[(1, 4), (5, 6), (1, 3)], [(0, 2), (3, 6), (4, 6)]], "leader": 0}
    )
    env.step(act(1, 4))
    legal = set(np.flatnonzero(env.observe("player_1")["action_mask"]))
    assert legal == {act(4, 6, 1)}  # no pass while a tile fits
    env.step(act(4, 6, 1))
    env.step(act(5, 6, 1))  # ends are now 1 and 5
    mask = env.observe("player_1")["action_mask"]
    assert list(np.flatnonzero(mask)) == [STANDARD_PASS]
    env.step(STANDARD_PASS)
    assert env.game.voids[1] == (1 << 1) | (1 << 5)


def test_block_ends_hand_at_once_without_forced_passes():
    env = block_env.raw_env(num_players=2, episode="hand")
    env.reset(seed=0, options={"hands": [[(0, 0), (5, 6)], [(1, 2), (3, 4)]], "leader": 0})
    env.step(act(0, 0))  # nobody holds a 0 now: blocked on this very step
    info = env.infos["player_0"]
    assert (info["hand_over"], info["hand_winner"], info["hand_blocked"]) == (True, 1, True)
    assert info["hand_pips"].tolist() == [11, 10] and info["hand_points"].tolist() == [0, 1]
    assert all(env.terminations.values())


def test_domino_takes_precedence_over_block():
    env = block_env.raw_env(num_players=2, episode="hand")
    env.reset(seed=0, options={"hands": [[(1, 2)], [(5, 5)]], "leader": 0})
    env.step(act(1, 2))
    res = env.infos["player_1"]
    assert res["hand_blocked"] is False and res["hand_winner"] == 0
    assert res["hand_points"].tolist() == [10, 0]


def test_lead_rotates_after_a_tied_block():
    env = block_env.raw_env(num_players=3)
    # [3|3] opens; nobody can follow; totals 3, 3, 8: tied lowest, no points.
    env.reset(
        seed=0, options={"hands": [[(3, 3), (0, 1), (0, 2)], [(1, 2)], [(2, 6)]], "leader": 0}
    )
    env.step(act(3, 3))
    assert env.infos["player_0"]["hand_over"] and env.infos["player_0"]["hand_winner"] == -1
    assert env.scores == [0, 0, 0]
    assert env.game.leader == 1 and env.agent_selection == "player_1"
    assert env.game.hand_number == 1


def test_highest_double_opens():
    env = block_env.raw_env(num_players=2, opener="highest_double")
    env.reset(seed=0, options={"hands": [[(5, 5), (0, 1)], [(6, 6), (2, 3)]]})
    assert env.agent_selection == "player_1"
    assert list(np.flatnonzero(env.observe("player_1")["action_mask"])) == [act(6, 6)]


def test_highest_double_without_doubles_uses_heaviest_tile():
    cfg = BlockConfig(num_players=2, opener="highest_double")
    state = rules.start_hand(cfg, (hand((3, 6), (0, 1)), hand((4, 5), (1, 2))), 0, (0, 0))
    assert state.leader == 0 and state.opening_tile == t(3, 6)  # 9 pips each: higher top wins
    state = rules.start_hand(cfg, (hand((3, 6), (0, 1)), hand((4, 6), (1, 2))), 0, (0, 0))
    assert state.leader == 1 and rules.legal_actions(state) == (act(4, 6),)


def test_default_lot_is_fair():
    env = block_env.raw_env(num_players=4)
    leaders = []
    for seed in range(400):
        env.reset(seed=seed)
        leaders.append(env.game.leader)
    counts = np.bincount(leaders, minlength=4)
    assert counts.min() > 70  # each seat leads about 100 of 400


# --- match end and rewards ----------------------------------------------------------------


def test_match_draw_when_top_scores_tie_across_sides():
    cfg = BlockConfig(num_players=3)
    assert rules.match_winners(cfg, (61, 61, 3)) == (True, ())
    assert rules.match_winners(cfg, (70, 61, 3)) == (True, (0,))
    assert rules.match_winners(cfg, (60, 0, 3)) == (False, ())
    part = BlockConfig(num_players=4, partnership=True)
    assert rules.match_winners(part, (100, 5, 100, 5)) == (True, (0, 2))


def _blocked_3p_env(**config):
    env = block_env.raw_env(num_players=3, **config)
    # [0|0] opens, nobody holds a 0: blocked; totals 3, 7, 8 -> seat 0 (after the opening) wins 12.
    env.reset(seed=0, options={"hands": [[(0, 0), (1, 2)], [(3, 4)], [(2, 6)]], "leader": 0})
    env.step(act(0, 0))
    return env


def test_zero_sum_reward():
    env = _blocked_3p_env()
    assert env.rewards == {"player_0": 12.0, "player_1": -6.0, "player_2": -6.0}
    assert env.scores == [12, 0, 0]


def test_points_reward():
    env = _blocked_3p_env(reward="points")
    assert env.rewards == {"player_0": 12.0, "player_1": 0.0, "player_2": 0.0}


def test_win_reward_only_at_match_end():
    env = _blocked_3p_env(reward="win")
    assert set(env.rewards.values()) == {0.0} and not any(env.terminations.values())
    env = _blocked_3p_env(reward="win", target_score=12)
    assert env.rewards == {"player_0": 1.0, "player_1": -0.5, "player_2": -0.5}
    assert env.infos["player_2"]["match_winner"] == 0


def test_win_reward_in_hand_episode_means_winning_the_hand():
    env = _blocked_3p_env(reward="win", episode="hand")
    assert env.rewards == {"player_0": 1.0, "player_1": -0.5, "player_2": -0.5}


def test_partnership_rewards_per_member():
    env = block_env.raw_env(num_players=4, partnership=True, episode="hand")
    env.reset(
        seed=0,
        options={"hands": [[(0, 0), (1, 1)], [(0, 4), (5, 5)], [(0, 3)], [(2, 4)]], "leader": 0},
    )
    env.step(act(0, 0))
    env.step(act(0, 4, 0))  # ends 4 and 0
    env.step(act(0, 3, 1))  # seat 2 dominoes: its team scores seat 1's 10 + seat 3's 6
    res = env.infos["player_0"]
    assert res["hand_winner"] == 2 and res["hand_points"].tolist() == [16, 0, 16, 0]
    assert env.rewards == {"player_0": 16.0, "player_1": -16.0, "player_2": 16.0, "player_3": -16.0}
