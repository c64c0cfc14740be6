"""Env steps per second of block-env inside each library's own collection loop, with random
legal actions (so the figure is the adapter's and the env's cost, not a network's).

* Tianshou: ``Collector`` over ``DummyVectorEnv`` of ``PettingZooEnv(block_env.env())``,
  every seat Tianshou's masked random policy, transitions stored in a replay buffer.
* TorchRL: ``PettingZooWrapper(block_env.env(), use_mask=True).rollout()`` with actions
  drawn from the masked action spec (every seat's observation is written at every step).
* SB3 adapter: ``block_env.wrappers.SingleAgentBlockEnv`` (one learner step includes the
  opponents' moves played inside ``step``; counted here as learner steps).
* The bare AEC ``block_env.raw_env`` with ``last()``, for reference.

Each is timed ``--repeats`` times for ``--seconds``; the median is printed. Runs whose
library is not installed are skipped.

    python examples/integrations_throughput.py --players 2
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
import warnings
from collections.abc import Callable

import numpy as np

import block_env


def timed(run: Callable[[float], int], seconds: float, repeats: int) -> float:
    """Median steps/s of ``run(seconds) -> steps`` over ``repeats`` runs."""
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        steps = run(seconds)
        rates.append(steps / (time.perf_counter() - start))
    return statistics.median(rates)


def bare_aec(players: int) -> Callable[[float], int]:
    env = block_env.raw_env(num_players=players)
    rng = np.random.default_rng(0)

    def run(seconds: float) -> int:
        env.reset(seed=0)
        steps, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.reset()
                continue
            env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
            steps += 1
        return steps

    return run


def tianshou_collector(players: int, num_envs: int = 4) -> Callable[[float], int]:
    from tianshou.algorithm import (
        MARLRandomDiscreteMaskedOffPolicyAlgorithm,
        MultiAgentOffPolicyAlgorithm,
    )
    from tianshou.data import Collector, CollectStats, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.env.pettingzoo_env import PettingZooEnv

    def make() -> PettingZooEnv:
        return PettingZooEnv(block_env.env(num_players=players))

    env = make()
    manager = MultiAgentOffPolicyAlgorithm(
        algorithms=[
            MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
            for _ in env.agents
        ],
        env=env,
    )
    collector = Collector[CollectStats](
        manager, DummyVectorEnv([make] * num_envs), VectorReplayBuffer(20_000, num_envs)
    )
    collector.reset()
    collector.collect(n_step=100)  # compile Tianshou's numba helpers outside the timing

    def run(seconds: float) -> int:
        steps, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            steps += collector.collect(n_step=500).n_collected_steps
        return steps

    return run


def torchrl_rollout(players: int) -> Callable[[float], int]:
    from torchrl.envs import PettingZooWrapper
    from torchrl.envs.utils import MarlGroupMapType

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PettingZoo in TorchRL is tested")
        env = PettingZooWrapper(
            block_env.env(num_players=players),
            use_mask=True,
            group_map=MarlGroupMapType.ALL_IN_ONE_GROUP,
            seed=0,
        )

    def run(seconds: float) -> int:
        steps, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            steps += env.rollout(200, break_when_any_done=False).numel()
        return steps

    return run


def sb3_adapter(players: int) -> Callable[[float], int]:
    from block_env.wrappers import SingleAgentBlockEnv

    env = SingleAgentBlockEnv(opponents="random", num_players=players, episode="hand")
    rng = np.random.default_rng(0)

    def run(seconds: float) -> int:
        env.reset(seed=0)
        steps, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            _, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            steps += 1
            if done:
                env.reset()
        return steps

    return run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    if args.seconds <= 0 or args.repeats < 1:
        p.error("--seconds must be positive and --repeats at least 1")
    runs = [
        ("AEC raw_env, last() + step", None, bare_aec),
        ("Tianshou Collector, 4 DummyVectorEnv", "tianshou", tianshou_collector),
        ("TorchRL PettingZooWrapper.rollout", "torchrl", torchrl_rollout),
        ("SB3 adapter SingleAgentBlockEnv (learner steps)", "sb3_contrib", sb3_adapter),
    ]
    print(
        f"{args.players} players, random legal actions, median of {args.repeats} x "
        f"{args.seconds:g} s"
    )
    for label, module, build in runs:
        if module and importlib.util.find_spec(module) is None:
            print(f"{label:<50} skipped ({module} not installed)")
            continue
        rate = timed(build(args.players), args.seconds, args.repeats)
        print(f"{label:<50} {rate:>10,.0f} steps/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
