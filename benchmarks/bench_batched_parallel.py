"""Throughput of ``BatchedParallelEnv`` against ``parallel_env``, in agent-steps per second.

An agent-step is one move of the seat to act (a ``parallel_env`` step, one game of a batched
step). Both play random legal games (whole matches, deals and resets included) and every
timed step hands out every seat's observation and mask: ``parallel_env`` through
``step(actions)`` with a uniform legal move from the mask of the seat to act and the wait for
the others; ``BatchedParallelEnv`` through ``step(sample_actions())`` (a uniform legal move
drawn by the engine, the wait elsewhere) with same-step autoreset. Rounds alternate between
the engines so that load on a shared machine slows them alike; each ratio is the median over
rounds of the ratio of agent-steps/s within a round.

Usage::

    python benchmarks/bench_batched_parallel.py            # 2 and 4 players, B = 1024, 4096
    python benchmarks/bench_batched_parallel.py --rounds 3 --seconds 0.5 --kernels numpy
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from block_env.batched import BatchedParallelEnv  # noqa: E402
from block_env.parallel import parallel_env  # noqa: E402


def parallel_rate(players: int, seconds: float, seed: int) -> float:
    """``parallel_env`` random legal play for about ``seconds``: agent-steps/s."""
    env = parallel_env(num_players=players)
    rng = random.Random(seed)
    observations, _ = env.reset(seed=seed)
    wait = env.wait
    steps = 0
    start = time.perf_counter()
    while True:
        if not env.agents:
            if time.perf_counter() - start >= seconds:
                return steps / (time.perf_counter() - start)
            observations, _ = env.reset()
        actions = dict.fromkeys(env.agents, wait)
        agent = env.current_agent
        legal = np.flatnonzero(observations[agent]["action_mask"])
        actions[agent] = int(legal[rng.randrange(len(legal))])
        observations, *_ = env.step(actions)
        steps += 1


def batched_rate(env: BatchedParallelEnv, seconds: float) -> float:
    """``env`` random legal play for about ``seconds``: agent-steps/s (B per step)."""
    steps = 0
    start = time.perf_counter()
    while True:
        for _ in range(5):
            env.step(env.sample_actions())
        steps += 5
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return steps * env.num_envs / elapsed


def main(argv: list[str] | None = None) -> dict[tuple[int, int], float]:
    parser = argparse.ArgumentParser(description="BatchedParallelEnv / parallel_env")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per engine (median)")
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one round")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--players", type=int, nargs="+", default=[2, 4], choices=[2, 3, 4])
    parser.add_argument("--kernels", default="auto", choices=["auto", "numba", "numpy"])
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.seconds <= 0 or min(args.sizes) < 1:
        parser.error("--rounds and --sizes must be >= 1 and --seconds > 0")
    envs = {
        (n, b): BatchedParallelEnv(b, kernels=args.kernels, num_players=n)
        for n in args.players
        for b in args.sizes
    }
    for env in envs.values():  # warm up: compiled kernels loaded, first allocations made
        env.reset(seed=0)
        batched_rate(env, args.seconds / 4)
    base: dict[int, list[float]] = {n: [] for n in args.players}
    rates: dict[tuple[int, int], list[float]] = {key: [] for key in envs}
    ratios: dict[tuple[int, int], list[float]] = {key: [] for key in envs}
    for r in range(args.rounds):
        for n in args.players:
            keys = [key for key in envs if key[0] == n]
            order = [None, *keys] if r % 2 == 0 else [*keys, None]
            got = {
                key: parallel_rate(n, args.seconds, r)
                if key is None
                else batched_rate(envs[key], args.seconds)
                for key in order
            }
            base[n].append(got[None])
            for key in keys:
                rates[key].append(got[key])
                ratios[key].append(got[key] / got[None])
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    kernels = next(iter(envs.values())).env.kernels
    print(
        f"# BatchedParallelEnv (numpy backend, {kernels} kernels) / parallel_env, agent-steps/s "
        f"(every seat observed each step): medians of {args.rounds} alternating rounds of "
        f"{args.seconds:g} s; {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}"
    )
    print()
    print("| players | engine | B | agent-steps/s | x parallel_env (rounds) |")
    print("|---:|---|---:|---:|---:|")
    out = {}
    for n in args.players:
        print(f"| {n} | parallel_env | 1 | {statistics.median(base[n]):,.0f} | 1.0 |")
        for key in (k for k in envs if k[0] == n):
            out[key] = statistics.median(ratios[key])
            print(
                f"| {n} | BatchedParallelEnv | {key[1]} | {statistics.median(rates[key]):,.0f} "
                f"| {out[key]:,.1f} ({min(ratios[key]):,.1f}-{max(ratios[key]):,.1f}) |"
            )
    return out


if __name__ == "__main__":
    main()
