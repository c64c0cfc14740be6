"""Self-play PPO for Block dominoes on the batched engine (``algo: ppo``, the default of
``python train.py``), readable top to bottom (CleanRL style).

What happens:

1. Rollouts (``block_env.training.rollout``): B batched games, one hand per episode; in each
   the learner plays its seat(s) against an opponent drawn for that hand (the policy itself,
   a past snapshot, or a baseline bot), the learning seat rotating hand after hand; the
   learner's decisions are recorded with the hand's zero-sum points as reward and GAE
   advantages within each hand.
2. PPO with masked logits (``torch.finfo(dtype).min`` on illegal actions) updates the
   actor-critic of ``agents.policy``. The critic also sees the other seats' hands
   (``privileged_critic``, training only: the actor, which is all a player uses, sees the
   observation alone), which cuts the variance of the advantages. During the first
   ``teacher_steps`` steps the loss also holds the cross-entropy of a teacher bot's move on
   each decision (kickstarting; ``teacher: auto`` is the rule bot), with a weight falling
   linearly to 0. With ``belief_coef`` > 0 it also holds the belief head's binary
   cross-entropy against the other seats' hands (``agents.network.NetConfig.belief_head``):
   an auxiliary target for the actor's features.
3. Every ``eval_every`` updates the greedy policy plays the baselines on duplicate deals
   (the deals, seatings and statistics of ``block_env.evaluate``, all games at once on the
   batched engine: ``block_env.evaluation.batched``); TensorBoard, checkpoints
   (``--resume``) and the progress bar follow. At the end: ``policy.pt`` (the best
   evaluated policy when ``keep_best``), the final evaluation table
   (``eval.txt``/``eval.json``) and ``curve.png`` in the run folder.

With ``obs_type=information_state`` the games hand out the information state (the
observation plus the hand's public history): the networks (learner, self, snapshots) read
it through the model's per-seat summary of the history, which is what the rollouts store
(``agents.network.summarize_history``: the same outputs as the full vector at a fraction of
its size), while the baseline bots and the teacher read the plain observation, its first
``obs_dim`` entries.

On several ranks (``block_env.training.distributed``: ``nproc=N``, torchrun, Ray Train) each
rank plays its share of ``num_envs`` with its own seed and takes its share of each
minibatch; the gradients are averaged before every optimizer step, so all ranks hold the
same weights; rank 0 alone evaluates and writes the run folder, and a checkpoint holds
every rank's games and random streams.

Config: ``block_env.training.config.TrainConfig``. Runs are deterministic for a seed on CPU,
and a resumed run continues exactly (every random state and the games in progress are in the
checkpoint). They end on ``total_steps``; ``time_limit_min`` is an optional guard (off by
default) that would make the result depend on the machine's speed.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from dataclasses import asdict
from typing import Any

import numpy as np
import torch
from torch.nn.functional import binary_cross_entropy_with_logits

from agents.network import ActorCritic, NetConfig, log_softmax_entropy, mask_logits
from agents.policy_files import policy_dict
from block_env.training.config import (
    TrainConfig,
    game_of,
    obs_of,
    set_of,
    split_across,
    teacher_of,
)
from block_env.training.distributed import Ranks, rank_seed
from block_env.training.errors import (
    BadCheckpoint,
    ConfigError,
    Diverged,
    Interrupted,
    TrainError,
)
from block_env.training.init_policy import initial_weights
from block_env.training.results import PERIODIC_EVAL_SEED, evaluate_against, finish
from block_env.training.rollout import Batch, Collector
from block_env.training.runs import (
    RunFolder,
    StopRequested,
    StopSignals,
    bar_of,
    close_run,
    open_run,
    resolve_device,
    save_checkpoint,
    say,
    tensorboard_of,
)

# ============================================================================ PPO update


def ppo_update(
    model: Any,
    optimizer: Any,
    batch: Batch,
    cfg: TrainConfig,
    device: Any,
    generator: Any,
    teacher_coef: float = 0.0,
    ranks: Ranks | None = None,
    minibatch_size: int | None = None,
) -> dict[str, float]:
    """Clipped PPO epochs over the batch; returns mean losses and diagnostics. With
    ``teacher_coef`` > 0 the loss adds that times the cross-entropy of the teacher's moves
    (kickstarting). Diverged when a loss or gradient norm is not finite (raised before that
    step changes any weight).

    With several ``ranks`` each rank passes its own batch and its share of the minibatch
    (``minibatch_size``): every rank takes the same number of minibatches (as many as the
    rank with the fewest decisions has), the gradients are averaged before each step, and
    the returned figures are the means over the ranks."""
    ranks = ranks or Ranks.single()
    N = len(batch.actions)
    (fewest,) = ranks.flags(-N, what="the decision count")
    n_min = int(-fewest)  # the fewest decisions of any rank (N itself on one rank)
    if n_min < 2:  # nothing to normalise advantages over: skip this update
        return {}
    clock = time.perf_counter
    times = dict.fromkeys(("time_forward", "time_backward", "time_allreduce", "time_step"), 0.0)
    params = list(model.parameters())
    t = {
        "obs": torch.from_numpy(batch.obs).to(device),
        "priv": torch.from_numpy(batch.priv).to(device),
        "mask": torch.from_numpy(batch.mask).to(device),
        "act": torch.from_numpy(batch.actions).to(device),
        "logp": torch.from_numpy(batch.logp).to(device),
        "adv": torch.from_numpy(batch.advantages).to(device),
        "ret": torch.from_numpy(batch.returns).to(device),
    }
    stats: dict[str, list[float]] = {k: [] for k in ("pg", "vf", "ent", "kl", "clipfrac")}
    teaching = teacher_coef > 0
    if teaching:
        t["teacher"] = torch.from_numpy(batch.teacher).to(device)
        stats["teacher_ce"] = []
    believing = cfg.belief_coef > 0
    if believing:
        stats["belief_bce"] = []
    mb = min(cfg.minibatch_size if minibatch_size is None else minibatch_size, n_min)
    for _ in range(cfg.epochs):
        perm = torch.randperm(N, generator=generator).to(device)
        kls = []
        for start in range(0, n_min - mb + 1, mb):
            t0 = clock()
            i = perm[start : start + mb]
            priv = t["priv"][i] if model.net.privileged_critic else None
            if believing:
                logits, value, belief = model.forward_beliefs(t["obs"][i], priv)
            else:
                logits, value = model(t["obs"][i], priv)
            logp_all, entropy = log_softmax_entropy(mask_logits(logits, t["mask"][i]))
            new = logp_all.gather(1, t["act"][i][:, None]).squeeze(1)
            ratio = (new - t["logp"][i]).exp()
            adv = t["adv"][i]
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            pg = torch.max(-adv * ratio, -adv * ratio.clamp(1 - cfg.clip, 1 + cfg.clip)).mean()
            vf = 0.5 * ((value - t["ret"][i]) ** 2).mean()
            ent = entropy.mean()
            loss = pg - cfg.ent_coef * ent + cfg.vf_coef * vf
            if teaching:
                teacher_ce = -logp_all.gather(1, t["teacher"][i][:, None]).mean()
                loss = loss + teacher_coef * teacher_ce
                stats["teacher_ce"].append(teacher_ce.item())
            if believing:
                belief_bce = binary_cross_entropy_with_logits(belief, t["priv"][i])
                loss = loss + cfg.belief_coef * belief_bce
                stats["belief_bce"].append(belief_bce.item())
            bad = None
            if not torch.isfinite(loss):
                bad = Diverged(
                    f"the PPO loss is {loss.item()} (pg {pg.item()}, vf {vf.item()}, "
                    f"entropy {ent.item()})"
                )
                if not ranks.many:
                    raise bad
            t1 = clock()
            optimizer.zero_grad()
            if bad is None:
                loss.backward()
            t2 = clock()
            if ranks.average_gradients(params, failed=bad is not None):
                ranks.agree(bad)  # raises on every rank, with the failing rank's message
            t3 = clock()
            norm = torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
            if not torch.isfinite(norm):
                raise Diverged(f"the gradient norm is {norm.item()}")
            optimizer.step()
            t4 = clock()
            for key, span in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                times[key] += span
            with torch.no_grad():
                kl = ((ratio - 1) - (new - t["logp"][i])).mean().item()
                clipfrac = ((ratio - 1).abs() > cfg.clip).float().mean().item()
            kls.append(kl)
            for k, v in (
                ("pg", pg.item()),
                ("vf", vf.item()),
                ("ent", ent.item()),
                ("kl", kl),
                ("clipfrac", clipfrac),
            ):
                stats[k].append(v)
        if cfg.target_kl and ranks.mean([float(np.mean(kls))])[0] > cfg.target_kl:
            break
    out = {k: float(np.mean(v)) for k, v in stats.items() if v}
    var = float(np.var(batch.returns))
    out["explained_var"] = (
        float(1 - np.var(batch.returns - batch.values) / var) if var > 0 else float("nan")
    )
    out = dict(zip(out, ranks.mean(list(out.values()))))
    return {**out, **times}


# ============================================================================ training


def teacher_weight(cfg: TrainConfig, env_steps: int) -> float:
    """Weight of the teacher's cross-entropy at ``env_steps``: ``teacher_coef`` falling
    linearly to 0 at ``teacher_steps`` (0 without a teacher)."""
    if teacher_of(cfg) == "none":
        return 0.0
    return cfg.teacher_coef * max(0.0, 1.0 - env_steps / cfg.teacher_steps)


def train_ppo(
    cfg: TrainConfig,
    resume: str | bool | None = None,
    force: bool = False,
    ranks: Ranks | None = None,
    opened: tuple[RunFolder, dict | None, Any] | None = None,
) -> dict:
    """Self-play PPO as configured; returns the final evaluation (also written to disk).
    ``resume``: True for the run folder's latest checkpoint, or a checkpoint path.
    ``ranks``: this process's place in a data-parallel run (``distributed.Ranks``; one
    process by default): ``num_envs`` and ``minibatch_size`` are split across the ranks,
    rank 0 alone opens the run folder and returns the summary, the other ranks return an
    empty dict. ``opened``: rank 0's (run folder, checkpoint state, initial
    weights) when another process opened the run (``ray_train``'s driver)."""
    ranks = ranks or Ranks.single()
    torch.set_num_threads(cfg.threads)
    device = resolve_device(cfg.device)
    if ranks.many and device == "cuda":
        device = f"cuda:{ranks.local_rank}"  # one GPU per rank of a node
    split_across(cfg, ranks.world_size)  # the same ConfigError on every rank
    run, state, init, error = None, None, None, None
    if ranks.main:
        try:  # checked before the run folder is made; a resumed run has its own weights
            if opened is not None:
                run, state, init = opened
            else:
                if cfg.init_policy and not resume:
                    init = initial_weights(cfg, new_model(cfg, "cpu"))
                run, state = open_run(cfg, resume, force)
            saved_world = ranks.world_size if state is None else int(state.get("world_size", 1))
            if saved_world != ranks.world_size:
                close_run(run)
                raise BadCheckpoint(
                    f"checkpoint {state['source']} was written by a run on {saved_world} "
                    f"rank(s); resume it on {saved_world} (nproc={saved_world}, or torchrun "
                    f"with {saved_world} processes in all), not {ranks.world_size}"
                )
        except TrainError as exc:
            error = exc
    ranks.agree(error)
    state, init = ranks.broadcast((state, init))
    try:
        return _train(cfg, run, state, device, init, ranks)
    finally:
        if run is not None:
            close_run(run)


def new_model(cfg: TrainConfig, device: str) -> ActorCritic:
    """A freshly initialised actor-critic of the run's shape."""
    net = NetConfig(
        tuple(cfg.hidden),
        cfg.activation,
        cfg.shared,
        cfg.use_scores,
        cfg.privileged_critic,
        belief_head=cfg.belief_coef > 0,
    )
    return ActorCritic(net, **set_of_model(cfg), **obs_of(cfg)).to(device)


def set_of_model(cfg: TrainConfig) -> dict[str, Any]:
    """The network's tile set keyword (empty for the standard set)."""
    return {"max_pip": cfg.max_pip} if set_of(cfg) else {}


def nashconv_probe(cfg: TrainConfig) -> Any:
    """The NashConv measurement of ``block_env.openspiel.probe`` for the run's game, or None
    when ``nashconv_every`` is 0. ConfigError when open_spiel is missing or the game is too
    large to walk."""
    if not cfg.nashconv_every:
        return None
    try:
        from block_env.openspiel.probe import NashConvProbe
    except ImportError as exc:
        raise ConfigError(
            f"config nashconv_every={cfg.nashconv_every} needs open_spiel "
            f"(pip install -e '.[openspiel]'): {exc}"
        ) from None
    try:
        return NashConvProbe(
            cfg.num_players, cfg.max_pip, cfg.hand_size, cfg.partnership, cfg.opener
        )
    except ValueError as exc:
        raise ConfigError(f"config nashconv_every={cfg.nashconv_every}: {exc}") from None


def weights_finite(model: Any) -> bool:
    """Whether every parameter and buffer of ``model`` is finite."""
    return all(bool(torch.isfinite(t).all()) for t in model.state_dict().values())


def _train(
    cfg: TrainConfig,
    run: RunFolder | None,
    state: dict | None,
    device: str,
    init: tuple[dict[str, torch.Tensor], bool] | None = None,
    ranks: Ranks | None = None,
) -> dict:
    ranks = ranks or Ranks.single()
    main = ranks.main  # rank 0: the run folder, evaluations, logs and messages
    local_envs, local_minibatch = split_across(cfg, ranks.world_size)
    seed = rank_seed(cfg.seed, ranks.rank)  # this rank's games and random streams
    torch.manual_seed(cfg.seed)  # the same initial weights on every rank
    rng = np.random.default_rng(seed)  # opponents, learner seats, snapshot draws
    model = new_model(cfg, device)
    if state is None and init is not None:
        weights, with_critic = init
        model.load_state_dict(weights, strict=with_critic)
        if main:
            print(
                f"starting from {cfg.init_policy}: actor"
                + (" and critic" if with_critic else " (the critic starts fresh)"),
                flush=True,
            )
    # fused: one kernel for all parameters, about half the for-loop Adam's time per step
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr, eps=1e-5, fused=True)
    snap_model = new_model(cfg, device)
    snap_model.eval()
    collector = Collector(cfg, model, device, rng, num_envs=local_envs, seed=seed)
    shuffle_gen = torch.Generator().manual_seed(seed + 1)  # minibatch order
    update, env_steps, wall0, history = 0, 0, 0.0, []
    pool: list[dict[str, Any]] = []  # past weights, the "snapshot" opponents
    best: dict[str, Any] = {"score": -math.inf, "weights": None, "update": 0}
    owes_eval = False  # a stop came during this update's periodic evaluation
    if state is None:
        collector.reset(seed=seed)
    else:  # continue exactly where the checkpoint was taken (see checkpoint() below)
        model.load_state_dict(state["policy"]["weights"])
        optimizer.load_state_dict(state["optimizer"])
        update, env_steps, wall0 = state["update"], state["env_steps"], state["wall"]
        history = json.loads(state["history"])
        pool = list(state["pool"])
        best = {
            "score": state["best_score"],
            "weights": state["best_weights"],
            "update": state["best_update"],
        }
        try:
            mine = state if ranks.rank == 0 else state["ranks"][ranks.rank - 1]
            owes_eval = bool(state["owes_eval"])
            rng.bit_generator.state = mine["rng"]["numpy"]
            torch.set_rng_state(mine["rng"]["torch"])
            shuffle_gen.set_state(mine["rng"]["shuffle"])
            collector.load_state_dict(mine["collector"])
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            raise BadCheckpoint(
                f"checkpoint {state['source']}: its saved training state does not fit this "
                f"version of block-env "
                f"({type(exc).__name__}: {exc})"
            ) from None
    ranks.check_replicas(model, update)
    steps_per_update = cfg.num_envs * cfg.rollout_steps  # all ranks together
    total_updates = max(1, math.ceil(cfg.total_steps / steps_per_update))
    nashconv = nashconv_probe(cfg) if main else None  # None unless nashconv_every > 0
    writer = None
    if cfg.tensorboard and main:  # a resumed run drops the events logged after its checkpoint
        writer = tensorboard_of(run.path, purge_step=env_steps + 1 if state else None)
    bar = bar_of(cfg, env_steps) if main else None
    start = time.perf_counter() - wall0
    signals = StopSignals()
    # With several ranks a signal never cuts an evaluation short (rank 0 alone evaluates,
    # and every rank must stop at the same point): it is acted on before the next update.
    at_once = signals.at_once if not ranks.many else contextlib.nullcontext

    def checkpoint() -> None:
        if not weights_finite(model):  # never replace a good checkpoint with a bad one
            raise Diverged(f"update {update}: the weights are not finite")
        mine = {
            "rng": {
                "numpy": rng.bit_generator.state,
                "torch": torch.get_rng_state(),
                "shuffle": shuffle_gen.get_state(),
            },
            "collector": collector.state_dict(),
        }
        parts = ranks.gather(mine)  # every rank's games and random state, on rank 0
        if not main:
            return
        extra = {"world_size": ranks.world_size, "ranks": parts[1:]} if ranks.many else {}
        save_checkpoint(
            run.latest,
            {
                "policy": policy_dict(
                    model, {"config": asdict(cfg), "update": update}, game=game_of(cfg)
                ),
                "optimizer": optimizer.state_dict(),
                "config": asdict(cfg),
                "update": update,
                "env_steps": env_steps,
                "wall": time.perf_counter() - start,
                "history": json.dumps(history),
                "pool": pool,
                "best_score": best["score"],
                "best_weights": best["weights"],
                "best_update": best["update"],
                "owes_eval": owes_eval,
                **mine,
                **extra,
            },
        )
        run.sync()

    def periodic_eval() -> None:
        """Greedy policy vs the baselines (rank 0); a stop signal interrupts it at once
        when there is one rank."""
        if not main:
            return
        t0 = time.perf_counter()
        with at_once():
            res = evaluate_against(
                model, cfg, cfg.eval_opponents, cfg.eval_hands, seed=PERIODIC_EVAL_SEED
            )
        entry = {
            "update": update,
            "env_steps": env_steps,
            "wall": time.perf_counter() - start,
            "eval": {
                k: {x: v[x] for x in ("margin", "lo", "hi", "hand_win")} for k, v in res.items()
            },
        }
        history.append(entry)
        score = float(np.mean([v["margin"] for v in res.values()]))
        if score > best["score"]:
            best.update(
                score=score,
                update=update,
                weights={k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
            )
        msg = "  ".join(
            f"{k} {v['margin']:+.2f}[{v['lo']:+.2f},{v['hi']:+.2f}]" for k, v in res.items()
        )
        say(bar, f"update {update} steps {env_steps:,} eval: {msg}")
        if writer is not None:
            for k, v in res.items():
                writer.add_scalar(f"eval/margin_{k}", v["margin"], env_steps)
                writer.add_scalar(f"eval/hand_win_{k}", v["hand_win"], env_steps)
        if bar is not None:
            bar.set_postfix({k: f"{v['margin']:+.2f}" for k, v in res.items()})
        timings["time_eval"] += time.perf_counter() - t0

    timings = {"time_eval": 0.0}
    finishing = False
    try:
        with signals:
            try:
                if owes_eval:
                    periodic_eval()
                    owes_eval = False
                while update < total_updates:
                    elapsed = time.perf_counter() - start
                    late = bool(cfg.time_limit_min and elapsed > cfg.time_limit_min * 60)
                    stop, late = ranks.flags(bool(signals.requested), late, what="a stop check")
                    if stop:  # SIGINT/SIGTERM during the last update, on any rank
                        raise StopRequested(signals.requested or "a signal to another rank")
                    if late:
                        if main:
                            limit = cfg.time_limit_min
                            say(bar, f"time limit of {limit} min reached at update {update}")
                        break
                    if cfg.anneal_lr:
                        for group in optimizer.param_groups:
                            group["lr"] = cfg.lr * (1.0 - update / total_updates)
                    if pool:
                        snap_model.load_state_dict(pool[int(rng.integers(len(pool)))])
                        collector.snapshot = snap_model
                    try:
                        coef = teacher_weight(cfg, env_steps)
                        collector.teaching = coef > 0
                        t0 = time.perf_counter()
                        failure = None
                        try:
                            batch = collector.collect()
                        except Diverged as exc:
                            failure = exc
                        ranks.agree(failure)  # a rollout that failed on any rank stops all
                        t1 = time.perf_counter()
                        model.train()
                        stats = ppo_update(
                            model,
                            optimizer,
                            batch,
                            cfg,
                            device,
                            shuffle_gen,
                            teacher_coef=coef,
                            ranks=ranks,
                            minibatch_size=local_minibatch,
                        )
                        stats["time_rollout"] = t1 - t0
                        stats["time_update"] = time.perf_counter() - t1
                        if coef > 0:
                            stats["teacher_coef"] = coef
                        if not weights_finite(model):
                            raise Diverged("the weights are not finite after the update")
                    except Diverged as exc:
                        kept = (
                            f"the last good checkpoint ({run.latest}) is kept"
                            if run is not None and run.latest.exists()
                            else "no checkpoint had been written yet"
                        )
                        raise Diverged(
                            f"update {update + 1}: {exc}; training stopped, {kept} (lower lr "
                            f"or max_grad_norm)"
                        ) from None
                    model.eval()
                    update += 1
                    env_steps += steps_per_update
                    ranks.check_replicas(model, update)
                    if bar is not None:
                        bar.update(steps_per_update)
                    if update % cfg.snapshot_every == 0:
                        pool.append(
                            {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
                        )
                        pool = pool[-cfg.pool_size :]
                    decisions, hands, points = ranks.total(
                        [len(batch.actions), batch.hands, batch.reward_sum]
                    )
                    record = {
                        "update": update,
                        "env_steps": env_steps,
                        "world_size": ranks.world_size,
                        "wall": time.perf_counter() - start,
                        "decisions": int(decisions),
                        "points_per_hand": points / max(hands, 1),
                        **stats,
                        **timings,
                    }
                    timings["time_eval"] = 0.0
                    if nashconv is not None and (
                        update % cfg.nashconv_every == 0 or update == total_updates
                    ):
                        record["nash_conv"] = nashconv(model)
                    if main:
                        run.append_log(record)
                    if writer is not None:
                        for k, v in record.items():
                            if k not in ("update", "env_steps"):
                                writer.add_scalar(f"train/{k}", v, env_steps)
                    if update % cfg.eval_every == 0 or update == total_updates:
                        owes_eval = True
                        periodic_eval()
                        owes_eval = False
                    if update % cfg.checkpoint_every == 0 or update == total_updates:
                        checkpoint()
                if not history or history[-1]["update"] != update:
                    owes_eval = True
                    periodic_eval()
                    owes_eval = False
                checkpoint()
                if not main:  # every rank ends together, once rank 0 has its final files
                    ranks.flags(0.0, what="rank 0's final evaluation")
                    return {}
                if bar is not None:
                    bar.close()
                    bar = None
                finishing = True  # the other ranks wait for the end: no checkpoint from here on
                with signals.at_once():
                    wall = time.perf_counter() - start
                    summary = finish(cfg, model, best, history, run.path, wall, run.shown)
                    run.sync()
                ranks.flags(0.0, what="the end of the run")
                return summary
            except StopRequested as stop:
                if bar is not None:
                    bar.close()
                    bar = None
                if not (finishing and ranks.many):  # that checkpoint was written already
                    checkpoint()
                raise Interrupted(str(stop), update, run.latest if main else None) from None
    finally:
        if bar is not None:
            bar.close()
        if writer is not None:
            writer.close()
