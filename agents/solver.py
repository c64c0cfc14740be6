"""Exact perfect-information solver for one Block hand (all hands known).

The objective is the points of the current hand only (the match context, scores and
target, is ignored): the value of a position is the ``zero_sum`` reward that the hand pays
to one seat, i.e. its points margin.

* 2 players and partnership (two sides): alpha-beta (negamax) on the side-to-move's
  margin: ``+points`` when its side scores the hand, ``-points`` when the other side does,
  0 on a tied block.
* 3-4 individual players: paranoid search. The root seat maximises its own ``zero_sum``
  reward (``+g`` when it scores ``g``, ``-g / (n - 1)`` when another seat scores ``g``)
  and every other seat is assumed to minimise it, which makes it a two-sided game that
  alpha-beta solves exactly.

The search runs on bitmasks (one T-bit int per hand for a set of T tiles, the two end
values, the seat to act) and never builds a ``rules.State``; the tests check it against a
plain minimax on ``rules.apply_action``. It uses a transposition table of value bounds keyed
on (hands, unordered ends, seat to act: voids do not matter when every hand is known), move ordering
(table move first, then moves the next seat cannot follow, then heavy tiles), pip bounds
(a side can win at most the other side's pips and lose at most its own) and MTD(f)
null-window searches for exact values. ``solve`` solves the first root move exactly and
only tests the others against it; ``action_values`` (what PIMC averages) solves every
root move exactly. Measured in pure Python on a 2-player 7+7 deal from the start: about
600-700 search nodes and under 1 ms for ``solve``, about 1,400 nodes and 2 ms for
``action_values`` (0.6-0.9 M nodes/s). A node is one call of the recursive search.

Public entry points: ``Position``, ``position_from_state``, ``solve``, ``action_values``,
``best_action`` and ``principal_variation``. The searching ones take ``engine``: ``"python"``
runs this module's search (the reference), ``"numba"`` the same search compiled
(``agents.solver_kernels``: the same nodes in the same order, 8-16x faster), ``"auto"``
(the default) the compiled one where numba is installed.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from block_env.config import BlockConfig
from block_env.rules import EMPTY, State
from block_env.tiles import STANDARD, TileSet

__all__ = [
    "ENGINES",
    "Position",
    "Solution",
    "action_values",
    "best_action",
    "position_from_state",
    "principal_variation",
    "solve",
]

_INF = 1 << 30
# Low end first: the key of a position does not depend on which end is called left.
_END_CODE = [[min(x, y) * 8 + max(x, y) for y in range(7)] for x in range(7)]
_KEY_BITS = 28  # bits per seat in the hands key (T <= 28 in every set)


def _other_table(tiles: TileSet) -> list[int]:
    """other[8 * t + v]: the half of tile t left open when its v half is matched (-1: no
    match), for the tiles of one set."""
    other = [-1] * (8 * tiles.num_tiles)
    for t, (a, b) in enumerate(tiles.tiles):
        other[8 * t + a] = b
        other[8 * t + b] = a
    return other


_OTHER_TABLES: dict[int, list[int]] = {}


def _other(tiles: TileSet) -> list[int]:
    table = _OTHER_TABLES.get(tiles.max_pip)
    if table is None:
        table = _OTHER_TABLES[tiles.max_pip] = _other_table(tiles)
    return table


class Position(NamedTuple):
    """What the solver needs of a hand in progress: every hand (tile masks by seat), the
    open ends (``EMPTY`` before the opening), the seat to act and, before the opening, the
    tile the opening must be (-1 when any tile may open)."""

    hands: tuple[int, ...]
    left: int
    right: int
    current: int
    opening_tile: int = -1


class Solution(NamedTuple):
    """A solved position: its exact value for the seat to act, a best action (an action id
    that ``rules.legal_actions`` lists) and the number of search nodes visited."""

    value: float
    action: int
    nodes: int


def position_from_state(state: State) -> Position:
    """The solver position of a rules state whose hand is still running."""
    if state.result is not None:
        raise ValueError("the hand of this state is over: there is nothing left to solve")
    return Position(tuple(state.hands), state.left, state.right, state.current, state.opening_tile)


def _check(config: BlockConfig, pos: Position) -> None:
    n = config.num_players
    ts = config.tiles
    if len(pos.hands) != n:
        raise ValueError(f"position has {len(pos.hands)} hands: the config has {n} players")
    if not 0 <= pos.current < n:
        raise ValueError(f"current seat {pos.current} is not a seat: use 0..{n - 1}")
    seen = 0
    for s, h in enumerate(pos.hands):
        if h < 0 or h >> ts.num_tiles:
            raise ValueError(
                f"hand {s} = {h!r} is not a tile mask of the set ({ts.num_tiles} tiles)"
            )
        if h & seen:
            raise ValueError(f"hand {s} shares tiles with another hand")
        seen |= h
    if not pos.hands[pos.current]:
        raise ValueError(f"seat {pos.current} holds no tile: the hand is already over")
    empty = pos.left == EMPTY
    v = ts.num_values
    if empty != (pos.right == EMPTY) or not (empty or (0 <= pos.left < v and 0 <= pos.right < v)):
        raise ValueError(
            f"ends ({pos.left}, {pos.right}) are not allowed: use values 0..{v - 1}, or both EMPTY"
        )
    if not empty:
        open_values = ts.with_value[pos.left] | ts.with_value[pos.right]
        if not seen & open_values:
            raise ValueError("no seat can place on these ends: the hand is already blocked")
    elif pos.opening_tile >= 0 and not pos.hands[pos.current] >> pos.opening_tile & 1:
        raise ValueError(f"the seat to act does not hold the opening tile {pos.opening_tile}")


class _Search:
    """One alpha-beta search context for a fixed root seat (its table is reused between
    the root moves of ``action_values``)."""

    def __init__(self, config: BlockConfig, pos: Position, root: int | None = None) -> None:
        _check(config, pos)
        n = config.num_players
        teams = config.teams
        root = pos.current if root is None else root
        two_sides = len(set(teams)) == 2
        # side[s]: 1 when seat s plays for the root (its team), 0 for the other side.
        side = [1 if (teams[s] == teams[root] if two_sides else s == root) else 0 for s in range(n)]
        self.n = n
        self.root = root
        self.two_sides = two_sides
        self.scale = 1 if two_sides else n - 1  # paranoid values are kept as ints * (n-1)
        self.pos = pos
        self.tt: dict[int, tuple[int, int, int]] = {}
        self.hands = list(pos.hands)
        ts = config.tiles
        self.tileset = ts
        self.twv = ts.with_value
        self.other = _other(ts)
        self.tile_pips = ts.pips
        self.pass_action = ts.pass_action
        self.pips = [ts.pip_total(h) for h in pos.hands]
        self.teams = teams
        self.side = side
        self.nxt = [(s + 1) % n for s in range(n)]
        self.flip = [side[s] != side[(s + 1) % n] for s in range(n)]
        self.search, self.node_count = self._build()

    def _terminal(self, mover: int, domino: bool) -> int:
        """Value for ``mover``'s side (scaled ints) of the hand that ``mover`` just ended."""
        pips, teams, n = self.pips, self.teams, self.n
        if self.two_sides:
            mine = theirs = 0
            tm = teams[mover]
            for s in range(n):
                if teams[s] == tm:
                    mine += pips[s]
                else:
                    theirs += pips[s]
            return theirs if domino else theirs - mine
        # Individual play with 3-4 seats: find the scoring seat and its gain g.
        if domino:
            winner = mover
            gain = sum(pips) - pips[mover]
        else:
            low = min(pips)
            lows = [s for s in range(n) if pips[s] == low]
            if len(lows) > 1:
                return 0
            winner = lows[0]
            gain = sum(pips) - 2 * low
        root_value = gain * (n - 1) if winner == self.root else -gain
        return root_value if self.side[mover] else -root_value

    def _build(self):
        """The recursive search as a closure over local tables (the fast path)."""
        hands = self.hands
        pips = self.pips
        tt = self.tt
        nxt = self.nxt
        flip = self.flip
        terminal = self._terminal
        n2 = self.two_sides and self.n == 2
        bounds = self.two_sides
        twv = self.twv
        other = self.other
        end_code = _END_CODE
        tile_pips = self.tile_pips
        nodes = 0

        def search(
            cur: int, left: int, right: int, hkey: int, allh: int, alpha: int, beta: int
        ) -> int:
            # Only called after the opening (the root expands the opening itself).
            nonlocal nodes
            nodes += 1
            h = hands[cur]
            ml = h & twv[left]
            mr = h & twv[right] if left != right else 0
            if not (ml | mr):
                if flip[cur]:
                    return -search(nxt[cur], left, right, hkey, allh, -beta, -alpha)
                return search(nxt[cur], left, right, hkey, allh, alpha, beta)
            if n2:
                # The side to act can win at most the other side's pips and lose at most
                # its own: pips only go down.
                ub = pips[cur ^ 1]
                if ub <= alpha:
                    return ub
                if -pips[cur] >= beta:
                    return -pips[cur]
            elif bounds:
                ub = pips[cur ^ 1] + pips[cur ^ 3]
                lb = -pips[cur] - pips[cur ^ 2]
                if ub <= alpha:
                    return ub
                if lb >= beta:
                    return lb
            key = (hkey << 8) | (end_code[left][right] << 2) | cur
            entry = tt.get(key)
            tt_move = -1
            if entry is not None:
                lo, hi, tt_move = entry
                if lo >= beta:
                    return lo
                if hi <= alpha:
                    return hi
                if lo == hi:
                    return lo
                if lo > alpha:
                    alpha = lo
                if hi < beta:
                    beta = hi
            # Move ordering: the TT move, then moves the next seat cannot follow, then pips.
            nh_next = hands[nxt[cur]]
            moves = []
            m = ml
            fits = twv[right]
            while m:
                low = m & -m
                t = low.bit_length() - 1
                o = other[8 * t + left]
                s = tile_pips[t]
                if not nh_next & (twv[o] | fits):
                    s += 20
                if 8 * t + left == tt_move:
                    s += 1000
                moves.append((s, t, o, right, left))
                m ^= low
            m = mr
            fits = twv[left]
            while m:
                low = m & -m
                t = low.bit_length() - 1
                o = other[8 * t + right]
                s = tile_pips[t]
                if not nh_next & (fits | twv[o]):
                    s += 20
                if 8 * t + right == tt_move:
                    s += 1000
                moves.append((s, t, left, o, right))
                m ^= low
            if len(moves) > 1:
                moves.sort(reverse=True)
            alpha0 = alpha
            beta0 = beta
            best = -_INF
            best_move = -1
            shift = _KEY_BITS * cur
            nc = nxt[cur]
            fl = flip[cur]
            mine = pips[cur]
            for _s, t, nl, nr, matched in moves:
                bit = 1 << t
                nh = h ^ bit
                rest = allh ^ bit
                hands[cur] = nh
                pips[cur] = mine - tile_pips[t]
                if not nh:
                    v = ub if n2 else terminal(cur, True)
                elif not rest & (twv[nl] | twv[nr]):
                    v = terminal(cur, False)
                elif fl:
                    v = -search(nc, nl, nr, hkey ^ (bit << shift), rest, -beta, -alpha)
                else:
                    v = search(nc, nl, nr, hkey ^ (bit << shift), rest, alpha, beta)
                hands[cur] = h
                pips[cur] = mine
                if v > best:
                    best = v
                    best_move = 8 * t + matched
                    if v > alpha:
                        alpha = v
                        if alpha >= beta:
                            break
            if entry is None:
                lo, hi = -_INF, _INF
            if best <= alpha0:
                hi = best
            elif best >= beta0:
                lo = best
            else:
                lo = hi = best
            tt[key] = (lo, hi, best_move)
            return best

        def node_count() -> int:
            return nodes

        return search, node_count

    def hand_key(self) -> int:
        key = 0
        for s, h in enumerate(self.hands):
            key |= h << (_KEY_BITS * s)
        return key

    def all_hands(self) -> int:
        out = 0
        for h in self.hands:
            out |= h
        return out

    def exact(self, cur: int, left: int, right: int, hkey: int, allh: int, guess: int) -> int:
        """Exact value for ``cur``'s side by MTD(f): null-window searches around a guess
        that close in on the value (far fewer nodes than one full-window search)."""
        lo, hi = -_INF, _INF
        g = guess
        search = self.search
        while lo < hi:
            beta = g + 1 if g == lo else g
            g = search(cur, left, right, hkey, allh, beta - 1, beta)
            if g < beta:
                hi = g
            else:
                lo = g
        return g

    def _root_moves(self) -> list[tuple[int, int, int, int]]:
        """(action, tile, new left, new right) of every legal placement at the root, in
        the tie-break order of ``best_action``; [] when the seat to act must pass."""
        pos = self.pos
        h = self.hands[pos.current]
        left, right = pos.left, pos.right
        if left == EMPTY:
            m = (1 << pos.opening_tile) if pos.opening_tile >= 0 else h
            pairs = self.tileset.tiles
            moves = [(2 * t, t, pairs[t][0], pairs[t][1]) for t in _bits(m)]
        else:
            other, twv = self.other, self.twv
            moves = [(2 * t, t, other[8 * t + left], right) for t in _bits(h & twv[left])]
            moves += [(2 * t + 1, t, left, other[8 * t + right]) for t in _bits(h & twv[right])]
        return sorted(moves, key=lambda m: _tie_key(m[0], self.tileset))

    def child_values(self) -> dict[int, int]:
        """Exact scaled value (for the side to act) of every legal action at the root."""
        pos = self.pos
        cur = pos.current
        moves = self._root_moves()
        if not moves:
            v = self.exact(self.nxt[cur], pos.left, pos.right, self.hand_key(), self.all_hands(), 0)
            return {self.pass_action: -v if self.flip[cur] else v}
        out: dict[int, int] = {}
        done: dict[tuple[int, int, int], int] = {}
        guess = 0
        for action, t, nl, nr in moves:
            same = (t, min(nl, nr), max(nl, nr))
            if same not in done:  # both ends show the same value: two actions, one move
                done[same] = guess = self._child(t, nl, nr, guess, None)
            out[action] = done[same]
        return out

    def best(self) -> tuple[int, int]:
        """(best action, its exact scaled value) at the root. After the first move, each
        other move is only tested for beating the best so far (a null-window search) and
        solved exactly when it does, which costs far less than ``child_values``."""
        pos = self.pos
        cur = pos.current
        moves = self._root_moves()
        if not moves:
            v = self.exact(self.nxt[cur], pos.left, pos.right, self.hand_key(), self.all_hands(), 0)
            return self.pass_action, -v if self.flip[cur] else v
        best_action, best = moves[0][0], self._child(moves[0][1], moves[0][2], moves[0][3], 0, None)
        for action, t, nl, nr in moves[1:]:
            v = self._child(t, nl, nr, best, best + 1)
            if v > best:
                best_action, best = action, v
        return best_action, best

    def _child(self, t: int, nl: int, nr: int, guess: int, threshold: int | None) -> int:
        """Exact value (for the seat to act at the root) of placing tile ``t`` leaving ends
        ``nl``, ``nr``. With ``threshold``, a value below it is only bounded: the result is
        then some v < threshold."""
        hands, pips = self.hands, self.pips
        cur = self.pos.current
        bit = 1 << t
        h = hands[cur]
        hkey = self.hand_key() ^ (bit << (_KEY_BITS * cur))
        hands[cur] = h ^ bit
        pips[cur] -= self.tile_pips[t]
        try:
            if not hands[cur]:
                return self._terminal(cur, True)
            allh = self.all_hands()
            if not allh & (self.twv[nl] | self.twv[nr]):
                return self._terminal(cur, False)
            nc, fl = self.nxt[cur], self.flip[cur]
            if threshold is not None:
                # Null window at the threshold, in the next seat's terms.
                if fl:
                    w = -self.search(nc, nl, nr, hkey, allh, -threshold, 1 - threshold)
                else:
                    w = self.search(nc, nl, nr, hkey, allh, threshold - 1, threshold)
                if w < threshold:
                    return w
                guess = w
            v = self.exact(nc, nl, nr, hkey, allh, -guess if fl else guess)
            return -v if fl else v
        finally:
            hands[cur] = h
            pips[cur] += self.tile_pips[t]


