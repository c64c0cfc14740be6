"""Score an agent on a task: every reference opponent of the task's field, in each of the
task's lineups, on the task's held-out deals; margins with 95% CIs, hand-win rates (and
match-win rates in a match task) and the rating on the task's frozen ladder, with everything
needed to repeat the run."""

from __future__ import annotations

import hashlib
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any

import numpy as np

from block_env.agent_specs import SetupError, check_game, importable_factory, parse_spec
from block_env.benchmark.elo import FROZEN_LADDERS, rate
from block_env.benchmark.tasks import Task, deal_digest, field_network
from block_env.evaluation.batched import baseline_actor, evaluate_batched
from block_env.evaluation.parallel import check_workers
from block_env.evaluation.results import format_table
from block_env.evaluation.runner import prepare, run_plan
from block_env.evaluation.stats import Estimate

# lineup name -> the agent index (0 = the agent, 1 = the opponent) at each seat
LINEUPS: dict[str, dict[int, tuple[int, ...]]] = {
    "alone": {2: (0, 1), 3: (0, 1, 1), 4: (0, 1, 1, 1)},
    "field": {3: (1, 0, 0), 4: (1, 0, 0, 0)},
    "team": {4: (0, 1, 0, 1)},
    "ad_hoc": {4: (0, 1, 1, 1)},
}
LIBRARIES = ("numpy", "numba", "torch", "gymnasium", "pettingzoo")
# opponents whose rows are played on the batched engine when the agent acts on batches too:
# the deterministic baselines, whose batched twins make exactly their moves
BATCHED_OPPONENTS = ("greedy", "rules")


@dataclass
class Row:
    """The agent against one opponent in one lineup."""

    opponent: str  # the opponent's id (a policy's name@sha256 prefix)
    lineup: str
    deals: int
    hands: int
    margin: Estimate  # the agent's points per hand over the opponent's
    hand_win: Estimate  # share of the agent's seat-hands won (its side's, in partnership)
    seconds: float
    matches: int = 0  # a match task's matches (deals x seat rotations)
    match_win: Estimate | None = None  # share of the agent's seat-matches won
    engine: str = "aec"  # what played the row: "aec" (the AEC env) or "batched"


@dataclass
class BenchmarkResult:
    """What ``python -m block_env.benchmark`` prints and writes as JSON."""

    task: dict[str, Any]  # the id, version and full definition
    agent: dict[str, Any]  # spec, id and the policy file's sha256 (None for other agents)
    deal_set: dict[str, Any]  # the first seed, the deals used and their digest
    rows: list[Row]
    elo: dict[str, Any] | None
    versions: dict[str, str | None]
    machine: dict[str, Any]
    workers: int
    wall_s: float
    command: str
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def table(self) -> str:
        """One line per (opponent, lineup), then the rating."""
        head = ["opponent", "lineup", "hands", "margin [95% CI]", "hand win % [95% CI]"]
        rows = [
            [r.opponent, r.lineup, str(r.hands), r.margin.fmt(2), r.hand_win.fmt(1, pct=True)]
            for r in self.rows
        ]
        if any(r.match_win is not None for r in self.rows):
            head[2:2] = ["matches"]
            head.append("match win % [95% CI]")
            for row, r in zip(rows, self.rows):
                row[2:2] = [str(r.matches)]
                row.append(r.match_win.fmt(1, pct=True) if r.match_win is not None else "-")
        title = (
            f"{self.agent['id']} on {self.task['id']} ({self.deal_set['deals']} held-out deals, "
            f"{self.wall_s:.0f} s)"
        )
        text = title + "\n" + format_table(head, rows)
        if self.elo is not None:
            e = self.elo
            text += (
                f"\n\nElo on the task's frozen ladder (random = 0): {e['mean']:+.0f} "
                f"[{e['lo']:+.0f}, {e['hi']:+.0f}], against {', '.join(e['opponents'])}"
            )
        for note in self.notes:
            text += f"\nnote: {note}"
        return text


