"""Where the batched engine's deals and fair lots come from.

``"fast"``: one generator for the whole batch, in the engine's backend (numpy Generator or
torch Generator), seeded by ``reset(seed)``; vectorized, reproducible for a given seed, batch
size and backend, but not the same deals as the AEC env.

``"aec"``: game ``i`` owns a numpy Generator made exactly as ``raw_env.reset(seed=seed + i)``
makes its own (``gymnasium.utils.seeding.np_random``) and draws from it in the AEC call order:
a new match draws the lot (``integers(n)``) then the deal (``permutation(T)``), a next hand
draws only the deal. So game ``i`` sees exactly the deals and lots of a ``raw_env`` reset with
``seed + i`` whose later episodes start with ``reset()`` (no seed). It loops over games in
Python when hands start: meant for exactness tests, not for speed.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
from gymnasium.utils import seeding

from block_env.config import BlockConfig

DEAL_SOURCES = ("fast", "aec")


class FastDeals:
    """Vectorized deals from one backend generator."""

    def __init__(self, backend: Any, config: BlockConfig, num_envs: int) -> None:
        self.backend = backend
        self.config = config
        self.rng: Any = None
        self.hands_from_permutations: Any = None  # the compiled kernel, when it runs

    def seed(self, seed: int | None) -> None:
        if seed is not None or self.rng is None:
            self.rng = self.backend.make_rng(seed)

    def draw(self, idx: Any, new_match: Any) -> tuple[Any, Any]:
        """Deal for the games ``idx``: (hands (K, n) int64 masks, lots (K,) int64)."""
        b = self.backend
        k = int(idx.shape[0])
        cfg = self.config
        lots = b.integers(self.rng, cfg.num_players, k)
        perm = b.permutations(self.rng, k, cfg.tiles.num_tiles)
        if self.hands_from_permutations is not None:
            perm = np.ascontiguousarray(perm, dtype=np.int64)
            return self.hands_from_permutations(perm, cfg.num_players, cfg.hand_size), lots
        return _hands_from_permutations(b, self.config, perm), lots


class AecDeals:
    """Per-game numpy generators reproducing ``raw_env``'s draws exactly (slow)."""

    def __init__(self, backend: Any, config: BlockConfig, num_envs: int) -> None:
        self.backend = backend
        self.config = config
        self.num_envs = num_envs
        self.rngs: list[np.random.Generator] | None = None

    def seed(self, seed: int | None) -> None:
        if seed is not None:
            self.rngs = [seeding.np_random(seed + i)[0] for i in range(self.num_envs)]
        elif self.rngs is None:
            self.rngs = [seeding.np_random(None)[0] for _ in range(self.num_envs)]

    def draw(self, idx: Any, new_match: Any) -> tuple[Any, Any]:
        b = self.backend
        games = b.to_numpy(idx).tolist()
        fresh = b.to_numpy(new_match).tolist()
        lots = np.zeros(len(games), dtype=np.int64)
        t = self.config.tiles.num_tiles
        perm = np.zeros((len(games), t), dtype=np.int64)
        for j, (game, new) in enumerate(zip(games, fresh)):
            rng = self.rngs[game]
            if new:
                lots[j] = int(rng.integers(self.config.num_players))
            perm[j] = rng.permutation(t)
        hands = _hands_from_permutations(b, self.config, b.from_numpy(perm))
        return hands, b.from_numpy(lots)


_POW2 = 2.0 ** np.arange(32)  # a tile's bit as a float64 (exact)


@cache
def _seat_selector(n: int, k: int) -> np.ndarray:
    """(n k, n) float64: column s sums the positions s*k .. s*k+k-1 of a permutation."""
    return (np.arange(n * k)[:, None] // k == np.arange(n)[None, :]).astype(np.float64)


def _hands_from_permutations(backend: Any, config: BlockConfig, perm: Any) -> Any:
    """Seat s gets the tiles at positions s*k .. s*k+k-1 of each permutation (as rules.deal)."""
    n, k = config.num_players, config.hand_size
    if backend.kernels != "numpy":
        return (1 << perm[:, : n * k]).reshape(perm.shape[0], n, k).sum(2)
    # numpy: the tiles' bits as float64 summed per seat by one matrix product (sums of distinct
    # powers of two below 2**28 are exact), fewer and cheaper calls than integer sums
    return (_POW2.take(perm[:, : n * k]) @ _seat_selector(n, k)).astype(np.int64)


def make_deals(source: str, backend: Any, config: BlockConfig, num_envs: int) -> Any:
    if source == "fast":
        return FastDeals(backend, config, num_envs)
    if source == "aec":
        return AecDeals(backend, config, num_envs)
    raise ValueError(f"deal_source={source!r} is not allowed: use one of {', '.join(DEAL_SOURCES)}")
