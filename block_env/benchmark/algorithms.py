"""The algorithms of the leaderboard: how each one trains from scratch on a task's game under
a wall-clock budget, and the agent spec its result is scored by.

Every algorithm runs its library's own recipe (the defaults of ``train.py``'s engine, or of
the example script for that library) with only the game, the seed, the budget and the run
folder set. A run stops at the first update, epoch or batch that ends past the budget, so its
wall time overshoots the budget by at most one of those; the row records what it took and
the environment steps it sampled, counted as its library counts them (``steps_counted``).

``train.py`` engines (``ppo``, ``sb3-maskable-ppo``, ``rllib-ppo``) run in-process through
``block_env.training.cli.main``; the Tianshou and TorchRL recipes are the example scripts in
``examples/`` (run from the repository's root, with the ``integrations`` extra).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

from block_env.agent_specs import SetupError
from block_env.benchmark.tasks import Task
from block_env.training.config import NO_STEP_LIMIT  # the budget is the wall clock


@dataclass(frozen=True)
class Trained:
    """What a budgeted training left behind: the agent spec the benchmark plays, or None for
    a method judged by its exact NashConv alone (``nash_conv``, computed by the method)."""

    agent: str | None
    env_steps: int
    train_wall_s: float
    nash_conv: float | None = None


# train(task, minutes, seed, run_dir, nproc, progress): one budgeted training from scratch
Trainer = Callable[[Task, float, int, Path, int, bool], Trained]


@dataclass(frozen=True)
class Algorithm:
    """One leaderboard entry: its library, what its step count counts, and how it trains.
    ``train(task, minutes, seed, run_dir, nproc, progress)`` trains from scratch on the task's
    game (``progress``: show the training's own progress bar, where its engine has one)."""

    name: str
    library: str  # the distribution whose version the row records
    extra: str  # the pip extra it needs ("" for the core install)
    steps_counted: str
    recipe: str
    train: Trainer
    small_sets_only: bool = False  # it walks the whole game tree: no full-game row


def _train_py(algo: str, extra: list[str]) -> Trainer:
    """A trainer for one of ``train.py``'s engines, ``extra`` settings on top."""

    def train(
        task: Task, minutes: float, seed: int, run_dir: Path, nproc: int, progress: bool
    ) -> Trained:
        from block_env.training.cli import main as train_main

        args = [
            *task.train_overrides(),
            f"algo={algo}",
            f"seed={seed}",
            f"time_limit_min={minutes}",
            f"total_steps={NO_STEP_LIMIT}",
            f"run_dir={run_dir}",
            "name=leaderboard",
            "keep_best=false",  # the weights at the end of the budget
            "tensorboard=false",
            f"progress={str(progress).lower()}",
            *extra,
            *([f"nproc={nproc}"] if nproc > 1 else []),
            "--force",
        ]
        status = train_main(args)
        if status != 0:
            raise SetupError(f"train.py {' '.join(args)} stopped with exit status {status}")
        summary = json.loads((run_dir / "eval.json").read_text(encoding="utf-8"))
        agent = run_dir / ("sb3_policy.pt" if algo == "sb3" else "policy.pt")
        spec = f"block_env.training.sb3:load_agent:path={agent}" if algo == "sb3" else str(agent)
        return Trained(spec, int(summary["history"][-1]["env_steps"]), summary["train_wall_s"])

    return train


def _example(module: str, extra: tuple[str, ...] = ()) -> Trainer:
    """A trainer for an example script's recipe (``examples/<module>.py``, ``extra``
    arguments on top), which saves its network in ``run_dir``; the spec of its factory."""

    def train(
        task: Task, minutes: float, seed: int, run_dir: Path, nproc: int, progress: bool
    ) -> Trained:
        if task.partnership or task.max_pip != 6 or task.hand_size is not None:
            raise SetupError(f"examples/{module}.py trains the standard individual game only")
        if not task.is_plain_hand:
            raise SetupError(f"examples/{module}.py trains one hand with the rotating lead only")
        try:
            script = import_module(f"examples.{module}")
        except ImportError as exc:
            raise SetupError(
                f"examples.{module} did not import ({exc}): run from the repository's root "
                "with the integrations extra installed"
            ) from exc
        run_dir.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        out: dict[str, Any] = script.train(
            script.parse_args(
                [
                    "--players",
                    str(task.num_players),
                    "--seed",
                    str(seed),
                    "--minutes",
                    str(minutes),
                    "--save",
                    str(run_dir),
                    *extra,
                ]
            )
        )
        (run_dir / "train.json").write_text(json.dumps(out, indent=2), encoding="utf-8")
        wall = out.get("train_seconds", time.perf_counter() - start)
        spec = f"examples.{module}:load_agent:path={run_dir / 'policy.pt'}"
        return Trained(spec, int(out["env_steps"]), float(wall))

    return train


def _openspiel_nfsp(
    task: Task, minutes: float, seed: int, run_dir: Path, nproc: int, progress: bool
) -> Trained:
    """OpenSpiel's NFSP on ``python_block_env`` (``block_env.openspiel.learners``)."""
    if task.partnership or not task.is_plain_hand:
        raise SetupError(
            "python_block_env is one hand with the rotating lead, no partnership: "
            "openspiel-nfsp cannot train this task"
        )
    try:
        from block_env.openspiel.learners import train_nfsp
    except ImportError as exc:
        raise SetupError(f"openspiel-nfsp needs the openspiel extra ({exc})") from exc
    out = train_nfsp(task.num_players, minutes, seed, run_dir, task.max_pip, task.hand_size)
    (run_dir / "train.json").write_text(json.dumps(out, indent=2), encoding="utf-8")
    spec = f"block_env.openspiel.learners:load_agent:path={run_dir / 'policy.pt'}"
    return Trained(spec, int(out["env_steps"]), float(out["train_seconds"]))


def _openspiel_cfr_plus(
    task: Task, minutes: float, seed: int, run_dir: Path, nproc: int, progress: bool
) -> Trained:
    """OpenSpiel's CFR+ on a small set's whole tree (deterministic: the seed plays no part)."""
    if task.max_pip == 6 or task.partnership:
        raise SetupError("openspiel-cfr-plus walks the whole game tree: small-set tasks only")
    try:
        from block_env.openspiel.learners import train_cfr_plus
    except ImportError as exc:
        raise SetupError(f"openspiel-cfr-plus needs the openspiel extra ({exc})") from exc
    out = train_cfr_plus(task.num_players, minutes, task.max_pip, task.hand_size)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "train.json").write_text(json.dumps(out, indent=2), encoding="utf-8")
    return Trained(None, int(out["iterations"]), float(out["train_seconds"]), out["nash_conv"])


ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        Algorithm(
            "ppo",
            "block-env",
            "train",
            "agent-steps of every seat on the batched engine (decisions with skip_forced)",
            "python train.py's defaults without the rule-bot teacher (teacher=none): "
            "self-play PPO against itself, snapshots and the bots",
            _train_py("ppo", ["teacher=none"]),
        ),
        Algorithm(
            "sb3-maskable-ppo",
            "sb3-contrib",
            "train",
            "the learner's own moves (opponents move inside the wrapper's step)",
            "train.py algo=sb3: MaskablePPO on the single-agent wrapper, opponents drawn "
            "from the configured bots",
            _train_py("sb3", []),
        ),
        Algorithm(
            "rllib-ppo",
            "ray",
            "rllib",
            "sampled environment steps (every seat's moves)",
            "train.py algo=rllib: RLlib PPO, league self-play",
            _train_py("rllib", []),
        ),
        Algorithm(
            "tianshou-dqn",
            "tianshou",
            "integrations",
            "environment steps (every seat's moves)",
            "examples/tianshou_dqn.py: DQN at one seat against masked random opponents "
            "(the budget checked every 2,000 steps)",
            _example("tianshou_dqn", ("--epoch-steps", "2000")),
        ),
        Algorithm(
            "torchrl-ppo",
            "torchrl",
            "integrations",
            "frames (every seat's moves)",
            "examples/torchrl_ppo.py: one shared masked PPO policy for every seat (self-play)",
            _example("torchrl_ppo"),
        ),
        Algorithm(
            "openspiel-nfsp",
            "open_spiel",
            "openspiel",
            "decisions of every player",
            "OpenSpiel's PyTorch NFSP on python_block_env's observation tensor, one learner "
            "per player (block_env/openspiel/learners.py); player 0's average policy is scored",
            _openspiel_nfsp,
        ),
        Algorithm(
            "openspiel-cfr-plus",
            "open_spiel",
            "openspiel",
            "iterations over the whole game tree",
            "OpenSpiel's CFR+ on python_block_env (small sets only); its average policy is "
            "judged by its exact NashConv, not played",
            _openspiel_cfr_plus,
            small_sets_only=True,
        ),
    )
}


