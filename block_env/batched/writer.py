"""The batched engine's observation writer: the vectors ``Engine.observe`` and
``Engine.final_observations`` hand out, equal to ``block_env.observation.encode`` bit for bit
(``tests/fast_paths/test_batched_vs_aec.py``).

Observations are staged as bytes, one per position, in int64 words: the head's 0/1 flags
(hand, line, ends, voids) are packed in two bit words and unpacked by one table gather, the
tile counts and the tail (scores, target, leader, ...: kept per game and observer as words
from the start of each hand) are OR-ed into the words that hold them, one column at a time,
and one cast turns the bytes into the float32 rows handed out. Scores and a target above 255
do not fit a byte: they are rewritten as floats then (``_wide_fix``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from block_env.observation import MAX_SEATS


class ObservationWriter:
    """The observation half of ``Engine`` (a base class it inherits from): writes what each
    seat sees from the engine's state arrays (``hands_flat``, ``played``, ``ends``,
    ``voids``, ``counts``, ``scores``, ``tail``, ``hist``...) and the layout tables ``L``.
    Its own tables are engine attributes too, built by ``_init_writer``, so a saved engine
    state (``checkpoint``) holds the same arrays as before."""

    def _init_writer(self) -> None:
        """Build the staging tables; needs the engine's ``b``, ``L``, ``n``, ``target``,
        ``partnership`` and ``full_out``."""
        b, n = self.b, self.n
        self.t_ends_word0 = b.table(self.L.ENDS_WORD0)  # the head's end flags, by ends
        self.t_ends_word1 = b.table(self.L.ENDS_WORD1)
        # the 4 tile counts by relative seat as bytes, gathered by (observer << n*bits) | the
        # counts packed by absolute seat: the rotation to the observer is in the table
        cb = self.L.COUNT_BITS
        packed = np.arange(1 << (n * cb), dtype=np.int64)
        rel = np.arange(MAX_SEATS)
        counts_by_seat = np.zeros((n, packed.shape[0], MAX_SEATS), dtype=np.uint8)
        for observer in range(n):
            shift = cb * ((observer + rel[:n]) % n)
            counts_by_seat[observer, :, :n] = (packed[:, None] >> shift) & ((1 << cb) - 1)
        self.t_counts_u8 = b.table(counts_by_seat.reshape(-1, MAX_SEATS))  # in saved states
        self.counts_seat_shift = n * cb
        # the staged words: the head's flags, then the counts and the tail OR-ed in as bytes
        dim = self.L.obs_dim
        self.obs_chunks = (dim + 7) // 8
        self.tail_c0 = self.L.HEAD_END // 8  # the first word holding tail bytes
        cs, ce = self.L.COUNTS.start, self.L.COUNTS.stop
        self.cnt_c0, self.cnt_c1 = cs // 8, (ce + 7) // 8
        cw = np.zeros((counts_by_seat.shape[1] * n, (self.cnt_c1 - self.cnt_c0) * 8), np.uint8)
        cw[:, cs - 8 * self.cnt_c0 : ce - 8 * self.cnt_c0] = counts_by_seat.reshape(-1, MAX_SEATS)
        # one table per word (a column of the staged words is one call, a block is slower)
        self.t_counts_words = [b.table(np.ascontiguousarray(w)) for w in cw.view(np.int64).T]
        # the tails of a hand's observations as those words, for all n observers of a game at
        # once: all but the scores by (to_act flag, leader); the absolute seat of (observer, rel)
        self.t_tail_by_leader = [b.table(t) for t in self._tail_table()]
        self.t_rot = b.table((np.arange(n)[:, None] + np.arange(n)[None, :]).reshape(-1) % n)
        self.wide = self.target > 255  # some value needs the float rewrite (``_needs_wide``)
        self._init_to_act_tables()

    @property
    def obs_width(self) -> int:
        """Length of the vectors handed out: the observation, plus the history if kept."""
        return self.L.obs_dim + (self.hist_dim if self.history else 0)

    def observe(self) -> tuple[Any, Any]:
        """(obs (B, obs_dim) float32, mask (B, 2T+1) int8) of the seat to act in each game."""
        if self.compiled is not None:
            return self.compiled.observe()
        b = self.b
        kept, self._to_act = self._to_act, None
        if kept is not None and kept[0] is self.current:
            flat, hand = kept[1], kept[2]
        else:
            flat = self.row_base + self.current
            hand = b.take(self.hands_flat, flat)
        tails = b.take_rows(self.tail, flat)
        full = self._observations(hand, self.rows, self.current, tails, final=False)
        return full, b.unpack_mask(self.legal, self.L.num_actions)

    def final_observations(self, idx: Any) -> Any:
        """(K, n, obs_dim): every seat's observation of games ``idx`` as they stand, with
        nobody to act (what the AEC env shows each agent once the episode has ended)."""
        b = self.b
        k = int(idx.shape[0])
        rows, seat = self._rows_by_seat(idx)
        tails = self._tails(
            b.take(self.leader, idx),
            b.take_rows(self.scores, idx),
            b.take(self.out_of_play, idx),
            to_act=False,
        )
        hand = b.take(self.hands_flat, b.take_rows(self.t_flat, idx).reshape(-1))
        full = self._observations(hand, rows, seat, tails.reshape(k * self.n, -1), final=True)
        return full.reshape(k, self.n, self.obs_width)

    def observations_of(self, rows: Any, seat: Any) -> Any:
        """(M, obs_width) float32: the observation of seat ``seat[i]`` in game ``rows[i]`` as
        the game stands (what the AEC env's ``observe`` gives that seat: the seat to act
        marked relative to it), for any seats, whether to act or not."""
        b, n = self.b, self.n
        flat = rows * n + seat
        rel = (b.take(self.current, rows) - seat + n) % n  # the seat to act, relative
        # the tails kept per observer mark that observer as the one to act: moved to ``rel``
        tails = (b.take_rows(self.tail, flat) & self.t_to_act_keep) | b.take_rows(
            self.t_to_act_rel, rel
        )
        return self._observations(b.take(self.hands_flat, flat), rows, seat, tails, final=False)

    def every_seat_observations(self) -> Any:
        """(B, n, obs_width) float32: every seat's observation of every game as it stands."""
        full = self.observations_of(self.t_game_rep.reshape(-1), self.t_seat_rep)
        return full.reshape(self.num_envs, self.n, self.obs_width)

    def _observations(self, hand: Any, rows: Any, seat: Any, tails: Any, final: bool) -> Any:
        """(M, obs_width) float32: the observations of observer ``seat[i]`` holding
        ``hand[i]`` in game ``rows[i]``, given their tail words (``_tails``): staged as
        bytes (``_write``), the wide values rewritten (``_needs_wide``), the history
        appended when kept. ``final``: the games' final positions (the episode has ended)."""
        b = self.b
        full = b.empty((int(rows.shape[0]), self.obs_width), "f32")
        obs = full[:, : self.L.obs_dim] if self.history else full
        self._write(obs, hand, rows, seat, tails)
        if self.wide or final:
            scores = self.scores if rows is self.rows else b.take_rows(self.scores, rows)
            if self._needs_wide(scores, final):
                self._wide_fix(obs, scores, seat)
        if self.history:
            self._write_history(full, rows, seat)
        return full

    def _needs_wide(self, scores: Any, final: bool) -> bool:
        """Whether a score or the target of these rows (``scores`` (M, n)) is above 255
        and must be rewritten as a float (``_wide_fix``). In play, ``self.wide`` answers:
        it is set by a target above 255 and, for good, by a score above 255 dealt into
        play; otherwise every score in play stays below the target (the first side to reach
        it ends the episode). A final position may hold a score above 255 below such a
        target (the hand that reached it), so its scores are read."""
        return bool(self.wide) or (final and self.b.any(scores > 255))

    def _init_to_act_tables(self) -> None:
        """``t_to_act_rel`` (n, W): by relative seat r, the tail words with only the to_act
        byte of r set; ``t_to_act_keep`` (W,): every tail bit but the to_act bytes'.
        Constants (read-only), so not part of a saved engine state."""
        n = self.n
        at = self.L.HEAD_END - 8 * self.tail_c0 + self.L.T_TO_ACT
        flags = np.zeros((n, 8 * (self.obs_chunks - self.tail_c0)), dtype=np.uint8)
        flags[np.arange(n), at + np.arange(n)] = 1
        words = flags.view(np.int64)
        self.t_to_act_keep = self._const(~np.bitwise_or.reduce(words, axis=0))
        self.t_to_act_rel = self._const(np.ascontiguousarray(words))

    def _rotate(self, packed: Any, width: int, seat: Any) -> Any:
        """Per-seat fields packed ``width`` bits per absolute seat, re-packed by relative
        seat (relative seat r = absolute seat (seat + r) % n)."""
        total = width * self.n
        shift = seat * width
        return ((packed >> shift) | (packed << (total - shift))) & ((1 << total) - 1)

    def _write(self, out: Any, hand: Any, rows: Any, seat: Any, tails: Any) -> None:
        """Write the observation (positions 0..OBS_DIM-1) of ``seat`` in games ``rows``
        holding ``hand`` into ``out``, given its tail words ``tails`` (see ``_tails``): the
        head's flags as two bit words unpacked to one byte per position, the counts and the
        tail OR-ed in as bytes, then one cast of the bytes to float32."""
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
        staged = b.unpack_words(words)  # (M, 16) int64: byte j of word i = bit j of the head
        # the counts (0..15) and the tail ride in bytes the head leaves 0
        which = (seat << self.counts_seat_shift) | counts
        for j, table in enumerate(self.t_counts_words):
            staged[:, self.cnt_c0 + j] |= b.take(table, which)
        if b.kernels == "numpy" and int(rows.shape[0]) >= 64:  # a column at a time beats a
            for j in range(self.obs_chunks - self.tail_c0):  # narrow block on many rows
                staged[:, self.tail_c0 + j] |= tails[:, j]
        else:  # few rows, or torch: one call
            staged[:, self.tail_c0 : self.obs_chunks] |= tails
        b.assign(out, b.as_bytes(staged)[:, : L.obs_dim])

    def _wide_fix(self, out: Any, scores: Any, seat: Any) -> None:
        """Rewrite the scores and target of ``out`` as floats (a value above 255 does not fit
        the byte staging): ``scores`` (M, n) of each row's game, ``seat`` its observer. With a
        target up to 255 only final observations need it (scores in play stay below the
        target: the first side to reach it is alone at the top); ``self.wide`` turns on for
        good if a score above 255 is ever dealt into play, which keeps it right regardless."""
        b = self.b
        L, n = self.L, self.n
        m = int(seat.shape[0])
        which = (self.seats[None, :] * 0 + b.arange(m)[:, None]) * n
        rotated = b.take(scores.reshape(-1), which + (seat[:, None] + self.seats[None, :]) % n)
        sc = L.HEAD_END + L.T_SCORES
        out[:, sc : sc + n] = b.f32(rotated)
        out[:, L.HEAD_END + L.T_TARGET] = float(self.target)

    def _tail_table(self) -> list[np.ndarray]:
        """By to_act flag (0, 1): (n, n * W) int64, by leader, the tail words (``_tails``) of
        the n observers with everything but the scores: target (when it fits a byte), leader
        (relative to the observer), to_act, seats, partnership, and a full deal's tiles out
        of play."""
        L, n = self.L, self.n
        width = 8 * (self.obs_chunks - self.tail_c0)
        at = L.HEAD_END - 8 * self.tail_c0  # byte of position HEAD_END in the tail words
        table = np.zeros((2, n, n, width), dtype=np.uint8)  # [to_act, leader, observer]
        table[..., at + L.T_TARGET] = self.target if self.target <= 255 else 0
        table[1, :, :, at + L.T_TO_ACT] = 1
        table[..., at + L.T_SEATS : at + L.T_SEATS + n] = 1
        table[..., at + L.T_PART] = int(self.partnership)
        table[..., at + L.T_OUT] = self.full_out
        for leader in range(n):
            for observer in range(n):
                table[:, leader, observer, at + L.T_LEADER + (leader - observer) % n] = 1
        return [t.reshape(n, -1).view(np.int64) for t in table]

    def _tails(self, leader: Any, scores: Any, out_of_play: Any, to_act: bool) -> Any:
        """(K, n, W) int64: the words ``tail_c0..`` of the staged observation of K games for
        each observer 0..n-1, holding as bytes the positions HEAD_END.. (scores, target,
        leader, to_act, seats, partnership, out_of_play; scores wrap above 255, rewritten
        then); to_act marks the observer. ``out_of_play`` is (K,) or one number. One gather
        of a table by leader holds all but the scores (and an out_of_play other than a full
        deal's)."""
        b = self.b
        n, L = self.n, self.L
        k = int(leader.shape[0])
        tails = b.take_rows(self.t_tail_by_leader[int(to_act)], leader).reshape(k, n, -1)
        as_bytes = b.as_bytes(tails)  # (K, n, 8 W) uint8 view
        at = L.HEAD_END - 8 * self.tail_c0
        rotated = b.take_cols(scores, self.t_rot).reshape(k, n, n)  # [g, observer, rel]
        as_bytes[:, :, at + L.T_SCORES : at + L.T_SCORES + n] = b.u8(rotated)
        if isinstance(out_of_play, int):
            if out_of_play != self.full_out:
                as_bytes[:, :, at + L.T_OUT] = out_of_play
        else:
            as_bytes[:, :, at + L.T_OUT] = b.u8(out_of_play)[:, None]
        return tails

    def _write_history(self, out: Any, rows: Any, seat: Any) -> None:
        """Write the history of games ``rows`` seen by observer ``seat`` into the columns
        obs_dim.. of ``out`` (relative seats in one gather, padded to 4 with zeros)."""
        b = self.b
        n, w, start = self.n, self.H * self.S, self.L.obs_dim
        m = int(rows.shape[0])
        which = rows[:, None] * n + (seat[:, None] + self.seats[None, :]) % n
        out[:, start : start + n * w] = b.take_rows(self.hist, which.reshape(-1)).reshape(m, n * w)
        if n < MAX_SEATS:
            out[:, start + n * w :] = 0.0
