"""block-env: Block dominoes for reinforcement learning.

``block_env.env(**config)`` gives the wrapped PettingZoo AEC env, ``block_env.raw_env`` the
bare one. Heavy dependencies (torch, rendering libraries) are imported only when used.
"""

from block_env.config import BlockConfig
from block_env.env import env, raw_env
from block_env.observation import STANDARD_OBS_DIM, decode
from block_env.parallel import parallel_env
from block_env.tiles import (
    RENAMED,
    STANDARD_NUM_ACTIONS,
    STANDARD_PASS,
    STANDARD_TILES,
    renamed_getattr,
)

__all__ = [
    "ENV_ID",
    "BlockConfig",
    "STANDARD_NUM_ACTIONS",
    "STANDARD_OBS_DIM",
    "STANDARD_PASS",
    "STANDARD_TILES",
    "decode",
    "env",
    "parallel_env",
    "raw_env",
]
__version__ = "0.2.0"
ENV_ID = "block_env/block-v1"  # PettingZoo registry id; the version follows env.py's history


__getattr__ = renamed_getattr(__name__, {**RENAMED, "OBS_DIM": "STANDARD_OBS_DIM"}, globals())


def _register() -> None:
    try:
        from pettingzoo import aec_registry, register
    except ImportError:  # older PettingZoo without a registry
        return
    if ENV_ID not in aec_registry:
        register("aec", ENV_ID, entry_point="block_env.env:env")


_register()
