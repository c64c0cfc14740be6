"""Differential tests: ``BatchedBlockEnv`` against the BenchMARL task env (TorchRL's
``PettingZooWrapper`` over ``parallel_env``), bit for bit.

The batched env deals with ``deal_source="aec"`` and ``set_seed(s)``, so its game i deals
as the wrapper seeded with ``s + i``. Both are driven the way TorchRL's collectors drive
them (``step_and_maybe_reset``) with the same random legal actions, and at every step the
whole tensordicts (the step's, with ``"next"``, and the one after the reset) must be the
stack of the wrappers': every key, dtype, shape and bit (observations, masks, infos,
state, rewards, dones). Then the specs, TorchRL's ``check_env_specs``, bad input, and a
tiny BenchMARL training on the task with ``batched: true``. Runs in ``.venv-benchmarl``
(``bash .ci/extra-benchmarl``).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

pytest.importorskip(
    "benchmarl", reason="needs the benchmarl extra: bash .ci/extra-benchmarl builds its venv"
)
import torch  # noqa: E402
from benchmarl.algorithms import MappoConfig  # noqa: E402
from benchmarl.experiment import Experiment  # noqa: E402
from benchmarl.models.mlp import MlpConfig  # noqa: E402
from tensordict import TensorDictBase  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

from block_env.integrations.benchmarl import BlockTask  # noqa: E402
from block_env.integrations.benchmarl.agent import load_agent  # noqa: E402
from block_env.integrations.benchmarl.leaderboard import (  # noqa: E402
    experiment_config,
    task_for,
    train,
)
from block_env.integrations.benchmarl.task import env_kwargs_of  # noqa: E402
from block_env.integrations.torchrl_batched import BatchedBlockEnv  # noqa: E402

warnings.filterwarnings("ignore", message="TaskConfig python dataclass not found")
warnings.filterwarnings("ignore", message="PettingZoo in TorchRL is tested")

NUM_GAMES = 8
GAMES = {  # benchmark games (task_for's keywords) and the steps each plays
    "two_player": ({"num_players": 2, "episode": "hand"}, 240),
    "partnership": ({"num_players": 4, "partnership": True, "episode": "hand"}, 200),
    "three_player": ({"num_players": 3, "episode": "hand", "reward": "win"}, 120),
    "two_player_match": ({"num_players": 2, "episode": "match", "target_score": 30}, 120),
    "partnership_match": (
        {"num_players": 4, "partnership": True, "episode": "match", "target_score": 30},
        140,
    ),
}


def pettingzoo_envs(game: dict, seed: int) -> list:
    """``NUM_GAMES`` task envs (the PettingZoo path), game i seeded with ``seed + i``."""
    task = task_for({**game, "batched": False})
    envs = [task.get_env_fun(1, False, None, "cpu")() for _ in range(NUM_GAMES)]
    for i, env in enumerate(envs):
        env.set_seed(seed + i)
    return envs


def batched_env(game: dict, seed: int) -> BatchedBlockEnv:
    task = task_for(game)
    kwargs = env_kwargs_of(task.config)
    env = BatchedBlockEnv(NUM_GAMES, deal_source="aec", device="cpu", **kwargs)
    env.set_seed(seed)
    return env


def assert_same(got: TensorDictBase, want: TensorDictBase, where: str) -> None:
    """Same keys, and every entry of the same dtype, shape and bits."""
    assert set(got.keys(True, True)) == set(want.keys(True, True)), where
    for key in want.keys(True, True):
        a, b = got.get(key).contiguous(), want.get(key).contiguous()
        assert a.dtype == b.dtype and a.shape == b.shape, (where, key)
        if a.is_floating_point():
            a, b = a.view(torch.int32), b.view(torch.int32)
        assert torch.equal(a, b), (where, key)


def random_actions(root: TensorDictBase, groups: list[str], gen: torch.Generator) -> dict:
    """A uniformly random legal action for every seat of every game (the wait for the seats
    not to act: their only legal action)."""
    out = {}
    for group in groups:
        mask = root.get((group, "action_mask"))
        flat = mask.reshape(-1, mask.shape[-1]).to(torch.float32)
        out[group] = torch.multinomial(flat, 1, generator=gen).reshape(mask.shape[:-1])
    return out


@pytest.mark.parametrize("name", list(GAMES))
def test_matches_the_pettingzoo_task_env_step_by_step(name: str) -> None:
    game, steps = GAMES[name]
    seed = 100 + 17 * len(name)
    wrappers, batched = pettingzoo_envs(game, seed), batched_env(game, seed)
    groups = list(batched.group_map)
    assert batched.group_map == wrappers[0].group_map
    roots = [env.reset() for env in wrappers]
    root = batched.reset()
    assert_same(root, torch.stack(roots), "reset")
    gen = torch.Generator().manual_seed(seed)
    episodes = hands = 0
    for step in range(steps):
        for group, action in random_actions(root, groups, gen).items():
            root.set((group, "action"), action)
            for i, r in enumerate(roots):
                r.set((group, "action"), action[i].clone())
        data, root = batched.step_and_maybe_reset(root)
        outs = [env.step_and_maybe_reset(r) for env, r in zip(wrappers, roots)]
        roots = [out[1] for out in outs]
        assert_same(data, torch.stack([out[0] for out in outs]), f"step {step}")
        # the last actions stay in the tensordicts the policy fills next: in the games that
        # restart TorchRL's partial reset pads them (0), a whole reset keeps them
        actions = [(g, "action") for g in groups]
        assert_same(root.exclude(*actions), torch.stack(roots).exclude(*actions), f"{step}")
        episodes += int(data["next", "done"].sum())
        hands += int(data["next", groups[0], "info", "hand_over"][:, 0].sum())
    assert episodes >= NUM_GAMES * (5 if game["episode"] == "hand" else 1)
    assert hands > episodes or game["episode"] == "hand"  # matches end hands mid-episode


@pytest.mark.parametrize("name", ["two_player", "three_player", "partnership"])
def test_specs_are_the_wrappers_and_check_env_specs_passes(name: str) -> None:
    game = GAMES[name][0]
    wrapper, batched = pettingzoo_envs(game, 0)[0], batched_env(game, 0)
    for spec in ("observation", "action", "reward", "done", "state"):
        got = getattr(batched, f"full_{spec}_spec").clone()
        want = getattr(wrapper, f"full_{spec}_spec").expand(NUM_GAMES).clone()
        for key in got.keys(True, True):
            if spec == "action":  # the masks of the positions each env is in
                got[key].update_mask(None)
                want[key].update_mask(None)
        assert got == want, spec
    check_env_specs(batched, seed=0)
    rollout = batched.rollout(60, break_when_any_done=False)  # random legal actions
    assert rollout["next", "done"].any()


def test_reset_with_a_seed_deals_as_the_wrappers() -> None:
    game = GAMES["partnership"][0]
    wrappers, batched = pettingzoo_envs(game, 0), batched_env(game, 0)
    want = torch.stack([env.reset(seed=50 + i) for i, env in enumerate(wrappers)])
    assert_same(batched.reset(seed=50), want, "reset(seed=50)")
    root = batched.reset()
    root["_reset"] = torch.ones(NUM_GAMES, 1, dtype=torch.bool)
    root["_reset"][0] = False
    with pytest.raises(ValueError, match="seed restarts every game"):
        batched.reset(root, seed=1)


def test_the_task_key_batched_gives_the_batched_env() -> None:
    task = BlockTask.PARTNERSHIP.get_task()
    assert task.config.get("batched") is True  # the YAML's default: the batched engine
    env = task.get_env_fun(5, False, 0, "cpu")()
    assert isinstance(env, BatchedBlockEnv) and env.batch_size == torch.Size([5])
    assert task.group_map(env) == {
        "team_0": ["player_0", "player_2"],
        "team_1": ["player_1", "player_3"],
    }
    assert task.observation_spec(env)["team_0", "observation", "observation"].shape == (2, 122)
    assert task.state_spec(env)["state"].shape == (234,)
    assert task.action_spec(env)["team_1", "action"].shape == (2,)
    task.config["batched"] = False  # one PettingZooWrapper per game, game i seeded seed + i
    make_game = task.get_env_fun(5, False, 7, "cpu")  # what a collector calls per game
    first = [make_game() for _ in range(2)]
    assert not isinstance(first[0], BatchedBlockEnv)
    hands = [env.reset()["state"].tolist() for env in first]  # every hand of the deal
    assert hands[0] != hands[1]
    del task.config["batched"]  # a configuration without the key: the batched engine
    assert isinstance(task.get_env_fun(5, False, 0, "cpu")(), BatchedBlockEnv)
    task.config["batched"] = "yes"
    with pytest.raises(ValueError, match="batched"):
        task.get_env_fun(5, False, 0, "cpu")


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        BatchedBlockEnv(2, {"a": ["player_0"]}, num_players=2)
    with pytest.raises(ValueError, match="exactly one"):
        BatchedBlockEnv(2, {"a": ["player_0", "player_1"], "b": ["player_1"]}, num_players=2)
    env = BatchedBlockEnv(3, seed=4, num_players=3)
    root = env.reset()
    before = env.game.env.snapshot()
    bad = root.clone()
    bad.set(("player_0", "action"), torch.full((3, 1), 57))  # the seat to act may not wait
    bad.set(("player_1", "action"), torch.full((3, 1), 57))
    bad.set(("player_2", "action"), torch.full((3, 1), 57))
    with pytest.raises(ValueError, match="may not wait"):
        env.step(bad)
    root["_reset"] = torch.tensor([[True], [False], [False]])
    with pytest.raises(RuntimeError, match="mid-episode"):
        env.reset(root)
    after = env.game.env.snapshot()
    for key in before:
        assert (before[key] == after[key]).all(), key


TINY = {  # a few hundred frames per iteration, in 6 games at once, evaluated after each
    "on_policy_collected_frames_per_batch": 240,
    "on_policy_n_envs_per_worker": 6,
    "on_policy_minibatch_size": 120,
    "on_policy_n_minibatch_iters": 2,
    "off_policy_collected_frames_per_batch": 240,
    "off_policy_n_envs_per_worker": 6,
    "off_policy_n_optimizer_steps": 4,
    "off_policy_train_batch_size": 64,
    "evaluation_interval": 240,
    "evaluation_episodes": 3,
}


def test_mappo_trains_and_evaluates_on_the_batched_task(tmp_path: Path) -> None:
    task = BlockTask.PARTNERSHIP.get_task()
    task.config["batched"] = True
    experiment = Experiment(
        task=task,
        algorithm_config=MappoConfig.get_from_yaml(),
        model_config=MlpConfig.get_from_yaml(),
        critic_model_config=MlpConfig.get_from_yaml(),
        seed=0,
        config=experiment_config(tmp_path, {**TINY, "max_n_iters": 2, "max_n_frames": None}),
    )
    assert experiment.test_env.batch_size == torch.Size([3])  # one game per evaluation
    experiment.run()
    assert experiment.total_frames == 2 * 240
    evaluations = next(tmp_path.rglob("scalars/eval_reward_episode_reward_mean.csv"))
    assert len(evaluations.read_text().splitlines()) == 2
    assert next(tmp_path.rglob("scalars/train_team_1_loss_objective.csv")).read_text()


def test_qmix_trains_on_the_batched_task_and_its_policy_loads(tmp_path: Path) -> None:
    game = {"num_players": 2, "episode": "hand", "batched": True}
    out = train("qmix", game, minutes=0.001, seed=2, run_dir=tmp_path, overrides=TINY)
    assert out["iterations"] == 1 and out["env_steps"] == 240
    agent = load_agent(out["policy"])
    assert "batched" not in agent.game and agent.game["num_players"] == 2
