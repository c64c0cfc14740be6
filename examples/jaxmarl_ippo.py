"""IPPO on Block through JaxMARL's interface, compiled end to end, then its margin against
random play and the rule bot.

    python examples/jaxmarl_ippo.py --minutes 3
    python examples/jaxmarl_ippo.py --updates 100 --players 4 --partnership

In the manner of JaxMARL's IPPO baseline: one flax actor-critic whose parameters every seat
shares, the agents batchified into one batch of actors, logits masked by
``get_avail_actions`` (a seat not to act has one legal action, the wait), rollouts of
``env.step`` (JaxMARL's auto-reset) under ``jax.lax.scan``, GAE, clipped PPO epochs with
optax, all in one ``jax.jit``. ``--updates N`` trains in one compiled call; ``--minutes M``
calls a compiled chunk of updates until the time is spent. The env is
``block_env.jax.multiagent`` (a JaxMARL ``MultiAgentEnv`` where JaxMARL is installed).
"""

from __future__ import annotations

import argparse
import time
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax.training.train_state import TrainState

from block_env.jax.multiagent import BlockMultiAgentEnv, multiagent_env
from block_env.jax.rule_bot import rule_bot
from block_env.observation import obs_layout

CONFIG = {
    "NUM_ENVS": 256,
    "NUM_STEPS": 32,  # env steps per rollout
    "UPDATE_EPOCHS": 4,
    "NUM_MINIBATCHES": 4,
    "LR": 3e-4,
    "GAMMA": 0.99,
    "GAE_LAMBDA": 0.95,
    "CLIP_EPS": 0.2,
    "ENT_COEF": 0.01,
    "VF_COEF": 0.5,
    "MAX_GRAD_NORM": 0.5,
    "REWARD_SCALE": 0.1,  # hand points are tens: the critic learns them divided by 10
    "CHUNK": 10,  # updates per compiled call under --minutes
}
MASKED = -1e9  # the logit of an unavailable action


class ActorCritic(nn.Module):
    """An MLP with a policy head (one logit per action) and a value head."""

    num_actions: int
    hidden: int = 256

    @nn.compact
    def __call__(self, obs: jax.Array, avail: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = obs
        for _ in range(2):
            x = nn.tanh(nn.Dense(self.hidden)(x))
        logits = nn.Dense(self.num_actions, kernel_init=nn.initializers.orthogonal(0.01))(x)
        value = nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0))(x)
        return jnp.where(avail, logits, MASKED), value.squeeze(-1)


class Transition(NamedTuple):
    done: jax.Array
    action: jax.Array
    value: jax.Array
    reward: jax.Array
    log_prob: jax.Array
    obs: jax.Array
    avail: jax.Array


def batchify(x: dict, agents: list[str], num_actors: int) -> jax.Array:
    """Per-agent arrays (num_envs, ...) as one batch of actors (agent-major)."""
    return jnp.stack([x[a] for a in agents]).reshape((num_actors, -1))


def unbatchify(x: jax.Array, agents: list[str], num_envs: int) -> dict:
    x = x.reshape((len(agents), num_envs) + x.shape[1:])
    return {a: x[i] for i, a in enumerate(agents)}


def sample(key: jax.Array, logits: jax.Array) -> tuple[jax.Array, jax.Array]:
    action = jax.random.categorical(key, logits)
    log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], 1)[:, 0]
    return action, log_prob


