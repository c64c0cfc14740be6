"""Duplicate-deal evaluation of Block agents, and a round-robin strength ladder.

Why duplicate deals: who leads decides most hands (with open hands the leader wins about
79% of deals), so comparing agents on independent random deals is mostly noise. Here every
deal (fixed by its seed: ``env.reset(seed)`` draws the lot, then the deal) is replayed once
per seat rotation, so each agent plays every seat's hand of that deal, leader included. The
confidence intervals are computed over deals from the per-deal totals (a paired design),
which removes the deal-to-deal variance from the comparison.

Reported per agent, with 95% CIs computed over deals:

* ``margin``: zero-sum points per hand for each seat it plays (at each hand's end the scorer
  gets +points and every other player -points/(n-1); partners share their team's points);
  normal CI of a ratio of per-deal totals (``ratio_estimate``);
* ``hand_win``: share of its seat-hands won (a tied block is won by nobody);
* ``match_win`` (``episode="match"`` only): share of its seat-matches won (a draw is no win).
  Both shares use a Wilson score interval on an effective sample size that respects the
  deal pairing (``proportion_estimate``), so they stay inside [0, 100]%.

Policy files carry the game they were trained for (``agent.game``); an agent whose game does
not fit the evaluation's (player count, partnership, opener; also episode and target for a
policy that reads the scores) is refused unless ``allow_mismatch=True``.

Agents are objects with ``act(observation) -> int`` or specs: a registered name
(``"greedy"``), a name with keyword arguments (``"pimc:worlds=20"``), an alias
(``"pimc-20"``), or a trained policy for ``agents.load`` (``"block-2p"``, a ``.pt`` path).
Factories that accept ``env`` get the evaluation's raw env (oracle agents read its
privileged state); factories that accept ``seed`` get a fixed seed, so runs repeat.

Agents declare the observation they play on with an ``obs_type`` attribute (default
``"observation"``; ``agents.load`` gives a policy trained on the information state
``obs_type="information_state"``). When any agent needs the information state, the env is
made with ``obs_type="information_state"`` and every other agent receives the plain
observation, its first ``OBS_DIM`` entries (the rest of the dict unchanged), so a bot plays
exactly as it would in a plain env.

Parallel play (``workers=N``, ``--workers N``): deals are independent, so they are split
into contiguous chunks played in N spawned processes, each building its own agents from the
spec strings (objects with ``act`` cannot be sent there: pass spec strings, or play with
``workers=1``). Deal ``d`` keeps env seed ``seed + d`` and the per-deal totals are joined in
deal order, so deterministic agents (``greedy``, ``rules``, ``omniscient``, shipped policies)
give the same figures, bit for bit, as a serial run. Agents that draw random numbers from a
``seed`` (``random``, ``pimc``) are seeded per chunk from (seed, chunk index): a run repeats
for the same seed, games and worker count, but draws differently than a serial run or one
with another worker count (the same distribution, other samples). The processes are
spawned, so they import the main script again: a script that calls ``evaluate(...,
workers=2)`` must do so under ``if __name__ == "__main__":``.

Command line (setup errors: one line on stderr, exit status 2, before anything is played)::

    python -m block_env.evaluate rules greedy --hands 2000 --players 2 --json out.json
    python -m block_env.evaluate block-2p pimc-20 --hands 4000 --workers 2
    python -m block_env.evaluate --ladder --hands 400
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from block_env.config import BlockConfig

Z95 = 1.959963984540054  # two-sided 95% normal quantile
ALIASES: dict[str, str] = {"pimc-20": "pimc:worlds=20", "pimc-100": "pimc:worlds=100"}
LADDER_AGENTS: tuple[str, ...] = (
    "random",
    "greedy",
    "rules",
    "pimc-20",
    "pimc-100",
    "block-{n}p",
    "omniscient",
)

AgentSpec = Any  # an object with act(observation) -> int, or a spec string
FIT_KEYS = ("num_players", "partnership", "opener")  # a policy must be trained for these
# and for these when either side is not the standard set with the rules' hand size
SET_KEYS = ("max_pip", "hand_size")
SCORE_KEYS = ("episode", "target")  # also these when the policy reads the scores


class SetupError(ValueError):
    """A bad evaluation setup (agents, counts, game, lineup), found before anything is
    played; the command line reports it in one line with exit status 2."""


def check_workers(workers: Any, agents: Sequence[AgentSpec] = ()) -> int:
    """``workers`` as an int >= 1; SetupError otherwise (a bool is refused), and when
    ``workers > 1`` and one of ``agents`` is an object rather than a spec string (worker
    processes build their own agents from spec strings)."""
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise SetupError(
            f"workers={workers!r} is not allowed: use an int >= 1 (the number of processes "
            "playing deals; 1 plays them here, one after another)"
        )
    workers = int(workers)
    if workers > 1:
        objects = [agent_label(a) for a in agents if not isinstance(a, str)]
        if objects:
            raise SetupError(
                f"workers={workers} builds the agents again in each worker process from spec "
                f"strings, but {', '.join(objects)} is an object: pass spec strings (e.g. "
                "'rules', 'pimc:worlds=20', 'block-2p', a policy path) or use workers=1"
            )
    return workers


# ----------------------------------------------------------------------------- agents


def agent_obs_type(agent: Any) -> str:
    """The observation ``agent`` plays on: its ``obs_type`` attribute (``"observation"``
    when it has none). SetupError for a value outside ``OBS_TYPES``."""
    from block_env.information_state import OBS_TYPES

    value = getattr(agent, "obs_type", "observation")
    if value not in OBS_TYPES:
        raise SetupError(
            f"agent {agent!r} has obs_type={value!r}: use one of {', '.join(OBS_TYPES)}"
        )
    return str(value)


def plain_observation(observation: dict[str, Any], dim: int) -> dict[str, Any]:
    """``observation`` (an ``observe()`` dict) with its ``"observation"`` cut to the first
    ``dim`` entries, the plain observation: what an agent that does not read the information
    state gets from an env made with ``obs_type="information_state"``."""
    out = dict(observation)
    out["observation"] = observation["observation"][:dim]
    return out


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"name:key=value,key=value"`` -> (name, kwargs); aliases such as ``"pimc-20"`` are
    expanded first. Values are Python literals where they parse, strings otherwise."""
    spec = ALIASES.get(spec, spec)
    name, _, rest = spec.partition(":")
    kwargs: dict[str, Any] = {}
    if not rest:
        return name, kwargs
    for item in rest.split(","):
        key, eq, raw = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"agent spec {spec!r}: {item!r} is not key=value")
        try:
            value: Any = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError):
            value = raw.strip()
        kwargs[key.strip()] = value
    return name, kwargs


