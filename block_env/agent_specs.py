"""Agent specs: the strings that name an agent (``"greedy"``, ``"pimc:worlds=20"``,
``"pimc-20"``, ``"block-2p"``, a policy path), how they are built into agents, and the checks
that an agent fits the game it is about to play.

The evaluation, the interactive table (``block_env.play``) and the opponent wrappers
(``block_env.wrappers``) all accept the same specs, so they are parsed and built here, in one
place. The ``agents`` package is imported only when a spec is built.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable
from typing import Any

from block_env.config import SET_KEYS, BlockConfig

_PIMC_ALIAS = re.compile(r"pimc-(\d+)")  # "pimc-N" stands for "pimc:worlds=N"
__all__ = [
    "FIT_KEYS",
    "SCORE_KEYS",
    "SET_KEYS",
    "AgentSpec",
    "SetupError",
    "agent_label",
    "agent_obs_type",
    "build_agent",
    "check_game",
    "default_lineup",
    "importable_factory",
    "parse_spec",
    "plain_observation",
    "unique_labels",
]

AgentSpec = Any  # an object with act(observation) -> int, or a spec string
FIT_KEYS = ("num_players", "partnership", "opener")  # a policy must be trained for these
SCORE_KEYS = ("episode", "target")  # also these when the policy reads the scores
# and SET_KEYS (the tile set, the hand size) when either game is not the standard set


class SetupError(ValueError):
    """A bad evaluation setup (agents, counts, game, lineup), found before anything is
    played; the command line reports it in one line with exit status 2."""


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
    """``"name:key=value,key=value"`` -> (name, kwargs); aliases (``"pimc-N"``, PIMC with N
    worlds) are expanded first. Values are Python literals where they parse, strings
    otherwise."""
    pimc = _PIMC_ALIAS.fullmatch(spec)
    spec = f"pimc:worlds={int(pimc[1])}" if pimc else spec
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


def importable_factory(spec: str) -> tuple[str, str, dict[str, Any]] | None:
    """``"package.module:factory"`` or ``"package.module:factory:key=value,..."`` ->
    (module, factory, keywords); None for any other spec (a registered name's ``:`` is
    followed by ``key=value`` items, never by a bare identifier)."""
    module, sep, rest = spec.partition(":")
    factory, _, options = rest.partition(":")
    if not sep or not factory.isidentifier() or not module:
        return None
    if not all(part.isidentifier() for part in module.split(".")):
        return None
    _, kwargs = parse_spec(f"{factory}:{options}") if options else (factory, {})
    return module, factory, kwargs


def build_agent(spec: AgentSpec, env: Any = None, seed: int | None = None) -> Any:
    """An agent from a spec: a registered name with optional keywords, an alias, an
    importable factory (``"my_pkg.agents:make"``, optionally ``":key=value,..."`` after it),
    or a trained policy for ``agents.load``; objects with ``act`` pass through. Factories
    that accept ``env`` get ``env`` (oracle agents read its privileged state), those that
    accept ``seed`` get ``seed`` (so runs repeat).
    Raises SetupError (a ValueError) naming the spec when it cannot be built."""
    if hasattr(spec, "act"):
        return spec
    if not isinstance(spec, str):
        raise SetupError(f"agent {spec!r} is neither an object with act() nor a spec string")
    import agents

    try:
        factory_spec = importable_factory(spec)
        name, kwargs = (spec, {}) if factory_spec is not None else parse_spec(spec)
    except ValueError as exc:
        raise SetupError(str(exc)) from exc
    if name in agents.REGISTRY or factory_spec is not None:
        from importlib import import_module

        if factory_spec is not None:
            module, factory, kwargs = factory_spec
        else:
            module, factory = agents.REGISTRY[name].split(":")
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


def unique_labels(labels: list[str]) -> list[str]:
    """``labels`` with repeats numbered (``greedy``, ``greedy#2``), so every agent of an
    evaluation has its own name."""
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
