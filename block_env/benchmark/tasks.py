"""Frozen benchmark tasks: a named, versioned env configuration with its held-out deal set and
its reference field. A task's definition never changes; a change is a new version.

Held-out deals: deal ``d`` of a task is the first deal of ``raw_env`` reset with seed
``task.deal_seed + d``. Every task's seeds lie in ``[HELD_OUT_SEED, HELD_OUT_SEED + 10**12)``,
a block that training never touches: ``train.py`` takes seeds below ``2**32`` (its games are
dealt by one generator per rank, seeded below ``2**32``) and evaluates on deal seeds 10,000
(periodic evaluations, which choose the kept policy) and 1,000,000 (the final one); the
examples seed below ``2**32`` too. ``tests/benchmark`` checks that no such deal is in a
task's set.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.utils import seeding

from block_env import rules
from block_env.config import BlockConfig

HELD_OUT_SEED = 10**13  # first seed of the benchmark's deal block (far above 2**32)
SEEDS_PER_TASK = 10**9  # each task's own stretch of the block


@dataclass(frozen=True)
class Opponent:
    """A reference agent of a task's field and how many of the task's deals it plays
    (``None``: all of them; fewer for search agents, whose hands cost seconds each)."""

    spec: str
    deals: int | None = None


@dataclass(frozen=True)
class Task:
    """One frozen benchmark task.

    The game is one hand scored in zero-sum points with the rotating lead (a fair lot for
    the leader), unless ``opener`` is ``"highest_double"`` (its holder leads it) or
    ``episode`` is ``"match"`` (whole matches to the default target, scores kept: each deal
    starts a match, and the figure that matters is the share of matches won). ``deals`` is
    the default size of the held-out set, each deal played once per seat rotation.
    ``field`` is what an agent is measured against, in ``lineups``:
    ``alone`` (the agent in one seat, the opponent in every other), ``field`` (one opponent
    among copies of the agent), ``team`` (partnership: two copies against two opponents) and
    ``ad_hoc`` (partnership: the agent with an opponent as its partner, against two more).
    """

    id: str
    num_players: int
    deals: int
    field: tuple[Opponent, ...]
    lineups: tuple[str, ...]
    index: int  # the task's stretch of the held-out seed block; never reused
    partnership: bool = False
    max_pip: int = 6
    hand_size: int | None = None
    ladder: str | None = None  # the frozen ladder (block_env.benchmark.elo) rating agents
    description: str = ""
    opener: str = "rotate"
    episode: str = "hand"
    # the field's networks were trained for another game (the rotating lead, one
    # hand); the task plays them there as they are, and only the agent's fit is checked
    field_off_its_game: bool = False

    @property
    def name(self) -> str:
        """The task id without its version (``block-2p``)."""
        return self.id.rsplit("-v", 1)[0]

    @property
    def version(self) -> int:
        return int(self.id.rsplit("-v", 1)[1])

    @property
    def deal_seed(self) -> int:
        """Seed of deal 0 of the held-out set."""
        return HELD_OUT_SEED + self.index * SEEDS_PER_TASK

    def env_kwargs(self) -> dict[str, Any]:
        """The keywords of ``raw_env`` (and of ``evaluate``) for this task's game."""
        out: dict[str, Any] = {
            "num_players": self.num_players,
            "episode": self.episode,
            "opener": self.opener,
            "partnership": self.partnership,
            "max_pip": self.max_pip,
        }
        if self.hand_size is not None:
            out["hand_size"] = self.hand_size
        return out

    @property
    def is_plain_hand(self) -> bool:
        """One hand with the rotating lead: the game every trainer can play."""
        return self.opener == "rotate" and self.episode == "hand"

    def train_overrides(self) -> list[str]:
        """``train.py`` settings for the task's game."""
        out = [f"num_players={self.num_players}", f"partnership={str(self.partnership).lower()}"]
        out.append(f"max_pip={self.max_pip}")
        if self.hand_size is not None:
            out.append(f"hand_size={self.hand_size}")
        if not self.is_plain_hand:
            out += [f"opener={self.opener}", f"episode={self.episode}"]
        return out

    def block_config(self) -> BlockConfig:
        return BlockConfig(reward="zero_sum", **self.env_kwargs())

    def definition(self) -> dict[str, Any]:
        """Everything that defines the task (what its test pins), as JSON-ready values."""
        out = {
            "id": self.id,
            "game": {**self.env_kwargs(), "reward": "zero_sum"},
            "deal_seed": self.deal_seed,
            "deals": self.deals,
            "field": [[o.spec, o.deals] for o in self.field],
            "lineups": list(self.lineups),
            "ladder": self.ladder,
        }
        if self.field_off_its_game:
            out["field_off_its_game"] = True
        return out


