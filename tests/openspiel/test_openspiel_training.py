"""Training on a small tile set with the exact NashConv of the policy logged (``nashconv_every``),
and the NashConv probe itself."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("pyspiel", reason="open_spiel is not installed (pip install -e '.[openspiel]')")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import train  # noqa: E402
from block_env.openspiel import analysis as an  # noqa: E402
from block_env.openspiel.probe import NashConvProbe, deal_count  # noqa: E402

TINY = ROOT / "configs" / "tiny_2p.yaml"


class _Fixed(torch.nn.Module):
    """A stand-in network: the same logits for every observation."""

    def __init__(self, logits: np.ndarray) -> None:
        super().__init__()
        self.logits = torch.nn.Parameter(torch.as_tensor(logits, dtype=torch.float32))

    def masked_logits(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        out = self.logits.expand(obs.shape[0], -1)
        return out.masked_fill(mask == 0, torch.finfo(out.dtype).min)


@pytest.fixture(scope="module")
def probe() -> NashConvProbe:
    return NashConvProbe(num_players=2, max_pip=2, hand_size=2)


def test_probe_of_a_flat_network_is_the_uniform_policys_nash_conv(probe) -> None:
    uniform = an.nash_conv(probe.game, an.tabular(probe.game, probe.tree, an.uniform_probs))
    assert math.isclose(probe(_Fixed(np.zeros(13))), uniform, rel_tol=1e-9)


def test_probe_of_a_near_pure_network_matches_the_tabular_pure_policy(probe) -> None:
    """Logits that rank actions by id (pass last but one) give nearly the pure policy
    'lowest legal action id'; the probe's NashConv must approach that policy's."""
    logits = -30.0 * np.arange(13)
    pure = an.nash_conv(
        probe.game,
        an.tabular(probe.game, probe.tree, lambda s: {min(s.legal_actions()): 1.0}),
    )
    assert math.isclose(probe(_Fixed(logits)), pure, rel_tol=1e-6)
    assert pure != pytest.approx(probe(_Fixed(np.zeros(13))))


def test_probe_refuses_a_game_too_large_to_walk() -> None:
    assert deal_count(2, 28, 7, 2) > 10**9
    with pytest.raises(ValueError, match="deals, more than"):
        NashConvProbe(num_players=2, max_pip=6, hand_size=None)


def test_nashconv_on_the_standard_set_is_refused_before_training(tmp_path, capsys) -> None:
    status = train.main(
        [str(ROOT / "configs" / "smoke.yaml"), f"run_dir={tmp_path / 'r'}", "nashconv_every=1"]
    )
    assert status == 2
    assert "nashconv_every=1" in capsys.readouterr().err
    assert not (tmp_path / "r" / "log.jsonl").exists()


def test_bad_sets_are_refused(tmp_path, capsys) -> None:
    for bad, word in (("max_pip=7", "max_pip"), ("hand_size=4", "hand_size")):
        status = train.main([str(TINY), f"run_dir={tmp_path / 'r'}", bad])
        assert status == 2
        assert word in capsys.readouterr().err


def test_tiny_run_logs_nash_conv(tmp_path) -> None:
    """A short run of configs/tiny_2p.yaml: NashConv in the log at the configured updates,
    every value between 0 and the worst a policy can do here, and the policy file is for
    the double-two set."""
    status = train.main(
        [
            str(TINY),
            f"run_dir={tmp_path / 'r'}",
            "total_steps=24576",
            "nashconv_every=2",
            "eval_every=3",
            "eval_hands=40",
            "final_eval_hands=40",
            "progress=false",
            "tensorboard=false",
        ]
    )
    assert status == 0
    records = [json.loads(x) for x in (tmp_path / "r" / "log.jsonl").read_text().splitlines()]
    measured = [r["update"] for r in records if "nash_conv" in r]
    assert measured == [2, 3]  # every 2 updates, and the last one
    assert all(0 < r["nash_conv"] < 10 for r in records if "nash_conv" in r)
    policy = torch.load(tmp_path / "r" / "policy.pt", weights_only=True)
    assert policy["game"]["max_pip"] == 2 and policy["game"]["hand_size"] == 2
