"""Batched Block engine: thousands of games per call, numpy or torch (CPU or CUDA).

``BatchedEnv(num_envs, backend="numpy"|"torch", device="cpu", auto_pass=False,
deal_source="fast"|"aec", kernels="auto", **config)``: see ``block_env.batched.env`` for the
full contract (autoreset, info arrays, auto_pass), ``block_env.batched.deals`` for the deal
sources and ``block_env.batched.backend`` for the kernels (on the CPU: compiled by numba where
it is installed, else numpy calls; torch's own on other devices). torch is imported only when
``backend="torch"`` is asked for, numba only when the compiled kernels run.

``BatchedParallelEnv`` (``block_env.batched.parallel``) is ``parallel_env``'s view of B games:
every seat's observation and mask with the wait action, one action per game and seat.
"""

from block_env.batched.backend import BACKENDS
from block_env.batched.deals import DEAL_SOURCES
from block_env.batched.env import CONFIG_KEYS, BatchedEnv
from block_env.batched.parallel import BatchedParallelEnv

__all__ = ["BACKENDS", "CONFIG_KEYS", "DEAL_SOURCES", "BatchedEnv", "BatchedParallelEnv"]
