"""The data-parallel PPO run under Ray Train (``python train.py ... ray_workers=N``) on a
simulated 2-node Ray cluster (``ray.cluster_utils.Cluster``, one CPU per node, so one rank
lands on each node): the run folder and ``policy.pt`` end up where ``train.py`` was started,
the log counts both ranks' steps, ``--resume`` continues the run, and an error on the
workers comes back as one line. Runs in the Ray venv (``bash .ci/extra-rllib``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="needs the rllib extra: bash .ci/extra-rllib")
from ray.cluster_utils import Cluster  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from helpers import assert_same_training  # noqa: E402

import train  # noqa: E402
from block_env.training.runs import RunFolder  # noqa: E402

SMOKE = str(ROOT / "configs" / "smoke.yaml")
RAY_FORWARDED = re.compile(r"^(\x1b\[[0-9;]*m)?\(\w+ pid=\d+")


@pytest.fixture(scope="module")
def two_nodes():
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    cluster.add_node(num_cpus=1, resources={"second_node": 1})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address)
    yield cluster
    ray.shutdown()
    cluster.shutdown()


def test_two_ranks_on_two_nodes_write_the_run_folder_here_and_resume(
    two_nodes: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    nodes = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    assert len(nodes) == 2
    run = tmp_path / "run"
    common = [SMOKE, f"run_dir={run}", "ray_workers=2", "checkpoint_every=2"]
    assert train.main([*common, "total_steps=2048"]) == 0
    records = RunFolder(run).read_log()
    assert [r["update"] for r in records] == [1, 2, 3, 4]
    assert all(r["world_size"] == 2 for r in records)
    assert [r["env_steps"] for r in records] == [512, 1024, 1536, 2048]
    assert {"policy.pt", "eval.json", "log.jsonl"} <= {p.name for p in run.iterdir()}
    assert (run / "checkpoints" / "latest.pt").exists()
    # each node has one CPU and each rank needs one: the two ranks ran on the two nodes
    assert train.main([*common, "total_steps=3072", "--resume"]) == 0
    assert [r["update"] for r in RunFolder(run).read_log()] == [1, 2, 3, 4, 5, 6]
    # the same per-rank loop as torchrun's: the same run, bit for bit, as nproc=2
    local = tmp_path / "local"
    command = [sys.executable, str(ROOT / "train.py"), SMOKE, f"run_dir={local}", "nproc=2"]
    for extra in (["total_steps=2048"], ["total_steps=3072", "--resume"]):
        done = subprocess.run(
            [*command, "checkpoint_every=2", *extra],
            cwd=ROOT,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
    assert_same_training(run, local)


def test_an_error_found_on_rank_0_comes_back_as_one_line(
    two_nodes: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run = tmp_path / "run"
    assert train.main([SMOKE, f"run_dir={run}", "total_steps=1024"]) == 0  # one process
    capsys.readouterr()
    # the driver reads the checkpoint; rank 0, on a Ray worker, refuses its world size
    status = train.main([SMOKE, f"run_dir={run}", "ray_workers=2", "--resume"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    # Ray forwards its actors' own log lines ("(Actor pid=...) ...") to this stderr at any
    # time; what train.py itself printed is everything else
    ours = [line for line in err if not RAY_FORWARDED.match(line)]
    assert ours[-1].startswith("train.py: error: checkpoint ") and "on 1 rank(s)" in ours[-1]
    assert not any(line.startswith("Traceback") for line in ours)
    assert os.environ.get("RAY_ADDRESS") is None  # the fixture's cluster, not a global one
