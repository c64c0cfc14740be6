"""``block_env.jax``'s interface: ``make``'s validation, pgx's conventions (illegal moves,
terminal states, the batched API test), pytrees under jit/vmap/scan, the batched deals
against one-game deals, ``step_autoreset`` against pgx's auto-reset, the reset options
and the SVG picture. The game itself is checked against the AEC env in
test_jax_vs_aec.py."""

from __future__ import annotations

import os

import numpy as np
import pytest

if os.environ.get("BLOCK_ENV_REQUIRE_JAX"):  # the extra CI script: missing JAX is a failure
    import jax
else:
    jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import block_env  # noqa: E402
import block_env.jax as bj  # noqa: E402


def play_keys(seed: int, count: int) -> jax.Array:
    return jax.random.split(jax.random.PRNGKey(seed), count)


def random_legal(mask: jax.Array, key: jax.Array) -> jax.Array:
    """One uniformly random legal action per row of ``mask``."""
    logits = jnp.where(mask, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


def same_states(a: bj.State, b: bj.State) -> None:
    for (path, x), y in zip(jax.tree_util.tree_leaves_with_path(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=str(path))


# ---- make -------------------------------------------------------------------------------

BAD_CONFIGS = [
    {"num_players": 5},
    {"num_players": True},
    {"opener": "lowest"},
    {"episode": "set"},
    {"reward": "score"},
    {"partnership": True, "num_players": 3},
    {"partnership": 1},
    {"target_score": 0},
    {"max_pip": 7},
    {"max_pip": 3, "hand_size": 6},
    {"obs_type": "pixels"},
]


@pytest.mark.parametrize("cfg", BAD_CONFIGS, ids=str)
def test_make_refuses_what_raw_env_refuses_with_the_same_message(cfg: dict) -> None:
    with pytest.raises(ValueError) as aec_error:
        block_env.raw_env(**cfg)
    with pytest.raises(ValueError) as jax_error:
        bj.make(**cfg)
    assert str(jax_error.value) == str(aec_error.value)


def test_make_refuses_unknown_keywords_as_raw_env_does() -> None:
    with pytest.raises(TypeError):
        block_env.raw_env(players=2)
    with pytest.raises(TypeError, match="players"):
        bj.make(players=2)


@pytest.mark.parametrize(
    "cfg",
    [
        {},
        {"num_players": 4, "partnership": True, "obs_type": "information_state"},
        {"num_players": 3, "max_pip": 4, "hand_size": 4},
    ],
    ids=str,
)
def test_sizes_match_the_aec_spaces(cfg: dict) -> None:
    env = bj.make(**cfg)
    aec = block_env.raw_env(**cfg)
    space = aec.observation_space("player_0")
    assert env.num_actions == aec.action_space("player_0").n
    assert env.observation_shape == space["observation"].shape
    assert env.num_players == aec.config.num_players
    assert env.id == "block" and env.version == "v1"
    state = jax.jit(env.init)(jax.random.PRNGKey(0))
    assert state.observation.shape == env.observation_shape
    assert state.legal_action_mask.shape == (env.num_actions,)
    assert state.rewards.shape == (env.num_players,)


def test_state_dtypes_follow_pgx() -> None:
    state = jax.jit(bj.make().init)(jax.random.PRNGKey(3))
    assert state.current_player.dtype == jnp.int32
    assert state.terminated.dtype == jnp.bool_ and state.truncated.dtype == jnp.bool_
    assert state.rewards.dtype == jnp.float32
    assert state.legal_action_mask.dtype == jnp.bool_
    assert state.observation.dtype == jnp.float32
    assert int(state._step_count) == 0


# ---- pgx --------------------------------------------------------------------------------


def test_is_a_pgx_env_where_pgx_is_installed() -> None:
    pgx = pytest.importorskip("pgx")
    env = bj.make()
    assert bj.HAS_PGX
    assert isinstance(env, pgx.Env)
    assert isinstance(env.init(jax.random.PRNGKey(0)), pgx.State)


def test_pgx_batched_api_test_passes() -> None:
    pytest.importorskip("pgx")
    from pgx._src.api_test import api_test_batch

    api_test_batch(bj.make(num_players=4, partnership=True, episode="hand"), num=3)


# ---- pgx's conventions ------------------------------------------------------------------


@pytest.mark.parametrize("num_players", [2, 4])
def test_an_illegal_action_ends_the_game_with_pgx_penalty(num_players: int) -> None:
    env = bj.make(num_players=num_players)
    state = jax.jit(env.init)(jax.random.PRNGKey(1))
    illegal = int(np.flatnonzero(~np.asarray(state.legal_action_mask))[0])
    for action in (illegal, -1, env.num_actions):
        after = jax.jit(env.step)(state, action)
        seat = int(state.current_player)
        want = np.full(num_players, num_players - 1.0, np.float32)
        want[seat] = -1.0
        np.testing.assert_array_equal(np.asarray(after.rewards), want)
        assert bool(after.terminated)
        assert np.asarray(after.legal_action_mask).all()
        np.testing.assert_array_equal(after._hands, state._hands)  # the move is not made
        assert int(after._step_count) == 1


def test_a_terminated_state_steps_to_itself_with_zero_rewards() -> None:
    env = bj.make(episode="hand")
    step = jax.jit(env.step)
    state = jax.jit(env.init)(jax.random.PRNGKey(2))
    key = jax.random.PRNGKey(5)
    while not bool(state.terminated):
        key, sub = jax.random.split(key)
        state = step(state, random_legal(state.legal_action_mask, sub))
    assert np.asarray(state.rewards).any()
    again = step(state, 0)
    np.testing.assert_array_equal(np.asarray(again.rewards), 0.0)
    same_states(again.replace(rewards=state.rewards), state)


# ---- pytrees under transformations ------------------------------------------------------


def scan_play(env: bj.BlockEnv, state: bj.State, key: jax.Array, steps: int) -> bj.State:
    """``steps`` random legal moves of every game of a batch, in one ``lax.scan``."""

    def body(carry, key):
        actions = random_legal(carry.legal_action_mask, key)
        keys = jax.random.split(key, actions.shape[0])
        return jax.vmap(env.step_autoreset)(carry, actions, keys), carry.rewards

    return jax.lax.scan(body, state, jax.random.split(key, steps))


def test_jit_vmap_and_scan_play_and_are_deterministic() -> None:
    env = bj.make(num_players=3)
    init = jax.jit(jax.vmap(env.init))
    play = jax.jit(lambda s, k: scan_play(env, s, k, 60))
    start = init(play_keys(0, 16))
    end, rewards = play(start, jax.random.PRNGKey(9))
    again, rewards_again = play(init(play_keys(0, 16)), jax.random.PRNGKey(9))
    same_states(end, again)
    np.testing.assert_array_equal(rewards, rewards_again)
    assert rewards.shape == (60, 16, 3) and np.asarray(rewards).any()
    assert jax.tree.structure(end) == jax.tree.structure(start)


def test_typed_and_raw_keys_deal_alike() -> None:
    env = bj.make()
    raw = jax.jit(env.init)(jax.random.PRNGKey(4))
    typed = jax.jit(env.init)(jax.random.wrap_key_data(jax.random.PRNGKey(4)))
    same_states(raw, typed)
    other = jax.jit(env.init)(jax.random.PRNGKey(5))
    assert not np.array_equal(other._hands, raw._hands)


def test_deals_are_full_disjoint_and_spread_over_the_set() -> None:
    env = bj.make(num_players=3, max_pip=4, hand_size=4)
    states = jax.jit(jax.vmap(env.init))(play_keys(7, 3000))
    hands = np.asarray(states._hands)
    t = env.config.tiles.num_tiles
    held = (hands[:, :, None] >> np.arange(t)) & 1  # (games, seat, tile)
    assert (held.sum(axis=2) == 4).all()
    assert (held.sum(axis=1).sum(axis=1) == 12).all() and held.sum(axis=1).max() == 1
    share = held.mean(axis=0)  # each seat holds each tile 4/15 of the time
    assert np.abs(share - 4 / t).max() < 0.04
    leaders = np.bincount(np.asarray(states._leader), minlength=3) / 3000
    assert np.abs(leaders - 1 / 3).max() < 0.04


# ---- deals made only where needed (the batching rule) -----------------------------------


def test_a_large_batch_steps_as_small_batches_do() -> None:
    """From 256 games the batching rule deals only for the games that need a deal (or for
    all when more than an eighth do): every state must equal what the same games give in
    batches of 32, where every game is dealt for."""
    env = bj.make(num_players=4, partnership=True, opener="highest_double", episode="hand")
    big = jax.jit(jax.vmap(env.step_autoreset))
    small = jax.jit(jax.vmap(env.step_autoreset))
    state = jax.jit(jax.vmap(env.init))(play_keys(11, 512))
    key = jax.random.PRNGKey(12)
    few = 0  # steps where some games, at most an eighth, were dealt for
    for _ in range(30):
        key, k1, k2 = jax.random.split(key, 3)
        actions = random_legal(state.legal_action_mask, k1)
        keys = jax.random.split(k2, 512)
        after = big(state, actions, keys)
        parts = [
            small(*jax.tree.map(lambda x, i=i: x[i : i + 32], (state, actions, keys)))
            for i in range(0, 512, 32)
        ]
        same_states(after, jax.tree.map(lambda *xs: jnp.concatenate(xs), *parts))
        few += 0 < int(np.asarray(after.terminated).sum()) <= 512 // 8
        state = after
    assert few >= 10


def test_a_batch_where_every_game_needs_a_deal_takes_the_full_path() -> None:
    env = bj.make(num_players=3, max_pip=6, hand_size=1)  # every move ends its hand
    state = jax.jit(jax.vmap(env.init))(play_keys(13, 256))
    actions = random_legal(state.legal_action_mask, jax.random.PRNGKey(14))
    after = jax.jit(jax.vmap(lambda s, a: env.step(s, a)))(state, actions)
    one = jax.jit(lambda s, a: env.step(s, a))
    for i in (0, 97, 255):
        same_states(jax.tree.map(lambda x, i=i: x[i], after), one(state_i(state, i), actions[i]))
    assert (np.asarray(after._hand_number) + np.asarray(after.terminated) >= 1).all()


def state_i(state: bj.State, i: int) -> bj.State:
    return jax.tree.map(lambda x: x[i], state)


# ---- step_autoreset ---------------------------------------------------------------------


def test_step_autoreset_is_pgx_auto_reset_with_one_key() -> None:
    """``step_autoreset(s, a, k)`` equals ``step`` then, where the episode ended, ``init(k)``
    carrying the step's rewards and terminated flag, illegal moves included."""
    env = bj.make(num_players=2, episode="hand", max_pip=4)
    init = jax.vmap(env.init)

    def composed(state, actions, keys):
        cleared = state.replace(
            terminated=jnp.zeros_like(state.terminated),
            rewards=jnp.zeros_like(state.rewards),
        )
        after = jax.vmap(env.step)(cleared, actions, keys)
        fresh = init(keys).replace(terminated=after.terminated, rewards=after.rewards)
        return jax.tree.map(
            lambda new, old: jnp.where(
                after.terminated.reshape((-1,) + (1,) * (old.ndim - 1)), new, old
            ),
            fresh,
            after,
        )

    fused, plain = jax.jit(jax.vmap(env.step_autoreset)), jax.jit(composed)
    state = jax.jit(init)(play_keys(15, 64))
    key = jax.random.PRNGKey(16)
    ended = restarted_illegal = 0
    for step in range(60):
        key, k1, k2 = jax.random.split(key, 3)
        actions = random_legal(state.legal_action_mask, k1)
        if step % 3 == 2:  # illegal moves in a few games and in the games just restarted
            illegal = (jnp.arange(64) < 4) | state.terminated
            actions = jnp.where(illegal, -1, actions)
            restarted_illegal += int(state.terminated.sum())
        keys = jax.random.split(k2, 64)
        after = fused(state, actions, keys)
        same_states(after, plain(state, actions, keys))
        ended += int(after.terminated.sum())
        state = after
    assert ended >= 64 and restarted_illegal >= 5


# ---- reset options and pictures ---------------------------------------------------------


def test_reset_options_of_one_state_and_of_a_batch() -> None:
    rotate = bj.make(num_players=3)
    state = jax.jit(rotate.init)(jax.random.PRNGKey(17))
    options = bj.reset_options(state)
    assert set(options) == {"hands", "leader", "scores"}
    assert options["leader"] == int(state.current_player)
    assert options["scores"] == [0, 0, 0]
    assert all(len(h) == 5 for h in options["hands"])
    aec = block_env.raw_env(num_players=3)
    aec.reset(options=options)
    np.testing.assert_array_equal(
        aec.observe(aec.agent_selection)["observation"], np.asarray(state.observation)
    )
    batch = jax.jit(jax.vmap(bj.make(opener="highest_double").init))(play_keys(18, 3))
    listed = bj.reset_options(batch)
    assert len(listed) == 3 and all("leader" not in o for o in listed)


def test_svg_shows_every_game(tmp_path) -> None:
    batch = jax.jit(jax.vmap(bj.make(num_players=2).init))(play_keys(19, 2))
    svg = batch.to_svg()
    assert svg.startswith("<svg") and "game 0" in svg and "game 1" in svg
    assert svg.count("seat 0") == 2
    path = tmp_path / "state.svg"
    state_i(batch, 0).save_svg(path, color_theme="dark")
    assert path.read_text().startswith("<svg") and "game 0" not in path.read_text()


def test_without_fusion_barriers_the_game_is_the_same(monkeypatch) -> None:
    """Off the CPU the rules run without fusion barriers and without dealing only where
    needed: that code path, traced here on the CPU, gives the same states."""
    from block_env.jax import game

    cfg = {"num_players": 3, "opener": "highest_double", "hand_size": 3}
    env = bj.make(**cfg, obs_type="information_state")
    with_barriers = jax.jit(jax.vmap(env.step_autoreset))
    init = jax.jit(jax.vmap(env.init))
    state = init(play_keys(21, 256))
    warm = random_legal(state.legal_action_mask, jax.random.PRNGKey(0)), play_keys(0, 256)
    with_barriers(state, *warm)  # traced (and kept) with the barriers
    monkeypatch.setattr(game, "_barriers", lambda: False)
    plain = jax.jit(jax.vmap(lambda s, a, k: env.step_autoreset(s, a, k)))
    same_states(jax.jit(jax.vmap(lambda k: env.init(k)))(play_keys(21, 256)), state)
    key, hands = jax.random.PRNGKey(22), 0
    for _ in range(12):
        key, k1, k2 = jax.random.split(key, 3)
        actions = random_legal(state.legal_action_mask, k1)
        keys = jax.random.split(k2, 256)
        after = with_barriers(state, actions, keys)
        same_states(plain(state, actions, keys), after)
        hands += int((after._turn == 0).sum())
        state = after
    assert hands >= 256


def test_without_pgx_the_env_is_the_same() -> None:
    """Where pgx is absent the state and env come from stand-ins with the same fields: the
    same states, in a process that cannot import pgx."""
    import subprocess
    import sys

    script = (
        "import sys; sys.modules['pgx'] = None\n"
        "import jax, numpy as np, block_env.jax as bj\n"
        "assert not bj.HAS_PGX\n"
        "env = bj.make(num_players=3)\n"
        "s = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.PRNGKey(5), 8))\n"
        "s = jax.jit(jax.vmap(env.step))(s, s.legal_action_mask.argmax(axis=1))\n"
        "print(type(s).__mro__[1].__module__)\n"
        "print(np.asarray(s.observation).sum(), np.asarray(s._hands).sum())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[0] == "block_env.jax._compat"
    env = bj.make(num_players=3)
    s = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.PRNGKey(5), 8))
    s = jax.jit(jax.vmap(env.step))(s, s.legal_action_mask.argmax(axis=1))
    assert out[1] == f"{np.asarray(s.observation).sum()} {np.asarray(s._hands).sum()}"
