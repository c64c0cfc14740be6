"""The pgx base classes where pgx is installed, and stand-ins with the same fields otherwise.

``dataclass`` makes a frozen dataclass that is a JAX pytree (every field a leaf) with a
``replace`` method: pgx's own decorator where pgx is installed (so that flax serialization
works as for pgx's games), a minimal equivalent otherwise. ``StateBase`` and ``EnvBase`` are
``pgx.State`` and ``pgx.Env`` then, and small classes with the same fields otherwise.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import jax

_T = TypeVar("_T")

try:  # pgx is optional: the env is a pgx.Env subclass only where pgx is installed
    import pgx
    from pgx._src.struct import dataclass as _pgx_dataclass
except ImportError:  # pragma: no cover - exercised where pgx is absent
    pgx = None
    _pgx_dataclass = None

HAS_PGX = pgx is not None


def _plain_dataclass(cls: _T) -> _T:
    """A frozen dataclass registered as a pytree of all its fields, with ``replace``."""
    data_cls = dataclasses.dataclass(frozen=True)(cls)
    names = [f.name for f in dataclasses.fields(data_cls)]
    data_cls.replace = lambda self, **updates: dataclasses.replace(self, **updates)
    jax.tree_util.register_dataclass(data_cls, data_fields=names, meta_fields=[])
    return data_cls


dataclass = _pgx_dataclass if HAS_PGX else _plain_dataclass

if HAS_PGX:
    StateBase: Any = pgx.State
    EnvBase: Any = pgx.Env
else:

    @_plain_dataclass
    class StateBase:  # the fields every pgx state has, in pgx's order
        current_player: jax.Array
        observation: jax.Array
        rewards: jax.Array
        terminated: jax.Array
        truncated: jax.Array
        legal_action_mask: jax.Array
        _step_count: jax.Array

    class EnvBase:  # pgx.Env's interface is implemented by the subclass itself
        pass
