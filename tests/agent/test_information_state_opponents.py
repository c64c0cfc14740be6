"""Information-state policies as opponents outside ``evaluate``: in the single-agent wrapper
(``SingleAgentBlockEnv``, ``set_opponents``) and in the terminal game (``block_env.play``,
opponents and the hint agent). Each such agent gets the information state, every other
agent (and the learner) the observation it had before, as ``evaluate`` does."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import agents
from agents.network import ActorCritic, NetConfig
from agents.policy import PolicyAgent
from agents.policy_files import save_policy
from block_env import play, records
from block_env.config import BlockConfig
from block_env.env import raw_env
from block_env.information_state import history_slots, information_state_dim
from block_env.wrappers import SingleAgentBlockEnv

PLAIN_DIM = 122  # the plain observation of the standard set


def hand_game(num_players: int) -> dict[str, Any]:
    """The single-hand game the test policies are made for (and the envs play)."""
    return {
        "num_players": num_players,
        "opener": "rotate",
        "episode": "hand",
        "partnership": False,
        "target_score": None,
        "reward": "zero_sum",
    }


def write_policy(path: Path, num_players: int, seed: int = 0) -> Path:
    """A small untrained information-state policy file for ``hand_game(num_players)``."""
    torch.manual_seed(seed)
    config = BlockConfig(**hand_game(num_players))
    model = ActorCritic(
        NetConfig(hidden=(32, 32)),
        max_pip=config.max_pip,
        obs_type="information_state",
        history_slots=history_slots(config),
    )
    save_policy(path, model, game=hand_game(num_players))
    return path


@pytest.fixture(scope="module")
def policy_files(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    folder = tmp_path_factory.mktemp("policies")
    return {n: write_policy(folder / f"info{n}p.pt", n, seed=n) for n in (2, 3)}


class Spy:
    """Plays ``inner`` and logs every (observation, action); reads what ``inner`` reads."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.obs_type = getattr(inner, "obs_type", "observation")
        self.log: list[tuple[dict[str, np.ndarray], int]] = []

    def act(self, observation: dict[str, np.ndarray]) -> int:
        action = int(self.inner.act(observation))
        self.log.append(({k: np.array(v) for k, v in observation.items()}, action))
        return action


class Script:
    """A plain-observation opponent that plays the given actions in order."""

    obs_type = "observation"

    def __init__(self, actions: list[int]) -> None:
        self.actions = list(actions)
        self.seen: list[np.ndarray] = []

    def act(self, observation: dict[str, np.ndarray]) -> int:
        self.seen.append(np.array(observation["observation"]))
        action = self.actions.pop(0)
        assert observation["action_mask"][action], "the scripted run left the recorded game"
        return action


