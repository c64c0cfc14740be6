"""Choosing a ``BatchedEnv``'s array backend and kernels: ``make_backend`` builds the numpy or
the torch backend (``backend``, ``torch_backend``; torch itself is imported only when a torch
backend is made), ``make_kernels`` the backend the engine computes with and whether the
compiled kernels run (the choices are described in ``backend``'s docstring).
"""

from __future__ import annotations

from typing import Any

from block_env.batched.backend import BACKENDS, NumpyBackend, numba_available
from block_env.batched.torch_backend import TorchBackend, TorchNumpyBackend

KERNELS = ("auto", "numpy", "numba", "torch")


def make_backend(backend: str, device: Any) -> Any:
    """The backend object for ``backend`` ("numpy" or "torch"); ValueError otherwise."""
    if backend == "numpy":
        if str(device) != "cpu":
            raise ValueError(f"device={device!r} is not allowed with backend='numpy': use 'cpu'")
        return NumpyBackend()
    if backend == "torch":
        return TorchBackend(device)
    raise ValueError(f"backend={backend!r} is not allowed: use one of {', '.join(BACKENDS)}")


def make_kernels(backend: Any, kernels: str) -> tuple[Any, bool]:
    """(the backend the engine computes with, whether its compiled kernels run): ``backend``
    itself, or for torch on the CPU with kernels other than "torch" a ``TorchNumpyBackend``
    over it. "auto" takes the compiled kernels on the CPU where numba is installed, else
    numpy's (torch's on other devices). ValueError for a choice the device or the install
    cannot run."""
    if kernels not in KERNELS:
        raise ValueError(f"kernels={kernels!r} is not allowed: use one of {', '.join(KERNELS)}")
    on_cpu = backend.name == "numpy" or backend.device.type == "cpu"
    if kernels == "torch" and backend.name == "numpy":
        raise ValueError("kernels='torch' needs backend='torch'")
    if kernels in ("numpy", "numba") and not on_cpu:
        raise ValueError(f"kernels={kernels!r} needs the CPU, not device {str(backend.device)!r}")
    if kernels == "numba" and not numba_available():
        raise ValueError(
            "kernels='numba' needs numba, which is not installed: "
            'pip install "block-env[fast]" (or use kernels="numpy")'
        )
    if kernels == "torch" or not on_cpu:
        return backend, False
    compute = backend if backend.name == "numpy" else TorchNumpyBackend(backend)
    compiled = kernels == "numba" or (kernels == "auto" and numba_available())
    return compute, compiled
