"""The run folder and what every training engine shares around it.

* ``open_run``: lock the folder (one run at a time; a lock left by a dead process is taken
  over), refuse to overwrite an existing run unless asked, read the checkpoint to resume.
* ``RunFolder``: the folder's files: ``log.jsonl`` (one JSON record per update, cut back to
  the checkpoint on resume), ``checkpoints/latest.pt`` (atomic writes, checked reads).
* ``StopSignals``: SIGINT/SIGTERM become a clean stop (checkpoint, exit status 130).
* the device, the progress bar (tqdm: rate and ETA) and TensorBoard.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import threading
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from block_env.training.config import NO_STEP_LIMIT, RESUMABLE, TrainConfig, run_dir_of
from block_env.training.errors import (
    BadCheckpoint,
    ConfigError,
    NothingToResume,
    RunExists,
    RunLocked,
)

CHECKPOINT_FORMAT = "block-train-checkpoint/2"
EXPECTED_CHECKPOINT = "a train.py checkpoint (a dict written by torch.save)"


def resolve_device(name: str) -> str:
    """``auto`` -> cuda when available, else cpu; ConfigError for CUDA on a machine without."""
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(
            f"config device={name!r} asked for, but CUDA is not available: use cpu or auto"
        )
    return name


# ============================================================================ the lock


def _lock_owner(path: Path) -> int | None:
    """The pid written in a lock file, None when unreadable or malformed."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


class RunLock:
    """The run folder's lock file, holding the pid of the process that trains there.

    The lock is an exclusive ``flock`` on that file, held while the run lives: the kernel
    drops it when the process ends, however it ends, so a lock file left by a dead process
    (``kill -9``) is simply taken over, and a recycled pid cannot keep a folder locked."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or RunLocked naming the live process that holds it."""
        import fcntl

        for _ in range(10):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                owner = _lock_owner(self.path)
                who = f"process {owner}" if owner is not None else "another process"
                raise RunLocked(
                    f"run folder {self.path.parent} is in use by {who} (lock file "
                    f"{self.path}): wait for that run or stop it, or pick another "
                    f"name=/run_dir="
                ) from None
            try:  # the file may have been removed by its last holder meanwhile: retry
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            self.fd = fd
            return
        raise RunLocked(f"run folder {self.path.parent}: could not take the lock {self.path}")

    def release(self) -> None:
        """Remove the lock file and drop the lock (only if this object holds it)."""
        if self.fd is None:
            return
        self.path.unlink(missing_ok=True)
        os.close(self.fd)
        self.fd = None


# ============================================================================ the folder


class RunFolder:
    """The files of one run folder. ``log.jsonl`` holds one JSON record per update."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = RunLock(path / "train.lock")
        self.log = path / "log.jsonl"
        self.checkpoints = path / "checkpoints"
        self.latest = self.checkpoints / "latest.pt"
        self.tb = path / "tb"
        self.shown = path  # the folder named to the user

    def sync(self) -> None:
        """Make what was written so far visible where the user looks (nothing to do for a
        local folder; ``ray_train`` mirrors a worker's folder to the driver's)."""

    def holds_run(self) -> bool:
        """Whether an earlier run left its log, a checkpoint or results here."""
        markers = (self.latest, self.log, self.path / "eval.json", self.path / "sb3_model.zip")
        return any(p.exists() for p in markers)

    def clear(self) -> None:
        """Forget an earlier run (``--force``): its log, checkpoint and TensorBoard events."""
        self.log.unlink(missing_ok=True)
        self.latest.unlink(missing_ok=True)
        shutil.rmtree(self.tb, ignore_errors=True)

    def append_log(self, record: dict[str, Any]) -> None:
        """One update's record; non-finite numbers are written as null (strict JSON)."""
        clean = {k: _json_number(v) for k, v in record.items()}
        with open(self.log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(clean, allow_nan=False) + "\n")

    def cut_log(self, update: int) -> None:
        """Keep the log's records up to ``update`` (the checkpoint resumed from): what a
        stopped run logged after its last checkpoint is done again, so it must go."""
        if not self.log.exists():
            return
        keep = []
        for line in self.log.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a kill
            if isinstance(record, dict) and record.get("update", math.inf) <= update:
                keep.append(line)
        tmp = self.log.with_suffix(".tmp")
        tmp.write_text("".join(line + "\n" for line in keep), encoding="utf-8")
        os.replace(tmp, self.log)

    def read_log(self) -> list[dict[str, Any]]:
        """The log's records, in order."""
        if not self.log.exists():
            return []
        return [json.loads(x) for x in self.log.read_text(encoding="utf-8").splitlines() if x]


