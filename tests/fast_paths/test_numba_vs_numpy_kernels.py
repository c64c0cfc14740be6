"""The compiled kernels (``kernels="numba"``) against the numpy kernels: same seed, same
actions, every output of every step compared bit for bit, over random games (hypothesis) and
the corners the compiled code handles on its own (the mask rows written 64 flags at a time,
scores above 255, the history, forced passes, a refused action); and their two helpers (the
deal from random keys, the choice of a random legal action) against the numpy originals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from block_env.batched import (
    BatchedEnv,  # noqa: E402
    numba_kernels,  # noqa: E402
)
from block_env.batched.backend import NumpyBackend, _select_random_bit_words  # noqa: E402
from block_env.batched.deals import _hands_from_permutations  # noqa: E402
from block_env.config import BlockConfig  # noqa: E402


def flat(outputs: tuple) -> list[np.ndarray]:
    """Every array of a reset/step result, info arrays by key, as comparable bytes."""
    arrays = []
    for x in outputs:
        if isinstance(x, dict):
            arrays += [np.asarray(x[k]) for k in sorted(x)]
        else:
            arrays.append(np.asarray(x))
    return arrays


def assert_same(a: tuple, b: tuple, where: str) -> None:
    for x, y in zip(flat(a), flat(b), strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape, where
        assert x.flags.c_contiguous and y.flags.c_contiguous, where
        assert x.tobytes() == y.tobytes(), where  # bit for bit (-0.0 != +0.0)


def run_both(kwargs: dict, num_envs: int, steps: int, seed: int, options: list | None = None):
    """Step a numpy-kernel and a compiled env side by side on the same seed and actions."""
    ref = BatchedEnv(num_envs, kernels="numpy", **kwargs)
    fast = BatchedEnv(num_envs, kernels="numba", **kwargs)
    assert (ref.kernels, fast.kernels) == ("numpy", "numba")
    assert_same(
        ref.reset(seed=seed, options=options), fast.reset(seed=seed, options=options), "reset"
    )
    for step in range(steps):
        actions = ref.sample_actions()
        assert np.array_equal(actions, fast.sample_actions())
        assert_same(ref.step(actions), fast.step(actions), f"step {step}")
    for key, value in ref.snapshot().items():
        assert np.array_equal(value, fast.snapshot()[key]), key


@st.composite
def games(draw: st.DrawFn) -> dict:
    n = draw(st.sampled_from([2, 3, 4]))
    cfg = {
        "num_players": n,
        "partnership": n == 4 and draw(st.booleans()),
        "opener": draw(st.sampled_from(["rotate", "highest_double"])),
        "episode": draw(st.sampled_from(["match", "hand"])),
        "reward": draw(st.sampled_from(["zero_sum", "points", "win"])),
        "max_pip": draw(st.integers(2, 6)),
        "target_score": draw(st.sampled_from([5, 20, 61, 300])),
    }
    if draw(st.booleans()):
        cfg["hand_size"] = draw(st.integers(1, 9))
    try:
        BlockConfig(**cfg)
    except ValueError:
        assume(False)
    cfg["auto_pass"] = draw(st.booleans())
    cfg["obs_type"] = draw(st.sampled_from(["observation", "information_state"]))
    return cfg


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kwargs=games(), num_envs=st.integers(1, 40), seed=st.integers(0, 2**32), data=st.data())
def test_compiled_kernels_match_numpy_kernels(kwargs: dict, num_envs: int, seed: int, data) -> None:
    """Random games, batch sizes and seeds: the compiled kernels hand out what the numpy
    kernels hand out, on both deal sources."""
    kwargs["deal_source"] = data.draw(st.sampled_from(["fast", "aec"]))
    run_both(kwargs, num_envs, steps=120, seed=seed)


@pytest.mark.parametrize("num_envs", [1, 2, 3, 5, 64])
@pytest.mark.parametrize("max_pip", [2, 3, 6])
def test_mask_rows_near_the_end_of_the_batch(num_envs: int, max_pip: int) -> None:
    """Mask rows are written 64 flags at a time where the flags past the row land in rows
    written later: small sets (13 actions: one row's 64 flags cover five rows) and batches of
    a few games hit the rows near the end, which are written exactly."""
    run_both({"num_players": 2, "max_pip": max_pip}, num_envs, steps=60, seed=num_envs)


def test_scores_above_255_and_final_observations() -> None:
    """Targets above 255 (every observation's scores rewritten as floats) and matches ending
    often (final observations of every seat), from scores near the target."""
    cfg = {"num_players": 4, "partnership": True, "target_score": 400, "reward": "points"}
    options = [{"scores": [390, 385, 390, 385]}] * 16
    run_both(cfg, 16, steps=200, seed=3, options=options)
    run_both({"num_players": 3, "target_score": 256}, 16, steps=200, seed=4)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_refused_action_leaves_the_state_unchanged(backend: str) -> None:
    """An illegal or out-of-range action is refused with the numpy kernels' message, before
    anything moves."""
    if backend == "torch":
        pytest.importorskip("torch")
    envs = [BatchedEnv(4, backend=backend, kernels=k) for k in ("numpy", "numba")]
    for env in envs:
        env.reset(seed=5)
    legal = [int(w) for w in np.asarray(envs[0].engine.legal)]
    fine = np.array([min(a for a in range(57) if w >> a & 1) for w in legal], dtype=np.int64)
    bad = next(a for a in range(57) if not legal[2] >> a & 1)
    for game, action in ((2, bad), (3, 57), (0, -1)):
        acts = fine.copy()
        acts[game] = action
        messages = []
        for env in envs:
            before = env.snapshot()
            with pytest.raises(ValueError) as err:
                env.step(acts)
            messages.append(str(err.value))
            after = env.snapshot()
            assert all(np.array_equal(before[k], after[k]) for k in before)
        assert messages[0] == messages[1]


def test_hands_from_permutations_match_numpy() -> None:
    """The compiled deal of permutations is the numpy kernels' (a float64 matrix product) for
    every player count, hand size and tile set."""
    rng = np.random.default_rng(0)
    backend = NumpyBackend()
    for n, k, max_pip in ((2, 7, 6), (3, 5, 6), (4, 5, 6), (4, 7, 6), (2, 14, 6), (2, 3, 3)):
        config = BlockConfig(num_players=n, hand_size=k, max_pip=max_pip)
        tiles = config.tiles.num_tiles
        perm = np.argsort(rng.random((300, tiles)), axis=1)
        want = _hands_from_permutations(backend, config, perm)
        assert np.array_equal(numba_kernels.hands_from_permutations(perm, n, k), want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_random_legal_choice_matches_numpy(dtype: type) -> None:
    """The compiled choice of a set bit by a uniform draw is numpy's (float32 draws, torch's,
    ranked in float32), at the edges of [0, 1) too."""
    rng = np.random.default_rng(1)
    words = rng.integers(1, 2**57, 5000)
    words[:64] = 1 << np.arange(57).repeat(2)[:64]  # single bits
    words[64:128] = (1 << 57) - 1  # every action legal
    u = rng.random(5000).astype(dtype)
    u[:10] = 0.0
    u[10:20] = np.nextafter(dtype(1.0), dtype(0.0))
    want = _select_random_bit_words(words.view(np.uint64), u)
    assert np.array_equal(numba_kernels.select_bits(words, u), want)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", ["int8", "bool", "int64", "float32"])
def test_sampling_from_a_mask_matches(backend: str, dtype: str) -> None:
    """``sample_actions(mask)`` draws and chooses as without the compiled kernels, for masks
    of any dtype (nonzero = legal), including masks the caller edited; a row without a legal
    action is refused with the same message."""
    if backend == "torch":
        torch = pytest.importorskip("torch")
    envs = [BatchedEnv(64, backend=backend, kernels=k, num_players=3) for k in ("numpy", "numba")]
    outs = [env.reset(seed=9) for env in envs]
    rng = np.random.default_rng(0)
    for _ in range(20):
        mask = np.asarray(outs[0][1]).astype(dtype)
        mask[rng.random(mask.shape) < 0.05] = 1  # edited by the caller: more legal actions
        given = torch.from_numpy(mask) if backend == "torch" else mask
        picks = [np.asarray(env.sample_actions(given)) for env in envs]
        assert np.array_equal(picks[0], picks[1])
        legal = np.asarray(outs[0][1]).astype(bool)
        actions = np.asarray(outs[0][1]).argmax(1)  # a legal action each, to move on
        outs = [env.step(actions) for env in envs]
        assert legal[np.arange(64), actions].all()
    empty = np.zeros((3, 57), dtype=dtype)
    empty[0, 5] = 1
    given = torch.from_numpy(empty) if backend == "torch" else empty
    for env in envs:
        with pytest.raises(ValueError, match="mask row 1 has no legal action to sample"):
            env.sample_actions(given)
