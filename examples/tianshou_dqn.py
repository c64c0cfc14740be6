"""Tianshou 2.0 DQN on block-env, after Tianshou's own tic-tac-toe recipe.

The env goes in unchanged: ``tianshou.env.PettingZooEnv(block_env.env(...))``. One seat is a
DQN learner, the other seats play Tianshou's masked random policy, and
``MultiAgentOffPolicyAlgorithm`` dispatches each transition to the seat's algorithm, exactly
as in the recipe. What differs from it, and why:

* ``episode="hand"`` and ``reward="win"`` (+1 / -1 per hand, 0 on a tied block): short,
  bounded episodes like tic-tac-toe's.
* ``n_step = num_players``: Tianshou computes a seat's n-step return over the shared,
  interleaved buffer, so with one step per seat in a row the target is the learner's own
  next decision, and a hand that another seat ends still pays the learner its reward.
* The Q-network divides the observation by ``block_env.observation.OBS_SCALE``.

Before and after training the greedy Q-policy plays ``block_env.evaluate`` against the
random bot on duplicate deals (a raw env there: an illegal move would raise).

    python examples/tianshou_dqn.py            # the normal budget (a few minutes on 2 cores)
    python examples/tianshou_dqn.py --smoke    # a tiny budget, for the test suite
    python examples/tianshou_dqn.py --minutes 10 --save runs/tianshou   # a wall-clock budget

``--save DIR`` writes the Q-network as ``DIR/policy.pt`` (tensors only); the agent spec
``examples.tianshou_dqn:load_agent:path=DIR/policy.pt`` plays it (from the repository's root),
e.g. in ``python -m block_env.benchmark`` (the leaderboard's ``tianshou-dqn`` rows).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tianshou.algorithm import (
    DQN,
    MARLRandomDiscreteMaskedOffPolicyAlgorithm,
    MultiAgentOffPolicyAlgorithm,
)
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.env.pettingzoo_env import PettingZooEnv
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.net.common import ActionReprNetWithVectorOutput
from tianshou.utils.torch_utils import policy_within_training_step
from torch import nn

import block_env
from block_env.evaluate import evaluate
from block_env.observation import OBS_SCALE, STANDARD_OBS_DIM
from block_env.tiles import STANDARD_NUM_ACTIONS


def make_env(num_players: int) -> PettingZooEnv:
    """The wrapped AEC env, one hand per episode, +1/-1 per hand, in Tianshou's adapter."""
    return PettingZooEnv(block_env.env(num_players=num_players, episode="hand", reward="win"))


class QNet(ActionReprNetWithVectorOutput):
    """MLP from the scaled observation vector to one Q-value per action (Tianshou's model
    signature: ``(obs, state, info) -> (values, state)``)."""

    def __init__(self, hidden: tuple[int, ...] = (256, 256)) -> None:
        super().__init__(output_dim=STANDARD_NUM_ACTIONS)
        self.register_buffer("scale", torch.as_tensor(1.0 / OBS_SCALE, dtype=torch.float32))
        layers: list[nn.Module] = []
        width = STANDARD_OBS_DIM
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, STANDARD_NUM_ACTIONS))
        self.mlp = nn.Sequential(*layers)

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> tuple[torch.Tensor, Any]:
        x = torch.as_tensor(obs, dtype=torch.float32, device=self.scale.device)
        return self.mlp(x * self.scale), state


class GreedyQAgent:
    """``act(observation) -> int`` for ``block_env.evaluate``: the legal action of highest Q."""

    name = "tianshou-dqn"

    def __init__(self, net: QNet) -> None:
        self.net = net

    @torch.no_grad()
    def act(self, observation: dict[str, np.ndarray]) -> int:
        q, _ = self.net(observation["observation"][None])
        q = q[0].numpy().copy()
        q[observation["action_mask"] == 0] = -np.inf
        return int(np.argmax(q))


def save_policy(net: QNet, hidden: list[int], path: Path) -> None:
    """The Q-network's weights and shape, readable with ``torch.load(weights_only=True)``."""
    torch.save({"hidden": list(hidden), "state_dict": net.state_dict()}, path)


def load_agent(path: str) -> GreedyQAgent:
    """An agent spec's factory: the greedy Q-policy of a ``save_policy`` file."""
    data = torch.load(path, weights_only=True, map_location="cpu")
    net = QNet(tuple(data["hidden"]))
    net.load_state_dict(data["state_dict"])
    net.eval()
    return GreedyQAgent(net)


def build(args: argparse.Namespace) -> tuple[MultiAgentOffPolicyAlgorithm, QNet, str, DQN]:
    """The recipe's agents: a DQN learner at seat ``args.learner_seat``, masked random
    policies elsewhere, under one multi-agent manager."""
    env = make_env(args.players)
    net = QNet(tuple(args.hidden))
    policy = DiscreteQLearningPolicy(
        model=net,
        action_space=env.action_space,
        eps_training=args.eps_train,
        eps_inference=0.0,
    )
    learner = DQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=args.lr),
        gamma=args.gamma,
        n_step_return_horizon=args.players,
        target_update_freq=args.target_update_freq,
    )
    algorithms = [
        learner
        if seat == args.learner_seat
        else MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
        for seat in range(args.players)
    ]
    manager = MultiAgentOffPolicyAlgorithm(algorithms=algorithms, env=env)
    return manager, net, env.agents[args.learner_seat], learner


