"""The tile set as configuration: ``max_pip`` and ``hand_size``, their validation, the
spaces sized by the formulas of docs/RULES.md, the canonical tile order and the rules played
on small sets (worked examples on the double-two and double-three sets)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from helpers import run_pettingzoo_test

import block_env
from block_env import rules
from block_env.batched import BatchedEnv
from block_env.config import BlockConfig, default_hand_size
from block_env.observation import decode, obs_layout
from block_env.tiles import STANDARD_TILES, tile_set

# The documented default hand sizes: (players, partnership) -> sizes for max_pip 2..6.
DEFAULT_HANDS = {
    (2, False): [2, 3, 4, 5, 7],
    (3, False): [1, 2, 3, 4, 5],
    (4, False): [1, 2, 3, 4, 5],
    (4, True): [1, 2, 3, 5, 7],
}


def formula_tiles(n: int) -> int:
    return (n + 1) * (n + 2) // 2


def formula_obs(n: int) -> int:
    t = formula_tiles(n)
    return 2 * t + 6 * (n + 1) + 24


@pytest.mark.parametrize("max_pip", [2, 3, 4, 5, 6])
def test_tile_set_is_the_standard_order_restricted_to_the_set(max_pip):
    ts = tile_set(max_pip)
    assert ts.num_tiles == formula_tiles(max_pip) == len(ts.tiles)
    assert ts.tiles == tuple(t for t in STANDARD_TILES if max(t) <= max_pip)
    assert ts.tiles[:3] == ((0, 0), (0, 1), (0, 2))
    assert ts.tiles[max_pip + 1] == (1, 1) and ts.tiles[-1] == (max_pip, max_pip)
    assert ts.pass_action == 2 * ts.num_tiles and ts.num_actions == 2 * ts.num_tiles + 1
    assert ts.num_values == max_pip + 1
    for i, (a, b) in enumerate(ts.tiles):
        assert ts.tile_index((b, a)) == i
        assert ts.describe_action(2 * i + 1) == f"[{a}|{b}] on right"
    assert tile_set(max_pip) is ts  # one shared object per set
    assert pickle.loads(pickle.dumps(ts)) is ts


def test_the_standard_names_keep_their_meaning():
    assert tile_set() is tile_set(6)
    assert tile_set(6).tiles == block_env.STANDARD_TILES and len(block_env.STANDARD_TILES) == 28
    assert (
        block_env.STANDARD_PASS,
        block_env.STANDARD_NUM_ACTIONS,
        block_env.STANDARD_OBS_DIM,
    ) == (56, 57, 122)


@pytest.mark.parametrize("bad", [1, 7, 0, -1, 6.0, "6", True, None])
def test_bad_max_pip_is_refused_naming_the_key_and_the_range(bad):
    with pytest.raises(ValueError, match=r"max_pip=.* is not allowed: use an int from 2 to 6"):
        BlockConfig(max_pip=bad)
    with pytest.raises(ValueError, match="max_pip"):
        block_env.raw_env(max_pip=bad)
    with pytest.raises(ValueError, match="max_pip"):
        BatchedEnv(2, max_pip=bad)


@pytest.mark.parametrize(
    ("kwargs", "most"),
    [
        ({"num_players": 2, "max_pip": 2}, 3),
        ({"num_players": 3, "max_pip": 2}, 2),
        ({"num_players": 4, "max_pip": 2}, 1),
        ({"num_players": 4, "max_pip": 3, "partnership": True}, 2),
        ({"num_players": 2, "max_pip": 6}, 14),
        ({"num_players": 3, "max_pip": 6}, 9),
    ],
)
def test_hand_size_must_let_the_deal_fit_the_set(kwargs, most):
    assert BlockConfig(**kwargs, hand_size=most).hand_size == most
    size = BlockConfig(**kwargs, hand_size=np.int64(most)).hand_size  # numpy ints as well
    assert size == most and type(size) is int
    assert BlockConfig(**kwargs, hand_size=1).hand_size == 1
    for bad in (0, most + 1, -2, 2.0, "3", True):
        with pytest.raises(ValueError, match=rf"hand_size=.* use an int from 1 to {most}\b"):
            BlockConfig(**kwargs, hand_size=bad)
    with pytest.raises(ValueError, match="hand_size"):
        block_env.raw_env(**kwargs, hand_size=most + 1)
    with pytest.raises(ValueError, match="hand_size"):
        BatchedEnv(2, **kwargs, hand_size=most + 1)


@pytest.mark.parametrize(("num_players", "partnership"), list(DEFAULT_HANDS))
def test_default_hand_sizes_are_the_documented_ones(num_players, partnership):
    sizes = [
        BlockConfig(num_players=num_players, partnership=partnership, max_pip=n).hand_size
        for n in range(2, 7)
    ]
    assert sizes == DEFAULT_HANDS[(num_players, partnership)]
    for n, k in zip(range(2, 7), sizes):
        assert k == default_hand_size(num_players, partnership, n)
        assert num_players * k <= formula_tiles(n)  # the deal fits
    # the standard set keeps the rules' hand sizes
    assert (
        sizes[-1]
        == {(2, False): 7, (3, False): 5, (4, False): 5, (4, True): 7}[(num_players, partnership)]
    )


@pytest.mark.parametrize("max_pip", [2, 3, 4, 5, 6])
@pytest.mark.parametrize(
    "variant", [{"num_players": 2}, {"num_players": 3}, {"num_players": 4, "partnership": True}]
)
def test_spaces_are_sized_by_the_formulas(max_pip, variant):
    t = formula_tiles(max_pip)
    env = block_env.raw_env(max_pip=max_pip, **variant)
    for agent in env.possible_agents:
        assert env.action_space(agent).n == 2 * t + 1
        space = env.observation_space(agent)
        assert space["observation"].shape == (formula_obs(max_pip),)
        assert space["action_mask"].shape == (2 * t + 1,)
    assert env.state_space.shape == (4 * t + formula_obs(max_pip),)
    env.reset(seed=0)
    obs = env.observe(env.agent_selection)
    assert obs["observation"].shape == (formula_obs(max_pip),)
    assert env.observation_space(env.agent_selection)["observation"].contains(obs["observation"])
    assert env.state().shape == env.state_space.shape
    batched = BatchedEnv(3, max_pip=max_pip, **variant)
    assert (batched.obs_dim, batched.num_actions) == (formula_obs(max_pip), 2 * t + 1)
    o, m, _ = batched.reset(seed=0)
    assert o.shape == (3, formula_obs(max_pip)) and m.shape == (3, 2 * t + 1)
    fields = obs_layout(env.config).fields
    sizes = {k: v.stop - v.start for k, v in fields.items()}
    assert sizes["hand"] == sizes["line"] == t
    assert sizes["left_end"] == sizes["right_end"] == max_pip + 1
    assert sizes["voids"] == 4 * (max_pip + 1)


def test_defaults_keep_the_standard_spaces_for_every_variant():
    for kwargs in ({"num_players": 2}, {"num_players": 3}, {"num_players": 4, "partnership": True}):
        env = block_env.raw_env(**kwargs)
        assert env.action_space("player_0").n == 57
        assert env.observation_space("player_0")["observation"].shape == (122,)
        assert env.state_space.shape == (4 * 28 + 122,)
        high = env.observation_space("player_0")["observation"].high
        assert high[71:75].tolist() == [7] * 4 and high[121] == 28


def test_large_hands_widen_the_tile_count_bound():
    env = block_env.raw_env(num_players=2, hand_size=14)  # the whole set dealt
    env.reset(seed=3)
    obs = env.observe(env.agent_selection)["observation"]
    assert obs[71:73].tolist() == [14, 14] and obs[121] == 0
    assert env.observation_space("player_0")["observation"].contains(obs)


def test_double_two_worked_example():
    """Double-two, 2 players, 2 tiles each: tiles 0..5 are [0|0] [0|1] [0|2] [1|1] [1|2]
    [2|2]; actions 2*tile+end, pass = 12."""
    env = block_env.raw_env(num_players=2, max_pip=2, episode="hand")
    assert env.config.hand_size == 2
    env.reset(seed=0, options={"hands": [[(1, 2), (0, 0)], [(2, 2), (0, 1)]], "leader": 0})
    mask = env.observe("player_0")["action_mask"]
    assert np.flatnonzero(mask).tolist() == [0, 8]  # [0|0] or [1|2], left end only
    env.step(8)  # [1|2]: ends 1 and 2
    assert (env.game.left, env.game.right) == (1, 2)
    view = decode(env.observe("player_1")["observation"])
    assert view["line"] == [(1, 2)] and view["hand"] == [(0, 1), (2, 2)]
    assert view["out_of_play"] == 2 and view["left_end"] == 1 and view["right_end"] == 2
    assert np.flatnonzero(env.observe("player_1")["action_mask"]).tolist() == [2, 11]
    env.step(11)  # [2|2] on the right: ends stay 1 and 2
    assert np.flatnonzero(env.observe("player_0")["action_mask"]).tolist() == [12]  # pass
    env.step(12)
    assert decode(env.observe("player_1")["observation"])["voids"][1] == [1, 2]
    env.step(2)  # [0|1] on the left: seat 1 dominoes and scores seat 0's [0|0] = 0 pips
    info = env.infos["player_1"]
    assert info["hand_over"] and info["hand_winner"] == 1 and not info["hand_blocked"]
    assert info["hand_points"].tolist() == [0, 0]


def test_double_three_block_is_scored_as_in_the_rules():
    """Double-three, 2 players, 3 tiles each; a block is scored by the unchanged rules:
    the lower count scores the difference."""
    cfg = BlockConfig(num_players=2, max_pip=3, episode="hand")
    ts = cfg.tiles
    hands = (
        1 << ts.tile_index((3, 3)) | 1 << ts.tile_index((1, 2)),
        1 << ts.tile_index((2, 2)) | 1 << ts.tile_index((0, 1)),
    )
    state = rules.start_hand(cfg, hands, 0, (0, 0))
    state = rules.apply_action(cfg, state, 2 * ts.tile_index((3, 3)))
    assert state.result is not None and state.result.blocked  # nobody holds a 3
    assert state.result.pips == (3, 5) and state.result.points == (2, 0)


def test_reset_options_are_checked_against_the_set():
    env = block_env.raw_env(num_players=2, max_pip=3)
    with pytest.raises(ValueError, match="double-three set: values must be 0..3"):
        env.reset(options={"hands": [[(0, 4)], [(1, 1)]]})
    with pytest.raises(ValueError, match="each hand needs 1 to 3"):
        env.reset(options={"hands": [[(0, 0), (0, 1), (0, 2), (0, 3)], [(1, 1)]]})
    env.reset(options={"hands": [[(0, 3)], [(3, 3)]], "leader": 0})
    assert env.game.hands == (1 << 3, 1 << 9)


def test_deals_use_the_whole_set_and_only_it():
    cfg = BlockConfig(num_players=3, max_pip=4, hand_size=5)
    rng = np.random.default_rng(0)
    seen = 0
    for _ in range(200):
        hands = rules.deal(cfg, rng)
        assert [h.bit_count() for h in hands] == [5, 5, 5]
        union = hands[0] | hands[1] | hands[2]
        assert union.bit_count() == 15 and union == cfg.tiles.all_tiles  # all 15 dealt
        seen |= union
    assert seen == (1 << 15) - 1


def test_envs_of_a_set_copy_and_pickle_with_their_set():
    env = block_env.raw_env(num_players=3, max_pip=4)
    env.reset(seed=5)
    env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    for clone in (pickle.loads(pickle.dumps(env)), __import__("copy").deepcopy(env)):
        assert clone.config == env.config and clone.game == env.game
        assert clone.game.tiles is tile_set(4)
        for agent in env.possible_agents:
            a, b = clone.observe(agent), env.observe(agent)
            assert a["observation"].tobytes() == b["observation"].tobytes()


@pytest.mark.parametrize("kwargs", [{"max_pip": 2}, {"max_pip": 4, "num_players": 3}])
def test_pettingzoo_api_test_passes_on_small_sets(kwargs):
    from pettingzoo.test import api_test

    run_pettingzoo_test(lambda: api_test(block_env.env(**kwargs), num_cycles=300))


def test_single_agent_wrapper_follows_the_set():
    from block_env.wrappers import SingleAgentBlockEnv

    env = SingleAgentBlockEnv(opponents="rules", episode="hand", max_pip=3, num_players=3)
    assert env.action_space.n == 21
    assert env.observation_space.shape == (formula_obs(3),)
    assert env.observation_space.high[obs_layout(env.config).fields["scores"]][0] == 61 + 30
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    done, steps = False, 0
    while not done:
        assert env.observation_space.contains(obs)
        mask = env.action_masks()
        assert mask.shape == (21,) and mask.any()
        obs, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        done = terminated or truncated
        steps += 1
    assert steps >= 1


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        ("block_env", "TILES", "STANDARD_TILES"),
        ("block_env", "OBS_DIM", "STANDARD_OBS_DIM"),
        ("block_env.tiles", "PASS", "STANDARD_PASS"),
        ("block_env.tiles", "NUM_ACTIONS", "STANDARD_NUM_ACTIONS"),
        ("block_env.tiles", "NUM_TILES", "STANDARD_NUM_TILES"),
        ("block_env.observation", "OBS_DIM", "STANDARD_OBS_DIM"),
    ],
)
def test_old_standard_set_names_still_read_and_say_what_to_use(
    module: str, old: str, new: str
) -> None:
    import importlib

    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"use {new}, or the game's own"):
        value = getattr(mod, old)
    assert value == getattr(mod, new)
    with pytest.raises(AttributeError, match="has no attribute 'NOT_A_NAME'"):
        mod.NOT_A_NAME  # noqa: B018
