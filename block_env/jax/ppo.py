"""PPO compiled end to end on ``block_env.jax`` (flax network, optax optimiser).

``train(config)`` runs ``config.num_updates`` PPO updates of a self-play policy inside one
``jax.jit``: each update plays ``rollout_steps`` steps of ``num_envs`` games
(``jax.vmap`` of ``BlockEnv.step_autoreset`` under ``jax.lax.scan``), computes GAE and
makes ``epochs`` passes of minibatch updates, all in one XLA program. Every seat is played
by the same network (shared parameters): the actor reads the AEC observation of the seat to
act, its logits are masked by ``legal_action_mask``, and the critic gives the value for
that seat. For two players and ``reward="zero_sum"`` the value of the next state is seen
from the mover's side (negated when the other seat moves next), so one GAE pass over the
interleaved turns gives each seat's own advantage.

``save_policy`` / ``load_policy`` write and read a policy file without pickle: msgpack
(``flax.serialization``) holding the parameters and a JSON header with the game and the
network. ``block_env.jax.agent.load_agent`` plays such a file as an agent.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import serialization

from block_env.config import BlockConfig
from block_env.jax.env import BlockEnv, make

FORMAT = "block-env-jax-ppo-v1"  # the policy file's format tag
MASKED = -1e9  # the logit of an illegal action

__all__ = [
    "FORMAT",
    "ActorCritic",
    "PPOConfig",
    "load_policy",
    "make_train",
    "save_policy",
    "train",
]


@dataclass(frozen=True)
class PPOConfig:
    """A training run: the game (``raw_env``'s keywords), the network and PPO's settings.

    One update plays ``num_envs × rollout_steps`` agent-steps; ``epochs`` passes of
    ``num_minibatches`` minibatches then update the network."""

    game: dict[str, Any] = field(
        default_factory=lambda: {"num_players": 2, "episode": "hand", "opener": "rotate"}
    )
    hidden: tuple[int, ...] = (256, 256)
    num_envs: int = 512
    rollout_steps: int = 32
    num_updates: int = 100
    epochs: int = 4
    num_minibatches: int = 4
    lr: float = 1e-3
    anneal_lr: bool = True
    gamma: float = 1.0
    gae_lambda: float = 0.95
    clip: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    reward_scale: float = 0.05
    seed: int = 0

    def __post_init__(self) -> None:
        cfg = BlockConfig(**self.game)  # ValueError for a bad game, as raw_env's
        if cfg.num_players != 2 or cfg.reward != "zero_sum":
            raise ValueError(
                f"PPO self-play here is for two players with reward='zero_sum', got "
                f"num_players={cfg.num_players}, reward={cfg.reward!r}"
            )
        ints = ("num_envs", "rollout_steps", "num_updates", "epochs", "num_minibatches")
        for name in ints:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} is not allowed: use a positive int")
        if (self.num_envs * self.rollout_steps) % self.num_minibatches:
            raise ValueError(
                f"num_minibatches={self.num_minibatches} must divide num_envs × rollout_steps "
                f"= {self.num_envs * self.rollout_steps}"
            )
        if not self.hidden or any(int(h) < 1 for h in self.hidden):
            raise ValueError(f"hidden={self.hidden!r} is not allowed: use positive ints")
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))

    @property
    def steps_per_update(self) -> int:
        """Agent-steps played per update."""
        return self.num_envs * self.rollout_steps

    def env(self) -> BlockEnv:
        """The training environment."""
        return make(**self.game)


class ActorCritic(nn.Module):
    """Two MLPs on the observation: masked action logits and the mover's value."""

    num_actions: int
    hidden: Sequence[int] = (256, 256)

    @nn.compact
    def __call__(self, obs: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
        actor, critic = obs, obs
        hidden_init = nn.initializers.orthogonal(jnp.sqrt(2.0))
        for i, width in enumerate(self.hidden):
            actor = nn.relu(nn.Dense(width, kernel_init=hidden_init, name=f"actor_{i}")(actor))
            critic = nn.relu(nn.Dense(width, kernel_init=hidden_init, name=f"critic_{i}")(critic))
        out_init = nn.initializers.orthogonal(0.01)  # near-uniform first policy
        logits = nn.Dense(self.num_actions, kernel_init=out_init, name="actor_out")(actor)
        value_init = nn.initializers.orthogonal(1.0)
        value = nn.Dense(1, kernel_init=value_init, name="critic_out")(critic)[..., 0]
        return jnp.where(mask, logits, MASKED), value


def _network(config: PPOConfig, env: BlockEnv) -> ActorCritic:
    return ActorCritic(num_actions=env.num_actions, hidden=config.hidden)


def _sample(key: jax.Array, logits: jax.Array) -> jax.Array:
    """One action per row, drawn from the masked logits (Gumbel-max)."""
    return jax.random.categorical(key, logits, axis=-1)


def _log_prob(logits: jax.Array, action: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Log-probability of ``action`` and the entropy, over the legal actions."""
    logp_all = jax.nn.log_softmax(logits, axis=-1)
    logp = jnp.take_along_axis(logp_all, action[..., None], axis=-1)[..., 0]
    probs = jnp.exp(logp_all)
    entropy = -jnp.sum(jnp.where(logits > MASKED / 2, probs * logp_all, 0.0), axis=-1)
    return logp, entropy


def _gae(traj: dict[str, jax.Array], last_value: jax.Array, config: PPOConfig) -> jax.Array:
    """Advantages of the interleaved two-seat trajectory, each from its mover's side: the
    next state's value counts negated when the other seat moves there (zero-sum)."""

    def back(carry: tuple[jax.Array, jax.Array], t: dict[str, jax.Array]):
        adv_next, value_next = carry
        sign = jnp.where(t["next_player"] == t["player"], 1.0, -1.0) * (1.0 - t["done"])
        delta = t["reward"] + config.gamma * sign * value_next - t["value"]
        adv = delta + config.gamma * config.gae_lambda * sign * adv_next
        return (adv, t["value"]), adv

    init = (jnp.zeros_like(last_value), last_value)
    _, adv = jax.lax.scan(back, init, traj, reverse=True)
    return adv


Progress = Callable[[Any, dict[str, Any]], None]


def make_train(
    config: PPOConfig, progress: Progress | None = None, every: int = 10
) -> Callable[[jax.Array], tuple[Any, dict[str, jax.Array]]]:
    """``train_fn(key) -> (params, metrics)``: the whole run as one function to ``jax.jit``.
    ``metrics`` holds one entry per update (losses, entropy, KL, clip fraction, hands
    finished). ``progress(update, metrics)``, when given, is called on the host
    (``jax.debug.callback``) after every ``every``-th update and the last."""
    env = config.env()
    net = _network(config, env)
    total_steps = config.num_updates * config.epochs * config.num_minibatches

    def lr_schedule(count: jax.Array) -> jax.Array:
        frac = 1.0 - count / total_steps if config.anneal_lr else 1.0
        return config.lr * frac

    tx = optax.chain(
        optax.clip_by_global_norm(config.max_grad_norm), optax.adam(lr_schedule, eps=1e-5)
    )
    init_env = jax.vmap(env.init)
    step_env = jax.vmap(env.step_autoreset)

    def rollout_step(carry, _):
        params, states, key = carry
        key, k_act, k_env = jax.random.split(key, 3)
        logits, value = net.apply(params, states.observation, states.legal_action_mask)
        action = _sample(k_act, logits)
        logp, _ = _log_prob(logits, action)
        player = states.current_player
        nxt = step_env(states, action, jax.random.split(k_env, config.num_envs))
        reward = jnp.take_along_axis(nxt.rewards, player[:, None], axis=1)[:, 0]
        traj = {
            "obs": states.observation,
            "mask": states.legal_action_mask,
            "action": action,
            "logp": logp,
            "value": value,
            "player": player,
            "next_player": nxt.current_player,
            "reward": reward * config.reward_scale,
            "done": nxt.terminated.astype(jnp.float32),
            "raw_reward": reward,
        }
        return (params, nxt, key), traj

    def loss_fn(params, batch):
        logits, value = net.apply(params, batch["obs"], batch["mask"])
        logp, entropy = _log_prob(logits, batch["action"])
        ratio = jnp.exp(logp - batch["logp"])
        adv = batch["adv"]
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        clipped = jnp.clip(ratio, 1.0 - config.clip, 1.0 + config.clip)
        pg_loss = -jnp.minimum(ratio * adv, clipped * adv).mean()
        v_loss = 0.5 * jnp.square(value - batch["target"]).mean()
        ent = entropy.mean()
        loss = pg_loss + config.vf_coef * v_loss - config.ent_coef * ent
        stats = {
            "pg_loss": pg_loss,
            "v_loss": v_loss,
            "entropy": ent,
            "approx_kl": ((ratio - 1.0) - jnp.log(ratio)).mean(),
            "clip_frac": (jnp.abs(ratio - 1.0) > config.clip).mean(),
        }
        return loss, stats

    def minibatch_step(train_state, batch):
        params, opt_state = train_state
        (loss, stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, batch)
        updates, opt_state = tx.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return (params, opt_state), {"loss": loss, **stats}

    def epoch(carry, _):
        params, opt_state, data, key = carry
        key, k_perm = jax.random.split(key)
        n = config.steps_per_update
        perm = jax.random.permutation(k_perm, n)
        shuffled = jax.tree.map(lambda x: x[perm], data)
        batches = jax.tree.map(
            lambda x: x.reshape((config.num_minibatches, -1) + x.shape[1:]), shuffled
        )
        (params, opt_state), stats = jax.lax.scan(minibatch_step, (params, opt_state), batches)
        return (params, opt_state, data, key), stats

    def update(carry, i):
        params, opt_state, states, key = carry
        (params, states, key), traj = jax.lax.scan(
            rollout_step, (params, states, key), None, config.rollout_steps
        )
        _, last_value = net.apply(params, states.observation, states.legal_action_mask)
        adv = _gae(traj, last_value, config)
        keys = ("obs", "mask", "action", "logp")
        data = {k: traj[k] for k in keys} | {"adv": adv, "target": adv + traj["value"]}
        data = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), data)
        (params, opt_state, _, key), stats = jax.lax.scan(
            epoch, (params, opt_state, data, key), None, config.epochs
        )
        metrics = jax.tree.map(jnp.mean, stats)
        hands = traj["done"].sum()
        metrics["hands"] = hands
        # the mover's reward on the step that ends a hand: |points| won, either seat
        metrics["abs_points"] = jnp.abs(traj["raw_reward"]).sum() / jnp.maximum(hands, 1.0)
        if progress is not None:
            report = ((i + 1) % every == 0) | (i + 1 == config.num_updates)
            jax.lax.cond(report, lambda: jax.debug.callback(progress, i + 1, metrics), lambda: None)
        return (params, opt_state, states, key), metrics

    def train_fn(key: jax.Array):
        k_net, k_env, k_run = jax.random.split(key, 3)
        states = init_env(jax.random.split(k_env, config.num_envs))
        params = net.init(k_net, states.observation, states.legal_action_mask)
        opt_state = tx.init(params)
        (params, _, _, _), metrics = jax.lax.scan(
            update, (params, opt_state, states, k_run), jnp.arange(config.num_updates)
        )
        return params, metrics

    return train_fn


def train(
    config: PPOConfig, progress: Progress | None = None, every: int = 10
) -> tuple[Any, dict[str, Any]]:
    """Train a self-play policy: ``(params, metrics)``, ``metrics`` one row per update
    (see ``make_train``), plus ``compile_s`` and ``run_s`` (seconds)."""
    fn = jax.jit(make_train(config, progress, every))
    key = jax.random.PRNGKey(config.seed)
    start = time.perf_counter()
    compiled = fn.lower(key).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    params, metrics = jax.block_until_ready(compiled(key))
    run_s = time.perf_counter() - start
    return params, {**metrics, "compile_s": compile_s, "run_s": run_s}


def save_policy(path: str | Path, params: Any, config: PPOConfig) -> Path:
    """Write ``params`` and the game they were trained for to ``path`` (msgpack, no pickle)."""
    header = {
        "format": FORMAT,
        "game": _game_entry(config.game),
        "hidden": list(config.hidden),
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
    net = ActorCritic(num_actions=env.num_actions, hidden=tuple(header["hidden"]))
    template = net.init(
        jax.random.PRNGKey(0),
        jnp.zeros((1,) + env.observation_shape),
        jnp.ones((1, env.num_actions), bool),
    )
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
