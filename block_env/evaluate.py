"""``python -m block_env.evaluate``: duplicate-deal evaluation of Block agents and the
strength ladder (see docs/evaluation.md).

The code lives in ``block_env.evaluation`` and the agent specs in ``block_env.agent_specs``;
this module is the command and re-exports their public names, so
``from block_env.evaluate import evaluate`` works as well. ``PROG`` names the command in its
messages (the ``block-env evaluate`` console script sets it).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from block_env import agent_specs as _specs
from block_env import evaluation as _evaluation
from block_env.evaluation import cli as _cli

__all__ = sorted({*_evaluation.__all__, *_specs.__all__, "PROG", "main"})

PROG = _cli.PROG


def __getattr__(name: str) -> Any:
    """The public names of ``block_env.evaluation`` and ``block_env.agent_specs``."""
    for home in (_evaluation, _specs):
        if name in home.__all__:
            return getattr(home, name)
    raise AttributeError(f"module 'block_env.evaluate' has no attribute {name!r}")


def main(argv: Iterable[str] | None = None) -> int:
    """The command line (``block_env.evaluation.cli.main``) under this module's ``PROG``;
    returns the exit status."""
    return _cli.main(argv, prog=PROG)


if __name__ == "__main__":
    sys.exit(main())
