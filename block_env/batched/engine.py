"""The batched Block engine: B independent games as arrays with a leading batch dimension.

State per game (all int64): ``hands`` (B, n) T-bit tile masks by absolute seat,
``in_hands`` (their union), ``played`` (line tiles), ``ends`` (both open end values as one
index ``(left + 1) * 8 + (right + 1)``, 0 on the empty line), ``fit`` (tiles that fit
either end; on the empty line the opening choices), ``current``,
``leader``, ``voids`` (N+1 bits per seat packed in one word), ``counts`` (tiles in hand, 3
bits per seat, 4 for hands above 7, packed in one word), ``scores`` (B, n), ``out_of_play``
and ``hand_number``. The legal actions of the seat to act are kept as one (2T+1)-bit word
per game (bit a = action a). The tables of the game's tile set come from ``layout``.

Every operation works on all games at once, mostly through small lookup tables
(``layout``); Python loops run only over seats (at most 4). The rules are those of
``block_env.rules`` and the observation is ``block_env.observation.encode`` bit for bit:
``tests/fast_paths/test_batched_vs_aec.py`` checks both against the AEC env step by step.

The observations are written by ``ObservationWriter`` (``block_env.batched.writer``), which
``Engine`` inherits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from block_env.batched.layout import layout_for
from block_env.batched.writer import ObservationWriter
from block_env.config import BlockConfig
from block_env.information_state import history_slots, slot_size
from block_env.observation import MAX_SEATS
from block_env.reset_options import Setup

_LOW14 = (1 << 14) - 1
_STATE_ARRAYS = (
    "hands", "in_hands", "played", "ends", "fit", "current", "leader",
    "voids", "counts", "scores", "out_of_play", "hand_number", "legal", "tail",
)  # fmt: skip


class Engine(ObservationWriter):
    """Array state and transition of B games; ``BatchedEnv`` is the public wrapper."""

    def __init__(
        self,
        config: BlockConfig,
        num_envs: int,
        backend: Any,
        deals: Any,
        auto_pass: bool,
        history: bool = False,
        compiled: bool = False,
    ) -> None:
        b = self.b = backend
        self.config = config
        self.L = layout_for(config)
        self.n = n = config.num_players
        self.num_envs = B = num_envs
        self.deals = deals
        self.auto_pass = auto_pass
        self.partnership = config.partnership
        self.target = config.target
        self.hand_mode = config.episode == "hand"
        # lookup tables on the backend's device
        self.t_tile_bit = b.table(self.L.TILE_BIT)
        self.t_next_ends = b.table(self.L.NEXT_ENDS)
        self.t_fit = b.table(self.L.FIT)
        self.t_fit_actions = b.table(self.L.FIT_ACTIONS)
        self.t_shown = b.table(self.L.SHOWN)
        # tile t's bit moved to bits 2t and 2t+1 (both its actions), by 14-bit chunk
        both = self.L.SPREAD14 * 3
        self.t_both_lo = self._const(both)
        self.t_both_hi = self._const(both << 28)
        self.t_pop14 = b.table(self.L.POP14)
        self.t_pips_lo14 = b.table(self.L.PIPS_LO14)
        self.t_pips_hi14 = b.table(self.L.PIPS_HI14)
        self.t_open_rank = b.table(self.L.OPEN_RANK)
        self.t_team = b.table(np.array(config.teams, dtype=np.int64))
        self.t_next_seat = b.table((np.arange(n, dtype=np.int64) + 1) % n)
        self.t_count_shift = b.table(self.L.COUNT_BITS * np.arange(n, dtype=np.int64))
        self.t_shifts28 = b.table(np.arange(self.L.num_tiles, dtype=np.int64))
        self.seats = b.arange(n)
        # a full deal (every seat holds hand_size tiles): packed counts, tiles out of play
        hs = config.hand_size
        self.full_counts = int(sum(hs << (self.L.COUNT_BITS * s) for s in range(n)))
        self.full_out = self.L.num_tiles - n * hs
        self._init_writer()  # the observation staging tables (``writer``)
        # t_side_seats[side]: the seats of that side (a seat, or a team in partnership) as
        # bools; the last row, one past the sides, is nobody's
        team = np.array(config.teams) if config.partnership else np.arange(n)
        sides = int(team.max()) + 1
        self.t_side_seats = b.table(team[None, :] == np.arange(sides + 1)[:, None])
        self.rows = b.arange(B)
        self._to_act: tuple | None = None  # see _to_act_hand
        self.row_base = self.rows * n  # flat index of (game, seat 0) in (B, n) arrays
        # by (game, seat): the flat index in (B, n) arrays, and the game; the seats repeated
        self.t_flat = self._const(np.arange(B * n).reshape(B, n))
        self.t_game_rep = self._const(np.repeat(np.arange(B), n).reshape(B, n))
        self.t_seat_rep = self._const(np.tile(np.arange(n), B))
        # state
        self.hands = b.zeros((B, n), "i64")
        self.hands_flat = self.hands.reshape(-1)  # a view: writes go to ``hands``
        self.in_hands = b.zeros(B, "i64")
        self.played = b.zeros(B, "i64")
        self.ends = b.zeros(B, "i64")
        self.fit = b.zeros(B, "i64")
        self.current = b.zeros(B, "i64")
        self.leader = b.zeros(B, "i64")
        self.voids = b.zeros(B, "i64")
        self.counts = b.zeros(B, "i64")
        self.scores = b.zeros((B, n), "i64")
        self.out_of_play = b.zeros(B, "i64")
        self.hand_number = b.zeros(B, "i64")
        self.legal = b.zeros(B, "i64")
        # observation positions HEAD_END.. (scores, target, leader, ...) per game and
        # observer as bytes in the words tail_c0.. of the staged observation, rebuilt when a
        # hand starts, as rows (game * n + observer)
        self.tail = b.zeros((B * n, self.obs_chunks - self.tail_c0), "i64")
        # the hand's public history (``block_env.information_state``), only when asked for:
        # rows (game * n + absolute seat) of H slots of T + 3 floats, and the moves made
        self.history = history
        if history:
            self.H = history_slots(config)
            self.S = slot_size(config)
            self.hist = b.zeros((B * n, self.H * self.S), "f32")
            self.hist_flat = self.hist.reshape(-1)  # a view: writes go to ``hist``
            self.turn = b.zeros(B, "i64")
            self.hist_dim = MAX_SEATS * self.H * self.S
        self.compiled = None  # ``NumbaStep``: step and observe, when they run compiled
        if compiled:
            from block_env.batched.numba_step import NumbaStep  # imports numba

            self.compiled = NumbaStep(self)

    def _const(self, array: np.ndarray) -> Any:
        """A constant table on the backend (read-only for numpy: not part of the state)."""
        table = self.b.table(array)
        if isinstance(table, np.ndarray):
            table.flags.writeable = False
        return table

    # ---- dealing ----------------------------------------------------------------------
    def reset(self, seed: int | None, setups: list[Setup | None] | None) -> None:
        """Start a new match (or hand) in every game; ``setups`` overrides per game."""
        b = self.b
        self.deals.seed(seed)
        rows = self.rows
        hands, lots = self.deals.draw(rows, b.zeros(self.num_envs, "bool") | True)
        scores = b.zeros((self.num_envs, self.n), "i64")
        if setups is not None and any(s is not None for s in setups):
            hands_np = b.to_numpy(hands).copy()
            lots_np = b.to_numpy(lots).copy()
            scores_np = np.zeros((self.num_envs, self.n), dtype=np.int64)
            for i, setup in enumerate(setups):
                if setup is None:
                    continue
                if setup.hands is not None:
                    hands_np[i] = setup.hands
                if setup.leader is not None:
                    lots_np[i] = setup.leader
                if setup.scores is not None:
                    scores_np[i] = setup.scores
            hands, lots, scores = (b.from_numpy(x) for x in (hands_np, lots_np, scores_np))
        self._start_hands(rows, hands, lots, scores, b.zeros(self.num_envs, "i64"))
        self.legal = self._legal_for(self._to_act_hand())

    def _start_hands(
        self,
        idx: Any,
        hands: Any,
        leader: Any,
        scores: Any,
        number: Any,
        full: bool = False,
        flat: Any = None,
    ) -> None:
        """Deal ``hands`` (K, n) to games ``idx``; ``full``: every seat holds hand_size tiles
        (a drawn deal), so the counts and the tiles out of play are the constants."""
        b = self.b
        n = self.n
        if self.config.opener == "highest_double":
            leader, opening = self._opening(hands)
            fit = b.take(self.t_tile_bit, opening)
        else:
            fit = self.L.ALL
        dealt = hands[:, 0]
        for s in range(1, n):
            dealt = dealt | hands[:, s]  # the hands are disjoint: their union
        if flat is None:  # the (game, seat) entries of the games in (B * n) arrays
            flat = b.take_rows(self.t_flat, idx).reshape(-1)
        b.put(self.hands_flat, flat, hands.reshape(-1))
        b.put(self.in_hands, idx, dealt)
        b.put(self.played, idx, 0)
        b.put(self.ends, idx, self.L.EMPTY_ENDS)
        b.put(self.fit, idx, fit)
        b.put(self.current, idx, leader)
        b.put(self.leader, idx, leader)
        b.put(self.voids, idx, 0)
        if full:
            out_of_play = self.full_out
            b.put(self.counts, idx, self.full_counts)
        else:
            out_of_play = self.L.num_tiles - self._popcount(dealt)
            b.put(self.counts, idx, (self._popcount(hands) << self.t_count_shift).sum(1))
        b.put(self.out_of_play, idx, out_of_play)
        b.put(self.scores.reshape(-1), flat, scores.reshape(-1))
        b.put(self.hand_number, idx, number)
        if self.history:
            rows, seat = self._rows_by_seat(idx)
            blank = b.zeros((int(rows.shape[0]), self.H * self.S), "f32")
            b.put(self.hist, rows * n + seat, blank)
            b.put(self.turn, idx, 0)
        tails = self._tails(leader, scores, out_of_play, to_act=True)
        b.put_rows(self.tail, flat, tails.reshape(int(flat.shape[0]), -1))
        if not self.wide:  # a score above 255 in play (none below such a target: see _wide_fix)
            self.wide = b.any(scores > 255)

    def _opening(self, hands: Any) -> tuple[Any, Any]:
        """(seat, tile) of the forced opening: highest double dealt, else heaviest tile."""
        dealt = hands.sum(1)
        held = ((dealt[:, None] >> self.t_shifts28) & 1) == 1
        tile = self.b.where(held, self.t_open_rank, -1).argmax(1)
        seat = ((hands >> tile[:, None]) & 1).argmax(1)
        return seat, tile

    # ---- the transition ----------------------------------------------------------------
    def step(self, actions: Any) -> tuple[Any, Any, dict[str, Any]]:
        """Apply one action per game (validated), finish hands, deal new ones.
        Returns (rewards (B, n) float32, terminated (B,) bool, info)."""
        if self.compiled is not None:
            return self.compiled.step(actions)
        b = self.b
        if not (
            b.all(b.in_range(actions, self.L.num_actions)) and b.all((self.legal >> actions) & 1)
        ):
            self._refuse(actions)
        a = actions

        c = self.current
        flat = self.row_base + c
        tile = a >> 1
        is_pass = tile == self.L.PASS_TILE
        if self.history:
            self._record(flat, b.where(is_pass, self.L.num_tiles + 2, tile), a & 1, is_pass)
        bit = b.take(self.t_tile_bit, tile)  # 0 for a pass
        actor_hand = b.take(self.hands_flat, flat) ^ bit
        b.put(self.hands_flat, flat, actor_hand)
        self.in_hands = self.in_hands ^ bit
        self.played = self.played | bit
        self.counts = self.counts - ((bit >> tile) << (c * self.L.COUNT_BITS))
        ends = self.ends
        shown = b.where(is_pass, b.take(self.t_shown, ends), 0)
        self.voids = self.voids | (shown << (c * self.L.VOID_BITS))
        self.ends = ends = b.take(self.t_next_ends, ends * self.L.num_actions + a)
        self.fit = b.take(self.t_fit, ends)  # the line is never empty after a move
        self.current = b.take(self.t_next_seat, c)

        domino = actor_hand == 0
        stuck = (self.in_hands & self.fit) == 0  # nobody can place
        ended = domino | stuck

        idx = b.nonzero(ended)
        if int(idx.shape[0]):
            rewards, terminated, info = self._end_hands(
                idx, b.take(domino, idx), b.take(c, idx), ended, domino
            )
        else:
            rewards, terminated, info = self._no_hand_ended()
        self.legal = self._legal_for(self._to_act_hand())
        if self.auto_pass:
            self._auto_pass()
        return rewards, terminated, info

    def _auto_pass(self) -> None:
        """Play the forced passes: at most n-1 in a row, since a position where nobody can
        place has already ended the hand."""
        b = self.b
        for _ in range(self.n - 1):
            forced = self.legal == self.L.PASS_BIT
            if not b.any(forced):
                return
            c = self.current
            if self.history:
                self._record_passes(b.nonzero(forced))
            shown = b.where(forced, b.take(self.t_shown, self.ends), 0)
            self.voids = self.voids | (shown << (c * self.L.VOID_BITS))
            self.current = b.where(forced, b.take(self.t_next_seat, c), c)
            self.legal = self._legal_for(self._to_act_hand())

    def _record(self, flat: Any, col: Any, end: Any, is_pass: Any) -> None:
        """Write every game's move into the history: column ``col`` (the tile, or the pass
        flag) and, for a placement, the end's column, at slot turn // n of the actor's row."""
        b = self.b
        t = self.L.num_tiles
        base = flat * (self.H * self.S) + (self.turn // self.n) * self.S
        end_col = b.where(is_pass, t + 2, t + end)
        pos = b.cat((base + col, base + end_col))
        b.put(self.hist_flat, pos, b.zeros(int(pos.shape[0]), "f32") + 1.0)
        self.turn = self.turn + 1

    def _record_passes(self, idx: Any) -> None:
        """Record a pass by the seat to act in games ``idx`` (the forced passes)."""
        b = self.b
        turn = b.take(self.turn, idx)
        flat = b.take(self.current, idx) + idx * self.n
        pos = flat * (self.H * self.S) + (turn // self.n) * self.S + self.L.num_tiles + 2
        b.put(self.hist_flat, pos, b.zeros(int(pos.shape[0]), "f32") + 1.0)
        self.turn[idx] = turn + 1

    def _end_hands(
        self, idx: Any, domino: Any, actor: Any, ended: Any, domino_all: Any
    ) -> tuple[Any, Any, dict[str, Any]]:
        """Score the hands that just ended (games ``idx``; ``ended``/``domino_all`` over the
        whole batch), build rewards and info, and deal the next hand or, where the episode is
        over, a new match (same-step autoreset). Column operations over the (at most 4)
        seats: far fewer and cheaper calls than reductions along a short axis."""
        b = self.b
        n = self.n
        B = self.num_envs
        hands = b.take_rows(self.hands, idx)
        pips = b.take(self.t_pips_lo14, hands & _LOW14) + b.take(self.t_pips_hi14, hands >> 14)
        if self.partnership:
            side = pips[:, :2] + pips[:, 2:]
            actor_side = actor & 1
        else:
            side = pips
            actor_side = actor
        m = int(side.shape[1])
        cols = [side[:, s] for s in range(m)]
        total = cols[0] + cols[1]
        low = b.minimum(cols[0], cols[1])
        for col in cols[2:]:
            total = total + col
            low = b.minimum(low, col)
        if m == 2:
            tied = (cols[0] == cols[1]) & ~domino
            lowest = b.i64(cols[1] < cols[0])  # the first side at the lowest total
        else:
            at_low = side == low[:, None]
            tied = (b.i64(at_low).sum(1) > 1) & ~domino
            lowest = b.argmax1(at_low)
        win_side = b.where(domino, actor_side, lowest)
        if self.partnership:  # the domino side's own pips: the partner's hand
            actor_pips = b.where(actor_side == 0, cols[0], cols[1])
            dom_gain = total - actor_pips
        else:  # the actor dominoed: no pips left
            dom_gain = total
        gained = b.where(domino, dom_gain, b.where(tied, 0, total - 2 * low))
        winner = b.where(tied, -1, b.where(domino, actor, win_side))
        on_win_side = b.take_rows(self.t_side_seats, b.where(tied, m, win_side))
        points = on_win_side * gained[:, None]
        scores = b.take_rows(self.scores, idx) + points

        if self.hand_mode:
            over = None
            match_winner = b.where(tied, -1, win_side)  # lowest seat of the winning side
            winners = on_win_side
        else:
            sc = [scores[:, s] for s in range(n)]
            top = sc[0]
            for col in sc[1:]:
                top = b.maximum(top, col)
            over = top >= self.target
            if n == 2:
                decided = over & (sc[0] != sc[1])
                first = b.i64(sc[1] > sc[0])
            else:
                is_top = scores == top[:, None]
                if self.partnership:
                    sides = b.i64(is_top[:, 0] | is_top[:, 2]) + b.i64(is_top[:, 1] | is_top[:, 3])
                else:
                    sides = b.i64(is_top).sum(1)
                decided = over & (sides == 1)
                first = b.argmax1(is_top)
            match_winner = b.where(decided, first, -1)
            first_side = (first & 1) if self.partnership else first
            winners = b.take_rows(self.t_side_seats, b.where(decided, first_side, m))

        reward = self.config.reward
        if reward == "points":
            hand_rewards = b.f32(points)
        elif reward == "zero_sum":
            hand_rewards = self._spread(winner, b.f64(gained))
        else:
            hand_rewards = self._spread(match_winner, b.f64(b.i64(match_winner >= 0)))
        # per-seat results of the K games scattered into batch arrays through flat indices
        flat = b.take_rows(self.t_flat, idx).reshape(-1)
        rewards = b.zeros((B, n), "f32")
        b.put(rewards.reshape(-1), flat, hand_rewards.reshape(-1))
        hand_winner = b.full(B, -1)
        b.put(hand_winner, idx, winner)
        hand_pips = b.zeros((B, n), "i64")
        b.put(hand_pips.reshape(-1), flat, pips.reshape(-1))
        hand_points = b.zeros((B, n), "i64")
        b.put(hand_points.reshape(-1), flat, points.reshape(-1))
        if over is None:  # one hand is the episode
            terminated = b.copy(ended)
            final = idx
        else:
            terminated = b.zeros(B, "bool")
            b.put(terminated, idx, over)
            final = idx[over] if b.any(over) else None
        info_match_winner = b.full(B, -1)
        b.put(info_match_winner, idx, match_winner)
        match_winners = b.zeros((B, n), "bool")
        b.put(match_winners.reshape(-1), flat, winners.reshape(-1))
        b.put_rows(self.scores, idx, scores)  # final observations show the updated scores
        info = {
            "hand_over": b.copy(ended),
            "hand_winner": hand_winner,
            "hand_blocked": ended ^ domino_all,  # a domino ends its hand
            "hand_pips": hand_pips,
            "hand_points": hand_points,
            "match_over": b.copy(terminated),
            "match_winner": info_match_winner,
            "match_winners": match_winners,
        }
        if final is None:
            info["final_index"] = b.zeros(0, "i64")
            info["final_obs"] = b.zeros((0, n, self.obs_width), "f32")
        else:
            info["final_index"] = final
            info["final_obs"] = self.final_observations(final)

        if over is None:
            over = b.zeros(int(idx.shape[0]), "bool") | True
        hands, lots = self.deals.draw(idx, over)
        leader = b.where(over, lots, b.take(self.t_next_seat, b.take(self.leader, idx)))
        keep = ~over  # the match goes on: scores and hand number carry over
        scores = scores * keep[:, None]
        number = (b.take(self.hand_number, idx) + 1) * keep
        self._start_hands(idx, hands, leader, scores, number, full=True, flat=flat)
        return rewards, terminated, info

    def _spread(self, winner: Any, amount: Any) -> Any:
        """Rewards (K, n) as ``rules.spread_reward``, float64 cast to float32: +amount to the
        winner's side, the opposite split over the other side(s); +0.0 everywhere when there
        is no winner (winner -1) or the amount is 0 (``0.0 - amount`` is +0.0 then)."""
        b = self.b
        sides = int(self.t_side_seats.shape[0]) - 1
        side = (winner & 1) if self.partnership else winner
        same = b.take_rows(self.t_side_seats, b.where(winner >= 0, side, sides))
        loss = (0.0 - amount) / (sides - 1)  # over the other seats, or the other team
        return b.f32(b.where(same, amount[:, None], loss[:, None]))

    def _no_hand_ended(self) -> tuple[Any, Any, dict[str, Any]]:
        """Rewards, terminated and info of a step on which no hand ended."""
        b = self.b
        B, n = self.num_envs, self.n
        info = {
            "hand_over": b.zeros(B, "bool"),
            "hand_winner": b.full(B, -1),
            "hand_blocked": b.zeros(B, "bool"),
            "hand_pips": b.zeros((B, n), "i64"),
            "hand_points": b.zeros((B, n), "i64"),
            "match_over": b.zeros(B, "bool"),
            "match_winner": b.full(B, -1),
            "match_winners": b.zeros((B, n), "bool"),
            "final_index": b.zeros(0, "i64"),
            "final_obs": b.zeros((0, n, self.obs_width), "f32"),
        }
        return b.zeros((B, n), "f32"), b.zeros(B, "bool"), info

    # ---- legality ----------------------------------------------------------------------
    def _legal_for(self, hand: Any) -> Any:
        """(2T+1)-bit legal words of the seat to act holding ``hand``: each held tile that
        fits an end gives both its actions (by 14-bit chunk tables), kept where they fit."""
        b = self.b
        held = hand & self.fit
        word = b.take(self.t_both_lo, held & _LOW14) | b.take(self.t_both_hi, held >> 14)
        word &= b.take(self.t_fit_actions, self.ends)
        return b.where(word == 0, self.L.PASS_BIT, word)

    def _popcount(self, masks: Any) -> Any:
        b = self.b
        return b.take(self.t_pop14, masks & _LOW14) + b.take(self.t_pop14, masks >> 14)

    # ---- seats (for the observations, ``writer``) -----------------------------------------
    def _to_act_hand(self) -> Any:
        """The hand of the seat to act in every game; kept, with its flat index, for the
        ``observe`` that follows (used only while ``current`` is the same array)."""
        flat = self.row_base + self.current
        hand = self.b.take(self.hands_flat, flat)
        self._to_act = (self.current, flat, hand)
        return hand

    def _rows_by_seat(self, idx: Any) -> tuple[Any, Any]:
        """Each game of ``idx`` repeated once per seat, with the seats 0..n-1."""
        k = int(idx.shape[0])
        return self.b.take_rows(self.t_game_rep, idx).reshape(-1), self.t_seat_rep[: k * self.n]

    # ---- errors and inspection ---------------------------------------------------------
    def _refuse(self, actions: Any) -> None:
        """Raise the ValueError naming the first game whose action is not legal."""
        b = self.b
        ok = (actions >= 0) & (actions < self.L.num_actions)
        a = b.where(ok, actions, 0)
        raise ValueError(self._illegal_message(actions, ok & (((self.legal >> a) & 1) == 1)))

    def _illegal_message(self, actions: Any, ok: Any) -> str:
        b = self.b
        game = int(np.flatnonzero(~b.to_numpy(ok))[0])
        action = int(b.to_numpy(actions)[game])
        seat = int(b.to_numpy(self.current)[game])
        word = int(b.to_numpy(self.legal)[game])
        legal = [a for a in range(self.L.num_actions) if word >> a & 1]
        names = ", ".join(f"{a} ({self.config.tiles.describe_action(a)})" for a in legal)
        return (
            f"actions[{game}]={action} is not legal in game {game} (seat {seat} to act); "
            f"legal actions: {names}"
        )

    def snapshot(self) -> dict[str, np.ndarray]:
        """The full state as numpy arrays (privileged: every hand). ``left``/``right`` are
        the end values (-1 on the empty line), ``voids`` (B, n) (N+1)-bit masks and ``counts``
        (B, n) tile counts."""
        b = self.b
        ends = b.to_numpy(self.ends)
        voids = b.to_numpy(self.voids)
        counts = b.to_numpy(self.counts)
        seats = np.arange(self.n)
        out = {name: b.to_numpy(getattr(self, name)).copy() for name in _STATE_ARRAYS[:-1]}
        out.update(
            left=self.L.ENDS_LEFT[ends],
            right=self.L.ENDS_RIGHT[ends],
            voids=(voids[:, None] >> (self.L.VOID_BITS * seats)) & ((1 << self.L.VOID_BITS) - 1),
            counts=(counts[:, None] >> (self.L.COUNT_BITS * seats))
            & ((1 << self.L.COUNT_BITS) - 1),
        )
        return out

    def state_bytes(self) -> int:
        """Bytes held by the state arrays (grows linearly with the number of games)."""
        total = 0
        for name in _STATE_ARRAYS:
            x = getattr(self, name)
            total += int(x.nbytes) if hasattr(x, "nbytes") else x.element_size() * x.nelement()
        return total
