"""The data-parallel PPO run under Ray Train: ``python train.py [config] ray_workers=N``.

The same per-rank loop as torchrun's (``ppo.train_ppo`` with ``distributed.Ranks``): Ray
Train's ``TorchTrainer`` starts N workers on a local Ray instance, or on the cluster that
``RAY_ADDRESS`` names, and sets up their torch process group (gloo; with NCCL beside it for
CUDA). The run folder stays where ``train.py`` was started, whatever node rank 0 lands on:

* this process (the driver) opens the run as a one-process run does (the lock, ``--resume``
  and ``--force``, the checkpoint read and checked) and holds it until the end;
* rank 0 trains into a folder of its own node and, after every checkpoint and at the end,
  sends what changed to ``RunSink``, a small actor pinned to the driver's node, which writes
  it into the run folder (no shared file system needed);
* the outcome (the summary, or the error every rank agreed on) comes back through that actor,
  so ``train.py`` reports it as one line with the usual exit status.

Needs the ``rllib`` extra (Ray 2.60 and its own gymnasium pin: its own venv). The progress bar
is off under Ray (its log forwarding is line by line); rank 0's evaluation lines show.
Ctrl-C stops the Ray workers at once: ``--resume`` then continues from the last checkpoint.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from block_env.training.config import TrainConfig, config_from_dict
from block_env.training.distributed import Ranks, from_bytes, to_bytes
from block_env.training.errors import ConfigError, RankFailed, TrainError
from block_env.training.runs import RunFolder, close_run, open_run

RAY_MISSING = (
    "ray_workers needs Ray Train (ray[train] >= 2.60, in the rllib extra): pip install -e "
    "'.[train,rllib]' in a venv of its own (Ray pins its own gymnasium)"
)


class RunSink:
    """Writes files into the run folder on the driver's node, and holds the outcome."""

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)
        self.outcome: dict[str, Any] | None = None

    def write(self, files: dict[str, bytes]) -> None:
        for name, data in files.items():
            target = self.folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".part")
            tmp.write_bytes(data)
            os.replace(tmp, target)

    def finish(self, outcome: dict[str, Any]) -> None:
        self.outcome = outcome

    def result(self) -> dict[str, Any] | None:
        return self.outcome


class MirroredRunFolder(RunFolder):
    """Rank 0's run folder on its own node, mirrored to the driver's by ``sync``."""

    def __init__(self, path: Path, sink: Any, shown: Path) -> None:
        super().__init__(path)
        self.sink = sink
        self.shown = shown
        self._sent: dict[str, tuple[int, int]] = {}

    def sync(self) -> None:
        import ray

        changed = {}
        for file in sorted(p for p in self.path.rglob("*") if p.is_file()):
            name = file.relative_to(self.path).as_posix()
            if name.endswith(".tmp") or name == "train.lock":
                continue
            stamp = (file.stat().st_mtime_ns, file.stat().st_size)
            if self._sent.get(name) != stamp:
                changed[name] = file.read_bytes()
                self._sent[name] = stamp
        if changed:
            ray.get(self.sink.write.remote(changed))


def worker_loop(config: dict[str, Any]) -> None:
    """One Ray Train worker: a rank of ``train_ppo``; rank 0 reports the outcome."""
    from block_env.training.ppo import train_ppo
    from block_env.training.probes import callbacks_of

    cfg = config_from_dict(config["config"])
    ranks = Ranks.from_environment(cfg.dist_timeout_s)
    sink = config["sink"]
    with tempfile.TemporaryDirectory(prefix="block-env-ray-") as staging:
        opened = None
        if ranks.main:
            run = MirroredRunFolder(Path(staging), sink, Path(config["folder"]))
            if config["log"]:
                run.log.write_bytes(config["log"])
            state = from_bytes(config["state"]) if config["state"] else None
            init = from_bytes(config["init"]) if config["init"] else None
            opened = (run, state, init)
        try:
            summary = train_ppo(cfg, ranks=ranks, opened=opened, callbacks=callbacks_of(cfg))
            outcome = {"status": 0, "summary": summary}
        except TrainError as exc:
            outcome = {"status": exc.exit_status, "error": str(exc)}
    if ranks.main:
        import ray

        ray.get(sink.finish.remote(outcome))


def train_on_ray(cfg: TrainConfig, resume: str | bool | None = None, force: bool = False) -> dict:
    """Run ``cfg`` on ``cfg.ray_workers`` Ray Train workers; returns the final summary.
    TrainError (one line for ``train.py``) for anything a rank reported."""
    try:
        import ray
        from ray.train import FailureConfig, RunConfig, ScalingConfig
        from ray.train.torch import TorchConfig, TorchTrainer
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    except ImportError:
        raise ConfigError(RAY_MISSING) from None
    from block_env.training.init_policy import initial_weights
    from block_env.training.ppo import new_model

    init = None
    if cfg.init_policy and not resume:
        init = initial_weights(cfg, new_model(cfg, "cpu"))
    run, state = open_run(cfg, resume, force)
    started = False
    results = tempfile.TemporaryDirectory(prefix="block-env-ray-results-")  # Ray's own files
    try:
        if not ray.is_initialized():
            address = os.environ.get("RAY_ADDRESS") or None
            extra = {} if address else {"num_cpus": cfg.ray_workers * cfg.threads}
            ray.init(address=address, include_dashboard=False, **extra)
            started = True
        here = ray.get_runtime_context().get_node_id()
        sink = (
            ray.remote(RunSink)
            .options(
                num_cpus=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False),
            )
            .remote(str(run.path))
        )
        gpu = cfg.device.startswith("cuda")
        worker_cfg = replace(cfg, progress=False)
        trainer = TorchTrainer(
            worker_loop,
            train_loop_config={
                "config": asdict(worker_cfg),
                "sink": sink,
                "folder": str(run.path),
                "log": run.log.read_bytes() if run.log.exists() else b"",
                "state": to_bytes(state) if state is not None else b"",
                "init": to_bytes(init) if init is not None else b"",
            },
            scaling_config=ScalingConfig(
                num_workers=cfg.ray_workers,
                use_gpu=gpu,
                resources_per_worker={"CPU": cfg.threads},
            ),
            torch_config=TorchConfig(
                backend="cpu:gloo,cuda:nccl" if gpu else "gloo",
                timeout_s=int(cfg.dist_timeout_s),
            ),
            run_config=RunConfig(
                name=f"block-env-{cfg.name}",
                storage_path=results.name,
                failure_config=FailureConfig(max_failures=0),
            ),
        )
        try:
            trainer.fit()
        except Exception as exc:  # noqa: BLE001 - Ray wraps a worker's death in its own types
            outcome = ray.get(sink.result.remote())
            if outcome is None:
                detail = " ".join(str(exc).split())[:300]
                raise RankFailed(f"the Ray Train run failed: {detail}", 1) from None
        outcome = ray.get(sink.result.remote())
    finally:
        close_run(run)
        if started:
            ray.shutdown()
        results.cleanup()
    if outcome is None:
        raise RankFailed("the Ray Train run ended without a report from rank 0", 1)
    if outcome["status"]:
        raise RankFailed(outcome["error"], outcome["status"])
    return outcome["summary"]
