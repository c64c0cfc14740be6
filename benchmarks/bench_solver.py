"""Speed of the exact solver's two engines in one run: the compiled search (``numba``) over
the reference (``python``), on the positions PIMC solves.

For each table (2, 3 and 4 players, partnership) the script deals a fixed set of positions
(a full deal, then a few random legal moves, from fixed seeds) and times
``counted_action_values`` (every root move solved exactly: what PIMC does per sampled world)
on each engine, in rounds that alternate between the engines; a ratio is the median over
rounds of the ratio within the round, so a busy machine slows both alike. The two engines
visit the same nodes (the tests check it; the script checks the totals again), so
nodes/s compare the same work.

Usage: ``python benchmarks/bench_solver.py [--rounds 5] [--positions 12] [--clock wall|cpu]
[--json FILE]``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from agents.solver import Position, counted_action_values, position_from_state  # noqa: E402
from block_env import rules  # noqa: E402
from block_env.benchmark.runner import machine_info, versions  # noqa: E402
from block_env.config import BlockConfig  # noqa: E402

TABLES = {
    "2p": (BlockConfig(num_players=2), 0),
    "3p": (BlockConfig(num_players=3), 0),
    "4p": (BlockConfig(num_players=4), 0),
    # from the opening the reference takes seconds a position: start a few plies in
    "partnership": (BlockConfig(num_players=4, partnership=True), 4),
}


def positions(config: BlockConfig, count: int, plies: int, seed: int) -> list[Position]:
    """``count`` running hands: a deal, then ``plies`` to ``plies + 3`` random legal moves."""
    rng = np.random.default_rng(seed)
    out: list[Position] = []
    while len(out) < count:
        state = rules.new_match(config, rng)
        for _ in range(plies + int(rng.integers(0, 4))):
            legal = rules.legal_actions(state)
            state = rules.apply_action(config, state, legal[rng.integers(len(legal))])
            if state.result is not None:
                break
        if state.result is None:
            out.append(position_from_state(state))
    return out


def timed(config: BlockConfig, batch: list[Position], engine: str, clock) -> tuple[float, int]:
    """(seconds, nodes) to solve every position of ``batch`` on ``engine``."""
    start = clock()
    nodes = sum(counted_action_values(config, pos, engine)[1] for pos in batch)
    return clock() - start, nodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--positions", type=int, default=12)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    rows = []
    print(f"{'table':<12} {'python Mnodes/s':>16} {'numba Mnodes/s':>15} {'ratio':>7}  rounds")
    for name, (config, plies) in TABLES.items():
        batch = positions(config, args.positions, plies, seed=2026)
        counted_action_values(config, batch[0], "numba")  # compile outside the timing
        ratios, speeds = [], {"python": [], "numba": []}
        for r in range(args.rounds):
            order = ("python", "numba") if r % 2 == 0 else ("numba", "python")
            seconds, counts = {}, {}
            for engine in order:
                seconds[engine], counts[engine] = timed(config, batch, engine, clock)
                speeds[engine].append(counts[engine] / seconds[engine] / 1e6)
            if counts["python"] != counts["numba"]:
                raise SystemExit(f"{name}: the engines visited {counts} nodes: they must agree")
            nodes = counts["python"]
            ratios.append(seconds["python"] / seconds["numba"])
        row = {
            "table": name,
            "positions": args.positions,
            "nodes": nodes,
            "python_mnodes_s": statistics.median(speeds["python"]),
            "numba_mnodes_s": statistics.median(speeds["numba"]),
            "ratio": statistics.median(ratios),
            "ratio_range": [min(ratios), max(ratios)],
        }
        rows.append(row)
        print(
            f"{name:<12} {row['python_mnodes_s']:>16.2f} {row['numba_mnodes_s']:>15.2f} "
            f"{row['ratio']:>6.1f}x  {min(ratios):.1f}-{max(ratios):.1f}"
        )
    if args.json:
        meta = {"clock": args.clock, "rounds": args.rounds, "machine": machine_info()}
        with open(args.json, "w") as f:
            json.dump({"rows": rows, **meta, "versions": versions()}, f, indent=1)


if __name__ == "__main__":
    main()
