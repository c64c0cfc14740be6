"""AEC throughput: random legal play through the PettingZoo API, against OpenSpiel.

Each agent-step is one ``env.last()`` (observation vector and action mask built) followed by
``env.step(a)`` with ``a`` drawn uniformly from the mask; forced passes count as steps.
Episodes are whole matches (the default config), reset and deal included in the time.
The same loop runs OpenSpiel's Python block dominoes (2 players, one hand per episode,
chance nodes for the deal; OpenSpiel skips forced passes itself) when ``open_spiel`` is
installed: once with ``observation_tensor`` built each move, once with legal actions only.
The process is pinned to one CPU core and one thread; each figure is the median of several
repeats. Usage: ``python benchmarks/bench_aec.py [--quick]``.
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
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

import block_env  # noqa: E402


def pin_one_core() -> str:
    """Restrict this process to one CPU core (where the OS allows it); says which."""
    if not hasattr(os, "sched_setaffinity"):
        return "not pinned (no sched_setaffinity)"
    core = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    return f"pinned to core {core}"


def run_aec(make: Callable[[], Any], seconds: float, seed: int) -> tuple[int, int, float]:
    """Random legal play for at least ``seconds``; returns (agent-steps, hands, elapsed)."""
    env = make()
    rng = random.Random(seed)
    env.reset(seed=seed)
    steps = hands = 0
    start = time.perf_counter()
    while True:
        observation, _, termination, truncation, _ = env.last()
        if termination or truncation:
            env.step(None)
            if not env.agents:  # all dead steps taken: the match is over
                hands += env.unwrapped.game.hand_number + 1
                if time.perf_counter() - start >= seconds:
                    break
                env.reset()
            continue
        legal = np.flatnonzero(observation["action_mask"])
        env.step(int(legal[rng.randrange(len(legal))]))
        steps += 1
    return steps, hands, time.perf_counter() - start


def run_openspiel(game: Any, seconds: float, seed: int, observe: bool) -> tuple[int, int, float]:
    """The same loop on an OpenSpiel game: chance nodes sampled, decisions random."""
    rng = random.Random(seed)
    steps = hands = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                state.apply_action(outcomes[rng.randrange(len(outcomes))][0])
                continue
            if observe:
                state.observation_tensor(state.current_player())
            legal = state.legal_actions()
            state.apply_action(legal[rng.randrange(len(legal))])
            steps += 1
        hands += 1
    return steps, hands, time.perf_counter() - start


def load_openspiel() -> tuple[Any, str]:
    """(game or None, version or the reason it is unavailable)."""
    try:
        from importlib.metadata import version

        import open_spiel.python.games  # noqa: F401  (registers the Python games)
        import pyspiel

        return pyspiel.load_game("python_block_dominoes"), f"open_spiel {version('open_spiel')}"
    except Exception as err:  # any import or load failure: report, do not crash
        return None, f"unavailable ({type(err).__name__}: {err})"


def measure(run: Callable[[int], tuple[int, int, float]], repeats: int) -> dict[str, float]:
    """Median agent-steps/s and hands/s over ``repeats`` runs."""
    rates = [run(seed) for seed in range(repeats)]
    steps = [s / t for s, _, t in rates]
    hands = [h / t for _, h, t in rates]
    return {
        "steps_per_s": statistics.median(steps),
        "hands_per_s": statistics.median(hands),
        "steps_per_hand": sum(s for s, _, _ in rates) / max(1, sum(h for _, h, _ in rates)),
    }


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description="AEC throughput of block-env vs OpenSpiel")
    parser.add_argument("--quick", action="store_true", help="short run (about 10 s)")
    parser.add_argument("--repeats", type=int, default=None, help="runs per figure (median)")
    parser.add_argument("--seconds", type=float, default=None, help="length of one run")
    args = parser.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 5)
    seconds = args.seconds or (0.3 if args.quick else 2.0)
    if repeats < 1 or seconds <= 0:
        parser.error("--repeats must be >= 1 and --seconds > 0")
    pinned = pin_one_core()

    rows: list[dict[str, Any]] = []
    for players in (2, 3, 4):
        for name, factory in (("raw_env", block_env.raw_env), ("env()", block_env.env)):

            def run(seed: int, factory=factory, players=players) -> tuple[int, int, float]:
                return run_aec(lambda: factory(num_players=players), seconds, seed)

            rows.append(
                {"engine": f"block-env {name}", "players": players, **measure(run, repeats)}
            )
            print(f"measured {rows[-1]['engine']}, {players} players", file=sys.stderr)
    game, spiel = load_openspiel()
    if game is not None:
        for observe, label in ((True, "with observation_tensor"), (False, "legal actions only")):

            def run_os(seed: int, observe=observe) -> tuple[int, int, float]:
                return run_openspiel(game, seconds, seed, observe)

            rows.append(
                {"engine": f"OpenSpiel python_block_dominoes, {label}", "players": 2}
                | measure(run_os, repeats)
            )
            print(f"measured {rows[-1]['engine']}", file=sys.stderr)

    print(f"block-env AEC benchmark: {repeats} x {seconds:g} s per figure (median), {pinned}")
    print(f"Python {platform.python_version()}, numpy {np.__version__}, {spiel}")
    print(f"CPU: {_cpu_name()}\n")
    print("| engine | players | agent-steps/s | hands/s | steps/hand |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['engine']} | {r['players']} | {r['steps_per_s']:,.0f} | "
            f"{r['hands_per_s']:,.0f} | {r['steps_per_hand']:.1f} |"
        )
    if game is not None:
        ours = rows[0]  # raw_env, 2 players
        print()
        for r in rows[-2:]:
            print(
                f"raw_env 2p / {r['engine']}: {ours['steps_per_s'] / r['steps_per_s']:.1f}x "
                f"agent-steps/s, {ours['hands_per_s'] / r['hands_per_s']:.1f}x hands/s"
            )
    else:
        print(f"\nOpenSpiel: {spiel}")
    return rows


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


if __name__ == "__main__":
    main()
