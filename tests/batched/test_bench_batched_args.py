"""``benchmarks/bench_batched.py`` refuses CPU-only engines on a GPU before it measures."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location(
        "bench_batched", ROOT / "benchmarks" / "bench_batched.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("engine", ["numpy", "numba", "torch", "torch-numba"])
def test_cpu_kernels_on_cuda_are_refused_naming_torch_ops(engine, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        _bench().main(["--device", "cuda", "--backends", engine, "--sizes", "4"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"--backends {engine} compute on the CPU" in err and "torch-ops" in err
