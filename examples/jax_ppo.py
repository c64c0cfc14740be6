"""PPO self-play on ``block_env.jax``, compiled end to end, then an evaluation.

    python examples/jax_ppo.py --updates 600 --out jax_ppo.msgpack
    block-env benchmark block_env.jax.agent:load_agent:path=jax_ppo.msgpack \\
        --task block-2p-v1 --hands 2000

Environment, flax network and optax update run in one ``jax.jit``
(``block_env.jax.ppo.train``); progress lines come from the compiled loop. The policy is
written with ``flax.serialization`` (msgpack, no pickle) and played by the agent adapter
``block_env.jax.agent`` against the rule bot on fixed deals.
"""

from __future__ import annotations

import argparse
import time

from block_env.jax.ppo import PPOConfig, save_policy, train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--updates", type=int, default=600, help="PPO updates (default 600)")
    parser.add_argument("--envs", type=int, default=1024, help="games played at once")
    parser.add_argument("--steps", type=int, default=32, help="rollout steps per update")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="jax_ppo.msgpack", help="policy file to write")
    parser.add_argument("--eval-hands", type=int, default=400, help="hands against rules")
    args = parser.parse_args()
    config = PPOConfig(
        num_envs=args.envs,
        rollout_steps=args.steps,
        num_updates=args.updates,
        num_minibatches=max(1, args.envs * args.steps // 8192),
        seed=args.seed,
    )
    start = time.perf_counter()

    def progress(update, metrics) -> None:
        steps = int(update) * config.steps_per_update
        secs = time.perf_counter() - start
        print(
            f"update {int(update):5d}  {steps / 1e6:7.2f}M steps  {steps / secs:8,.0f} steps/s"
            f"  entropy {float(metrics['entropy']):.3f}  kl {float(metrics['approx_kl']):.4f}"
            f"  v_loss {float(metrics['v_loss']):.4f}",
            flush=True,
        )

    print(f"training {config.num_updates} updates of {config.steps_per_update:,} agent-steps")
    params, metrics = train(config, progress)
    steps = config.num_updates * config.steps_per_update
    print(
        f"compiled in {metrics['compile_s']:.1f} s; {steps:,} agent-steps in "
        f"{metrics['run_s']:.1f} s: {steps / metrics['run_s']:,.0f} agent-steps/s"
    )
    path = save_policy(args.out, params, config)
    print(f"wrote {path}")
    if args.eval_hands:
        evaluate(str(path), args.eval_hands)


def evaluate(path: str, hands: int) -> None:
    """The policy against the rule bot on ``hands`` fixed deals, seats rotated."""
    from block_env.evaluation.runner import evaluate as play
    from block_env.jax.agent import load_agent

    result = play([load_agent(path), "rules"], num_players=2, hands=hands, seed=10_000)
    print(result)


if __name__ == "__main__":
    main()
