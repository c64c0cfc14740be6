"""Data-parallel scaling of the PPO trainer: agent-steps/s at 1, 2, ... ranks, ratios in one run.

    python benchmarks/bench_scaling.py                        # 1 and 2 ranks, the default config
    python benchmarks/bench_scaling.py --ranks 1,2,4,8,16 --rounds 3
    python benchmarks/bench_scaling.py --ranks 1,2 minibatch_size=4096 --json scaling.json

Each round trains the config (``key=value`` overrides on the default run) for ``--updates``
updates at every rank count (``python train.py ... nproc=K``; K = 1 is the single process),
alternating the order of the rank counts from round to round, in a temporary run folder,
with no periodic evaluation or checkpoint inside the timed updates. The speed of a run is
the steps of its updates after the first (which pays for warming up) over their wall time,
from ``log.jsonl``; the ratio of K ranks is the median over rounds of the ratio to the 1-rank
run of the same round, and the efficiency is that ratio over K. The time split is rank 0's
mean per update (``time_*`` in the log): rollout, the PPO update's forward (with the loss),
backward, gradient all-reduce (with the wait for the slowest rank) and optimizer step.
Every rank runs with ``threads`` torch threads (1 by default): give it as many cores as
ranks, or the ranks share cores and the ratios say so.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPLIT = ("time_rollout", "time_forward", "time_backward", "time_allreduce", "time_step")


def one_run(ranks: int, updates: int, overrides: list[str], folder: Path) -> dict:
    """Train ``updates`` updates on ``ranks`` ranks; the speed and time split from the log."""
    sys.path.insert(0, str(ROOT))
    from block_env.training.config import load_config

    cfg = load_config(None, overrides)
    steps = updates * cfg.num_envs * cfg.rollout_steps
    run = folder / f"r{ranks}"
    cmd = [
        sys.executable,
        str(ROOT / "train.py"),
        *overrides,
        f"nproc={ranks}",
        f"total_steps={steps}",
        f"run_dir={run}",
        "eval_every=1000000",
        "checkpoint_every=1000000",
        "eval_hands=100",
        "final_eval_hands=100",
        "progress=false",
        "tensorboard=false",
        "--force",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": str(cfg.threads)}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"bench_scaling: {ranks} ranks failed:\n{done.stderr[-2000:]}")
    log = [json.loads(x) for x in (run / "log.jsonl").read_text().splitlines()]
    first, last = log[0], log[-1]
    timed = log[1:]
    return {
        "steps_per_s": (last["env_steps"] - first["env_steps"]) / (last["wall"] - first["wall"]),
        "split": {k[5:]: statistics.fmean(r.get(k, 0.0) for r in timed) for k in SPLIT},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", default="1,2", help="rank counts, comma-separated (1 first)")
    parser.add_argument("--updates", type=int, default=10, help="updates per run")
    parser.add_argument("--rounds", type=int, default=3, help="repeats of every rank count")
    parser.add_argument("--json", default=None, help="write the figures to this file")
    parser.add_argument("overrides", nargs="*", help="key=value settings of the config")
    args = parser.parse_args(argv)
    counts = [int(x) for x in args.ranks.split(",")]
    if counts[0] != 1:
        parser.error("--ranks must start with 1 (the reference)")
    runs: dict[int, list[dict]] = {k: [] for k in counts}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = counts if r % 2 == 0 else counts[::-1]
            for k in order:
                runs[k].append(one_run(k, args.updates, args.overrides, Path(tmp)))
                print(f"round {r + 1} ranks {k}: {runs[k][-1]['steps_per_s']:,.0f} steps/s")
    rows = []
    for k in counts:
        ratios = [a["steps_per_s"] / b["steps_per_s"] for a, b in zip(runs[k], runs[1])]
        ratio = statistics.median(ratios)
        split = {p: statistics.median(x["split"][p] for x in runs[k]) for p in runs[k][0]["split"]}
        rows.append(
            {
                "ranks": k,
                "steps_per_s": statistics.median(x["steps_per_s"] for x in runs[k]),
                "ratio": ratio,
                "ratio_range": [min(ratios), max(ratios)],
                "efficiency": ratio / k,
                "split_s_per_update": split,
            }
        )
    print(
        f"\nconfig: the default run {' '.join(args.overrides)}; {args.updates} updates, "
        f"{args.rounds} rounds"
    )
    print("ranks  agent-steps/s  ratio (range)       efficiency  " + "  ".join(SPLIT_SHORT))
    for row in rows:
        lo, hi = row["ratio_range"]
        split = "  ".join(f"{row['split_s_per_update'][p]:>9.3f}" for p in SPLIT_SHORT)
        print(
            f"{row['ranks']:>5}  {row['steps_per_s']:>13,.0f}  {row['ratio']:5.2f}x "
            f"({lo:.2f}-{hi:.2f})  {row['efficiency']:>10.0%}  {split}"
        )
    print("(time split: rank 0's seconds per update)")
    if args.json:
        out = {
            "overrides": args.overrides,
            "updates": args.updates,
            "rounds": args.rounds,
            "rows": rows,
            "machine": {
                "cpus": os.cpu_count(),
                "processor": platform.processor() or platform.machine(),
                "python": platform.python_version(),
            },
            "wall_s": time.perf_counter() - t0,
        }
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


SPLIT_SHORT = tuple(k[5:] for k in SPLIT)

if __name__ == "__main__":
    sys.exit(main())