class _TableFull(Exception):
    """The compiled search's transposition table passed half full: grow it and re-solve."""


class _CompiledSearch(_Search):
    """``_Search`` with its ``search`` and ``exact`` run by ``agents.solver_kernels``: the
    root logic is the reference's own, the recursion compiled (same nodes, same values).
    The table is one per process, shared by the searches one after another: searches in
    threads of one process at the same time would share it too, so use processes."""

    capacity = 1 << 16  # table rows, a power of two; doubled whenever a search fills half
    _table: np.ndarray | None = None
    _context = 0

    def __init__(self, config: BlockConfig, pos: Position, root: int | None = None) -> None:
        super().__init__(config, pos, root)
        from agents import solver_kernels as kernels

        self.kernels = kernels
        cls = _CompiledSearch
        if cls._table is None or cls._table.shape[0] != cls.capacity:
            cls._table = kernels.new_table(cls.capacity)
        cls._context += 1
        ts = self.tileset
        self.g = kernels.tables(
            self.nxt, self.flip, self.teams, self.side, self.root, self.two_sides,
            ts.with_value, ts.pips, self.other, _END_CODE, min(kernels.FIRST_ROWS, cls.capacity),
        )  # fmt: skip
        self.g[kernels.CONTEXT] = cls._context
        self.search = self._search
        self.node_count = lambda: int(self.g[kernels.NODES])

    @classmethod
    def grow(cls) -> None:
        cls.capacity *= 2

    def _load(self) -> np.ndarray:
        """``g`` holding the hands and pips the root logic has set."""
        k = self.kernels
        self.g[k.HANDS : k.HANDS + self.n] = self.hands
        self.g[k.PIPS : k.PIPS + self.n] = self.pips
        return self.g

    def _checked(self, value: int) -> int:
        if self.g[self.kernels.OVERFLOW]:
            raise _TableFull
        return int(value)

    def _search(
        self, cur: int, left: int, right: int, hkey: int, allh: int, alpha: int, beta: int
    ) -> int:
        lo, hi = self.kernels.split_key(hkey)
        g = self._load()
        return self._checked(
            self.kernels.search(cur, left, right, lo, hi, allh, alpha, beta, 0, g, self._table)
        )

    def exact(self, cur: int, left: int, right: int, hkey: int, allh: int, guess: int) -> int:
        lo, hi = self.kernels.split_key(hkey)
        g = self._load()
        return self._checked(
            self.kernels.exact(cur, left, right, lo, hi, allh, guess, g, self._table)
        )


