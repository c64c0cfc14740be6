"""Duplicate-deal play: an evaluation checked and built into a plan (``EvalPlan``), its deals
played one after another on the AEC env, each once per seat rotation, and the per-deal
totals turned into the result.

Every deal (fixed by its seed) is replayed with the seats rotated, so each agent plays every
seat's hand of it, leader included: who leads decides most hands, and the paired design
removes that deal-to-deal variance from the comparison (see docs/evaluation.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from block_env.agent_specs import (
    AgentSpec,
    SetupError,
    agent_label,
    agent_obs_type,
    build_agent,
    check_game,
    default_lineup,
    plain_observation,
    unique_labels,
)
from block_env.evaluation.control import (
    ControlWatch,
    check_control,
    check_replayable,
    episode_seeds,
    reseed,
)
from block_env.evaluation.results import EvalResult, eval_result


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
    # evaluations with a control (block_env.evaluation.control): its spec and label, and per
    # lineup position the control standing in for the first agent there (None elsewhere)
    # and whether it gets the plain observation cut out of the information state
    control_spec: Any = None
    control_name: str | None = None
    controls: list[Any] = field(default_factory=list)
    control_cut: list[bool] = field(default_factory=list)


def build_plan(
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
    control: AgentSpec | None = None,
) -> EvalPlan:
    """Check an evaluation's arguments (SetupError on anything wrong) and build its env and
    agents, one per lineup position. ``player_seeds`` (one per lineup position) seed the
    agents built from specs, by default ``seed * 1009 + position`` (a worker's chunk gives
    its own). ``control``: an agent to stand in for the first agent in a second game
    wherever the two choose apart (``block_env.evaluation.control``)."""
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
    names = unique_labels(list(labels) if labels is not None else [agent_label(a) for a in agents])
    control_name = None if control is None else check_control(control)
    seeds = [seed * 1009 + p for p in range(n)] if player_seeds is None else list(player_seeds)
    # One instance per lineup position for specs (stateful agents never share a seat).
    players = [build_agent(agents[lineup[p]], env, seed=seeds[p]) for p in range(n)]
    controls = []
    if control is not None:
        controls = [
            build_agent(control, env, seed=seeds[p]) if a == 0 else None
            for p, a in enumerate(lineup)
        ]
    wants = [agent_obs_type(a) for a in players + controls if a is not None]
    plain_cut: list[bool] = []
    control_cut: list[bool] = []
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
        controls = [
            c if c is None or hasattr(control, "act") else build_agent(control, env, seed=seeds[p])
            for p, c in enumerate(controls)
        ]
        plain_cut = [agent_obs_type(player) == "observation" for player in players]
        control_cut = [c is not None and agent_obs_type(c) == "observation" for c in controls]
    notes: list[str] = []
    seated = [(player, names[lineup[p]]) for p, player in enumerate(players)]
    seated += [(c, f"control {control_name}") for c in controls if c is not None]
    for agent, name in seated:
        note = check_game(agent, name, cfg, allow_mismatch)
        if note is not None and note not in notes:
            notes.append(note)
        if control is not None:
            check_replayable(agent, name)
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
        control_spec=control,
        control_name=control_name,
        controls=controls,
        control_cut=control_cut,
    )


def play_deals(
    plan: EvalPlan, first: int, stop: int, record_dir: Path | None, bar: Any = None
) -> dict[str, np.ndarray]:
    """Play deals ``first`` .. ``stop - 1`` of ``plan`` (deal ``d`` on env seed
    ``plan.seed + d``, once per seating) and return their per-deal totals: arrays of
    shape (deals, agents) (``reward``, ``seat_hands``, ``seat_wins``, ``side_wins``,
    ``seat_matches``, ``match_wins``) and (deals,) (``hands``, ``ties``); with a control,
    also ``control_reward`` and ``control_match_wins`` (deals, agents: the points and
    seat-matches won of the control's games) and ``games_apart`` (deals,)."""
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
    control_reward = np.zeros(shape)
    control_match_wins = np.zeros(shape)
    games_apart = np.zeros(deals)
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
            if plan.controls:
                played, control_played, apart = _play_with_control(
                    plan, d, r, at_seat, seats, cut, record
                )
                games_apart[i] += apart
                for hand_rewards, _, match_winners in control_played:
                    for s in range(n):
                        control_reward[i, lineup[at_seat[s]]] += hand_rewards[s]
                        if match_winners is not None:
                            control_match_wins[i, lineup[at_seat[s]]] += s in match_winners
            else:
                played = play_episode(env, seed + d, seats, record, cut)
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
    out = {
        "reward": reward,
        "seat_hands": seat_hands,
        "seat_wins": seat_wins,
        "side_wins": side_wins,
        "seat_matches": seat_matches,
        "match_wins": match_wins,
        "hands": game_hands,
        "ties": ties,
    }
    if plan.controls:
        out["control_reward"] = control_reward
        out["control_match_wins"] = control_match_wins
        out["games_apart"] = games_apart
    return out


def _play_with_control(
    plan: EvalPlan,
    deal: int,
    seating: int,
    at_seat: list[int],
    seats: list[Any],
    cut: list[bool] | None,
    record: tuple[Path, list[str]] | None,
) -> tuple[list[Any], list[Any], bool]:
    """One game of ``plan`` with the control asked beside the first agent at each of its
    turns, then, if the two chose apart, the same game again with the control seated, all
    agents reseeded alike: (the game's hands, the control game's hands, apart)."""
    n = len(at_seat)
    seeds = episode_seeds(plan.seed, deal, seating, n)
    env_seed = plan.seed + deal
    controls = {s: plan.controls[at_seat[s]] for s in range(n) if plan.controls[at_seat[s]]}
    cut = cut or [False] * n
    control_cut = [
        bool(plan.control_cut) and plan.control_cut[at_seat[s]] if s in controls else cut[s]
        for s in range(n)
    ]
    dims = {s: _plain_dim(plan.env) if control_cut[s] else None for s in controls}
    reseed(plan.players + plan.controls, seeds + seeds)
    watch = ControlWatch(controls, dims)
    played = play_episode(plan.env, env_seed, seats, record, cut, watch)
    if not watch.apart:
        return played, played, False
    reseed(plan.players + plan.controls, seeds + seeds)
    seats = [controls.get(s, seats[s]) for s in range(n)]
    control_played = play_episode(plan.env, env_seed, seats, None, control_cut)
    return played, control_played, True


def _plain_dim(env: Any) -> int:
    """The plain observation's length in ``env``'s game."""
    from block_env.observation import obs_layout

    return obs_layout(env.config).dim


def deal_statistics(plan: EvalPlan, per_deal: dict[str, np.ndarray], seconds: float) -> EvalResult:
    """The result of ``plan`` from its per-deal totals (``play_deals``'s arrays, all deals
    in deal order), whether the deals were played here or in worker processes."""
    return eval_result(
        plan.names,
        plan.lineup,
        plan.env.config,
        plan.episode,
        plan.seed,
        per_deal,
        seconds,
        plan.notes,
        plan.workers,
        plan.control_name,
    )


def play_episode(
    env: Any,
    seed: int,
    players: list[Any],
    record: tuple[Path, list[str]] | None = None,
    cut: list[bool] | None = None,
    watch: Callable[[int, dict[str, Any], int], None] | None = None,
) -> list[tuple[list[float], int | None, tuple[int, ...] | None]]:
    """One episode from ``reset(seed)``; per finished hand: (zero-sum rewards by seat,
    winning seat or None, match winners at match end else None). ``record``: (path, seat
    labels) to save the game as a JSON game record. ``cut``: per seat, whether its player
    gets the plain observation cut out of the env's information state. ``watch(seat,
    observation, action)`` is called after each choice, with the env's observation."""
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
        seen = observation
        if plain_dim is not None and cut[seat]:
            seen = plain_observation(observation, plain_dim)
        action = int(players[seat].act(seen))
        if watch is not None:
            watch(seat, observation, action)
        env.step(action)
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