def _field(network: str | None, pimc20: int, pimc100: int) -> tuple[Opponent, ...]:
    base = [Opponent("random"), Opponent("greedy"), Opponent("rules")]
    base += [Opponent("pimc-20", pimc20), Opponent("pimc-100", pimc100)]
    if network is not None:
        base.append(Opponent(network))
    return tuple(base)


_TASKS = (
    Task(
        "block-2p-v1",
        2,
        deals=4000,
        field=_field("block-2p", 1000, 250),
        lineups=("alone",),
        index=0,
        ladder="block-2p-v1",
        description="2 players, individual play, the full double-six set",
    ),
    Task(
        "block-3p-v1",
        3,
        deals=8000,
        field=_field("block-3p", 400, 100),
        lineups=("alone", "field"),
        index=1,
        ladder="block-3p-v1",
        description="3 players, individual play",
    ),
    Task(
        "block-4p-v1",
        4,
        deals=12500,
        field=_field("block-4p", 250, 50),
        lineups=("alone", "field"),
        index=2,
        ladder="block-4p-v1",
        description="4 players, individual play",
    ),
    Task(
        "block-partnership-v1",
        4,
        deals=25000,
        field=_field("block-partnership", 250, 50),
        lineups=("team", "ad_hoc"),
        index=3,
        partnership=True,
        description="4 players in two teams (seats 0 and 2 against 1 and 3)",
    ),
    Task(
        "block-d2-2p-v1",
        2,
        deals=5000,
        field=_field(None, 5000, 1000),
        lineups=("alone",),
        index=4,
        max_pip=2,
        hand_size=2,
        description="2 players, tiles [0|0]..[2|2], 2 tiles each: exact exploitability",
    ),
    Task(
        "block-d3-2p-v1",
        2,
        deals=5000,
        field=_field(None, 5000, 1000),
        lineups=("alone",),
        index=5,
        max_pip=3,
        hand_size=2,
        description="2 players, tiles [0|0]..[3|3], 2 tiles each: exact exploitability",
    ),
    Task(
        "block-2p-hd-v1",
        2,
        deals=4000,
        field=_field("block-2p", 1000, 250),
        lineups=("alone",),
        index=6,
        opener="highest_double",
        field_off_its_game=True,
        description="2 players, the holder of the highest double leads it, one hand",
    ),
    Task(
        "block-2p-match-v1",
        2,
        deals=1000,
        field=_field("block-2p", 250, 50),
        lineups=("alone",),
        index=7,
        episode="match",
        description="2 players, whole matches to 100: the share of matches won",
    ),
    Task(
        "block-3p-hd-v1",
        3,
        deals=8000,
        field=_field("block-3p", 400, 100),
        lineups=("alone", "field"),
        index=8,
        opener="highest_double",
        field_off_its_game=True,
        description="3 players, the holder of the highest double leads it, one hand",
    ),
    Task(
        "block-4p-hd-v1",
        4,
        deals=12500,
        field=_field("block-4p", 250, 50),
        lineups=("alone", "field"),
        index=9,
        opener="highest_double",
        field_off_its_game=True,
        description="4 players, the holder of the highest double leads it, one hand",
    ),
    Task(
        "block-partnership-hd-v1",
        4,
        deals=25000,
        field=_field("block-partnership", 250, 50),
        lineups=("team", "ad_hoc"),
        index=10,
        partnership=True,
        opener="highest_double",
        field_off_its_game=True,
        description="partnership, the holder of the highest double leads it, one hand",
    ),
    Task(
        "block-3p-match-v1",
        3,
        deals=334,
        field=_field("block-3p", 34, 8),
        lineups=("alone", "field"),
        index=11,
        episode="match",
        description="3 players, whole matches to 61: the share of matches won",
    ),
    Task(
        "block-4p-match-v1",
        4,
        deals=250,
        field=_field("block-4p", 25, 5),
        lineups=("alone", "field"),
        index=12,
        episode="match",
        description="4 players, whole matches to 61: the share of matches won",
    ),
    Task(
        "block-partnership-match-v1",
        4,
        deals=250,
        field=_field("block-partnership", 25, 5),
        lineups=("team", "ad_hoc"),
        index=13,
        partnership=True,
        episode="match",
        description="partnership, whole matches to 100: the share of matches won",
    ),
)

