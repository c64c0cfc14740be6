"""The whole-table picture (``rendering.render_table``, the env's ``rgb_array``): a fixed
size, hands face down for the other seats when drawn for one seat and face up in the
all-seeing view, nothing of a hidden hand leaking, the seat to act marked, the last tile
framed, scores, passes and moves changing the picture, and PettingZoo's render test."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import render_test

import agents
import block_env
from block_env import rendering, rules
from block_env.config import BlockConfig
from block_env.tiles import tile_index


def count(img: np.ndarray, colour: tuple[int, int, int]) -> int:
    return int(np.all(img == np.array(colour, dtype=np.uint8), axis=-1).sum())


def mask(*tiles: tuple[int, int]) -> int:
    return sum(1 << tile_index(t) for t in tiles)


def deal_state(config: BlockConfig, hands: tuple[int, ...], leader: int = 0) -> rules.State:
    return rules.start_hand(config, hands, leader, (0,) * config.num_players)


CONFIG = BlockConfig(num_players=3)
HANDS = (mask((0, 1), (2, 3)), mask((4, 4), (1, 5), (2, 6)), mask((3, 3)))


def test_size_is_fixed_and_type_is_uint8() -> None:
    shapes = set()
    for n in (2, 3, 4):
        env = block_env.raw_env(num_players=n, render_mode="rgb_array")
        env.reset(seed=n)
        bot = agents.make("greedy")
        for _ in range(12):
            shapes.add(env.render().shape)
            assert env.render().dtype == np.uint8
            env.step(bot.act(env.observe(env.agent_selection)))
    assert len(shapes) == 1


def test_hidden_hands_are_face_down_for_one_seat() -> None:
    state = deal_state(CONFIG, HANDS)
    seen_by_0 = rendering.render_table(CONFIG, state, viewer=0)
    everyone = rendering.render_table(CONFIG, state)
    two = BlockConfig()
    one_back = count(
        rendering.render_table(two, deal_state(two, (mask((0, 0)), mask((1, 1)))), viewer=0),
        rendering.BACK,
    )
    assert one_back > 0  # one hidden tile
    # Seat 0 sees its 2 tiles face up and the others' 4 tiles face down.
    assert count(seen_by_0, rendering.BACK) == 4 * one_back
    assert count(everyone, rendering.BACK) == 0
    assert count(everyone, rendering.FACE) > count(seen_by_0, rendering.FACE)


def test_a_hidden_hand_does_not_show() -> None:
    """Two deals that differ only inside seat 1's hand look the same to seat 0 and differ
    in the all-seeing view."""
    other = (HANDS[0], mask((5, 5), (1, 6), (0, 6)), HANDS[2])
    a, b = deal_state(CONFIG, HANDS), deal_state(CONFIG, other)
    assert np.array_equal(
        rendering.render_table(CONFIG, a, viewer=0), rendering.render_table(CONFIG, b, viewer=0)
    )
    assert not np.array_equal(rendering.render_table(CONFIG, a), rendering.render_table(CONFIG, b))
    assert not np.array_equal(
        rendering.render_table(CONFIG, a, viewer=1), rendering.render_table(CONFIG, b, viewer=1)
    )


def turn_rows(img: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.all(img[:, :6] == rendering.TURN, axis=-1).any(axis=1))


def test_the_seat_to_act_is_marked() -> None:
    rows = []
    for leader in range(3):
        img = rendering.render_table(CONFIG, deal_state(CONFIG, HANDS, leader))
        marked = turn_rows(img)
        assert marked.size > 0
        rows.append(marked.mean())
    assert rows[0] < rows[1] < rows[2]  # the band moves down the seat panels


def test_last_tile_is_framed_and_moves_change_the_picture() -> None:
    state = deal_state(CONFIG, HANDS)
    assert count(rendering.render_table(CONFIG, state), rendering.HIGHLIGHT) == 0
    after = rules.apply_action(CONFIG, state, 2 * tile_index((0, 1)))
    img = rendering.render_table(CONFIG, after)
    assert count(img, rendering.HIGHLIGHT) > 0
    with_moves = rendering.render_table(CONFIG, after, last_moves=[(0, 2 * tile_index((0, 1)))])
    assert not np.array_equal(img, with_moves)


def test_scores_target_and_passes_change_the_picture() -> None:
    state = deal_state(CONFIG, HANDS)
    base = rendering.render_table(CONFIG, state)
    scored = rendering.render_table(CONFIG, state._replace(scores=(12, 0, 0)))
    target = rendering.render_table(BlockConfig(num_players=3, target_score=40), state)
    assert CONFIG.episode == "match"  # the target is drawn in match play
    assert not np.array_equal(base, scored) and not np.array_equal(base, target)
    passed = rendering.render_table(CONFIG, state._replace(voids=(0, 0b101, 0)))
    assert count(passed, rendering.PASSED) > 0 and count(base, rendering.PASSED) == 0


def test_finished_hand_shows_its_result() -> None:
    config = BlockConfig(num_players=2, episode="hand")
    state = deal_state(config, (mask((0, 1)), mask((2, 3))))
    done = rules.apply_action(config, state, 2 * tile_index((0, 1)))
    assert done.result is not None
    assert count(rendering.render_table(config, done), rendering.TURN) > 0  # result line
    assert turn_rows(rendering.render_table(config, done)).size == 0  # nobody to act


def test_env_rgb_array_is_the_whole_table() -> None:
    env = block_env.raw_env(num_players=4, partnership=True, render_mode="rgb_array")
    env.reset(seed=0)
    img = env.render()
    expected = rendering.render_table(env.config, env.game)
    assert np.array_equal(img, expected)
    assert count(img, rendering.BACK) == 0  # the env's picture is the all-seeing view


def test_bad_viewer_is_refused() -> None:
    with pytest.raises(ValueError, match="not a seat"):
        rendering.render_table(CONFIG, deal_state(CONFIG, HANDS), viewer=3)


def test_pettingzoo_render_test_still_passes() -> None:
    render_test(lambda render_mode: block_env.env(render_mode=render_mode, num_players=3))


@pytest.mark.parametrize("max_pip", [2, 3, 5])
def test_smaller_tile_sets_draw_a_whole_game(max_pip: int) -> None:
    standard = block_env.raw_env(render_mode="rgb_array")
    standard.reset(seed=0)
    env = block_env.raw_env(
        num_players=2, max_pip=max_pip, target_score=20, render_mode="rgb_array"
    )  # a short match: several hands, the scores and the end drawn
    env.reset(seed=max_pip)
    bot = agents.make("random", seed=0)
    shape = standard.render().shape
    one = count(  # the back-colour pixels of one hidden tile
        rendering.render_table(
            BlockConfig(), deal_state(BlockConfig(), (mask((0, 0)), mask((1, 1)))), viewer=0
        ),
        rendering.BACK,
    )
    while not env.game.episode_over:
        assert env.render().shape == shape
        seen = rendering.render_table(env.config, env.game, viewer=0)
        hidden = bin(env.game.hands[1]).count("1")
        assert count(seen, rendering.BACK) == hidden * one
        env.step(bot.act(env.observe(env.agent_selection)))