def _sha256(path: Any) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def agent_identity(spec: str) -> dict[str, Any]:
    """``{"spec", "id", "sha256"}``: a policy file (shipped name or path) is named by its
    name and the first 8 hex digits of its sha256 (``block-2p@82065c70``, followed by the
    spec's options: ``block-2p@82065c70:greedy=False``); other agents (bots, search,
    ``rllib:``, ``module:factory``) by their spec."""
    import agents

    out: dict[str, Any] = {"spec": spec, "id": spec, "sha256": None}
    if importable_factory(spec) is not None:
        return out
    name, _ = parse_spec(spec)
    if name in agents.REGISTRY:
        return out
    from agents.policy_files import resolve

    try:
        path = resolve(name)
    except FileNotFoundError as exc:
        raise SetupError(f"agent {spec!r}: {exc}") from None
    digest = _sha256(path)
    label = name if "/" not in name and not name.endswith(".pt") else path.stem
    options = spec.partition(":")[2]  # e.g. greedy=False: another agent from the same file
    out.update(id=f"{label}@{digest[:8]}" + (f":{options}" if options else ""), sha256=digest)
    return out


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for lib in ("block-env", *LIBRARIES):
        try:
            out[lib] = metadata.version(lib)
        except metadata.PackageNotFoundError:
            out[lib] = None
    return out


def machine_info() -> dict[str, Any]:
    """The machine a figure was measured on: OS, architecture, CPU model (Linux names it
    in /proc/cpuinfo; elsewhere what ``platform`` knows) and core count."""
    import os

    model = None
    try:
        with open("/proc/cpuinfo") as f:
            names = (line.split(":", 1)[1].strip() for line in f if "model name" in line)
            model = next(names, None)
    except OSError:
        pass
    return {
        "system": platform.system(),
        "machine": platform.machine(),
        "processor": model or platform.processor() or None,
        "cpus": os.cpu_count(),
    }


