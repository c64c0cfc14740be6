"""sb3-contrib MaskablePPO on block-env through ``block_env.wrappers.SingleAgentBlockEnv``.

The wrapper seats the learner at one seat (rotating per episode) and plays the other seats
inside ``step`` with fixed opponents; the learner gets its own reward summed over everything
that happened since its last move (hand ends included), and ``action_masks()`` gives its
legal actions, which MaskablePPO reads by itself. One hand per episode, zero-sum points,
observations divided by ``OBS_SCALE``. Before and after training the deterministic policy
plays ``block_env.evaluate`` against the random bot on duplicate deals (a raw env there: an
illegal move would raise).

    python examples/sb3_maskable_ppo.py             # the normal budget (a few minutes)
    python examples/sb3_maskable_ppo.py --smoke     # a tiny budget, for the test suite
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.vec_env import DummyVecEnv

from block_env.evaluate import evaluate
from block_env.observation import OBS_SCALE
from block_env.wrappers import SingleAgentBlockEnv


class MaskablePPOAgent:
    """``act(observation) -> int`` for ``block_env.evaluate``: the model's deterministic
    action under the observation's mask (scaled as in training)."""

    name = "sb3-maskable-ppo"

    def __init__(self, model: MaskablePPO) -> None:
        self.model = model
        self.scale = (1.0 / OBS_SCALE).astype(np.float32)

    def act(self, observation: dict[str, np.ndarray]) -> int:
        action, _ = self.model.predict(
            observation["observation"] * self.scale,
            action_masks=observation["action_mask"].astype(bool),
            deterministic=True,
        )
        return int(action)


def score_vs_random(model: MaskablePPO, args: argparse.Namespace) -> dict[str, float]:
    """Points-per-hand margin and hand-win rate against the random bot."""
    res = evaluate(
        [MaskablePPOAgent(model), "random"],
        num_players=args.players,
        hands=args.eval_hands,
        seed=10_000 + args.seed,
    )
    return res.summary(0)


def train(args: argparse.Namespace) -> dict[str, Any]:
    """MaskablePPO for ``args.steps`` learner steps against ``args.opponent``; returns
    before/after scores, counts and the last losses."""
    torch.set_num_threads(1)

    def make() -> SingleAgentBlockEnv:
        return SingleAgentBlockEnv(
            opponents=args.opponent,
            num_players=args.players,
            episode="hand",
            reward="zero_sum",
            scale_obs=True,
        )

    venv = DummyVecEnv([make] * args.envs)
    venv.seed(args.seed)
    model = MaskablePPO(
        "MlpPolicy",
        venv,
        learning_rate=args.lr,
        n_steps=args.n_steps,
        batch_size=args.batch_size,
        gamma=1.0,
        seed=args.seed,
        policy_kwargs={"net_arch": list(args.hidden)},
        device="cpu",
    )
    before = score_vs_random(model, args)
    start = time.perf_counter()
    model.learn(total_timesteps=args.steps)
    seconds = time.perf_counter() - start
    logged = model.logger.name_to_value
    losses = {k.split("/")[1]: float(v) for k, v in logged.items() if k.startswith("train/")}
    after = score_vs_random(model, args)
    venv.close()
    return {
        "learner_steps": int(model.num_timesteps),
        "train_seconds": round(seconds, 1),
        "steps_per_second": round(model.num_timesteps / seconds, 1),
        "last_losses": losses,
        "before": before,
        "after": after,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--smoke", action="store_true", help="tiny budget (seconds), for tests")
    p.add_argument("--steps", type=int, default=60_000, help="learner steps in total")
    p.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    p.add_argument("--opponent", default="random", help="agent spec for the other seats")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-hands", type=int, default=2000)
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--n-steps", type=int, default=256, help="rollout length per env")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--hidden", type=int, nargs="+", default=[256, 256])
    p.add_argument("--json", help="write the results here")
    args = p.parse_args(argv)
    if args.smoke:
        args.steps, args.envs, args.n_steps, args.batch_size, args.eval_hands = 256, 2, 64, 64, 40
    if min(args.steps, args.envs, args.n_steps, args.batch_size, args.eval_hands) < 1:
        p.error("--steps, --envs, --n-steps, --batch-size and --eval-hands must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = train(args)
    b, a = out["before"], out["after"]
    losses = ", ".join(f"{k} {v:+.4f}" for k, v in out["last_losses"].items() if "loss" in k)
    print(
        f"sb3-contrib MaskablePPO, {args.players} players vs {args.opponent}: "
        f"{out['learner_steps']:,} learner steps in {out['train_seconds']} s "
        f"({out['steps_per_second']:,} steps/s); {losses}\n"
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
