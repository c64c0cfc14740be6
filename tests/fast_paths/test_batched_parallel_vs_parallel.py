"""Differential tests: ``BatchedParallelEnv`` against B ``parallel_env`` games, bit for bit.

The batched view deals with ``deal_source="aec"``, so its game i deals exactly as
``parallel_env`` reset with ``seed + i`` (later episodes by ``reset()`` without a seed, or
given hands, leaders and scores as reset options). Both are driven by the same random legal
moves (the wait for every seat not to act), and at every step every seat's observation and
mask, the seat to act, rewards, terminations, the hand's infos, the final observations of
the episodes that end and the privileged state must be ``parallel_env``'s. Then bad actions:
each is refused with a ValueError and changes nothing.
"""

from __future__ import annotations

import numpy as np
import pytest
from batched_helpers import BACKENDS, bits, engine
from helpers import CONFIGS, SET_CONFIGS, config_id, to_np

import block_env
from block_env.batched.parallel import BatchedParallelEnv
from block_env.env import INFO_KEYS
from block_env.parallel import parallel_env

DIFF_CONFIGS = [
    *CONFIGS,
    {"num_players": 4, "opener": "highest_double", "partnership": True, "reward": "win"},
    {"num_players": 2, "episode": "hand"},
    {"num_players": 3, "episode": "hand"},
    {"num_players": 4, "episode": "hand"},
    {"num_players": 4, "episode": "hand", "partnership": True, "obs_type": "information_state"},
    {"num_players": 3, "obs_type": "information_state", "target_score": 20},
    *SET_CONFIGS,
]
NUM_GAMES = 24
NUM_STEPS = 240


class ParallelLockstep:
    """B ``parallel_env`` games driven alongside one ``BatchedParallelEnv``."""

    def __init__(self, cfg: dict, backend: str, seed: int, options: list | None = None) -> None:
        self.batched = BatchedParallelEnv(NUM_GAMES, **engine(backend), deal_source="aec", **cfg)
        self.pars = [parallel_env(**cfg) for _ in range(NUM_GAMES)]
        self.views = [
            par.reset(seed=seed + i, options=None if options is None else options[i])[0]
            for i, par in enumerate(self.pars)
        ]
        self.agents = self.pars[0].possible_agents
        self.wait = self.pars[0].wait
        self.rng = np.random.default_rng(seed)
        self.hands = self.episodes = 0
        self.check(*self.batched.reset(seed=seed, options=options))

    def check(self, obs, mask, seat) -> None:
        """What the batched view handed out against the parallel games' observations (the
        ones their last step or reset returned), seat to act and state."""
        obs, mask, seat = to_np(obs), to_np(mask), to_np(seat)
        assert obs.dtype == np.float32 and mask.dtype == np.int8 and mask.shape[2] == self.wait + 1
        want_obs = np.stack([[v[a]["observation"] for a in self.agents] for v in self.views])
        want_mask = np.stack([[v[a]["action_mask"] for a in self.agents] for v in self.views])
        np.testing.assert_array_equal(bits(obs), bits(want_obs))
        np.testing.assert_array_equal(mask, want_mask)
        want_seat = [self.agents.index(par.current_agent) for par in self.pars]
        np.testing.assert_array_equal(seat, want_seat)
        state = to_np(self.batched.state())
        np.testing.assert_array_equal(bits(state), bits(np.stack([p.state() for p in self.pars])))
        self.mask, self.seat = mask, seat

    def step(self) -> None:
        actions = np.full((NUM_GAMES, len(self.agents)), self.wait, dtype=np.int64)
        for i, s in enumerate(self.seat):
            actions[i, s] = self.rng.choice(np.flatnonzero(self.mask[i, s]))
        obs, mask, seat, rewards, terminated, info = self.batched.step(actions)
        rewards, terminated = to_np(rewards), to_np(terminated)
        info = {k: to_np(v) for k, v in info.items()}
        final_rows = {int(g): j for j, g in enumerate(info["final_index"])}
        want_rewards, want_terminated, want_info = [], [], {key: [] for key in INFO_KEYS}
        for i, par in enumerate(self.pars):
            step_actions = {a: int(actions[i, s]) for s, a in enumerate(self.agents)}
            views, rew, term, trunc, infos = par.step(step_actions)
            want_rewards.append([rew[a] for a in self.agents])
            want_terminated.append([term[a] for a in self.agents])
            assert not any(trunc.values())
            for key in INFO_KEYS:  # every seat holds the same infos: the acting seat's
                want_info[key].append(np.array(infos[self.agents[self.seat[i]]][key]))
            self.hands += bool(infos[self.agents[0]]["hand_over"])
            if not par.agents:  # the episode ended: final observations, then a new one
                self.episodes += 1
                final = np.stack([views[a]["observation"] for a in self.agents])
                got = info["final_obs"][final_rows.pop(i)]
                np.testing.assert_array_equal(bits(got), bits(final))
                waits = np.stack([views[a]["action_mask"] for a in self.agents])
                assert (waits[:, self.wait] == 1).all() and waits.sum() == len(self.agents)
                views = par.reset()[0]
            self.views[i] = views
        assert not final_rows, "final_obs given for games that did not terminate"
        np.testing.assert_array_equal(bits(rewards), bits(np.array(want_rewards, np.float32)))
        assert terminated.dtype == bool
        np.testing.assert_array_equal(terminated, np.array(want_terminated))
        for key in INFO_KEYS:
            np.testing.assert_array_equal(info[key], np.array(want_info[key]), err_msg=key)
        self.check(obs, mask, seat)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cfg", DIFF_CONFIGS, ids=config_id)
