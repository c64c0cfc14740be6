"""Self-play PPO for Block dominoes on the batched engine (``algo: ppo``, the default of
``python train.py``), readable top to bottom (CleanRL style).

A run's settings are resolved once into a frozen ``RunSpec``; the loop (``train_loop``) then
reads, update after update: collect → update → log/evaluate → checkpoint.

1. Collect (``block_env.training.rollout``): B batched games, one hand per episode; in each
   the learner plays its seat(s) against an opponent drawn for that hand (the policy itself,
   a past snapshot, or a baseline bot), the learning seat rotating hand after hand; the
   learner's decisions are recorded with the hand's zero-sum points as reward and GAE
   advantages within each hand.
2. Update (``ppo_update``): PPO with masked logits (``torch.finfo(dtype).min`` on illegal
   actions) on the actor-critic of ``agents.policy``. The critic also sees the other seats'
   hands (``privileged_critic``, training only: the actor, which is all a player uses, sees
   the observation alone), which cuts the variance of the advantages. During the first
   ``teacher_steps`` steps the loss also holds the cross-entropy of a teacher bot's move on
   each decision (kickstarting; ``teacher: auto`` is the rule bot), with a weight falling
   linearly to 0. With ``belief_coef`` > 0 it also holds the belief head's binary
   cross-entropy against the other seats' hands (``agents.network.NetConfig.belief_head``):
   an auxiliary target for the actor's features.
3. Log and evaluate: one record per update in ``log.jsonl`` (and TensorBoard); every
   ``eval_every`` updates the greedy policy plays the baselines on duplicate deals (the deals,
   seatings and statistics of ``block_env.evaluate``, all games at once on the batched engine:
   ``block_env.evaluation.batched``). ``Callback`` objects passed to ``train_ppo`` see every
   record and evaluation (``block_env.training.probes`` holds the NashConv probe).
4. Checkpoint every ``checkpoint_every`` updates (``--resume``). At the end: ``policy.pt``
   (the best evaluated policy when ``keep_best``), the final evaluation table
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
import copy
import json
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
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
from block_env.training.errors import BadCheckpoint, Diverged, Interrupted, TrainError
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

# ============================================================================ the run's settings


@dataclass(frozen=True)
class RunSpec:
    """One rank's run, resolved once from its config before anything runs: the training loop
    reads these settings and nothing else. ``config`` is a copy of the validated config,
    handed whole to the parts that read it (rollouts, PPO update, evaluations, files)."""

    config: TrainConfig
    device: str
    seed: int  # this rank's games and random streams (the config's seed on rank 0)
    num_envs: int  # this rank's share of the games
    minibatch_size: int  # this rank's share of each minibatch
    steps_per_update: int  # environment steps of one update, all ranks together
    total_updates: int
    lr: float
    anneal_lr: bool
    teacher_coef: float  # 0 without a teacher
    teacher_steps: int
    time_limit_min: float  # 0: no time limit
    snapshot_every: int
    pool_size: int
    eval_every: int
    eval_opponents: tuple[str, ...]
    eval_hands: int
    checkpoint_every: int

    @classmethod
    def of(cls, cfg: TrainConfig, device: str, ranks: Ranks) -> RunSpec:
        """The settings of ``ranks``' rank; the same ConfigError on every rank when
        ``num_envs`` or ``minibatch_size`` does not split across them."""
        num_envs, minibatch_size = split_across(cfg, ranks.world_size)
        steps_per_update = cfg.num_envs * cfg.rollout_steps
        return cls(
            config=copy.deepcopy(cfg),
            device=device,
            seed=rank_seed(cfg.seed, ranks.rank),
            num_envs=num_envs,
            minibatch_size=minibatch_size,
            steps_per_update=steps_per_update,
            total_updates=max(1, math.ceil(cfg.total_steps / steps_per_update)),
            lr=cfg.lr,
            anneal_lr=cfg.anneal_lr,
            teacher_coef=0.0 if teacher_of(cfg) == "none" else cfg.teacher_coef,
            teacher_steps=cfg.teacher_steps,
            time_limit_min=cfg.time_limit_min,
            snapshot_every=cfg.snapshot_every,
            pool_size=cfg.pool_size,
            eval_every=cfg.eval_every,
            eval_opponents=tuple(cfg.eval_opponents),
            eval_hands=cfg.eval_hands,
            checkpoint_every=cfg.checkpoint_every,
        )

    def due(self, update: int, every: int) -> bool:
        """Whether a task done every ``every`` updates is due after ``update`` (always
        after the last one)."""
        return update % every == 0 or update == self.total_updates

    def teacher_weight(self, env_steps: int) -> float:
        """``teacher_weight`` of the run at ``env_steps``."""
        return _falling(self.teacher_coef, self.teacher_steps, env_steps)


def teacher_weight(cfg: TrainConfig, env_steps: int) -> float:
    """Weight of the teacher's cross-entropy at ``env_steps``: ``teacher_coef`` falling
    linearly to 0 at ``teacher_steps`` (0 without a teacher)."""
    if teacher_of(cfg) == "none":
        return 0.0
    return _falling(cfg.teacher_coef, cfg.teacher_steps, env_steps)


def _falling(coef: float, steps: int, env_steps: int) -> float:
    """``coef`` falling linearly to 0 at ``steps``, then 0."""
    return coef * max(0.0, 1.0 - env_steps / steps)


# ============================================================================ callbacks


class Callback:
    """A hook into the training loop, called on rank 0 only; each method does nothing
    unless overridden. ``train_ppo(cfg, callbacks=[...])`` runs them; ``python train.py``
    attaches those its config asks for (``block_env.training.probes.callbacks_of``)."""

    def on_start(self, spec: RunSpec, model: ActorCritic) -> None:
        """Once, before the first update (of the run, or of a resumed run)."""

    def on_update(self, spec: RunSpec, model: ActorCritic, record: dict[str, Any]) -> None:
        """After each update, with its log record (update, env_steps, losses, timings)
        before it is written: entries added to ``record`` are logged with it."""

    def on_evaluation(self, spec: RunSpec, model: ActorCritic, entry: dict[str, Any]) -> None:
        """After each periodic evaluation, with its entry of the run's history (update,
        env_steps, wall, and per opponent its margin, lo, hi and hand_win)."""


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
    data = _tensors(batch, device, teaching=teacher_coef > 0)
    stats: dict[str, list[float]] = {k: [] for k in ("pg", "vf", "ent", "kl", "clipfrac")}
    if teacher_coef > 0:
        stats["teacher_ce"] = []
    if cfg.belief_coef > 0:
        stats["belief_bce"] = []
    times = dict.fromkeys(("time_forward", "time_backward", "time_allreduce", "time_step"), 0.0)
    step = _Step(model, optimizer, list(model.parameters()), cfg, teacher_coef, ranks, times)
    mb = min(cfg.minibatch_size if minibatch_size is None else minibatch_size, n_min)
    for _ in range(cfg.epochs):
        perm = torch.randperm(N, generator=generator).to(device)
        kls = [
            step(data, perm[start : start + mb], stats) for start in range(0, n_min - mb + 1, mb)
        ]
        if cfg.target_kl and ranks.mean([float(np.mean(kls))])[0] > cfg.target_kl:
            break
    return _update_summary(stats, times, batch, ranks)


def _tensors(batch: Batch, device: Any, teaching: bool) -> dict[str, torch.Tensor]:
    """The batch's arrays as tensors on ``device`` (the teacher's moves when ``teaching``)."""
    names = {"obs": "obs", "priv": "priv", "mask": "mask", "act": "actions", "logp": "logp"}
    names.update(adv="advantages", ret="returns", **({"teacher": "teacher"} if teaching else {}))
    return {k: torch.from_numpy(getattr(batch, v)).to(device) for k, v in names.items()}


@dataclass
class _Step:
    """One minibatch's gradient step of ``ppo_update`` (loss, backward, averaging across
    ranks, clipping, optimizer step), timed into ``times``."""

    model: Any
    optimizer: Any
    params: list[torch.nn.Parameter]
    cfg: TrainConfig
    teacher_coef: float
    ranks: Ranks
    times: dict[str, float]

    def __call__(self, data: dict[str, torch.Tensor], i: torch.Tensor, stats: dict) -> float:
        """Step on the rows ``i``; appends the minibatch's figures to ``stats``, returns its
        KL divergence."""
        clock = time.perf_counter
        t0 = clock()
        loss, parts = _loss(self.model, data, i, self.cfg, self.teacher_coef)
        bad = _nonfinite(loss, parts, self.ranks)
        t1 = clock()
        self.optimizer.zero_grad()
        if bad is None:
            loss.backward()
        t2 = clock()
        if self.ranks.average_gradients(self.params, failed=bad is not None):
            self.ranks.agree(bad)  # raises on every rank, with the failing rank's message
        t3 = clock()
        norm = torch.nn.utils.clip_grad_norm_(self.params, self.cfg.max_grad_norm)
        if not torch.isfinite(norm):
            raise Diverged(f"the gradient norm is {norm.item()}")
        self.optimizer.step()
        t4 = clock()
        for key, span in zip(self.times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            self.times[key] += span
        return _minibatch_figures(parts, data["logp"][i], self.cfg.clip, stats)


def _loss(
    model: Any,
    data: dict[str, torch.Tensor],
    i: torch.Tensor,
    cfg: TrainConfig,
    teacher_coef: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The PPO loss of the rows ``i`` (clipped policy gradient, value error, entropy bonus,
    and the teacher's cross-entropy and the belief head's loss when on) and its parts."""
    priv = data["priv"][i] if model.net.privileged_critic else None
    believing = cfg.belief_coef > 0
    if believing:
        logits, value, belief = model.forward_beliefs(data["obs"][i], priv)
    else:
        logits, value = model(data["obs"][i], priv)
    logp_all, entropy = log_softmax_entropy(mask_logits(logits, data["mask"][i]))
    new = logp_all.gather(1, data["act"][i][:, None]).squeeze(1)
    ratio = (new - data["logp"][i]).exp()
    adv = data["adv"][i]
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    pg = torch.max(-adv * ratio, -adv * ratio.clamp(1 - cfg.clip, 1 + cfg.clip)).mean()
    vf = 0.5 * ((value - data["ret"][i]) ** 2).mean()
    ent = entropy.mean()
    loss = pg - cfg.ent_coef * ent + cfg.vf_coef * vf
    parts = {"pg": pg, "vf": vf, "ent": ent, "new": new, "ratio": ratio}
    if teacher_coef > 0:
        parts["teacher_ce"] = -logp_all.gather(1, data["teacher"][i][:, None]).mean()
        loss = loss + teacher_coef * parts["teacher_ce"]
    if believing:
        parts["belief_bce"] = binary_cross_entropy_with_logits(belief, data["priv"][i])
        loss = loss + cfg.belief_coef * parts["belief_bce"]
    return loss, parts


