"""The strength ladder: a round robin of agents on duplicate deals, rated by Bradley-Terry
(Elo scale, bootstrap CIs over deals) on the hands won, or on the matches won in a match
ladder, with the pairwise margins. Agents that cannot be built or do not fit the game are
listed as skipped with the reason, never dropped silently."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from block_env.agent_specs import (
    AgentSpec,
    SetupError,
    agent_label,
    build_agent,
    check_game,
    unique_labels,
)
from block_env.evaluation.parallel import check_workers, make_pool
from block_env.evaluation.results import EvalResult, format_table
from block_env.evaluation.runner import prepare, progress_bar, run_plan
from block_env.evaluation.stats import Estimate, bradley_terry_ci, half_difference

LADDER_AGENTS: tuple[str, ...] = (
    "random",
    "greedy",
    "rules",
    "pimc-20",
    "pimc-100",
    "block-{n}p",
    "omniscient",
)


@dataclass
class LadderResult:
    """Round-robin outcome: Bradley-Terry ratings on the Elo scale (anchored at the first
    agent = 0) with bootstrap CIs, and the pairwise margins of the row agent over the
    column agent (points per hand)."""

    agents: list[str]
    skipped: dict[str, str]
    config: dict[str, Any]
    ratings: list[Estimate]
    margins: list[list[Estimate | None]]
    win_share: list[list[float | None]]
    hands_per_pair: int  # in a match ladder the last pair's (matches vary in length)
    seconds: float
    notes: list[str] = field(default_factory=list)  # warnings (JSON; stderr on the CLI)
    matches_per_pair: int = 0  # a match ladder's matches per pair (its ratings rest on them)

    def to_dict(self) -> dict[str, Any]:
        """The ladder as JSON-ready values."""
        return asdict(self)

    def table(self) -> str:
        """Plain-text tables: the ratings, best first, then the pairwise margins."""
        order = sorted(range(len(self.agents)), key=lambda i: -self.ratings[i].mean)
        rows = [
            [str(rank + 1), self.agents[i], self.ratings[i].fmt(0)] for rank, i in enumerate(order)
        ]
        games = f"{self.hands_per_pair} hands"
        if self.matches_per_pair:
            games = f"{self.matches_per_pair} matches ({self.hands_per_pair} hands)"
        text = (
            f"Ladder, {self.config['num_players']} players, {games} per pair, "
            f"{self.seconds:.0f} s\n"
            + format_table(["#", "agent", "rating (Elo scale) [95% CI]"], rows)
            + "\n\nPairwise margin of row over column, points per hand [95% CI]\n"
        )
        head = ["", *[self.agents[i] for i in order]]
        grid = []
        for i in order:
            grid.append(
                [self.agents[i]]
                + ["-" if self.margins[i][j] is None else self.margins[i][j].fmt(2) for j in order]
            )
        text += format_table(head, grid)
        if self.skipped:
            text += "\n\nNot in the ladder (could not be built or do not fit the game):\n"
            text += "\n".join(f"  {name}: {why}" for name, why in self.skipped.items())
        return text


def ladder_specs(num_players: int, partnership: bool = False) -> list[str]:
    """The default ladder: baselines, search agents, the shipped policy of the game (the
    partnership one with teams) and the oracle."""
    shipped = "block-partnership" if partnership else f"block-{num_players}p"
    return [shipped if s == "block-{n}p" else s for s in LADDER_AGENTS]


def ladder(
    agents: Sequence[AgentSpec] | None = None,
    num_players: int = 2,
    hands: int = 400,
    seed: int = 0,
    progress: bool = False,
    bootstrap: int = 200,
    allow_mismatch: bool = False,
    workers: int = 1,
    matches: int | None = None,
    **config: Any,
) -> LadderResult:
    """Round robin of ``agents`` (default ``ladder_specs``) on duplicate deals, ``hands`` per
    pair (per lineup in 3-4 player games, where each pair plays A against a field of B and B
    against a field of A), rounded up to whole deals as in ``evaluate``. With ``matches``
    (and ``episode="match"`` in ``config``) every pair plays that many whole matches instead,
    and the ratings rest on the matches won. Agents that cannot be built, or policies
    trained for another game (unless ``allow_mismatch``), are listed in ``skipped`` with the
    reason, never dropped silently. ``workers > 1`` plays each pair's deals in that many
    processes, one pool for the whole ladder (spec strings only; see ``evaluate``).
    SetupError (a ValueError) before anything is played when the game is invalid or fewer
    than two agents remain."""
    from block_env.env import raw_env

    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise SetupError(f"seed={seed!r} is not allowed: use an int >= 0")
    partnership = bool(config.get("partnership", False))
    specs = list(ladder_specs(num_players, partnership) if agents is None else agents)
    workers = check_workers(workers, specs)
    in_matches = config.get("episode", "hand") == "match"
    games = {"matches": matches} if in_matches else {"hands": hands}
    if not in_matches:
        if matches is not None:
            raise SetupError("matches= is for a match ladder: give episode='match' too")
        config = {**config, "episode": "hand"}
    try:
        probe_env = raw_env(num_players=num_players, **config)
    except (TypeError, ValueError) as exc:
        raise SetupError(str(exc)) from exc
    kept: list[AgentSpec] = []
    skipped: dict[str, str] = {}
    notes: list[str] = []
    for spec in specs:
        label = agent_label(spec)
        try:
            agent = build_agent(spec, probe_env, seed=seed)
            note = check_game(agent, label, probe_env.config, allow_mismatch)
        except Exception as exc:  # noqa: BLE001 - any failure to build is reported, not fatal
            skipped[label] = f"{type(exc).__name__}: {exc}"
            continue
        if note is not None:
            notes.append(note)
        kept.append(spec)
    names = unique_labels([agent_label(s) for s in kept])
    k = len(kept)
    if k < 2:
        raise SetupError(f"the ladder needs at least two agents that build; skipped: {skipped}")
    n = num_players
    margins: list[list[Estimate | None]] = [[None] * k for _ in range(k)]
    share: list[list[float | None]] = [[None] * k for _ in range(k)]
    start = time.perf_counter()
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    bar = progress_bar(len(pairs), progress, "ladder pairs")
    if bar is not None:
        bar.unit = "pair"
    pool = make_pool(workers) if workers > 1 else None
    common = dict(num_players=n, seed=seed, allow_mismatch=allow_mismatch, **games)

    def play_pair(two: list[AgentSpec], labels: list[str]) -> EvalResult:
        plan = prepare(two, labels=labels, workers=workers, **common, **config)
        return run_plan(plan, progress, None, pool)

    try:
        hands_played, matches_played, pair_data = _ladder_pairs(
            kept, names, pairs, n == 2 or partnership, play_pair, margins, share, bar
        )
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if bar is not None:
            bar.close()
    ratings = bradley_terry_ci(k, pair_data, bootstrap=bootstrap, seed=seed)
    if not in_matches:  # a hand ladder's JSON keeps its keys without the episode
        config.pop("episode")
    out_config = {"num_players": n, "seed": seed, **config}
    if workers > 1:  # a serial ladder's JSON has no workers key
        out_config["workers"] = workers
    return LadderResult(
        agents=names,
        skipped=skipped,
        config=out_config,
        ratings=ratings,
        margins=margins,
        win_share=share,
        hands_per_pair=hands_played,
        seconds=time.perf_counter() - start,
        notes=notes,
        matches_per_pair=matches_played,
    )


def _ladder_pairs(
    kept: list[AgentSpec],
    names: list[str],
    pairs: list[tuple[int, int]],
    head_to_head: bool,
    play_pair: Callable[[list[AgentSpec], list[str]], EvalResult],
    margins: list[list[Estimate | None]],
    share: list[list[float | None]],
    bar: Any,
) -> tuple[int, int, dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]]:
    """Play every pair (``play_pair(agents, labels)``), filling ``margins`` and ``share``;
    returns the hands and matches played per pair and each pair's per-deal wins and games."""
    pair_data: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    hands_played = matches_played = 0
    for i, j in pairs:
        if head_to_head:
            res = play_pair([kept[i], kept[j]], [names[i], names[j]])
            m = res.stats[0].margin
            hands_played, matches_played = res.hands, res.matches
            wins_i, played = _side_games(res, 0)
        else:
            a = play_pair([kept[i], kept[j]], [names[i], names[j]])
            b = play_pair([kept[j], kept[i]], [names[j], names[i]])
            m = half_difference(a.stats[0].margin, b.stats[0].margin)
            hands_played, matches_played = a.hands, a.matches
            (wins_a, played_a), (wins_b, played_b) = _side_games(a, 0), _side_games(b, 1)
            wins_i, played = wins_a + wins_b, played_a + played_b
        margins[i][j] = m
        margins[j][i] = Estimate(-m.mean, -m.hi, -m.lo)
        share[i][j] = float(wins_i.sum() / played.sum())
        share[j][i] = 1.0 - share[i][j]
        pair_data[(i, j)] = (wins_i, played)
        if bar is not None:
            bar.update(1)
    return hands_played, matches_played, pair_data


def _side_games(res: EvalResult, agent: int) -> tuple[np.ndarray, np.ndarray]:
    """Per deal of ``res``: the games agent ``agent``'s side won (a tie counts a half) and
    the games played. A game is a hand, or in a match ladder a whole match: a match's
    winners are the seats at the target (a team's two seats in partnership), so each
    agent's share of the winning seats is the share of the match it won."""
    d = res.per_deal
    if res.matches:
        winners = d["match_wins"]  # (deals, agents): winning seats of each agent
        played = np.full(len(winners), res.matches / res.deals)
        return winners[:, agent] * played / np.maximum(winners.sum(axis=1), 1), played
    return d["side_wins"][:, agent] + 0.5 * d["ties"], d["hands"]
