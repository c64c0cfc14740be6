"""``benchmarks/bench_trainer.py`` still finds the trainer's parts it times (it wraps them by
name), run on a tiny config in a subprocess (the wrapping is process-wide)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_trainer_times_every_part():
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_trainer.py"),
            "--updates",
            "2",
            "num_envs=16",
            "rollout_steps=8",
            "minibatch_size=32",
            "hidden=16,16",
            "eval_hands=12",
            "final_eval_hands=12",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={"OMP_NUM_THREADS": "1", "PATH": ""},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout

    def seconds(label: str) -> float:
        m = re.search(rf"^{re.escape(label)}\s+([\d.]+)\s+([\d.]+)", text, re.M)
        assert m, f"no row {label!r} in:\n{text}"
        return float(m.group(1))

    for label in ("rollout (Collector.collect)", "update (ppo_update)"):
        assert seconds(label) > 0
    assert "learner forward (16 calls)" in text
    assert seconds("periodic eval (1 call, 12 hands x opponent)") > 0
    assert seconds("final eval (1 call, 12 hands x opponent)") > 0
    assert re.search(r"wall: +[\d.]+ min, [\d,]+ agent-steps/s", text)
