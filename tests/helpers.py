"""Shared helpers for the tests: the configurations covered and random legal play."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from agents.baselines import RuleAgent
from block_env.observation import obs_layout
from block_env.tiles import STANDARD_TILES, iter_tiles

CONFIGS = [
    {"num_players": 2},
    {"num_players": 3},
    {"num_players": 4},
    {"num_players": 4, "partnership": True},
    {"num_players": 2, "opener": "highest_double"},
    {"num_players": 3, "opener": "highest_double", "reward": "points"},
    {"num_players": 2, "episode": "hand", "reward": "win"},
    {"num_players": 4, "episode": "hand", "partnership": True, "reward": "points"},
    {"num_players": 3, "reward": "win", "target_score": 30},
]

# Smaller tile sets and non-default hand sizes: every max_pip from 2 to 5, the layouts where
# the voids sit in the first, across both and in the second observation word of the batched
# engine, and hands above 7 tiles (counts packed in 4 bits).
SET_CONFIGS = [
    {"num_players": 2, "max_pip": 2},
    {"num_players": 3, "max_pip": 2, "episode": "hand"},
    {
        "num_players": 2,
        "max_pip": 3,
        "hand_size": 4,
        "opener": "highest_double",
        "target_score": 20,
    },
    {"num_players": 3, "max_pip": 3, "target_score": 20},
    {"num_players": 4, "max_pip": 4, "partnership": True, "reward": "points", "target_score": 30},
    {"num_players": 2, "max_pip": 4, "target_score": 30},
    {
        "num_players": 3,
        "max_pip": 5,
        "hand_size": 6,
        "opener": "highest_double",
        "target_score": 30,
    },
    {"num_players": 2, "max_pip": 6, "hand_size": 12, "episode": "hand"},
    {"num_players": 4, "max_pip": 6, "hand_size": 6},
]


# the game record of a policy trained on single 2-player hands (``policy_files.game_config``)
TWO_PLAYER_HAND_GAME = {
    "num_players": 2,
    "opener": "rotate",
    "episode": "hand",
    "partnership": False,
    "target_score": None,
    "reward": "zero_sum",
}


def config_id(cfg: dict) -> str:
    return "-".join(f"{k}={v}" for k, v in cfg.items())


def to_np(x) -> np.ndarray:
    """A numpy array from a numpy array or a torch tensor (on any device)."""
    if type(x).__module__.startswith("torch"):
        return x.cpu().numpy()
    return np.asarray(x)


def tiles_of(mask: int) -> set[int]:
    """Tile indices of a tile mask (any set)."""
    return {t for t in range(mask.bit_length()) if mask >> t & 1}


def random_legal(obs: dict, rng: np.random.Generator) -> int:
    legal = np.flatnonzero(obs["action_mask"])
    return int(legal[rng.integers(len(legal))])


def naive_points(
    sides: list[int], hands: list[set[int]], domino: int | None, tiles=STANDARD_TILES
) -> list[int]:
    """Points by seat of a finished hand, straight from docs/RULES.md (sides: team by seat;
    ``tiles``: the set's tiles in order)."""
    pips = [sum(sum(tiles[t]) for t in h) for h in hands]
    totals: dict[int, int] = {}
    for seat, side in enumerate(sides):
        totals[side] = totals.get(side, 0) + pips[seat]
    if domino is not None:
        win = sides[domino]
        gain = sum(v for k, v in totals.items() if k != win)
    else:
        low = min(totals.values())
        if list(totals.values()).count(low) > 1:
            return [0] * len(sides)
        win = next(k for k, v in totals.items() if v == low)
        gain = sum(v for k, v in totals.items() if k != win) - low
    return [gain if sides[s] == win else 0 for s in range(len(sides))]


# PettingZoo's api_test warns about any dict observation; nothing else may be raised.
KNOWN_PETTINGZOO_WARNINGS = (
    "Observation is not a NumPy array",
    "Observation space for each agent probably should be gymnasium.spaces.box or "
    "gymnasium.spaces.discrete",
)


def run_pettingzoo_test(fn: Callable[[], object]) -> None:
    """Run a PettingZoo test; only the two known dict-observation warnings are tolerated."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    unexpected = [str(w.message) for w in caught if str(w.message) not in KNOWN_PETTINGZOO_WARNINGS]
    assert not unexpected, unexpected


# ------------------------------------------------------------ training runs


def final_state(run_dir: Path) -> dict:
    """The latest checkpoint of a training run folder."""
    import torch

    return torch.load(run_dir / "checkpoints/latest.pt", weights_only=True)


def assert_same_training(a: Path, b: Path) -> None:
    """Bit-for-bit equal weights, optimizer state and evaluation history."""
    import torch

    sa, sb = final_state(a), final_state(b)
    wa, wb = sa["policy"]["weights"], sb["policy"]["weights"]
    assert wa.keys() == wb.keys()
    for k in wa:
        assert torch.equal(wa[k], wb[k]), k
    for pa, pb in zip(sa["optimizer"]["state"].values(), sb["optimizer"]["state"].values()):
        for k in pa:
            assert torch.equal(torch.as_tensor(pa[k]), torch.as_tensor(pb[k])), k
    ha = [(h["update"], h["eval"]) for h in json.loads(sa["history"])]
    hb = [(h["update"], h["eval"]) for h in json.loads(sb["history"])]
    assert ha == hb
    assert sa["best_update"] == sb["best_update"]


def crash_in_update(monkeypatch: Any, call: int) -> Callable[[], None]:
    """Make the trainer's ``ppo_update`` raise "simulated crash" on its ``call``-th call;
    returns the function that puts the real one back."""
    from block_env.training import ppo

    real = ppo.ppo_update
    calls = {"n": 0}

    def dies(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == call:
            raise RuntimeError("simulated crash")
        return real(*args, **kwargs)

    monkeypatch.setattr(ppo, "ppo_update", dies)
    return lambda: monkeypatch.setattr(ppo, "ppo_update", real)


def tiny_collector(run_dir: Path, overrides: list[str]) -> Any:
    """A rollout collector of the smoke config with ``overrides``, a 16-unit network and
    games reset on seed 1 (the seats and opponents of the first hands are then drawn)."""
    import torch

    from agents.network import ActorCritic, NetConfig
    from block_env.training import rollout
    from block_env.training.config import load_config

    smoke = Path(__file__).resolve().parents[1] / "configs" / "smoke.yaml"
    cfg = load_config(smoke, [f"run_dir={run_dir}", *overrides])
    torch.manual_seed(0)
    collector = rollout.Collector(
        cfg, ActorCritic(NetConfig((16,))), "cpu", np.random.default_rng(0)
    )
    collector.reset(seed=1)
    return collector


def bits(x: np.ndarray) -> np.ndarray:
    """float32 values as their bit patterns: equality bit for bit (-0.0 != 0.0)."""
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


class Dealt:
    """Stands in for an AEC env's generator for one draw: ``permutation`` returns an order
    of the tiles whose slices ``rules.deal`` hands out as ``hands`` (tile masks by seat)."""

    def __init__(self, hands: np.ndarray, num_tiles: int) -> None:
        dealt = [t for h in hands for t in iter_tiles(int(h))]
        rest = sorted(set(range(num_tiles)) - set(dealt))
        self.order = np.array(dealt + rest, dtype=np.int64)

    def permutation(self, num_tiles: int) -> np.ndarray:
        assert num_tiles == len(self.order)
        return self.order.copy()


def rule_bot_positions(
    env: Any, seeds: Iterable[int], rng: np.random.Generator, rows: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(observations, masks) of every decision of ``env`` (an AEC env of single hands)
    reset with each of ``seeds`` in turn, until ``rows`` are collected (all of them when
    None; the first ``rows`` then). A random half of the seats, drawn from ``rng`` each hand,
    is played by the rule bot (so its own lines of play appear; it reads the plain
    observation, the prefix of an information state), the rest uniformly at random."""
    config = env.unwrapped.config
    plain = obs_layout(config).dim
    bot = RuleAgent()
    obs: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    for seed in seeds:
        if rows is not None and len(obs) >= rows:
            break
        env.reset(seed=seed)
        ruled = rng.random(config.num_players) < 0.5
        for agent in env.agent_iter():
            o, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            obs.append(o["observation"])
            masks.append(o["action_mask"])
            seat = int(agent.rsplit("_", 1)[1])
            legal = np.flatnonzero(o["action_mask"])
            seen = {"observation": o["observation"][:plain], "action_mask": o["action_mask"]}
            env.step(bot.act(seen) if ruled[seat] else int(rng.choice(legal)))
    return np.stack(obs[:rows]), np.stack(masks[:rows])
