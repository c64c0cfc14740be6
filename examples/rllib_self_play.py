"""RLlib league self-play on Block, then the trained policy against the random bot.

    pip install -e ".[train,rllib]"        # ray[rllib] pins its own gymnasium: use a venv
    python examples/rllib_self_play.py --iterations 30
    python examples/rllib_self_play.py --smoke          # a few seconds of training (CI)
    python examples/rllib_self_play.py --throughput     # env-runner sampling speed, 1 and 2

One shared PPO module (``main``) plays every seat; every ``--league-every`` iterations a
frozen copy of it joins the league and each episode draws its opponents from there
(``block_env.integrations.rllib``). ``python train.py configs/rllib_2p.yaml`` is the same
training with a run folder, checkpoints and evaluations; this script shows the pieces.
Set ``RAY_ADDRESS`` to sample on a running Ray cluster instead of this machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=30, help="PPO training iterations")
    parser.add_argument("--runners", type=int, default=2, help="Ray env runners")
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument("--league-every", type=int, default=5)
    parser.add_argument("--batch", type=int, default=4000, help="env steps per iteration")
    parser.add_argument("--hands", type=int, default=1000, help="evaluation hands vs random")
    parser.add_argument("--out", default="runs/rllib_example", help="where policy.pt goes")
    parser.add_argument("--smoke", action="store_true", help="tiny budget (for CI)")
    parser.add_argument(
        "--throughput", action="store_true", help="measure env-runner sampling speed and exit"
    )
    parser.add_argument("--envs", type=int, default=8, help="envs per env runner")
    args = parser.parse_args(argv)
    if args.throughput:
        return throughput(args.players, args.envs)
    if args.smoke:
        args.iterations, args.batch, args.hands, args.league_every = 2, 500, 40, 1

    import ray

    from block_env.evaluate import evaluate
    from block_env.integrations.rllib import export_policy, ppo_config

    env_config = {"num_players": args.players, "episode": "hand"}
    if os.environ.get("RAY_ADDRESS"):
        ray.init(log_to_driver=False)
    else:
        ray.init(num_cpus=args.runners + 1, include_dashboard=False, log_to_driver=False)
    try:
        config = ppo_config(
            env_config,
            num_env_runners=args.runners,
            train_batch_size=args.batch,
            minibatch_size=min(1000, args.batch),
            league_every=args.league_every,
            hidden=(64, 64) if args.smoke else (256, 256),
        )
        algo = config.build_algo()
        start = time.perf_counter()
        for it in range(1, args.iterations + 1):
            result = algo.train()
            runners = result["env_runners"]
            print(
                f"iteration {it}: {int(runners['num_env_steps_sampled_lifetime']):,} env steps, "
                f"league {result['league']['snapshots']} snapshots, "
                f"{time.perf_counter() - start:.0f} s",
                flush=True,
            )
        path = export_policy(algo, os.path.join(args.out, "policy.pt"), env_config)
        algo.stop()
    finally:
        ray.shutdown()

    import agents

    res = evaluate(
        [agents.load(str(path)), "random"],
        num_players=args.players,
        hands=args.hands,
        seed=1_000_000,
    )
    print(res.table())
    print(f"policy file: {path} (python -m block_env.evaluate {path} random)")
    return 0


def throughput(players: int, envs: int, seconds: float = 20.0) -> int:
    """Environment steps sampled per second by 1 and 2 env runners (the main module
    choosing every action, as in training), beside the bare AEC env with random legal play
    measured in the same run; the runners sample at the same time, each on its own CPU."""
    import numpy as np
    import ray

    import block_env
    from block_env.integrations.rllib import ppo_config

    env = block_env.raw_env(num_players=players, episode="hand")
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < 5.0:
        for _agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            env.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
            steps += 1
        env.reset()
    raw = steps / (time.perf_counter() - start)
    print(f"raw_env, random legal play: {raw:,.0f} agent-steps/s")
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False)
    try:
        for runners in (1, 2):
            config = ppo_config(
                {"num_players": players, "episode": "hand"},
                num_env_runners=runners,
                num_envs_per_env_runner=envs,
            )
            algo = config.build_algo()
            group = algo.env_runner_group
            group.foreach_env_runner(lambda r: r.sample(num_timesteps=2000), local_env_runner=False)
            start = time.perf_counter()
            done = 0
            while time.perf_counter() - start < seconds:
                eps = group.foreach_env_runner(
                    lambda r: sum(len(e) for e in r.sample(num_timesteps=2000)),
                    local_env_runner=False,
                )
                done += sum(eps)
            rate = done / (time.perf_counter() - start)
            print(
                f"{runners} env runner(s) x {envs} envs: {rate:,.0f} env steps/s sampled "
                f"({rate / raw:.3f} x raw_env)",
                flush=True,
            )
            algo.stop()
    finally:
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
