"""A demo match between baseline agents: short by default, move by move on request.

``python -m block_env.demo`` (2 players, ``rules`` against ``greedy``, one match) shows the
first hand move by move (its opening position rendered in full, then one line per move) and
every later hand as a short summary, in well under 100 lines. ``--full`` renders the
position before every move of every hand (a whole match: thousands of lines), ``--quiet``
prints only the hand summaries; e.g.
``python -m block_env.demo --players 3 --agents rules greedy random --seed 7 --lang tr``.
``play_match`` is the reusable part: it plays agents through ``block_env.env`` and returns
the final scores, so tests and scripts can run matches without printing anything.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from block_env.env import LANGS, env
from block_env.tiles import describe_action

__all__ = ["main", "play_match"]


def play_match(
    agent_objs: Sequence[Any],
    seed: int | None = None,
    *,
    max_hands: int | None = None,
    show: Callable[[str], None] | None = None,
    moves: bool = True,
    moves_hands: int | None = None,
    labels: Sequence[str] | None = None,
    **config: Any,
) -> dict[str, Any]:
    """Play one match (or ``max_hands`` hands of it) with ``agent_objs[i]`` in seat ``i``.

    ``config`` holds the env keywords (``num_players`` defaults to ``len(agent_objs)``).
    When ``show`` is given it receives each hand's result and the final scores as text,
    and, if ``moves`` is true, each position (``env.render()`` in ``"ansi"`` mode) and move;
    with ``moves_hands=k`` only the first k hands are shown move by move, each as its opening
    position followed by one line per move. ``labels`` name the agents in that text
    (default: their class names).

    Returns ``scores`` (by seat), ``winners`` (seats of the winning side; empty on a draw,
    or on a tie for the lead when stopped early), ``winner`` (first winning seat or None),
    ``match_over`` (False when stopped by ``max_hands``), ``num_hands`` and ``hands`` (per
    hand a dict: ``winner`` seat or None on a tied block, ``blocked``, ``pips`` and
    ``points`` lists by seat).
    """
    n = config.setdefault("num_players", len(agent_objs))
    if len(agent_objs) != n:
        raise ValueError(f"got {len(agent_objs)} agents for num_players={n}: give one per seat")
    if max_hands is not None and max_hands < 1:
        raise ValueError(f"max_hands={max_hands!r} is not allowed: use None or an int >= 1")
    moves = moves and show is not None
    if moves:
        config["render_mode"] = "ansi"
    game = env(**config)
    game.reset(seed=seed)
    if labels is None:
        labels = [type(a).__name__ for a in agent_objs]
    names = [f"player_{s} ({label})" for s, label in enumerate(labels)]
    seat_of = {agent: s for s, agent in enumerate(game.possible_agents)}
    hands: list[dict[str, Any]] = []
    winners: list[int] | None = None
    for agent in game.agent_iter():
        observation, _, termination, truncation, _ = game.last()
        if termination or truncation:
            game.step(None)
            continue
        seat = seat_of[agent]
        detailed = moves and (moves_hands is None or len(hands) < moves_hands)
        compact = moves_hands is not None
        opening = not game.unwrapped.game.line
        if detailed and (opening or not compact):
            show(f"--- hand {len(hands) + 1} ---")
            show(str(game.render()))
        action = int(agent_objs[seat].act(observation))
        game.step(action)
        info = game.infos[agent]
        if detailed:
            played = f">>> {names[seat]} plays {describe_action(action)}"
            show(
                f"{played}   line: {_line_text(game.unwrapped, info)}" if compact else played + "\n"
            )
        if info["hand_over"]:
            hands.append(_hand_record(info))
            if show is not None:
                short = moves and compact and len(hands) > moves_hands
                summary = _hand_summary(len(hands), hands[-1], game.unwrapped.scores, names, short)
                show(summary)
            if info["match_over"]:
                winners = np.flatnonzero(info["match_winners"]).tolist()
            if info["match_over"] or len(hands) == max_hands:
                break
    scores = game.unwrapped.scores
    match_over = winners is not None
    if winners is None:
        winners = _leaders(scores, game.unwrapped.config.teams)
    game.close()
    result = {
        "scores": scores,
        "winners": winners,
        "winner": winners[0] if winners else None,
        "match_over": match_over,
        "num_hands": len(hands),
        "hands": hands,
    }
    if show is not None:
        show(_final_summary(result, names))
    return result


def _hand_record(info: dict[str, Any]) -> dict[str, Any]:
    """A finished hand from the env's infos, as plain Python values."""
    winner = int(info["hand_winner"])
    return {
        "winner": None if winner < 0 else winner,
        "blocked": bool(info["hand_blocked"]),
        "pips": info["hand_pips"].tolist(),
        "points": info["hand_points"].tolist(),
    }


