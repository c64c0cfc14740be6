"""PPO compiled end to end on ``block_env.jax`` (flax network, optax optimiser).

One update, all inside ``jax.jit``: ``rollout_steps`` steps of ``num_envs`` two-player games
(``jax.vmap`` of ``BlockEnv.step_autoreset`` under ``jax.lax.scan``), per-seat GAE, then
``epochs`` passes of minibatch updates. ``make_train`` compiles a whole run as one function;
``train`` runs it, or, under a wall-clock budget, the same updates in compiled chunks.

The recipe of the native trainer (``configs/2p.yaml``), inside the compiled program:

- Opponents. Each game draws, for each episode, an opponent kind from ``opponents``
  ("self": both seats are the learner; "snapshot": a past copy of the policy, drawn from a
  pool per update; "random", "greedy", "rules": the baseline bots of
  ``block_env.jax.rule_bot``) and a learner seat. Only the learner's moves are trained.
- Per-seat GAE. Each learner seat's decisions form their own sequence: a decision's next
  value is that seat's next decision's value, and the rewards that reach the seat in between
  (whoever moved) are its reward. A seat's last decision in a rollout whose episode goes on
  is not trained; it only bootstraps the decisions before it.
- Kickstarting. The loss adds ``teacher_coef`` times the cross-entropy of the rule bot's move
  at each learner decision, the weight falling linearly to 0 at ``teacher_steps``
  agent-steps.
- ``skip_forced``: moves with one legal action are played but not trained on.
- ``privileged_critic``: the critic also reads the other seat's hand and the opponent kind
  (training only; playing needs the actor alone, which reads the observation).
- The update trains on a ``train_share`` of the rollout's rows: the learner's decisions first
  (a random subset when there are more), any rows left over weighted 0.
- Every ``eval_every`` updates, the greedy policy plays the rule bot on ``eval_deals`` fixed
  deals, each twice with the seats swapped; the learner's mean reward per game (points per
  hand for ``episode="hand"``) and its standard error are in the metrics.

``save_policy`` / ``load_policy`` write and read a policy file without pickle: msgpack
(``flax.serialization``) holding the parameters and a JSON header with the game and the
network. ``block_env.jax.agent.load_agent`` plays such a file as an agent.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import serialization

from block_env.config import BlockConfig
from block_env.jax.env import BlockEnv, make
from block_env.jax.rule_bot import greedy_bot, rule_bot
from block_env.observation import obs_layout

FORMAT = "block-env-jax-ppo-v1"  # the policy file's format tag
MASKED = -1e9  # the logit of an illegal action
KINDS = ("self", "snapshot", "random", "greedy", "rules")  # opponent kinds, in id order
SELF, SNAPSHOT, RANDOM, GREEDY, RULES = range(len(KINDS))
EVAL_SEED = 20_240_607  # the in-run evaluation's deals

__all__ = [
    "FORMAT",
    "KINDS",
    "ActorCritic",
    "PPOConfig",
    "eval_keys",
    "evaluate",
    "gae",
    "init_params",
    "load_policy",
    "make_train",
    "network",
    "ppo_loss",
    "save_policy",
    "train",
]


def _recipe_opponents() -> dict[str, float]:
    return {"self": 0.3, "snapshot": 0.3, "random": 0.1, "greedy": 0.15, "rules": 0.15}


@dataclass(frozen=True)
class PPOConfig:
    """A training run: the game (``raw_env``'s keywords), the network and PPO's settings.

    One update plays ``num_envs × rollout_steps`` agent-steps, then makes ``epochs`` passes
    of ``num_minibatches`` minibatches over ``train_share`` of them. The defaults are the
    native trainer's recipe for two players (see the module docstring)."""

    game: dict[str, Any] = field(
        default_factory=lambda: {"num_players": 2, "episode": "hand", "opener": "rotate"}
    )
    hidden: tuple[int, ...] = (256, 256)
    num_envs: int = 1024
    rollout_steps: int = 32
    num_updates: int = 1000
    epochs: int = 4
    num_minibatches: int = 4
    train_share: float = 0.5
    lr: float = 1e-3
    anneal_lr: bool = True
    gamma: float = 1.0
    gae_lambda: float = 0.95
    clip: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    reward_scale: float = 0.05
    teacher_coef: float = 1.0
    teacher_steps: int = 3_000_000
    opponents: dict[str, float] = field(default_factory=_recipe_opponents)
    snapshot_every: int = 10
    pool_size: int = 20
    skip_forced: bool = True
    privileged_critic: bool = True
    eval_every: int = 25
    eval_deals: int = 1024
    seed: int = 0

    def __post_init__(self) -> None:
        cfg = BlockConfig(**self.game)  # ValueError for a bad game, as raw_env's
        if cfg.num_players != 2 or cfg.reward != "zero_sum":
            raise ValueError(
                f"PPO here is for two players with reward='zero_sum', got "
                f"num_players={cfg.num_players}, reward={cfg.reward!r}"
            )
        ints = ("num_envs", "rollout_steps", "num_updates", "epochs", "num_minibatches")
        ints += ("snapshot_every", "pool_size", "eval_deals")
        for name in ints:
            _check_int(name, getattr(self, name), 1)
        for name in ("teacher_steps", "eval_every", "seed"):
            _check_int(name, getattr(self, name), 0)
        for name in ("teacher_coef", "ent_coef", "vf_coef", "reward_scale", "lr"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name}={getattr(self, name)!r} is not allowed: use a float >= 0")
        if not 0 < self.train_share <= 1:
            raise ValueError(f"train_share={self.train_share!r} is not allowed: use 0 < x <= 1")
        if self.train_rows < self.num_minibatches:
            raise ValueError(
                f"num_minibatches={self.num_minibatches} must divide train_share × num_envs × "
                f"rollout_steps = {self.train_share * self.steps_per_update:g} rows"
            )
        if not self.hidden or any(int(h) < 1 for h in self.hidden):
            raise ValueError(f"hidden={self.hidden!r} is not allowed: use positive ints")
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))
        object.__setattr__(self, "opponents", _check_opponents(self.opponents))

    @property
    def steps_per_update(self) -> int:
        """Agent-steps played per update."""
        return self.num_envs * self.rollout_steps

    @property
    def train_rows(self) -> int:
        """Rows of each update's training set (a multiple of ``num_minibatches``)."""
        rows = int(self.train_share * self.steps_per_update)
        return rows - rows % self.num_minibatches

    def env(self) -> BlockEnv:
        """The training environment."""
        return make(**self.game)


