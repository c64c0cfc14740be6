"""The sb3-contrib MaskablePPO example runs on the main install (the ``train`` extra) and its
trained policy plays only legal moves through ``block_env.evaluate``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def test_sb3_example_smoke(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples/sb3_maskable_ppo.py"), "--smoke", "--json", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "vs random" in proc.stdout
    res = json.loads(out.read_text())
    assert res["learner_steps"] >= 256
    losses = res["last_losses"]
    assert {"loss", "value_loss", "policy_gradient_loss"} <= set(losses)
    assert all(np.isfinite(v) for v in losses.values())
    # block_env.evaluate plays a raw env, which raises on an illegal move: finishing the
    # evaluation means every move of the masked policy was legal.
    for phase in ("before", "after"):
        assert res[phase]["hands"] >= 40
        assert np.isfinite(res[phase]["margin"]) and 0.0 <= res[phase]["hand_win"] <= 1.0
