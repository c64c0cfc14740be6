"""The pure rules engine of Block: state in, state out, no I/O, randomness only from a
generator the caller passes in.

A ``State`` is an immutable snapshot of one match (its current hand included). The AEC
environment, the agents and the tests all drive the game through the functions here:
``new_match`` / ``start_hand`` / ``next_hand`` to deal, ``legal_actions`` to list the
moves, ``apply_action`` to play one. Sets of tiles are T-bit int masks of the game's tile
set (see ``tiles``); every state carries its ``TileSet``.
The rules it implements, with worked examples, are stated in docs/RULES.md.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from block_env.config import BlockConfig
from block_env.tiles import STANDARD, TileSet, iter_tiles

EMPTY = -1  # value of both ends while the line is empty


class HandResult(NamedTuple):
    """How a hand ended. ``points`` is indexed by seat (both partners show the team's points)."""

    winner: int | None  # seat that dominoed or won the block; None on a tied block
    blocked: bool
    pips: tuple[int, ...]  # pips left in each seat's hand
    points: tuple[int, ...]  # raw points scored this hand, by seat


class State(NamedTuple):
    """One match position. Public fields are the line, ends, counts, voids and scores;
    ``hands`` is private to each seat (the observation module enforces that)."""

    hands: tuple[int, ...]  # tile mask per seat
    played: int  # mask of the tiles on the line
    line: tuple[tuple[int, int], ...]  # (tile, end) in play order; the opening has end 0
    left: int  # value of the left open end, EMPTY before the opening
    right: int
    current: int  # seat to act
    leader: int  # seat that leads this hand
    voids: tuple[int, ...]  # per seat, (N+1)-bit mask of values shown lacking by passing
    scores: tuple[int, ...]  # match scores by seat
    opening_tile: int  # tile the opening must be (highest_double), or -1 for any tile
    hand_number: int  # 0 for the first hand of the match
    result: HandResult | None  # set on the state that ends a hand
    episode_over: bool  # the hand ended and the episode (match or single hand) is over
    winners: tuple[int, ...]  # seats that won the episode; empty while running or on a draw
    tiles: TileSet = STANDARD  # the tile set of the game (tile indices refer to it)


def deal(config: BlockConfig, rng: np.random.Generator) -> tuple[int, ...]:
    """Shuffle the T tiles of the set and deal ``hand_size`` to each seat; the rest are out
    of play."""
    order = rng.permutation(config.tiles.num_tiles).tolist()
    k = config.hand_size
    bit = _BITS.__getitem__  # mask_of inlined: distinct bits, so their sum is their union
    return tuple([sum(map(bit, order[s : s + k])) for s in range(0, config.num_players * k, k)])


_BITS = tuple(1 << t for t in range(64))  # 1 << t, for the tile indices of any set


def opening_for(hands: tuple[int, ...], tiles: TileSet = STANDARD) -> tuple[int, int]:
    """(seat, tile) that opens under ``opener='highest_double'``: the highest double dealt,
    else the heaviest tile (ties between equal pip sums go to the tile with the higher top)."""
    dealt = 0
    for h in hands:
        dealt |= h
    doubles = dealt & tiles.doubles_mask
    if doubles:
        tile = doubles.bit_length() - 1  # doubles are ordered by value in the tile index
    else:
        pips, pairs = tiles.pips, tiles.tiles
        tile = max(iter_tiles(dealt), key=lambda t: (pips[t], pairs[t][1]))
    seat = next(s for s, h in enumerate(hands) if h >> tile & 1)
    return seat, tile


def start_hand(
    config: BlockConfig,
    hands: tuple[int, ...],
    leader: int,
    scores: tuple[int, ...],
    hand_number: int = 0,
) -> State:
    """The state before the opening of a hand with the given deal."""
    opening_tile = -1
    if config.opener == "highest_double":
        leader, opening_tile = opening_for(hands, config.tiles)
    # State(hands, played, line, left, right, current, leader, voids, scores, opening_tile,
    # hand_number, result, episode_over, winners, tiles), built as one tuple
    return _new_state(
        State,
        (
            tuple(hands),
            0,
            (),
            EMPTY,
            EMPTY,
            leader,
            leader,
            (0,) * config.num_players,
            tuple(scores),
            opening_tile,
            hand_number,
            None,
            False,
            (),
            config.tiles,
        ),
    )


def new_match(
    config: BlockConfig,
    rng: np.random.Generator,
    hands: tuple[int, ...] | None = None,
    leader: int | None = None,
    scores: tuple[int, ...] | None = None,
) -> State:
    """First hand of a match: the fair lot for the leader is drawn first, then the deal;
    both draws always happen so a seed maps to the same stream whatever is overridden."""
    lot = int(rng.integers(config.num_players))
    dealt = deal(config, rng)
    return start_hand(
        config,
        dealt if hands is None else hands,
        lot if leader is None else leader,
        (0,) * config.num_players if scores is None else scores,
    )


def next_hand(config: BlockConfig, state: State, rng: np.random.Generator) -> State:
    """Redeal after a finished hand; the lead moves one seat clockwise."""
    if state.result is None or state.episode_over:
        raise ValueError("next_hand needs a state whose hand is over and whose match goes on")
    return start_hand(
        config,
        deal(config, rng),
        (state.leader + 1) % config.num_players,
        state.scores,
        state.hand_number + 1,
    )


def legal_actions(state: State) -> tuple[int, ...]:
    """Sorted legal action ids for the seat to act: every placement that fits on either
    end (both ends when both show the value), or only pass when nothing fits; () when the
    hand is over."""
    if state.result is not None:
        return ()
    hand = state.hands[state.current]
    if state.left == EMPTY:
        if state.opening_tile >= 0:
            return (2 * state.opening_tile,)
        return _placements(hand, 0)  # every tile of the hand, on the left end
    with_value = state.tiles.with_value
    on_left = hand & with_value[state.left]
    on_right = hand & with_value[state.right]
    if not on_left | on_right:
        return (state.tiles.pass_action,)
    # the actions depend only on the two masks (not on the set): kept in a bounded table
    key = on_left << _KEY_SHIFT | on_right
    actions = _PLACEMENTS.get(key)
    if actions is None:
        actions = _placements(on_left, on_right)
        if len(_PLACEMENTS) >= _PLACEMENTS_MAX:
            _PLACEMENTS.clear()
        _PLACEMENTS[key] = actions
    return actions


_KEY_SHIFT = 32  # more bits than the largest set has tiles
_PLACEMENTS: dict[int, tuple[int, ...]] = {}  # (on_left, on_right) -> sorted actions
_PLACEMENTS_MAX = 1 << 15  # about 5 MB when full; emptied then


def _placements(on_left: int, on_right: int) -> tuple[int, ...]:
    """Sorted actions placing the tiles of ``on_left`` on the left end (``2t``) and those of
    ``on_right`` on the right end (``2t + 1``)."""
    actions = []
    fits = on_left | on_right
    while fits:  # the tiles that fit, ascending
        low = fits & -fits
        t2 = 2 * low.bit_length() - 2
        if on_left & low:
            actions.append(t2)
        if on_right & low:
            actions.append(t2 + 1)
        fits ^= low
    return tuple(actions)


def legal_mask(state: State) -> np.ndarray:
    """The legal actions as an int8 vector of length 2T+1 (the PettingZoo action mask)."""
    mask = np.zeros(state.tiles.num_actions, dtype=np.int8)
    mask[list(legal_actions(state))] = 1
    return mask


def apply_action(config: BlockConfig, state: State, action: int) -> State:
    """The state after the seat to act plays ``action``. ValueError (state untouched) if the
    action is not legal. On the action that ends the hand, ``result`` is set; the next hand
    is dealt by ``next_hand`` so that this function needs no randomness."""
    legal = legal_actions(state)
    if action not in legal:
        raise ValueError(_illegal_message(state, action, legal))
    return apply_legal_action(config, state, int(action))


def apply_legal_action(config: BlockConfig, state: State, action: int) -> State:
    """``apply_action`` without the legality check, for callers that already checked the
    action against the legal actions (the env does, with those it computed for the mask)."""
    seat = state.current
    tiles = state.tiles
    nxt = seat + 1
    if nxt == config.num_players:
        nxt = 0
    if action == tiles.pass_action:
        voids = list(state.voids)
        voids[seat] |= (1 << state.left) | (1 << state.right)
        # state._replace(current=nxt, voids=tuple(voids)), built as one tuple
        return _new_state(State, state[:5] + (nxt, state.leader, tuple(voids)) + state[8:])

    tile = action >> 1
    a, b = tiles.tiles[tile]
    left = state.left
    if left == EMPTY:
        left, right = a, b
        end = 0
    elif action & 1:
        end = 1
        right = state.right
        right = b if a == right else a
    else:
        end = 0
        left = b if a == left else a
        right = state.right
    bit = 1 << tile
    hands = list(state.hands)
    mine = hands[seat] & ~bit
    hands[seat] = mine
    hands = tuple(hands)
    # built as one tuple (faster than State(...) or _replace on this hot path): the placed
    # tile moves to the line, the ends and the seat to act change, the rest is kept
    after = _new_state(
        State,
        (hands, state.played | bit, (*state.line, (tile, end)), left, right, nxt) + state[6:],
    )
    if not mine:
        return _end_hand(config, after, domino_seat=seat)
    with_value = tiles.with_value
    open_values = with_value[left] | with_value[right]
    for h in hands:  # a loop, not any(generator): a hot path
        if h & open_values:
            return after
    return _end_hand(config, after, domino_seat=None)


_new_state = tuple.__new__  # State's fields as one tuple, without NamedTuple.__new__


def score_hand(config: BlockConfig, hands: tuple[int, ...], domino_seat: int | None) -> HandResult:
    """Score a finished hand from the tiles left in hand. Domino: the winner's side scores
    the pips left in the opposing hands. Blocked: the strictly lowest side scores the other
    sides' totals minus its own total once; a tied lowest total scores nothing."""
    pips = tuple(map(config.tiles.pip_total, hands))
    if not config.partnership:  # one seat per side: the same sums, without the team tables
        if domino_seat is not None:
            winner, gained = domino_seat, sum(pips) - pips[domino_seat]
        else:
            lowest = min(pips)
            if pips.count(lowest) > 1:
                return HandResult(None, True, pips, (0,) * len(hands))
            winner = pips.index(lowest)
            gained = sum(pips) - 2 * lowest
        points = [0] * len(hands)
        points[winner] = gained
        return HandResult(winner, domino_seat is None, pips, tuple(points))
    teams = config.teams
    team_ids = sorted(set(teams))
    team_pips = {t: sum(p for p, tt in zip(pips, teams) if tt == t) for t in team_ids}
    if domino_seat is not None:
        win_team = teams[domino_seat]
        gained = sum(v for t, v in team_pips.items() if t != win_team)
        winner: int | None = domino_seat
    else:
        lowest = min(team_pips.values())
        lowest_teams = [t for t, v in team_pips.items() if v == lowest]
        if len(lowest_teams) > 1:
            return HandResult(None, True, pips, (0,) * len(hands))
        win_team = lowest_teams[0]
        gained = sum(v for t, v in team_pips.items() if t != win_team) - lowest
        winner = teams.index(win_team)
    points = tuple(gained if t == win_team else 0 for t in teams)
    return HandResult(winner, domino_seat is None, pips, points)


def match_winners(config: BlockConfig, scores: tuple[int, ...]) -> tuple[bool, tuple[int, ...]]:
    """(over, winning seats) once the scores are final for a hand: over when some seat has
    reached the target; winners are the seats of the side with the highest such score, or
    empty when sides from different teams tie on it (a draw)."""
    target = config.target
    if max(scores) < target:  # the usual case: the match goes on
        return False, ()
    reached = [s for s, v in enumerate(scores) if v >= target]
    top = max(scores[s] for s in reached)
    top_teams = {config.teams[s] for s in reached if scores[s] == top}
    if len(top_teams) > 1:
        return True, ()
    (team,) = top_teams
    return True, tuple(s for s, t in enumerate(config.teams) if t == team)


def _end_hand(config: BlockConfig, state: State, domino_seat: int | None) -> State:
    result = score_hand(config, state.hands, domino_seat)
    # In partnership both partners carry the team's points, so their scores stay equal.
    scores = tuple(s + p for s, p in zip(state.scores, result.points))
    if config.episode == "hand":
        over = True
        winners = () if result.winner is None else _team_seats(config, result.winner)
    else:
        over, winners = match_winners(config, scores)
    # state._replace(result=result, scores=scores, episode_over=over, winners=winners),
    # built as one tuple (once a hand, but _replace costs as much as a whole move)
    return _new_state(
        State,
        (*state[:8], scores, *state[9:11], result, over, winners, state.tiles),
    )


def _team_seats(config: BlockConfig, seat: int) -> tuple[int, ...]:
    team = config.teams[seat]
    return tuple(s for s, t in enumerate(config.teams) if t == team)


def hand_rewards(config: BlockConfig, state: State) -> tuple[float, ...]:
    """Rewards by seat on the step that produced ``state`` (all zero unless a hand ended)."""
    n = config.num_players
    result = state.result
    if result is None:
        return (0.0,) * n
    if config.reward == "points":
        return tuple(float(p) for p in result.points)
    if config.reward == "zero_sum":
        return spread_reward(config, result.winner, float(max(result.points)))
    # "win": only when the episode ends, +1 to the winning side
    if not state.episode_over or not state.winners:
        return (0.0,) * n
    return spread_reward(config, state.winners[0], 1.0)


def spread_reward(config: BlockConfig, winner: int | None, amount: float) -> tuple[float, ...]:
    """+amount to the winner's side, the opposite split evenly over the other side(s); all
    zero without a winner. The reference of every zero-sum reward (ARCHITECTURE.md)."""
    n = config.num_players
    if winner is None or amount == 0.0:
        return (0.0,) * n
    if config.partnership:
        teams = config.teams
        return tuple(amount if t == teams[winner] else -amount for t in teams)
    spread = [-amount / (n - 1)] * n
    spread[winner] = amount
    return tuple(spread)


def _illegal_message(state: State, action: object, legal: tuple[int, ...]) -> str:
    if state.result is not None:
        return f"action {action!r} is not allowed: the hand is over"
    names = ", ".join(f"{a} ({state.tiles.describe_action(a)})" for a in legal)
    return f"action {action!r} is not legal for seat {state.current}; legal actions: {names}"