def _nonfinite(loss: torch.Tensor, parts: dict[str, torch.Tensor], ranks: Ranks) -> Any:
    """None for a finite loss; else the Diverged to report, raised at once on one rank (on
    several, every rank learns of it when the gradients are averaged)."""
    if torch.isfinite(loss):
        return None
    bad = Diverged(
        f"the PPO loss is {loss.item()} (pg {parts['pg'].item()}, vf {parts['vf'].item()}, "
        f"entropy {parts['ent'].item()})"
    )
    if not ranks.many:
        raise bad
    return bad


def _minibatch_figures(
    parts: dict[str, torch.Tensor], old_logp: torch.Tensor, clip: float, stats: dict
) -> float:
    """Appends the minibatch's losses, KL and clip fraction to ``stats``; returns the KL."""
    with torch.no_grad():
        ratio = parts["ratio"]
        kl = ((ratio - 1) - (parts["new"] - old_logp)).mean().item()
        clipfrac = ((ratio - 1).abs() > clip).float().mean().item()
    for key in ("teacher_ce", "belief_bce"):
        if key in parts:
            stats[key].append(parts[key].item())
    for k, v in (
        ("pg", parts["pg"].item()),
        ("vf", parts["vf"].item()),
        ("ent", parts["ent"].item()),
        ("kl", kl),
        ("clipfrac", clipfrac),
    ):
        stats[k].append(v)
    return kl


