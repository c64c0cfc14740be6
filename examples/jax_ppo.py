"""PPO on ``block_env.jax``, compiled end to end, then an evaluation against the rule bot.

    python examples/jax_ppo.py --minutes 15 --out jax_ppo.msgpack
    block-env benchmark block_env.jax.agent:load_agent:path=jax_ppo.msgpack \\
        --task block-2p-v1 --hands 2000

Environment, flax network, the rule bot (teacher and opponent), the other opponents and the
optax update run in one ``jax.jit`` (``block_env.jax.ppo.train``; the defaults are the
native trainer's two-player recipe). Every ``--eval-every`` updates the compiled loop plays
the greedy policy against the rule bot on fixed deals; each progress line is also written
to ``--log`` as a JSON line (update, agent-steps, seconds, the metrics). The policy is
written with ``flax.serialization`` (msgpack, no pickle) and played by the agent adapter
``block_env.jax.agent``.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from block_env.jax.ppo import PPOConfig, save_policy, train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--minutes", type=float, default=None, help="training time budget (compile not counted)"
    )
    parser.add_argument("--updates", type=int, default=2000, help="most PPO updates")
    parser.add_argument("--envs", type=int, default=1024, help="games played at once")
    parser.add_argument("--steps", type=int, default=32, help="rollout steps per update")
    parser.add_argument("--epochs", type=int, default=4, help="passes over each rollout")
    parser.add_argument("--teacher-steps", type=int, default=3_000_000, help="kickstart fade")
    parser.add_argument("--eval-every", type=int, default=25, help="updates between evaluations")
    parser.add_argument("--report-every", type=int, default=5, help="updates between lines")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="jax_ppo.msgpack", help="policy file to write")
    parser.add_argument("--log", default="jax_ppo.jsonl", help="progress records (JSON lines)")
    parser.add_argument("--eval-hands", type=int, default=400, help="final hands against rules")
    args = parser.parse_args()
    config = PPOConfig(
        num_envs=args.envs,
        rollout_steps=args.steps,
        num_updates=args.updates,
        epochs=args.epochs,
        num_minibatches=max(1, args.envs * args.steps // 8192),
        teacher_steps=args.teacher_steps,
        eval_every=args.eval_every,
        seed=args.seed,
    )
    print(f"training: {config.steps_per_update:,} agent-steps per update, {config}")
    budget = math.inf if args.minutes is None else args.minutes
    with Path(args.log).open("w") as log:
        progress = reporter(config, log)
        params, metrics = train(config, progress, args.report_every, minutes=budget)
    steps = metrics["updates"] * config.steps_per_update
    print(
        f"compiled in {metrics['compile_s']:.1f} s; {metrics['updates']} updates, {steps:,} "
        f"agent-steps in {metrics['run_s']:.1f} s: {steps / metrics['run_s']:,.0f} agent-steps/s"
    )
    path = save_policy(args.out, params, config)
    print(f"wrote {path} and {args.log}")
    if args.eval_hands:
        evaluate(str(path), args.eval_hands)


def reporter(config: PPOConfig, log: TextIO) -> Callable[[int, dict], None]:
    """A progress callback: one printed line and one JSON line in ``log`` per report."""

    def progress(update: int, metrics: dict) -> None:
        steps = int(update) * config.steps_per_update
        row = {k: float(v) for k, v in metrics.items()}
        record = {k: None if math.isnan(v) else v for k, v in row.items()}  # no eval yet: null
        log.write(json.dumps({"update": int(update), "steps": steps} | record) + "\n")
        log.flush()
        margin = f"{row['eval_margin']:+.2f} ± {1.96 * row['eval_se']:.2f}"
        margin = "-" if record["eval_margin"] is None else margin
        print(
            f"update {int(update):5d}  {steps / 1e6:6.2f}M steps  {row['seconds']:5.0f} s"
            f"  {steps / row['seconds']:7,.0f} steps/s  teacher {row['teacher_coef']:.2f}"
            f"  entropy {row['entropy']:.3f}  kl {row['approx_kl']:.4f}"
            f"  vs rules {margin}",
            flush=True,
        )

    return progress


def evaluate(path: str, hands: int) -> None:
    """The policy against the rule bot on ``hands`` fixed deals, seats rotated."""
    from block_env.evaluation.runner import evaluate as play
    from block_env.jax.agent import load_agent

    result = play([load_agent(path), "rules"], num_players=2, hands=hands, seed=10_000)
    print(result)


if __name__ == "__main__":
    main()
