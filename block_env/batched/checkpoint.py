"""The complete state of a numpy ``BatchedEnv`` as plain data, and back (``state_dict``).

A resumed training run must continue the very games the stopped one was playing, with the
same future deals: every array the engine holds and the state of the deal and sampling
generators are saved. The arrays are found generically (every writable numpy array attribute
of the engine) and restored in place, so views between them stay valid and every state array
of the engine is covered. The state holds numpy arrays and plain dicts only; a checkpoint
writer turns the arrays into whatever its format stores.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _generator_state(rng: Any) -> Any:
    if isinstance(rng, np.random.Generator):
        return rng.bit_generator.state
    if rng is None:
        return None
    raise TypeError(f"cannot save a {type(rng).__name__} generator (numpy backend only)")


def _set_generator_state(rng: Any, state: Any) -> Any:
    if state is None:
        return None
    if rng is None:
        rng = np.random.default_rng()
    rng.bit_generator.state = state
    return rng


def _arrays(engine: Any) -> dict[str, np.ndarray]:
    """The engine's writable numpy arrays by attribute name (read-only ones are constant
    tables or views of state arrays, restored through those)."""
    return {
        k: v for k, v in vars(engine).items() if isinstance(v, np.ndarray) and v.flags.writeable
    }


def state_of(env: Any) -> dict[str, Any]:
    """The state of a numpy-backend ``BatchedEnv``: ``arrays`` (copies), the generators'
    states, whether it was reset."""
    deals = env.deals
    if hasattr(deals, "rngs"):
        deal_rng = None if deals.rngs is None else [_generator_state(r) for r in deals.rngs]
    else:
        deal_rng = _generator_state(deals.rng)
    return {
        "arrays": {name: value.copy() for name, value in _arrays(env.engine).items()},
        "deal_rng": deal_rng,
        "sample_rng": _generator_state(env._sample_rng),
        "ready": bool(env._ready),
    }


def load_state(env: Any, state: dict[str, Any]) -> None:
    """Put ``env`` (built with the same configuration and batch size) in the saved state.
    ValueError, with ``env`` unchanged, when the state does not fit it."""
    current = _arrays(env.engine)
    saved = {name: np.asarray(value) for name, value in state["arrays"].items()}
    if set(saved) != set(current):
        raise ValueError(f"saved engine state holds {sorted(saved)}, this engine {sorted(current)}")
    for name, value in saved.items():
        if value.shape != current[name].shape:
            raise ValueError(
                f"saved engine array {name} has shape {value.shape}, "
                f"this engine {current[name].shape}"
            )
    for name, value in saved.items():
        current[name][...] = value  # in place: views of this array stay views
    deals = env.deals
    if hasattr(deals, "rngs"):
        rngs = state["deal_rng"]
        deals.rngs = None if rngs is None else [_set_generator_state(None, s) for s in rngs]
    else:
        deals.rng = _set_generator_state(deals.rng, state["deal_rng"])
    env._sample_rng = _set_generator_state(env._sample_rng, state["sample_rng"])
    env._ready = bool(state["ready"])
