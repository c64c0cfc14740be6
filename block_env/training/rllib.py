"""``algo: rllib``: league self-play PPO with Ray RLlib, on one machine or a Ray cluster.

The RLlib pieces (env, masked module, league) live in ``block_env.integrations.rllib``;
this file is the training loop around them, with the run folder, log, evaluation and final
results shared with the other engines:

1. Ray: ``ray.init()`` joins the cluster named by ``RAY_ADDRESS`` when it is set (the same
   command then samples on every node), else starts a local instance with
   ``rllib_num_cpus`` CPUs (0: ``num_env_runners`` + 1).
2. PPO (``ppo_config``) over single-hand episodes, ``num_env_runners`` env runners with
   ``rllib_envs_per_runner`` envs each; one learner in this process. With ``skip_forced``
   the env plays single-option moves itself, so the steps counted are decisions. Each seat of an
   episode is ``main`` (trained) or a frozen snapshot of it: a snapshot joins the league
   every ``rllib_league_every`` iterations (at most ``rllib_league_size``), and one seat is
   always ``main``, the others ``main`` with probability ``rllib_self_play``.
3. Every ``eval_every`` iterations ``main`` (greedy) plays ``eval_opponents`` on duplicate
   deals; ``checkpoints/rllib`` holds the RLlib checkpoint every ``checkpoint_every``
   iterations (with ``policy.pt`` of ``main`` inside it); training stops at
   ``total_steps`` sampled environment steps or ``time_limit_min``.
4. The final ``policy.pt`` (best evaluation when ``keep_best``), ``eval.txt``/``eval.json``
   and ``curve.png``, like the other engines: ``agents.load`` and ``block_env.evaluate``
   play ``policy.pt`` without Ray.

Config keys it reads: the game (``num_players``, ``partnership``, ``opener``), ``seed``,
``threads``, ``total_steps``, ``time_limit_min``, ``hidden``, ``activation``, ``lr``,
``gamma``, ``gae_lambda``, ``epochs``, ``minibatch_size``, ``clip``, ``ent_coef``,
``vf_coef``, ``skip_forced``, the evaluation and checkpoint keys, and the ``rllib_*`` /
``num_env_runners`` keys. The native engine's rollout, opponent-pool and critic keys do not
apply (rewards stay in points: the value loss is not clipped and, actor and critic being
separate networks, no gradient-norm clipping couples them).

Runs cannot be resumed (``--resume`` is refused); Ctrl-C stops after the iteration in
progress and still writes the results.
"""

from __future__ import annotations

import copy
import os
import time
from typing import Any

from block_env.training.config import TrainConfig, game_of
from block_env.training.errors import ConfigError
from block_env.training.results import PERIODIC_EVAL_SEED, evaluate_against, finish
from block_env.training.runs import StopSignals, close_run, open_run, say

STEPS_KEY = "num_env_steps_sampled_lifetime"


def ray_init(cfg: TrainConfig) -> bool:
    """Start or join Ray; returns whether this call started it (and should shut it down).
    With ``RAY_ADDRESS`` set, joins that cluster (CPU counts are the cluster's)."""
    import ray

    if ray.is_initialized():
        return False
    runtime_env = {"env_vars": {"OMP_NUM_THREADS": str(cfg.threads)}}
    if os.environ.get("RAY_ADDRESS"):
        ray.init(runtime_env=runtime_env, log_to_driver=False)
    else:
        cpus = cfg.rllib_num_cpus or cfg.num_env_runners + 1
        ray.init(
            num_cpus=cpus, include_dashboard=False, runtime_env=runtime_env, log_to_driver=False
        )
    return True


def algo_config(cfg: TrainConfig) -> Any:
    """The RLlib ``PPOConfig`` of a run."""
    from block_env.integrations.rllib import ppo_config

    return ppo_config(
        {**game_of(cfg), "skip_forced": cfg.skip_forced},
        num_env_runners=cfg.num_env_runners,
        num_envs_per_env_runner=cfg.rllib_envs_per_runner,
        hidden=cfg.hidden,
        activation=cfg.activation,
        lr=cfg.lr,
        gamma=cfg.gamma,
        gae_lambda=cfg.gae_lambda,
        train_batch_size=cfg.rllib_train_batch,
        minibatch_size=min(cfg.minibatch_size, cfg.rllib_train_batch),
        num_epochs=cfg.epochs,
        clip=cfg.clip,
        ent_coef=cfg.ent_coef,
        vf_coef=cfg.vf_coef,
        league_every=cfg.rllib_league_every,
        league_size=cfg.rllib_league_size,
        self_play=cfg.rllib_self_play,
        seed=cfg.seed,
    )


