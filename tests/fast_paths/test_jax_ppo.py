"""``block_env.jax.ppo`` and its agent adapter: a short compiled run with the rule bot as
teacher learns the rule bot's moves and moves every parameter with finite losses; per-seat
GAE skips the opponent's moves; rows weighted 0 give no gradient; the in-run evaluation
equals the AEC env's games on the same deals; the wall-clock budget stops a run; the
policy file round-trips without pickle, and the adapter plays only legal actions on the
AEC env and refuses a file trained for another game."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

if os.environ.get("BLOCK_ENV_REQUIRE_JAX"):  # the extra CI script: missing JAX is a failure
    import flax
    import jax
else:
    jax = pytest.importorskip("jax")
    flax = pytest.importorskip("flax")
    pytest.importorskip("optax")
import jax.numpy as jnp  # noqa: E402

import block_env  # noqa: E402
from agents.baselines import RuleAgent  # noqa: E402
from block_env.jax import reset_options  # noqa: E402
from block_env.jax.agent import load_agent  # noqa: E402
from block_env.jax.ppo import (  # noqa: E402
    PPOConfig,
    eval_keys,
    evaluate,
    gae,
    init_params,
    load_policy,
    network,
    ppo_loss,
    save_policy,
    train,
)
from block_env.jax.rule_bot import rule_bot  # noqa: E402

# a short run whose loss is mostly the teacher's: 150 updates of 64 games x 16 steps
TEACHING = {
    "hidden": (64, 64),
    "num_envs": 64,
    "rollout_steps": 16,
    "num_updates": 150,
    "epochs": 2,
    "num_minibatches": 2,
    "teacher_coef": 5.0,
    "teacher_steps": 10**9,
    "anneal_lr": False,
    "snapshot_every": 5,
    "pool_size": 3,
    "eval_every": 75,
    "eval_deals": 64,
}


@pytest.fixture(scope="module")
def trained() -> tuple[PPOConfig, object, dict]:
    config = PPOConfig(**TEACHING)
    params, metrics = train(config)
    return config, params, metrics


def _positions(config: PPOConfig, games: int = 256, steps: int = 16):
    """(observations, masks) of random play, the rows with a choice of moves."""
    env = config.env()

    @jax.jit
    def play(key):
        states = jax.vmap(env.init)(jax.random.split(key, games))

        def body(s, k):
            k_act, k_env = jax.random.split(k)
            noise = jax.random.gumbel(k_act, s.legal_action_mask.shape)
            a = jnp.argmax(jnp.where(s.legal_action_mask, noise, -jnp.inf), -1)
            nxt = jax.vmap(env.step_autoreset)(s, a, jax.random.split(k_env, games))
            return nxt, (s.observation, s.legal_action_mask)

        _, (obs, mask) = jax.lax.scan(body, states, jax.random.split(key, steps))
        return obs.reshape(-1, obs.shape[-1]), mask.reshape(-1, mask.shape[-1])

    obs, mask = (np.asarray(x) for x in play(jax.random.PRNGKey(1)))
    choice = mask.sum(1) > 1
    return obs[choice], mask[choice]


def test_run_is_finite_and_moves_every_parameter(trained) -> None:
    config, params, metrics = trained
    for name in ("loss", "pg_loss", "v_loss", "entropy", "approx_kl", "teacher_ce"):
        values = np.asarray(metrics[name])
        assert values.shape == (config.num_updates,), name
        assert np.isfinite(values).all(), name
    assert np.asarray(metrics["hands"]).sum() > 0  # games ended and restarted
    assert 0.3 < np.asarray(metrics["decisions"]).mean() < 0.9  # opponents' moves are not
    k_net = jax.random.split(jax.random.PRNGKey(config.seed), 4)[0]
    initial = init_params(config, k_net)
    for a, b in zip(jax.tree.leaves(initial), jax.tree.leaves(params), strict=True):
        assert not np.allclose(np.asarray(a), np.asarray(b))
    margins = np.asarray(metrics["eval_margin"])
    assert np.isnan(margins[:74]).all() and np.isfinite(margins[[74, 149]]).all()


def test_teacher_makes_the_policy_play_the_rule_bot_s_moves(trained) -> None:
    config, params, metrics = trained
    obs, mask = _positions(config)
    want = np.asarray(rule_bot(config.env())(obs, mask))
    net = network(config)
    agree = {}
    for name, p in (("initial", init_params(config, jax.random.PRNGKey(0))), ("trained", params)):
        logits, _ = net.apply(p, obs, mask)
        agree[name] = float((np.asarray(logits).argmax(1) == want).mean())
    assert len(obs) > 1000
    assert agree["trained"] > 0.7 and agree["trained"] > agree["initial"] + 0.3, agree
    ce = np.asarray(metrics["teacher_ce"])
    assert ce[-20:].mean() < ce[:5].mean() - 0.3


def test_gae_follows_each_seat_across_the_opponent_s_moves() -> None:
    # one game: seat 0 learns, seat 1 is a bot; a hand ends at t=3 (+1 for seat 0), then
    # seat 1 learns in the next hand and its decision at t=4 is still open at the end
    traj = {
        "player": np.array([0, 1, 0, 1, 1, 0]),
        "decision": np.array([1, 0, 1, 0, 1, 0], bool),
        "value": np.array([0.1, 9.0, 0.3, -7.0, 0.5, 4.0], np.float32),
        "done": np.array([0, 0, 0, 1, 0, 0], bool),
        "rewards": np.zeros((6, 2), np.float32),
    }
    traj["rewards"][3] = [1.0, -1.0]
    batch = {k: jnp.asarray(v)[:, None] for k, v in traj.items()}  # (T, B=1)
    adv, trainable = (np.asarray(x)[:, 0] for x in gae(batch, 1.0, 0.9))
    # t=2: +1 - 0.3; t=0: (0.3 - 0.1) + 0.9 * 0.7 (the bot's values never enter)
    np.testing.assert_allclose(adv, [0.2 + 0.9 * 0.7, 0, 0.7, 0, 0, 0], atol=1e-6)
    assert trainable.tolist() == [True, False, True, False, False, False]
    # self-play: both seats learn, each chained to its own next decision
    traj["decision"][:] = [1, 1, 1, 1, 1, 1]
    batch = {k: jnp.asarray(v)[:, None] for k, v in traj.items()}
    adv, trainable = (np.asarray(x)[:, 0] for x in gae(batch, 1.0, 1.0))
    # lambda 1: each advantage is the seat's return minus its value
    np.testing.assert_allclose(adv[:4], [1.0 - 0.1, -1.0 - 9.0, 1.0 - 0.3, -1.0 + 7.0], atol=1e-6)
    assert trainable.tolist() == [True, True, True, True, False, False]


def test_rows_weighted_zero_give_no_gradient() -> None:
    config = PPOConfig(hidden=(16,), num_envs=4, rollout_steps=4, num_minibatches=1)
    net = network(config)
    params = init_params(config, jax.random.PRNGKey(3))
    obs, mask = _positions(config, games=8, steps=4)
    rows = 6
    rng = np.random.default_rng(0)
    batch = {
        "obs": jnp.asarray(obs[:rows]),
        "mask": jnp.asarray(mask[:rows]),
        "extra": jnp.asarray(rng.random((rows, net.extra)), jnp.float32),
        "action": jnp.asarray(mask[:rows].argmax(1)),
        "logp": jnp.full(rows, -1.0),
        "adv": jnp.asarray(rng.normal(size=rows), jnp.float32),
        "target": jnp.asarray(rng.normal(size=rows), jnp.float32),
        "teacher": jnp.asarray(mask[:rows].argmax(1)),
        "weight": jnp.asarray([1, 1, 1, 0, 0, 1], jnp.float32),
        "decision": jnp.asarray([1, 1, 1, 0, 1, 1], jnp.float32),
    }

    def grads(b):
        g, _ = jax.grad(ppo_loss, argnums=1, has_aux=True)(net, params, b, config, 1.0)
        return np.concatenate([np.ravel(x) for x in jax.tree.leaves(g)])

    base = grads(batch)
    changed = dict(batch)  # row 3 weighs 0 everywhere: anything may change there
    changed["obs"] = batch["obs"].at[3].set(batch["obs"][4])
    changed["adv"] = batch["adv"].at[3].set(50.0)
    changed["target"] = batch["target"].at[3].set(-50.0)
    changed["logp"] = batch["logp"].at[3].set(-30.0)
    np.testing.assert_allclose(grads(changed), base, rtol=1e-5, atol=1e-7)
    # row 4 is a decision without an advantage: its advantage is ignored, its teacher not
    changed = dict(batch, adv=batch["adv"].at[4].set(50.0))
    np.testing.assert_allclose(grads(changed), base, rtol=1e-5, atol=1e-7)
    teacher = int(np.flatnonzero(mask[4])[-1])
    assert not np.allclose(grads(dict(batch, teacher=batch["teacher"].at[4].set(teacher))), base)
    assert not np.allclose(grads(dict(batch, adv=batch["adv"].at[0].set(50.0))), base)


def test_in_run_evaluation_equals_the_aec_games(trained, tmp_path: Path) -> None:
    config, params, _ = trained
    result = {k: float(v) for k, v in evaluate(config, params).items()}
    agent = load_agent(str(save_policy(tmp_path / "p.msgpack", params, config)))
    env = block_env.raw_env(**config.game)
    bot = RuleAgent()
    init = jax.jit(jax.vmap(config.env().init))
    totals = []
    for learner_seat in (0, 1):
        per_seat = []
        for state in _unbatch(init(eval_keys(config))):
            env.reset(options=reset_options(state))
            per_seat.append(_play(env, agent, bot, learner_seat))
        totals.append(per_seat)
    per_deal = (np.array(totals[0]) + np.array(totals[1])) / 2
    assert result["margin"] == pytest.approx(per_deal.mean(), abs=1e-5)
    assert result["se"] == pytest.approx(per_deal.std() / math.sqrt(len(per_deal)), rel=1e-4)


def _unbatch(states):
    size = states.current_player.shape[0]
    return [jax.tree.map(lambda x, i=i: x[i], states) for i in range(size)]


def _play(env, agent, bot, learner_seat: int) -> float:
    """The learner's reward over one episode of ``env`` (already reset)."""
    total = 0.0
    for name in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        seat = int(name.rsplit("_", 1)[1])
        env.step(agent.act(obs) if seat == learner_seat else bot.act(obs))
        total += env.rewards[f"player_{learner_seat}"]
    return total