def _update_summary(
    stats: dict[str, list[float]], times: dict[str, float], batch: Batch, ranks: Ranks
) -> dict[str, float]:
    """The update's mean figures over its minibatches (and over the ranks), the critic's
    explained variance, and the time spent per phase."""
    out = {k: float(np.mean(v)) for k, v in stats.items() if v}
    var = float(np.var(batch.returns))
    out["explained_var"] = (
        float(1 - np.var(batch.returns - batch.values) / var) if var > 0 else float("nan")
    )
    out = dict(zip(out, ranks.mean(list(out.values()))))
    return {**out, **times}


# ============================================================================ the run


def train_ppo(
    cfg: TrainConfig,
    resume: str | bool | None = None,
    force: bool = False,
    ranks: Ranks | None = None,
    opened: tuple[RunFolder, dict | None, Any] | None = None,
    callbacks: Sequence[Callback] = (),
) -> dict:
    """Self-play PPO as configured; returns the final evaluation (also written to disk).
    ``resume``: True for the run folder's latest checkpoint, or a checkpoint path.
    ``ranks``: this process's place in a data-parallel run (``distributed.Ranks``; one
    process by default): ``num_envs`` and ``minibatch_size`` are split across the ranks,
    rank 0 alone opens the run folder and returns the summary, the other ranks return an
    empty dict. ``opened``: rank 0's (run folder, checkpoint state, initial
    weights) when another process opened the run (``ray_train``'s driver).
    ``callbacks``: ``Callback`` hooks into the loop, called on rank 0."""
    ranks = ranks or Ranks.single()
    torch.set_num_threads(cfg.threads)
    device = resolve_device(cfg.device)
    if ranks.many and device == "cuda":
        device = f"cuda:{ranks.local_rank}"  # one GPU per rank of a node
    spec = RunSpec.of(cfg, device, ranks)
    run, state, init = _open(spec, ranks, resume, force, opened)
    try:
        return _train(spec, ranks, run, state, init, callbacks)
    finally:
        if run is not None:
            close_run(run)


