"""The Gymnasium single-agent adapter: API checks, reward bookkeeping, seats, opponents, SB3."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from block_env.tiles import STANDARD_NUM_ACTIONS
from block_env.wrappers import SingleAgentBlockEnv


class Recorder:
    """An opponent that plays its lowest legal action and remembers what it saw."""

    def __init__(self) -> None:
        self.seen: list[dict[str, np.ndarray]] = []

    def act(self, observation: dict[str, np.ndarray]) -> int:
        self.seen.append(observation)
        return int(np.flatnonzero(observation["action_mask"])[0])


def _play(env: SingleAgentBlockEnv, seed: int, rng: np.random.Generator) -> tuple[float, list]:
    """One episode with uniformly random legal learner moves: (summed reward, infos)."""
    _, info = env.reset(seed=seed)
    infos, total, done = [info], 0.0, False
    while not done:
        legal = np.flatnonzero(env.action_masks())
        _, reward, done, truncated, info = env.step(int(rng.choice(legal)))
        assert not truncated
        total += reward
        infos.append(info)
    return total, infos


@pytest.mark.parametrize(
    "kwargs",
    [
        {"episode": "hand", "scale_obs": True, "opponents": "greedy"},
        {"num_players": 3, "opponents": ["random", "rules"]},
        {"num_players": 4, "partnership": True, "episode": "hand", "learner_seat": 2},
    ],
)
def test_gymnasium_checker_passes_without_warnings(kwargs: dict) -> None:
    env = SingleAgentBlockEnv(**kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env, skip_render_check=True)


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_hand_reward_is_the_learners_zero_sum_points(num_players: int) -> None:
    env = SingleAgentBlockEnv(opponents="greedy", episode="hand", num_players=num_players)
    rng = np.random.default_rng(1)
    for seed in range(40):
        total, infos = _play(env, seed, rng)
        seat = infos[0]["learner_seat"]
        result = infos[-1]
        assert result["hand_over"] and result["match_over"]
        won = int(result["hand_points"].max())
        if result["hand_winner"] == -1:
            expected = 0.0
        elif result["hand_winner"] == seat:
            expected = float(won)
        else:
            expected = -won / (num_players - 1)
        assert total == pytest.approx(expected)


def test_match_reward_sums_to_final_score_margin() -> None:
    env = SingleAgentBlockEnv(opponents="random", num_players=3, target_score=30)
    rng = np.random.default_rng(2)
    for seed in range(10):
        total, infos = _play(env, seed, rng)
        seat = infos[0]["learner_seat"]
        scores = env.game.scores
        others = sum(scores) - scores[seat]
        assert total == pytest.approx(scores[seat] - others / 2)
        assert max(scores) >= 30


def test_learner_seat_rotates_and_opponents_play_only_their_seats() -> None:
    recorder = Recorder()
    env = SingleAgentBlockEnv(opponents=recorder, episode="hand", num_players=3)
    rng = np.random.default_rng(3)
    seats = []
    for seed in range(6):
        recorder.seen.clear()
        _, infos = _play(env, seed if seed == 0 else None, rng)
        seats.append(infos[0]["learner_seat"])
        # Every observation the opponent got was its own turn (to_act = relative seat 0).
        for obs in recorder.seen:
            assert obs["observation"][112] == 1  # to_act one-hot, relative seat 0
    assert seats == [0, 1, 2, 0, 1, 2]


def test_fixed_learner_seat_and_observation_belongs_to_learner() -> None:
    env = SingleAgentBlockEnv(opponents="rules", episode="hand", learner_seat=1)
    for seed in range(5):
        obs, info = env.reset(seed=seed)
        assert info["learner_seat"] == 1
        hand = np.flatnonzero(obs[:28])
        assert env.game.game.hands[1] == sum(1 << int(t) for t in hand)
        assert env.game.game.current == 1


def test_same_seed_same_trajectory() -> None:
    def run() -> list:
        env = SingleAgentBlockEnv(opponents="random", episode="hand", num_players=4)
        rng = np.random.default_rng(0)
        out = []
        for seed in (5, None, None):
            total, infos = _play(env, seed, rng)
            last = infos[-1]
            out.append((total, last["hand_winner"], last["hand_points"].tolist()))
        return out

    assert run() == run()


def test_action_masks_and_illegal_actions() -> None:
    env = SingleAgentBlockEnv(opponents="greedy", episode="hand")
    env.reset(seed=4)
    mask = env.action_masks()
    assert mask.dtype == bool and mask.shape == (STANDARD_NUM_ACTIONS,) and mask.any()
    illegal = int(np.flatnonzero(~mask)[0])
    _, reward, done, _, info = env.step(illegal)
    assert done and reward == -1.0 and info["illegal_action"] is True
    assert not env.action_masks().any()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    strict = SingleAgentBlockEnv(opponents="greedy", episode="hand", illegal_action="raise")
    strict.reset(seed=4)
    with pytest.raises(ValueError, match=f"action {illegal}"):
        strict.step(illegal)


def test_bad_arguments_raise_value_error() -> None:
    with pytest.raises(ValueError, match="learner_seat"):
        SingleAgentBlockEnv(learner_seat=2)
    with pytest.raises(ValueError, match="learner_seat"):
        SingleAgentBlockEnv(learner_seat="left")
    with pytest.raises(ValueError, match="opponents"):
        SingleAgentBlockEnv(opponents=["random", "random"], num_players=2)
    with pytest.raises(ValueError, match="no-such-bot"):
        SingleAgentBlockEnv(opponents="no-such-bot")
    with pytest.raises(ValueError, match="illegal_action"):
        SingleAgentBlockEnv(illegal_action="ignore")


def test_opponent_pool_draws_each_member() -> None:
    a, b = Recorder(), Recorder()
    env = SingleAgentBlockEnv(opponent_pool=[a, b], episode="hand")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(30):
        _play(env, None, rng)
    assert a.seen and b.seen


def test_maskable_ppo_trains_and_evaluates() -> None:
    import torch
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.evaluation import evaluate_policy

    torch.set_num_threads(1)
    env = SingleAgentBlockEnv(opponents="random", episode="hand", scale_obs=True)
    model = MaskablePPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=2, seed=0)
    model.learn(256)
    assert model.num_timesteps >= 256
    # A strict env raises on any illegal action, so evaluation proves masked play.
    strict = SingleAgentBlockEnv(
        opponents="random", episode="hand", scale_obs=True, illegal_action="raise"
    )
    rewards, lengths = evaluate_policy(
        model, strict, n_eval_episodes=20, return_episode_rewards=True, warn=False
    )
    assert len(rewards) == 20 and all(n >= 1 for n in lengths)


def test_info_has_the_same_keys_at_every_step() -> None:
    env = SingleAgentBlockEnv(opponents="random", num_players=3, target_score=20)
    rng = np.random.default_rng(4)
    _, infos = _play(env, 0, rng)
    keys = set(infos[0])
    assert {"hand_over", "hand_points", "match_over", "learner_seat", "illegal_action"} <= keys
    assert all(set(info) == keys for info in infos)
    assert not any(info["illegal_action"] for info in infos)
    assert infos[-1]["match_over"] and not any(info["match_over"] for info in infos[:-1])
    assert sum(info["hand_over"] for info in infos) >= 1