def capture_deal_seeds(env: SingleAgentBlockEnv) -> list[int]:
    """The seeds the wrapper deals its inner game env with, in order."""
    seeds: list[int] = []
    reset = env.game.reset

    def spy(seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        seeds.append(seed)
        reset(seed=seed, options=options)

    env.game.reset = spy  # type: ignore[method-assign]
    return seeds


def play_hand(
    env: SingleAgentBlockEnv, seed: int | None, rng: np.random.Generator
) -> tuple[list[np.ndarray], list[int]]:
    """One episode with random legal learner moves: the learner's observations (the first
    included) and its actions."""
    obs, info = env.reset(seed=seed)
    env.test_learner_seat = info["learner_seat"]  # type: ignore[attr-defined]
    seen, moves, done = [obs], [], False
    while not done:
        action = int(rng.choice(np.flatnonzero(env.action_masks())))
        obs, _, done, _, _ = env.step(action)
        seen.append(obs)
        moves.append(action)
    return seen, moves


# ----------------------------------------------------------------------------- wrapper


@pytest.mark.parametrize("num_players", [2, 3])
def test_an_information_state_opponent_plays_as_in_evaluate(
    policy_files: dict[int, Path], num_players: int
) -> None:
    """Whole hands against the policy (and, with 3 players, the rule bot beside it): every
    observation it got is the information state a separate info-state env hands out at the
    same position, and its every action is what it picks there."""
    spy, rules = Spy(agents.load(policy_files[num_players])), Spy(agents.make("rules"))
    lineup = [spy] if num_players == 2 else [spy, rules]
    env = SingleAgentBlockEnv(opponents=lineup, **hand_game(num_players))
    assert env.game.obs_type == "information_state"
    assert env.observation_space.shape == (PLAIN_DIM,)
    seeds = capture_deal_seeds(env)
    reference = agents.load(policy_files[num_players])
    rng = np.random.default_rng(num_players)
    ref = raw_env(obs_type="information_state", **hand_game(num_players))
    dim = information_state_dim(ref.config)
    checked = 0
    for hand in range(6):
        spy.log.clear()
        rules.log.clear()
        learner_obs, learner_moves = play_hand(env, 100 + hand if hand == 0 else None, rng)
        assert all(o.shape == (PLAIN_DIM,) for o in learner_obs)
        seat = env.test_learner_seat  # type: ignore[attr-defined]
        # replay the same deal and moves in the separately built env
        ref.reset(seed=seeds[-1])
        log, mine, bot = list(spy.log), list(learner_moves), list(rules.log)
        while not all(ref.terminations.values()):
            agent = ref.agent_selection
            observation = ref.observe(agent)
            relative = (int(agent.rsplit("_", 1)[1]) - seat) % num_players
            if relative == 0:
                action = mine.pop(0)
            elif relative == 1:
                got, action = log.pop(0)
                assert got["observation"].shape == (dim,)
                np.testing.assert_array_equal(got["observation"], observation["observation"])
                np.testing.assert_array_equal(got["action_mask"], observation["action_mask"])
                assert reference.act(observation) == action
                checked += 1
            else:  # the rule bot got the plain part
                got, action = bot.pop(0)
                np.testing.assert_array_equal(
                    got["observation"], observation["observation"][:PLAIN_DIM]
                )
            ref.step(action)
        assert not log and not mine and not bot  # every move of both runs was matched
    assert checked >= 12


def test_the_learner_sees_the_same_whether_its_opponent_reads_the_information_state(
    policy_files: dict[int, Path],
) -> None:
    """The same hands against the info-state policy and against a plain opponent that
    plays the policy's moves: the learner's space and every observation are identical,
    while only the first run's game env hands out the information state."""
    for scale in (False, True):
        spy = Spy(agents.load(policy_files[2]))
        with_info = SingleAgentBlockEnv(opponents=spy, scale_obs=scale, **hand_game(2))
        rng = np.random.default_rng(7)
        runs = [play_hand(with_info, 5 if k == 0 else None, rng) for k in range(4)]
        assert with_info.game.obs_type == "information_state"
        script = Script([action for _, action in spy.log])
        plain = SingleAgentBlockEnv(opponents=script, scale_obs=scale, **hand_game(2))
        assert plain.game.obs_type == "observation"
        assert plain.observation_space == with_info.observation_space
        rng = np.random.default_rng(7)
        again = [play_hand(plain, 5 if k == 0 else None, rng) for k in range(4)]
        assert not script.actions
        for (obs_a, moves_a), (obs_b, moves_b) in zip(runs, again, strict=True):
            assert moves_a == moves_b
            for a, b in zip(obs_a, obs_b, strict=True):
                assert a.shape == b.shape == (PLAIN_DIM,) and a.dtype == b.dtype
                np.testing.assert_array_equal(a, b)
                assert plain.observation_space.contains(a)
        # the plain opponent saw the plain part of what the policy saw
        for (got, _), seen in zip(spy.log, script.seen, strict=True):
            np.testing.assert_array_equal(got["observation"][:PLAIN_DIM], seen)


def test_set_opponents_switches_between_plain_and_information_state(
    policy_files: dict[int, Path],
) -> None:
    env = SingleAgentBlockEnv(opponents="rules", **hand_game(2))
    space = env.observation_space
    rng = np.random.default_rng(1)
    assert env.game.obs_type == "observation"
    play_hand(env, 3, rng)
    # between episodes the game env is rebuilt at once
    spy = Spy(agents.load(policy_files[2]))
    env.set_opponents(spy)
    assert env.game.obs_type == "information_state"
    observations, _ = play_hand(env, None, rng)
    assert spy.log and all(o["observation"].shape == (1734,) for o, _ in spy.log)
    assert all(o.shape == (PLAIN_DIM,) for o in observations)
    # during an episode the running hand ends with the opponent and game env it began with
    env.reset()
    calls = len(spy.log)
    env.set_opponents("rules")
    assert env.game.obs_type == "information_state"
    done = False
    while not done:
        obs, _, done, _, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
        assert obs.shape == (PLAIN_DIM,)
    assert len(spy.log) > calls  # the running hand was finished by the policy
    calls = len(spy.log)
    observations, _ = play_hand(env, None, rng)  # the reset rebuilt the plain game env
    assert env.game.obs_type == "observation" and len(spy.log) == calls
    assert env.opponent_names == [["rules"]] and env.observation_space == space
    # a pool mixing both kinds: one info-state game env, each opponent gets its own kind
    env.set_opponents(opponent_pool=["greedy", str(policy_files[2])])
    assert env.game.obs_type == "information_state"
    for _ in range(6):
        observations, _ = play_hand(env, None, rng)
        assert all(o.shape == (PLAIN_DIM,) for o in observations)
    # a bad spec changes nothing
    with pytest.raises(ValueError, match="no-such-bot"):
        env.set_opponents("no-such-bot")
    assert env.opponent_names == [["greedy"], [str(policy_files[2])]]
    assert env.game.obs_type == "information_state"


def test_an_information_state_learner_plays_plain_and_information_state_opponents(
    policy_files: dict[int, Path],
) -> None:
    """The wrapper's own ``obs_type``: the learner gets the information state (its space
    says so), the rule bot the plain part of it (it refuses anything else)."""
    dim = information_state_dim(BlockConfig(**hand_game(2)))
    for opponent in ("rules", str(policy_files[2])):
        env = SingleAgentBlockEnv(opponents=opponent, obs_type="information_state", **hand_game(2))
        assert env.observation_space.shape == (dim,)
        assert env.game.obs_type == "information_state"
        rng = np.random.default_rng(0)
        for k in range(4):
            observations, moves = play_hand(env, k if k == 0 else None, rng)
            for obs in observations:
                assert obs.shape == (dim,) and env.observation_space.contains(obs)
            # the learner's last observation holds its own moves in its history
            history = observations[-2][PLAIN_DIM:]
            assert history.sum() > 0
    with pytest.raises(ValueError, match="obs_type='pixels' is not allowed"):
        SingleAgentBlockEnv(obs_type="pixels")


def test_make_env_with_a_policy_file_opponent(policy_files: dict[int, Path]) -> None:
    """The reported failure: an info-state policy file as ``make_env`` opponent."""
    from block_env.wrappers import make_env

    env = make_env(opponents=[str(policy_files[2])], **hand_game(2))
    rng = np.random.default_rng(4)
    for k in range(3):
        observations, moves = play_hand(env, k if k == 0 else None, rng)
        assert moves and observations[0].shape == (PLAIN_DIM,)


# ----------------------------------------------------------------------------- play.py


def human_positions(record: dict[str, Any], count: int) -> list[dict[str, np.ndarray]]:
    """The observations of seat 0 at its first ``count`` turns of a recorded game."""
    seen: list[dict[str, np.ndarray]] = []

    def look(raw: Any, move: dict[str, Any] | None) -> None:
        if not raw.game.episode_over and raw.agent_selection == "player_0":
            seen.append(raw.observe("player_0"))

    records.replay(record, on_step=look)
    return seen[:count]


class Answers:
    """``ask`` for the game: the given answers, then a default (or end of input)."""

    def __init__(self, answers: list[str], then: str | None = None) -> None:
        self.answers = list(answers)
        self.then = then

    def __call__(self, prompt: str) -> str:
        if self.answers:
            return self.answers.pop(0)
        if self.then is None:
            raise EOFError
        return self.then


def picks_on_replay(record: dict[str, Any], policy: PolicyAgent, seat: int) -> list[int]:
    """Replay a record in an info-state env: the policy's pick at each turn of ``seat``."""
    picks: list[int] = []

    def pick(raw: Any, move: dict[str, Any] | None) -> None:
        if not raw.game.episode_over and raw.agent_selection == f"player_{seat}":
            picks.append(policy.act(raw.observe(raw.agent_selection)))

    records.replay(record, on_step=pick, env=raw_env(obs_type="information_state", **hand_game(2)))
    return picks


def test_play_against_an_information_state_policy(
    policy_files: dict[int, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, game = str(policy_files[2]), tmp_path / "game.json"
    argv = ["--episode", "hand", "--seed", "4", "--plain", "--record", str(game)]
    status = play.main([*argv, "--opponents", path], ask=Answers(["hint"], then="1"))
    out = capsys.readouterr().out
    assert status == 0, out
    assert "failed to choose a move" not in out
    assert re.search(rf"player_1 \({re.escape(path)}\): ", out)
    assert re.search(r"Hint \(rules\): \d+\) ", out)  # a plain hint agent in this game env
    record = records.load(game)
    assert record["finished"]
    played = [m["action"] for h in record["hands"] for m in h["moves"] if m["seat"] == 1]
    assert len(played) >= 3
    assert picks_on_replay(record, agents.load(path), seat=1) == played


def test_play_with_an_information_state_hint_agent_and_resume(
    policy_files: dict[int, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, game = str(policy_files[2]), tmp_path / "game.json"
    argv = ["--episode", "hand", "--seed", "6", "--plain", "--record", str(game)]
    answers = Answers(["hint", "1", "hint", "1", "q"])
    assert play.main([*argv, "--opponents", "greedy", "--hint-agent", path], ask=answers) == 0
    out = capsys.readouterr().out
    hints = re.findall(rf"Hint \({re.escape(path)}\): (\d+)\) ", out)
    assert len(hints) == 2 and "No hint" not in out
    # the hint is what the policy picks on the information state of that position
    record = records.load(game)
    picks = picks_on_replay(record, agents.load(path), seat=0)
    # the human's first two turns: the hint's number is the pick's place among the legal moves
    legal = [
        np.flatnonzero(obs["action_mask"]).tolist() for obs in human_positions(record, count=2)
    ]
    assert [int(h) for h in hints] == [lg.index(p) + 1 for lg, p in zip(legal, picks[:2])]
    # resuming rebuilds the info-state env by replaying the record
    status = play.main(
        ["--resume", str(game), "--plain", "--hint-agent", path], ask=Answers(["hint"], then="1")
    )
    out = capsys.readouterr().out
    assert status == 0 and "No hint" not in out and records.load(game)["finished"]
    assert re.search(rf"Hint \({re.escape(path)}\): \d+\) ", out)


def test_a_hint_by_an_information_state_policy_in_a_plain_game_says_what_to_do(
    policy_files: dict[int, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(policy_files[2])
    answers = Answers([f"hint {path}", "q"])
    assert play.main(["--episode", "hand", "--seed", "2", "--plain"], ask=answers) == 0
    out = capsys.readouterr().out
    assert "reads the information state" in out and f"--hint-agent {path}" in out