def _json_number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def open_run(
    cfg: TrainConfig, resume: str | bool | None, force: bool, can_resume: bool = True
) -> tuple[RunFolder, dict[str, Any] | None]:
    """Lock the run folder of ``cfg`` and return it with the checkpoint to resume from
    (None for a fresh run). Refuses (one-line errors, the lock released): a folder another
    live process trains in, an existing run without ``resume``/``force``, a missing or
    unreadable checkpoint or one written by another config. Call ``close_run`` at the end."""
    run = RunFolder(run_dir_of(cfg))
    created = not run.path.exists()
    run.path.mkdir(parents=True, exist_ok=True)
    run.lock.acquire()
    try:
        state = None
        if resume:
            if not can_resume:
                raise ConfigError(f"algo={cfg.algo} runs cannot be resumed: start one with --force")
            path = Path(resume) if isinstance(resume, str) else run.latest
            state = load_checkpoint(path, cfg)
            state["source"] = str(path)  # for messages
            run.cut_log(int(state["update"]))
        elif run.holds_run() and not force:
            raise RunExists(
                f"{run.path} already holds a run: continue it with --resume, overwrite it "
                f"with --force, or pick another name=/run_dir="
            )
        else:
            run.clear()
    except BaseException:
        close_run(run)
        if created:
            with contextlib.suppress(OSError):
                run.path.rmdir()  # only if still empty
        raise
    return run, state


def close_run(run: RunFolder) -> None:
    """Release the run folder's lock."""
    run.lock.release()


