"""Perfect-information Monte Carlo (PIMC): ``agents.make("pimc", worlds=20)``.

The agent acts from the observation dict alone. For each move it samples ``worlds`` deals
of the tiles it has not seen, uniformly among the deals consistent with everything the
seat knows: its own hand, the tiles on the line, each opponent's tile count, the values
each opponent showed lacking by passing (its voids) and the number of tiles out of play.
Each sampled world is solved exactly (``agents.solver``) from the current position, and
the move with the best average value over the worlds is played. Like the solver it
maximises the current hand's points margin and ignores the match context.

Sampling is exact, not rejection: the unseen tiles fall into classes by the set of
opponents allowed to hold them (at most 8 classes), the number of consistent deals is
counted class by class, and each class's split between the opponents and the
out-of-play pile is drawn in proportion to the deals it leaves (``sample_world``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from math import factorial
from typing import NamedTuple

import numpy as np

from agents.solver import ENGINES, Position, best_action, counted_action_values
from block_env.config import BlockConfig
from block_env.observation import layout_for_dim
from block_env.rules import EMPTY
from block_env.tiles import MAX_PIP, tile_set

__all__ = ["Knowledge", "PIMCAgent", "count_worlds", "read_observation", "sample_world"]

_BITS = 1 << np.arange(28, dtype=np.int64)  # bit of each tile (or value) index


def _tiles_showing(values: int, max_pip: int) -> int:
    """Tiles of the set showing at least one value of the value set ``values`` (a bit mask)."""
    with_value = tile_set(max_pip).with_value
    out = 0
    for v, tiles in enumerate(with_value):
        if values >> v & 1:
            out |= tiles
    return out


class Knowledge(NamedTuple):
    """What one seat knows, by relative seat (0 = the observer, r = r places clockwise)."""

    num_players: int
    partnership: bool
    hand: int  # the observer's tiles (mask)
    line: int  # tiles on the line (mask)
    left: int  # open ends, EMPTY before the opening
    right: int
    counts: tuple[int, ...]  # tiles in hand by relative seat
    voids: tuple[int, ...]  # (N+1)-bit value sets each relative seat showed lacking
    out_of_play: int  # number of tiles nobody holds this hand
    max_pip: int = MAX_PIP  # the tile set: [0|0]..[N|N]


def read_observation(obs: np.ndarray) -> Knowledge:
    """The ``Knowledge`` in one observation vector (``observation['observation']``) of any
    tile set (its length identifies the set)."""
    obs = np.asarray(obs)
    if obs.ndim != 1:
        raise ValueError(f"expected an observation vector, got shape {obs.shape}")
    lay = layout_for_dim(obs.shape[0])
    fields = lay.fields
    t, v = lay.tiles.num_tiles, lay.num_values
    n = int(obs[fields["seats"]].sum())
    hand = int(_BITS[:t][obs[fields["hand"]] > 0.5].sum())
    line = int(_BITS[:t][obs[fields["line"]] > 0.5].sum())
    if obs[fields["empty_line"]][0] > 0.5:
        left = right = EMPTY
    else:
        left = int(np.argmax(obs[fields["left_end"]]))
        right = int(np.argmax(obs[fields["right_end"]]))
    counts = tuple(int(c) for c in obs[fields["tile_counts"]][:n])
    voids_bits = obs[fields["voids"]].reshape(-1, v)[:n] > 0.5
    voids = tuple(int(_BITS[:v][row].sum()) for row in voids_bits)
    return Knowledge(
        num_players=n,
        partnership=bool(obs[fields["partnership"]][0] > 0.5),
        hand=hand,
        line=line,
        left=left,
        right=right,
        counts=counts,
        voids=voids,
        out_of_play=int(obs[fields["out_of_play"]][0]),
        max_pip=lay.tiles.max_pip,
    )


class _Classes(NamedTuple):
    tiles: list[list[int]]  # unseen tiles of each class
    dests: list[tuple[int, ...]]  # destinations allowed to each class (m = out of play)
    caps: tuple[int, ...]  # tiles each destination takes: opponents 1..n-1, then out


def _classes(know: Knowledge) -> _Classes:
    n = know.num_players
    ts = tile_set(know.max_pip)
    unseen = ts.all_tiles & ~know.hand & ~know.line
    caps = (*know.counts[1:], know.out_of_play)
    if unseen.bit_count() != sum(caps):
        raise ValueError(
            f"inconsistent knowledge: {unseen.bit_count()} unseen tiles but the opponents' "
            f"counts {list(know.counts[1:])} and {know.out_of_play} out of play add to {sum(caps)}"
        )
    m = n - 1
    banned = [_tiles_showing(know.voids[r], know.max_pip) for r in range(1, n)]
    by_allowed: dict[int, list[int]] = {}
    for t in range(ts.num_tiles):
        if unseen >> t & 1:
            allowed = sum(1 << i for i in range(m) if not banned[i] >> t & 1)
            by_allowed.setdefault(allowed, []).append(t)
    tiles, dests = [], []
    for allowed, members in sorted(by_allowed.items()):
        tiles.append(members)
        dests.append((*(i for i in range(m) if allowed >> i & 1), m))
    return _Classes(tiles, dests, caps)


def _splits(total: int, dests: tuple[int, ...], caps: tuple[int, ...]):
    """Every way to put ``total`` tiles into ``dests`` without exceeding ``caps``: yields
    tuples of counts aligned with ``dests``."""
    if len(dests) == 1:
        if total <= caps[dests[0]]:
            yield (total,)
        return
    head, rest = dests[0], dests[1:]
    room = sum(caps[d] for d in rest)
    for x in range(max(0, total - room), min(total, caps[head]) + 1):
        for tail in _splits(total - x, rest, caps):
            yield (x, *tail)


class _Counter:
    """Counts consistent deals class by class (memoised on the capacities left)."""

    def __init__(self, classes: _Classes) -> None:
        self.classes = classes
        self.memo: dict[tuple[int, tuple[int, ...]], int] = {}

    def count(self, j: int, caps: tuple[int, ...]) -> int:
        if j == len(self.classes.tiles):
            return 0 if any(caps) else 1
        key = (j, caps)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        total = 0
        for _split, weight, rest in self.options(j, caps):
            total += weight * self.count(j + 1, rest)
        self.memo[key] = total
        return total

    def options(self, j: int, caps: tuple[int, ...]):
        """(split, multinomial weight, capacities left) for each split of class ``j``."""
        members = len(self.classes.tiles[j])
        dests = self.classes.dests[j]
        fact = factorial(members)
        for split in _splits(members, dests, caps):
            weight = fact
            rest = list(caps)
            for d, x in zip(dests, split):
                weight //= factorial(x)
                rest[d] -= x
            yield split, weight, tuple(rest)


def count_worlds(know: Knowledge) -> int:
    """Number of deals of the unseen tiles consistent with ``know`` (ordered by seat)."""
    classes = _classes(know)
    return _Counter(classes).count(0, classes.caps)


class _Sampler:
    """Uniform sampler of the deals consistent with one ``Knowledge``."""

    def __init__(self, know: Knowledge) -> None:
        self.know = know
        self.classes = _classes(know)
        self.counter = _Counter(self.classes)
        if self.counter.count(0, self.classes.caps) == 0:
            raise ValueError("no deal is consistent with this knowledge (voids vs counts)")

    def sample(self, rng: random.Random) -> tuple[tuple[int, ...], int]:
        classes, counter = self.classes, self.counter
        m = len(classes.caps) - 1
        piles = [0] * (m + 1)
        caps = classes.caps
        for j, members in enumerate(classes.tiles):
            options = list(counter.options(j, caps))
            weights = [w * counter.count(j + 1, rest) for _s, w, rest in options]
            pick = rng.randrange(sum(weights))
            chosen = 0
            while pick >= weights[chosen]:
                pick -= weights[chosen]
                chosen += 1
            split, _w, rest = options[chosen]
            shuffled = members[:]
            rng.shuffle(shuffled)
            i = 0
            for d, x in zip(classes.dests[j], split):
                for t in shuffled[i : i + x]:
                    piles[d] |= 1 << t
                i += x
            caps = rest
        return (self.know.hand, *piles[:m]), piles[m]


def sample_world(know: Knowledge, rng: random.Random) -> tuple[tuple[int, ...], int]:
    """One deal drawn uniformly among those consistent with ``know``: the hands by
    relative seat (the observer's own hand first) and the mask of tiles out of play."""
    return _Sampler(know).sample(rng)


class PIMCAgent:
    """Samples ``worlds`` consistent deals, solves each exactly and plays the move with the
    best mean value (ties: heaviest tile, then lowest action id). With ``time_budget``
    (seconds) it stops drawing worlds once that much time has passed, with ``node_budget``
    once the solver has visited that many search nodes for this decision (the same on every
    machine, so games repeat); at least one world is always solved. ``engine`` picks the
    solver's engine (``agents.solver.ENGINES``: the same values and nodes on each)."""

    def __init__(
        self,
        worlds: int = 20,
        seed: int | None = None,
        time_budget: float | None = None,
        node_budget: int | None = None,
        engine: str = "auto",
    ) -> None:
        if engine not in ENGINES:
            raise ValueError(f"engine={engine!r} is not allowed: use one of {', '.join(ENGINES)}")
        if isinstance(worlds, bool) or not isinstance(worlds, int) or worlds < 1:
            raise ValueError(f"worlds={worlds!r} is not allowed: use an int >= 1")
        if time_budget is not None and not (
            isinstance(time_budget, (int, float)) and time_budget > 0
        ):
            raise ValueError(f"time_budget={time_budget!r} is not allowed: use seconds > 0")
        if node_budget is not None and (
            isinstance(node_budget, bool) or not isinstance(node_budget, int) or node_budget < 1
        ):
            raise ValueError(f"node_budget={node_budget!r} is not allowed: use an int >= 1")
        self.worlds = worlds
        self.time_budget = time_budget
        self.node_budget = node_budget
        self.engine = engine
        self.rng = random.Random(seed)
        self._configs: dict[tuple[int, bool, int], BlockConfig] = {}
        self.last_worlds = 0  # worlds solved for the last decision (0: forced move)

    def reseed(self, seed: int) -> None:
        """Restart the world sampler's random numbers from ``seed`` (an evaluation with a
        control replays games this way)."""
        self.rng.seed(seed)

    def _config(self, n: int, partnership: bool, max_pip: int = MAX_PIP) -> BlockConfig:
        key = (n, partnership, max_pip)
        if key not in self._configs:
            self._configs[key] = BlockConfig(
                num_players=n, partnership=partnership, max_pip=max_pip
            )
        return self._configs[key]

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        legal = _legal_actions(observation)
        if legal.size == 1:
            self.last_worlds = 0
            return int(legal[0])
        totals, config = self._totals(observation, legal)
        return best_action(totals, config.tiles)

    def action_totals(self, observation: Mapping[str, np.ndarray]) -> dict[int, float]:
        """The solver's value of each legal action summed over the sampled worlds (divide by
        ``last_worlds`` for the mean): what ``act`` maximises, for agents that weigh it
        with other evidence. Draws worlds even when only one action is legal."""
        return self._totals(observation, _legal_actions(observation))[0]

    def _totals(
        self, observation: Mapping[str, np.ndarray], legal: np.ndarray
    ) -> tuple[dict[int, float], BlockConfig]:
        """``action_totals`` and the game configuration the observation was read as."""
        self.last_worlds = 0
        know = read_observation(observation["observation"])
        config = self._config(know.num_players, know.partnership, know.max_pip)
        sampler = _Sampler(know)
        start = time.perf_counter()
        legal_set = {int(a) for a in legal}
        totals = dict.fromkeys(legal_set, 0.0)
        nodes = 0
        for i in range(self.worlds):
            if i and self._spent(time.perf_counter() - start, nodes):
                break
            hands, _out = sampler.sample(self.rng)
            values, visited = counted_action_values(
                config, Position(hands, know.left, know.right, 0), self.engine
            )
            nodes += visited
            if set(values) != legal_set:
                raise ValueError(
                    f"the action mask {sorted(legal_set)} does not match the observed hand "
                    f"and ends (legal there: {sorted(values)})"
                )
            for a, v in values.items():
                totals[a] += v
            self.last_worlds = i + 1
        return totals, config

    def _spent(self, seconds: float, nodes: int) -> bool:
        """Has this decision used up its time or node budget?"""
        if self.time_budget is not None and seconds > self.time_budget:
            return True
        return self.node_budget is not None and nodes >= self.node_budget


def _legal_actions(observation: Mapping[str, np.ndarray]) -> np.ndarray:
    legal = np.flatnonzero(observation["action_mask"])
    if legal.size == 0:
        raise ValueError("the action mask holds no legal action: this seat is not on turn")
    return legal