def _open(
    spec: RunSpec,
    ranks: Ranks,
    resume: str | bool | None,
    force: bool,
    opened: tuple[RunFolder, dict | None, Any] | None,
) -> tuple[RunFolder | None, dict | None, Any]:
    """Rank 0 opens the run folder (or takes the one ``opened``), with the checkpoint to
    resume and the initial weights; every rank gets the same (state, initial weights), or
    raises the same error."""
    cfg = spec.config
    run, state, init, error = None, None, None, None
    if ranks.main:
        try:  # checked before the run folder is made; a resumed run has its own weights
            if opened is not None:
                run, state, init = opened
            else:
                if cfg.init_policy and not resume:
                    init = initial_weights(cfg, new_model(cfg, "cpu"))
                run, state = open_run(cfg, resume, force)
            _check_world_size(run, state, ranks)
        except TrainError as exc:
            error = exc
    ranks.agree(error)
    state, init = ranks.broadcast((state, init))
    return run, state, init


def _check_world_size(run: RunFolder, state: dict | None, ranks: Ranks) -> None:
    """BadCheckpoint (the run folder closed) when the checkpoint comes from another number
    of ranks."""
    saved_world = ranks.world_size if state is None else int(state.get("world_size", 1))
    if saved_world != ranks.world_size:
        close_run(run)
        raise BadCheckpoint(
            f"checkpoint {state['source']} was written by a run on {saved_world} "
            f"rank(s); resume it on {saved_world} (nproc={saved_world}, or torchrun "
            f"with {saved_world} processes in all), not {ranks.world_size}"
        )


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


def weights_finite(model: Any) -> bool:
    """Whether every parameter and buffer of ``model`` is finite."""
    return all(bool(torch.isfinite(t).all()) for t in model.state_dict().values())


def _cpu_copy(model: Any) -> dict[str, torch.Tensor]:
    """The weights of ``model``, copied to the CPU."""
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


