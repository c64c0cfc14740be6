"""Regress a policy's logits on search values of its moves (exact or PIMC's).

Reads the decisions of ``tools/oracle_dataset.py`` and trains the actor so that, on each
observation, its logits minus their mean over the legal moves match the labels (the true
deal's exact values, or PIMC's means) minus theirs, divided by ``--temperature`` (points).
The greedy move is then the move of highest expected value under the labels; the sampled
policy is the Boltzmann policy over those values. ``--prior`` keeps the initial policy in
the target instead: the actor is fitted by cross-entropy to
softmax(initial log-probabilities + labels / temperature) over the legal moves, the policy
whose greedy move is the one ``agents.guided`` plays at weight = temperature (a one-step
policy improvement, as in expert iteration), so moves the labels find close stay as the
initial policy played them. ``--label-net FILE`` replaces the labels by a network's
logits: fitted first without ``--prior`` at temperature 1 to noisy labels (one true deal
each), a network estimates each move's mean value over all the decisions like this one,
and a ``--prior`` fit to its estimates is that policy step with the label noise averaged
out. Reports, on a held-out tenth of the hands,
the mean regret (points the greedy move loses against the best move of the true deal) before
and after.

    python tools/oracle_finetune.py runs/oracle/partnership.npz --init block-partnership \
        --out runs/oracle/partnership_oracle.pt
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.policy_files import read_policy_file, save_policy


def centred(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``x`` minus its mean over the legal entries, 0 on the illegal ones."""
    x = torch.where(mask, x, torch.zeros_like(x))
    mean = x.sum(1, keepdim=True) / mask.sum(1, keepdim=True)
    return torch.where(mask, x - mean, torch.zeros_like(x))


def masked_log_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Log-probabilities over the legal moves (about -1e30 on the illegal ones)."""
    return logits.masked_fill(~mask, -1e30).log_softmax(1)


def improved_policy(
    logits: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, temperature: float
) -> torch.Tensor:
    """softmax(log-probabilities + labels / temperature) over the legal moves, 0 elsewhere:
    the policy tilted towards the moves the labels value, most where it was unsure."""
    logp = masked_log_softmax(logits, mask)
    return (logp + labels / temperature).masked_fill(~mask, -1e30).softmax(1)


def regret_of(pick: torch.Tensor, mask: torch.Tensor, values: torch.Tensor) -> float:
    """Mean points the moves ``pick`` give up against the true deal's best legal move."""
    best = values.masked_fill(~mask, -1e30).max(1).values
    got = values.gather(1, pick[:, None])[:, 0]
    return float((best - got).mean())


@torch.no_grad()
def net_labels(
    model: Any, obs: torch.Tensor, mask: torch.Tensor, batch: int = 65536
) -> torch.Tensor:
    """``model``'s logits on each observation, 0 on the illegal moves: the labels a network
    fitted by this tool without ``--prior`` at temperature 1 gives (its estimate of the
    labels' values in points, averaged over every decision like this one)."""
    out = torch.cat([model.logits(obs[i : i + batch]) for i in range(0, len(obs), batch)])
    return out.masked_fill(~mask, 0.0)


@torch.no_grad()
def regret(model: Any, obs: torch.Tensor, mask: torch.Tensor, values: torch.Tensor) -> float:
    """``regret_of`` the model's greedy moves."""
    return regret_of(model.logits(obs).masked_fill(~mask, -1e30).argmax(1), mask, values)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data", type=Path, nargs="+")
    p.add_argument("--init", default="block-partnership")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--temperature", type=float, default=2.0)
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--prior",
        action="store_true",
        help="fit softmax(initial log-probabilities + labels / temperature) by cross-entropy",
    )
    p.add_argument(
        "--label-net",
        help="label each decision with this policy file's logits instead of the data's labels "
        "(a network this tool fitted without --prior at temperature 1: denoised values)",
    )
    a = p.parse_args()
    if a.temperature <= 0 or a.epochs < 0 or a.lr <= 0 or a.batch < 1:
        p.error("--temperature and --lr must be > 0, --epochs >= 0 and --batch >= 1")
    torch.manual_seed(a.seed)
    parts = [np.load(f) for f in a.data]
    obs = torch.from_numpy(np.concatenate([d["obs"] for d in parts]))
    mask = torch.from_numpy(np.concatenate([d["mask"] for d in parts]))
    labels = torch.from_numpy(np.nan_to_num(np.concatenate([d["values"] for d in parts])))
    if a.label_net:
        labels = net_labels(read_policy_file(a.label_net).model, obs, mask)
    exact = "oracle_values" if all("oracle_values" in d for d in parts) else "values"
    values = torch.from_numpy(np.nan_to_num(np.concatenate([d[exact] for d in parts])))
    n = len(obs)
    if all("deal" in d for d in parts):  # a tenth of the deals, whatever the file order
        held = torch.from_numpy(np.concatenate([d["deal"] for d in parts]) % 10 == 9)
    else:  # the last hands (contiguous seeds) are the held-out tenth
        held = torch.zeros(n, dtype=torch.bool)
        held[int(0.9 * n) :] = True
    train_idx = torch.nonzero(~held)[:, 0]
    pf = read_policy_file(a.init)
    model = pf.model
    if a.prior:
        with torch.no_grad():
            target = improved_policy(model.logits(obs), labels, mask, a.temperature)
    else:
        target = centred(labels, mask) / a.temperature
    v = (obs[held], mask[held], values[held])
    print(f"{n} decisions ({int(held.sum())} held out); regret before {regret(model, *v):.3f}")
    if exact != "values":  # search labels: the regret of their own best move
        best_label = labels[held].masked_fill(~v[1], -1e30).argmax(1)
        print(f"the labels' own held-out regret: {regret_of(best_label, v[1], v[2]):.3f}")
    if all("compare_action" in d for d in parts):
        pick = torch.from_numpy(np.concatenate([d["compare_action"] for d in parts]))[held]
        print(f"the compared agent's held-out regret: {regret_of(pick, v[1], v[2]):.3f}")
    opt = torch.optim.Adam(model.actor_body.parameters(), lr=a.lr)
    opt.add_param_group({"params": model.policy_head.parameters()})
    for epoch in range(a.epochs):
        perm = train_idx[torch.randperm(len(train_idx))]
        total = 0.0
        for i in range(0, len(perm), a.batch):
            b = perm[i : i + a.batch]
            if a.prior:
                logp = masked_log_softmax(model.logits(obs[b]), mask[b])
                loss = -(target[b] * logp.masked_fill(~mask[b], 0.0)).sum(1).mean()
            else:
                out = centred(model.logits(obs[b]), mask[b])
                loss = ((out - target[b]) ** 2).sum(1).div(mask[b].sum(1)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(b)
        print(
            f"epoch {epoch + 1}: loss {total / len(perm):.4f}, held-out regret "
            f"{regret(model, *v):.3f}",
            flush=True,
        )
    meta = {
        "oracle_data": [str(f) for f in a.data],
        "prior": a.prior,
        "temperature": a.temperature,
        "label_net": a.label_net,
    }
    save_policy(a.out, model, meta=meta, game=pf.game)
    print(f"-> {a.out}")


if __name__ == "__main__":
    main()
