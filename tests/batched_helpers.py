"""The batched engine's test harness: the engine variants every batched test runs on, and
``Lockstep``, which drives B AEC envs beside one ``BatchedEnv`` and compares them bit for bit
after every step (the differential tests of tests/fast_paths build on it)."""

from __future__ import annotations

import numpy as np
from helpers import to_np

import block_env
from block_env.batched import BatchedEnv
from block_env.env import INFO_KEYS

# numpy's kernels; the compiled kernels (numba) over numpy; torch on the CPU with the numpy and
# with the compiled kernels; and torch's own kernels (the path CUDA takes) run on the CPU
BACKENDS = ["numpy", "numba", "torch", "torch-numba", "torch-ops"]
_ENGINES = {
    "numpy": {"backend": "numpy", "kernels": "numpy"},
    "numba": {"backend": "numpy", "kernels": "numba"},
    "torch": {"backend": "torch", "kernels": "numpy"},
    "torch-numba": {"backend": "torch", "kernels": "numba"},
    "torch-ops": {"backend": "torch", "kernels": "torch"},
}


def engine(backend: str) -> dict:
    """BatchedEnv keywords for a name of BACKENDS."""
    return dict(_ENGINES[backend])


def bits(x: np.ndarray) -> np.ndarray:
    """float32 arrays as their bit patterns, so that equality is bit for bit (-0.0 != 0.0)."""
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


class Lockstep:
    """B AEC envs driven alongside one BatchedEnv, compared after every step."""

    def __init__(self, cfg: dict, backend: str, num_games: int, seed: int, **kwargs) -> None:
        self.cfg = cfg
        self.seed = seed
        self.pass_action = block_env.BlockConfig(**cfg).tiles.pass_action
        self.auto_pass = kwargs.get("auto_pass", False)
        options = kwargs.pop("options", None)
        self.batched = BatchedEnv(num_games, **engine(backend), deal_source="aec", **cfg, **kwargs)
        self.aecs = [block_env.raw_env(**cfg) for _ in range(num_games)]
        for i, env in enumerate(self.aecs):
            env.reset(seed=seed + i, options=None if options is None else options[i])
            self._skip_forced(env)
        obs, mask, seat = self.batched.reset(seed=seed, options=options)
        self.n = cfg.get("num_players", 2)
        self.rng = np.random.default_rng(seed)
        self.hands = 0
        self.episodes = 0
        self.check(obs, mask, seat)

    def _skip_forced(self, env) -> None:
        """With auto_pass the AEC side steps the forced passes itself (they never score)."""
        while self.auto_pass and not any(env.terminations.values()):
            mask = env.observe(env.agent_selection)["action_mask"]
            if mask[self.pass_action] != 1 or mask.sum() != 1:
                return
            env.step(self.pass_action)
            assert not any(env.rewards.values())

    def check(self, obs, mask, seat) -> None:
        obs, mask, seat = to_np(obs), to_np(mask), to_np(seat)
        assert obs.dtype == np.float32 and mask.dtype == np.int8
        want_seat = np.array([env.possible_agents.index(env.agent_selection) for env in self.aecs])
        np.testing.assert_array_equal(seat, want_seat)
        views = [env.observe(env.agent_selection) for env in self.aecs]
        want_obs = np.stack([v["observation"] for v in views])
        want_mask = np.stack([v["action_mask"] for v in views])
        np.testing.assert_array_equal(bits(obs), bits(want_obs))
        np.testing.assert_array_equal(mask, want_mask)
        self.mask = want_mask

    def step(self) -> None:
        actions = np.array(
            [int(self.rng.choice(np.flatnonzero(m))) for m in self.mask], dtype=np.int64
        )
        obs, mask, seat, rewards, terminated, info = self.batched.step(actions)
        info = {k: to_np(v) for k, v in info.items()}
        rewards, terminated = to_np(rewards), to_np(terminated)
        assert rewards.dtype == np.float32 and rewards.shape == (len(self.aecs), self.n)
        self.last_final = info["final_obs"]  # (K, n, width): kept for the callers' checks
        final_rows = {int(g): j for j, g in enumerate(info["final_index"])}
        want_rewards, ended, want_info = [], [], {key: [] for key in INFO_KEYS}
        for i, env in enumerate(self.aecs):
            actor = env.agent_selection
            env.step(int(actions[i]))
            want_rewards.append([env.rewards[a] for a in env.possible_agents])
            ended.append(any(env.terminations.values()))
            for key in INFO_KEYS:  # the same names and values as the AEC env's infos
                want_info[key].append(np.array(env.infos[actor][key]))
            if env.infos[actor]["hand_over"]:
                self.hands += 1
            if ended[-1]:
                self.episodes += 1
                final = np.stack([env.observe(a)["observation"] for a in env.possible_agents])
                got = info["final_obs"][final_rows.pop(i)]
                np.testing.assert_array_equal(bits(got), bits(final))
                assert all(env.observe(a)["action_mask"].sum() == 0 for a in env.possible_agents)
                env.reset()
            self._skip_forced(env)
        # whole-batch comparisons, one per quantity and step (per-game asserts cost 5x more)
        np.testing.assert_array_equal(bits(rewards), bits(np.array(want_rewards, np.float32)))
        np.testing.assert_array_equal(terminated.astype(bool), np.array(ended))
        np.testing.assert_array_equal(info["match_over"].astype(bool), np.array(ended))
        for key in INFO_KEYS:
            want = np.array(want_info[key])
            assert info[key].shape == want.shape, key
            np.testing.assert_array_equal(info[key], want, err_msg=key)
        assert not final_rows, "final_obs given for games that did not terminate"
        self.check(obs, mask, seat)
