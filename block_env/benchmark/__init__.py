"""A benchmark two papers can compare: frozen, versioned tasks (``tasks``), each with a
held-out set of duplicate deals that training never sees and a reference field; one command
scores any agent on a task (``runner``, ``python -m block_env.benchmark``) with 95% CIs and
a rating on the task's frozen ladder (``elo``). The protocol is docs/benchmark.md.
"""

from block_env.benchmark.runner import BenchmarkResult, Row, agent_identity, benchmark
from block_env.benchmark.tasks import HELD_OUT_SEED, TASKS, Opponent, Task, deal_digest, get_task

__all__ = [
    "HELD_OUT_SEED",
    "TASKS",
    "BenchmarkResult",
    "Opponent",
    "Row",
    "Task",
    "agent_identity",
    "benchmark",
    "deal_digest",
    "get_task",
]
