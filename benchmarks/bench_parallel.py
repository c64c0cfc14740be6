"""Cost of a ``parallel_env`` step against a ``raw_env`` agent-step, in one run.

Both play the same random legal game (one move of the seat to act per step, drawn uniformly
from its mask; whole matches, reset and deal included): ``raw_env`` through ``last()`` and
``step(a)``, ``parallel_env`` through ``step(actions)`` with the wait for every other seat,
which returns every seat's observation. Rounds alternate between the two so that load on a
shared machine slows both alike; the figure is the median over rounds of the ratio of their
times per step within a round (above 1: the parallel step costs more), for 2, 3 and 4
players and the partnership game; divided by the number of seats, it is the cost per
observation handed out (a parallel step observes every seat, an AEC agent-step only the seat
to act).

Usage: ``python benchmarks/bench_parallel.py [--rounds 7] [--seconds 1.0] [--clock wall|cpu]``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
from _timing import Clock, add_round_options, aec_play, report, round_clock  # noqa: E402

import block_env  # noqa: E402
from block_env.parallel import parallel_env  # noqa: E402

TABLES = {  # label: the games' keyword arguments
    "2 players": {"num_players": 2},
    "3 players": {"num_players": 3},
    "4 players": {"num_players": 4},
    "4 players, partnership": {"num_players": 4, "partnership": True},
}


def aec_round(cfg: dict, seconds: float, seed: int, clock: Clock) -> float:
    """``raw_env`` random legal play for about ``seconds``: seconds per agent-step."""
    steps, _, elapsed = aec_play(block_env.raw_env(**cfg), seconds, seed, clock)
    return elapsed / steps


def parallel_round(cfg: dict, seconds: float, seed: int, clock: Clock) -> float:
    """``parallel_env`` random legal play for about ``seconds``: seconds per step (the same
    bookkeeping as ``aec_play``'s, placements counted)."""
    env = parallel_env(**cfg)
    rng = random.Random(seed)
    observations, _ = env.reset(seed=seed)
    wait, passes = env.wait, env.config.tiles.pass_action
    steps = placements = 0
    start = clock()
    while True:
        if not env.agents:
            if clock() - start >= seconds:
                break
            observations, _ = env.reset()
        actions = dict.fromkeys(env.agents, wait)
        agent = env.current_agent
        legal = np.flatnonzero(observations[agent]["action_mask"])
        action = actions[agent] = int(legal[rng.randrange(len(legal))])
        observations, *_ = env.step(actions)
        steps += 1
        placements += action != passes
    return (clock() - start) / steps


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description="parallel_env step / raw_env agent-step")
    add_round_options(parser)
    args = parser.parse_args(argv)
    clock = round_clock(parser, args)
    ratios: dict[str, list[float]] = {label: [] for label in TABLES}
    rates: dict[str, list[float]] = {}
    for r in range(args.rounds):
        for label, cfg in TABLES.items():
            first, second = (
                (aec_round, parallel_round) if r % 2 == 0 else (parallel_round, aec_round)
            )
            times = {f.__name__: f(cfg, args.seconds, r, clock) for f in (first, second)}
            ratios[label].append(times["parallel_round"] / times["aec_round"])
            short = label.replace(" players", "p").replace(",", "")
            rates.setdefault(f"raw_env {short} agent-steps/s", []).append(1 / times["aec_round"])
            rates.setdefault(f"parallel_env {short} steps/s", []).append(
                1 / times["parallel_round"]
            )
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)

    def line(label: str, ratio: float, values: list[float]) -> str:
        per_seat = ratio / TABLES[label]["num_players"]
        return (
            f"{label}: {ratio:.2f}x per step, {per_seat:.2f}x per seat's observation "
            f"(rounds: {min(values):.2f}-{max(values):.2f})"
        )

    title = "parallel_env step / raw_env agent-step, time per step"
    return report(title, args, ratios, rates, line)


if __name__ == "__main__":
    main()
