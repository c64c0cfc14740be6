"""``block-env``: one command with a subcommand per job (the console script of the package).

    block-env train [config.yaml] [key=value ...]      # python train.py
    block-env evaluate AGENT AGENT [...]               # python -m block_env.evaluate
    block-env ladder [AGENT ...] --players N           # python -m block_env.evaluate --ladder
    block-env benchmark AGENT --task block-2p-v1       # python -m block_env.benchmark
    block-env play --opponents rules                   # python -m block_env.play
    block-env replay game.json [--gif game.gif]        # python -m block_env.replay
    block-env openspiel nashconv --max-pip 2           # python -m block_env.openspiel

Each subcommand is the module's own command line (the same options, output and exit
status), named ``block-env SUBCOMMAND`` in its messages; ``block-env SUBCOMMAND --help``
lists its options with an example.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence

PROG_VARIABLE = "BLOCK_ENV_PROG"  # read by block_env.training.cli and .launch

# subcommand -> (module, one line for the overview, arguments put before the user's)
SUBCOMMANDS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "train": ("block_env.training.cli", "train a policy (python train.py)", ()),
    "evaluate": ("block_env.evaluate", "duplicate-deal evaluation with 95% CIs", ()),
    "ladder": ("block_env.evaluate", "round robin and Bradley-Terry ratings", ("--ladder",)),
    "benchmark": ("block_env.benchmark.cli", "score an agent on a frozen task", ()),
    "play": ("block_env.play", "play a match in the terminal against agents", ()),
    "replay": ("block_env.replay", "check or animate a game record", ()),
    "openspiel": ("block_env.openspiel.__main__", "exact analysis on small sets", ()),
}

EXTRAS = {"openspiel": "openspiel", "play": "play"}  # what a subcommand's imports need


def usage() -> str:
    """The overview ``block-env --help`` prints."""
    width = max(map(len, SUBCOMMANDS))
    lines = ["usage: block-env SUBCOMMAND [options]  (block-env SUBCOMMAND --help)", ""]
    lines += [f"  {name:<{width}}  {what}" for name, (_, what, _) in SUBCOMMANDS.items()]
    lines += ["", "example: block-env evaluate block-2p rules --hands 4000"]
    return "\n".join(lines)


def run_subcommand(name: str, args: list[str]) -> int:
    """Run the subcommand's module ``main`` with its ``PROG`` (the name in its messages, and
    for ``train`` in its resume command and its ranks' messages) set to ``block-env NAME``."""
    module_name, _, before = SUBCOMMANDS[name]
    prog = f"block-env {name}"
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:  # an optional library (pyspiel, torch) is not installed
        extra = EXTRAS.get(name, "train")
        print(
            f"{prog}: error: {exc}; install the {extra} extra: pip install -e '.[{extra}]'",
            file=sys.stderr,
        )
        return 2
    saved_prog, saved_env = getattr(module, "PROG", None), os.environ.get(PROG_VARIABLE)
    module.PROG = prog
    os.environ[PROG_VARIABLE] = prog  # ranks started by ``train ... nproc=N`` inherit it
    try:
        status = module.main([*before, *args])
    finally:
        module.PROG = saved_prog
        if saved_env is None:
            os.environ.pop(PROG_VARIABLE, None)
        else:
            os.environ[PROG_VARIABLE] = saved_env
    return status if isinstance(status, int) else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to the subcommand; returns its exit status (2 for an unknown one)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0 if args else 2
    if args[0] not in SUBCOMMANDS:
        print(
            f"block-env: error: unknown subcommand {args[0]!r}: use one of "
            f"{', '.join(SUBCOMMANDS)}",
            file=sys.stderr,
        )
        return 2
    return run_subcommand(args[0], args[1:])


def run() -> None:
    """The console script's entry point."""
    sys.exit(main())