def _check_int(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name}={value!r} is not allowed: use an int >= {low}")


def _check_opponents(opponents: Mapping[str, float]) -> dict[str, float]:
    """The opponent shares as a dict over ``KINDS`` summing to 1."""
    unknown = sorted(set(opponents) - set(KINDS))
    if unknown:
        raise ValueError(f"opponents: unknown kinds {unknown}; use {', '.join(KINDS)}")
    shares = {k: float(opponents.get(k, 0.0)) for k in KINDS}
    total = sum(shares.values())
    if any(not s >= 0 for s in shares.values()) or not total > 0:
        raise ValueError(f"opponents={dict(opponents)!r}: shares must be >= 0 with a positive sum")
    return {k: s / total for k, s in shares.items()}


# ---- the network ------------------------------------------------------------------------


class ActorCritic(nn.Module):
    """Two MLPs: masked action logits from the observation, and the mover's value from the
    observation and, with ``extra`` > 0, ``extra`` critic-only inputs (zeros when none are
    given). ``in_scale`` multiplies the observation first (counts to about [0, 1], scores
    and target to 0)."""

    num_actions: int
    hidden: Sequence[int] = (256, 256)
    in_scale: tuple[float, ...] | None = None
    extra: int = 0

    @nn.compact
    def __call__(
        self,
        obs: jax.Array,
        mask: jax.Array,
        extra: jax.Array | None = None,
        critic: bool = True,
    ) -> tuple[jax.Array, jax.Array | None]:
        if self.in_scale is not None:
            obs = obs * jnp.asarray(self.in_scale, jnp.float32)
        hidden_init = nn.initializers.orthogonal(jnp.sqrt(2.0))
        actor = obs
        for i, width in enumerate(self.hidden):
            actor = nn.relu(nn.Dense(width, kernel_init=hidden_init, name=f"actor_{i}")(actor))
        out_init = nn.initializers.orthogonal(0.01)  # near-uniform first policy
        logits = nn.Dense(self.num_actions, kernel_init=out_init, name="actor_out")(actor)
        logits = jnp.where(mask, logits, MASKED)
        if not critic:
            return logits, None
        value_in = obs
        if self.extra:
            if extra is None:
                extra = jnp.zeros(obs.shape[:-1] + (self.extra,), obs.dtype)
            value_in = jnp.concatenate([obs, extra], axis=-1)
        for i, width in enumerate(self.hidden):
            value_in = nn.relu(
                nn.Dense(width, kernel_init=hidden_init, name=f"critic_{i}")(value_in)
            )
        value_init = nn.initializers.orthogonal(1.0)
        value = nn.Dense(1, kernel_init=value_init, name="critic_out")(value_in)[..., 0]
        return logits, value