def build_agent(spec: AgentSpec, env: Any = None, seed: int | None = None) -> Any:
    """An agent from a spec (see the module docstring); objects with ``act`` pass through.
    Raises SetupError (a ValueError) naming the spec when it cannot be built."""
    if hasattr(spec, "act"):
        return spec
    if not isinstance(spec, str):
        raise SetupError(f"agent {spec!r} is neither an object with act() nor a spec string")
    import agents

    try:
        name, kwargs = parse_spec(spec)
    except ValueError as exc:
        raise SetupError(str(exc)) from exc
    if name in agents.REGISTRY:
        module, factory = agents.REGISTRY[name].split(":")
        from importlib import import_module

        try:
            fn = getattr(import_module(module), factory)
        except (ImportError, AttributeError) as exc:
            raise SetupError(f"agent {spec!r} cannot be built: {exc}") from exc
        params = _accepted_params(fn)
        if "env" in params and env is not None:
            kwargs.setdefault("env", env)
        if "seed" in params and seed is not None:
            kwargs.setdefault("seed", seed)
        try:
            return fn(**kwargs)
        except (TypeError, ValueError) as exc:
            raise SetupError(f"agent {spec!r} cannot be built: {exc}") from exc
    load = getattr(agents, "load", None)
    if load is None:
        raise SetupError(
            f"unknown agent {spec!r}: use one of {', '.join(sorted(agents.REGISTRY))} "
            "or a trained policy name/path"
        )
    try:
        return load(name, **kwargs)
    except (FileNotFoundError, ImportError, RuntimeError, TypeError, ValueError) as exc:
        raise SetupError(
            f"agent {spec!r} cannot be built: {exc} (registered agents: "
            f"{', '.join(sorted(agents.REGISTRY))})"
        ) from exc


def check_game(
    agent: Any, label: str, config: BlockConfig, allow_mismatch: bool = False
) -> str | None:
    """Does a trained policy fit the game evaluated? Agents without a ``game`` attribute
    (baselines, search agents) play any game: None. A policy is compared on ``FIT_KEYS``
    and, when its network reads the match scores (or that is unknown), on ``SCORE_KEYS``,
    and on ``SET_KEYS`` (tile set, hand size) when either game is not the default set.
    A mismatch raises SetupError naming both configurations, or with ``allow_mismatch``
    returns it as a warning; a policy whose file records no game returns a warning that
    the fit cannot be checked."""
    if not hasattr(agent, "game"):
        return None
    net = getattr(getattr(agent, "model", None), "net", None)
    keys = list(FIT_KEYS) + (list(SCORE_KEYS) if getattr(net, "use_scores", True) else [])
    ours = {k: getattr(config, k) for k in keys}
    if agent.game is None:
        return (
            f"{label}: the game it was trained for is not recorded (a policy file written "
            f"before that was stored), so its fit to this evaluation ({_fmt_game(ours)}) is "
            "not checked"
        )
    try:
        trained = BlockConfig(**dict(agent.game))
    except (TypeError, ValueError) as exc:
        msg = f"{label}: its game configuration {agent.game!r} is malformed: {exc}"
        raise SetupError(msg) from exc
    if not (config.is_standard_set and trained.is_standard_set):
        keys += SET_KEYS
        ours = {k: getattr(config, k) for k in keys}
    theirs = {k: getattr(trained, k) for k in keys}
    diff = [k for k in keys if theirs[k] != ours[k]]
    if not diff:
        return None
    msg = (
        f"{label} was trained for {_fmt_game(theirs)} but this evaluation plays "
        f"{_fmt_game(ours)} ({', '.join(diff)} differ)"
    )
    if "max_pip" in diff:  # its network's input and output sizes follow the set
        raise SetupError(msg + ": a policy plays only the tile set it was trained for")
    if allow_mismatch:
        return msg + "; played anyway (allow_mismatch)"
    raise SetupError(
        msg + ": evaluate it in the game it was trained for, or allow the mismatch "
        "(--allow-mismatch, allow_mismatch=True) to play it anyway"
    )


