"""BenchMARL MAPPO collection on the Block tasks: frames/s of the task key ``batched: false``
(``PettingZooWrapper`` over ``parallel_env`` per game, in a ``SerialEnv``) against the
default batched path (``BatchedBlockEnv``).

Each path is a BenchMARL ``Experiment`` (MAPPO, its default YAMLs: 10 envs per worker, the
MLP actor on the CPU) whose collector gathers batches of ``--frames`` frames with the
untrained policy: environment steps, policy forward passes and TorchRL's bookkeeping, as in
one iteration's collection phase. Rounds alternate between the paths so that load on a
shared machine slows them alike; the figure is the median over rounds of frames/s (wall
clock) and of their ratio within a round. Needs ``.venv-benchmarl``.

Usage::

    python benchmarks/bench_benchmarl_collection.py                  # 2p and partnership
    python benchmarks/bench_benchmarl_collection.py --rounds 5 --frames 3000 --envs 60
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import torch  # noqa: E402
from benchmarl.algorithms import MappoConfig  # noqa: E402
from benchmarl.experiment import Experiment  # noqa: E402
from benchmarl.models.mlp import MlpConfig  # noqa: E402

from block_env.integrations.benchmarl.leaderboard import experiment_config, task_for  # noqa: E402

warnings.filterwarnings("ignore")
GAMES = {
    "block-2p-v1": {"num_players": 2, "episode": "hand"},
    "block-partnership-v1": {"num_players": 4, "partnership": True, "episode": "hand"},
}


def collector(game: dict, batched: bool, frames: int, envs: int, folder: str):
    """An iterator over MAPPO's collected batches of ``frames`` frames on ``game``, in
    ``envs`` games at once."""
    task = task_for({**game, "batched": batched})
    experiment = Experiment(
        task=task,
        algorithm_config=MappoConfig.get_from_yaml(),
        model_config=MlpConfig.get_from_yaml(),
        critic_model_config=MlpConfig.get_from_yaml(),
        seed=0,
        config=experiment_config(
            folder,
            {"on_policy_collected_frames_per_batch": frames, "on_policy_n_envs_per_worker": envs},
        ),
    )
    return iter(experiment.collector)


def timed(batches) -> float:
    """Frames/s of the next batch."""
    start = time.perf_counter()
    batch = next(batches)
    return batch.numel() / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frames", type=int, default=1200, help="frames per batch")
    parser.add_argument("--envs", type=int, default=10, help="games per collector (BenchMARL: 10)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{platform.processor() or platform.machine()}, torch {torch.__version__}")
    for name, game in GAMES.items():
        with tempfile.TemporaryDirectory() as folder:
            paths = {b: collector(game, b, args.frames, args.envs, folder) for b in (False, True)}
            for batches in paths.values():
                timed(batches)  # warm-up: first reset, compilation, allocation
            rates: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(args.rounds):
                for batched, batches in paths.items():
                    rates[batched].append(timed(batches))
        ratio = statistics.median(b / p for p, b in zip(rates[False], rates[True]))
        pz, bt = statistics.median(rates[False]), statistics.median(rates[True])
        print(
            f"{name}: PettingZoo path {pz:,.0f} frames/s, batched {bt:,.0f} frames/s, "
            f"ratio {ratio:.1f}x (median of {args.rounds} alternating rounds, "
            f"{args.frames} frames each, {args.envs} games)"
        )


if __name__ == "__main__":
    main()
