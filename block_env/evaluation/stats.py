"""The statistics of an evaluation: estimates with 95% confidence intervals computed over
deals (the paired unit of a duplicate-deal evaluation), and Bradley-Terry ratings with
bootstrap intervals for the ladder. Pure numpy, no game code."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054  # two-sided 95% normal quantile


@dataclass
class Estimate:
    """A ratio of totals over deals with its 95% CI (``lo``/``hi`` are NaN for one deal)."""

    mean: float
    lo: float
    hi: float

    def fmt(self, digits: int = 2, pct: bool = False) -> str:
        k, sign = (100.0, "") if pct else (1.0, "+")
        f = f"{sign}.{digits}f"
        if math.isnan(self.lo):
            return f"{self.mean * k:{f}}"
        return f"{self.mean * k:{f}} [{self.lo * k:{f}}, {self.hi * k:{f}}]"


def ratio_estimate(num: np.ndarray, den: np.ndarray) -> Estimate:
    """sum(num)/sum(den) with a delta-method CI over the paired units (deals). With a
    constant ``den`` this is the plain mean of per-deal means and its t-free normal CI."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    total = den.sum()
    if total <= 0:
        return Estimate(float("nan"), float("nan"), float("nan"))
    m = float(num.sum() / total)
    d = len(num)
    if d < 2:
        return Estimate(m, float("nan"), float("nan"))
    se = math.sqrt(_ratio_variance(num, den, m))
    return Estimate(m, m - Z95 * se, m + Z95 * se)


def _ratio_variance(num: np.ndarray, den: np.ndarray, m: float) -> float:
    """Delta-method variance of sum(num)/sum(den) over the units (at least two)."""
    d = len(num)
    resid = (num - m * den) / den.mean()
    return float(np.sum(resid**2) / (d * (d - 1)))


