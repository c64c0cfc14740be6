"""Time a search agent's decisions (``act``) in 2-player hands against the rule bot.

Why: PIMC-20 is meant to decide in under 50 ms per move, a play-time search agent such as
``block-2p-search`` in under 100 ms. Every call of ``act`` is timed; calls with a single
legal action (forced moves and passes, answered without search) are reported apart from
real decisions.

    python tools/pimc_decision_time.py --worlds 20 --deals 150
    python tools/pimc_decision_time.py --agent block-2p-search --deals 150
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import agents
from block_env.agent_specs import build_agent
from block_env.env import raw_env


def measure(spec: str, deals: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(seconds per real decision, seconds per forced call) of the agent ``spec`` (any
    name ``block_env.evaluate`` accepts, e.g. ``pimc:worlds=20``)."""
    env = raw_env(num_players=2, episode="hand")
    pimc = build_agent(spec, env, seed=seed)
    rules = agents.make("rules")
    real, forced = [], []
    for d in range(deals):
        for pimc_seat in (0, 1):
            env.reset(seed=seed + d)
            while not all(env.terminations.values()):
                agent = env.agent_selection
                obs = env.observe(agent)
                if agent == f"player_{pimc_seat}":
                    t0 = time.perf_counter()
                    action = pimc.act(obs)
                    dt = time.perf_counter() - t0
                    (real if obs["action_mask"].sum() > 1 else forced).append(dt)
                else:
                    action = rules.act(obs)
                env.step(action)
    return np.array(real), np.array(forced)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worlds", type=int, default=20, help="PIMC's worlds (without --agent)")
    p.add_argument("--agent", default=None, help="any agent spec (default pimc:worlds=N)")
    p.add_argument("--deals", type=int, default=150)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    spec = args.agent or f"pimc:worlds={args.worlds}"
    real, forced = measure(spec, args.deals, args.seed)
    ms = 1000 * real
    print(
        f"{spec}: {real.size} decisions with a choice: median "
        f"{np.median(ms):.1f} ms, mean {ms.mean():.1f} ms, p95 {np.percentile(ms, 95):.1f} ms, "
        f"max {ms.max():.1f} ms"
    )
    allms = 1000 * np.concatenate([real, forced])
    print(
        f"all {allms.size} calls (incl. {forced.size} forced/pass): median "
        f"{np.median(allms):.2f} ms, p95 {np.percentile(allms, 95):.1f} ms"
    )


if __name__ == "__main__":
    main()