@dataclass
class Learner:
    """One rank's networks, optimizer, games and random streams."""

    model: ActorCritic
    optimizer: torch.optim.Optimizer
    opponent: ActorCritic  # holds the snapshot opponent of the current update
    collector: Collector
    rng: np.random.Generator  # opponents, learner seats, snapshot draws
    shuffle: torch.Generator  # minibatch order


@dataclass
class Progress:
    """What the run has done so far (all of it goes into the checkpoint)."""

    update: int = 0
    env_steps: int = 0
    wall: float = 0.0  # training time before this process started (a resumed run)
    history: list[dict[str, Any]] = field(default_factory=list)  # the periodic evaluations
    pool: list[dict[str, Any]] = field(default_factory=list)  # past weights: the snapshots
    best: dict[str, Any] = field(
        default_factory=lambda: {"score": -math.inf, "weights": None, "update": 0}
    )
    owes_eval: bool = False  # a stop came during this update's periodic evaluation


@dataclass
class Training:
    """Everything one rank's training loop works on."""

    spec: RunSpec
    ranks: Ranks
    learner: Learner
    progress: Progress
    run: RunFolder | None  # rank 0's run folder
    callbacks: list[Callback]  # rank 0's; none on the other ranks
    signals: StopSignals
    start: float  # when the run started on ``time.perf_counter``'s clock (earlier time too)
    writer: Any = None  # TensorBoard
    bar: Any = None  # the progress bar
    time_eval: float = 0.0  # evaluation time since the last log record
    finishing: bool = False  # rank 0 writes the final files: no checkpoint from here on


def _learner(spec: RunSpec, ranks: Ranks, init: Any) -> Learner:
    """The networks (the same initial weights on every rank, or ``init``'s), the optimizer,
    this rank's games and its random streams."""
    cfg = spec.config
    torch.manual_seed(cfg.seed)  # the same initial weights on every rank
    rng = np.random.default_rng(spec.seed)
    model = new_model(cfg, spec.device)
    if init is not None:
        weights, with_critic = init
        model.load_state_dict(weights, strict=with_critic)
        if ranks.main:
            print(
                f"starting from {cfg.init_policy}: actor"
                + (" and critic" if with_critic else " (the critic starts fresh)"),
                flush=True,
            )
    # fused: one kernel for all parameters, about half the for-loop Adam's time per step
    optimizer = torch.optim.Adam(model.parameters(), lr=spec.lr, eps=1e-5, fused=True)
    opponent = new_model(cfg, spec.device)
    opponent.eval()
    collector = Collector(cfg, model, spec.device, rng, num_envs=spec.num_envs, seed=spec.seed)
    shuffle = torch.Generator().manual_seed(spec.seed + 1)  # minibatch order
    return Learner(model, optimizer, opponent, collector, rng, shuffle)


def _restore(learner: Learner, ranks: Ranks, state: dict[str, Any]) -> Progress:
    """Continue exactly where the checkpoint ``state`` was taken (see ``_checkpoint``)."""
    learner.model.load_state_dict(state["policy"]["weights"])
    learner.optimizer.load_state_dict(state["optimizer"])
    progress = Progress(
        update=state["update"],
        env_steps=state["env_steps"],
        wall=state["wall"],
        history=json.loads(state["history"]),
        pool=list(state["pool"]),
        best={
            "score": state["best_score"],
            "weights": state["best_weights"],
            "update": state["best_update"],
        },
    )
    try:
        mine = state if ranks.rank == 0 else state["ranks"][ranks.rank - 1]
        progress.owes_eval = bool(state["owes_eval"])
        learner.rng.bit_generator.state = mine["rng"]["numpy"]
        torch.set_rng_state(mine["rng"]["torch"])
        learner.shuffle.set_state(mine["rng"]["shuffle"])
        learner.collector.load_state_dict(mine["collector"])
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise BadCheckpoint(
            f"checkpoint {state['source']}: its saved training state does not fit this "
            f"version of block-env "
            f"({type(exc).__name__}: {exc})"
        ) from None
    return progress