def _in_scale(game: Mapping[str, Any]) -> tuple[float, ...]:
    """1 / the observation's scale, 0 on the scores and the target."""
    lay = obs_layout(BlockConfig(**game))
    scale = 1.0 / lay.scale.astype(np.float64)
    scale[lay.fields["scores"]] = 0.0
    scale[lay.fields["target"]] = 0.0
    return tuple(float(s) for s in scale)


def _extra_dim(config: PPOConfig, env: BlockEnv) -> int:
    """Critic-only inputs: the other seat's tiles and the opponent kind (one-hot)."""
    return env.spec.num_tiles + len(KINDS) if config.privileged_critic else 0


def network(config: PPOConfig) -> ActorCritic:
    """The actor-critic a run of ``config`` trains."""
    env = config.env()
    return ActorCritic(
        num_actions=env.num_actions,
        hidden=config.hidden,
        in_scale=_in_scale(config.game),
        extra=_extra_dim(config, env),
    )


def init_params(config: PPOConfig, key: jax.Array) -> Any:
    """The network's initial parameters, from ``key``."""
    return _init(network(config), config.env(), key)


def _init(net: ActorCritic, env: BlockEnv, key: jax.Array) -> Any:
    """``net``'s parameters for ``env``'s observations, from ``key``."""
    obs = jnp.zeros((1,) + env.observation_shape)
    mask = jnp.ones((1, env.num_actions), bool)
    extra = jnp.zeros((1, net.extra)) if net.extra else None
    return net.init(key, obs, mask, extra)


# ---- the loss and the advantages ---------------------------------------------------------


def _weighted_mean(x: jax.Array, w: jax.Array) -> jax.Array:
    return jnp.sum(x * w) / jnp.maximum(jnp.sum(w), 1.0)