def test_budget_stops_a_run_in_whole_chunks() -> None:
    config = PPOConfig(
        hidden=(16,), num_envs=8, rollout_steps=4, num_updates=10**6, epochs=1,
        num_minibatches=1, eval_every=2, eval_deals=4,
    )  # fmt: skip
    seen = []
    params, metrics = train(config, lambda u, m: seen.append((u, m)), every=2, minutes=0.05)
    done = metrics["updates"]
    assert 2 <= done < 10**6 and done % 2 == 0
    assert len(metrics["loss"]) == done and [u for u, _ in seen] == list(range(2, done + 1, 2))
    assert metrics["run_s"] < 0.05 * 60 + 10
    assert all(m["seconds"] > 0 and np.isfinite(m["eval_margin"]) for _, m in seen)


def test_bad_config_is_refused() -> None:
    with pytest.raises(ValueError, match="num_players=3"):
        PPOConfig(game={"num_players": 3})
    with pytest.raises(ValueError, match="num_minibatches=3000 must divide"):
        PPOConfig(num_envs=16, rollout_steps=8, num_minibatches=3000)
    with pytest.raises(ValueError, match="opener"):
        PPOConfig(game={"opener": "nobody"})
    with pytest.raises(ValueError, match="unknown kinds \\['league'\\]"):
        PPOConfig(opponents={"self": 1.0, "league": 1.0})
    with pytest.raises(ValueError, match="positive sum"):
        PPOConfig(opponents={"self": 0.0})
    with pytest.raises(ValueError, match="train_share=1.5"):
        PPOConfig(train_share=1.5)
    with pytest.raises(ValueError, match="teacher_coef=-1"):
        PPOConfig(teacher_coef=-1.0)
    assert PPOConfig(opponents={"rules": 2.0, "self": 2.0}).opponents["rules"] == 0.5