def _line_text(raw: Any, info: dict[str, Any]) -> str:
    """The line left to right after the move just played (of the hand it ended, if any)."""
    from block_env.rendering import spatial_line

    state = raw.last_hand if info["hand_over"] else raw.game
    return "".join(f"[{x}|{y}]" for _, x, y in spatial_line(state))


def _leaders(scores: list[int], teams: tuple[int, ...]) -> list[int]:
    """Seats of the side with the strictly highest score (empty when sides tie)."""
    top = max(scores)
    top_teams = {teams[s] for s, v in enumerate(scores) if v == top}
    if len(top_teams) > 1:
        return []
    (team,) = top_teams
    return [s for s, t in enumerate(teams) if t == team]


def _hand_summary(
    number: int, hand: dict[str, Any], scores: list[int], names: list[str], short: bool = False
) -> str:
    """The result of a hand: three lines (how it ended, pips left, match scores), or one."""
    pips = ", ".join(f"{names[s]} {p}" for s, p in enumerate(hand["pips"]))
    if hand["winner"] is None:
        how = "blocked with tied lowest pips: nobody scores"
    else:
        verb = "wins the block" if hand["blocked"] else "dominoes"
        how = f"{names[hand['winner']]} {verb} and scores {max(hand['points'])}"
    total = ", ".join(f"{names[s]} {v}" for s, v in enumerate(scores))
    if short:
        return f"=== hand {number}: {how}; match scores: {total}"
    return f"=== hand {number}: {how}\n    pips left: {pips}\n    match scores: {total}\n"


def _final_summary(result: dict[str, Any], names: list[str]) -> str:
    scores = ", ".join(f"{names[s]} {v}" for s, v in enumerate(result["scores"]))
    if result["winners"]:
        who = " and ".join(names[s] for s in result["winners"])
        outcome = f"winner: {who}" if result["match_over"] else f"leading: {who}"
    else:
        outcome = "draw" if result["match_over"] else "level on points"
    status = "match over" if result["match_over"] else "stopped early"
    hands = f"{result['num_hands']} hand{'s' if result['num_hands'] != 1 else ''}"
    return f"Final scores after {hands} ({status}): {scores}; {outcome}"


def _seat_names(names: Sequence[str], players: int) -> list[str]:
    """Agent names by seat: the given names repeated around the table."""
    if len(names) > players:
        raise ValueError(f"{len(names)} agents given for {players} players: give at most one each")
    return [names[s % len(names)] for s in range(players)]


def _build_agents(seated: Sequence[str], seed: int) -> list[Any]:
    import agents

    if not seated:
        raise ValueError("no agents given: name at least one, e.g. --agents rules greedy")
    # A random agent gets its own seed per seat, so the whole demo replays from --seed.
    return [
        agents.make(name, **({"seed": seed + s} if name == "random" else {}))
        for s, name in enumerate(seated)
    ]


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command-line entry point; returns ``play_match``'s result."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument(
        "--agents",
        nargs="+",
        default=["rules", "greedy"],
        help="agent names by seat, repeated around the table if fewer than the players",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hands", type=int, default=None, help="stop after this many hands")
    parser.add_argument("--lang", default="en", choices=LANGS)
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument(
        "--quiet", action="store_true", help="print only hand results and final scores"
    )
    shown.add_argument(
        "--full",
        action="store_true",
        help="render the position before every move of every hand (long: a whole match)",
    )
    args = parser.parse_args(argv)
    try:
        seated = _seat_names(args.agents, args.players)
        agent_objs = _build_agents(seated, args.seed)
    except ValueError as err:
        parser.error(str(err))
    except TypeError as err:  # e.g. an agent that needs the env or a model path
        parser.error(f"cannot build agents {seated} without extra arguments: {err}")
    if args.hands is not None and args.hands < 1:
        parser.error(f"--hands {args.hands} is not allowed: use an int >= 1")
    return play_match(
        agent_objs,
        args.seed,
        max_hands=args.hands,
        show=print,
        moves=not args.quiet,
        moves_hands=None if args.full else 1,
        labels=seated,
        num_players=args.players,
        lang=args.lang,
    )


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:  # output piped into e.g. ``head``: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
