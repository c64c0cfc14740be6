"""The PettingZoo contract: the official test suite plus the gaps it leaves (masks, errors,
spaces, options, registration)."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from helpers import CONFIGS, config_id, run_pettingzoo_test
from pettingzoo.test import api_test, seed_test
from pettingzoo.utils.env_logger import EnvLogger

import block_env
from block_env.observation import STANDARD_OBS_DIM
from block_env.tiles import STANDARD_NUM_ACTIONS, STANDARD_PASS


@pytest.mark.parametrize("cfg", CONFIGS, ids=config_id)
def test_pettingzoo_api_and_seed_tests(cfg):
    run_pettingzoo_test(lambda: api_test(block_env.env(**cfg), num_cycles=1000))
    run_pettingzoo_test(lambda: seed_test(lambda **kw: block_env.env(**cfg, **kw), num_cycles=500))


def test_raw_env_passes_api_test_too():
    run_pettingzoo_test(lambda: api_test(block_env.raw_env(num_players=3), num_cycles=1000))


def test_spaces_identical_for_all_agents_and_player_counts_before_reset():
    spaces = []
    for cfg in CONFIGS:
        env = block_env.raw_env(**cfg)
        a0 = env.possible_agents[0]
        for agent in env.possible_agents:
            assert env.observation_space(agent) is env.observation_space(a0)
            assert env.action_space(agent) is env.action_space(a0)
        spaces.append((env.observation_space(a0), env.action_space(a0)))
    first_obs, first_act = spaces[0]
    for obs_space, act_space in spaces:
        assert obs_space == first_obs and act_space == first_act
    assert first_act.n == STANDARD_NUM_ACTIONS == 57
    assert first_obs["action_mask"].dtype == np.int8
    assert first_obs["observation"].shape == (STANDARD_OBS_DIM,)


def test_metadata_agents_and_registry():
    env = block_env.raw_env(num_players=4)
    assert env.metadata["name"] == "block-v1" == block_env.ENV_ID.split("/")[1]
    assert env.metadata["render_modes"] == ["human", "ansi", "rgb_array", "svg"]
    assert env.possible_agents == ["player_0", "player_1", "player_2", "player_3"]
    import pettingzoo

    made = pettingzoo.make("aec", "block_env/block-v1", num_players=3)
    made.reset(seed=0)
    assert made.unwrapped.config.num_players == 3


def test_env_pickles_with_its_config():
    env = pickle.loads(pickle.dumps(block_env.raw_env(num_players=4, partnership=True)))
    env.reset(seed=1)
    assert env.config.partnership and env.config.hand_size == 7


def test_masks_zero_off_turn_and_after_the_end(config):
    env = block_env.raw_env(**config)
    env.reset(seed=5)
    rng = np.random.default_rng(0)
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        for other in env.possible_agents:
            mask = env.observe(other)["action_mask"]
            assert mask.dtype == np.int8 and mask.shape == (STANDARD_NUM_ACTIONS,)
            if other != agent or term:
                assert not mask.any()
        if term or trunc:
            env.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        assert legal.size >= 1
        env.step(int(legal[rng.integers(legal.size)]))


@pytest.mark.parametrize(
    "cfg",
    [
        {"num_players": 5},
        {"num_players": 1},
        {"num_players": 3, "partnership": True},
        {"opener": "biggest"},
        {"episode": "set"},
        {"reward": "elo"},
        {"target_score": 0},
        {"target_score": "100"},
        {"render_mode": "gui"},
        {"lang": "fr"},
    ],
)
def test_invalid_config_raises_naming_the_value(cfg):
    key, value = next(iter(cfg.items()))
    with pytest.raises(ValueError, match=repr(value).replace("(", r"\(")):
        block_env.raw_env(**cfg)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"hands": [[(0, 1)], [(0, 1)]]}, "twice"),
        ({"hands": [[(0, 7)], [(1, 1)]]}, "not a tile"),
        ({"hands": [[(0, 1)]]}, "list of 2 hands"),
        ({"hands": [[], [(1, 1)]]}, "1 to 7"),
        ({"hands": [[(0, 1)] * 1, [(a, 6) for a in range(7)] + [(5, 5)]]}, "1 to 7"),
        ({"leader": 2}, "not a seat"),
        ({"leader": "0"}, "not a seat"),
        ({"scores": [100, 0]}, "below the target"),
        ({"scores": [1]}, "list of 2"),
        ({"hands": [[(1.9, 2.2)], [(3, 3)]]}, "must be ints"),
        ({"hands": [[(True, 2)], [(3, 3)]]}, "must be ints"),
        ({"hands": [["12"], [(3, 3)]]}, "not a tile"),
        ({"hands": [[(1, 2, 3)], [(3, 3)]]}, "not a tile"),
        ({"hands": [None, [(3, 3)]]}, "not a hand"),
        ({"hands": [5, [(3, 3)]]}, "not a hand"),
        ({"hands": [[(1, 2)], "33"]}, "not a hand"),
        ({"hands": {0: [(1, 2)], 1: [(3, 3)]}}, "got dict"),
        ({"hands": "ab"}, "list of 2 hands"),
        ({"scores": {0: 1, 1: 2}}, "got dict"),
        ({"scores": [np.True_, 0]}, "not an int"),
        ({"leader": np.True_}, "not a seat"),
    ],
)
def test_malformed_reset_options_raise_and_keep_state(options, message):
    env = block_env.raw_env()
    env.reset(seed=0)
    before = env.game
    with pytest.raises(ValueError, match=message):
        env.reset(seed=1, options=options)
    assert env.game is before


def test_unknown_option_keys_are_ignored():
    env = block_env.raw_env()
    env.reset(seed=0, options={"something_else": 1})
    assert env.game is not None


def test_options_set_up_the_position():
    env = block_env.raw_env(num_players=3)
    env.reset(
        seed=0,
        options={
            "hands": [[(0, 0)], [(1, 1), (1, 2)], [(6, 6)]],
            "leader": 2,
            "scores": [10, 20, 30],
        },
    )
    assert env.agent_selection == "player_2"
    assert env.scores == [10, 20, 30]
    assert block_env.decode(env.observe("player_1")["observation"])["hand"] == [(1, 1), (1, 2)]


@pytest.mark.parametrize("bad", [STANDARD_PASS, 57, -1, 2.0, "3", None, True])
def test_illegal_action_raises_and_changes_nothing(bad):
    env = block_env.raw_env()
    env.reset(seed=0)
    before, selection = env.game, env.agent_selection
    with pytest.raises(ValueError, match="legal"):
        env.step(bad)
    assert env.game is before and env.agent_selection == selection


def test_numpy_integer_actions_are_accepted():
    env = block_env.raw_env()
    env.reset(seed=0)
    legal = np.flatnonzero(env.observe(env.agent_selection)["action_mask"])
    env.step(np.int64(legal[0]))
    assert len(env.game.line) == 1


def test_wrapped_env_terminates_illegal_move_with_penalty():
    env = block_env.env()
    env.reset(seed=0)
    mover = env.agent_selection
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.step(STANDARD_PASS)  # never legal on the empty line
    assert all(env.terminations.values())
    assert env.rewards[mover] == -1


def test_state_is_privileged_and_observe_is_not():
    env = block_env.raw_env(num_players=3)
    env.reset(seed=2)
    state = env.state()
    assert env.state_space.contains(state)
    hands = state[: 4 * 28].reshape(4, 28)
    for seat, h in enumerate(env.game.hands):
        assert {i for i in range(28) if h >> i & 1} == set(np.flatnonzero(hands[seat]))
    obs = env.observe("player_0")["observation"]
    assert obs[:28].sum() == bin(env.game.hands[0]).count("1")
    assert obs.size < state.size


def test_next_hand_starts_at_once_with_its_leader():
    env = block_env.raw_env(num_players=2)
    env.reset(seed=4)
    rng = np.random.default_rng(1)
    while env.game.hand_number == 0:
        legal = np.flatnonzero(env.observe(env.agent_selection)["action_mask"])
        env.step(int(legal[rng.integers(legal.size)]))
    assert env.infos["player_0"]["hand_over"] and env.infos["player_1"]["hand_over"]
    assert env.agent_selection == f"player_{env.game.leader}"
    assert env.game.line == ()


def test_tiles_may_be_numpy_ints_lists_or_arrays():
    env = block_env.raw_env()
    env.reset(seed=0, options={"hands": [[(np.int64(1), 2), [0, 0]], np.array([[3, 3]])]})
    assert block_env.decode(env.observe("player_0")["observation"])["hand"] == [(0, 0), (1, 2)]
    assert block_env.decode(env.observe("player_1")["observation"])["hand"] == [(3, 3)]


@pytest.mark.parametrize("seed", [-1, 1.5, True, "3", np.float64(2.0)])
def test_bad_seeds_are_refused_and_keep_state(seed):
    env = block_env.raw_env()
    env.reset(seed=0)
    before = env.game
    with pytest.raises(ValueError, match="seed="):
        env.reset(seed=seed)
    assert env.game is before


def test_any_non_negative_int_seed_works_and_repeats():
    deals = []
    for seed in (2**70, np.uint64(2**64 - 1), np.int32(5), 2**70):
        env = block_env.raw_env()
        env.reset(seed=seed)
        deals.append(env.game.hands)
    assert deals[0] == deals[3] and deals[0] != deals[1]


def _finish(env) -> None:
    rng = np.random.default_rng(0)
    for _ in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert not env.agents


def test_step_after_every_agent_is_done_warns_like_the_wrapper():
    raw, wrapped = block_env.raw_env(episode="hand"), block_env.env(episode="hand")
    for env in (raw, wrapped):
        env.reset(seed=1)
        _finish(env)
        EnvLogger.mqueue.clear()
        env.step(None)  # PettingZoo: a no-op with a warning, never KeyError
        assert any("Should reset() first" in str(m) for m in EnvLogger.mqueue)
    game = raw.game
    with pytest.raises(ValueError, match="episode is over"):
        raw.step(0)
    assert raw.game is game
    raw.reset(seed=2)
    assert raw.agents == raw.possible_agents


def test_step_before_reset_says_so():
    with pytest.raises(RuntimeError, match="reset"):
        block_env.raw_env().step(0)