def test_policy_file_round_trips_without_pickle(trained, tmp_path: Path) -> None:
    config, params, _ = trained
    path = save_policy(tmp_path / "p.msgpack", params, config)
    assert not path.read_bytes().startswith(b"\x80")  # not a pickle stream
    net, loaded, header = load_policy(path)
    assert header["game"]["num_players"] == 2 and header["game"]["episode"] == "hand"
    assert net == network(config)
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(loaded), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    (tmp_path / "bad.msgpack").write_bytes(b"not msgpack at all")
    with pytest.raises(ValueError, match="not a block_env.jax PPO policy file"):
        load_policy(tmp_path / "bad.msgpack")


def test_agent_plays_legal_actions_on_the_aec_env(trained, tmp_path: Path) -> None:
    config, params, _ = trained
    path = save_policy(tmp_path / "p.msgpack", params, config)
    env = block_env.raw_env(num_players=2, episode="hand")
    agent = load_agent(str(path), env=env)
    for seed in range(3):
        env.reset(seed=seed)
        moves = 0
        for _agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            action = agent.act(obs)
            assert obs["action_mask"][action] == 1
            env.step(action)
            moves += 1
        assert moves > 0


def test_agent_refuses_a_file_for_another_game(trained, tmp_path: Path) -> None:
    config, params, _ = trained
    game = {"num_players": 2, "episode": "hand", "opener": "highest_double"}
    other = PPOConfig(game=game, **(TEACHING | {"num_updates": 1}))
    path = save_policy(tmp_path / "other.msgpack", params, other)
    env = block_env.raw_env(num_players=2, episode="hand")
    with pytest.raises(ValueError, match="highest_double.*rotate") as info:
        load_agent(str(path), env=env)
    assert "was trained for" in str(info.value)
    from block_env.evaluation.runner import evaluate as play

    with pytest.raises(ValueError, match="highest_double"):  # evaluate's own check agrees
        play([load_agent(str(path)), "rules"], num_players=2, hands=2)
