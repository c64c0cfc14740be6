"""Cross-play in partnership Block: every pair of agents as partners (lineup positions 0 and
2, one team) against two copies of a fixed opponent, on the same duplicate deals. The table
ad hoc teamwork and zero-shot coordination studies report: a policy that scores well only
beside a copy of itself shows a large gap between its diagonal (self-play) and its row
(cross-play)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from block_env.agent_specs import AgentSpec, SetupError, agent_label, unique_labels
from block_env.evaluation.parallel import check_workers, make_pool
from block_env.evaluation.results import EvalResult, format_table
from block_env.evaluation.runner import prepare, progress_bar, run_plan
from block_env.evaluation.stats import Estimate, ratio_estimate


@dataclass
class CrossPlayResult:
    """Team margins (points per hand, the team's, with 95% CIs over deals) of every pair of
    ``agents`` as partners against two ``against``: ``margins[i][j]`` for agent ``i``
    beside agent ``j`` (symmetric: the seat rotations play both orders). Per agent:
    ``self_play`` (the diagonal), ``cross_play`` (the mean over its other partners, on the
    same deals) and ``gap`` (self-play minus cross-play)."""

    agents: list[str]
    against: str
    config: dict[str, Any]
    hands_per_pair: int
    margins: list[list[Estimate]]
    self_play: list[Estimate]
    cross_play: list[Estimate]
    gap: list[Estimate]
    seconds: float
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The table as JSON-ready values."""
        return asdict(self)

    def table(self) -> str:
        """Plain text: the matrix of team margins, then each agent's self- and cross-play."""
        grid = [[a] + [m.fmt(2) for m in row] for a, row in zip(self.agents, self.margins)]
        text = (
            f"Cross-play, partners against two {self.against}: {self.hands_per_pair} hands "
            f"per pair, {self.seconds:.0f} s\nTeam margin of row beside column, points per "
            "hand [95% CI]\n" + format_table(["", *self.agents], grid)
        )
        rows = [
            [a, s.fmt(2), c.fmt(2), g.fmt(2)]
            for a, s, c, g in zip(self.agents, self.self_play, self.cross_play, self.gap)
        ]
        head = ["agent", "with itself", "with the others (mean)", "gap"]
        return text + "\n\n" + format_table(head, rows)


def crossplay(
    agents: Sequence[AgentSpec],
    against: AgentSpec = "rules",
    hands: int = 4000,
    seed: int = 0,
    progress: bool = False,
    allow_mismatch: bool = False,
    workers: int = 1,
    **config: Any,
) -> CrossPlayResult:
    """Play every unordered pair of ``agents`` (itself included) as partners against two
    ``against``, ``hands`` per pair, all on the deals of ``seed`` (so the pairs are compared
    on the same hands). Needs at least two agents; the game is partnership Block (4 players;
    other keywords, such as ``opener``, configure it). SetupError before anything is played
    on a bad setup."""
    if config.pop("partnership", True) is not True:
        raise SetupError("cross-play seats partners: it needs partnership=True")
    if config.pop("num_players", 4) != 4:
        raise SetupError("cross-play is partnership Block: num_players must be 4")
    specs = list(agents)
    if len(specs) < 2:
        raise SetupError(f"cross-play needs at least two agents, got {len(specs)}")
    workers = check_workers(workers, [*specs, against])
    names = unique_labels([agent_label(s) for s in specs])
    against_name = agent_label(against)
    # the opponents' label in each evaluation, kept apart from a partner of the same name
    against_label = against_name + " (opponent)" if against_name in names else against_name
    common = dict(num_players=4, hands=hands, seed=seed, allow_mismatch=allow_mismatch)
    common.update(config, partnership=True)
    # check every agent and the game before the first hand is played
    plans = {}
    k = len(specs)
    for i in range(k):
        for j in range(i, k):
            if i == j:
                plans[i, j] = prepare(
                    [specs[i], against], labels=[names[i], against_label], workers=workers, **common
                )
            else:
                plans[i, j] = prepare(
                    [specs[i], specs[j], against],
                    lineup=[0, 2, 1, 2],
                    labels=[names[i], names[j], against_label],
                    workers=workers,
                    **common,
                )
    notes = sorted({note for plan in plans.values() for note in plan.notes})
    start = time.perf_counter()
    bar = progress_bar(len(plans), progress, "cross-play pairs")
    if bar is not None:
        bar.unit = "pair"
    pool = make_pool(workers) if workers > 1 else None
    results: dict[tuple[int, int], EvalResult] = {}
    try:
        for key, plan in plans.items():
            results[key] = run_plan(plan, progress, None, pool)
            if bar is not None:
                bar.update(1)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if bar is not None:
            bar.close()
    per_deal = {key: _team_points_per_hand(res) for key, res in results.items()}
    margins = [[results[min(i, j), max(i, j)].stats[0].margin for j in range(k)] for i in range(k)]
    self_play, cross_play, gap = [], [], []
    for i in range(k):
        own = per_deal[i, i]
        others = np.mean([per_deal[min(i, j), max(i, j)] for j in range(k) if j != i], axis=0)
        ones = np.ones_like(own)
        self_play.append(margins[i][i])
        cross_play.append(ratio_estimate(others, ones))
        gap.append(ratio_estimate(own - others, ones))
    return CrossPlayResult(
        agents=names,
        against=against_name,
        config={
            "num_players": 4,
            "partnership": True,
            "seed": seed,
            **config,
            **({"workers": workers} if workers > 1 else {}),  # as in evaluate's JSON
        },
        hands_per_pair=results[0, 0].hands,
        margins=margins,
        self_play=self_play,
        cross_play=cross_play,
        gap=gap,
        seconds=time.perf_counter() - start,
        notes=notes,
    )


def _team_points_per_hand(result: EvalResult) -> np.ndarray:
    """Per deal, the first agent's team's points per hand (its reward over its seat-hands:
    one seat per hand beside another agent, two beside itself, the same team points)."""
    return result.per_deal["reward"][:, 0] / result.per_deal["seat_hands"][:, 0]