def make_train(config: dict, env: BlockMultiAgentEnv) -> tuple[Any, Any]:
    """``init(key) -> runner state`` and ``updates(runner, count) -> (runner, metrics)``."""
    agents, num_envs = env.agents, config["NUM_ENVS"]
    num_actors = env.num_agents * num_envs
    scale = jnp.asarray(obs_layout(env.game.config).scale)
    network = ActorCritic(env.num_actions)
    batch_size = num_actors * config["NUM_STEPS"]
    minibatch = batch_size // config["NUM_MINIBATCHES"]

    def observe(obs: dict, state: Any) -> tuple[jax.Array, jax.Array]:
        avail = jax.vmap(env.get_avail_actions)(state)
        return (
            batchify(obs, agents, num_actors) / scale,
            batchify(avail, agents, num_actors).astype(bool),
        )

    def init(key: jax.Array) -> tuple:
        k_net, k_env, key = jax.random.split(key, 3)
        obs, state = jax.vmap(env.reset)(jax.random.split(k_env, num_envs))
        x, avail = observe(obs, state)
        params = network.init(k_net, x[:1], avail[:1])
        tx = optax.chain(
            optax.clip_by_global_norm(config["MAX_GRAD_NORM"]),
            optax.adam(config["LR"], eps=1e-5),
        )
        train_state = TrainState.create(apply_fn=network.apply, params=params, tx=tx)
        return train_state, state, obs, key

    def env_step(runner: tuple, _: Any) -> tuple:
        train_state, state, obs, key = runner
        key, k_act, k_step = jax.random.split(key, 3)
        x, avail = observe(obs, state)
        logits, value = network.apply(train_state.params, x, avail)
        action, log_prob = sample(k_act, logits)
        actions = unbatchify(action, agents, num_envs)
        obs_next, state, reward, done, _ = jax.vmap(env.step)(
            jax.random.split(k_step, num_envs), state, actions
        )
        transition = Transition(
            batchify(done, agents, num_actors)[:, 0].astype(jnp.float32),
            action,
            value,
            batchify(reward, agents, num_actors)[:, 0] * config["REWARD_SCALE"],
            log_prob,
            x,
            avail,
        )
        return (train_state, state, obs_next, key), transition

    def advantages(traj: Transition, last_value: jax.Array) -> tuple[jax.Array, jax.Array]:
        def back(carry: tuple, t: Transition) -> tuple:
            gae, next_value = carry
            keep = 1.0 - t.done
            delta = t.reward + config["GAMMA"] * next_value * keep - t.value
            gae = delta + config["GAMMA"] * config["GAE_LAMBDA"] * keep * gae
            return (gae, t.value), gae

        _, adv = jax.lax.scan(back, (jnp.zeros_like(last_value), last_value), traj, reverse=True)
        return adv, adv + traj.value

    def loss_fn(params: Any, batch: tuple) -> tuple:
        traj, adv, target = batch
        logits, value = network.apply(params, traj.obs, traj.avail)
        log_probs = jax.nn.log_softmax(logits)
        log_prob = jnp.take_along_axis(log_probs, traj.action[:, None], 1)[:, 0]
        ratio = jnp.exp(log_prob - traj.log_prob)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        clipped = jnp.clip(ratio, 1 - config["CLIP_EPS"], 1 + config["CLIP_EPS"])
        actor_loss = -jnp.minimum(ratio * adv, clipped * adv).mean()
        v_clipped = traj.value + jnp.clip(
            value - traj.value, -config["CLIP_EPS"], config["CLIP_EPS"]
        )
        value_loss = 0.5 * jnp.maximum((value - target) ** 2, (v_clipped - target) ** 2).mean()
        probs = jnp.exp(log_probs)
        entropy = -jnp.sum(jnp.where(traj.avail, probs * log_probs, 0.0), axis=-1).mean()
        total = actor_loss + config["VF_COEF"] * value_loss - config["ENT_COEF"] * entropy
        return total, (value_loss, entropy)

    def update(runner: tuple, _: Any) -> tuple:
        runner, traj = jax.lax.scan(env_step, runner, None, config["NUM_STEPS"])
        train_state, state, obs, key = runner
        x, avail = observe(obs, state)
        _, last_value = network.apply(train_state.params, x, avail)
        adv, target = advantages(traj, last_value)

        def epoch(carry: tuple, _: Any) -> tuple:
            train_state, key = carry
            key, k_perm = jax.random.split(key)
            flat = jax.tree.map(
                lambda z: z.reshape((batch_size,) + z.shape[2:]), (traj, adv, target)
            )
            order = jax.random.permutation(k_perm, batch_size)
            shuffled = jax.tree.map(lambda z: z[order].reshape((-1, minibatch) + z.shape[1:]), flat)

            def minibatch_step(ts: TrainState, batch: tuple) -> tuple:
                grads, aux = jax.grad(loss_fn, has_aux=True)(ts.params, batch)
                return ts.apply_gradients(grads=grads), aux

            train_state, aux = jax.lax.scan(minibatch_step, train_state, shuffled)
            return (train_state, key), aux

        (train_state, key), (v_loss, entropy) = jax.lax.scan(
            epoch, (train_state, key), None, config["UPDATE_EPOCHS"]
        )
        played = traj.done.sum() / env.num_agents  # episodes ended in this rollout
        metrics = {"v_loss": v_loss.mean(), "entropy": entropy.mean(), "episodes": played}
        return (train_state, state, obs, key), metrics

    def updates(runner: tuple, count: int) -> tuple:
        return jax.lax.scan(update, runner, None, count)

    return init, updates


