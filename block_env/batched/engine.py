"""The batched Block engine: B independent games as arrays with a leading batch dimension.

State per game (all int64): ``hands`` (B, n) T-bit tile masks by absolute seat,
``in_hands`` (their union), ``played`` (line tiles), ``ends`` (both open end values as one
index ``(left + 1) * 8 + (right + 1)``, 0 on the empty line), ``fit_left``/``fit_right``
(tiles that fit each end; on the empty line the opening choices and 0), ``current``,
``leader``, ``voids`` (N+1 bits per seat packed in one word), ``counts`` (tiles in hand, 3
bits per seat, 4 for hands above 7, packed in one word), ``scores`` (B, n), ``out_of_play``
and ``hand_number``. The legal actions of the seat to act are kept as one (2T+1)-bit word
per game (bit a = action a). The tables of the game's tile set come from ``layout``.

Every operation works on all games at once, mostly through small lookup tables
(``layout``); Python loops run only over seats (at most 4). The rules are those of
``block_env.rules`` and the observation is ``block_env.observation.encode`` bit for bit:
``tests/test_batched.py`` checks both against the AEC env step by step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from block_env.batched.layout import layout_for
from block_env.config import BlockConfig
from block_env.information_state import history_slots, slot_size
from block_env.observation import MAX_SEATS
from block_env.setup import Setup

_LOW14 = (1 << 14) - 1
_STATE_ARRAYS = (
    "hands", "in_hands", "played", "ends", "fit_left", "fit_right", "current", "leader",
    "voids", "counts", "scores", "out_of_play", "hand_number", "legal", "tail",
)  # fmt: skip


class Engine:
    """Array state and transition of B games; ``BatchedEnv`` is the public wrapper."""

    def __init__(
        self,
        config: BlockConfig,
        num_envs: int,
        backend: Any,
        deals: Any,
        auto_pass: bool,
        history: bool = False,
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
        self.t_fit_left = b.table(self.L.FIT_LEFT)
        self.t_fit_right = b.table(self.L.FIT_RIGHT)
        self.t_shown = b.table(self.L.SHOWN)
        self.t_ends_word0 = b.table(self.L.ENDS_WORD0)
        self.t_ends_word1 = b.table(self.L.ENDS_WORD1)
        self.t_spread14 = b.table(self.L.SPREAD14)
        self.t_pop14 = b.table(self.L.POP14)
        self.t_pips_lo14 = b.table(self.L.PIPS_LO14)
        self.t_pips_hi14 = b.table(self.L.PIPS_HI14)
        self.t_counts_f32 = b.table(self.L.COUNTS_F32)
        self.t_open_rank = b.table(self.L.OPEN_RANK)
        self.t_team = b.table(np.array(config.teams, dtype=np.int64))
        self.t_next_seat = b.table((np.arange(n, dtype=np.int64) + 1) % n)
        self.t_count_shift = b.table(self.L.COUNT_BITS * np.arange(n, dtype=np.int64))
        self.t_shifts28 = b.table(np.arange(self.L.num_tiles, dtype=np.int64))
        self.seats = b.arange(n)
        self.rows = b.arange(B)
        self.row_base = self.rows * n  # flat index of (game, seat 0) in (B, n) arrays
        # state
        self.hands = b.zeros((B, n), "i64")
        self.hands_flat = self.hands.reshape(-1)  # a view: writes go to ``hands``
        self.in_hands = b.zeros(B, "i64")
        self.played = b.zeros(B, "i64")
        self.ends = b.zeros(B, "i64")
        self.fit_left = b.zeros(B, "i64")
        self.fit_right = b.zeros(B, "i64")
        self.current = b.zeros(B, "i64")
        self.leader = b.zeros(B, "i64")
        self.voids = b.zeros(B, "i64")
        self.counts = b.zeros(B, "i64")
        self.scores = b.zeros((B, n), "i64")
        self.out_of_play = b.zeros(B, "i64")
        self.hand_number = b.zeros(B, "i64")
        self.legal = b.zeros(B, "i64")
        # observation positions HEAD_END.. (scores, target, leader, ...) per game and
        # observer, rebuilt when a hand starts, as rows (game * n + observer)
        self.tail = b.zeros((B * n, self.L.TAIL_DIM), "f32")
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
        self.legal = self._legal_for(b.take(self.hands_flat, self.row_base + self.current))

    def _start_hands(self, idx: Any, hands: Any, leader: Any, scores: Any, number: Any) -> None:
        b = self.b
        if self.config.opener == "highest_double":
            leader, opening = self._opening(hands)
            fit_left = b.take(self.t_tile_bit, opening)
        else:
            fit_left = b.zeros(int(idx.shape[0]), "i64") + self.L.ALL
        dealt = hands.sum(1)  # the hands are disjoint: their sum is their union
        self.hands[idx] = hands
        self.in_hands[idx] = dealt
        self.played[idx] = 0
        self.ends[idx] = self.L.EMPTY_ENDS
        self.fit_left[idx] = fit_left
        self.fit_right[idx] = 0
        self.current[idx] = leader
        self.leader[idx] = leader
        self.voids[idx] = 0
        self.counts[idx] = (self._popcount(hands) << self.t_count_shift).sum(1)
        self.scores[idx] = scores
        self.out_of_play[idx] = self.L.num_tiles - self._popcount(dealt)
        self.hand_number[idx] = number
        rows, seat = self._rows_by_seat(idx)
        if self.history:
            blank = b.zeros((int(rows.shape[0]), self.H * self.S), "f32")
            b.put(self.hist, rows * self.n + seat, blank)
            self.turn[idx] = 0
        b.put(self.tail, rows * self.n + seat, self._tail(rows, seat, to_act=True))

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
        b = self.b
        ok = (actions >= 0) & (actions < self.L.num_actions)
        a = b.where(ok, actions, 0)
        ok = ok & (((self.legal >> a) & 1) == 1)
        if not b.all(ok):
            raise ValueError(self._illegal_message(actions, ok))

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
        self.fit_left = b.take(self.t_fit_left, ends)
        self.fit_right = b.take(self.t_fit_right, ends)
        self.current = b.take(self.t_next_seat, c)

        domino = actor_hand == 0
        stuck = (self.in_hands & (self.fit_left | self.fit_right)) == 0  # nobody can place
        ended = domino | stuck

        rewards = b.zeros((self.num_envs, self.n), "f32")
        terminated = b.zeros(self.num_envs, "bool")
        info = self._blank_info()
        if b.any(ended):
            idx = b.nonzero(ended)
            self._end_hands(idx, b.take(domino, idx), b.take(c, idx), rewards, terminated, info)
        self.legal = self._legal_for(b.take(self.hands_flat, self.row_base + self.current))
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
            self.legal = self._legal_for(b.take(self.hands_flat, self.row_base + self.current))

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

    def _write_history(self, out: Any, rows: Any, seat: Any) -> None:
        """Write the history of games ``rows`` seen by observer ``seat`` into the columns
        OBS_DIM.. of ``out`` (relative seats in one gather, padded to 4 with zeros)."""
        b = self.b
        n, w, start = self.n, self.H * self.S, self.L.obs_dim
        m = int(rows.shape[0])
        which = rows[:, None] * n + (seat[:, None] + self.seats[None, :]) % n
        out[:, start : start + n * w] = b.take_rows(self.hist, which.reshape(-1)).reshape(m, n * w)
        if n < MAX_SEATS:
            out[:, start + n * w :] = 0.0

    def _end_hands(
        self, idx: Any, domino: Any, actor: Any, rewards: Any, terminated: Any, info: dict
    ) -> None:
        """Score the hands that just ended (games ``idx``), fill rewards and info, and deal
        the next hand or, where the episode is over, a new match (same-step autoreset)."""
        b = self.b
        k = int(idx.shape[0])
        hands = b.take_rows(self.hands, idx)
        pips = b.take(self.t_pips_lo14, hands & _LOW14) + b.take(self.t_pips_hi14, hands >> 14)
        if self.partnership:
            side_pips = pips[:, :2] + pips[:, 2:]
            actor_side = actor % 2
        else:
            side_pips = pips
            actor_side = actor
        total = side_pips.sum(1)
        low = b.min1(side_pips)
        tied = (~domino) & ((side_pips == low[:, None]).sum(1) > 1)
        win_side = b.where(domino, actor_side, side_pips.argmin(1))
        actor_pips = b.take(side_pips.reshape(-1), b.arange(k) * side_pips.shape[1] + actor_side)
        gained = b.where(tied, 0, b.where(domino, total - actor_pips, total - 2 * low))
        winner = b.where(tied, -1, b.where(domino, actor, win_side))
        on_win_side = (self.t_team[None, :] == win_side[:, None]) & (~tied)[:, None]
        points = b.where(on_win_side, gained[:, None], 0)
        scores = b.take_rows(self.scores, idx) + points
        b.put(self.scores, idx, scores)  # final observations show the updated scores

        if self.hand_mode:
            over = b.zeros(k, "bool") | True
            match_winner = b.where(tied, -1, win_side)  # lowest seat of the winning side
            winners = on_win_side
        else:
            reached = scores >= self.target
            over = reached.any(1)
            top = b.max1(b.where(reached, scores, -1))
            is_top = reached & (scores == top[:, None])
            if self.partnership:
                sides = b.i64(is_top[:, 0] | is_top[:, 2]) + b.i64(is_top[:, 1] | is_top[:, 3])
            else:
                sides = b.i64(is_top).sum(1)
            decided = over & (sides == 1)
            first = b.i64(is_top).argmax(1)
            match_winner = b.where(decided, first, -1)
            winners = (self.t_team[None, :] == b.take(self.t_team, first)[:, None]) & decided[
                :, None
            ]

        reward = self.config.reward
        if reward == "points":
            hand_rewards = b.f64(points)
        elif reward == "zero_sum":
            hand_rewards = self._spread(winner, b.f64(gained))
        else:
            hand_rewards = self._spread(match_winner, b.f64(b.i64(over)))
        rewards[idx] = b.f32(hand_rewards)
        terminated[idx] = over
        info["hand_over"][idx] = True
        info["hand_winner"][idx] = winner
        info["hand_blocked"][idx] = ~domino
        info["hand_pips"][idx] = pips
        info["hand_points"][idx] = points
        info["match_over"][idx] = over
        info["match_winner"][idx] = match_winner
        info["match_winners"][idx] = winners
        if b.any(over):
            final = idx[over]
            info["final_index"] = final
            info["final_obs"] = self.final_observations(final)

        hands, lots = self.deals.draw(idx, over)
        leader = b.where(over, lots, b.take(self.t_next_seat, b.take(self.leader, idx)))
        scores = b.where(over[:, None], 0, scores)
        number = b.where(over, 0, b.take(self.hand_number, idx) + 1)
        self._start_hands(idx, hands, leader, scores, number)

    def _spread(self, winner: Any, amount: Any) -> Any:
        """Rewards (K, n) float64 as ``rules._spread``: +amount to the winner's side, the
        opposite split over the other side(s); zero when there is no winner or no amount."""
        b = self.b
        valid = (winner >= 0) & (amount != 0)
        safe = b.where(winner >= 0, winner, 0)
        if self.partnership:
            same = self.t_team[None, :] == b.take(self.t_team, safe)[:, None]
            loss = -amount
        else:
            same = self.seats[None, :] == safe[:, None]
            loss = -amount / (self.n - 1)
        spread = b.where(same, amount[:, None], loss[:, None])
        return b.where(valid[:, None], spread, 0.0)

    def _blank_info(self) -> dict[str, Any]:
        b = self.b
        B, n = self.num_envs, self.n
        return {
            "hand_over": b.zeros(B, "bool"),
            "hand_winner": b.zeros(B, "i64") - 1,
            "hand_blocked": b.zeros(B, "bool"),
            "hand_pips": b.zeros((B, n), "i64"),
            "hand_points": b.zeros((B, n), "i64"),
            "match_over": b.zeros(B, "bool"),
            "match_winner": b.zeros(B, "i64") - 1,
            "match_winners": b.zeros((B, n), "bool"),
            "final_index": b.zeros(0, "i64"),
            "final_obs": b.zeros((0, n, self.obs_width), "f32"),
        }

    # ---- legality ----------------------------------------------------------------------
    def _spread_bits(self, tiles: Any) -> Any:
        """Tile t's bit moved to bit 2t (its action on the left end)."""
        b = self.b
        return b.take(self.t_spread14, tiles & _LOW14) | (
            b.take(self.t_spread14, tiles >> 14) << 28
        )

    def _legal_for(self, hand: Any) -> Any:
        """(2T+1)-bit legal words of the seat to act holding ``hand``."""
        word = self._spread_bits(hand & self.fit_left) | (
            self._spread_bits(hand & self.fit_right) << 1
        )
        return self.b.where(word == 0, self.L.PASS_BIT, word)

    def _popcount(self, masks: Any) -> Any:
        b = self.b
        return b.take(self.t_pop14, masks & _LOW14) + b.take(self.t_pop14, masks >> 14)

    # ---- observations ------------------------------------------------------------------
    @property
    def obs_width(self) -> int:
        """Length of the vectors handed out: the observation, plus the history if kept."""
        return self.L.obs_dim + (self.hist_dim if self.history else 0)

    def observe(self) -> tuple[Any, Any]:
        """(obs (B, OBS_DIM) float32, mask (B, 2T+1) int8) of the seat to act in each game."""
        b = self.b
        flat = self.row_base + self.current
        full = b.empty((self.num_envs, self.obs_width), "f32")
        obs = full[:, : self.L.obs_dim] if self.history else full
        self._head(obs, b.take(self.hands_flat, flat), self.rows, self.current)
        obs[:, self.L.HEAD_END :] = b.take_rows(self.tail, flat)
        if self.history:
            self._write_history(full, self.rows, self.current)
        return full, b.unpack_mask(self.legal, self.L.num_actions)

    def final_observations(self, idx: Any) -> Any:
        """(K, n, OBS_DIM): every seat's observation of games ``idx`` as they stand, with
        nobody to act (what the AEC env shows each agent once the episode has ended)."""
        rows, seat = self._rows_by_seat(idx)
        full = self.b.empty((int(rows.shape[0]), self.obs_width), "f32")
        obs = full[:, : self.L.obs_dim] if self.history else full
        self._head(obs, self.b.take(self.hands_flat, rows * self.n + seat), rows, seat)
        obs[:, self.L.HEAD_END :] = self._tail(rows, seat, to_act=False)
        if self.history:
            self._write_history(full, rows, seat)
        return full.reshape(int(idx.shape[0]), self.n, self.obs_width)

    def _rows_by_seat(self, idx: Any) -> tuple[Any, Any]:
        """Each game of ``idx`` repeated once per seat, with the seats 0..n-1."""
        rows = (idx[:, None] + self.seats[None, :] * 0).reshape(-1)
        seat = (idx[:, None] * 0 + self.seats[None, :]).reshape(-1)
        return rows, seat

    def _rotate(self, packed: Any, width: int, seat: Any) -> Any:
        """Per-seat fields packed ``width`` bits per absolute seat, re-packed by relative
        seat (relative seat r = absolute seat (seat + r) % n)."""
        total = width * self.n
        shift = seat * width
        return ((packed >> shift) | (packed << (total - shift))) & ((1 << total) - 1)

    def _head(self, out: Any, hand: Any, rows: Any, seat: Any) -> None:
        """Write positions 0..HEAD_END-1 (hand, line, ends, counts, voids) of ``out``."""
        b = self.b
        L = self.L
        every = rows is self.rows
        played = self.played if every else b.take(self.played, rows)
        ends = self.ends if every else b.take(self.ends, rows)
        voids = self.voids if every else b.take(self.voids, rows)
        counts = self.counts if every else b.take(self.counts, rows)
        words = b.empty((int(rows.shape[0]), 2), "i64")
        words[:, 0] = hand | (played << L.LINE0) | b.take(self.t_ends_word0, ends)
        if L.VOIDS_AT == "word1":  # the standard set: voids at positions 75..102
            words[:, 1] = b.take(self.t_ends_word1, ends) | (
                self._rotate(voids, L.VOID_BITS, seat) << L.VOIDS_SHIFT
            )
        elif L.VOIDS_AT == "word0":  # small sets: the whole head fits in word 0
            words[:, 0] |= self._rotate(voids, L.VOID_BITS, seat) << L.VOIDS_SHIFT
            words[:, 1] = 0
        else:  # the voids cross position 64: low bits in word 0, the rest in word 1
            rotated = self._rotate(voids, L.VOID_BITS, seat)
            words[:, 0] |= (rotated & ((1 << L.VOIDS_SPLIT) - 1)) << L.VOIDS_SHIFT
            words[:, 1] = b.take(self.t_ends_word1, ends) | (rotated >> L.VOIDS_SPLIT)
        out[:, : L.HEAD_END] = b.unpack_bits(words, scratch=every)[:, : L.HEAD_END]
        out[:, L.COUNTS] = b.take_rows(self.t_counts_f32, self._rotate(counts, L.COUNT_BITS, seat))

    def _tail(self, rows: Any, seat: Any, to_act: bool) -> Any:
        """Positions HEAD_END.. (scores, target, leader, to_act, seats, partnership,
        out_of_play) for observer ``seat`` of games ``rows``; to_act marks the observer."""
        b = self.b
        n = self.n
        m = int(rows.shape[0])
        ar = b.arange(m)
        tail = b.zeros((m, self.L.TAIL_DIM), "f32")
        rel = (seat[:, None] + self.seats[None, :]) % n  # absolute seat of relative seat r
        scores = b.take(self.scores.reshape(-1), rows[:, None] * n + rel)
        tail[:, self.L.T_SCORES : self.L.T_SCORES + n] = b.f32(scores)
        tail[:, self.L.T_TARGET] = float(self.target)
        tail[ar, self.L.T_LEADER + (b.take(self.leader, rows) - seat) % n] = 1.0
        if to_act:
            tail[:, self.L.T_TO_ACT] = 1.0
        tail[:, self.L.T_SEATS : self.L.T_SEATS + n] = 1.0
        tail[:, self.L.T_PART] = float(self.partnership)
        tail[:, self.L.T_OUT] = b.f32(b.take(self.out_of_play, rows))
        return tail

    # ---- errors and inspection ---------------------------------------------------------
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
