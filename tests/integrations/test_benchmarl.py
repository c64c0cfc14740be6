"""BenchMARL on block-env: the Block task family, a tiny MAPPO training through the Python
API and through ``python -m benchmarl.run`` (logs and evaluations written), the policy
adapter against BenchMARL's own network, and the leaderboard's budgeted trainer."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip(
    "benchmarl", reason="needs the benchmarl extra: bash .ci/extra-benchmarl builds its venv"
)
import torch  # noqa: E402
from benchmarl.algorithms import MappoConfig  # noqa: E402
from benchmarl.environments import task_config_registry  # noqa: E402
from benchmarl.experiment import Experiment  # noqa: E402
from benchmarl.models.mlp import MlpConfig  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

import block_env  # noqa: E402
from block_env.evaluation import evaluate  # noqa: E402
from block_env.integrations.benchmarl import BlockTask, register  # noqa: E402
from block_env.integrations.benchmarl.agent import export_policy, load_agent  # noqa: E402
from block_env.integrations.benchmarl.leaderboard import experiment_config, train  # noqa: E402

warnings.filterwarnings("ignore", message="TaskConfig python dataclass not found")
warnings.filterwarnings("ignore", message="PettingZoo in TorchRL is tested")

TINY = {  # a few hundred frames per iteration, evaluated after each
    "on_policy_collected_frames_per_batch": 240,
    "on_policy_n_envs_per_worker": 2,
    "on_policy_minibatch_size": 120,
    "on_policy_n_minibatch_iters": 2,
    "off_policy_collected_frames_per_batch": 240,
    "off_policy_n_envs_per_worker": 2,
    "off_policy_n_optimizer_steps": 4,
    "off_policy_train_batch_size": 64,
    "evaluation_interval": 240,
    "evaluation_episodes": 2,
}


def test_tasks_are_registered_with_their_groups_and_state() -> None:
    register()
    expected = {
        "block/two_player": {"player_0": ["player_0"], "player_1": ["player_1"]},
        "block/three_player": {f"player_{i}": [f"player_{i}"] for i in range(3)},
        "block/four_player": {f"player_{i}": [f"player_{i}"] for i in range(4)},
        "block/partnership": {
            "team_0": ["player_0", "player_2"],
            "team_1": ["player_1", "player_3"],
        },
    }
    for name, groups in expected.items():
        task = task_config_registry[name].get_task()
        assert task.config["episode"] == "hand"
        env = task.get_env_fun(1, False, 0, "cpu")()
        assert task.group_map(env) == groups
        check_env_specs(env, seed=0)
        td = env.reset()
        assert td["state"].shape == env.observation_spec["state"].shape
        masks = torch.cat([td[g, "action_mask"].reshape(-1, 58) for g in groups])
        assert masks.shape[-1] == 58
        assert (masks[:, :57].any(-1)).sum() == 1  # one seat to act, the others only wait
        assert int(masks[:, 57].sum()) == len(masks) - 1


def test_bad_task_configuration_is_refused() -> None:
    task = BlockTask.TWO_PLAYER.get_task()
    task.config["num_players"] = 5
    with pytest.raises(ValueError, match="num_players"):
        task.get_env_fun(1, False, 0, "cpu")
    task.config["colour"] = "red"
    with pytest.raises(ValueError, match="colour"):
        task.get_env_fun(1, False, 0, "cpu")


def read_scalar(folder: Path, name: str) -> list[float]:
    files = list(folder.rglob(f"scalars/{name}.csv"))
    assert files, f"no {name}.csv under {folder}"
    with files[0].open() as f:
        return [float(row[1]) for row in csv.reader(f)]


def test_tiny_mappo_trains_logs_evaluates_and_exports_a_policy(tmp_path: Path) -> None:
    config = experiment_config(tmp_path, {**TINY, "max_n_iters": 2, "max_n_frames": None})
    experiment = Experiment(
        task=BlockTask.PARTNERSHIP.get_task(),
        algorithm_config=MappoConfig.get_from_yaml(),
        model_config=MlpConfig.get_from_yaml(),
        critic_model_config=MlpConfig.get_from_yaml(),
        seed=0,
        config=config,
    )
    experiment.run()
    assert experiment.total_frames == 2 * 240
    assert len(read_scalar(tmp_path, "eval_reward_episode_reward_mean")) == 2
    assert len(read_scalar(tmp_path, "train_team_0_loss_objective")) == 2
    results = json.loads(next(tmp_path.rglob("*.json")).read_text())
    assert "team_0" in json.dumps(results)  # evaluation returns per group

    agent = load_agent(export_policy(experiment, tmp_path / "policy.pt"))
    assert agent.group == "team_0" and agent.game["partnership"] is True
    td = experiment.test_env.reset()
    network = experiment.group_policies["team_0"].module[0]
    ours = torch.stack([agent.net(o) for o in td["team_0", "observation", "observation"]])
    torch.testing.assert_close(ours, network(td.clone())["team_0", "logits"])
    result = evaluate([agent, "random"], num_players=4, partnership=True, hands=8, seed=1)
    assert result.hands >= 8  # the adapter plays whole games of the AEC env, legally


def test_export_of_unshared_networks_takes_the_groups_first_seat(tmp_path: Path) -> None:
    config = experiment_config(tmp_path, {**TINY, "share_policy_params": False})
    experiment = Experiment(
        task=BlockTask.PARTNERSHIP.get_task(),
        algorithm_config=MappoConfig.get_from_yaml(),
        model_config=MlpConfig.get_from_yaml(),
        critic_model_config=MlpConfig.get_from_yaml(),
        seed=1,
        config=config,
    )
    agent = load_agent(export_policy(experiment, tmp_path / "p.pt", group="team_1"))
    td = experiment.test_env.reset()
    logits = experiment.group_policies["team_1"].module[0](td.clone())["team_1", "logits"]
    observations = td["team_1", "observation", "observation"]
    first, second = observations[..., 0, :], observations[..., 1, :]  # (games, seat, obs)
    torch.testing.assert_close(agent.net(first), logits[..., 0, :])  # player_1's network
    assert not torch.allclose(agent.net(second), logits[..., 1, :])  # not player_3's
    with pytest.raises(ValueError, match="unknown group"):
        export_policy(experiment, tmp_path / "q.pt", group="team_9")


def test_python_m_benchmarl_run_finds_the_block_tasks(tmp_path: Path) -> None:
    settings = [f"experiment.{k}={v}" for k, v in TINY.items()]
    command = [
        sys.executable,
        "-m",
        "benchmarl.run",
        "algorithm=mappo",
        "task=block/partnership",
        "experiment.loggers=[csv]",
        "experiment.render=false",
        "experiment.max_n_iters=1",
        *settings,
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HYDRA_FULL_ERROR": "1"}
    out = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Task: block/partnership" in out.stdout
    assert read_scalar(tmp_path, "eval_reward_episode_reward_mean")


@pytest.mark.parametrize("algorithm", ["qmix", "ippo"])
def test_budgeted_training_stops_and_its_policy_plays(algorithm: str, tmp_path: Path) -> None:
    game = {"num_players": 2, "episode": "hand", "opener": "rotate", "partnership": False}
    out = train(algorithm, game, minutes=0.001, seed=3, run_dir=tmp_path, overrides=TINY)
    assert out["iterations"] == 1 and out["env_steps"] == 240  # stopped after one
    agent = load_agent(out["policy"])
    env = block_env.raw_env(num_players=2, episode="hand")
    env.reset(seed=5)
    while env.agents:
        observation, _, done, _, _ = env.last()
        env.step(None if done else agent.act(observation))
    assert np.isfinite(agent.scores(env.observe("player_0"))).all()


def test_load_agent_refuses_other_files(tmp_path: Path) -> None:
    torch.save({"format": "something else"}, tmp_path / "x.pt")
    with pytest.raises(ValueError, match="not a block-env BenchMARL policy"):
        load_agent(tmp_path / "x.pt")
