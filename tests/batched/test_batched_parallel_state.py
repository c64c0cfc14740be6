"""``BatchedParallelEnv.state_from_observations``: the ``state()`` of games rebuilt from every
seat's observations handed out, bit for bit, on every engine variant; bad shapes refused."""

from __future__ import annotations

import numpy as np
import pytest
from batched_helpers import BACKENDS, bits, engine
from helpers import to_np

from block_env.batched.parallel import BatchedParallelEnv

STATE_CONFIGS = [
    {"num_players": 2},  # two seats: the hands padded to four with zeros
    {"num_players": 4, "partnership": True},
    {"num_players": 3, "max_pip": 4, "obs_type": "information_state"},
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cfg", STATE_CONFIGS, ids=str)
def test_state_from_observations_is_state(cfg: dict, backend: str) -> None:
    env = BatchedParallelEnv(8, **engine(backend), **cfg)
    obs = env.reset(seed=3)[0]
    for _ in range(40):
        got = env.state_from_observations(obs)
        assert type(got) is type(obs) and got.dtype == obs.dtype
        np.testing.assert_array_equal(bits(to_np(got)), bits(to_np(env.state())))
        obs = env.step(env.sample_actions())[0]


def test_state_from_observations_refuses_other_shapes() -> None:
    env = BatchedParallelEnv(4, num_players=3)
    obs = env.reset(seed=0)[0]
    for bad in (obs[:, :2], obs[..., :-1], obs[0]):
        with pytest.raises(ValueError, match=r"obs must have shape \(K, 3, 122\)"):
            env.state_from_observations(bad)