def ppo_loss(
    net: ActorCritic, params: Any, batch: dict[str, jax.Array], config: PPOConfig, teacher: Any
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The loss of a minibatch and its parts. Rows weigh by ``batch["weight"]`` (1: a
    decision with an advantage; 0: an opponent's move, a forced move, filler) in the clipped
    policy gradient and the value error, and by ``batch["decision"]`` (every learner
    decision) in the entropy bonus and ``teacher`` times the cross-entropy of
    ``batch["teacher"]``, the rule bot's move. Advantages are normalised over the weighted
    rows."""
    logits, value = net.apply(params, batch["obs"], batch["mask"], batch.get("extra"))
    logp_all = jax.nn.log_softmax(logits, axis=-1)
    w, dec = batch["weight"], batch["decision"]
    logp = jnp.take_along_axis(logp_all, batch["action"][:, None], axis=-1)[:, 0]
    log_ratio = jnp.where(w > 0, logp - batch["logp"], 0.0)
    ratio = jnp.exp(log_ratio)
    adv = batch["adv"]
    mean = _weighted_mean(adv, w)
    std = jnp.sqrt(_weighted_mean(jnp.square(adv - mean), w))
    adv = (adv - mean) / (std + 1e-8)
    clipped = jnp.clip(ratio, 1.0 - config.clip, 1.0 + config.clip)
    pg_loss = -_weighted_mean(jnp.minimum(ratio * adv, clipped * adv), w)
    v_loss = 0.5 * _weighted_mean(jnp.square(value - batch["target"]), w)
    probs = jnp.exp(logp_all)
    entropy = -jnp.sum(jnp.where(batch["mask"], probs * logp_all, 0.0), axis=-1)
    ent = _weighted_mean(entropy, dec)
    target = jnp.take_along_axis(logp_all, batch["teacher"][:, None], axis=-1)[:, 0]
    teacher_ce = -_weighted_mean(target, dec)
    loss = pg_loss + config.vf_coef * v_loss - config.ent_coef * ent + teacher * teacher_ce
    stats = {
        "pg_loss": pg_loss,
        "v_loss": v_loss,
        "entropy": ent,
        "teacher_ce": teacher_ce,
        "approx_kl": _weighted_mean((ratio - 1.0) - log_ratio, w),
        "clip_frac": _weighted_mean((jnp.abs(ratio - 1.0) > config.clip).astype(jnp.float32), w),
    }
    return loss, stats


def gae(traj: dict[str, jax.Array], gamma: float, lam: float) -> tuple[jax.Array, jax.Array]:
    """(advantages, trainable) of a rollout (T, B): each seat's decisions (``decision``,
    made by ``player``) as their own sequence. ``rewards`` (T, B, n) reach every seat; a
    decision's reward is what reaches its seat from its move until that seat's next
    decision, whose value is its next value; ``done`` ends the episode (next value 0). A
    seat's last decision before the rollout ends with the episode going on has no
    successor: advantage 0, not trainable (it bootstraps the ones before it)."""
    n = traj["rewards"].shape[-1]

    def back(carry: tuple, t: dict[str, jax.Array]) -> tuple:
        next_v, next_adv, pending, closed = carry
        done = t["done"][:, None]
        pending = jnp.where(done, t["rewards"], pending + t["rewards"])
        next_v = jnp.where(done, 0.0, next_v)
        next_adv = jnp.where(done, 0.0, next_adv)
        closed = closed | done
        me = (jnp.arange(n) == t["player"][:, None]) & t["decision"][:, None]
        mine = me.astype(jnp.float32)
        delta = jnp.sum(mine * (pending + gamma * next_v), -1) - t["value"]
        adv = delta + gamma * lam * jnp.sum(mine * next_adv, -1)
        has_next = jnp.any(me & closed, -1)
        adv = jnp.where(has_next, adv, 0.0)
        carry = (
            jnp.where(me, t["value"][:, None], next_v),
            jnp.where(me, adv[:, None], next_adv),
            jnp.where(me, 0.0, pending),
            closed | me,
        )
        return carry, (adv, has_next)

    shape = traj["rewards"].shape[1:]
    init = (jnp.zeros(shape), jnp.zeros(shape), jnp.zeros(shape), jnp.zeros(shape, bool))
    _, (adv, trainable) = jax.lax.scan(back, init, traj, reverse=True)
    return adv, trainable


# ---- one training run --------------------------------------------------------------------


Progress = Callable[[Any, dict[str, Any]], None]


class _Run:
    """The pieces of one run, closed over by the compiled functions: ``init(key)`` the
    carry, ``update(carry, total)`` one update (``total``: the updates planned, for the
    learning rate)."""

    def __init__(self, config: PPOConfig, progress: Progress | None, every: int) -> None:
        self.config = config
        self.progress, self.every = progress, every
        self.env = config.env()
        self.net = network(config)
        self.tx = optax.chain(
            optax.clip_by_global_norm(config.max_grad_norm), optax.scale_by_adam(eps=1e-5)
        )
        self.rules = rule_bot(self.env)
        self.greedy = greedy_bot(self.env)
        self.shares = np.log(np.array([config.opponents[k] for k in KINDS]) + 1e-30)

    # -- state --

    def init(self, key: jax.Array) -> dict[str, Any]:
        c = self.config
        k_net, k_env, k_match, k_run = jax.random.split(key, 4)
        params = init_params(c, k_net)
        states = jax.vmap(self.env.init)(jax.random.split(k_env, c.num_envs))
        pool = jax.tree.map(lambda x: jnp.broadcast_to(x, (c.pool_size,) + x.shape), params)
        zero = jnp.zeros((), jnp.float32)
        return {
            "params": params,
            "opt": self.tx.init(params),
            "states": states,
            "match": self._draw(k_match, jnp.zeros((), jnp.int32)),
            "pool": pool,
            "pool_count": jnp.zeros((), jnp.int32),
            "key": k_run,
            "update": jnp.zeros((), jnp.int32),
            "eval": {"margin": zero * jnp.nan, "se": zero * jnp.nan},
        }

    def _draw(self, key: jax.Array, pool_count: jax.Array) -> dict[str, jax.Array]:
        """An opponent kind and a learner seat for every game (snapshot: self until the
        pool holds one)."""
        k_kind, k_seat = jax.random.split(key)
        b = self.config.num_envs
        kind = jax.random.categorical(k_kind, self.shares, shape=(b,)).astype(jnp.int32)
        kind = jnp.where((kind == SNAPSHOT) & (pool_count == 0), SELF, kind)
        seat = jax.random.randint(k_seat, (b,), 0, 2, jnp.int32)
        return {"kind": kind, "seat": seat}

    def _extra(self, states: Any, kind: jax.Array) -> jax.Array | None:
        """The critic's extra inputs: the other seat's tiles, the opponent kind."""
        if not self.net.extra:
            return None
        other = jnp.take_along_axis(states._hands, 1 - states.current_player[:, None], 1)
        bits = (other >> jnp.arange(self.env.spec.num_tiles, dtype=jnp.int32)) & 1
        return jnp.concatenate(
            [bits.astype(jnp.float32), jax.nn.one_hot(kind, len(KINDS))], axis=-1
        )

    # -- the rollout --

    def _opponent_moves(self, states: Any, gumbel: jax.Array, snap: Any) -> list[jax.Array]:
        """Each kind's move in every game, by kind id (self's is the learner's)."""
        obs, mask = states.observation, states.legal_action_mask
        shares = self.config.opponents
        none = jnp.zeros(mask.shape[:1], jnp.int32)
        moves = [none] * len(KINDS)
        if shares["snapshot"] > 0:
            logits, _ = self.net.apply(snap, obs, mask, critic=False)
            moves[SNAPSHOT] = jnp.argmax(logits + gumbel, -1).astype(jnp.int32)
        if shares["random"] > 0:
            moves[RANDOM] = jnp.argmax(jnp.where(mask, gumbel, -jnp.inf), -1).astype(jnp.int32)
        if shares["greedy"] > 0:
            moves[GREEDY] = self.greedy(obs, mask)
        return moves

    def _rollout_step(self, carry: tuple, _: Any) -> tuple:
        params, snap, states, match, pool_count, key = carry
        c = self.config
        key, k_g, k_env, k_draw = jax.random.split(key, 4)
        obs, mask, player = states.observation, states.legal_action_mask, states.current_player
        extra = self._extra(states, match["kind"])
        logits, value = self.net.apply(params, obs, mask, extra)
        gumbel = jax.random.gumbel(k_g, mask.shape)
        mine = jnp.argmax(logits + gumbel, -1).astype(jnp.int32)
        need_rules = c.opponents["rules"] > 0 or c.teacher_coef > 0
        rules = self.rules(obs, mask) if need_rules else jnp.zeros_like(mine)
        moves = self._opponent_moves(states, gumbel, snap)
        moves[RULES] = rules
        theirs = jnp.stack(moves, -1)[jnp.arange(c.num_envs), match["kind"]]
        learner = (match["kind"] == SELF) | (player == match["seat"])
        action = jnp.where(learner, mine, theirs)
        forced = jnp.sum(mask, -1) == 1
        decision = learner & ~(forced & c.skip_forced)
        logp = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], -1)[:, 0]
        nxt = jax.vmap(self.env.step_autoreset)(states, action, jax.random.split(k_env, c.num_envs))
        done = nxt.terminated
        # the learner's points in the games against a snapshot or a bot, when they end
        seat_reward = jnp.take_along_axis(nxt.rewards, player[:, None], 1)[:, 0]
        scored = done & (match["kind"] != SELF)
        points = jnp.where(learner, seat_reward, -seat_reward) * scored
        fresh = self._draw(k_draw, pool_count)
        match = jax.tree.map(lambda new, old: jnp.where(done, new, old), fresh, match)
        traj = {
            "obs": obs,
            "mask": mask,
            "action": action,
            "logp": logp,
            "value": value,
            "player": player,
            "decision": decision,
            "teacher": rules,
            "rewards": nxt.rewards * c.reward_scale,
            "done": done,
            "learner_points": points,
            "scored": scored,
        }
        if extra is not None:
            traj["extra"] = extra
        return (params, snap, nxt, match, pool_count, key), traj

    # -- the update --

    def _select(self, key: jax.Array, data: dict[str, jax.Array]) -> dict[str, jax.Array]:
        """``train_rows`` rows: the decisions first, in random order."""
        n = self.config.steps_per_update
        u = jax.random.uniform(key, (n,))
        order = jnp.argsort(jnp.where(data["decision"] > 0, u, u + 2.0))
        keep = order[: self.config.train_rows]
        return jax.tree.map(lambda x: x[keep], data)

    def _minibatch(self, carry: tuple, batch: dict[str, jax.Array]) -> tuple:
        params, opt, lr, teacher = carry
        grad_fn = jax.value_and_grad(ppo_loss, argnums=1, has_aux=True)
        (loss, stats), grads = grad_fn(self.net, params, batch, self.config, teacher)
        updates, opt = self.tx.update(grads, opt, params)
        params = optax.apply_updates(params, jax.tree.map(lambda u: -lr * u, updates))
        return (params, opt, lr, teacher), {"loss": loss, **stats}

    def _epoch(self, carry: tuple, key: jax.Array) -> tuple:
        (params, opt, lr, teacher), data = carry
        c = self.config
        perm = jax.random.permutation(key, c.train_rows)
        batches = jax.tree.map(
            lambda x: x[perm].reshape((c.num_minibatches, -1) + x.shape[1:]), data
        )
        inner, stats = jax.lax.scan(self._minibatch, (params, opt, lr, teacher), batches)
        return (inner, data), stats

    def _train_data(self, traj: dict[str, jax.Array]) -> dict[str, jax.Array]:
        parts = {k: traj[k] for k in ("rewards", "done", "player", "decision", "value")}
        adv, trainable = gae(parts, self.config.gamma, self.config.gae_lambda)
        keys = ("obs", "mask", "action", "logp", "teacher") + (
            ("extra",) if "extra" in traj else ()
        )
        data = {k: traj[k] for k in keys} | {
            "adv": adv,
            "target": adv + traj["value"],
            "weight": (trainable & traj["decision"]).astype(jnp.float32),
            "decision": traj["decision"].astype(jnp.float32),
        }
        return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), data)

    def _schedules(self, i: jax.Array, total: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(learning rate, teacher weight) of update ``i`` of ``total``."""
        c = self.config
        frac = 1.0 - i / jnp.maximum(total, 1) if c.anneal_lr else 1.0
        steps = (i * c.steps_per_update).astype(jnp.float32)
        fade = jnp.clip(1.0 - steps / max(c.teacher_steps, 1), 0.0, 1.0)
        teacher = c.teacher_coef * fade if c.teacher_steps else jnp.float32(0.0)
        return c.lr * frac, teacher

    def update(self, carry: dict[str, Any], total: jax.Array) -> tuple[dict[str, Any], dict]:
        c = self.config
        i = carry["update"]
        key, k_snap, k_sel, k_epochs, k_eval = jax.random.split(carry["key"], 5)
        count = carry["pool_count"]
        j = jax.random.randint(k_snap, (), 0, jnp.maximum(jnp.minimum(count, c.pool_size), 1))
        snap = jax.tree.map(lambda x: x[j], carry["pool"])
        start = (carry["params"], snap, carry["states"], carry["match"], count, key)
        (_, _, states, match, _, key), traj = jax.lax.scan(
            self._rollout_step, start, None, c.rollout_steps
        )
        data = self._select(k_sel, self._train_data(traj))
        lr, teacher = self._schedules(i, total)
        inner = (carry["params"], carry["opt"], lr, teacher)
        ((params, opt, _, _), _), stats = jax.lax.scan(
            self._epoch, (inner, data), jax.random.split(k_epochs, c.epochs)
        )
        pool, count = self._snapshot(carry["pool"], count, params, i)
        evaluated = self._maybe_evaluate(params, carry["eval"], i, total)
        metrics = self._metrics(stats, traj, data, lr, teacher, evaluated)
        new = {
            "params": params,
            "opt": opt,
            "states": states,
            "match": match,
            "pool": pool,
            "pool_count": count,
            "key": key,
            "update": i + 1,
            "eval": evaluated,
        }
        self._report(i, total, metrics)
        return new, metrics

    def _snapshot(self, pool: Any, count: jax.Array, params: Any, i: jax.Array) -> tuple:
        """Every ``snapshot_every`` updates the policy joins the pool (oldest out)."""
        c = self.config
        take = (i + 1) % c.snapshot_every == 0
        slot = count % c.pool_size
        pool = jax.tree.map(lambda p, x: p.at[slot].set(jnp.where(take, x, p[slot])), pool, params)
        return pool, count + take.astype(jnp.int32)

    def _metrics(self, stats, traj, data, lr, teacher, evaluated) -> dict[str, jax.Array]:
        metrics = jax.tree.map(jnp.mean, stats)
        hands = jnp.sum(traj["done"])
        decisions = jnp.sum(traj["decision"])
        metrics |= {
            "lr": jnp.asarray(lr, jnp.float32),
            "teacher_coef": jnp.asarray(teacher, jnp.float32),
            "hands": hands,
            "decisions": decisions / self.config.steps_per_update,
            "trained": jnp.sum(data["weight"]) / jnp.maximum(decisions, 1),
            "learner_points": jnp.sum(traj["learner_points"])
            / jnp.maximum(jnp.sum(traj["scored"]), 1),
            "eval_margin": evaluated["margin"],
            "eval_se": evaluated["se"],
        }
        return metrics

    def _report(self, i: jax.Array, total: jax.Array, metrics: dict) -> None:
        if self.progress is None:
            return
        due = ((i + 1) % self.every == 0) | (i + 1 >= total)
        jax.lax.cond(due, lambda: jax.debug.callback(self.progress, i + 1, metrics), lambda: None)

    # -- the evaluation --

    def _maybe_evaluate(self, params, last, i, total) -> dict[str, jax.Array]:
        c = self.config
        if not c.eval_every:
            return last
        due = ((i + 1) % c.eval_every == 0) | (i + 1 >= total)
        return jax.lax.cond(due, lambda: self.evaluate(params), lambda: last)

    def evaluate(self, params: Any) -> dict[str, jax.Array]:
        """The greedy policy against the rule bot on ``eval_deals`` fixed deals, each played
        twice with the seats swapped: the learner's mean reward per game and its standard
        error (over deals)."""
        d = self.config.eval_deals
        keys = eval_keys(self.config)
        states = jax.vmap(self.env.init)(jnp.concatenate([keys, keys]))
        seat = jnp.concatenate([jnp.zeros(d, jnp.int32), jnp.ones(d, jnp.int32)])
        step = jax.vmap(self.env.step)

        def body(carry):
            states, total, n = carry
            obs, mask = states.observation, states.legal_action_mask
            logits, _ = self.net.apply(params, obs, mask, critic=False)
            mine = jnp.argmax(logits, -1).astype(jnp.int32)
            action = jnp.where(states.current_player == seat, mine, self.rules(obs, mask))
            nxt = step(states, action)
            reward = jnp.take_along_axis(nxt.rewards, seat[:, None], 1)[:, 0]
            return nxt, total + jnp.where(states.terminated, 0.0, reward), n + 1

        def more(carry):
            states, _, n = carry
            return ~jnp.all(states.terminated) & (n < 100_000)

        start = (states, jnp.zeros(2 * d), jnp.zeros((), jnp.int32))
        _, total, _ = jax.lax.while_loop(more, body, start)
        per_deal = (total[:d] + total[d:]) / 2
        se = jnp.std(per_deal) / jnp.sqrt(jnp.float32(d))
        return {"margin": jnp.mean(per_deal), "se": se}


def evaluate(config: PPOConfig, params: Any) -> dict[str, jax.Array]:
    """The run's evaluation on its own: the greedy policy of ``params`` against the rule
    bot on ``config.eval_deals`` fixed deals, each played twice with the seats swapped;
    ``{"margin": mean reward per game, "se": its standard error over deals}``."""
    return jax.jit(_Run(config, None, 1).evaluate)(params)


def eval_keys(config: PPOConfig) -> jax.Array:
    """The keys ``BlockEnv.init`` deals the evaluation's deals from (one per deal)."""
    return jax.random.split(jax.random.PRNGKey(EVAL_SEED), config.eval_deals)


def make_train(
    config: PPOConfig, progress: Progress | None = None, every: int = 10
) -> Callable[[jax.Array], tuple[Any, dict[str, jax.Array]]]:
    """``train_fn(key) -> (params, metrics)``: the whole run as one function to ``jax.jit``.
    ``metrics`` holds one entry per update (losses, entropy, KL, clip fraction, teacher
    cross-entropy and weight, learning rate, hands finished, the learner's decisions as a
    share of the moves and the trained share of them, the learner's points per episode
    against snapshots and bots, and the latest evaluation against the rule bot:
    ``eval_margin``, ``eval_se``).
    ``progress(update, metrics)``, when given, is called on the host
    (``jax.debug.callback``) after every ``every``-th update and the last."""
    run = _Run(config, progress, every)
    total = jnp.float32(config.num_updates)

    def train_fn(key: jax.Array) -> tuple[Any, dict[str, jax.Array]]:
        carry = run.init(key)
        carry, metrics = jax.lax.scan(
            lambda c, _: run.update(c, total), carry, None, config.num_updates
        )
        return carry["params"], metrics

    return train_fn


def train(
    config: PPOConfig,
    progress: Progress | None = None,
    every: int = 10,
    minutes: float | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Train a policy: ``(params, metrics)``, ``metrics`` one row per update (see
    ``make_train``), plus ``compile_s``, ``run_s`` (seconds) and ``updates``.

    Without ``minutes``, ``make_train``'s one function runs the whole run. With ``minutes``
    (``math.inf``: no budget), the same updates run in compiled chunks of ``every``;
    ``progress`` is called on the host after each chunk with its last row and ``seconds``
    (training time so far); training stops after ``num_updates`` (whole chunks) or the last
    chunk that the budget allows (compilation not counted), the learning rate annealed over
    the updates the remaining time allows (re-estimated after each chunk)."""
    key = jax.random.PRNGKey(config.seed)
    if minutes is not None:
        return _train_chunked(config, progress, every, minutes * 60.0, key)
    fn = jax.jit(make_train(config, progress, every))
    start = time.perf_counter()
    compiled = fn.lower(key).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    params, metrics = jax.block_until_ready(compiled(key))
    run_s = time.perf_counter() - start
    extra = {"compile_s": compile_s, "run_s": run_s, "updates": config.num_updates}
    return params, {**metrics, **extra}


def _train_chunked(
    config: PPOConfig, progress: Progress | None, every: int, budget: float, key: jax.Array
) -> tuple[Any, dict[str, Any]]:
    run = _Run(config, None, every)

    def chunk(carry: dict[str, Any], total: jax.Array) -> tuple:
        return jax.lax.scan(lambda c, _: run.update(c, total), carry, None, every)

    start = time.perf_counter()
    carry = jax.jit(run.init)(key)
    most = config.num_updates - config.num_updates % every
    compiled = jax.jit(chunk, donate_argnums=0).lower(carry, jnp.float32(most)).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    done, total, rows = 0, most, []
    while done < total:
        carry, metrics = compiled(carry, jnp.float32(total))
        jax.block_until_ready(carry)
        rows.append(metrics)
        done += every
        seconds = time.perf_counter() - start
        if progress is not None:
            progress(done, {k: v[-1] for k, v in metrics.items()} | {"seconds": seconds})
        fit = min(max((budget - seconds) / (seconds / (done // every)), 0.0), most)
        total = min(most, done + math.floor(fit) * every)
    run_s = time.perf_counter() - start
    metrics = jax.tree.map(lambda *x: np.concatenate(x), *rows)
    return carry["params"], {**metrics, "compile_s": compile_s, "run_s": run_s, "updates": done}


# ---- policy files ------------------------------------------------------------------------


def save_policy(path: str | Path, params: Any, config: PPOConfig) -> Path:
    """Write ``params`` and the game they were trained for to ``path`` (msgpack, no pickle)."""
    net = network(config)
    header = {
        "format": FORMAT,
        "game": _game_entry(config.game),
        "hidden": list(config.hidden),
        "scaled_inputs": True,
        "critic_extra": net.extra,
        "config": asdict(config) | {"hidden": list(config.hidden)},
    }
    blob = {"header": json.dumps(header), "params": serialization.to_state_dict(params)}
    path = Path(path)
    path.write_bytes(serialization.msgpack_serialize(blob))
    return path


def load_policy(path: str | Path) -> tuple[ActorCritic, Any, dict[str, Any]]:
    """``(network, params, header)`` of a file ``save_policy`` wrote; ValueError for a file
    of another kind."""
    try:
        blob = serialization.msgpack_restore(Path(path).read_bytes())
        header = json.loads(blob["header"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a block_env.jax PPO policy file ({exc})") from exc
    if header.get("format") != FORMAT:
        raise ValueError(f"{path}: format {header.get('format')!r}, expected {FORMAT!r}")
    env = make(**header["game"])
    net = ActorCritic(
        num_actions=env.num_actions,
        hidden=tuple(header["hidden"]),
        in_scale=_in_scale(header["game"]) if header.get("scaled_inputs") else None,
        extra=int(header.get("critic_extra", 0)),
    )
    template = _init(net, env, jax.random.PRNGKey(0))
    params = serialization.from_state_dict(template, blob["params"])
    return net, params, header


GAME_KEYS = ("num_players", "opener", "episode", "partnership", "target_score", "reward")


def _game_entry(game: dict[str, Any]) -> dict[str, Any]:
    """The game as a policy file records it: ``GAME_KEYS``, plus ``max_pip`` and
    ``hand_size`` for a set other than the standard one."""
    cfg = BlockConfig(**game)
    out: dict[str, Any] = {k: getattr(cfg, k) for k in GAME_KEYS}
    if not cfg.is_standard_set:
        out.update(max_pip=cfg.max_pip, hand_size=cfg.hand_size)
    return out
