"""The result of an evaluation (``EvalResult``: per-agent figures, the per-deal totals they
come from, a text table and JSON) and ``eval_result``, the one place it is computed from
per-deal totals, whichever engine played the deals (AEC env here or in worker processes, or
the batched engine)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from block_env.config import BlockConfig
from block_env.evaluation.control import ControlStats, control_stats
from block_env.evaluation.stats import Estimate, proportion_estimate, ratio_estimate

# per-deal totals: arrays (deals, agents) of zero-sum points, seat-hands and seat-hands won,
# hands won by a seat of the agent (once per hand), seat-matches and seat-matches won; and
# arrays (deals,) of hands played and tied blocks
DEAL_KEYS = (
    "reward",
    "seat_hands",
    "seat_wins",
    "side_wins",
    "seat_matches",
    "match_wins",
    "hands",
    "ties",
)
# the per-deal totals an EvalResult keeps (the ladder reads side_wins, hands and ties, and
# match_wins in a match ladder)
PER_DEAL_KEYS = ("reward", "seat_hands", "seat_wins", "side_wins", "match_wins", "hands", "ties")
# and, in an evaluation with a control, the points and seat-matches won of the control's
# games and the games where the first agent and its control chose apart
CONTROL_KEYS = ("control_reward", "control_match_wins", "games_apart")
# the engines that play an evaluation's games: the AEC env (in this process or in worker
# processes) and the batched engine (``block_env.evaluation.batched``)
ENGINES = ("aec", "batched")


@dataclass
class AgentStats:
    """One agent's figures: points per hand, the share of its seat-hands won, and (match
    episodes) the share of its seat-matches won, each with its 95% CI."""

    name: str
    seat_hands: int
    margin: Estimate
    hand_win: Estimate
    match_win: Estimate | None
    seat_matches: int


@dataclass
class EvalResult:
    """The outcome of ``evaluate``: per-agent statistics plus the per-deal totals they were
    computed from (``per_deal``: arrays of shape (deals, agents), not written to JSON), and
    the engine that played the games (one of ``ENGINES``)."""

    agents: list[str]
    lineup: list[int]
    config: dict[str, Any]
    deals: int
    hands: int
    matches: int
    seconds: float
    stats: list[AgentStats]
    per_deal: dict[str, np.ndarray] = field(repr=False)
    notes: list[str] = field(default_factory=list)  # warnings (JSON; stderr on the CLI)
    control: ControlStats | None = None  # the first agent against its control, if any
    engine: str = "aec"  # what played the games: "aec" or "batched"

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready values, without ``per_deal`` (and without ``control``
        when there was none)."""
        out = asdict(self)
        out.pop("per_deal")
        if out["control"] is None:
            out.pop("control")
        return out

    def summary(self, agent: int = 0) -> dict[str, float]:
        """One agent's headline figures as a flat dict (margin with its CI, hand-win rate,
        hands played): what a training script logs before and after."""
        s = self.stats[agent]
        return {
            "margin": s.margin.mean,
            "margin_lo": s.margin.lo,
            "margin_hi": s.margin.hi,
            "hand_win": s.hand_win.mean,
            "hands": self.hands,
        }

    def table(self) -> str:
        """Plain-text table: one row per agent."""
        match_mode = self.config.get("episode") == "match"
        head = ["agent", "points/hand margin [95% CI]", "hand win % [95% CI]"]
        if match_mode:
            head.append("match win % [95% CI]")
        rows = []
        for s in self.stats:
            row = [s.name, s.margin.fmt(2), s.hand_win.fmt(1, pct=True)]
            if match_mode and s.match_win is not None:
                row.append(s.match_win.fmt(1, pct=True))
            rows.append(row)
        title = (
            f"{self.config['num_players']} players, {self.deals} deals x "
            f"{self.config['num_players']} seat rotations = {self.hands} hands"
            + (f", {self.matches} matches" if match_mode else "")
            + f", {self.seconds:.1f} s"
        )
        text = title + "\n" + format_table(head, rows)
        if self.control is not None:
            text += "\n" + self.control.line(self.agents[0])
        return text


def format_table(head: list[str], rows: list[list[str]]) -> str:
    """Left-aligned text columns under a header line and a rule."""
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(head, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def eval_result(
    names: list[str],
    lineup: list[int],
    config: BlockConfig,
    episode: str,
    seed: int,
    per_deal: dict[str, np.ndarray],
    seconds: float,
    notes: list[str] | None = None,
    workers: int = 1,
    control: str | None = None,
    engine: str = "aec",
) -> EvalResult:
    """The result of an evaluation of agents ``names`` (seated by ``lineup``) in game
    ``config`` from its per-deal totals (``DEAL_KEYS``, all deals in deal order; with
    ``control``, the label of the first agent's control, also ``CONTROL_KEYS``), played
    by ``engine`` (one of ``ENGINES``)."""
    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r} is not one of {', '.join(ENGINES)}")
    n = config.num_players
    deals = len(per_deal["hands"])
    reward, seat_hands = per_deal["reward"], per_deal["seat_hands"]
    seat_wins = per_deal["seat_wins"]
    seat_matches, match_wins = per_deal["seat_matches"], per_deal["match_wins"]
    stats = []
    for a in range(len(names)):
        mw = None
        if episode == "match":
            mw = proportion_estimate(match_wins[:, a], seat_matches[:, a])
        stats.append(
            AgentStats(
                name=names[a],
                seat_hands=int(seat_hands[:, a].sum()),
                margin=ratio_estimate(reward[:, a], seat_hands[:, a]),
                hand_win=proportion_estimate(seat_wins[:, a], seat_hands[:, a]),
                match_win=mw,
                seat_matches=int(seat_matches[:, a].sum()),
            )
        )
    out_config: dict[str, Any] = {
        "num_players": n,
        "episode": episode,
        "opener": config.opener,
        "partnership": config.partnership,
        "target": config.target,
        "seed": seed,
    }
    if workers > 1:  # a serial run's JSON has no workers key
        out_config["workers"] = workers
    return EvalResult(
        agents=list(names),
        lineup=list(lineup),
        config=out_config,
        deals=deals,
        hands=int(per_deal["hands"].sum()),
        matches=deals * n if episode == "match" else 0,
        seconds=seconds,
        stats=stats,
        per_deal={key: per_deal[key] for key in PER_DEAL_KEYS + CONTROL_KEYS if key in per_deal},
        notes=list(notes or []),
        control=None if control is None else control_stats(control, per_deal, n, episode),
        engine=engine,
    )
