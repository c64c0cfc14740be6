"""Evaluation against a control (``evaluate(..., control="pimc-20")``, ``--control``): how
many points a hand the first agent gains over a control agent sitting in its seats instead,
on the same deals *and the same random draws* (common random numbers).

Before each game every agent is reseeded from (seed, deal, seating, lineup position), and
the control of a position gets the seed of the agent it stands in for. The game is played
with the agent; at each of the agent's turns the control is asked, on the same observation,
which move it would make. While the two agree, the control's game would be this very game
(every draw repeats), so its result is known without playing it; from the first turn they
part, the game is played again from the deal with the control seated, everything reseeded
the same. The per-deal difference of the two games then holds what the agent's own choices
changed: the deal, the lead and the others' draws are common to both and cancel. The
cost is replaying the games where the two part (``games_apart``); the fewer they are, the
more it saves (docs/evaluation.md measures a case where it pays and one where it does not).

When the control is the agent the rest of the table is made of (``block-partnership-search``
with a PIMC-20 partner against two PIMC-20, ``--control pimc-20``), the control's game is
that agent against itself, whose expected margin is zero by the seat rotation: the gain is
then an unbiased estimate of the agent's own margin. In general it is the agent's margin
minus what the control would have made in its seats.

In whole matches (``episode="match"``) the game is the match: the gain is in the share of
seat-matches won, the agent's matches won minus the control's on the same match deals.

Replaying needs agents whose play repeats when reseeded: agents that draw random numbers
offer ``reseed(seed)`` (the shipped ones do), agents without it must be deterministic, and
agents on a wall-clock budget (``time_budget``) are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from block_env.agent_specs import SetupError, agent_label, plain_observation
from block_env.evaluation.stats import Estimate, proportion_estimate, ratio_estimate


@dataclass
class ControlStats:
    """The first agent against its control on the same games: ``gain`` over what the
    control made in the same seats and the control's own ``margin``, in points per hand
    (``unit="points/hand"``) or, in whole matches, as a share of seat-matches won
    (``unit="match win share"``); and how many of the ``games`` were ``games_apart`` (the
    agent and the control chose apart)."""

    control: str
    gain: Estimate
    margin: Estimate
    games_apart: int
    games: int
    unit: str = "points/hand"

    def line(self, agent: str) -> str:
        """One line for the result table."""
        if self.unit == "points/hand":
            gain = f"{self.gain.fmt(2)} points/hand"
            margin = f"margin {self.margin.fmt(2)}"
        else:
            points = Estimate(100 * self.gain.mean, 100 * self.gain.lo, 100 * self.gain.hi)
            gain = f"{points.fmt(1)} percentage points of matches won"
            margin = f"match win % {self.margin.fmt(1, pct=True)}"
        return (
            f"{agent} in place of control {self.control} (same deals and draws): gain "
            f"{gain}; the control's own {margin}; "
            f"{self.games_apart} of {self.games} games played apart"
        )


def check_control(control: Any) -> str:
    """The control's label; SetupError when it is neither a spec string nor an agent."""
    if not isinstance(control, str) and not hasattr(control, "act"):
        raise SetupError(f"control={control!r} is neither a spec string nor an agent with act()")
    return agent_label(control)


def check_replayable(agent: Any, name: str) -> None:
    """SetupError for an agent whose play depends on the clock (``time_budget``), which a
    replay could not repeat."""
    for part in (agent, getattr(agent, "pimc", None)):
        if getattr(part, "time_budget", None) is not None:
            raise SetupError(
                f"{name} plays on a wall-clock time_budget, so its games cannot be replayed "
                "with a control: give it a node_budget instead"
            )


def episode_seeds(seed: int, deal: int, seating: int, positions: int) -> list[int]:
    """The seeds of the agents at each lineup position for one game (from the evaluation's
    seed, the deal and the seating only, so any worker count plays the same games)."""
    state = np.random.SeedSequence([int(seed), int(deal), int(seating)]).generate_state(positions)
    return [int(v) for v in state]


def reseed(agents: Sequence[Any], seeds: Sequence[int]) -> None:
    """Reseed each agent that offers ``reseed`` (None entries are skipped)."""
    for agent, seed in zip(agents, seeds):
        fn = getattr(agent, "reseed", None)
        if fn is not None:
            fn(seed)


class ControlWatch:
    """The hook ``play_episode`` calls after each move: asks the control of that seat (if
    any) for its move on the same observation, and notes the first disagreement."""

    def __init__(self, controls: dict[int, Any], plain_dims: dict[int, int | None]) -> None:
        self.controls = controls
        self.plain_dims = plain_dims
        self.apart = False

    def __call__(self, seat: int, observation: dict[str, Any], action: int) -> None:
        if self.apart or seat not in self.controls:
            return
        dim = self.plain_dims.get(seat)
        seen = observation if dim is None else plain_observation(observation, dim)
        self.apart = int(self.controls[seat].act(seen)) != int(action)


def control_stats(
    control: str,
    per_deal: dict[str, np.ndarray],
    num_players: int,
    episode: str = "hand",
    agent: int = 0,
) -> ControlStats:
    """The figures of ``agent`` against its control from per-deal totals that hold
    ``control_reward``, ``control_match_wins`` and ``games_apart``: per hand in hand
    episodes; in matches, as shares of seat-matches won (a match's hands differ in number
    between the two games, its winners do not). Each deal is a game per seating."""
    in_matches = episode == "match"
    own, of_control, per = (
        ("match_wins", "control_match_wins", "seat_matches")
        if in_matches
        else ("reward", "control_reward", "seat_hands")
    )
    result, control_result, units = (per_deal[k][:, agent] for k in (own, of_control, per))
    control_margin = proportion_estimate if in_matches else ratio_estimate
    return ControlStats(
        control=control,
        gain=ratio_estimate(result - control_result, units),
        margin=control_margin(control_result, units),
        games_apart=int(per_deal["games_apart"].sum()),
        games=len(per_deal["hands"]) * num_players,
        unit="match win share" if in_matches else "points/hand",
    )
