"""Duplicate-deal evaluation of Block agents and a round-robin strength ladder.

Each deal is replayed once per seat rotation, so every agent plays every seat's hand of it;
the confidence intervals are computed over deals (a paired design). ``evaluate`` plays a
lineup, ``ladder`` a round robin; ``python -m block_env.evaluate`` is the command line. The
user manual is docs/evaluation.md.

Modules: ``runner`` (evaluate, prepare, run), ``duplicate`` (plans and serial play),
``parallel`` (worker processes), ``control`` (against a control agent, common random
numbers), ``results`` (EvalResult), ``stats`` (estimates, CIs, Bradley-Terry), ``ladder``,
``cli``, and ``batched`` (the same evaluation on the batched engine, for the trainer; it
imports ``agents``, so it is not imported here). Agent specs live in
``block_env.agent_specs``.
"""

from block_env.agent_specs import SetupError
from block_env.evaluation.cli import main
from block_env.evaluation.duplicate import EvalPlan, deal_statistics
from block_env.evaluation.ladder import LADDER_AGENTS, LadderResult, ladder, ladder_specs
from block_env.evaluation.parallel import (
    CHUNKS_PER_WORKER,
    check_workers,
    chunk_bounds,
    chunk_seeds,
)
from block_env.evaluation.results import PER_DEAL_KEYS, AgentStats, EvalResult, eval_result
from block_env.evaluation.runner import evaluate, prepare, run
from block_env.evaluation.stats import (
    Z95,
    Estimate,
    bradley_terry,
    bradley_terry_ci,
    proportion_estimate,
    ratio_estimate,
    wilson_interval,
)

__all__ = [
    "CHUNKS_PER_WORKER",
    "LADDER_AGENTS",
    "PER_DEAL_KEYS",
    "Z95",
    "AgentStats",
    "Estimate",
    "EvalPlan",
    "EvalResult",
    "LadderResult",
    "SetupError",
    "bradley_terry",
    "bradley_terry_ci",
    "check_workers",
    "chunk_bounds",
    "chunk_seeds",
    "deal_statistics",
    "eval_result",
    "evaluate",
    "ladder",
    "ladder_specs",
    "main",
    "prepare",
    "proportion_estimate",
    "ratio_estimate",
    "run",
    "wilson_interval",
]
