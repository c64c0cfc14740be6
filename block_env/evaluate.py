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

from block_env.agent_specs import (
    ALIASES,
    FIT_KEYS,
    SCORE_KEYS,
    SET_KEYS,
    AgentSpec,
    SetupError,
    agent_label,
    agent_obs_type,
    build_agent,
    check_game,
    default_lineup,
    parse_spec,
    plain_observation,
)
from block_env.evaluation import (
    CHUNKS_PER_WORKER,
    LADDER_AGENTS,
    PER_DEAL_KEYS,
    Z95,
    AgentStats,
    Estimate,
    EvalPlan,
    EvalResult,
    LadderResult,
    bradley_terry,
    bradley_terry_ci,
    check_workers,
    chunk_bounds,
    chunk_seeds,
    deal_statistics,
    evaluate,
    ladder,
    ladder_specs,
    prepare,
    proportion_estimate,
    ratio_estimate,
    run,
    wilson_interval,
)
from block_env.evaluation import cli as _cli

__all__ = [
    "ALIASES",
    "CHUNKS_PER_WORKER",
    "FIT_KEYS",
    "LADDER_AGENTS",
    "PER_DEAL_KEYS",
    "PROG",
    "SCORE_KEYS",
    "SET_KEYS",
    "Z95",
    "AgentSpec",
    "AgentStats",
    "Estimate",
    "EvalPlan",
    "EvalResult",
    "LadderResult",
    "SetupError",
    "agent_label",
    "agent_obs_type",
    "bradley_terry",
    "bradley_terry_ci",
    "build_agent",
    "check_game",
    "check_workers",
    "chunk_bounds",
    "chunk_seeds",
    "deal_statistics",
    "default_lineup",
    "evaluate",
    "ladder",
    "ladder_specs",
    "main",
    "parse_spec",
    "plain_observation",
    "prepare",
    "proportion_estimate",
    "ratio_estimate",
    "run",
    "wilson_interval",
]

PROG = _cli.PROG


def main(argv: Iterable[str] | None = None) -> int:
    """The command line (``block_env.evaluation.cli.main``) under this module's ``PROG``;
    returns the exit status."""
    return _cli.main(argv, prog=PROG)


if __name__ == "__main__":
    sys.exit(main())
