"""``algo: sb3``: sb3-contrib's MaskablePPO on ``block_env.wrappers.SingleAgentBlockEnv``
against the configured baseline opponents, evaluated and reported like the native engine.
A baseline for comparison: it steps one Python env per move and learns far more slowly."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from block_env.training.config import BASELINES, TrainConfig
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
    game = dict(num_players=cfg.num_players, partnership=cfg.partnership, opener=cfg.opener)

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
    res = _sb3_final(agent, cfg)
    text = (
        f"python train.py algo=sb3 run '{cfg.name}': {model.num_timesteps:,} learner steps, "
        f"{wall / 60:.1f} min\n\n" + "\n\n".join(v["table"] for v in res.values())
    )
    return write_results(out, cfg, text, res, history, wall)


class SB3Agent:
    """``act(observation) -> int`` for a MaskablePPO model trained on the scaled wrapper."""

    name = "sb3-policy"

    def __init__(self, model: Any) -> None:
        from block_env.observation import OBS_SCALE

        self.model = model
        self.scale = (1.0 / OBS_SCALE).astype(np.float32)

    def act(self, observation: dict[str, np.ndarray]) -> int:
        obs = observation["observation"] * self.scale
        mask = observation["action_mask"].astype(bool)
        action, _ = self.model.predict(obs, action_masks=mask, deterministic=True)
        return int(action)


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