def wilson_interval(successes: float, trials: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion: always inside [0, 1], sensible at
    0/n and n/n (where the normal interval collapses to a point) and on small ``trials``.
    ``trials`` may be fractional (an effective sample size)."""
    if trials <= 0:
        return float("nan"), float("nan")
    p = min(max(successes / trials, 0.0), 1.0)
    z2 = z * z
    denom = 1.0 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    lo, hi = max(0.0, centre - half), min(1.0, centre + half)
    if p == 0.0:
        lo = 0.0
    if p == 1.0:
        hi = 1.0
    return lo, hi


def proportion_estimate(successes: np.ndarray, trials: np.ndarray) -> Estimate:
    """sum(successes)/sum(trials) over deals with a 95% Wilson score interval.

    Why Wilson on an effective sample size: a share of hands won needs an interval fit for
    proportions (the normal one leaves [0, 1] on small samples and is a point at 0/n and
    n/n), and hands are not independent: the seatings of one deal are played on the same
    tiles. The paired (over deals) variance of the ratio gives the design effect, so the
    Wilson interval uses ``n_eff = min(n, p(1-p) / var)`` trials (Kish's effective sample size,
    capped at the number of hands as Korn and Graubard do for complex samples):
    correlated hands widen it, and it is never narrower than Wilson on independent hands.
    At 0/n, n/n or with one deal there is no variance to estimate, and the interval assumes
    the worst the pairing allows: each deal counts as one trial (``n_eff`` = deals). A
    bootstrap over deals would respect the pairing too but gives the point [0, 0] at 0/n.
    """
    num = np.asarray(successes, dtype=np.float64)
    den = np.asarray(trials, dtype=np.float64)
    n = float(den.sum())
    if n <= 0:
        return Estimate(float("nan"), float("nan"), float("nan"))
    p = float(num.sum() / n)
    n_eff = float(np.count_nonzero(den > 0))  # worst case: a deal's hands all agree
    if n_eff >= 2 and 0.0 < p < 1.0:
        var = _ratio_variance(num[den > 0], den[den > 0], p)
        n_eff = n if var <= 0 else min(n, p * (1 - p) / var)
    lo, hi = wilson_interval(p * n_eff, n_eff)
    return Estimate(p, lo, hi)


def half_difference(a: Estimate, b: Estimate) -> Estimate:
    """(a - b) / 2 for two independent estimates, CI from their half-widths."""
    mean = (a.mean - b.mean) / 2
    half = 0.5 * math.hypot((a.hi - a.lo) / 2, (b.hi - b.lo) / 2)
    return Estimate(mean, mean - half, mean + half)


def bradley_terry(k: int, wins: np.ndarray, games: np.ndarray, iters: int = 500) -> np.ndarray:
    """Bradley-Terry ratings (Elo scale, first agent = 0) by the MM algorithm of Hunter
    (2004). ``wins[i, j]``: (fractional) games i won against j; ``games`` symmetric. A prior
    of one drawn game per played pair keeps ratings finite when a pair is one-sided."""
    w = wins + 0.5 * (games > 0)
    g = games + 1.0 * (games > 0)
    p = np.ones(k)
    total_wins = w.sum(axis=1)
    for _ in range(iters):
        denom = (g / (p[:, None] + p[None, :])).sum(axis=1)
        new = total_wins / np.maximum(denom, 1e-300)
        new /= np.exp(np.mean(np.log(new)))
        if np.max(np.abs(new - p)) < 1e-12:
            p = new
            break
        p = new
    elo = 400.0 * np.log10(p)
    return elo - elo[0]


def joint_deal_draw(rng: np.random.Generator, sizes: Sequence[int]) -> list[np.ndarray]:
    """One bootstrap replicate of deals shared by every series: deal indices drawn with
    replacement from the longest series' deals, each series of ``sizes`` keeping the drawn
    deals it played. The series are results on one deal set (deal ``d`` the same deal in
    each, a shorter series playing its first deals), so a deal drawn counts in all of
    them at once and their correlation over deals is kept. Series of equal length get the
    same index array; no series, no arrays."""
    if any(isinstance(s, bool) or int(s) < 1 for s in sizes):
        raise ValueError(f"sizes must be positive deal counts, got {list(sizes)!r}")
    if not sizes:
        return []
    longest = max(int(s) for s in sizes)
    idx = rng.integers(0, longest, longest)
    return [idx if int(s) == longest else idx[idx < int(s)] for s in sizes]


def bradley_terry_ci(
    k: int,
    pair_data: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]],
    bootstrap: int = 200,
    seed: int = 0,
) -> list[Estimate]:
    """Ratings with 95% percentile CIs from a bootstrap over deals: every pair's per-deal
    (wins, games) come from the same deals, and each replicate draws one set of deal
    indices for all pairs (``joint_deal_draw``), keeping the duplicate pairing of rotated
    seats inside a deal and the pairs' correlation across deals."""
    keys = list(pair_data)

    def fit(picks: list[np.ndarray] | None) -> np.ndarray:
        wins = np.zeros((k, k))
        games = np.zeros((k, k))
        for n, (i, j) in enumerate(keys):
            w, h = pair_data[(i, j)]
            idx = picks[n] if picks is not None else slice(None)
            wi, hi = float(w[idx].sum()), float(h[idx].sum())
            wins[i, j], wins[j, i] = wi, hi - wi
            games[i, j] = games[j, i] = hi
        return bradley_terry(k, wins, games)

    point = fit(None)
    rng = np.random.default_rng(seed)
    sizes = [len(pair_data[key][0]) for key in keys]
    samples = np.array([fit(joint_deal_draw(rng, sizes)) for _ in range(max(bootstrap, 0))])
    out = []
    for i in range(k):
        if len(samples) < 2:
            out.append(Estimate(float(point[i]), float("nan"), float("nan")))
        else:
            lo, hi = np.percentile(samples[:, i], [2.5, 97.5])
            out.append(Estimate(float(point[i]), float(lo), float(hi)))
    return out