def train_rllib(
    cfg: TrainConfig, resume: str | bool | None = None, force: bool = False
) -> dict[str, Any]:
    """Train ``main`` by league self-play (see the module docstring); returns the summary
    that is also written to the run folder."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "algo=rllib needs Ray RLlib: install the rllib extra in a venv of its own "
            '(pip install torch==2.13.0 -e ".[train,rllib]", or bash .ci/extra-rllib)'
        ) from None
    import torch

    from block_env.integrations.rllib import export_policy, main_network

    run, _ = open_run(cfg, resume, force, can_resume=False)
    started = False
    try:
        torch.set_num_threads(cfg.threads)
        started = ray_init(cfg)
        algo = algo_config(cfg).build_algo()
        history: list[dict[str, Any]] = []
        best: dict[str, Any] = {"weights": None, "update": 0, "score": -float("inf")}
        start = time.perf_counter()
        steps = iteration = 0
        with StopSignals() as signals:
            while steps < cfg.total_steps and not signals.requested:
                if cfg.time_limit_min and time.perf_counter() - start > cfg.time_limit_min * 60:
                    break
                result = algo.train()
                iteration += 1
                steps = int(result["env_runners"].get(STEPS_KEY, steps))
                record = {
                    "update": iteration,
                    "env_steps": steps,
                    "wall": time.perf_counter() - start,
                    "league": result.get("league", {}).get("snapshots", 0),
                }
                if iteration % cfg.eval_every == 0:
                    history.append(_evaluate(algo, cfg, record, best, main_network))
                if iteration % cfg.checkpoint_every == 0:
                    _checkpoint(algo, run.checkpoints / "rllib", cfg)
                run.append_log(record)
                say(
                    None,
                    f"rllib iteration {iteration}: {steps:,} env steps, "
                    f"{record['wall'] / 60:.1f} min, league {record['league']}",
                )
        wall = time.perf_counter() - start
        record = {"update": iteration, "env_steps": steps, "wall": wall}
        if not history or history[-1]["env_steps"] != steps:
            history.append(_evaluate(algo, cfg, record, best, main_network))
        _checkpoint(algo, run.checkpoints / "rllib", cfg)
        model = main_network(algo)
        summary = finish(cfg, model, best, history, run.path, wall)
        export_policy(algo, run.checkpoints / "rllib" / "policy_last.pt", game_of(cfg))
        algo.stop()
        return summary
    finally:
        if started:
            ray.shutdown()
        close_run(run)


def _evaluate(
    algo: Any, cfg: TrainConfig, record: dict[str, Any], best: dict[str, Any], network: Any
) -> dict[str, Any]:
    """``main`` (greedy) vs ``eval_opponents``; keeps the best weights in ``best``."""
    model = network(algo)
    res = evaluate_against(model, cfg, cfg.eval_opponents, cfg.eval_hands, PERIODIC_EVAL_SEED)
    score = sum(v["margin"] for v in res.values()) / max(len(res), 1)
    if score > best["score"]:
        best.update(weights=copy.deepcopy(model.state_dict()), update=record["update"], score=score)
    say(
        None,
        f"rllib eval at {record['env_steps']:,} steps: "
        + "  ".join(f"{k} {v['margin']:+.2f}" for k, v in res.items()),
    )
    eval_ = {k: {x: v[x] for x in ("margin", "lo", "hi", "hand_win")} for k, v in res.items()}
    return {"env_steps": record["env_steps"], "wall": record["wall"], "eval": eval_}


def _checkpoint(algo: Any, path: Any, cfg: TrainConfig) -> None:
    """The RLlib checkpoint, with ``main`` as a block-env policy file inside it."""
    from block_env.integrations.rllib import export_policy

    path.mkdir(parents=True, exist_ok=True)
    algo.save_to_path(str(path))
    export_policy(algo, path / "policy.pt", game_of(cfg))
