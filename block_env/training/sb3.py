"""``algo: sb3``: sb3-contrib's MaskablePPO on ``block_env.wrappers.SingleAgentBlockEnv``
against the configured baseline opponents, evaluated and reported like the native engine.
A baseline for comparison: it steps one Python env per move and learns far more slowly."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from block_env.training.config import BASELINES, TrainConfig, set_of
from block_env.training.results import (
    FINAL_EVAL_SEED,
    PERIODIC_EVAL_SEED,
    evaluate_agent,
    write_results,
)
from block_env.training.runs import bar_of, close_run, open_run, resolve_device, say


def train_sb3(
    cfg: TrainConfig, resume: str | bool | None = None, force: bool = False
) -> dict[str, Any]:
    """``algo=sb3``: sb3-contrib MaskablePPO on ``block_env.wrappers.SingleAgentBlockEnv``
    against the configured baseline opponents (one drawn per hand); evaluated like ours."""
    import torch

    torch.set_num_threads(cfg.threads)
    device = resolve_device(cfg.device)
    run, _ = open_run(cfg, resume, force, can_resume=False)
    try:
        return _train(cfg, run.path, device)
    finally:
        close_run(run)


def _train(cfg: TrainConfig, out: Path, device: str) -> dict[str, Any]:
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    from block_env.wrappers import SingleAgentBlockEnv

    pool = [k for k in BASELINES if cfg.opponents.get(k, 0) > 0] or ["random"]
    game = sb3_game(cfg)

    def make(i: int) -> Any:
        return lambda: SingleAgentBlockEnv(
            opponent_pool=pool, episode="hand", scale_obs=True, **game
        )

    venv = DummyVecEnv([make(i) for i in range(cfg.sb3_envs)])
    venv.seed(cfg.seed)
    model = MaskablePPO(
        "MlpPolicy",
        venv,
        learning_rate=cfg.lr,
        n_steps=cfg.sb3_n_steps,
        batch_size=min(cfg.minibatch_size, cfg.sb3_n_steps * cfg.sb3_envs),
        n_epochs=cfg.epochs,
        gamma=cfg.gamma,
        gae_lambda=cfg.gae_lambda,
        clip_range=cfg.clip,
        ent_coef=cfg.ent_coef,
        vf_coef=cfg.vf_coef,
        max_grad_norm=cfg.max_grad_norm,
        policy_kwargs={"net_arch": list(cfg.hidden)},
        seed=cfg.seed,
        device=device,
        verbose=0,
    )
    agent = SB3Agent(model)
    history: list[dict[str, Any]] = []
    start = time.perf_counter()
    bar = bar_of(cfg, 0)
    every = cfg.eval_every * cfg.sb3_n_steps * cfg.sb3_envs

    class Progress(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.next_eval = every

        def _on_step(self) -> bool:
            if bar is not None:
                bar.update(cfg.sb3_envs)
            if self.num_timesteps >= self.next_eval:
                self.next_eval += every
                history.append(_sb3_eval(agent, cfg, self.num_timesteps, start, bar))
            limit = cfg.time_limit_min
            return not (limit and time.perf_counter() - start > limit * 60)

    try:
        model.learn(cfg.total_steps, callback=Progress())
    finally:
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - start
    history.append(_sb3_eval(agent, cfg, model.num_timesteps, start, None))
    model.save(out / "sb3_model.zip")
    save_policy(model.policy, cfg, out / "sb3_policy.pt")
    res = _sb3_final(agent, cfg)
    text = (
        f"python train.py algo=sb3 run '{cfg.name}': {model.num_timesteps:,} learner steps, "
        f"{wall / 60:.1f} min\n\n" + "\n\n".join(v["table"] for v in res.values())
    )
    return write_results(out, cfg, text, res, history, wall)


class SB3Agent:
    """``act(observation) -> int`` for a MaskablePPO model (or its policy) trained on the
    scaled wrapper."""

    name = "sb3-policy"

    def __init__(self, model: Any) -> None:
        self.model = model
        self.scale: np.ndarray | None = None  # 1 / the observation layout's scale

    def act(self, observation: dict[str, np.ndarray]) -> int:
        if self.scale is None:
            from block_env.observation.layout import layout_for_dim

            dim = len(observation["observation"])
            self.scale = (1.0 / layout_for_dim(dim).scale).astype(np.float32)
        obs = observation["observation"] * self.scale
        mask = observation["action_mask"].astype(bool)
        action, _ = self.model.predict(obs, action_masks=mask, deterministic=True)
        return int(action)


def sb3_game(cfg: TrainConfig) -> dict[str, Any]:
    """The wrapper's game keywords: the players, teams, opener and tile set of the run."""
    return dict(
        num_players=cfg.num_players,
        partnership=cfg.partnership,
        opener=cfg.opener,
        **set_of(cfg),
    )


def save_policy(policy: Any, cfg: TrainConfig, path: Path) -> None:
    """The policy's weights, network shape and game as plain tensors and values, which
    ``load_agent`` reads with ``torch.load(weights_only=True)`` (the SB3 zip holds pickles)."""
    import torch

    game = sb3_game(cfg)
    data = {"net_arch": list(cfg.hidden), "game": game, "state_dict": policy.state_dict()}
    torch.save(data, path)


def load_agent(path: str) -> SB3Agent:
    """An agent spec's factory (``block_env.training.sb3:load_agent:path=FILE``): the
    deterministic MaskablePPO policy of ``save_policy``'s file."""
    import torch
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from block_env.wrappers import SingleAgentBlockEnv

    data = torch.load(path, weights_only=True, map_location="cpu")
    env = SingleAgentBlockEnv(
        opponent_pool=["random"], episode="hand", scale_obs=True, **data["game"]
    )
    policy = MaskableActorCriticPolicy(
        env.observation_space, env.action_space, lambda _: 0.0, net_arch=data["net_arch"]
    )
    policy.load_state_dict(data["state_dict"])
    policy.set_training_mode(False)
    return SB3Agent(policy)


def _sb3_eval(agent: Any, cfg: TrainConfig, steps: int, start: float, bar: Any) -> dict:
    res = evaluate_agent(agent, cfg, cfg.eval_opponents, cfg.eval_hands, PERIODIC_EVAL_SEED)
    say(
        bar,
        f"sb3 steps {steps:,} eval: "
        + "  ".join(f"{k} {v['margin']:+.2f}" for k, v in res.items()),
    )
    return {
        "env_steps": steps,
        "wall": time.perf_counter() - start,
        "eval": {k: {x: v[x] for x in ("margin", "lo", "hi", "hand_win")} for k, v in res.items()},
    }


def _sb3_final(agent: Any, cfg: TrainConfig) -> dict[str, Any]:
    return evaluate_agent(agent, cfg, cfg.eval_opponents, cfg.final_eval_hands, FINAL_EVAL_SEED)
