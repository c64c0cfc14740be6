"""``block_env.jax.ppo`` and its agent adapter: a tiny compiled training run changes the
parameters with finite losses, the policy file round-trips without pickle, and the adapter
plays only legal actions on the AEC env and refuses a file trained for another game."""

from __future__ import annotations

import os
from dataclasses import replace
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

import block_env  # noqa: E402
from block_env.jax.agent import load_agent  # noqa: E402
from block_env.jax.ppo import (  # noqa: E402
    ActorCritic,
    PPOConfig,
    load_policy,
    make_train,
    save_policy,
    train,
)

TINY = {"num_envs": 16, "rollout_steps": 8, "num_updates": 2, "epochs": 2, "num_minibatches": 2}


@pytest.fixture(scope="module")
def trained() -> tuple[PPOConfig, object, dict]:
    config = PPOConfig(hidden=(32,), **TINY)
    params, metrics = train(config)
    return config, params, metrics


def test_training_runs_in_jit_with_finite_losses_and_moves_params(trained) -> None:
    config, params, metrics = trained
    for name in ("loss", "pg_loss", "v_loss", "entropy", "approx_kl"):
        values = np.asarray(metrics[name])
        assert values.shape == (config.num_updates,), name
        assert np.isfinite(values).all(), name
    assert np.asarray(metrics["hands"]).sum() > 0  # games ended and restarted
    # the initial parameters (the network's init with the run's key) must all move
    env = config.env()
    k_net, k_env, _ = jax.random.split(jax.random.PRNGKey(config.seed), 3)
    states = jax.vmap(env.init)(jax.random.split(k_env, config.num_envs))
    net = ActorCritic(num_actions=env.num_actions, hidden=config.hidden)
    initial = net.init(k_net, states.observation, states.legal_action_mask)
    for a, b in zip(jax.tree.leaves(initial), jax.tree.leaves(params), strict=True):
        assert not np.allclose(np.asarray(a), np.asarray(b))
    # one update of the same run stops elsewhere
    one, _ = jax.jit(make_train(replace(config, num_updates=1)))(jax.random.PRNGKey(config.seed))
    assert not np.allclose(jax.tree.leaves(one)[0], jax.tree.leaves(params)[0])


def test_bad_config_is_refused() -> None:
    with pytest.raises(ValueError, match="num_players=3"):
        PPOConfig(game={"num_players": 3})
    with pytest.raises(ValueError, match="num_minibatches=3 must divide"):
        PPOConfig(num_envs=16, rollout_steps=8, num_minibatches=3)
    with pytest.raises(ValueError, match="opener"):
        PPOConfig(game={"opener": "nobody"})


def test_policy_file_round_trips_without_pickle(trained, tmp_path: Path) -> None:
    config, params, _ = trained
    path = save_policy(tmp_path / "p.msgpack", params, config)
    assert not path.read_bytes().startswith(b"\x80")  # not a pickle stream
    _, loaded, header = load_policy(path)
    assert header["game"]["num_players"] == 2 and header["game"]["episode"] == "hand"
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
    other = PPOConfig(game=game, hidden=(32,))
    path = save_policy(tmp_path / "other.msgpack", params, other)
    env = block_env.raw_env(num_players=2, episode="hand")
    with pytest.raises(ValueError, match="highest_double.*rotate") as info:
        load_agent(str(path), env=env)
    assert "was trained for" in str(info.value)
    from block_env.evaluation.runner import evaluate

    with pytest.raises(ValueError, match="highest_double"):  # evaluate's own check agrees
        evaluate([load_agent(str(path)), "rules"], num_players=2, hands=2)