def test_matches_parallel_env_step_by_step(cfg: dict, backend: str) -> None:
    run = ParallelLockstep(cfg, backend, seed=900 + 7 * len(config_id(cfg)))
    for _ in range(NUM_STEPS):
        run.step()
    assert run.hands >= NUM_GAMES  # every game played hands to their end
    assert run.episodes >= (5 * NUM_GAMES if cfg.get("episode") == "hand" else 1)


def short_setups(cfg: dict, rng: np.random.Generator) -> list[dict | None]:
    """Per game reset options (or None): short given hands, a leader, scores near the
    target, so that matches end within a hand or two."""
    config = block_env.BlockConfig(**{k: v for k, v in cfg.items() if k != "obs_type"})
    n, tiles = config.num_players, config.tiles.tiles
    setups: list[dict | None] = []
    for g in range(NUM_GAMES):
        if g % 4 == 3:
            setups.append(None)
            continue
        order = rng.permutation(len(tiles))
        sizes = rng.integers(1, config.hand_size + 1, size=n)
        edges = np.concatenate(([0], np.cumsum(sizes)))
        hands = [[tiles[t] for t in order[edges[s] : edges[s + 1]]] for s in range(n)]
        scores = [int(v) for v in rng.integers(max(0, config.target - 12), config.target, n)]
        if config.partnership:
            scores[2], scores[3] = scores[0], scores[1]
        setups.append({"hands": hands, "scores": scores, "leader": int(rng.integers(n))})
    return setups


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "cfg",
    [
        {"num_players": 2},
        {"num_players": 3, "reward": "win"},
        {"num_players": 4, "partnership": True},
        {"num_players": 3, "max_pip": 4},
        {"num_players": 2, "reward": "points", "target_score": 300},  # scores above 255
        {
            "num_players": 4,
            "partnership": True,
            "target_score": 280,
            "obs_type": "information_state",
        },
    ],
    ids=config_id,
)
def test_reset_options_match_parallel_env(cfg: dict, backend: str) -> None:
    run = ParallelLockstep(
        cfg, backend, seed=41, options=short_setups(cfg, np.random.default_rng(3))
    )
    for _ in range(40):
        run.step()
    assert run.episodes >= NUM_GAMES // 2


