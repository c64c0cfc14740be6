"""What ``BatchedEnv`` hands out is the caller's: writing into any returned array never changes
the games or what is legal, arrays kept from one step never change at the next; bad devices
and seeds are refused clearly, and seeds of any size work on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from batched_helpers import BACKENDS, engine
from helpers import to_np

from block_env.batched import BatchedEnv


def _scribble(x) -> None:
    """Overwrite a returned array or tensor in place with nonsense (ones)."""
    if type(x).__module__.startswith("torch"):
        x.fill_(1)
    else:
        x[...] = 1


def _outputs(out) -> list:
    """Every array in a reset/step result, info arrays included."""
    arrays = []
    for item in out:
        if isinstance(item, dict):
            arrays.extend(item[k] for k in sorted(item))
        else:
            arrays.append(item)
    return arrays


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("num_envs", [1, 7])
def test_writing_into_outputs_never_changes_the_games(backend: str, num_envs: int) -> None:
    kw = {"num_players": 3, "target_score": 20}
    env = BatchedEnv(num_envs, **engine(backend), **kw)
    twin = BatchedEnv(num_envs, **engine(backend), **kw)
    out, clean = env.reset(seed=3), twin.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(80):
        mask = to_np(clean[1])
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in mask], dtype=np.int64)
        for x in _outputs(out):
            _scribble(x)  # the mask now says every action is legal, the seat is 1, ...
        illegal = np.where(mask[np.arange(num_envs), 0] == 0)[0]
        if illegal.size:  # a scribbled mask does not make an illegal action legal
            bad = actions.copy()
            bad[illegal[0]] = 0
            with pytest.raises(ValueError, match="not legal"):
                env.step(bad)
        out, clean = env.step(actions), twin.step(actions)
        for got, want in zip(_outputs(out), _outputs(clean)):
            np.testing.assert_array_equal(to_np(got), to_np(want))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("num_envs", [1, 4])
def test_arrays_kept_from_a_step_do_not_change_later(backend: str, num_envs: int) -> None:
    env = BatchedEnv(num_envs, **engine(backend), num_players=2)
    out = env.reset(seed=1)
    for _ in range(40):
        kept = [to_np(x).copy() for x in _outputs(out)]
        held = out
        out = env.step(env.sample_actions(out[1]))
        for before, now in zip(kept, _outputs(held)):
            np.testing.assert_array_equal(to_np(now), before)


@pytest.mark.parametrize("backend", BACKENDS)
def test_seeds_of_any_size_work_and_repeat(backend: str) -> None:
    env = BatchedEnv(3, **engine(backend))
    first = [to_np(x).copy() for x in env.reset(seed=2**70)]
    again = [to_np(x).copy() for x in env.reset(seed=2**70)]
    other = [to_np(x).copy() for x in env.reset(seed=2**70 + 1)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))
    for bad in (-1, 2.5, True, "7"):
        with pytest.raises(ValueError, match="seed="):
            env.reset(seed=bad)


@pytest.mark.parametrize("seed", [0, 12345, 2**63, 2**70])
def test_aec_deals_agree_across_backends_for_any_seed(seed: int) -> None:
    a = BatchedEnv(4, backend="numpy", deal_source="aec", num_players=3)
    b = BatchedEnv(4, backend="torch", deal_source="aec", num_players=3)
    for x, y in zip(a.reset(seed=seed), b.reset(seed=seed)):
        np.testing.assert_array_equal(to_np(x), to_np(y))
    np.testing.assert_array_equal(a.snapshot()["hands"], b.snapshot()["hands"])


def test_cuda_without_cuda_and_bad_devices_are_refused_clearly() -> None:
    import torch

    if torch.cuda.is_available():
        env = BatchedEnv(2, backend="torch", device="cuda")
        assert env.device.type == "cuda"
    else:
        with pytest.raises(ValueError, match=r"device='cuda' needs CUDA.*available here: cpu"):
            BatchedEnv(2, backend="torch", device="cuda")
    for bad in ("cuda:99", "gpu", None, 1.5):
        with pytest.raises(ValueError, match=r"device=.*available here"):
            BatchedEnv(2, backend="torch", device=bad)
    with pytest.raises(ValueError, match="backend='numpy'"):
        BatchedEnv(2, backend="numpy", device="cuda")
