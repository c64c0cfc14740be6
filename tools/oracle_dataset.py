"""Label partnership decisions with search values: the true deal's, or PIMC's.

Each worker plays whole partnership hands (one hand each, rotating lead) with a policy in
all four seats, sampling its moves (``--greedy`` plays the argmax), and at every decision
with more than one legal move stores the seat's observation vector, its action mask and the
label of each legal move. The labels are:

* the true deal's exact values (the default). A network regressed on them learns, for each
  observation, the expected perfect-information value of each move under the deals that
  reach that observation: PIMC with the posterior of the play it saw instead of a uniform
  one, and no sampling noise, but each label is one draw of the hidden hands, so the
  labels are noisy;
* ``--pimc-worlds N``: PIMC-N's mean value of each move over N deals sampled from the
  observation (``agents.pimc``). A network regressed on them learns PIMC's values with the
  sampling noise averaged out across decisions: PIMC with unlimited worlds, at a network's
  speed. Each label costs N solves instead of one. The solver's exact values of the true
  deal are stored beside them (``oracle_values``), for regrets.

``--compare AGENT`` also stores the move that agent would make there (an agent spec, as for
``evaluate``), to measure its regret on the same decisions. ``--minutes`` bounds the run:
each worker starts no new hand after that long (it plays one at least), and the file
records the hands played.

    python tools/oracle_dataset.py --hands 30000 --seed 2000000000 --workers 2 \
        --out runs/oracle/partnership.npz
    python tools/oracle_dataset.py --policy docs/experiments/partnership_from4p.pt \
        --pimc-worlds 20 --hands 4000 --minutes 45 --seed 2100000000 --workers 2 \
        --out runs/oracle/pimc20_a.npz
"""

from __future__ import annotations

import argparse
import os
import time
from multiprocessing import get_context
from pathlib import Path
from typing import NamedTuple

import numpy as np


class Job(NamedTuple):
    """One worker's share: ``hands`` deals from ``first_seed`` on."""

    policy: str
    first_seed: int
    hands: int
    greedy: bool = False
    worker: int = 0
    compare: str | None = None
    pimc_worlds: int = 0  # 0: label with the true deal's values
    seconds: float = 0.0  # 0: no time bound


def _row(values: dict[int, float], size: int) -> np.ndarray:
    row = np.full(size, np.nan, dtype=np.float32)
    for a, v in values.items():
        row[a] = v
    return row


def _label_hands(job: Job) -> dict[str, np.ndarray]:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    import agents
    from agents.pimc import PIMCAgent
    from agents.solver import action_values, position_from_state
    from block_env.agent_specs import build_agent
    from block_env.env import raw_env

    env = raw_env(num_players=4, partnership=True, episode="hand")
    agent = agents.load(job.policy, greedy=job.greedy, seed=job.first_seed)
    rival = build_agent(job.compare, env, seed=job.first_seed) if job.compare else None
    pimc = PIMCAgent(worlds=job.pimc_worlds, seed=job.first_seed) if job.pimc_worlds else None
    config = env.unwrapped.config
    keys = ("obs", "mask", "values", "deal") + (("oracle_values",) if pimc is not None else ())
    rows: dict[str, list] = {k: [] for k in keys}
    rival_rows: list[int] = []
    start = time.perf_counter()
    played = 0
    for h in range(job.hands):
        if h and job.seconds and time.perf_counter() - start > job.seconds:
            break
        env.reset(seed=job.first_seed + h)
        for _ in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            mask = obs["action_mask"]
            if mask.sum() > 1:
                exact = action_values(config, position_from_state(env.unwrapped.game))
                oracle = _row(exact, mask.shape[0])
                if pimc is not None:
                    totals = pimc.action_totals(obs)
                    label = _row({a: t / pimc.last_worlds for a, t in totals.items()}, len(mask))
                    rows["oracle_values"].append(oracle)
                else:
                    label = oracle
                rows["obs"].append(np.asarray(obs["observation"], dtype=np.float32))
                rows["mask"].append(mask.astype(bool))
                rows["values"].append(label)
                rows["deal"].append(job.first_seed + h)
                if rival is not None:
                    rival_rows.append(rival.act(obs))
            env.step(agent.act(obs))
        played = h + 1
        if job.worker == 0 and played % 100 == 0:
            rate = played / (time.perf_counter() - start)
            left = (job.hands - played) / rate
            print(
                f"worker 0: {played}/{job.hands} hands, {rate:.2f} hands/s, "
                f"ETA {left / 60:.1f} min",
                flush=True,
            )
    data = {k: np.stack(v) if k != "deal" else np.asarray(v, np.int64) for k, v in rows.items()}
    data["hands_played"] = np.asarray(played)
    if rival is not None:
        data["compare_action"] = np.asarray(rival_rows, dtype=np.int64)
    return data


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy", default="block-partnership")
    p.add_argument("--hands", type=int, required=True, help="hands at most (all workers)")
    p.add_argument("--seed", type=int, required=True, help="deal seed of the first hand")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--greedy", action="store_true", help="play the policy's argmax")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument(
        "--compare",
        help="also store this agent's move at each labelled decision (its regret is then "
        "reported beside the policy's by oracle_finetune.py)",
    )
    p.add_argument(
        "--pimc-worlds",
        type=int,
        default=0,
        help="label with PIMC's mean values over this many sampled deals (0: the true deal's)",
    )
    p.add_argument("--minutes", type=float, default=0.0, help="start no hand after this long")
    a = p.parse_args()
    if a.hands < a.workers or a.workers < 1:
        p.error(f"--hands {a.hands} --workers {a.workers}: give 1 <= workers <= hands")
    if a.pimc_worlds < 0 or a.minutes < 0:
        p.error(f"--pimc-worlds {a.pimc_worlds} --minutes {a.minutes}: give values >= 0")
    sizes = [a.hands // a.workers + (w < a.hands % a.workers) for w in range(a.workers)]
    firsts = [a.seed + sum(sizes[:w]) for w in range(a.workers)]
    jobs = [
        Job(a.policy, first, size, a.greedy, w, a.compare, a.pimc_worlds, a.minutes * 60)
        for w, (first, size) in enumerate(zip(firsts, sizes, strict=True))
    ]
    with get_context("spawn").Pool(a.workers) as pool:
        parts = pool.map(_label_hands, jobs)
    played = sum(int(part.pop("hands_played")) for part in parts)
    data = {k: np.concatenate([part[k] for part in parts]) for k in parts[0]}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        a.out,
        **data,
        seed=a.seed,
        hands=played,
        policy=a.policy,
        pimc_worlds=a.pimc_worlds,
    )
    print(f"{len(data['obs'])} decisions from {played} hands -> {a.out}")


if __name__ == "__main__":
    main()
