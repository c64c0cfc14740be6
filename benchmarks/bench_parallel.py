"""Cost of a ``parallel_env`` step against a ``raw_env`` agent-step, in one run.

Both play the same random legal game (one move of the seat to act per step, drawn uniformly
from its mask; whole matches, reset and deal included): ``raw_env`` through ``last()`` and
``step(a)``, ``parallel_env`` through ``step(actions)`` with the wait for every other seat,
which returns every seat's observation. Rounds alternate between the two so that load on a
shared machine slows both alike; the figure is the median over rounds of the ratio of their
times per step within a round (above 1: the parallel step costs more), for 2, 3 and 4
players; divided by the number of seats, it is the cost per observation handed out (a
parallel step observes every seat, an AEC agent-step only the seat to act).

Usage: ``python benchmarks/bench_parallel.py [--rounds 7] [--seconds 1.0] [--clock wall|cpu]``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402

import block_env  # noqa: E402
from block_env.parallel import parallel_env  # noqa: E402


def aec_round(players: int, seconds: float, seed: int, clock: Callable[[], float]) -> float:
    """``raw_env`` random legal play for about ``seconds``: seconds per agent-step."""
    env = block_env.raw_env(num_players=players)
    rng = random.Random(seed)
    env.reset(seed=seed)
    steps = 0
    start = clock()
    while True:
        observation, _, termination, truncation, _ = env.last()
        if termination or truncation:
            env.step(None)
            if not env.agents:
                if clock() - start >= seconds:
                    break
                env.reset()
            continue
        legal = np.flatnonzero(observation["action_mask"])
        env.step(int(legal[rng.randrange(len(legal))]))
        steps += 1
    return (clock() - start) / steps


def parallel_round(players: int, seconds: float, seed: int, clock: Callable[[], float]) -> float:
    """``parallel_env`` random legal play for about ``seconds``: seconds per step."""
    env = parallel_env(num_players=players)
    rng = random.Random(seed)
    observations, _ = env.reset(seed=seed)
    wait = env.wait
    steps = 0
    start = clock()
    while True:
        if not env.agents:
            if clock() - start >= seconds:
                break
            observations, _ = env.reset()
        actions = dict.fromkeys(env.agents, wait)
        agent = env.current_agent
        legal = np.flatnonzero(observations[agent]["action_mask"])
        actions[agent] = int(legal[rng.randrange(len(legal))])
        observations, *_ = env.step(actions)
        steps += 1
    return (clock() - start) / steps


def main(argv: list[str] | None = None) -> dict[int, float]:
    parser = argparse.ArgumentParser(description="parallel_env step / raw_env agent-step")
    parser.add_argument("--rounds", type=int, default=7, help="rounds per engine (median)")
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one round")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.seconds <= 0:
        parser.error("--rounds must be >= 1 and --seconds > 0")
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    ratios: dict[int, list[float]] = {n: [] for n in (2, 3, 4)}
    rates: dict[str, list[float]] = {}
    for r in range(args.rounds):
        for n in ratios:
            first, second = (
                (aec_round, parallel_round) if r % 2 == 0 else (parallel_round, aec_round)
            )
            times = {f.__name__: f(n, args.seconds, r, clock) for f in (first, second)}
            ratios[n].append(times["parallel_round"] / times["aec_round"])
            rates.setdefault(f"raw_env {n}p agent-steps/s", []).append(1 / times["aec_round"])
            rates.setdefault(f"parallel_env {n}p steps/s", []).append(1 / times["parallel_round"])
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    print(
        f"parallel_env step / raw_env agent-step, time per step: median over {args.rounds} "
        f"alternating rounds of {args.seconds:g} s ({args.clock} clock)"
    )
    out = {}
    for n, values in ratios.items():
        out[n] = statistics.median(values)
        print(
            f"{n} players: {out[n]:.2f}x per step, {out[n] / n:.2f}x per seat's observation "
            f"(rounds: {min(values):.2f}-{max(values):.2f})"
        )
    for name, values in rates.items():
        print(f"{name}: {statistics.median(values):,.0f} (median; this machine only)")
    return out


if __name__ == "__main__":
    main()
