"""Duplicate-deal evaluation of a policy against a baseline bot on the batched engine.

The same evaluation as ``block_env.evaluation.evaluate([agent, opponent], ...)`` with
``episode="hand"`` (the figures keep their meaning: zero-sum points per hand for the agent's
seats with a 95% CI over deals, the share of seat-hands won), but every game of it is played
at once in one ``block_env.batched.BatchedEnv``, the agent and the bot each acting on one
batch per step, instead of one AEC game and one network call per decision at a time. The
trainer evaluates its policy with it.

The deals are the AEC evaluation's: each seat rotation ``r`` plays in its own batched env
with ``deal_source="aec"``, so its game ``d`` gets the lot and deal of
``raw_env().reset(seed=seed + d)``, and the agent at lineup position ``p`` sits at seat
``(p + r) % n`` (the lineup of ``block_env.agent_specs.default_lineup``).
Rewards are rebuilt in float64 from the hand's points exactly as the AEC env computes them
and summed in the AEC evaluation's order into the same per-deal totals, from which
``eval_result`` computes the statistics (``engine="batched"``), so an agent whose
``act_batch`` rows are its ``act`` moves gets exactly the AEC evaluation's figures against
``greedy`` or ``rules``. A network's batched forward pass rounds float32 differently from a
one-row pass, so a greedy network's decision between two logits that close can differ from
the AEC play's (rare; the figures then agree within their CIs). ``random`` draws from its
own generator (the same distribution, other draws).

An agent whose ``obs_type`` attribute is ``"information_state"`` (a ``PolicyAgent`` of such
a network) plays on the information state: the envs are made with that ``obs_type`` and the
bot reads the first ``obs_dim`` entries, the plain observation (its actions are the same as
in a plain env, so the figures stay the AEC evaluation's).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from agents.baselines import greedy_actions, random_actions, rule_actions
from block_env.agent_specs import agent_obs_type, default_lineup
from block_env.batched import BatchedEnv
from block_env.config import BlockConfig
from block_env.evaluation.results import EvalResult, eval_result
from block_env.observation import obs_layout
from block_env.rules import spread_reward

BATCHED_BASELINES = ("random", "greedy", "rules")
Actor = Callable[[np.ndarray, np.ndarray], np.ndarray]


def baseline_actor(name: str, seed: int) -> Actor:
    """The baseline bot ``name`` acting on batches (obs (M, D), mask (M, A)) -> (M,)."""
    if name == "greedy":
        return lambda obs, mask: greedy_actions(mask)
    if name == "rules":
        return rule_actions
    if name == "random":
        rng = np.random.default_rng(seed)
        return lambda obs, mask: random_actions(rng, mask)
    raise ValueError(
        f"batched evaluation plays the baselines {', '.join(BATCHED_BASELINES)}, not {name!r}"
    )


def agent_actor(
    spec: str, game: dict[str, Any], seed: int, information_state: bool = False
) -> Actor:
    """Any agent spec acting on batches: the baselines' batched twins, ``act_batch`` when
    the agent has one (a policy), else its ``act`` row by row (search agents, factories).
    It reads plain observations, or with ``information_state`` an agent that plays on the
    information state (an ``obs_type="information_state"`` policy) reads full information
    states (``actor_obs_type`` says which).
    SetupError when it cannot be built, does not fit ``game`` or plays on the information
    state without ``information_state``."""
    from block_env.agent_specs import SetupError, build_agent, check_game

    if spec in BATCHED_BASELINES:  # their batched twins (random: other draws, the same law)
        return baseline_actor(spec, seed)
    agent = build_agent(spec, seed=seed)
    check_game(agent, spec, BlockConfig(**game), allow_mismatch=False)
    obs_type = agent_obs_type(agent)
    if obs_type != "observation" and not information_state:
        raise SetupError(f"agent {spec!r} plays on the information state: not supported here")
    if hasattr(agent, "act_batch"):

        def act_batch(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
            return np.asarray(agent.act_batch(obs, mask))

        act_batch.obs_type = obs_type  # type: ignore[attr-defined]
        return act_batch

    def act_rows(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return np.array(
            [agent.act({"observation": o, "action_mask": m}) for o, m in zip(obs, mask)],
            dtype=np.int64,
        )

    return act_rows


def actor_obs_type(actor: Actor) -> str:
    """What an actor of ``agent_actor`` or ``baseline_actor`` reads: ``"observation"`` or
    ``"information_state"`` (full information states)."""
    return getattr(actor, "obs_type", "observation")


def zero_sum_rewards(config: BlockConfig, points: np.ndarray, winner: np.ndarray) -> np.ndarray:
    """(K, n) float64 zero-sum rewards of finished hands from their points (K, n) and
    winning seat (K,) (-1 on a tied block): ``rules.spread_reward`` row by row, in float64
    as the AEC evaluation sums them (the engine hands out float32 rewards)."""
    rows = [
        spread_reward(config, int(w) if w >= 0 else None, float(p.max()))
        for p, w in zip(points, winner, strict=True)
    ]
    return np.array(rows, dtype=np.float64).reshape(len(rows), config.num_players)


def evaluate_batched(
    agent: Any,
    game: dict[str, Any],
    opponent: str,
    hands: int,
    seed: int,
    name: str = "policy",
    opponent_actor: Actor | None = None,
    lineup: Sequence[int] | None = None,
) -> EvalResult:
    """``agent`` (an object with ``act_batch(obs, mask) -> actions`` on numpy batches, e.g.
    ``agents.policy.PolicyAgent``) against the baseline ``opponent`` on ``hands`` hands
    (rounded up to whole deals) of the single-hand game ``game`` (``raw_env`` keywords with
    ``episode="hand"``), as ``block_env.evaluation.evaluate`` with the default lineup. The
    agent plays on the observation its ``obs_type`` attribute names (default
    ``"observation"``), the bot on the plain observation. ``opponent_actor`` (e.g.
    ``agent_actor``, on what ``actor_obs_type`` names) plays the opponent instead of the
    baseline, named ``opponent``;
    ``lineup`` (0 the agent, 1 the opponent at each seat before the rotations) replaces the
    default one, as in ``evaluate``."""
    game = dict(game)
    if game.get("episode", "match") != "hand" or game.get("reward", "zero_sum") != "zero_sum":
        raise ValueError(
            "batched evaluation plays single hands scored zero-sum: give episode='hand' "
            f"and reward='zero_sum', got {game}"
        )
    if isinstance(hands, bool) or not isinstance(hands, (int, np.integer)) or hands < 1:
        raise ValueError(f"hands must be a positive int, got {hands!r}")
    opp = baseline_actor(opponent, seed) if opponent_actor is None else opponent_actor
    obs_types = (agent_obs_type(agent), actor_obs_type(opp))
    obs_type = "information_state" if "information_state" in obs_types else "observation"
    start = time.perf_counter()
    config = BlockConfig(**game)
    n = config.num_players
    deals = -(-int(hands) // n)
    lineup = default_lineup(2, config) if lineup is None else list(lineup)
    if len(lineup) != n or set(lineup) != {0, 1}:
        raise ValueError(f"lineup {lineup} needs {n} seats holding both agents (0 and 1)")
    # One env per seat rotation, all dealt the AEC deals of seeds seed .. seed + deals - 1
    # (no reset options to parse); game g = r * deals + d is deal d in rotation r.
    envs = [
        BatchedEnv(deals, auto_pass=True, deal_source="aec", obs_type=obs_type, **game)
        for _ in range(n)
    ]
    plain_dim = obs_layout(config).dim
    b = deals * n
    rotation = np.arange(b) // deals
    # agent index (0 the agent, 1 the bot) at each absolute seat of each game
    at_seat = np.zeros((b, n), dtype=np.int64)
    for p, a in enumerate(lineup):
        at_seat[np.arange(b), (p + rotation) % n] = a
    obs, mask, seat = (np.concatenate(x) for x in zip(*(e.reset(seed=seed) for e in envs)))
    rows = np.arange(b)
    done = np.zeros(b, dtype=bool)
    points = np.zeros((b, n), dtype=np.int64)
    winner = np.full(b, -1, dtype=np.int64)
    while not done.all():
        mover = at_seat[rows, seat]
        actions = mask.argmax(1)  # games already over: any legal move (never recorded)
        mine = np.flatnonzero((mover == 0) & ~done)
        theirs = np.flatnonzero((mover == 1) & ~done)
        if mine.size:
            seen = obs[mine] if obs_types[0] != "observation" else obs[mine, :plain_dim]
            actions[mine] = np.asarray(agent.act_batch(seen, mask[mine]))
        if theirs.size:
            seen = obs[theirs] if obs_types[1] != "observation" else obs[theirs, :plain_dim]
            actions[theirs] = opp(seen, mask[theirs])
        out = [e.step(actions[r * deals : (r + 1) * deals]) for r, e in enumerate(envs)]
        obs, mask, seat = (np.concatenate([o[i] for o in out]) for i in range(3))
        terminated = np.concatenate([o[4] for o in out])
        new = terminated & ~done
        points[new] = np.concatenate([o[5]["hand_points"] for o in out])[new]
        winner[new] = np.concatenate([o[5]["hand_winner"] for o in out])[new]
        done |= terminated
    rewards = zero_sum_rewards(config, points, winner)
    per_deal = _deal_totals(config, rewards, winner, at_seat, deals, k=2)
    seconds = time.perf_counter() - start
    return eval_result(
        [name, opponent], lineup, config, "hand", seed, per_deal, seconds, engine="batched"
    )


def _deal_totals(
    config: BlockConfig,
    rewards: np.ndarray,
    winner: np.ndarray,
    at_seat: np.ndarray,
    deals: int,
    k: int,
) -> dict[str, np.ndarray]:
    """The per-deal totals of ``block_env.evaluation.duplicate.play_deals`` (``DEAL_KEYS``)
    from the per-game outcomes of ``k`` agents, summed per deal in its order (rotation,
    then seat). Each game is one hand, so it is also one match won by the hand's winners."""
    n = config.num_players
    teams = np.array(config.teams)
    reward = np.zeros((deals, k))
    seat_hands = np.zeros((deals, k))
    seat_wins = np.zeros((deals, k))
    side_wins = np.zeros((deals, k))
    ties = np.zeros(deals)
    deal_rows = np.arange(deals)
    for r in range(n):
        g = r * deals + deal_rows
        sides = np.zeros((deals, k), dtype=bool)
        for s in range(n):
            a = at_seat[g, s]
            won = (winner[g] >= 0) & (teams[np.maximum(winner[g], 0)] == teams[s])
            for agent in range(k):
                here = a == agent
                reward[here, agent] += rewards[g[here], s]
                seat_hands[here, agent] += 1
                seat_wins[here & won, agent] += 1
                sides[here & won, agent] = True
        side_wins += sides
        ties += winner[g] < 0
    return {
        "reward": reward,
        "seat_hands": seat_hands,
        "seat_wins": seat_wins,
        "side_wins": side_wins,
        "seat_matches": seat_hands.copy(),
        "match_wins": seat_wins.copy(),
        "hands": np.full(deals, float(n)),
        "ties": ties,
    }
