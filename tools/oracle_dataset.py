"""Label partnership decisions with the exact perfect-information action values.

Each worker plays whole partnership hands (one hand each, rotating lead) with a policy in
all four seats, sampling its moves (``--greedy`` plays the argmax), and at every decision
with more than one legal move stores the seat's observation vector, its action mask and
the solver's exact value of each legal move for the true deal (``agents.solver``);
``--compare AGENT`` also stores the move that agent would make there (an agent spec, as for
``evaluate``), to measure its regret on the same decisions.

A network regressed on those values learns, for each observation, the expected
perfect-information value of each move under the deals that reach that observation: PIMC
with the posterior of the play it saw instead of a uniform one, and no sampling noise.

    python tools/oracle_dataset.py --hands 30000 --seed 2000000000 --workers 2 \
        --out runs/oracle/partnership.npz
"""

from __future__ import annotations

import argparse
import os
import time
from multiprocessing import get_context
from pathlib import Path

import numpy as np


def _label_hands(args: tuple[str, int, int, bool, int, str | None]) -> dict[str, np.ndarray]:
    policy, seed0, hands, greedy, worker, compare = args
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    import agents
    from agents.solver import action_values, position_from_state
    from block_env.agent_specs import build_agent
    from block_env.env import raw_env

    env = raw_env(num_players=4, partnership=True, episode="hand")
    agent = agents.load(policy, greedy=greedy, seed=seed0)
    rival = build_agent(compare, env, seed=seed0) if compare else None
    config = env.unwrapped.config
    obs_rows, mask_rows, value_rows, rival_rows = [], [], [], []
    start = time.perf_counter()
    for h in range(hands):
        env.reset(seed=seed0 + h)
        for _ in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            mask = obs["action_mask"]
            if mask.sum() > 1:
                values = action_values(config, position_from_state(env.unwrapped.game))
                row = np.full(mask.shape[0], np.nan, dtype=np.float32)
                for a, v in values.items():
                    row[a] = v
                obs_rows.append(np.asarray(obs["observation"], dtype=np.float32))
                mask_rows.append(mask.astype(bool))
                value_rows.append(row)
                if rival is not None:
                    rival_rows.append(rival.act(obs))
            env.step(agent.act(obs))
        if worker == 0 and (h + 1) % 500 == 0:
            rate = (h + 1) / (time.perf_counter() - start)
            left = (hands - h - 1) / rate
            print(
                f"worker 0: {h + 1}/{hands} hands, {rate:.1f} hands/s, ETA {left / 60:.1f} min",
                flush=True,
            )
    data = {
        "obs": np.stack(obs_rows),
        "mask": np.stack(mask_rows),
        "values": np.stack(value_rows),
    }
    if rival is not None:
        data["compare_action"] = np.asarray(rival_rows, dtype=np.int64)
    return data


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy", default="block-partnership")
    p.add_argument("--hands", type=int, required=True)
    p.add_argument("--seed", type=int, required=True, help="deal seed of the first hand")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--greedy", action="store_true", help="play the policy's argmax")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument(
        "--compare",
        help="also store this agent's move at each labelled decision (its regret is then "
        "reported beside the policy's by oracle_finetune.py)",
    )
    a = p.parse_args()
    if a.hands < a.workers or a.workers < 1:
        p.error(f"--hands {a.hands} --workers {a.workers}: give 1 <= workers <= hands")
    sizes = [a.hands // a.workers + (w < a.hands % a.workers) for w in range(a.workers)]
    firsts = [a.seed + sum(sizes[:w]) for w in range(a.workers)]
    jobs = [
        (a.policy, first, size, a.greedy, w, a.compare)
        for w, (first, size) in enumerate(zip(firsts, sizes, strict=True))
    ]
    with get_context("spawn").Pool(a.workers) as pool:
        parts = pool.map(_label_hands, jobs)
    data = {k: np.concatenate([part[k] for part in parts]) for k in parts[0]}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(a.out, **data, seed=a.seed, hands=a.hands, policy=a.policy)
    print(f"{len(data['obs'])} decisions from {a.hands} hands -> {a.out}")


if __name__ == "__main__":
    main()