def make_evaluate(env: BlockMultiAgentEnv, num_games: int, opponent: str) -> Any:
    """``evaluate(params) -> learner's rewards``: ``num_games`` episodes on fixed deals, the
    learner (greedy policy) in seat ``i % n`` of game ``i`` (with its partner in partnership
    play), every other seat ``opponent``: "random" (uniform over the available actions) or
    "rules" (``block_env.jax.rule_bot``)."""
    n, agents, wait = env.num_agents, env.agents, env.wait
    scale = jnp.asarray(obs_layout(env.game.config).scale)
    network = ActorCritic(env.num_actions)
    learner = jnp.arange(num_games) % n
    sides = 2 if env.game.config.partnership else n
    mine = (jnp.arange(n)[None, :] % sides) == (learner[:, None] % sides)  # (games, seats)
    bot = rule_bot(env.game)

    def opponent_actions(key: jax.Array, obs: jax.Array, avail: jax.Array) -> jax.Array:
        if opponent == "random":
            return jax.random.categorical(key, jnp.where(avail, 0.0, MASKED))
        moves = bot(obs.reshape(-1, obs.shape[-1]), avail.reshape(-1, wait + 1)[:, :wait])
        return jnp.where(avail[..., wait], wait, moves.reshape(avail.shape[:-1]))

    def evaluate(params: Any) -> jax.Array:
        keys = jax.random.split(jax.random.PRNGKey(12345), num_games)
        obs, state = jax.vmap(env.reset)(keys)

        def running(carry: tuple) -> jax.Array:
            return ~carry[2].all()

        def play(carry: tuple) -> tuple:
            state, obs, done, total, key = carry
            key, k_opp, k_env = jax.random.split(key, 3)
            x = jnp.stack([obs[a] for a in agents], 1)  # (games, seats, D)
            avail_by_agent = jax.vmap(env.get_avail_actions)(state)
            avail = jnp.stack([avail_by_agent[a] for a in agents], 1)
            logits, _ = network.apply(params, x / scale, avail)
            chosen = jnp.where(mine, jnp.argmax(logits, -1), opponent_actions(k_opp, x, avail))
            actions = {a: chosen[:, i] for i, a in enumerate(agents)}
            obs, state, reward, dones, _ = jax.vmap(env.step_env)(
                jax.random.split(k_env, num_games), state, actions
            )
            reward = jnp.stack([reward[a] for a in agents], 1)
            total = total + jnp.where(
                done, 0.0, jnp.take_along_axis(reward, learner[:, None], 1)[:, 0]
            )
            return state, obs, done | dones["__all__"], total, key

        start = (state, obs, jnp.zeros(num_games, bool), jnp.zeros(num_games), keys[0])
        return jax.lax.while_loop(running, play, start)[3]

    return jax.jit(evaluate)


def report(name: str, rewards: jax.Array) -> str:
    r = np.asarray(rewards, dtype=np.float64)
    half = 1.96 * r.std(ddof=1) / np.sqrt(r.size)
    return f"{name}: {r.mean():+.2f} [{r.mean() - half:+.2f}, {r.mean() + half:+.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--minutes", type=float, default=3.0, help="training time (default 3)")
    budget.add_argument("--updates", type=int, help="train this many updates in one call")
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument("--partnership", action="store_true", help="two teams of two")
    parser.add_argument("--eval-games", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    env = multiagent_env(num_players=args.players, partnership=args.partnership, episode="hand")
    init, updates = make_train(CONFIG, env)
    evaluate = {o: make_evaluate(env, args.eval_games, o) for o in ("random", "rules")}
    runner = jax.jit(init)(jax.random.PRNGKey(args.seed))
    print(
        report("before training, points per hand vs random", evaluate["random"](runner[0].params))
    )

    start, done_updates, chunk = time.perf_counter(), 0, args.updates or CONFIG["CHUNK"]
    run = jax.jit(updates, static_argnums=1)
    while True:
        runner, metrics = run(runner, chunk)
        jax.block_until_ready(runner)
        done_updates += chunk
        secs = time.perf_counter() - start
        steps = done_updates * CONFIG["NUM_STEPS"] * CONFIG["NUM_ENVS"]
        print(
            f"update {done_updates:4d}  {steps:,} env steps  {secs:6.1f} s  "
            f"episodes {int(metrics['episodes'].sum()):,}  "
            f"entropy {float(metrics['entropy'][-1]):.3f}  "
            f"v_loss {float(metrics['v_loss'][-1]):.4f}",
            flush=True,
        )
        if args.updates or secs >= 60 * args.minutes:
            break
    print(f"trained {done_updates} updates, {steps:,} env steps in {secs:.0f} s (compile included)")
    params = runner[0].params
    for opponent, play in evaluate.items():
        print(report(f"after training, points per hand vs {opponent}", play(params)))


if __name__ == "__main__":
    main()
