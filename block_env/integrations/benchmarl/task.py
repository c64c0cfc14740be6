"""Block as a BenchMARL task family: ``block/two_player``, ``block/three_player``,
``block/four_player`` and ``block/partnership``.

Each task runs ``num_envs`` games of ``block_env.parallel_env``'s view (every seat acts
each step; the seats not to act have the wait action alone) on the batched engine in one
TorchRL env of batch size ``[num_envs]`` (``BatchedBlockEnv``,
``block_env.integrations.torchrl_batched``), with its configuration (the env's keywords)
read from ``conf/task/block/<task>.yaml`` beside this module. With the task key
``batched: false`` each game is instead a ``parallel_env`` in TorchRL's
``PettingZooWrapper``: the same keys, specs and data, several times slower. Groups: one
per seat in individual play (``player_0``, ``player_1``, ...: each seat its own policy),
one per team in partnership (``team_0`` = seats 0 and 2, ``team_1`` = seats 1 and 3). The
centralised state (``"state"``) is the env's privileged full position, which MAPPO's and
QMIX's critics and mixers read. ``register()`` adds the tasks to BenchMARL's registry, so
its Hydra command (``python -m benchmarl.run task=block/partnership ...``, with the search
path plugin this distribution ships) and its Python API find them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarl.environments import Task, TaskClass, task_config_registry
from benchmarl.utils import DEVICE_TYPING
from torchrl.data import Composite
from torchrl.envs import EnvBase, PettingZooWrapper

from block_env.config import BlockConfig
from block_env.parallel import parallel_env

CONF_DIR = Path(__file__).resolve().parent / "conf"
ENV_NAME = "block"
ENV_KEYS = (
    "num_players",
    "partnership",
    "episode",
    "opener",
    "reward",
    "max_pip",
    "hand_size",
    "target_score",
)
TASK_KEYS = ("batched",)  # options of the task, not keywords of the game


def group_map_of(num_players: int, partnership: bool) -> dict[str, list[str]]:
    """The task's groups: one per team in partnership, one per seat otherwise."""
    seats = [f"player_{i}" for i in range(num_players)]
    if partnership:
        return {"team_0": seats[0::2], "team_1": seats[1::2]}
    return {seat: [seat] for seat in seats}


def env_kwargs_of(config: dict[str, Any]) -> dict[str, Any]:
    """``parallel_env``'s keywords from a task configuration (ValueError on an unknown key
    or a bad value, naming it)."""
    unknown = sorted(set(config) - set(ENV_KEYS) - set(TASK_KEYS))
    if unknown:
        raise ValueError(f"unknown block task key(s) {unknown}: use {list(ENV_KEYS + TASK_KEYS)}")
    is_batched(config)  # ValueError on a bad task key
    kwargs = {k: v for k, v in config.items() if v is not None and k in ENV_KEYS}
    BlockConfig(**kwargs)  # raises ValueError on a bad game
    return kwargs


def is_batched(config: dict[str, Any]) -> bool:
    """The task key ``batched`` (absent or null: True, the batched engine); ValueError
    unless a bool."""
    value = config.get("batched")
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"batched={value!r} is not allowed: use true or false")
    return value is not False


def _one_game(env: EnvBase, spec: str) -> Composite:
    """The env's ``full_<spec>_spec`` of one game (without the batched env's batch size)."""
    if env.batch_size:
        return getattr(env, f"full_{spec}_spec_unbatched")
    return getattr(env, "observation_spec" if spec == "observation" else f"full_{spec}_spec")


def max_steps_of(config: BlockConfig) -> int:
    """Steps an episode can take at most: every placement followed by the other seats'
    passes, per hand (as many hands as a match can need, for whole matches)."""
    per_hand = config.num_players * (config.num_players * config.hand_size + 1)
    hands = 1 if config.episode == "hand" else 2 * config.target + 1
    return per_hand * hands


class BlockTaskClass(TaskClass):
    """A Block task: its env (the parallel view in TorchRL's wrapper, or ``batched: true``:
    in ``BatchedBlockEnv``), groups and specs."""

    def get_env_fun(
        self,
        num_envs: int,
        continuous_actions: bool,
        seed: int | None,
        device: DEVICE_TYPING,
    ) -> Callable[[], EnvBase]:
        kwargs = env_kwargs_of(self.config)
        groups = group_map_of(kwargs["num_players"], kwargs.get("partnership", False))
        if is_batched(self.config):
            from block_env.integrations.torchrl_batched import BatchedBlockEnv

            return lambda: BatchedBlockEnv(num_envs, groups, seed=seed, device=device, **kwargs)
        seeds = itertools.count(seed or 0)  # game i of the collector: seed + i

        def one_game() -> EnvBase:
            env = PettingZooWrapper(
                env=parallel_env(**kwargs),
                group_map=groups,
                categorical_actions=True,
                device=device,
                return_state=True,
                use_mask=False,  # every seat is live at every step
                done_on_any=True,
            )
            env.set_seed(next(seeds))
            return env

        return one_game

    def supports_continuous_actions(self) -> bool:
        return False

    def supports_discrete_actions(self) -> bool:
        return True

    def has_render(self, env: EnvBase) -> bool:
        return False

    def max_steps(self, env: EnvBase) -> int:
        return max_steps_of(BlockConfig(**env_kwargs_of(self.config)))

    def group_map(self, env: EnvBase) -> dict[str, list[str]]:
        return env.group_map

    def _group_entries(self, env: EnvBase, keep: str) -> Composite:
        spec = _one_game(env, "observation").clone()
        for group in self.group_map(env):
            for key in list(spec[group].keys()):
                if key != keep:
                    del spec[group][key]
        del spec["state"]
        return spec

    def observation_spec(self, env: EnvBase) -> Composite:
        return self._group_entries(env, "observation")

    def action_mask_spec(self, env: EnvBase) -> Composite:
        return self._group_entries(env, "action_mask")

    def info_spec(self, env: EnvBase) -> Composite:
        return self._group_entries(env, "info")

    def state_spec(self, env: EnvBase) -> Composite:
        return Composite({"state": _one_game(env, "observation")["state"].clone()})

    def action_spec(self, env: EnvBase) -> Composite:
        return _one_game(env, "action")

    @staticmethod
    def env_name() -> str:
        return ENV_NAME


class BlockTask(Task):
    """The Block tasks; ``BlockTask.PARTNERSHIP.get_task()`` loads one with its YAML."""

    TWO_PLAYER = None
    THREE_PLAYER = None
    FOUR_PLAYER = None
    PARTNERSHIP = None

    @staticmethod
    def associated_class() -> type[TaskClass]:
        return BlockTaskClass

    def get_from_yaml(self, path: str | None = None) -> TaskClass:
        """The task with its configuration from ``path`` (default: this package's YAML)."""
        if path is None:
            path = str(CONF_DIR / "task" / ENV_NAME / f"{self.name.lower()}.yaml")
        return super().get_from_yaml(path)


def register() -> None:
    """Add the Block tasks to BenchMARL's task registry (``block/<task>``); idempotent."""
    for task in BlockTask:
        task_config_registry[f"{ENV_NAME}/{task.name.lower()}"] = task