def _fmt_game(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


def _accepted_params(fn: Callable[..., Any]) -> set[str]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return set()
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return {"env", "seed"}
    return set(sig.parameters)


def agent_label(spec: AgentSpec) -> str:
    """Display name: the spec string, or the object's ``name`` attribute / class name."""
    if isinstance(spec, str):
        return spec
    return str(getattr(spec, "name", None) or type(spec).__name__)


def _unique(labels: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
    return out


def default_lineup(num_agents: int, config: BlockConfig) -> list[int]:
    """Agent index at each seat before rotation. As many agents as seats: one each.
    Partnership with two agents: teams (A, B, A, B). Otherwise the first agent takes seat 0
    and the others fill the remaining seats in turn (one against the field, e.g. A, B, B for
    two agents and three players). One agent is refused: it would only play itself, a
    margin of 0 by construction (name it twice to compare two copies)."""
    n = config.num_players
    if num_agents < 2:
        raise SetupError(
            f"evaluate needs at least two agents, got {num_agents}: one agent alone only plays "
            "itself (margin 0 by construction); to compare two copies, name it twice "
            "(e.g. `rules rules`)"
        )
    if num_agents > n:
        raise SetupError(f"{num_agents} agents given for a {n}-player game: give at most {n}")
    if num_agents == n:
        return list(range(n))
    if config.partnership and num_agents == 2:
        return [0, 1, 0, 1]
    return [0] + [1 + (s % (num_agents - 1)) for s in range(n - 1)]


# ----------------------------------------------------------------------------- statistics


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


@dataclass
class AgentStats:
    name: str
    seat_hands: int
    margin: Estimate
    hand_win: Estimate
    match_win: Estimate | None
    seat_matches: int


@dataclass
class EvalResult:
    """The outcome of ``evaluate``: per-agent statistics plus the per-deal totals they were
    computed from (``per_deal``: arrays of shape (deals, agents), not written to JSON)."""

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

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("per_deal")
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
        return title + "\n" + _format_table(head, rows)


def _format_table(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(head, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- evaluation


def _progress(total: int, enabled: bool, desc: str) -> Any:
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="game", leave=False, file=sys.stderr)


def evaluate(
    agents: Sequence[AgentSpec],
    num_players: int = 2,
    hands: int | None = None,
    matches: int | None = None,
    episode: str = "hand",
    seed: int = 0,
    lineup: Sequence[int] | None = None,
    progress: bool = False,
    labels: Sequence[str] | None = None,
    allow_mismatch: bool = False,
    workers: int = 1,
    **config: Any,
) -> EvalResult:
    """Play ``agents`` (at least two) on fixed deals, each replayed with the seats rotated.

    ``hands`` (episode ``"hand"``, default 2000) or ``matches`` (episode ``"match"``,
    default 200) is the number of games wanted in total; it is rounded up to a whole number
    of deals times ``num_players`` rotations (``result.hands`` / ``result.matches`` say what
    was played; the command line refuses a count that is not a whole number of deals). Deal
    ``d`` uses seed ``seed + d``. Other keywords (``opener``, ``partnership``,
    ``target_score``) configure the game. A policy trained for another game is refused
    (``check_game``) unless ``allow_mismatch``. ``workers > 1`` plays the deals in that
    many processes (agents given as spec strings only; see the module docstring: the same
    figures for deterministic agents, other draws for agents with their own randomness).
    Setup problems raise SetupError (a ValueError) before anything is played.
    """
    plan = prepare(
        agents,
        num_players,
        hands,
        matches,
        episode,
        seed,
        lineup,
        labels,
        allow_mismatch,
        workers,
        **config,
    )
    return run(plan, progress)


@dataclass
class EvalPlan:
    """A checked evaluation, ready to play: the env, one agent per lineup position, the
    number of deals and the warnings found while checking (``prepare``)."""

    env: Any
    players: list[Any]
    lineup: list[int]
    names: list[str]
    deals: int
    episode: str
    seed: int
    notes: list[str]
    # per lineup position: True when that player gets the plain observation cut out of the
    # env's information state (the env then has obs_type="information_state")
    plain_cut: list[bool] = field(default_factory=list)
    # what worker processes need to build the same evaluation again (workers > 1)
    workers: int = 1
    specs: list[Any] = field(default_factory=list)
    game: dict[str, Any] = field(default_factory=dict)  # num_players and the config keywords
    allow_mismatch: bool = False


def prepare(
    agents: Sequence[AgentSpec],
    num_players: int = 2,
    hands: int | None = None,
    matches: int | None = None,
    episode: str = "hand",
    seed: int = 0,
    lineup: Sequence[int] | None = None,
    labels: Sequence[str] | None = None,
    allow_mismatch: bool = False,
    workers: int = 1,
    **config: Any,
) -> EvalPlan:
    """Check an evaluation's arguments and build its agents (``evaluate``'s first half):
    SetupError on anything wrong, before a single hand is played."""
    workers = check_workers(workers, agents)
    plan = _build_plan(
        agents, num_players, hands, matches, episode, seed, lineup, labels, allow_mismatch, config
    )
    plan.workers = workers
    return plan


def _build_plan(
    agents: Sequence[AgentSpec],
    num_players: int,
    hands: int | None,
    matches: int | None,
    episode: str,
    seed: int,
    lineup: Sequence[int] | None,
    labels: Sequence[str] | None,
    allow_mismatch: bool,
    config: dict[str, Any],
    player_seeds: Sequence[int] | None = None,
) -> EvalPlan:
    """``prepare``'s checks and agents; ``player_seeds`` (one per lineup position) seed the
    agents built from specs, by default ``seed * 1009 + position`` (a worker's chunk gives
    its own)."""
    from block_env.env import raw_env

    if "reward" in config:
        raise SetupError("evaluate always scores with reward='zero_sum'; do not pass reward")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise SetupError(f"seed={seed!r} is not allowed: use an int >= 0")
    try:
        env = raw_env(num_players=num_players, episode=episode, reward="zero_sum", **config)
    except (TypeError, ValueError) as exc:
        raise SetupError(str(exc)) from exc
    cfg = env.config
    n = cfg.num_players
    if episode == "hand":
        if matches is not None:
            raise SetupError("matches= is for episode='match'; use hands= with episode='hand'")
        wanted = 2000 if hands is None else hands
    else:
        if hands is not None:
            raise SetupError("hands= is for episode='hand'; use matches= with episode='match'")
        wanted = 200 if matches is None else matches
    if isinstance(wanted, bool) or not isinstance(wanted, (int, np.integer)) or wanted < 1:
        raise SetupError(f"the number of games must be a positive int, got {wanted!r}")
    deals = -(-int(wanted) // n)
    k = len(agents)
    if lineup is None:
        lineup = default_lineup(k, cfg)
    else:
        try:
            lineup = [int(i) for i in lineup]
        except (TypeError, ValueError) as exc:
            raise SetupError(f"lineup={lineup!r} is not a list of agent indices: {exc}") from exc
    if len(lineup) != n or sorted(set(lineup)) != list(range(k)):
        raise SetupError(
            f"lineup={lineup!r} must give an agent index 0..{k - 1} for each of the {n} seats, "
            "using every agent"
        )
    names = _unique(list(labels) if labels is not None else [agent_label(a) for a in agents])
    seeds = [seed * 1009 + p for p in range(n)] if player_seeds is None else list(player_seeds)
    # One instance per lineup position for specs (stateful agents never share a seat).
    players = [build_agent(agents[lineup[p]], env, seed=seeds[p]) for p in range(n)]
    wants = [agent_obs_type(player) for player in players]
    plain_cut: list[bool] = []
    if "information_state" in wants:
        # The env hands out the information state; agents built from specs are built again
        # on it (oracles read the env they were given), the others get the plain part.
        env = raw_env(
            num_players=num_players,
            episode=episode,
            reward="zero_sum",
            obs_type="information_state",
            **config,
        )
        players = [
            player
            if hasattr(agents[lineup[p]], "act")
            else build_agent(agents[lineup[p]], env, seed=seeds[p])
            for p, player in enumerate(players)
        ]
        plain_cut = [agent_obs_type(player) == "observation" for player in players]
    notes: list[str] = []
    for p, player in enumerate(players):
        note = check_game(player, names[lineup[p]], cfg, allow_mismatch)
        if note is not None and note not in notes:
            notes.append(note)
    return EvalPlan(
        env,
        players,
        lineup,
        names,
        deals,
        episode,
        int(seed),
        notes,
        plain_cut,
        specs=list(agents),
        game={"num_players": num_players, **config},
        allow_mismatch=allow_mismatch,
    )


def run(plan: EvalPlan, progress: bool = False, record_dir: Path | None = None) -> EvalResult:
    """Play a prepared evaluation (``evaluate``'s second half) and compute its statistics;
    with ``record_dir``, every game is also saved there as a JSON game record
    (``deal00000_seating0.json``, ...; see ``block_env.records``). ``plan.workers > 1``
    plays the deals in that many spawned processes (``prepare(workers=...)``)."""
    return _run(plan, progress, record_dir)


def _run(plan: EvalPlan, progress: bool, record_dir: Path | None, pool: Any = None) -> EvalResult:
    """``run``, in the worker processes of ``pool`` when given (the ladder shares one)."""
    n = plan.env.config.num_players
    bar = _progress(plan.deals * n, progress, " vs ".join(plan.names))
    start = time.perf_counter()
    try:
        if plan.workers == 1 and pool is None:
            per_deal = _play_deals(plan, 0, plan.deals, record_dir, bar)
        else:
            per_deal = _play_parallel(plan, record_dir, bar, pool)
    finally:
        if bar is not None:
            bar.close()
    return deal_statistics(plan, per_deal, time.perf_counter() - start)


def _play_deals(
    plan: EvalPlan, first: int, stop: int, record_dir: Path | None, bar: Any = None
) -> dict[str, np.ndarray]:
    """Play deals ``first`` .. ``stop - 1`` of ``plan`` (deal ``d`` on env seed
    ``plan.seed + d``, once per seating) and return their per-deal totals: arrays of
    shape (deals, agents) (``reward``, ``seat_hands``, ``seat_wins``, ``side_wins``,
    ``seat_matches``, ``match_wins``) and (deals,) (``hands``, ``ties``)."""
    env, players, lineup, names = plan.env, plan.players, plan.lineup, plan.names
    seed = plan.seed
    cfg = env.config
    n = cfg.num_players
    deals = stop - first
    shape = (deals, len(names))
    reward = np.zeros(shape)
    seat_hands = np.zeros(shape)
    seat_wins = np.zeros(shape)
    side_wins = np.zeros(shape)  # hands won by a seat of this agent (counted once per hand)
    seat_matches = np.zeros(shape)
    match_wins = np.zeros(shape)
    game_hands = np.zeros(deals)
    ties = np.zeros(deals)
    teams = cfg.teams
    for i in range(deals):
        d = first + i
        for r in range(n):
            # lineup position p sits at seat (p + r) % n
            at_seat = [0] * n
            for p in range(n):
                at_seat[(p + r) % n] = p
            record = None
            if record_dir is not None:
                seated = [names[lineup[at_seat[s]]] for s in range(n)]
                record = (record_dir / f"deal{d:05d}_seating{r}.json", seated)
            seats = [players[at_seat[s]] for s in range(n)]
            cut = [plan.plain_cut[at_seat[s]] for s in range(n)] if plan.plain_cut else None
            played = _play_episode(env, seed + d, seats, record, cut)
            for hand_rewards, winner, match_winners in played:
                game_hands[i] += 1
                if winner is None:
                    ties[i] += 1
                sides_won = set()
                for s in range(n):
                    a = lineup[at_seat[s]]
                    reward[i, a] += hand_rewards[s]
                    seat_hands[i, a] += 1
                    if winner is not None and teams[winner] == teams[s]:
                        seat_wins[i, a] += 1
                        sides_won.add(a)
                    if match_winners is not None:
                        seat_matches[i, a] += 1
                        match_wins[i, a] += s in match_winners
                for a in sides_won:
                    side_wins[i, a] += 1
            if bar is not None:
                bar.update(1)
    return {
        "reward": reward,
        "seat_hands": seat_hands,
        "seat_wins": seat_wins,
        "side_wins": side_wins,
        "seat_matches": seat_matches,
        "match_wins": match_wins,
        "hands": game_hands,
        "ties": ties,
    }


PER_DEAL_KEYS = ("reward", "seat_hands", "seat_wins", "side_wins", "hands", "ties")


def deal_statistics(plan: EvalPlan, per_deal: dict[str, np.ndarray], seconds: float) -> EvalResult:
    """The result of ``plan`` from its per-deal totals (``_play_deals``'s arrays, all deals
    in deal order): the one place the statistics are computed, whether the deals were
    played here or in worker processes."""
    names, episode = plan.names, plan.episode
    cfg = plan.env.config
    n = cfg.num_players
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
    config: dict[str, Any] = {
        "num_players": n,
        "episode": episode,
        "opener": cfg.opener,
        "partnership": cfg.partnership,
        "target": cfg.target,
        "seed": plan.seed,
    }
    if plan.workers > 1:  # only then: a serial run's JSON stays as it always was
        config["workers"] = plan.workers
    return EvalResult(
        agents=names,
        lineup=list(plan.lineup),
        config=config,
        deals=plan.deals,
        hands=int(per_deal["hands"].sum()),
        matches=plan.deals * n if episode == "match" else 0,
        seconds=seconds,
        stats=stats,
        per_deal={key: per_deal[key] for key in PER_DEAL_KEYS},
        notes=list(plan.notes),
    )


# ----------------------------------------------------------------------------- workers

CHUNKS_PER_WORKER = 8  # so the progress bar moves and a slow chunk does not idle the rest


@dataclass
class _Chunk:
    """What a worker process needs to play deals ``first`` .. ``stop - 1`` of an evaluation:
    picklable values only (spec strings, numbers, the game keywords)."""

    specs: list[str]
    names: list[str]
    lineup: list[int]
    game: dict[str, Any]
    episode: str
    seed: int
    allow_mismatch: bool
    first: int
    stop: int
    player_seeds: list[int]
    record_dir: Path | None


def chunk_bounds(deals: int, workers: int) -> list[tuple[int, int]]:
    """Contiguous deal ranges ``(first, stop)`` for ``workers`` processes: about
    ``CHUNKS_PER_WORKER`` per worker, at least one deal each, sizes within one deal."""
    count = max(1, min(deals, workers * CHUNKS_PER_WORKER))
    edges = [deals * c // count for c in range(count + 1)]
    return [(edges[c], edges[c + 1]) for c in range(count)]


def chunk_seeds(seed: int, chunk: int, positions: int) -> list[int]:
    """The seeds of the agents at each lineup position in chunk ``chunk`` (from ``seed``
    and the chunk index only, so a parallel run repeats)."""
    state = np.random.SeedSequence([int(seed), int(chunk)]).generate_state(positions)
    return [int(v) for v in state]


def _worker_init() -> None:
    """Each worker computes on one thread: the processes already use the cores."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = "1"
    _one_torch_thread()


def _one_torch_thread() -> None:
    torch = sys.modules.get("torch")  # imported only by agents that need it
    if torch is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def _play_chunk(job: _Chunk) -> dict[str, np.ndarray]:
    """Worker side: build the evaluation again from spec strings and play its chunk."""
    plan = _build_plan(
        job.specs,
        job.game["num_players"],
        None,
        None,
        job.episode,
        job.seed,
        job.lineup,
        job.names,
        job.allow_mismatch,
        {k: v for k, v in job.game.items() if k != "num_players"},
        job.player_seeds,
    )
    plan.names = list(job.names)
    _one_torch_thread()
    return _play_deals(plan, job.first, job.stop, job.record_dir)


def _pool(workers: int) -> Any:
    """A process pool of ``workers`` spawned processes (no fork: torch and threads do not
    survive a fork safely), each on one thread."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_worker_init,
    )


def _play_parallel(
    plan: EvalPlan, record_dir: Path | None, bar: Any, pool: Any = None
) -> dict[str, np.ndarray]:
    """Play ``plan``'s deals in chunks on worker processes (``pool``, or a new one of
    ``plan.workers`` processes) and join the per-deal totals in deal order."""
    from concurrent.futures import as_completed

    # Workers get this module's functions under its importable name, also when it runs as
    # `python -m block_env.evaluate` (then this copy is __main__).
    from block_env.evaluate import _Chunk as Chunk
    from block_env.evaluate import _play_chunk as play_chunk

    n = plan.env.config.num_players
    bounds = chunk_bounds(plan.deals, plan.workers)
    jobs = [
        Chunk(
            specs=list(plan.specs),
            names=list(plan.names),
            lineup=list(plan.lineup),
            game=dict(plan.game),
            episode=plan.episode,
            seed=plan.seed,
            allow_mismatch=plan.allow_mismatch,
            first=first,
            stop=stop,
            player_seeds=chunk_seeds(plan.seed, c, n),
            record_dir=record_dir,
        )
        for c, (first, stop) in enumerate(bounds)
    ]
    own = pool is None
    if own:
        pool = _pool(min(plan.workers, len(jobs)))
    parts: list[dict[str, np.ndarray] | None] = [None] * len(jobs)
    try:
        futures = {pool.submit(play_chunk, job): c for c, job in enumerate(jobs)}
        try:
            for future in as_completed(futures):
                c = futures[future]
                parts[c] = future.result()
                if bar is not None:
                    bar.update((jobs[c].stop - jobs[c].first) * n)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    finally:
        if own:
            pool.shutdown(wait=True, cancel_futures=True)
    done = [part for part in parts if part is not None]
    return {key: np.concatenate([part[key] for part in done]) for key in done[0]}


def _play_episode(
    env: Any,
    seed: int,
    players: list[Any],
    record: tuple[Path, list[str]] | None = None,
    cut: list[bool] | None = None,
) -> list[tuple[list[float], int | None, tuple[int, ...] | None]]:
    """One episode from ``reset(seed)``; per finished hand: (zero-sum rewards by seat,
    winning seat or None, match winners at match end else None). ``record``: (path, seat
    labels) to save the game as a JSON game record. ``cut``: per seat, whether its player
    gets the plain observation cut out of the env's information state."""
    plain_dim = None
    if cut is not None and any(cut):
        from block_env.observation import obs_layout

        plain_dim = obs_layout(env.config).dim
    if record is not None:
        from block_env.records import RecordingWrapper

        env = RecordingWrapper(env, players=record[1])
    env.reset(seed=seed)
    seats = env.possible_agents
    out = []
    while True:
        agent = env.agent_selection
        seat = int(agent.rsplit("_", 1)[1])
        observation = env.observe(agent)
        if plain_dim is not None and cut[seat]:
            observation = plain_observation(observation, plain_dim)
        action = players[seat].act(observation)
        env.step(int(action))
        info = env.infos[seats[0]]
        if info["hand_over"]:
            over = env.terminations[seats[0]]
            winner = info["hand_winner"]
            out.append(
                (
                    [env.rewards[a] for a in seats],
                    None if winner < 0 else winner,
                    tuple(np.flatnonzero(info["match_winners"]).tolist()) if over else None,
                )
            )
            if over:
                if record is not None:
                    env.save(record[0])
                return out


# ----------------------------------------------------------------------------- ladder


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
    hands_per_pair: int
    seconds: float
    notes: list[str] = field(default_factory=list)  # warnings (JSON; stderr on the CLI)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def table(self) -> str:
        order = sorted(range(len(self.agents)), key=lambda i: -self.ratings[i].mean)
        rows = [
            [str(rank + 1), self.agents[i], self.ratings[i].fmt(0)] for rank, i in enumerate(order)
        ]
        text = (
            f"Ladder, {self.config['num_players']} players, {self.hands_per_pair} hands per "
            f"pair, {self.seconds:.0f} s\n"
            + _format_table(["#", "agent", "rating (Elo scale) [95% CI]"], rows)
            + "\n\nPairwise margin of row over column, points per hand [95% CI]\n"
        )
        head = ["", *[self.agents[i] for i in order]]
        grid = []
        for i in order:
            grid.append(
                [self.agents[i]]
                + ["-" if self.margins[i][j] is None else self.margins[i][j].fmt(2) for j in order]
            )
        text += _format_table(head, grid)
        if self.skipped:
            text += "\n\nNot in the ladder (could not be built or do not fit the game):\n"
            text += "\n".join(f"  {name}: {why}" for name, why in self.skipped.items())
        return text


def ladder_specs(num_players: int) -> list[str]:
    """The default ladder: baselines, search agents, the shipped policy and the oracle."""
    return [s.format(n=num_players) for s in LADDER_AGENTS]


def ladder(
    agents: Sequence[AgentSpec] | None = None,
    num_players: int = 2,
    hands: int = 400,
    seed: int = 0,
    progress: bool = False,
    bootstrap: int = 200,
    allow_mismatch: bool = False,
    workers: int = 1,
    **config: Any,
) -> LadderResult:
    """Round robin of ``agents`` (default ``ladder_specs``) on duplicate deals, ``hands`` per
    pair (per lineup in 3-4 player games, where each pair plays A against a field of B and B
    against a field of A), rounded up to whole deals as in ``evaluate``. Agents that cannot
    be built, or policies trained for another game (unless ``allow_mismatch``), are listed
    in ``skipped`` with the reason, never dropped silently. ``workers > 1`` plays each
    pair's deals in that many processes, one pool for the whole ladder (spec strings only;
    see ``evaluate``). SetupError (a ValueError) before anything is played when the game is
    invalid or fewer than two agents remain."""
    from block_env.env import raw_env

    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise SetupError(f"seed={seed!r} is not allowed: use an int >= 0")
    specs = list(ladder_specs(num_players) if agents is None else agents)
    workers = check_workers(workers, specs)
    try:
        probe_env = raw_env(num_players=num_players, episode="hand", **config)
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
    names = _unique([agent_label(s) for s in kept])
    k = len(kept)
    if k < 2:
        raise SetupError(f"the ladder needs at least two agents that build; skipped: {skipped}")
    n = num_players
    partnership = bool(config.get("partnership", False))
    margins: list[list[Estimate | None]] = [[None] * k for _ in range(k)]
    share: list[list[float | None]] = [[None] * k for _ in range(k)]
    start = time.perf_counter()
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    bar = _progress(len(pairs), progress, "ladder pairs")
    if bar is not None:
        bar.unit = "pair"
    pool = _pool(workers) if workers > 1 else None
    common = dict(num_players=n, hands=hands, seed=seed, allow_mismatch=allow_mismatch)

    def play_pair(two: list[AgentSpec], labels: list[str]) -> EvalResult:
        plan = prepare(two, labels=labels, workers=workers, **common, **config)
        return _run(plan, progress, None, pool)

    try:
        hands_played, pair_data = _ladder_pairs(
            kept, names, pairs, n == 2 or partnership, play_pair, margins, share, bar
        )
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if bar is not None:
            bar.close()
    ratings = bradley_terry_ci(k, pair_data, bootstrap=bootstrap, seed=seed)
    out_config = {"num_players": n, "seed": seed, **config}
    if workers > 1:  # only then: a serial ladder's JSON stays as it always was
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
) -> tuple[int, dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]]:
    """Play every pair (``play_pair(agents, labels)``), filling ``margins`` and ``share``;
    returns the hands played per pair and each pair's per-deal wins and hands."""
    pair_data: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    hands_played = 0
    for i, j in pairs:
        if head_to_head:
            res = play_pair([kept[i], kept[j]], [names[i], names[j]])
            m = res.stats[0].margin
            hands_played = res.hands
            wins_i = res.per_deal["side_wins"][:, 0] + 0.5 * res.per_deal["ties"]
            played = res.per_deal["hands"]
        else:
            a = play_pair([kept[i], kept[j]], [names[i], names[j]])
            b = play_pair([kept[j], kept[i]], [names[j], names[i]])
            m = _half_difference(a.stats[0].margin, b.stats[0].margin)
            hands_played = a.hands
            wins_i = (
                a.per_deal["side_wins"][:, 0]
                + b.per_deal["side_wins"][:, 1]
                + 0.5 * (a.per_deal["ties"] + b.per_deal["ties"])
            )
            played = a.per_deal["hands"] + b.per_deal["hands"]
        margins[i][j] = m
        margins[j][i] = Estimate(-m.mean, -m.hi, -m.lo)
        share[i][j] = float(wins_i.sum() / played.sum())
        share[j][i] = 1.0 - share[i][j]
        pair_data[(i, j)] = (wins_i, played)
        if bar is not None:
            bar.update(1)
    return hands_played, pair_data


def _half_difference(a: Estimate, b: Estimate) -> Estimate:
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


def bradley_terry_ci(
    k: int,
    pair_data: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]],
    bootstrap: int = 200,
    seed: int = 0,
) -> list[Estimate]:
    """Ratings with 95% percentile CIs from resampling each pair's deals (keeps the
    duplicate pairing of rotated seats inside a deal)."""

    def fit(select: Callable[[np.ndarray], np.ndarray] | None) -> np.ndarray:
        wins = np.zeros((k, k))
        games = np.zeros((k, k))
        for (i, j), (w, h) in pair_data.items():
            idx = select(w) if select is not None else slice(None)
            wi, hi = float(w[idx].sum()), float(h[idx].sum())
            wins[i, j], wins[j, i] = wi, hi - wi
            games[i, j] = games[j, i] = hi
        return bradley_terry(k, wins, games)

    point = fit(None)
    rng = np.random.default_rng(seed)
    samples = np.array(
        [fit(lambda w: rng.integers(0, len(w), len(w))) for _ in range(max(bootstrap, 0))]
    )
    out = []
    for i in range(k):
        if len(samples) < 2:
            out.append(Estimate(float(point[i]), float("nan"), float("nan")))
        else:
            lo, hi = np.percentile(samples[:, i], [2.5, 97.5])
            out.append(Estimate(float(point[i]), float(lo), float(hi)))
    return out