def _train(
    spec: RunSpec,
    ranks: Ranks,
    run: RunFolder | None,
    state: dict | None,
    init: Any,
    callbacks: Sequence[Callback],
) -> dict:
    """Set up this rank's training, run the loop, and turn a stop signal into a checkpoint
    and ``Interrupted``."""
    learner = _learner(spec, ranks, init if state is None else None)
    if state is None:
        progress = Progress()
        learner.collector.reset(seed=spec.seed)
    else:
        progress = _restore(learner, ranks, state)
    ranks.check_replicas(learner.model, progress.update)
    t = Training(
        spec,
        ranks,
        learner,
        progress,
        run,
        list(callbacks) if ranks.main else [],
        StopSignals(),
        start=0.0,
    )
    for callback in t.callbacks:
        callback.on_start(spec, learner.model)
    _open_outputs(t, resumed=state is not None)
    try:
        with t.signals:
            try:
                return train_loop(t)
            except StopRequested as stop:
                _close_bar(t)
                if not (t.finishing and ranks.many):  # that checkpoint was written already
                    _checkpoint(t)
                latest = run.latest if ranks.main else None
                raise Interrupted(str(stop), progress.update, latest) from None
    finally:
        _close_bar(t)
        if t.writer is not None:
            t.writer.close()


def _open_outputs(t: Training, resumed: bool) -> None:
    """Rank 0's TensorBoard writer and progress bar; the run's clock starts."""
    p = t.progress
    if t.spec.config.tensorboard and t.ranks.main:  # a resumed run drops later events
        t.writer = tensorboard_of(t.run.path, purge_step=p.env_steps + 1 if resumed else None)
    t.bar = bar_of(t.spec.config, p.env_steps) if t.ranks.main else None
    t.start = time.perf_counter() - p.wall


# ============================================================================ the loop


def train_loop(t: Training) -> dict:
    """Update after update: collect → update → log/evaluate → checkpoint; then the final
    evaluation and files. Returns rank 0's summary (an empty dict on the other ranks)."""
    spec, p = t.spec, t.progress
    if p.owes_eval:  # a stop interrupted this evaluation: it comes first
        _evaluate(t)
    while p.update < spec.total_updates:
        if _time_is_up(t):
            break
        _prepare(t)
        with _divergence_ends_the_run(t):
            batch, rollout_s = _collect(t)
            stats = _update(t, batch, rollout_s)
        _advance(t)
        _log(t, batch, stats)
        if spec.due(p.update, spec.eval_every):
            _evaluate(t)
        if spec.due(p.update, spec.checkpoint_every):
            _checkpoint(t)
    if not p.history or p.history[-1]["update"] != p.update:
        _evaluate(t)
    _checkpoint(t)
    return _finish(t)


def _time_is_up(t: Training) -> bool:
    """StopRequested when SIGINT/SIGTERM reached any rank during the last update; True
    when ``time_limit_min`` has passed (on any rank: every rank stops together)."""
    limit = t.spec.time_limit_min
    late = bool(limit and time.perf_counter() - t.start > limit * 60)
    stop, late = t.ranks.flags(bool(t.signals.requested), late, what="a stop check")
    if stop:
        raise StopRequested(t.signals.requested or "a signal to another rank")
    if late and t.ranks.main:
        say(t.bar, f"time limit of {limit} min reached at update {t.progress.update}")
    return bool(late)


def _prepare(t: Training) -> None:
    """The update's learning rate (annealed linearly) and snapshot opponent (drawn from
    the pool of past weights)."""
    spec, learner, p = t.spec, t.learner, t.progress
    if spec.anneal_lr:
        for group in learner.optimizer.param_groups:
            group["lr"] = spec.lr * (1.0 - p.update / spec.total_updates)
    if p.pool:
        learner.opponent.load_state_dict(p.pool[int(learner.rng.integers(len(p.pool)))])
        learner.collector.snapshot = learner.opponent


@contextlib.contextmanager
def _divergence_ends_the_run(t: Training) -> Iterator[None]:
    """A Diverged inside ends the run with a message naming the update and what is kept."""
    try:
        yield
    except Diverged as exc:
        run = t.run
        kept = (
            f"the last good checkpoint ({run.latest}) is kept"
            if run is not None and run.latest.exists()
            else "no checkpoint had been written yet"
        )
        raise Diverged(
            f"update {t.progress.update + 1}: {exc}; training stopped, {kept} (lower lr "
            f"or max_grad_norm)"
        ) from None


