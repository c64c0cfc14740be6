"""Block as pure JAX functions with pgx's ``Env`` interface (the ``[jax]`` extra).

``make(**kwargs)`` takes ``raw_env``'s game keywords and returns a ``BlockEnv``:
``init(key)``, ``step(state, action, key=None)``, ``observe(state, player_id)``, ``id``,
``version``, ``num_players``, ``num_actions``, ``observation_shape``, and
``step_autoreset(state, action, key)`` (pgx's auto-reset in one step). States are pytrees
(``jax.jit``, ``jax.vmap``, ``jax.lax.scan``); where pgx is installed the env is a
``pgx.Env`` and its state a ``pgx.State``. The game is the AEC env's, exactly: observation,
mask, rewards and episode end (tests/fast_paths/test_jax_vs_aec.py plays them in
lockstep); ``reset_options(state)`` gives the ``raw_env`` reset options of a dealt hand.
"""

from __future__ import annotations

try:
    import jax  # noqa: F401
except ImportError as err:  # pragma: no cover - the message is the point
    raise ImportError(
        "block_env.jax needs JAX: pip install 'block-env[jax]' (or pip install 'jax[cpu]')"
    ) from err

from block_env.jax._compat import HAS_PGX
from block_env.jax.bridge import reset_options
from block_env.jax.env import ILLEGAL_ACTION_PENALTY, VERSION, BlockEnv, make
from block_env.jax.state import ENV_ID, State

__all__ = [
    "ENV_ID",
    "HAS_PGX",
    "ILLEGAL_ACTION_PENALTY",
    "VERSION",
    "BlockEnv",
    "State",
    "make",
    "reset_options",
]
