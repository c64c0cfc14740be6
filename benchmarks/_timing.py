"""What the alternating-round speed benchmarks (``bench_parallel.py``, ``bench_ratio.py``)
share: the round options and their clock, the random legal AEC loop both time, and the
report of medians over rounds."""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

Clock = Callable[[], float]


def add_round_options(parser: argparse.ArgumentParser) -> None:
    """``--rounds``, ``--seconds`` and ``--clock`` (the wall clock or this process's CPU
    time)."""
    parser.add_argument("--rounds", type=int, default=7, help="rounds per engine (median)")
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one round")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time rounds by the wall clock (default) or by this process's CPU time",
    )


def round_clock(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Clock:
    """The clock ``args`` asks for, after checking the round options (the parser's error
    otherwise)."""
    if args.rounds < 1 or args.seconds <= 0:
        parser.error("--rounds must be >= 1 and --seconds > 0")
    return time.process_time if args.clock == "cpu" else time.perf_counter


def aec_play(env: Any, seconds: float, seed: int, clock: Clock) -> tuple[int, int, float]:
    """Random legal play on the AEC env ``env`` for about ``seconds`` of ``clock``: ``last()``,
    a move drawn uniformly from the mask, ``step``; whole matches, reset and deal included
    (a match in progress is finished). Returns (agent-steps, placements, elapsed seconds);
    forced passes count as agent-steps, not as placements."""
    rng = random.Random(seed)
    env.reset(seed=seed)
    passes = env.unwrapped.config.tiles.pass_action
    steps = placements = 0
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
        action = int(legal[rng.randrange(len(legal))])
        env.step(action)
        steps += 1
        placements += action != passes
    return steps, placements, clock() - start


def report(
    title: str,
    args: argparse.Namespace,
    ratios: dict[str, list[float]],
    rates: dict[str, list[float]],
    line: Callable[[str, float, list[float]], str],
) -> dict[str, float]:
    """Print ``title`` with the rounds behind it, one ``line(name, median, values)`` per ratio
    and the median of each rate; returns the median ratios by name."""
    print(
        f"{title}: median over {args.rounds} alternating rounds of {args.seconds:g} s "
        f"({args.clock} clock)"
    )
    out = {}
    for name, values in ratios.items():
        out[name] = statistics.median(values)
        print(line(name, out[name], values))
    for name, values in rates.items():
        print(f"{name}: {statistics.median(values):,.0f} (median; this machine only)")
    return out
