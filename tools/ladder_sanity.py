"""Sanity checks of the ladder run before quoting it (docs/ladder.md, "Checks").

Why: the omniscient agent must read the very environment it plays in (otherwise it would
play another deal's best move), and the ladder must repeat exactly (PIMC and random agents
get fixed seeds from the evaluation).

    python tools/ladder_sanity.py
"""

from __future__ import annotations

import numpy as np

import agents.omniscient as omniscient
from block_env import evaluate as ev
from block_env.observation import FIELDS


def check_omniscient_env() -> None:
    """Every omniscient decision: the env it holds has the observed hand at the seat to
    act, and that env's ``observe`` returns the observation the agent was given."""
    original = omniscient.OmniscientAgent.act
    calls: list[int] = []

    def checked(self: omniscient.OmniscientAgent, observation: dict) -> int:
        base = getattr(self.env, "unwrapped", self.env)
        state = base.game
        hand_bits = np.flatnonzero(observation["observation"][FIELDS["hand"]] > 0.5)
        if sum(1 << int(t) for t in hand_bits) != state.hands[state.current]:
            raise AssertionError("omniscient sees a hand that is not the env's seat to act")
        mine = base.observe(base.agent_selection)["observation"]
        if not np.array_equal(mine, observation["observation"]):
            raise AssertionError("omniscient's env is not the env it plays in")
        calls.append(id(base))
        return original(self, observation)

    omniscient.OmniscientAgent.act = checked
    try:
        for n, opponent in ((2, "greedy"), (3, "rules"), (4, "rules")):
            calls.clear()
            ev.evaluate(["omniscient", opponent], num_players=n, hands=12 * n, seed=3)
            print(f"{n} players: {len(calls)} omniscient calls checked, {len(set(calls))} env")
    finally:
        omniscient.OmniscientAgent.act = original


def check_repeatable() -> None:
    """Two identical small ladders with PIMC give identical results (timings aside)."""
    for n, specs in ((2, ["random", "pimc-20", "greedy"]), (3, ["pimc-20", "rules"])):
        runs = [ev.ladder(specs, num_players=n, hands=30, seed=5).to_dict() for _ in range(2)]
        for r in runs:
            r.pop("seconds")
        print(f"{n} players: ladder repeats exactly: {runs[0] == runs[1]}")


if __name__ == "__main__":
    check_omniscient_env()
    check_repeatable()