def plan_rows(
    task: Task, agent_id: str, hands: int | None, opponents: Sequence[str] | None = None
) -> list[tuple[str, str, int]]:
    """(opponent spec, lineup, deals) of every row of the benchmark: the task's field in
    its lineups (or the field's ``opponents`` alone), each opponent on its share of the
    held-out deals, or on ``hands`` hands (matches in a match task; a multiple of the player
    count, at most the opponent's share) for a quick look. A shipped network of the field is
    the file the task froze (``FROZEN_NETWORKS``); SetupError when this checkout's file
    differs. An opponent that is the agent itself (the same spec, or the same policy file)
    is left out."""
    n = task.num_players
    field = [opp.spec for opp in task.field]
    if opponents is not None and (not opponents or set(opponents) - set(field)):
        raise SetupError(
            f"opponents={list(opponents)!r} is not allowed for {task.id}: choose among its "
            f"field {', '.join(field)}"
        )
    if hands is not None:
        if isinstance(hands, bool) or not isinstance(hands, int) or hands <= 0 or hands % n:
            raise SetupError(
                f"hands={hands!r} is not allowed for {task.id}: use a positive multiple of "
                f"{n} (one deal is played once per seat rotation)"
            )
        if hands > task.deals * n:
            raise SetupError(
                f"hands={hands} is more than {task.id}'s held-out set ({task.deals} deals x "
                f"{n} rotations = {task.deals * n} hands)"
            )
    out = []
    for opp in task.field:
        if opponents is not None and opp.spec not in opponents:
            continue
        spec, sha256 = field_network(task, opp.spec)
        ident = agent_identity(spec)
        if sha256 is not None and ident["sha256"] != sha256:
            raise SetupError(
                f"{task.id} froze its field's {opp.spec} as the policy file with sha256 "
                f"{sha256[:8]}..., shipped as {spec}; this checkout's {spec} has "
                f"{(ident['sha256'] or 'none')[:8]}...: run the task from a checkout that ships "
                "that file"
            )
        if ident["id"] == agent_id:
            continue
        deals = task.deals if opp.deals is None else opp.deals
        if hands is not None:
            deals = min(deals, hands // n)
        out += [(spec, lineup, deals) for lineup in task.lineups]
    return out


def benchmark(
    agent: str,
    task: Task,
    hands: int | None = None,
    workers: int = 1,
    progress: bool = False,
    allow_mismatch: bool = False,
    command: str | None = None,
    opponents: Sequence[str] | None = None,
) -> BenchmarkResult:
    """Play ``agent`` (a spec string) against the task's field (or the field's
    ``opponents`` alone, a quick look) on its held-out deals. SetupError before anything is
    played when the agent cannot be built or does not fit."""
    if not isinstance(agent, str):
        raise SetupError(f"agent {agent!r}: give a spec string (a name, a path, module:factory)")
    workers = check_workers(workers, [agent])
    ident = agent_identity(agent)
    rows_plan = plan_rows(task, ident["id"], hands, opponents)
    n = task.num_players
    games = "matches" if task.episode == "match" else "hands"  # what prepare counts
    plans = []
    for spec, lineup, deals in rows_plan:  # build every row first: all errors before play
        opp_id = agent_identity(spec)["id"]
        seats = list(LINEUPS[lineup][n])
        plan = prepare(
            [agent, spec],
            **{games: deals * n},
            seed=task.deal_seed,
            lineup=seats,
            labels=[ident["id"], opp_id],
            allow_mismatch=allow_mismatch or task.field_off_its_game,
            workers=workers,
            **task.env_kwargs(),
        )
        if task.field_off_its_game:  # the field may play off its game; the agent may not
            check_game(plan.players[seats.index(0)], ident["id"], plan.env.config, allow_mismatch)
        plans.append((spec, opp_id, lineup, plan))
    start = time.perf_counter()
    rows: list[Row] = []
    notes: list[str] = []
    per_opponent: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {}
    batched_agent = _on_batches(agent, plans[0][3].players[0])
    for spec, opp_id, lineup, plan in plans:
        if batched_agent is not None and spec in BATCHED_OPPONENTS and task.episode == "hand":
            game = {**task.env_kwargs(), "reward": "zero_sum"}
            res = evaluate_batched(
                batched_agent,
                game,
                spec,
                plan.deals * n,
                task.deal_seed,
                ident["id"],
                lineup=list(LINEUPS[lineup][n]),
            )
        else:
            res = run_plan(plan, progress, None)
        notes += [note for note in res.notes if note not in notes]
        s = res.stats[0]
        row = Row(opp_id, lineup, res.deals, res.hands, s.margin, s.hand_win, res.seconds)
        row.engine = res.engine
        if task.episode == "match":
            row.matches, row.match_win = res.matches, s.match_win
        rows.append(row)
        wins = res.per_deal["side_wins"][:, 0] + 0.5 * res.per_deal["ties"]
        w, h = per_opponent.setdefault(opp_id, ([], []))
        w.append(wins)
        h.append(res.per_deal["hands"])
    elo = _elo(task, per_opponent)
    most = max(r.deals for r in rows)
    return BenchmarkResult(
        task={"id": task.id, "version": task.version, "definition": task.definition()},
        agent=ident,
        deal_set={
            "first_seed": task.deal_seed,
            "deals": most,
            "task_deals": task.deals,
            "sha256": deal_digest(task, most),
            "hands_option": hands,
            **({} if opponents is None else {"opponents_option": list(opponents)}),
        },
        rows=rows,
        elo=elo,
        versions=versions(),
        machine=machine_info(),
        workers=workers,
        wall_s=time.perf_counter() - start,
        command=command or " ".join(sys.argv),
        notes=notes,
    )


class _BatchedBot:
    """A baseline bot given as the agent, acting on batches (its batched twin)."""

    def __init__(self, name: str) -> None:
        self.act_batch = baseline_actor(name, 0)


def _on_batches(spec: str, built: Any) -> Any:
    """The agent as an object with ``act_batch`` when its rows against the deterministic
    baselines can be played on the batched engine, else None."""
    if spec in BATCHED_OPPONENTS:
        return _BatchedBot(spec)
    return built if hasattr(built, "act_batch") else None


def _elo(task: Task, per_opponent: dict[str, tuple[list[np.ndarray], list[np.ndarray]]]) -> Any:
    """The rating on the frozen ladder; a deal's wins over all lineups of one opponent are
    pooled (the lineups share the deals), as the ladder pools its two lineups."""
    if task.ladder is None or task.ladder not in FROZEN_LADDERS:
        return None
    pooled = {}
    for label, (w, h) in per_opponent.items():
        size = min(len(x) for x in w)  # every lineup of one opponent plays the same deals
        pooled[label] = (sum(x[:size] for x in w), sum(x[:size] for x in h))
    est, used = rate(task.ladder, pooled)
    if est is None:
        return None
    return {
        "mean": est.mean,
        "lo": est.lo,
        "hi": est.hi,
        "opponents": used,
        "ladder": FROZEN_LADDERS[task.ladder][0],
    }