TASKS: dict[str, Task] = {t.id: t for t in _TASKS}

NETWORKS_DIR = Path(__file__).resolve().parent / "networks"
_2P = (
    "block-2p-v1/block-2p.pt",
    "82065c7007b08e8f2fc2ab4ea2feccebf00da9a654c03327addf505b78969b06",
)
_3P = (
    "block-3p-v1/block-3p.pt",
    "e47588b84d4f12682350ddec8c736faf0530fc83be70f5251e23899f291f3cf4",
)
_4P = (
    "block-4p-v1/block-4p.pt",
    "34e65c1145194a304a18fe7ce62db6cf231fa3d56a8939175b4274d0ac1cc631",
)
_PARTNERSHIP = (
    "block-partnership-v1/block-partnership.pt",
    "0f2fe29bc743a724b852524e2b874adbe6f242e22f5c8a1da5a22df74a55a1ca",
)
_PARTNERSHIP_HD = (
    "block-partnership-hd-v1/block-partnership.pt",
    "f018eba4e594164bc4c93811b1a43851e4c2832fdd3db4ff481d8499e34fd7bc",
)
# The networks of each task's field, as the task froze them: task id -> {the network's name
# in the field: (its file under NETWORKS_DIR, the file's sha256)}. Each file is named by the
# task that first froze it; the runner refuses to play a file whose sha256 differs.
FROZEN_NETWORKS: dict[str, dict[str, tuple[str, str]]] = {
    "block-2p-v1": {"block-2p": _2P},
    "block-2p-hd-v1": {"block-2p": _2P},
    "block-2p-match-v1": {"block-2p": _2P},
    "block-3p-v1": {"block-3p": _3P},
    "block-3p-hd-v1": {"block-3p": _3P},
    "block-3p-match-v1": {"block-3p": _3P},
    "block-4p-v1": {"block-4p": _4P},
    "block-4p-hd-v1": {"block-4p": _4P},
    "block-4p-match-v1": {"block-4p": _4P},
    "block-partnership-v1": {"block-partnership": _PARTNERSHIP},
    "block-partnership-hd-v1": {"block-partnership": _PARTNERSHIP_HD},
    "block-partnership-match-v1": {"block-partnership": _PARTNERSHIP_HD},
}


def field_network(task: Task, spec: str) -> tuple[str, str | None]:
    """(the spec that plays the field opponent ``spec`` of ``task``, the sha256 its policy
    file must have): a field network is the path of the file the task froze, anything else
    plays as it is (no file to check)."""
    frozen = FROZEN_NETWORKS.get(task.id, {}).get(spec)
    if frozen is None:
        return spec, None
    return str(NETWORKS_DIR / frozen[0]), frozen[1]


def get_task(task_id: str) -> Task:
    """The task named ``task_id``; ValueError listing the task ids otherwise."""
    try:
        return TASKS[task_id]
    except KeyError:
        raise ValueError(f"unknown task {task_id!r}: use one of {', '.join(TASKS)}") from None


def deal(task: Task, d: int) -> tuple[int, tuple[int, ...]]:
    """Deal ``d`` of the task's held-out set: (the seat the lot makes leader, each seat's
    hand as a tile mask), exactly as ``raw_env`` deals it for seed ``deal_seed + d``."""
    state = rules.new_match(task.block_config(), seeding.np_random(task.deal_seed + d)[0])
    return state.leader, tuple(state.hands)


def deal_digest(task: Task, deals: int | None = None) -> str:
    """sha256 of the first ``deals`` deals of the held-out set (default: all of them): the
    leader and the hands of every deal, as little-endian int64s."""
    count = task.deals if deals is None else deals
    h = hashlib.sha256()
    for d in range(count):
        leader, hands = deal(task, d)
        h.update(np.array((leader, *hands), dtype="<i8").tobytes())
    return h.hexdigest()