def _benchmarl(algo: str) -> Trainer:
    """BenchMARL's ``algo`` on the parallel view (``block_env.integrations.benchmarl``)."""

    def train(
        task: Task, minutes: float, seed: int, run_dir: Path, nproc: int, progress: bool
    ) -> Trained:
        try:
            from block_env.integrations.benchmarl.leaderboard import train as run
        except ImportError as exc:
            raise SetupError(f"benchmarl-{algo} needs the benchmarl extra ({exc})") from exc
        out = run(algo, task.env_kwargs(), minutes, seed, run_dir)
        (run_dir / "train.json").write_text(json.dumps(out, indent=2), encoding="utf-8")
        spec = f"block_env.integrations.benchmarl.agent:load_agent:path={out['policy']}"
        return Trained(spec, int(out["env_steps"]), float(out["train_seconds"]))

    return train


ALGORITHMS.update(
    {
        f"benchmarl-{name}": Algorithm(
            f"benchmarl-{name}",
            "benchmarl",
            "benchmarl",
            "frames: steps of the parallel view (one move each; the other seats wait)",
            f"BenchMARL's {recipe}, its default configs (CSV logs, no video); player_0's "
            "group is scored (block_env/integrations/benchmarl/leaderboard.py)",
            _benchmarl(name),
        )
        for name, recipe in (
            ("mappo", "MAPPO: per-group actors, a critic on the privileged state"),
            ("ippo", "IPPO: per-group actors and critics on the observations"),
            ("qmix", "QMIX: per-group Q-networks mixed on the privileged state"),
        )
    }
)


def get_algorithm(name: str) -> Algorithm:
    """The algorithm named ``name``; SetupError naming the known ones otherwise."""
    if name not in ALGORITHMS:
        raise SetupError(f"unknown algorithm {name!r}; known: {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]