ENGINES = ("auto", "python", "numba")


def _engine(engine: str) -> str:
    """The engine a search runs on: ``python`` (the reference) or ``numba`` (compiled, the
    same search); ``auto`` takes numba when it is installed."""
    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r} is not allowed: use one of {', '.join(ENGINES)}")
    if engine == "python":
        return engine
    try:
        import numba  # noqa: F401
    except ImportError:
        if engine == "numba":
            raise ImportError('engine="numba" needs numba: pip install "block-env[fast]"') from None
        return "python"
    return "numba"


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def solve(config: BlockConfig, pos: Position, engine: str = "auto") -> Solution:
    """Exact value of ``pos`` for the seat to act and one best action (ties go to the
    heaviest tile, then the lowest action id). ``engine``: see ``ENGINES``."""

    def run(search: _Search) -> Solution:
        action, value = search.best()
        scale = search.scale
        return Solution(value if scale == 1 else value / scale, action, search.node_count())

    return _run(config, pos, None, engine, run)


def action_values(config: BlockConfig, pos: Position, engine: str = "auto") -> dict[int, float]:
    """Exact value, for the seat to act, of each of its legal actions (pass alone when it
    must pass). The keys are exactly the actions ``rules.legal_actions`` lists."""
    return _values(config, pos, None, engine)[0]


