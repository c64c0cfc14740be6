"""TorchRL 0.14 masked PPO on block-env: one shared policy plays every seat (self-play).

The env goes in unchanged: ``PettingZooWrapper(block_env.env(...), use_mask=True)`` with all
seats in one group ``"agents"``, so each step's tensordict holds every seat's observation,
``action_mask`` (the legal actions of the seat to act), ``mask`` (which seat acts), reward
and the hand results under ``("next", "agents", "info")``. The policy samples from
``MaskedCategorical`` on the scaled observation; a ``Collector`` gathers the frames.

Block is turn based, so a seat's trajectory is its own decisions with the rewards of every
step in between (the hand's result arrives on whichever step ends it, for all seats at once).
``decisions()`` turns a batch into one row per decision of the seat that acted, with the
seat's Monte-Carlo return to the end of its hand (one hand per episode, zero-sum points
scaled by ``--reward-scale``); decisions of a hand still running at the batch's end are left
out. TorchRL's ``ClipPPOLoss`` then trains on those rows with the advantage ``return -
value``. Before and after training the greedy policy plays ``block_env.evaluate`` against
the random bot on duplicate deals (a raw env there: an illegal move would raise).

    python examples/torchrl_ppo.py            # the normal budget (a few minutes on 2 cores)
    python examples/torchrl_ppo.py --smoke    # a tiny budget, for the test suite
    python examples/torchrl_ppo.py --minutes 10 --save runs/torchrl   # a wall-clock budget

``--save DIR`` writes the policy network as ``DIR/policy.pt`` (tensors only); the agent spec
``examples.torchrl_ppo:load_agent:path=DIR/policy.pt`` plays it (from the repository's root),
e.g. in ``python -m block_env.benchmark`` (the leaderboard's ``torchrl-ppo`` rows).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.collectors import Collector
from torchrl.envs import PettingZooWrapper
from torchrl.envs.utils import MarlGroupMapType
from torchrl.modules import MaskedCategorical, ProbabilisticActor
from torchrl.objectives import ClipPPOLoss

import block_env
from block_env.evaluate import evaluate
from block_env.observation import OBS_SCALE, STANDARD_OBS_DIM
from block_env.tiles import STANDARD_NUM_ACTIONS

GROUP = "agents"


def make_env(num_players: int, seed: int) -> PettingZooWrapper:
    """The wrapped AEC env (one hand per episode, zero-sum points) in TorchRL's wrapper."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PettingZoo in TorchRL is tested")
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return PettingZooWrapper(
            block_env.env(num_players=num_players, episode="hand", reward="zero_sum"),
            use_mask=True,
            group_map=MarlGroupMapType.ALL_IN_ONE_GROUP,
            categorical_actions=True,
            seed=seed,
        )


def mlp(out: int, hidden: tuple[int, ...]) -> nn.Module:
    """Observation vector (divided by OBS_SCALE) -> ``out`` numbers."""
    layers: list[nn.Module] = []
    width = STANDARD_OBS_DIM
    for h in hidden:
        layers += [nn.Linear(width, h), nn.Tanh()]
        width = h
    layers.append(nn.Linear(width, out))
    net = nn.Sequential(*layers)
    scale = torch.as_tensor(1.0 / OBS_SCALE, dtype=torch.float32)
    return nn.Sequential(_Scale(scale), net)