# -- bad input ------------------------------------------------------------------------------


def fresh(backend: str, **cfg) -> tuple[BatchedParallelEnv, np.ndarray, np.ndarray]:
    env = BatchedParallelEnv(6, **engine(backend), **{"num_players": 3, **cfg})
    _, mask, seat = env.reset(seed=11)
    return env, to_np(mask), to_np(seat)


def legal_actions(env: BatchedParallelEnv, mask: np.ndarray, seat: np.ndarray) -> np.ndarray:
    """(B, n): each game's first legal move of the seat to act, the wait elsewhere."""
    actions = np.full(mask.shape[:2], env.wait, dtype=np.int64)
    for g, s in enumerate(seat):
        actions[g, s] = np.flatnonzero(mask[g, s])[0]
    return actions


def assert_refused(env: BatchedParallelEnv, actions, match: str) -> None:
    """``actions`` raises ValueError matching ``match`` and leaves every game as it was."""
    before = env.env.snapshot(), to_np(env.state())
    with pytest.raises(ValueError, match=match):
        env.step(actions)
    after = env.env.snapshot(), to_np(env.state())
    assert before[0].keys() == after[0].keys()
    for key in before[0]:
        np.testing.assert_array_equal(before[0][key], after[0][key], err_msg=key)
    np.testing.assert_array_equal(before[1], after[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_actions_are_refused_and_change_nothing(backend: str) -> None:
    env, mask, seat = fresh(backend)
    good = legal_actions(env, mask, seat)
    wait, g, s = env.wait, 2, int(seat[2])
    assert_refused(env, good[:, 0], r"shape \(6, 3\)")
    assert_refused(env, np.zeros((6, 4), np.int64), r"shape \(6, 3\)")
    assert_refused(env, good.astype(np.float32), "integers")
    assert_refused(env, good.astype(bool), "integers")
    actions = good.copy()
    actions[g, s] = wait
    assert_refused(env, actions, rf"actions\[{g}, {s}\]={wait}: seat {s} is to act .* may not wait")
    other = (s + 1) % 3
    actions = good.copy()
    actions[g, other] = good[g, s]
    assert_refused(env, actions, rf"seat {other} is not to act in game {g} .* wait \({wait}\)")
    illegal = int(np.flatnonzero(mask[g, s] == 0)[0])
    for bad in (illegal, -1, wait + 1, 2**40):
        actions = good.copy()
        actions[g, s] = bad
        assert_refused(env, actions, rf"actions\[{g}, {s}\]={bad}: .*may not play {bad}; legal")
    if backend.startswith("torch"):
        torch = pytest.importorskip("torch")
        assert_refused(env, torch.from_numpy(good).float(), "integers")
        assert_refused(env, torch.from_numpy(good[:3]), r"shape \(6, 3\)")
        env.step(torch.from_numpy(good))  # a tensor of legal actions is taken
    else:
        env.step(good.tolist())  # as is a nested list


@pytest.mark.parametrize("backend", BACKENDS)
def test_sample_actions_are_legal_and_step_before_reset_is_refused(backend: str) -> None:
    env = BatchedParallelEnv(5, **engine(backend), num_players=4, partnership=True)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.full((5, 4), env.wait))
    with pytest.raises(RuntimeError, match="reset"):
        env.state()
    _, mask, seat = env.reset(seed=3)
    for _ in range(50):
        actions = to_np(env.sample_actions())
        mask = to_np(mask)
        assert actions.shape == (5, 4)
        assert (mask[np.arange(5)[:, None], np.arange(4)[None, :], actions] == 1).all()
        _, mask, _, _, _, _ = env.step(actions)


def test_auto_pass_is_not_an_option() -> None:
    with pytest.raises(ValueError, match="auto_pass"):
        BatchedParallelEnv(2, auto_pass=True)