def counted_action_values(
    config: BlockConfig, pos: Position, engine: str = "auto"
) -> tuple[dict[int, float], int]:
    """``action_values`` and the number of search nodes it visited: a measure of work
    that, unlike time, is the same on every machine (and for every engine)."""
    return _values(config, pos, None, engine)


def _values(
    config: BlockConfig, pos: Position, root: int | None, engine: str
) -> tuple[dict[int, float], int]:
    def run(search: _Search) -> tuple[dict[int, float], int]:
        raw = search.child_values()
        scale = search.scale
        if scale == 1:
            return dict(raw), search.node_count()
        return {a: v / scale for a, v in raw.items()}, search.node_count()

    return _run(config, pos, root, engine, run)


def _run(config: BlockConfig, pos: Position, root: int | None, engine: str, run):
    """``run(search)`` on a search context of the chosen engine; a compiled search whose
    table filled up is run again on a table twice the size."""
    if _engine(engine) == "python":
        return run(_Search(config, pos, root))
    while True:
        try:
            return run(_CompiledSearch(config, pos, root))
        except _TableFull:
            _CompiledSearch.grow()


def best_action(values: dict[int, float], tiles: TileSet = STANDARD) -> int:
    """The action of highest value; ties go to the heaviest tile, then the lowest id
    (``tiles``: the set the action ids refer to)."""
    best = max(values.values())
    return min((a for a, v in values.items() if v == best), key=lambda a: _tie_key(a, tiles))