# ============================================================================ checkpoints


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    """Atomic write (a killed run never leaves a half-written checkpoint)."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    # "checkpoint_format", not "format": agents.load tells a checkpoint from a policy file
    # by the absence of a top-level "format"
    torch.save({"checkpoint_format": CHECKPOINT_FORMAT, **state}, tmp)
    os.replace(tmp, path)


def read_checkpoint(path: Path) -> dict[str, Any]:
    """The dict of a checkpoint file (``weights_only``: a pickle that would run code is
    refused). NothingToResume when missing; BadCheckpoint naming the file and what was
    expected for anything else (empty, text, truncated, another kind of file)."""
    import torch

    if not path.is_file():
        raise NothingToResume(f"no checkpoint at {path}: nothing to resume")
    if path.stat().st_size == 0:
        raise BadCheckpoint(f"cannot read {path}: expected {EXPECTED_CHECKPOINT}; it is empty")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch.load fails in many ways on bad bytes
        detail = " ".join(str(exc).split())[:200] or "no detail"
        raise BadCheckpoint(
            f"cannot read {path}: expected {EXPECTED_CHECKPOINT} ({type(exc).__name__}: {detail})"
        ) from None
    if not isinstance(state, dict) or "config" not in state or "policy" not in state:
        raise BadCheckpoint(f"{path} is not {EXPECTED_CHECKPOINT}: it lacks config and policy")
    weights = state["policy"].get("weights") if isinstance(state["policy"], dict) else None
    if not isinstance(weights, dict) or not all(
        isinstance(w, torch.Tensor) and bool(torch.isfinite(w).all()) for w in weights.values()
    ):
        raise BadCheckpoint(
            f"{path} is not a usable checkpoint: its weights are missing or not finite"
        )
    if state.get("checkpoint_format") != CHECKPOINT_FORMAT:
        raise BadCheckpoint(
            f"{path} is a checkpoint of format {state.get('checkpoint_format')!r}; this train.py "
            f"resumes {CHECKPOINT_FORMAT!r} (it cannot continue older runs exactly)"
        )
    return state


# Keys added to TrainConfig after checkpoints of this format were first written, with the
# value that reproduces what a run without them did (no teacher, the plain observation).
KEYS_ADDED_LATER = {
    "teacher": "none",
    "teacher_coef": 1.0,
    "teacher_steps": 3_000_000,
    "obs_type": "observation",
    "init_policy": "",
    "rules_alone": 0.0,
    "bot_partner": 0.0,
    "belief_coef": 0.0,
}


def load_checkpoint(path: Path, cfg: TrainConfig) -> dict[str, Any]:
    """``read_checkpoint``, for a run with the same config (except ``RESUMABLE`` keys), else
    a BadCheckpoint listing the differing keys. A checkpoint written before a key existed
    counts as having the value that reproduces it (``KEYS_ADDED_LATER``)."""
    state = read_checkpoint(path)
    saved = {**KEYS_ADDED_LATER, **state["config"]}
    now = asdict(cfg)
    diff = sorted(
        k for k in set(saved) | set(now) if k not in RESUMABLE and saved.get(k) != now.get(k)
    )
    if diff:
        detail = ", ".join(f"{k}: checkpoint {saved.get(k)!r} vs now {now.get(k)!r}" for k in diff)
        raise BadCheckpoint(f"checkpoint {path} was written by a different config ({detail})")
    return state


# ============================================================================ signals


class StopRequested(Exception):
    """Raised inside ``StopSignals.at_once()`` sections when SIGINT/SIGTERM arrives."""


class StopSignals:
    """While active, SIGINT and SIGTERM do not kill the run: they are remembered
    (``requested``) so the loop stops after the update in progress, or, inside an
    ``at_once()`` section (evaluation, which holds nothing to lose), raise StopRequested
    there. Only in the main thread (elsewhere signals cannot be caught)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested: str | None = None
        self._urgent = False
        self._old: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def _handle(self, signum: int, frame: Any) -> None:
        self.requested = signal.Signals(signum).name
        if self._urgent:
            self._urgent = False
            raise StopRequested(self.requested)

    @contextlib.contextmanager
    def at_once(self) -> Iterator[None]:
        """A section a signal interrupts immediately (StopRequested)."""
        if self.requested:
            raise StopRequested(self.requested)
        self._urgent = True
        try:
            yield
        finally:
            self._urgent = False


# ============================================================================ progress, logs


def tensorboard_of(out: Path, purge_step: int | None = None) -> Any:
    """A TensorBoard writer into ``out/tb`` (None without tensorboard); ``purge_step``
    drops the events a stopped run wrote after its checkpoint."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter(str(out / "tb"), purge_step=purge_step)


def bar_of(cfg: TrainConfig, initial: int, total: int | None = None) -> Any:
    """A tqdm progress bar over environment steps (rate and ETA), None without progress.
    A run that stops on the clock alone (``NO_STEP_LIMIT``) gets steps, rate and elapsed
    time against its budget, since an ETA towards the placeholder total would mean nothing."""
    if not cfg.progress:
        return None
    from tqdm import tqdm

    if total is None and cfg.total_steps >= NO_STEP_LIMIT:
        desc = f"{cfg.time_limit_min:g}-min budget"
        return tqdm(initial=initial, desc=desc, unit="step", unit_scale=True, dynamic_ncols=True)
    if total is None:
        per_update = cfg.num_envs * cfg.rollout_steps
        total = math.ceil(cfg.total_steps / per_update) * per_update
    return tqdm(total=total, initial=initial, unit="step", unit_scale=True, dynamic_ncols=True)


def say(bar: Any, text: str) -> None:
    """Print a line without breaking the progress bar."""
    if bar is not None:
        bar.write(text)
    else:
        print(text, flush=True)
