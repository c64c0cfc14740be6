"""Pinned trajectories of the batched engine with its own fast deals: a hash of everything
``reset`` and ``step`` hand out (observation, mask, seat, rewards, terminations, every info
array) over many steps of random legal play, for each backend and its kernels. The hashes
were recorded before the engine's fast paths (incremental observations, vectorised hand
ends, numpy kernels for torch on the CPU) were written: any change in what the engine hands
out for the same seeds and actions changes a hash."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from batched_helpers import BACKENDS, engine
from helpers import to_np

from block_env.batched import BatchedEnv

CASES = {
    "2p": {"num_players": 2},
    "3p-points": {"num_players": 3, "reward": "points", "target_score": 40},
    "4p-team-hd-win": {
        "num_players": 4,
        "partnership": True,
        "opener": "highest_double",
        "reward": "win",
    },
    "4p-hand": {"num_players": 4, "episode": "hand"},
    "3p-pip3": {"num_players": 3, "max_pip": 3, "target_score": 20},
    "2p-pip6-10": {"num_players": 2, "max_pip": 6, "hand_size": 10, "target_score": 60},
    "2p-autopass": {"num_players": 2, "auto_pass": True, "target_score": 50},
    "4p-infostate": {
        "num_players": 4,
        "obs_type": "information_state",
        "auto_pass": True,
        "target_score": 30,
    },
}


def trajectory_hash(backend: str, kw: dict, num_envs: int = 96, steps: int = 160) -> str:
    """sha256 of every output of ``steps`` steps of random legal play (sample_actions)."""
    env = BatchedEnv(num_envs, **engine(backend), **kw)
    h = hashlib.sha256()

    def add(*arrays) -> None:
        for x in arrays:
            if isinstance(x, dict):
                for key in sorted(x):
                    add(x[key])
            else:
                a = np.ascontiguousarray(to_np(x))
                h.update(str((a.dtype.str, a.shape)).encode())
                h.update(a.tobytes())

    add(*env.reset(seed=11))
    for _ in range(steps):
        add(*env.step(env.sample_actions()))
    return h.hexdigest()[:16]


PINNED: dict[tuple[str, str], str] = {
    ("2p", "numpy"): "672a971ea8100425",
    ("2p", "torch"): "df1c0b2b8b774c79",
    ("2p-autopass", "numpy"): "84cbad0fbd614c63",
    ("2p-autopass", "torch"): "c073cee5e4376487",
    ("2p-pip6-10", "numpy"): "dc36c7e0d27962fc",
    ("2p-pip6-10", "torch"): "1436712a6530828e",
    ("3p-pip3", "numpy"): "6d676a0a1a940250",
    ("3p-pip3", "torch"): "fa66bce08e867b38",
    ("3p-points", "numpy"): "8e333d3ffd9317dc",
    ("3p-points", "torch"): "19abf06271f90e96",
    ("4p-hand", "numpy"): "584bddf6eabce0a1",
    ("4p-hand", "torch"): "4926812a8aa20033",
    ("4p-infostate", "numpy"): "bc57bdcf0537a8f2",
    ("4p-infostate", "torch"): "2099a5b89db3d633",
    ("4p-team-hd-win", "numpy"): "133b06f3d43d31fa",
    ("4p-team-hd-win", "torch"): "1dcbfd71e9e0063a",
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_trajectory_is_pinned(case: str, backend: str) -> None:
    """torch's two kernels (numpy's on the CPU by default, torch's own) give the same
    trajectory, bit for bit: torch's draws, deals and outputs whatever computes them."""
    want = PINNED[(case, "torch" if backend.startswith("torch") else "numpy")]
    assert trajectory_hash(backend, CASES[case]) == want