class _Scale(nn.Module):
    def __init__(self, scale: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("scale", scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.float() * self.scale


def make_actor(logits_net: nn.Module, group: str | None) -> ProbabilisticActor:
    """A masked categorical policy over ``logits_net``. ``group="agents"`` reads the env's
    nested keys (for collection); ``None`` reads the flat keys of ``decisions()`` (for the
    loss). Both share the same parameters."""

    def key(*name: str) -> Any:
        return (group, *name) if group else name[-1]

    obs_key = key("observation", "observation")  # the wrapper nests the obs dict's vector
    module = TensorDictModule(logits_net, in_keys=[obs_key], out_keys=[key("logits")])
    return ProbabilisticActor(
        module,
        in_keys={"logits": key("logits"), "mask": key("action_mask")},
        out_keys=[key("action")],
        distribution_class=MaskedCategorical,
        return_log_prob=True,
        log_prob_key=key("action_log_prob"),
    )


def decisions(batch: TensorDict, reward_scale: float) -> TensorDict:
    """One row per decision in ``batch`` (shape [T], one env): the acting seat's observation,
    mask, action, log-prob and return to the end of its hand. Decisions whose hand does not
    end inside the batch are dropped."""
    acting = batch[GROUP, "mask"]  # [T, n] bool, one True per step
    if not bool((acting.sum(-1) == 1).all()):
        raise RuntimeError("expected exactly one acting seat per step")
    rewards = batch["next", GROUP, "reward"][..., 0] * reward_scale  # [T, n]
    done = batch["next", "done"][..., 0]  # [T]
    steps = rewards.shape[0]
    returns = torch.zeros_like(rewards)
    closed = torch.zeros(steps, dtype=torch.bool)
    running = torch.zeros(rewards.shape[1])
    ended = False
    for t in range(steps - 1, -1, -1):
        if done[t]:
            running = torch.zeros_like(running)
            ended = True
        running = rewards[t] + running
        returns[t] = running
        closed[t] = ended
    seat = acting.float().argmax(-1)
    keep = closed
    rows = torch.arange(steps)[keep]
    s = seat[keep]
    return TensorDict(
        {
            "observation": batch[GROUP, "observation", "observation"][rows, s],
            "action_mask": batch[GROUP, "action_mask"][rows, s],
            "action": batch[GROUP, "action"][rows, s],
            "action_log_prob": batch[GROUP, "action_log_prob"][rows, s],
            "value_target": returns[rows, s].unsqueeze(-1),
        },
        batch_size=[len(rows)],
    )


class GreedyAgent:
    """``act(observation) -> int`` for ``block_env.evaluate``: the legal action of highest
    logit."""

    name = "torchrl-ppo"

    def __init__(self, logits_net: nn.Module) -> None:
        self.net = logits_net

    @torch.no_grad()
    def act(self, observation: dict[str, np.ndarray]) -> int:
        logits = self.net(torch.as_tensor(observation["observation"])[None])[0].numpy().copy()
        logits[observation["action_mask"] == 0] = -np.inf
        return int(np.argmax(logits))


def save_policy(logits_net: nn.Module, hidden: list[int], path: Path) -> None:
    """The policy network's weights and shape, readable with ``torch.load(weights_only=True)``."""
    torch.save({"hidden": list(hidden), "state_dict": logits_net.state_dict()}, path)


def load_agent(path: str) -> GreedyAgent:
    """An agent spec's factory: the greedy policy of a ``save_policy`` file."""
    data = torch.load(path, weights_only=True, map_location="cpu")
    logits_net = mlp(STANDARD_NUM_ACTIONS, tuple(data["hidden"]))
    logits_net.load_state_dict(data["state_dict"])
    logits_net.eval()
    return GreedyAgent(logits_net)


def score_vs_random(logits_net: nn.Module, args: argparse.Namespace) -> dict[str, float]:
    """Points-per-hand margin and hand-win rate of the greedy policy against the random bot."""
    res = evaluate(
        [GreedyAgent(logits_net), "random"],
        num_players=args.players,
        hands=args.eval_hands,
        seed=10_000 + args.seed,
    )
    return res.summary(0)


def train(args: argparse.Namespace) -> dict[str, Any]:
    """Self-play PPO for ``args.frames`` env steps; returns before/after scores, counts and
    the last losses."""
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    hidden = tuple(args.hidden)
    logits_net = mlp(STANDARD_NUM_ACTIONS, hidden)
    value_net = TensorDictModule(mlp(1, hidden), in_keys=["observation"], out_keys=["state_value"])
    collect_actor = make_actor(logits_net, GROUP)
    loss_module = ClipPPOLoss(
        make_actor(logits_net, None),
        value_net,
        clip_epsilon=args.clip,
        entropy_coeff=args.entropy,
        critic_coeff=0.5,
        loss_critic_type="l2",
    )
    optim = torch.optim.Adam(loss_module.parameters(), lr=args.lr)
    before = score_vs_random(logits_net, args)

    env = make_env(args.players, args.seed)
    collector = Collector(
        env,
        collect_actor,
        frames_per_batch=args.frames_per_batch,
        total_frames=-1 if args.minutes else args.frames,  # -1: until the loop stops
        auto_register_policy_transforms=False,
    )
    frames = updates = used = 0
    last: dict[str, float] = {}
    start = time.perf_counter()
    for batch in collector:
        frames += batch.numel()
        data = decisions(batch, args.reward_scale)
        if len(data) < 2:  # no hand ended inside this batch: nothing to learn from yet
            continue
        used += len(data)
        with torch.no_grad():
            value = value_net(data)["state_value"]
            adv = data["value_target"] - value
            data["advantage"] = (adv - adv.mean()) / (adv.std() + 1e-8)
        for _ in range(args.epochs):
            for idx in torch.randperm(len(data)).split(args.minibatch):
                out = loss_module(data[idx])
                loss = out["loss_objective"] + out["loss_critic"] + out["loss_entropy"]
                optim.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(loss_module.parameters(), 0.5)
                optim.step()
                updates += 1
        last = {
            k: float(out[k].detach()) for k in ("loss_objective", "loss_critic", "loss_entropy")
        }
        collector.update_policy_weights_()
        if args.verbose:
            print(f"{frames:>8,} frames  " + "  ".join(f"{k} {v:+.4f}" for k, v in last.items()))
        if args.minutes and time.perf_counter() - start > args.minutes * 60:
            break
    seconds = time.perf_counter() - start
    collector.shutdown()
    if args.save:
        save_policy(logits_net, args.hidden, Path(args.save) / "policy.pt")
    after = score_vs_random(logits_net, args)
    return {
        "frames": frames,
        "env_steps": frames,
        "decisions_used": used,
        "updates": updates,
        "train_seconds": round(seconds, 1),
        "frames_per_second": round(frames / seconds, 1),
        "last_losses": last,
        "before": before,
        "after": after,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--smoke", action="store_true", help="tiny budget (seconds), for tests")
    p.add_argument("--frames", type=int, default=60_000, help="env steps in total")
    p.add_argument(
        "--minutes",
        type=float,
        default=0.0,
        help="a wall-clock budget instead of --frames: training stops at the first batch "
        "that ends past it",
    )
    p.add_argument("--save", metavar="DIR", help="write the policy network as DIR/policy.pt")
    p.add_argument("--frames-per-batch", type=int, default=2_000)
    p.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-hands", type=int, default=2000)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--clip", type=float, default=0.2)
    p.add_argument("--entropy", type=float, default=0.01)
    p.add_argument("--reward-scale", type=float, default=0.05)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--minibatch", type=int, default=256)
    p.add_argument("--hidden", type=int, nargs="+", default=[256, 256])
    p.add_argument("--json", help="write the results here")
    p.add_argument("--verbose", action="store_true", help="print the losses of every batch")
    args = p.parse_args(argv)
    if args.smoke:
        args.frames, args.frames_per_batch, args.eval_hands = 400, 200, 40
    if min(args.frames, args.frames_per_batch, args.eval_hands, args.minibatch) < 1:
        p.error("--frames, --frames-per-batch, --eval-hands and --minibatch must be positive")
    if args.minutes < 0:
        p.error(f"--minutes {args.minutes}: use a positive budget (0: --frames decides)")
    if args.save:
        Path(args.save).mkdir(parents=True, exist_ok=True)
    if args.frames < args.frames_per_batch:
        p.error(
            f"--frames {args.frames} is less than one batch (--frames-per-batch "
            f"{args.frames_per_batch})"
        )
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = train(args)
    b, a = out["before"], out["after"]
    losses = ", ".join(f"{k} {v:+.4f}" for k, v in out["last_losses"].items())
    print(
        f"torchrl PPO, {args.players} players: {out['frames']:,} frames "
        f"({out['decisions_used']:,} decisions used), {out['updates']:,} updates in "
        f"{out['train_seconds']} s ({out['frames_per_second']:,} frames/s); {losses}\n"
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