def score_vs_random(net: QNet, args: argparse.Namespace) -> dict[str, float]:
    """Points-per-hand margin and hand-win rate of the greedy Q-policy against the random bot
    (duplicate deals, seats rotated; the raw env raises on any illegal move)."""
    net.eval()
    res = evaluate(
        [GreedyQAgent(net), "random"],
        num_players=args.players,
        hands=args.eval_hands,
        seed=10_000 + args.seed,
    )
    net.train()
    return res.summary(0)


def train(args: argparse.Namespace) -> dict[str, Any]:
    """Train the learner seat for ``args.steps`` env steps; returns before/after scores,
    the number of steps and updates, and the last loss."""
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    manager, net, learner_id, learner = build(args)
    before = score_vs_random(net, args)

    train_envs = DummyVectorEnv([lambda: make_env(args.players)] * args.train_envs)
    test_envs = DummyVectorEnv([lambda: make_env(args.players)] * args.test_envs)
    train_envs.seed(args.seed)
    test_envs.seed(args.seed + 1)
    buffer = VectorReplayBuffer(args.buffer_size, len(train_envs))
    train_collector = Collector[CollectStats](manager, train_envs, buffer, exploration_noise=True)
    test_collector = Collector[CollectStats](manager, test_envs, exploration_noise=True)
    train_collector.reset()
    train_collector.collect(n_step=args.batch_size * args.train_envs)

    seat = args.learner_seat
    epochs = max(1, args.steps // args.epoch_steps)
    start = time.perf_counter()
    stop_fn = None
    if args.minutes:  # a wall-clock budget: stop at the first epoch's end past it
        epochs = 10**9

        def stop_fn(_score: float) -> bool:
            return time.perf_counter() - start > args.minutes * 60

    result = manager.run_training(
        OffPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=epochs,
            epoch_num_steps=args.epoch_steps if args.minutes else min(args.steps, args.epoch_steps),
            stop_fn=stop_fn,
            collection_step_num_env_steps=args.collect_steps,
            test_step_num_episodes=args.test_envs,
            batch_size=args.batch_size,
            update_step_num_gradient_steps_per_sample=args.updates_per_step,
            multi_agent_return_reduction=lambda rews: rews[:, seat],
            test_in_training=False,
            show_progress=False,
            verbose=args.verbose,
        )
    )
    seconds = time.perf_counter() - start
    loss = _last_loss(manager, learner_id, buffer, args.batch_size)
    if args.save:
        save_policy(net, args.hidden, Path(args.save) / "policy.pt")
    after = score_vs_random(net, args)
    return {
        "env_steps": int(result.train_step),
        "gradient_steps": int(learner._iter),  # the learner's updates (DQN counts them)
        "train_seconds": round(seconds, 1),
        "steps_per_second": round(result.train_step / seconds, 1),
        "last_loss": loss,
        "before": before,
        "after": after,
    }


def _last_loss(
    manager: MultiAgentOffPolicyAlgorithm, learner_id: str, buffer: Any, batch_size: int
) -> float:
    """One more gradient step on a fresh sample; its loss (finite if training went well)."""
    with policy_within_training_step(manager.policy):
        stats = manager.update(sample_size=batch_size, buffer=buffer)
    return float(stats.get_loss_stats_dict()[f"{learner_id}/loss"])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--smoke", action="store_true", help="tiny budget (seconds), for tests")
    p.add_argument("--steps", type=int, default=60_000, help="training env steps (all seats)")
    p.add_argument(
        "--minutes",
        type=float,
        default=0.0,
        help="a wall-clock budget instead of --steps: training stops at the first epoch "
        "(--epoch-steps) that ends past it",
    )
    p.add_argument("--save", metavar="DIR", help="write the Q-network as DIR/policy.pt")
    p.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    p.add_argument("--learner-seat", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-hands", type=int, default=2000)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--gamma", type=float, default=0.95)
    p.add_argument("--eps-train", type=float, default=0.1)
    p.add_argument("--target-update-freq", type=int, default=320)
    p.add_argument("--hidden", type=int, nargs="+", default=[256, 256])
    p.add_argument("--buffer-size", type=int, default=20_000)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--train-envs", type=int, default=10)
    p.add_argument("--test-envs", type=int, default=10)
    p.add_argument("--epoch-steps", type=int, default=20_000)
    p.add_argument("--collect-steps", type=int, default=100)
    p.add_argument("--updates-per-step", type=float, default=0.25)
    p.add_argument("--json", help="write the results here")
    p.add_argument("--verbose", action="store_true", help="print Tianshou's epoch lines")
    args = p.parse_args(argv)
    if not 0 <= args.learner_seat < args.players:
        p.error(f"--learner-seat {args.learner_seat} is not a seat of {args.players} players")
    if args.smoke:
        args.steps, args.epoch_steps, args.eval_hands = 600, 600, 40
        args.train_envs = args.test_envs = 2
    if args.steps < 1 or args.eval_hands < 1 or args.minutes < 0:
        p.error("--steps and --eval-hands must be positive, --minutes not negative")
    if args.save:
        Path(args.save).mkdir(parents=True, exist_ok=True)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = train(args)
    b, a = out["before"], out["after"]
    print(
        f"tianshou DQN, {args.players} players: {out['env_steps']:,} env steps, "
        f"{out['gradient_steps']:,} gradient steps in {out['train_seconds']} s "
        f"({out['steps_per_second']:,} steps/s); last loss {out['last_loss']:.4f}\n"
        f"vs random over {a['hands']} hands: margin {b['margin']:+.2f} -> {a['margin']:+.2f} "
        f"[{a['margin_lo']:+.2f}, {a['margin_hi']:+.2f}] points/hand, "
        f"hands won {b['hand_win']:.1%} -> {a['hand_win']:.1%}"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
