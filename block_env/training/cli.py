"""Train a Block policy: the command line in front of ``block_env.training``
(``python train.py``, ``block-env train`` and ``python -m block_env.training`` are this).

    python train.py                                # default config (2 players)
    python train.py configs/3p.yaml total_steps=2e6 seed=1
    python train.py configs/2p.yaml --resume       # continue a stopped or killed run
    python train.py configs/2p.yaml --force        # start again in an existing run folder
    python train.py configs/smoke.yaml algo=sb3    # sb3-contrib MaskablePPO on the wrapper

The config (``block_env.training.config.TrainConfig``: defaults, then the YAML file, then
``key=value`` overrides) picks the engine with ``algo``: ``ppo`` (self-play PPO on the batched
engine, ``block_env/training/ppo.py``), ``sb3`` (``block_env/training/sb3.py``) or ``rllib``
(``block_env/training/rllib.py``). Mistakes a user can make (a bad config, an occupied or
locked run folder, an unreadable checkpoint) end with one line on stderr and exit status 2;
a run whose losses or weights turn non-finite stops with status 1 and keeps its last good
checkpoint; Ctrl-C (or SIGTERM) saves a checkpoint, prints how to resume and exits with 130.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from block_env.training import distributed
from block_env.training.config import PER_RANK, TrainConfig, load_config, run_dir_of
from block_env.training.errors import ConfigError, Interrupted, TrainError


def train(
    cfg: TrainConfig, resume: str | bool | None = None, force: bool = False, ranks: Any = None
) -> dict:
    """Run the engine ``cfg.algo`` names; returns its final summary (also written to disk).
    ``ranks``: this process's place in a data-parallel run (algo=ppo only). The native PPO
    gets the callbacks the config asks for (``probes.callbacks_of``: the NashConv probe)."""
    engine: Any
    if cfg.algo == "ppo":
        from block_env.training.ppo import train_ppo
        from block_env.training.probes import callbacks_of

        callbacks = callbacks_of(cfg)
        return train_ppo(cfg, resume=resume, force=force, ranks=ranks, callbacks=callbacks)
    if ranks is not None and ranks.many:
        raise ConfigError(f"algo={cfg.algo} runs in one process: use algo=ppo on several ranks")
    if cfg.algo == "sb3":
        from block_env.training.sb3 import train_sb3 as engine
    elif cfg.algo == "rllib":
        from block_env.training.rllib import train_rllib as engine
    else:  # validate() refuses other values; this guards configs built around it
        raise ValueError(f"config algo={cfg.algo!r} is not allowed: use ppo, sb3 or rllib")
    return engine(cfg, resume=resume, force=force)


# How messages and the resume command name this command: "train.py" (run by the interpreter)
# or "block-env train" (the console script). Ranks started by ``nproc=N`` inherit it.
PROG = os.environ.get("BLOCK_ENV_PROG", "train.py")


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status."""
    python = "python " if PROG.endswith(".py") else ""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Self-play training for Block dominoes.",
        epilog=f"example: {python}{PROG} configs/3p.yaml total_steps=2e6 seed=1 nproc=2",
    )
    parser.add_argument("config", nargs="?", help="YAML config (default: the 2-player run)")
    parser.add_argument("overrides", nargs="*", help="key=value settings overriding the config")
    parser.add_argument(
        "--resume", action="store_true", help="continue from the run folder's latest checkpoint"
    )
    parser.add_argument(
        "--checkpoint", default=None, help="with --resume: continue from this checkpoint file"
    )
    parser.add_argument("--force", action="store_true", help="overwrite an existing run folder")
    args = parser.parse_intermixed_args(argv)
    path, overrides = args.config, list(args.overrides)
    if path is not None and "=" in path and not Path(path).exists():
        overrides.insert(0, path)
        path = None
    if args.checkpoint is not None and not args.resume:
        parser.error("--checkpoint goes with --resume")
    resume = (args.checkpoint or True) if args.resume else None
    if distributed.launched():  # one rank of torchrun, of nproc=N or of Ray
        return run_rank(path, overrides, resume, args.force, argv)
    try:
        cfg = load_config(path, overrides)
        if cfg.nproc > 1:
            from block_env.training.launch import launch_local

            given = list(sys.argv[1:] if argv is None else argv)
            return launch_local(cfg.nproc, cfg.threads, given)
        if cfg.ray_workers > 0:
            from block_env.training.ray_train import train_on_ray

            train_on_ray(cfg, resume=resume, force=args.force)
        else:
            train(cfg, resume=resume, force=args.force)
    except Interrupted as exc:
        how = "" if exc.checkpoint is None else f"; resume with: {resume_command(argv)}"
        print(f"{PROG}: {exc}{how}", file=sys.stderr)
        return exc.exit_status
    except TrainError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:  # outside the training loop (setup, or an engine without resume)
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    return 0


def run_rank(
    path: str | None,
    overrides: list[str],
    resume: str | bool | None,
    force: bool,
    argv: list[str] | None,
) -> int:
    """One rank of a data-parallel run: join the others, check that every rank was given
    the same config, train. Every rank stops with the same exit status; only rank 0
    prints (a failure on another rank reaches it with that rank's number). A rank that
    torchrun restarted after a failure continues the run from its latest checkpoint, even
    when the command line says --force."""
    cfg, error = None, None
    try:
        cfg = load_config(path, overrides)
    except TrainError as exc:
        error = exc
    timeout = cfg.dist_timeout_s if cfg is not None else distributed.DEFAULT_TIMEOUT_S
    ranks = distributed.Ranks.from_environment(timeout)
    if cfg is not None and cfg.pin_cores:
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1)
        distributed.pin_to_cores(ranks.local_rank, local_world, cfg.threads)
    try:
        ranks.agree(error)
        ranks.check_same_config(asdict(cfg), PER_RANK)
        if distributed.restarted():
            latest = run_dir_of(cfg) / "checkpoints" / "latest.pt"
            resume, force = (True, False) if latest.exists() else (None, True)
        train(cfg, resume=resume, force=force, ranks=ranks)
    except Interrupted as exc:
        if ranks.main:
            print(f"{PROG}: {exc}; resume with: {rank_resume_command(argv)}", file=sys.stderr)
        return exc.exit_status
    except TrainError as exc:
        if ranks.main:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        return 130
    finally:
        ranks.close()
    return 0


def rank_resume_command(argv: list[str] | None) -> str:
    """How to continue a stopped multi-rank run: the same launcher and arguments."""
    from block_env.training.launch import started_by_nproc

    command = resume_command(argv)
    if started_by_nproc():
        return command
    return "torchrun <the same options> " + command.split(" ", 1)[1]


def resume_command(argv: list[str] | None) -> str:
    """The command that continues this run: the same arguments, --resume instead of --force."""
    args = list(sys.argv[1:] if argv is None else argv)
    kept, skip = [], False
    for a in args:
        if skip or a in ("--force", "--resume") or a.startswith("--checkpoint="):
            skip = False
            continue
        if a == "--checkpoint":  # the run goes on from its own latest checkpoint now
            skip = True
            continue
        kept.append(a)
    command = [Path(sys.executable).name, PROG] if PROG.endswith(".py") else shlex.split(PROG)
    return shlex.join([*command, *kept, "--resume"])


def run(argv: list[str] | None = None) -> None:
    """Run the command line and exit with its status."""
    status = main(argv)
    if distributed.launched():
        # A rank's work is done and its files are closed: leave without the interpreter's
        # teardown, where torch's C++ threads have been seen to abort ("terminate called
        # without an active exception") once in a dozen runs, failing a finished run.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)


if __name__ == "__main__":
    run()
