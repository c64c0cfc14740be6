"""The run folder and what every training engine shares around it: the device, checkpoints
(atomic writes, checked reads), the progress bar and TensorBoard."""

from __future__ import annotations

import math
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from block_env.training.config import RESUMABLE, TrainConfig
from block_env.training.errors import BadCheckpoint, ConfigError, NothingToResume


def resolve_device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(
            f"config device={name!r} asked for, but CUDA is not available: use cpu or auto"
        )
    return name


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    """Atomic write (a killed run never leaves a half-written checkpoint)."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: Path, cfg: TrainConfig) -> dict[str, Any]:
    """A checkpoint of a run with the same config (except ``RESUMABLE`` keys), else a
    ValueError listing the differing keys."""
    import torch

    if not path.is_file():
        raise NothingToResume(f"no checkpoint at {path}: nothing to resume")
    state = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(state, dict) or "config" not in state or "policy" not in state:
        raise BadCheckpoint(f"{path} is not a train.py checkpoint")
    saved = state["config"]
    now = asdict(cfg)
    diff = sorted(
        k for k in set(saved) | set(now) if k not in RESUMABLE and saved.get(k) != now.get(k)
    )
    if diff:
        detail = ", ".join(f"{k}: checkpoint {saved.get(k)!r} vs now {now.get(k)!r}" for k in diff)
        raise BadCheckpoint(f"checkpoint {path} was written by a different config ({detail})")
    return state


def tensorboard_of(out: Path) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter(str(out / "tb"))


def bar_of(cfg: TrainConfig, initial: int) -> Any:
    if not cfg.progress:
        return None
    from tqdm import tqdm

    total = math.ceil(cfg.total_steps / (cfg.num_envs * cfg.rollout_steps)) * (
        cfg.num_envs * cfg.rollout_steps
    )
    return tqdm(total=total, initial=initial, unit="step", unit_scale=True, dynamic_ncols=True)


def say(bar: Any, text: str) -> None:
    if bar is not None:
        bar.write(text)
    else:
        print(text, flush=True)
