"""BenchMARL's algorithms under a wall-clock budget, for the benchmark's leaderboard.

``train(algorithm, game, minutes, seed, run_dir)`` runs BenchMARL's own recipe (its default
YAML configurations of the experiment, the algorithm and the MLP) on the Block task of
``game`` (``block_env.benchmark``'s task keywords), with only the seed, the budget and the
run folder set, CSV logs and no video (the defaults log to Weights & Biases and render).
The run stops after the first iteration (one collected batch and its training, for every
group) that ends past the budget; the policy of ``player_0``'s group is then exported
(``agent.export_policy``) to ``run_dir/policy.pt``.
"""

from __future__ import annotations

import importlib
import time
from pathlib import Path
from typing import Any

from benchmarl.experiment import Experiment, ExperimentConfig
from benchmarl.experiment.callback import Callback
from benchmarl.models.mlp import MlpConfig

from block_env.integrations.benchmarl.agent import export_policy
from block_env.integrations.benchmarl.task import BlockTask

ALGORITHMS = {"mappo": "MappoConfig", "ippo": "IppoConfig", "qmix": "QmixConfig"}


class BudgetReached(Exception):
    """Raised by ``Budget`` to end BenchMARL's collection loop (it has no wall-clock stop)."""


class Budget(Callback):
    """Ends the run at the end of the first iteration past ``seconds`` of wall time."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self.start = time.perf_counter()
        self.iterations = 0

    def on_train_end(self, training_td: Any, group: str) -> None:
        if group != list(self.experiment.train_group_map)[-1]:
            return  # an iteration trains every group in turn
        self.iterations += 1
        if time.perf_counter() - self.start >= self.seconds:
            raise BudgetReached


def task_for(game: dict[str, Any]) -> Any:
    """The BenchMARL task of a benchmark game (``Task.env_kwargs()`` of block-env's
    benchmark): the YAML of its player count and play, with ``game`` on top."""
    if game.get("partnership"):
        member = BlockTask.PARTNERSHIP
    else:
        names = {2: "TWO_PLAYER", 3: "THREE_PLAYER", 4: "FOUR_PLAYER"}
        member = BlockTask[names[game["num_players"]]]
    task = member.get_task()
    task.config.update(game)
    return task


def experiment_config(run_dir: Path, overrides: dict[str, Any] | None = None) -> ExperimentConfig:
    """BenchMARL's default experiment, logging to CSV (and JSON) in ``run_dir``, with
    ``overrides`` (``ExperimentConfig`` fields; ValueError naming an unknown one) on top."""
    config = ExperimentConfig.get_from_yaml()
    config.loggers = ["csv"]
    config.render = False
    config.save_folder = str(run_dir)
    config.max_n_frames = 10**12  # the wall clock stops the run
    for key, value in (overrides or {}).items():
        if not hasattr(config, key):
            raise ValueError(f"unknown BenchMARL experiment setting {key!r}")
        setattr(config, key, value)
    return config


def train(
    algorithm: str,
    game: dict[str, Any],
    minutes: float,
    seed: int,
    run_dir: Path,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train from scratch for ``minutes`` (``overrides``: experiment settings changed from
    BenchMARL's defaults, for tests and quick looks); what the run did (frames, iterations,
    seconds, the experiment's folder, the exported policy's path)."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown BenchMARL algorithm {algorithm!r}: use {list(ALGORITHMS)}")
    algorithms = importlib.import_module("benchmarl.algorithms")
    algorithm_config = getattr(algorithms, ALGORITHMS[algorithm]).get_from_yaml()
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    budget = Budget(60.0 * minutes)
    experiment = Experiment(
        task=task_for(game),
        algorithm_config=algorithm_config,
        model_config=MlpConfig.get_from_yaml(),
        critic_model_config=MlpConfig.get_from_yaml(),
        seed=seed,
        config=experiment_config(run_dir, overrides),
        callbacks=[budget],
    )
    try:
        experiment.run()  # closes the experiment before the budget's exception reaches here
    except BudgetReached:  # BenchMARL has printed that the run "failed": it was stopped
        print(f"BenchMARL run stopped by its {minutes:g}-minute budget", flush=True)
    wall = time.perf_counter() - budget.start
    policy = export_policy(experiment, run_dir / "policy.pt")
    return {
        "algorithm": algorithm,
        "env_steps": int(experiment.total_frames),
        "iterations": budget.iterations,
        "train_seconds": wall,
        "experiment_folder": str(experiment.folder_name),
        "policy": str(policy),
    }