# ----------------------------------------------------------------------------- CLI


PROG = "python -m block_env.evaluate"


class _UsageError(Exception):
    """A command-line mistake: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see --help)")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Evaluate Block agents on duplicate deals (seats rotated), or run a ladder.",
    )
    p.add_argument(
        "agents",
        nargs="*",
        help="two or more agent names/specs (random, greedy, rules, pimc:worlds=20, pimc-20, "
        "block-2p, path/to/policy.pt; name one twice to compare two copies); with --ladder "
        "the default is the shipped ladder",
    )
    p.add_argument("--players", type=int, default=2, help="2, 3 or 4 (default 2)")
    p.add_argument(
        "--hands",
        type=int,
        default=None,
        help="hands in total (hand episodes), a multiple of the seatings (the player count); "
        "default 2000, or 400 per pair for --ladder",
    )
    p.add_argument(
        "--matches",
        type=int,
        default=None,
        help="matches in total (match episodes), a multiple of the player count",
    )
    p.add_argument("--episode", choices=("hand", "match"), default="hand")
    p.add_argument("--opener", choices=("rotate", "highest_double"), default="rotate")
    p.add_argument("--partnership", action="store_true", help="4 players, teams 0&2 and 1&3")
    p.add_argument("--target", type=int, default=None, help="match target score")
    p.add_argument(
        "--max-pip", type=int, default=6, help="tile set [0|0]..[N|N], N from 2 to 6 (default 6)"
    )
    p.add_argument(
        "--hand-size", type=int, default=None, help="tiles per hand (default: the rules' own)"
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="first deal seed: deal d uses env seed seed+d, so runs whose seeds are closer "
        "than their number of deals share deals; keep independent evaluations far apart "
        "(e.g. seeds 1000000, 2000000, ...)",
    )
    p.add_argument("--ladder", action="store_true", help="round robin with ratings")
    p.add_argument(
        "--allow-mismatch",
        action="store_true",
        help="play a policy in a game other than the one it was trained for (warned, not refused)",
    )
    p.add_argument("--json", default=None, help="also write the results as JSON to this path")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument(
        "--record",
        default=None,
        metavar="DIR",
        help="save every game played as a JSON game record in this folder",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="play the deals in N processes (default 1: here, one after another); deal d "
        "keeps seed seed+d, so deterministic agents give the same figures as a serial run, "
        "while agents with their own randomness (random, pimc) are seeded per chunk of deals "
        "and draw differently than in a serial run (the same for the same seed and N)",
    )
    return p


def _check_record_dir(path_text: str) -> Path:
    """The ``--record`` folder, created if missing; a file there, or a folder that cannot be
    written, is refused before anything is played."""
    path = Path(path_text).expanduser()
    if path.exists() and not path.is_dir():
        raise _UsageError(f"--record {path_text}: that is a file; give a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _UsageError(f"--record {path_text}: cannot create the folder ({exc})") from exc
    if not os.access(path, os.W_OK):
        raise _UsageError(f"--record {path_text}: the folder is not writable")
    return path


def _json_safe(value: Any) -> Any:
    """NaN/inf -> None so the file is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _check_output(path_text: str) -> Path:
    """The ``--json`` path, checked before anything is played: its folder is created if
    missing; a folder given as the file, or a place that cannot be written, is refused."""
    path = Path(path_text).expanduser()
    if path.is_dir():
        raise _UsageError(f"--json {path_text}: that is a folder; give a file path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _UsageError(f"--json {path_text}: cannot create its folder ({exc})") from exc
    target = path if path.exists() else path.parent
    if not os.access(target, os.W_OK):
        raise _UsageError(f"--json {path_text}: {target} is not writable")
    return path


def _check_count(option: str, value: int | None, players: int) -> None:
    """Refuse a game count that is not a whole number of deals (each deal is played once
    per seating), naming the nearest allowed values."""
    if value is None:
        return
    if value < 1:
        raise _UsageError(f"{option} {value}: use a positive multiple of {players}")
    if value % players:
        lower, upper = value - value % players, value + players - value % players
        allowed = " or ".join(str(v) for v in (lower, upper) if v > 0)
        raise _UsageError(
            f"{option} {value} is not a whole number of deals: each deal is played once per "
            f"seating ({players} with {players} players), so use a multiple of {players}, "
            f"e.g. {allowed}"
        )


def main(argv: Iterable[str] | None = None) -> int:
    """The command line; returns the exit status (2, with one line on stderr, for a bad
    setup found before anything is played)."""
    try:
        args = _parser().parse_args(None if argv is None else list(argv))
        config: dict[str, Any] = {"opener": args.opener}
        if args.partnership:
            config["partnership"] = True
        if args.target is not None:
            config["target_score"] = args.target
        if args.max_pip != 6:
            config["max_pip"] = args.max_pip
        if args.hand_size is not None:
            config["hand_size"] = args.hand_size
        try:
            game = BlockConfig(num_players=args.players, **config)
        except ValueError as exc:
            raise _UsageError(str(exc)) from exc
        n = game.num_players
        _check_count("--hands", args.hands, n)
        _check_count("--matches", args.matches, n)
        if args.workers < 1:
            raise _UsageError(
                f"--workers {args.workers}: use an integer >= 1 (the number of processes "
                "playing deals; 1 plays them one after another)"
            )
        progress = not args.no_progress
        if args.ladder:
            if args.episode != "hand" or args.matches is not None:
                raise _UsageError(
                    "--ladder compares agents on single hands: drop --episode/--matches"
                )
            if args.record is not None:
                raise _UsageError("--record saves the games of an evaluation, not of --ladder")
            output = None if args.json is None else _check_output(args.json)
            res: Any = ladder(
                args.agents or None,
                num_players=args.players,
                hands=args.hands or -(-400 // n) * n,
                seed=args.seed,
                progress=progress,
                allow_mismatch=args.allow_mismatch,
                workers=args.workers,
                **config,
            )
            for note in res.notes:
                print(f"{PROG}: warning: {note}", file=sys.stderr)
        else:
            if len(args.agents) < 2:
                raise _UsageError(
                    "give two or more agents, e.g. `rules greedy` (one agent alone would only "
                    "play itself; name it twice to compare two copies), or use --ladder"
                )
            plan = prepare(
                args.agents,
                num_players=args.players,
                hands=args.hands,
                matches=args.matches,
                episode=args.episode,
                seed=args.seed,
                allow_mismatch=args.allow_mismatch,
                workers=args.workers,
                **config,
            )
            output = None if args.json is None else _check_output(args.json)
            for note in plan.notes:
                print(f"{PROG}: warning: {note}", file=sys.stderr)
            record_dir = None if args.record is None else _check_record_dir(args.record)
            res = run(plan, progress, record_dir)
    except (_UsageError, SetupError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    print(res.table())
    if output is not None:
        tmp = output.with_name(output.name + ".tmp")
        tmp.write_text(json.dumps(_json_safe(res.to_dict()), indent=2), encoding="utf-8")
        os.replace(tmp, output)
        print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