def _collect(t: Training) -> tuple[Batch, float]:
    """One rollout of this rank's games (with the teacher's moves while it teaches); the
    batch and the seconds it took. A rollout that failed on any rank stops every rank."""
    t.learner.collector.teaching = t.spec.teacher_weight(t.progress.env_steps) > 0
    t0 = time.perf_counter()
    failure = None
    try:
        batch = t.learner.collector.collect()
    except Diverged as exc:
        failure = exc
    t.ranks.agree(failure)
    return batch, time.perf_counter() - t0


def _update(t: Training, batch: Batch, rollout_s: float) -> dict[str, float]:
    """PPO on the batch; the update's figures (losses, diagnostics, timings). Diverged when
    the weights come out non-finite."""
    spec, model = t.spec, t.learner.model
    coef = spec.teacher_weight(t.progress.env_steps)
    t1 = time.perf_counter()
    model.train()
    stats = ppo_update(
        model,
        t.learner.optimizer,
        batch,
        spec.config,
        spec.device,
        t.learner.shuffle,
        teacher_coef=coef,
        ranks=t.ranks,
        minibatch_size=spec.minibatch_size,
    )
    stats["time_rollout"] = rollout_s
    stats["time_update"] = time.perf_counter() - t1
    if coef > 0:
        stats["teacher_coef"] = coef
    if not weights_finite(model):
        raise Diverged("the weights are not finite after the update")
    return stats


def _advance(t: Training) -> None:
    """Count the update (and its steps), check the ranks agree, add a snapshot to the pool
    every ``snapshot_every`` updates."""
    spec, model, p = t.spec, t.learner.model, t.progress
    model.eval()
    p.update += 1
    p.env_steps += spec.steps_per_update
    t.ranks.check_replicas(model, p.update)
    if t.bar is not None:
        t.bar.update(spec.steps_per_update)
    if p.update % spec.snapshot_every == 0:
        p.pool.append(_cpu_copy(model))
        p.pool = p.pool[-spec.pool_size :]


def _log(t: Training, batch: Batch, stats: dict[str, float]) -> None:
    """The update's record (all ranks' decisions, hands and points) through the callbacks
    into ``log.jsonl`` and TensorBoard (rank 0)."""
    p = t.progress
    decisions, hands, points = t.ranks.total([len(batch.actions), batch.hands, batch.reward_sum])
    record = {
        "update": p.update,
        "env_steps": p.env_steps,
        "world_size": t.ranks.world_size,
        "wall": time.perf_counter() - t.start,
        "decisions": int(decisions),
        "points_per_hand": points / max(hands, 1),
        **stats,
        "time_eval": t.time_eval,
    }
    t.time_eval = 0.0
    for callback in t.callbacks:
        callback.on_update(t.spec, t.learner.model, record)
    if t.ranks.main:
        t.run.append_log(record)
    if t.writer is not None:
        for k, v in record.items():
            if k not in ("update", "env_steps"):
                t.writer.add_scalar(f"train/{k}", v, p.env_steps)


def _evaluate(t: Training) -> None:
    """The periodic evaluation (rank 0); the run owes it while it runs, so that a stop
    during it leaves it to the resumed run."""
    t.progress.owes_eval = True
    if t.ranks.main:
        _periodic_eval(t)
    t.progress.owes_eval = False


