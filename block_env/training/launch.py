"""Starting the ranks of a data-parallel run from ``python train.py ... nproc=N``.

The same launcher ``torchrun --standalone --nproc-per-node=N`` uses
(``torch.distributed.launcher.api.elastic_launch``): N copies of the training command line
(``python -m block_env.training``) with the same arguments, each told its rank by the
launcher's environment variables, meeting on a free local port. A user never needs to learn
torchrun to use every core of one machine; torchrun itself stays the way to span several
machines or to restart failed ranks.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import uuid
from typing import Any

LAUNCHER_VARIABLE = "BLOCK_ENV_LAUNCHER"  # "nproc" in the ranks this module starts


def started_by_nproc() -> bool:
    """Whether this rank was started by ``launch_local`` (not by torchrun or Ray)."""
    return os.environ.get(LAUNCHER_VARIABLE) == "nproc"


def launch_local(nproc: int, threads: int, args: list[str]) -> int:
    """Run the training command line with ``args`` as ``nproc`` local ranks; returns the exit status
    (``failure_status`` when a rank failed, 130 after Ctrl-C/SIGTERM to the launcher)."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    # the ranks say what went wrong themselves; the launcher's own log lines would repeat it
    logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    config = LaunchConfig(
        min_nodes=1,
        max_nodes=1,
        nproc_per_node=nproc,
        run_id=f"block-env-{uuid.uuid4().hex[:8]}",
        rdzv_backend="c10d",
        rdzv_endpoint="localhost:0",  # a free port, as torchrun --standalone
        max_restarts=0,
        monitor_interval=0.1,
    )
    saved = dict(os.environ)
    os.environ[LAUNCHER_VARIABLE] = "nproc"
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))  # no rank takes every core
    try:
        elastic_launch(config, entrypoint=sys.executable)("-u", "-m", "block_env.training", *args)
    except ChildFailedError as exc:
        return failure_status(exc.failures)
    except SignalException:  # Ctrl-C or SIGTERM to the launcher: the ranks saved and stopped
        return 130
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return 0


def failure_status(failures: dict[int, Any]) -> int:
    """The exit status of a failed launch (``failures``: rank -> ``ProcessFailure``). A rank
    killed by a signal other than the SIGTERM the launcher stops the others with could not
    say why itself: it is named here, and the status is 128 + that signal. Otherwise the
    ranks have said what went wrong themselves, and every rank stops with the same status:
    rank 0's, or the lowest failing rank's."""
    for rank in sorted(failures):
        code = failures[rank].exitcode
        if code < 0 and -code != signal.SIGTERM:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            prog = os.environ.get("BLOCK_ENV_PROG", "train.py")
            print(f"{prog}: rank {rank} was killed by {name}", file=sys.stderr)
            return 128 - code
    code = failures[min(failures)].exitcode
    return 128 - code if code < 0 else code