def _tie_key(action: int, tiles: TileSet) -> tuple[int, int]:
    if action == tiles.pass_action:
        return (0, action)
    return (-tiles.pips[action // 2], action)


def principal_variation(config: BlockConfig, pos: Position, engine: str = "auto") -> list[int]:
    """The actions of one optimal line of play from ``pos`` to the end of the hand under
    the search of the seat to act: its side maximises its value, the other side (in
    paranoid play, every other seat) minimises it. Replaying the line with
    ``rules.apply_action`` ends the hand with the value ``solve`` reports."""
    from block_env import rules

    root = pos.current
    state = _state_of(config, pos)
    line: list[int] = []
    while state.result is None:
        values, _ = _values(config, position_from_state(state), root, engine)
        action = best_action(values, config.tiles)
        line.append(action)
        state = rules.apply_action(config, state, action)
    return line


def _state_of(config: BlockConfig, pos: Position) -> State:
    """A rules state holding ``pos`` (to replay lines; never on the search path). The
    line's tiles are unknown here and only the ends matter for play."""
    _check(config, pos)
    n = config.num_players
    return State(
        hands=tuple(pos.hands),
        played=0,
        line=(),
        left=pos.left,
        right=pos.right,
        current=pos.current,
        leader=pos.current,
        voids=(0,) * n,
        scores=(0,) * n,
        opening_tile=pos.opening_tile if pos.left == EMPTY else -1,
        hand_number=0,
        result=None,
        episode_over=False,
        winners=(),
        tiles=config.tiles,
    )
