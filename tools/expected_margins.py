"""Checks behind docs/ladder.md's comparison with the expected 2-player margins.

Why: the expected figures (greedy vs random +2.3, PIMC-20 vs greedy +2.1, omniscient vs greedy
+7 points per hand) come from another implementation; a gap beyond our CI must be explained.
This script measures what could make implementations differ, on duplicate deals (seats
rotated) like the ladder:

* ``scoring``: each hand scored both our way (docs/RULES.md: a blocked hand's winner scores the
  others' totals minus its own) and OpenSpiel's way (the winner takes the loser's whole
  total), plus greedy with other tie-breaks (random, doubles first, highest action id);
* ``pool``: PIMC-20 vs greedy on four fresh 500-deal sets, each with its own PIMC seed;
* ``novoids``: PIMC-20 that ignores the values opponents showed lacking by passing.

    python tools/expected_margins.py scoring pool novoids --deals 500
"""

from __future__ import annotations

import argparse

import numpy as np

import agents
from block_env import evaluate as ev
from block_env.env import raw_env
from block_env.observation import FIELDS
from block_env.tiles import STANDARD_PASS, STANDARD_TILES

Z95 = 1.959963984540054
ACTION_PIPS = np.array(
    [sum(STANDARD_TILES[a // 2]) if a < STANDARD_PASS else -1 for a in range(STANDARD_PASS + 1)]
)
IS_DOUBLE = np.array(
    [
        a < STANDARD_PASS and STANDARD_TILES[a // 2][0] == STANDARD_TILES[a // 2][1]
        for a in range(STANDARD_PASS + 1)
    ]
)


class GreedyVariant:
    """Heaviest legal tile; ties broken by ``mode``: "lowest_id" (our greedy), "random",
    "doubles" (a double first, then lowest id) or "highest_id"."""

    def __init__(self, mode: str, seed: int = 0) -> None:
        self.mode, self.rng = mode, np.random.default_rng(seed)
        self.name = f"greedy-{mode}"

    def act(self, observation: dict) -> int:
        legal = np.flatnonzero(observation["action_mask"])
        pips = ACTION_PIPS[legal]
        best = legal[pips == pips.max()]
        if self.mode == "random":
            return int(self.rng.choice(best))
        if self.mode == "doubles":
            doubles = best[IS_DOUBLE[best]]
            return int((doubles if doubles.size else best)[0])
        if self.mode == "highest_id":
            return int(best[-1])
        return int(best[0])


def _build(spec: str, env: object, seed: int) -> object:
    if spec.startswith("greedy-"):
        return GreedyVariant(spec.split("-", 1)[1], seed=seed)
    if spec == "omniscient":
        return agents.make("omniscient", env=env)
    if spec.startswith("pimc-"):
        return agents.make("pimc", worlds=int(spec[5:]), seed=seed)
    if spec == "random":
        return agents.make("random", seed=seed)
    return agents.make(spec)


def _fmt(per_deal: np.ndarray) -> str:
    m = per_deal.mean()
    h = Z95 * per_deal.std(ddof=1) / np.sqrt(len(per_deal))
    return f"{m:+.2f} [{m - h:+.2f}, {m + h:+.2f}]"


def two_scorings(a: str, b: str, deals: int) -> str:
    """Margin of ``a`` over ``b`` per hand under both scorings, deals 0..deals-1."""
    env = raw_env(num_players=2, episode="hand")
    players = [_build(a, env, 0), _build(b, env, 1)]
    ours, alt = np.zeros(deals), np.zeros(deals)
    blocked = 0
    for d in range(deals):
        for seat_a in (0, 1):
            env.reset(seed=d)
            while not env.infos["player_0"]["hand_over"]:
                agent = env.agent_selection
                mover = players[0 if int(agent[-1]) == seat_a else 1]
                env.step(int(mover.act(env.observe(agent))))
            result = env.infos["player_0"]
            mine = env.rewards[f"player_{seat_a}"]
            ours[d] += mine / 2
            pips = result["hand_pips"]
            if result["hand_blocked"]:
                blocked += 1
                if pips[0] != pips[1]:
                    winner = 0 if pips[0] < pips[1] else 1
                    alt[d] += pips[1 - winner] * (1 if winner == seat_a else -1) / 2
            else:
                alt[d] += mine / 2
    return (
        f"{a:>17} vs {b:<14} ours {_fmt(ours)}   OpenSpiel blocked scoring {_fmt(alt)}   "
        f"blocked {blocked / (2 * deals):.0%}"
    )


def pool(deals: int) -> str:
    """PIMC-20 vs greedy on four fresh deal sets (seeds 1000, 2000, 3000, 4000), pooled."""
    lines, per_deal = [], []
    for s in (1000, 2000, 3000, 4000):
        r = ev.evaluate(["pimc-20", "greedy"], num_players=2, hands=2 * deals, seed=s)
        lines.append(f"seed {s}: pimc-20 over greedy {r.stats[0].margin.fmt(2)}")
        per_deal.append(r.per_deal["reward"][:, 0] / r.per_deal["seat_hands"][:, 0])
    x = np.concatenate(per_deal)
    lines.append(f"pooled over {len(x)} deals ({2 * len(x)} hands): {_fmt(x)}")
    return "\n".join(lines)


def novoids(deals: int) -> str:
    """PIMC-20 sampling deals without the opponents' known voids, vs greedy and random."""
    from agents.pimc import PIMCAgent

    class Blind(PIMCAgent):
        name = "pimc-20-novoids"

        def act(self, observation: dict) -> int:
            obs = np.array(observation["observation"], copy=True)
            obs[FIELDS["voids"]] = 0
            return super().act({"observation": obs, "action_mask": observation["action_mask"]})

    out = []
    for opp in ("greedy", "random"):
        r = ev.evaluate([Blind(worlds=20, seed=0), opp], num_players=2, hands=2 * deals, seed=0)
        out.append(f"pimc-20-novoids over {opp}: {r.stats[0].margin.fmt(2)}")
    return "\n".join(out)


SCORING_PAIRS = [
    ("greedy", "random"),
    ("pimc-20", "greedy"),
    ("omniscient", "greedy"),
    ("greedy-random", "random"),
    ("greedy-doubles", "random"),
    ("greedy-highest_id", "random"),
    ("pimc-20", "greedy-random"),
    ("omniscient", "greedy-random"),
    ("pimc-20", "greedy-doubles"),
    ("omniscient", "greedy-doubles"),
]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checks", nargs="+", choices=("scoring", "pool", "novoids"))
    p.add_argument("--deals", type=int, default=500, help="deals per run (2 hands each)")
    args = p.parse_args()
    for check in args.checks:
        if check == "scoring":
            for a, b in SCORING_PAIRS:
                print(two_scorings(a, b, args.deals), flush=True)
        elif check == "pool":
            print(pool(args.deals), flush=True)
        else:
            print(novoids(args.deals), flush=True)


if __name__ == "__main__":
    main()
