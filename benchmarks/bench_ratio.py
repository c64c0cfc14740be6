"""Speed ratios of the AEC path in one run: raw_env against OpenSpiel, env() against raw_env.

Every engine runs the same random-play loop (``last()`` or ``observation_tensor``, the legal
actions, a uniform legal move), in short rounds that alternate between the engines, so that
a busy or throttled machine slows all of them alike; each ratio is the median over rounds of
the ratio within the round. Figures:

* placements/s of ``raw_env`` (2 players) over OpenSpiel's ``python_block_dominoes`` with
  ``observation_tensor`` (passes are not moves in OpenSpiel, so passes are not counted on
  either side; time spent on them is);
* agent-steps/s of ``env()`` over ``raw_env`` (2 players);
* agent-steps/s of ``raw_env`` with 3 and 4 players over 2 players.

Within a round OpenSpiel runs right after ``raw_env`` 2 players, the pair its ratio comes
from. ``--clock cpu`` times every round by the process's CPU time instead of the wall clock:
on a machine shared with other jobs the wall clock counts the time the scheduler gives to
them, the CPU time only the work done (on an idle machine both give the same figures).

Usage: ``python benchmarks/bench_ratio.py [--rounds 7] [--seconds 1.0] [--clock wall|cpu]``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

from _timing import Clock, add_round_options, aec_play, report, round_clock  # noqa: E402

import block_env  # noqa: E402


def aec_round(
    make: Callable[[], Any], seconds: float, seed: int, clock: Clock = time.perf_counter
) -> tuple[float, float]:
    """Random legal play for about ``seconds`` of ``clock``: (agent-steps/s, placements/s)."""
    steps, placements, elapsed = aec_play(make(), seconds, seed, clock)
    return steps / elapsed, placements / elapsed


def openspiel_round(
    game: Any, seconds: float, seed: int, clock: Callable[[], float] = time.perf_counter
) -> float:
    """OpenSpiel's block dominoes, same loop with ``observation_tensor``: placements/s."""
    rng = random.Random(seed)
    placements = 0
    start = clock()
    while clock() - start < seconds:
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                state.apply_action(outcomes[rng.randrange(len(outcomes))][0])
                continue
            state.observation_tensor(state.current_player())
            legal = state.legal_actions()
            state.apply_action(legal[rng.randrange(len(legal))])
            placements += 1
    return placements / (clock() - start)


def load_openspiel() -> Any:
    """OpenSpiel's Python block dominoes, or None (with the reason on stderr)."""
    try:
        import open_spiel.python.games  # noqa: F401  (registers the Python games)
        import pyspiel

        return pyspiel.load_game("python_block_dominoes")
    except Exception as err:  # any import or load failure: report, measure the rest
        print(f"OpenSpiel unavailable ({type(err).__name__}: {err})", file=sys.stderr)
        return None


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description="AEC speed ratios, alternating rounds")
    add_round_options(parser)
    args = parser.parse_args(argv)
    clock = round_clock(parser, args)
    game = load_openspiel()
    ratios: dict[str, list[float]] = {}
    raw: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        ratios.setdefault(name, []).append(value)

    for r in range(args.rounds):
        raw2_steps, raw2_place = aec_round(block_env.raw_env, args.seconds, r, clock)
        if game is not None:
            spiel = openspiel_round(game, args.seconds, r, clock)
            add("raw_env 2p / OpenSpiel placements/s", raw2_place / spiel)
            raw.setdefault("OpenSpiel placements/s", []).append(spiel)
        wrapped, _ = aec_round(block_env.env, args.seconds, r, clock)
        add("raw_env / env() agent-steps/s (2p)", raw2_steps / wrapped)
        for n in (3, 4):
            steps, _ = aec_round(
                lambda n=n: block_env.raw_env(num_players=n), args.seconds, r, clock
            )
            add(f"raw_env {n}p / 2p agent-steps/s", steps / raw2_steps)
        raw.setdefault("raw_env 2p placements/s", []).append(raw2_place)
        raw.setdefault("raw_env 2p agent-steps/s", []).append(raw2_steps)
        raw.setdefault("env() 2p agent-steps/s", []).append(wrapped)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)

    return report(
        "AEC ratios",
        args,
        ratios,
        raw,
        lambda name, ratio, values: (
            f"{name}: {ratio:.2f}x  (rounds: {min(values):.2f}-{max(values):.2f})"
        ),
    )


if __name__ == "__main__":
    main()
