"""Evaluation and results of a run: the trained seat against the baseline bots on duplicate
deals, the final files of the run folder (``policy.pt``, ``eval.txt``, ``eval.json``,
``curve.png``). Shared by every training engine."""

from __future__ import annotations

import copy
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from block_env.training.config import TrainConfig, game_of, hand_game_of, obs_of, set_of

# Deal seeds of every training engine's evaluations: the periodic ones (which choose the
# kept policy) and the final one. Both lie far below the benchmark's held-out deals.
PERIODIC_EVAL_SEED = 10_000
FINAL_EVAL_SEED = 1_000_000


def evaluate_against(
    model: Any, cfg: TrainConfig, opponents: list[str], hands: int, seed: int
) -> dict[str, dict[str, float]]:
    """Greedy policy vs each baseline (and ``"fixed"``: the run's ``fixed_agent``) on
    duplicate deals: margin and hand-win CIs. Played on
    the batched engine (``block_env.evaluation.batched``): the AEC evaluation's deals,
    seatings and statistics, all games of one opponent at once."""
    from agents.network import ActorCritic
    from agents.policy import PolicyAgent
    from block_env.evaluation.batched import agent_actor, evaluate_batched

    cpu_model = ActorCritic(
        model.net, **({"max_pip": cfg.max_pip} if set_of(cfg) else {}), **obs_of(cfg)
    )
    cpu_model.load_state_dict({k: v.detach().cpu() for k, v in model.state_dict().items()})
    agent = PolicyAgent(cpu_model, "cpu", greedy=True, name="policy")
    out = {}
    for opp in opponents:
        actor = None
        if opp == "fixed":  # the frozen agent the run trains a best response against
            actor = agent_actor(cfg.fixed_agent, hand_game_of(cfg), seed, information_state=True)
        res = evaluate_batched(agent, hand_game_of(cfg), opp, hands, seed, opponent_actor=actor)
        out[opp] = _figures(res)
    return out


def _figures(res: Any) -> dict[str, Any]:
    """The trained seat's headline figures of an ``EvalResult`` and its table."""
    s = res.stats[0]
    return {
        "margin": s.margin.mean,
        "lo": s.margin.lo,
        "hi": s.margin.hi,
        "hand_win": s.hand_win.mean,
        "hands": res.hands,
        "table": res.table(),
    }


def evaluate_agent(
    agent: Any, cfg: TrainConfig, opponents: list[str], hands: int, seed: int
) -> dict[str, dict[str, Any]]:
    """``agent`` (one seat) vs each opponent on duplicate deals: margin and hand-win CIs."""
    from block_env.evaluation import evaluate

    out = {}
    for opp in opponents:
        res = evaluate(
            [agent, opp],
            num_players=cfg.num_players,
            hands=hands,
            seed=seed,
            partnership=cfg.partnership,
            opener=cfg.opener,
            **set_of(cfg),
        )
        out[opp] = _figures(res)
    return out


def write_results(
    out: Path, cfg: TrainConfig, text: str, res: dict, history: list, wall: float, **extra: Any
) -> dict[str, Any]:
    """The run folder's final files: eval.txt (tables), eval.json (summary), curve.png."""
    (out / "eval.txt").write_text(text + "\n", encoding="utf-8")
    summary = {
        "config": asdict(cfg),
        **extra,
        "train_wall_s": wall,
        "final": {
            k: {x: v[x] for x in ("margin", "lo", "hi", "hand_win", "hands")}
            for k, v in res.items()
        },
        "history": history,
    }
    (out / "eval.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    plot_curve(history, out / "curve.png", nashconv_of(out / "log.jsonl"))
    print(text)
    return summary


def nashconv_of(log: Path) -> list[tuple[int, float]]:
    """(environment steps, NashConv) of the log records that measured it (``nashconv_every``)."""
    if not log.exists():
        return []
    points = []
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and "nash_conv" in record:
            points.append((int(record["env_steps"]), float(record["nash_conv"])))
    return points


def plot_curve(
    history: list[dict[str, Any]], path: Path, nashconv: list[tuple[int, float]] | None = None
) -> None:
    """Evaluation margin (with 95% CI bands) against steps and wall time, as a PNG; with
    ``nashconv`` points a third panel shows the policy's NashConv against steps (log y)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not history:
        return
    if nashconv:
        fig, all_axes = plt.subplots(1, 3, figsize=(16, 4))
        axes = all_axes[:2]
        axes[1].sharey(axes[0])
        steps_nc, values = zip(*nashconv)
        all_axes[2].plot(steps_nc, values, marker="o", ms=3, color="black")
        all_axes[2].set_yscale("log")
        all_axes[2].set_xlabel("environment steps")
        all_axes[2].set_ylabel("NashConv of the policy (exact)")
        all_axes[2].grid(alpha=0.3, which="both")
    else:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    opps = list(history[0]["eval"])
    for opp in opps:
        steps = np.array([h["env_steps"] for h in history])
        wall = np.array([h["wall"] / 60 for h in history])
        m = np.array([h["eval"][opp]["margin"] for h in history])
        lo = np.array([h["eval"][opp]["lo"] for h in history])
        hi = np.array([h["eval"][opp]["hi"] for h in history])
        for ax, x in ((axes[0], steps), (axes[1], wall)):
            ax.plot(x, m, marker="o", ms=3, label=f"vs {opp}")
            ax.fill_between(x, lo, hi, alpha=0.2)
    axes[0].set_xlabel("environment steps")
    axes[1].set_xlabel("wall time (min)")
    axes[0].set_ylabel("points per hand margin (95% CI)")
    for ax in axes:
        ax.axhline(0, color="grey", lw=0.8)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
    fig.suptitle("Block self-play PPO: greedy policy vs baselines (duplicate deals)")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def finish(
    cfg: TrainConfig,
    model: Any,
    best: dict[str, Any],
    history: list,
    out: Path,
    wall: float,
    shown: Path | None = None,
) -> dict[str, Any]:
    """For an ``agents.network.ActorCritic``: the final policy file (the best periodic
    evaluation when ``keep_best``, with the game it was trained for), the final evaluation
    table/JSON and the learning curve in the run folder ``out`` (named to the user as
    ``shown``, by default ``out``)."""
    import torch

    from agents.policy_files import policy_dict

    final = copy.deepcopy(model).cpu()
    chosen = "last"
    if cfg.keep_best and best["weights"] is not None:
        final.load_state_dict(best["weights"])
        chosen = f"best periodic evaluation (update {best['update']})"
    meta = {"config": asdict(cfg), "chosen": chosen, "train_wall_s": wall}
    tmp = out / "policy.pt.tmp"  # to play; written atomically
    torch.save(policy_dict(final, meta, actor_only=True, game=game_of(cfg)), tmp)
    os.replace(tmp, out / "policy.pt")
    res = evaluate_against(
        final, cfg, cfg.eval_opponents, cfg.final_eval_hands, seed=FINAL_EVAL_SEED
    )
    lines = [
        f"python train.py run '{cfg.name}': {cfg.num_players} players, "
        f"{history[-1]['env_steps'] if history else 0:,} environment steps, "
        f"{wall / 60:.1f} min of training; policy: {chosen}",
        "",
    ]
    lines += [v["table"] for v in res.values()]
    text = "\n\n".join([lines[0], *lines[2:]])
    summary = write_results(out, cfg, text, res, history, wall, policy=chosen)
    print(f"\nrun folder: {shown or out}")
    return summary