def _periodic_eval(t: Training) -> None:
    """Greedy policy vs the baselines into the history, the best policy so far kept; a
    stop signal interrupts it at once when there is one rank (with several, every rank
    must stop at the same point: the signal is acted on before the next update)."""
    spec, model, p = t.spec, t.learner.model, t.progress
    t0 = time.perf_counter()
    at_once = t.signals.at_once if not t.ranks.many else contextlib.nullcontext
    with at_once():
        res = evaluate_against(
            model,
            spec.config,
            list(spec.eval_opponents),
            spec.eval_hands,
            seed=PERIODIC_EVAL_SEED,
        )
    entry = {
        "update": p.update,
        "env_steps": p.env_steps,
        "wall": time.perf_counter() - t.start,
        "eval": {k: {x: v[x] for x in ("margin", "lo", "hi", "hand_win")} for k, v in res.items()},
    }
    p.history.append(entry)
    score = float(np.mean([v["margin"] for v in res.values()]))
    if score > p.best["score"]:
        p.best.update(score=score, update=p.update, weights=_cpu_copy(model))
    _show_evaluation(t, res)
    t.time_eval += time.perf_counter() - t0
    for callback in t.callbacks:
        callback.on_evaluation(spec, model, entry)


def _show_evaluation(t: Training, res: dict[str, dict[str, Any]]) -> None:
    """An evaluation's margins on the console, the progress bar and TensorBoard."""
    p = t.progress
    msg = "  ".join(
        f"{k} {v['margin']:+.2f}[{v['lo']:+.2f},{v['hi']:+.2f}]" for k, v in res.items()
    )
    say(t.bar, f"update {p.update} steps {p.env_steps:,} eval: {msg}")
    if t.writer is not None:
        for k, v in res.items():
            t.writer.add_scalar(f"eval/margin_{k}", v["margin"], p.env_steps)
            t.writer.add_scalar(f"eval/hand_win_{k}", v["hand_win"], p.env_steps)
    if t.bar is not None:
        t.bar.set_postfix({k: f"{v['margin']:+.2f}" for k, v in res.items()})


def _checkpoint(t: Training) -> None:
    """The run folder's latest checkpoint (rank 0 writes it): the weights, optimizer and
    progress, and every rank's games and random streams. Diverged instead of replacing a
    good checkpoint with non-finite weights."""
    learner, p = t.learner, t.progress
    if not weights_finite(learner.model):
        raise Diverged(f"update {p.update}: the weights are not finite")
    mine = {
        "rng": {
            "numpy": learner.rng.bit_generator.state,
            "torch": torch.get_rng_state(),
            "shuffle": learner.shuffle.get_state(),
        },
        "collector": learner.collector.state_dict(),
    }
    parts = t.ranks.gather(mine)  # every rank's games and random state, on rank 0
    if not t.ranks.main:
        return
    extra = {"world_size": t.ranks.world_size, "ranks": parts[1:]} if t.ranks.many else {}
    save_checkpoint(t.run.latest, {**_checkpoint_state(t), **mine, **extra})
    t.run.sync()


def _checkpoint_state(t: Training) -> dict[str, Any]:
    """Rank 0's part of a checkpoint: policy, optimizer, config and progress."""
    cfg, p = t.spec.config, t.progress
    meta = {"config": asdict(cfg), "update": p.update}
    return {
        "policy": policy_dict(t.learner.model, meta, game=game_of(cfg)),
        "optimizer": t.learner.optimizer.state_dict(),
        "config": asdict(cfg),
        "update": p.update,
        "env_steps": p.env_steps,
        "wall": time.perf_counter() - t.start,
        "history": json.dumps(p.history),
        "pool": p.pool,
        "best_score": p.best["score"],
        "best_weights": p.best["weights"],
        "best_update": p.best["update"],
        "owes_eval": p.owes_eval,
    }


def _finish(t: Training) -> dict:
    """Rank 0 writes the final policy, evaluation and curve (``results.finish``) and
    returns its summary; every rank ends together."""
    if not t.ranks.main:  # every rank ends together, once rank 0 has its final files
        t.ranks.flags(0.0, what="rank 0's final evaluation")
        return {}
    _close_bar(t)
    t.finishing = True  # the other ranks wait for the end: no checkpoint from here on
    p, run = t.progress, t.run
    with t.signals.at_once():
        wall = time.perf_counter() - t.start
        summary = finish(
            t.spec.config, t.learner.model, p.best, p.history, run.path, wall, run.shown
        )
        run.sync()
    t.ranks.flags(0.0, what="the end of the run")
    return summary


def _close_bar(t: Training) -> None:
    if t.bar is not None:
        t.bar.close()
        t.bar = None
