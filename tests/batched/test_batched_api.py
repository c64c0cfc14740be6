"""The batched engine's interface: shapes and dtypes, bad input raising ValueError with a
useful message, the lazy torch import, and the backends agreeing with each other."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from batched_helpers import BACKENDS, engine

from block_env.batched import BatchedEnv
from block_env.batched.backend import numba_available
from block_env.env import INFO_KEYS
from block_env.observation import STANDARD_OBS_DIM
from block_env.tiles import STANDARD_TILES


def to_np(x) -> np.ndarray:
    if type(x).__module__.startswith("torch"):
        return x.cpu().numpy()
    return np.asarray(x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_shapes_and_dtypes(backend: str) -> None:
    env = BatchedEnv(5, **engine(backend), num_players=3)
    obs, mask, seat = env.reset(seed=0)
    assert tuple(obs.shape) == (5, STANDARD_OBS_DIM) and tuple(mask.shape) == (5, 57)
    obs, mask, seat, rewards, terminated, info = env.step(env.sample_actions(mask))
    assert tuple(seat.shape) == (5,) and tuple(rewards.shape) == (5, 3)
    assert tuple(terminated.shape) == (5,)
    assert set(info) == {*INFO_KEYS, "final_index", "final_obs"}
    for key in ("hand_pips", "hand_points", "match_winners"):
        assert tuple(info[key].shape) == (5, 3), key
    for key in ("hand_over", "hand_winner", "hand_blocked", "match_over", "match_winner"):
        assert tuple(info[key].shape) == (5,), key
    assert tuple(info["final_obs"].shape)[1:] == (3, STANDARD_OBS_DIM)
    space = env.single_observation_space
    assert all(space.contains(row) for row in to_np(obs))
    assert env.single_action_space.n == 57
    names = [str(x.dtype).split(".")[-1] for x in (obs, mask, seat, rewards, terminated)]
    assert names == ["float32", "int8", "int64", "float32", "bool"]
    if backend.startswith("torch"):
        import torch

        assert all(isinstance(x, torch.Tensor) for x in (obs, mask, seat, rewards, terminated))


def test_numpy_and_torch_agree_given_the_same_deals() -> None:
    """With the AEC deal source both backends (and torch's two kernels) play the very same
    games, bit for bit."""
    envs = [BatchedEnv(8, **engine(b), deal_source="aec", num_players=4) for b in BACKENDS]
    outs = [env.reset(seed=9) for env in envs]
    rng = np.random.default_rng(0)
    for _ in range(60):
        for other in outs[1:]:
            for got, want in zip(other, outs[0]):
                if isinstance(want, dict):
                    assert all(np.array_equal(to_np(got[k]), to_np(want[k])) for k in want)
                else:
                    np.testing.assert_array_equal(to_np(got), to_np(want))
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in to_np(outs[0][1])])
        outs = [env.step(actions) for env in envs]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_envs": 0}, "num_envs=0"),
        ({"num_envs": 2.5}, "num_envs=2.5"),
        ({"num_envs": True}, "num_envs=True"),
        ({"num_envs": 2, "backend": "jax"}, "backend='jax'.*numpy, torch"),
        ({"num_envs": 2, "device": "cuda"}, "device='cuda'.*backend='numpy'"),
        ({"num_envs": 2, "backend": "torch", "device": "nonsense"}, "device='nonsense'"),
        ({"num_envs": 2, "deal_source": "slow"}, "deal_source='slow'.*fast, aec"),
        ({"num_envs": 2, "auto_pass": "yes"}, "auto_pass='yes'"),
        ({"num_envs": 2, "players": 3}, "unknown option.*players"),
        ({"num_envs": 2, "num_players": 5}, "num_players=5"),
        ({"num_envs": 2, "num_players": 3, "partnership": True}, "partnership=True"),
        ({"num_envs": 2, "reward": "money"}, "reward='money'"),
        ({"num_envs": 2, "kernels": "jax"}, "kernels='jax'.*auto, numpy, numba, torch"),
        ({"num_envs": 2, "kernels": "torch"}, "kernels='torch' needs backend='torch'"),
    ],
)
def test_bad_construction_raises_value_error(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        BatchedEnv(**kwargs)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_actions_raise_value_error_and_change_nothing(backend: str) -> None:
    env = BatchedEnv(3, **engine(backend), num_players=2)
    _, mask, _ = env.reset(seed=4)
    mask = to_np(mask)
    before = env.snapshot()
    good = np.array([np.flatnonzero(m)[0] for m in mask])
    bad_shapes = [good[:2], good[:, None], np.int64(good[0]), np.concatenate([good, good])]
    for actions in bad_shapes:
        with pytest.raises(ValueError, match="shape"):
            env.step(actions)
    for actions in (good.astype(np.float64), good.astype(bool)):
        with pytest.raises(ValueError, match="integers"):
            env.step(actions)
    illegal = int(np.flatnonzero(mask[1] == 0)[0])
    for wrong, shown in ((illegal, illegal), (57, 57), (-1, -1)):
        actions = good.copy()
        actions[1] = wrong
        legal = ", ".join(str(a) for a in np.flatnonzero(mask[1]))
        with pytest.raises(
            ValueError, match=rf"actions\[1\]={shown} is not legal in game 1"
        ) as err:
            env.step(actions)
        assert "legal actions: " + legal.split(",")[0] in str(err.value)
        assert all(f"{a} (" in str(err.value) for a in np.flatnonzero(mask[1]))
    after = env.snapshot()
    assert all(np.array_equal(before[k], after[k]) for k in before)
    env.step(good)  # the legal actions still work


@pytest.mark.parametrize("backend", BACKENDS)
def test_sample_actions_rejects_masks_without_legal_actions(backend: str) -> None:
    env = BatchedEnv(2, **engine(backend))
    _, mask, _ = env.reset(seed=0)
    empty = mask * 0
    empty[0] = mask[0]
    with pytest.raises(ValueError, match="mask row 1 has no legal action"):
        env.sample_actions(empty)
    with pytest.raises(ValueError, match="shape"):
        env.sample_actions(mask[0])


def test_bad_reset_arguments_raise_value_error() -> None:
    env = BatchedEnv(2, num_players=2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, dtype=np.int64))
    for seed in (-1, "7", 1.5, True):
        with pytest.raises(ValueError, match="seed="):
            env.reset(seed=seed)
    with pytest.raises(ValueError, match="list of 2 entries"):
        env.reset(options={"leader": 0})
    with pytest.raises(ValueError, match="3 entries: expected 2"):
        env.reset(options=[None, None, None])
    dup = {"hands": [[(0, 0), (1, 1)], [(1, 1)]]}
    with pytest.raises(ValueError, match=r"options\[1\]: tile 7 appears twice"):
        env.reset(options=[None, dup])
    with pytest.raises(ValueError, match=r"options\[0\].*leader"):
        env.reset(options=[{"leader": 2}, None])


def test_reset_options_set_up_the_position() -> None:
    hands = [[(0, 1), (2, 3)], [(1, 1), (4, 6)], [(5, 5)]]
    env = BatchedEnv(2, num_players=3)
    obs, mask, seat = env.reset(
        seed=0, options=[{"hands": hands, "leader": 2, "scores": [5, 0, 9]}, None]
    )
    snap = env.snapshot()
    assert seat[0] == 2 and snap["leader"][0] == 2
    assert snap["scores"][0].tolist() == [5, 0, 9] and not snap["scores"][1].any()
    want = [sum(1 << STANDARD_TILES.index(t) for t in h) for h in hands]
    assert snap["hands"][0].tolist() == want
    assert np.flatnonzero(mask[0]).tolist() == [2 * STANDARD_TILES.index((5, 5))]
    assert snap["out_of_play"][0] == 23 and snap["out_of_play"][1] == 13


def test_numpy_backend_never_imports_torch() -> None:
    code = (
        "import sys, numpy as np\n"
        "from block_env.batched import BatchedEnv\n"
        "env = BatchedEnv(4, num_players=4, auto_pass=True)\n"
        "obs, mask, seat = env.reset(seed=0)\n"
        "for _ in range(30):\n"
        "    obs, mask, seat, r, t, info = env.step(env.sample_actions(mask))\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_auto_pass_never_asks_for_a_forced_pass(backend: str) -> None:
    env = BatchedEnv(256, **engine(backend), num_players=4, auto_pass=True)
    obs, mask, seat = env.reset(seed=2)
    passes = 0
    for _ in range(100):
        m = to_np(mask)
        assert not ((m[:, 56] == 1) & (m.sum(1) == 1)).any()
        voids_before = env.snapshot()["voids"]
        obs, mask, seat, rewards, terminated, info = env.step(env.sample_actions(mask))
        new_voids = env.snapshot()["voids"] & ~voids_before
        passes += int((new_voids != 0).any(1).sum())
    assert passes > 0  # forced passes happened, and were recorded as voids


def test_kernels_of_each_backend() -> None:
    """numpy computes with the compiled kernels where numba is installed (else numpy's); torch
    on the CPU likewise unless told otherwise, and hands out torch tensors either way."""
    torch = pytest.importorskip("torch")
    auto = "numba" if numba_available() else "numpy"
    assert BatchedEnv(2).kernels == auto
    assert BatchedEnv(2, kernels="numpy").kernels == "numpy"
    assert BatchedEnv(2, backend="torch").kernels == auto
    assert BatchedEnv(2, backend="torch", kernels="numpy").kernels == "numpy"
    assert BatchedEnv(2, backend="torch", kernels="torch").kernels == "torch"
    for kernels in ("numpy", "numba", "torch"):
        env = BatchedEnv(3, backend="torch", kernels=kernels, num_players=3)
        out = env.reset(seed=1)
        out += env.step(env.sample_actions())[3:]
        arrays = list(out[:-1]) + list(out[-1].values())
        assert all(isinstance(x, torch.Tensor) and x.device.type == "cpu" for x in arrays)


def test_numba_kernels_need_numba(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without numba, kernels="numba" is refused with the install command, and "auto" falls
    back to the numpy kernels."""
    import block_env.batched.choice as choice

    monkeypatch.setattr(choice, "numba_available", lambda: False)
    with pytest.raises(ValueError, match=r"kernels='numba' needs numba.*block-env\[fast\]"):
        BatchedEnv(2, kernels="numba")
    assert BatchedEnv(2).kernels == "numpy"
    assert BatchedEnv(2, backend="torch").kernels == "numpy"


def test_numba_kernels_need_the_cpu() -> None:
    with pytest.raises(ValueError, match="kernels='numba' needs the CPU"):
        BatchedEnv(2, backend="torch", device="meta", kernels="numba")


@pytest.mark.parametrize("kernels", ["numpy", "auto"])
def test_state_dict_continues_the_same_games(kernels: str) -> None:
    """An env loaded from another's ``state_dict`` mid-match plays on exactly as it would."""
    a = BatchedEnv(6, kernels=kernels, num_players=3, auto_pass=True)
    _, mask, _ = a.reset(seed=3)
    for _ in range(9):
        mask = a.step(a.sample_actions(mask))[1]
    state = a.state_dict()
    b = BatchedEnv(6, kernels=kernels, num_players=3, auto_pass=True)
    b.load_state_dict(state)
    mask_b = mask
    for _ in range(40):  # past hand ends: the deal generators continue alike too
        out_a = a.step(a.sample_actions(mask))
        out_b = b.step(b.sample_actions(mask_b))
        mask, mask_b = out_a[1], out_b[1]
        for x, y in zip(out_a[:5], out_b[:5], strict=True):
            assert np.array_equal(to_np(x), to_np(y))


def test_load_state_dict_refuses_another_size_and_changes_nothing() -> None:
    small = BatchedEnv(2, num_players=2)
    small.reset(seed=1)
    big = BatchedEnv(3, num_players=2)
    big.reset(seed=2)
    before = big.state_dict()
    with pytest.raises(ValueError, match="has shape"):
        big.load_state_dict(small.state_dict())
    after = big.state_dict()
    assert all(np.array_equal(before["arrays"][k], after["arrays"][k]) for k in before["arrays"])
