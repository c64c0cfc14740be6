"""tools/oracle_dataset.py and tools/oracle_finetune.py: exact labels, and a fit that learns."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import oracle_dataset  # noqa: E402
import oracle_finetune  # noqa: E402


@pytest.fixture(scope="module")
def labelled() -> dict[str, np.ndarray]:
    return oracle_dataset._label_hands(
        oracle_dataset.Job("block-partnership", 7, 3, greedy=True, worker=1, compare="greedy")
    )


def test_labels_cover_exactly_the_legal_moves(labelled: dict[str, np.ndarray]) -> None:
    obs, mask, values = labelled["obs"], labelled["mask"], labelled["values"]
    assert len(obs) == len(mask) == len(values) == len(labelled["compare_action"]) > 0
    assert (mask.sum(1) > 1).all(), "only decisions with a choice are labelled"
    assert np.array_equal(np.isfinite(values), mask)
    assert mask[np.arange(len(mask)), labelled["compare_action"]].all()


def test_labels_are_the_solvers_values_of_the_true_deal() -> None:
    from agents.solver import action_values, position_from_state
    from block_env.env import raw_env

    env = raw_env(num_players=4, partnership=True, episode="hand")
    env.reset(seed=7)
    values = action_values(env.unwrapped.config, position_from_state(env.unwrapped.game))
    first_hand = oracle_dataset._label_hands(
        oracle_dataset.Job("block-partnership", 7, 1, greedy=True, worker=1)
    )
    assert "compare_action" not in first_hand and "oracle_values" not in first_hand
    row = first_hand["values"][0]  # the opening lead: seven tiles to choose from
    assert {a: row[a] for a in np.flatnonzero(np.isfinite(row))} == pytest.approx(values)


def test_pimc_labels_are_pimcs_mean_values_beside_the_true_deals() -> None:
    from agents.pimc import PIMCAgent
    from agents.solver import action_values, position_from_state
    from block_env.env import raw_env

    env = raw_env(num_players=4, partnership=True, episode="hand")
    env.reset(seed=7)
    obs = env.last()[0]
    exact = action_values(env.unwrapped.config, position_from_state(env.unwrapped.game))
    pimc = PIMCAgent(worlds=3, seed=7)
    mean = {a: t / 3 for a, t in pimc.action_totals(obs).items()}
    # a time bound of a nanosecond still plays the first of the three hands, and no other
    job = oracle_dataset.Job("block-partnership", 7, 3, greedy=True, pimc_worlds=3, seconds=1e-9)
    hand = oracle_dataset._label_hands(job)
    assert int(hand["hands_played"]) == 1 and set(hand["deal"].tolist()) == {7}
    first, truth = hand["values"][0], hand["oracle_values"][0]
    assert {a: first[a] for a in np.flatnonzero(np.isfinite(first))} == pytest.approx(mean)
    assert {a: truth[a] for a in np.flatnonzero(np.isfinite(truth))} == pytest.approx(exact)
    assert mean != pytest.approx(exact), "three sampled deals differ from the true one"


def test_centred_and_regret() -> None:
    mask = torch.tensor([[True, True, False]])
    assert oracle_finetune.centred(torch.tensor([[1.0, 3.0, 9.0]]), mask).tolist() == [
        [-1.0, 1.0, 0.0]
    ]

    class Fixed:
        def logits(self, obs: torch.Tensor) -> torch.Tensor:
            return torch.tensor([[5.0, 1.0, 9.0]])

    values = torch.tensor([[2.0, 6.0, 0.0]])
    # the illegal third move is never picked; the first gives up 4 points to the second
    assert oracle_finetune.regret(Fixed(), None, mask, values) == pytest.approx(4.0)


def test_fit_lowers_its_loss(labelled, tmp_path, monkeypatch, capsys) -> None:
    data = tmp_path / "d.npz"
    np.savez(data, **labelled)
    out = tmp_path / "p.pt"
    argv = ["oracle_finetune.py", str(data), "--out", str(out), "--epochs", "8", "--lr", "1e-3"]
    monkeypatch.setattr(sys, "argv", argv)
    oracle_finetune.main()
    lines = capsys.readouterr().out.splitlines()
    losses = [float(ln.split("loss ")[1].split(",")[0]) for ln in lines if ln.startswith("epoch")]
    assert len(losses) == 8 and losses[-1] < losses[0]
    assert any(ln.startswith("the compared agent's held-out regret") for ln in lines)
    import agents

    fitted = agents.load(str(out), greedy=True)
    obs = {"observation": labelled["obs"][0], "action_mask": labelled["mask"][0]}
    assert labelled["mask"][0][fitted.act(obs)]


def test_improved_policy_tilts_the_prior_by_the_labels() -> None:
    mask = torch.tensor([[True, True, True, False]])
    logits = torch.tensor([[2.0, 0.0, 0.0, 50.0]])  # the illegal move's logit is ignored
    labels = torch.tensor([[0.0, 3.0, 0.0, 0.0]])
    tilted = oracle_finetune.improved_policy(logits, labels, mask, temperature=1.0)
    assert tilted[0, 3] == 0.0 and float(tilted.sum()) == pytest.approx(1.0)
    # probabilities in the ratio prior x exp(label / T): e^2 : e^3 : e^0
    expected = torch.tensor([np.e**2, np.e**3, 1.0]) / (np.e**2 + np.e**3 + 1.0)
    assert tilted[0, :3] == pytest.approx(expected, rel=1e-5)
    # a huge temperature keeps the prior; a tiny one plays the labels' best move
    flat = oracle_finetune.improved_policy(logits, labels, mask, temperature=1e9)
    prior = torch.tensor([np.e**2, 1.0, 1.0]) / (np.e**2 + 2.0)
    assert flat[0, :3] == pytest.approx(prior, rel=1e-5)
    sharp = oracle_finetune.improved_policy(logits, labels, mask, temperature=1e-3)
    assert int(sharp.argmax()) == 1 and float(sharp[0, 1]) == pytest.approx(1.0)


def test_fit_to_the_improved_policy_lowers_its_loss(labelled, tmp_path, monkeypatch, capsys):
    data = tmp_path / "d.npz"
    np.savez(data, **labelled)
    out = tmp_path / "p.pt"
    argv = ["oracle_finetune.py", str(data), "--out", str(out), "--epochs", "6", "--prior"]
    monkeypatch.setattr(sys, "argv", [*argv, "--temperature", "1", "--lr", "1e-3"])
    oracle_finetune.main()
    lines = capsys.readouterr().out.splitlines()
    losses = [float(ln.split("loss ")[1].split(",")[0]) for ln in lines if ln.startswith("epoch")]
    assert len(losses) == 6 and losses[-1] < losses[0]
    from agents.policy_files import read_policy_file

    meta = read_policy_file(str(out)).meta
    assert meta["prior"] is True and meta["temperature"] == 1.0


def test_net_labels_are_the_networks_logits_on_the_legal_moves(labelled) -> None:
    import agents

    model = agents.load("block-partnership").model
    obs, mask = torch.from_numpy(labelled["obs"]), torch.from_numpy(labelled["mask"])
    got = oracle_finetune.net_labels(model, obs, mask, batch=5)  # several batches
    with torch.no_grad():
        whole = model.logits(obs)
    assert torch.allclose(got[mask], whole[mask], atol=1e-5)  # batches round apart
    assert (got[~mask] == 0).all() and (whole[~mask] != 0).any()


def test_prior_fit_to_a_label_net_targets_its_values(labelled, tmp_path, monkeypatch) -> None:
    """With --label-net, the --prior target tilts the prior by the network's logits, not by
    the data's labels."""
    import agents

    data = tmp_path / "d.npz"
    np.savez(data, **labelled)
    out = tmp_path / "p.pt"
    seen = []
    real = oracle_finetune.improved_policy
    monkeypatch.setattr(
        oracle_finetune,
        "improved_policy",
        lambda lg, lb, m, t: seen.append(lb) or real(lg, lb, m, t),
    )
    argv = ["oracle_finetune.py", str(data), "--out", str(out), "--epochs", "1", "--prior"]
    monkeypatch.setattr(sys, "argv", [*argv, "--label-net", "block-partnership-stage1"])
    oracle_finetune.main()
    obs, mask = torch.from_numpy(labelled["obs"]), torch.from_numpy(labelled["mask"])
    expected = oracle_finetune.net_labels(agents.load("block-partnership-stage1").model, obs, mask)
    assert len(seen) == 1 and torch.allclose(seen[0], expected, atol=1e-5)
    assert not torch.allclose(expected, torch.from_numpy(np.nan_to_num(labelled["values"])))
    from agents.policy_files import read_policy_file

    assert read_policy_file(str(out)).meta["label_net"] == "block-partnership-stage1"
