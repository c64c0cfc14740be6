"""The batched Block engine: B independent games as arrays with a leading batch dimension.

State per game (all int64): ``hands`` (B, n) 28-bit tile masks by absolute seat, ``played``
(line tiles), ``left``/``right`` end values (-1 on the empty line), ``fit_left``/``fit_right``
(tiles that fit each end; on the empty line the opening choices and 0), ``current``,
``leader``, ``voids`` (7 bits per seat packed in one word), ``counts`` (tiles in hand, 3 bits
per seat packed in one word), ``scores`` (B, n), ``out_of_play`` and ``hand_number``. The
legal actions of the seat to act are kept as one 57-bit word per game (bit a = action a).

Every operation works on all games at once; Python loops run only over seats (at most 4) or
over the bisection steps of a bit search. The rules are those of ``block_env.rules``, and
the observation is ``block_env.observation.encode`` bit for bit: ``tests/test_batched.py``
checks both against the AEC env step by step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from block_env.batched import layout as L
from block_env.config import BlockConfig
from block_env.observation import MAX_SEATS, OBS_DIM
from block_env.setup import Setup
from block_env.tiles import NUM_ACTIONS, NUM_TILES, describe_action

_LOW14 = (1 << 14) - 1
_STATE_ARRAYS = (
    "hands", "played", "left", "right", "fit_left", "fit_right", "current", "leader",
    "voids", "counts", "scores", "out_of_play", "hand_number", "legal", "tail",
)  # fmt: skip


class Engine:
    """Array state and transition of B games; ``BatchedEnv`` is the public wrapper."""

    def __init__(
        self, config: BlockConfig, num_envs: int, backend: Any, deals: Any, auto_pass: bool
    ) -> None:
        b = self.b = backend
        self.config = config
        self.n = n = config.num_players
        self.num_envs = num_envs
        self.deals = deals
        self.auto_pass = auto_pass
        self.partnership = config.partnership
        self.target = config.target
        self.hand_mode = config.episode == "hand"
        # lookup tables on the backend's device
        self.t_tile_bit = b.table(L.TILE_BIT)
        self.t_tile_low = b.table(L.TILE_LOW)
        self.t_tile_high = b.table(L.TILE_HIGH)
        self.t_tile_sum = b.table(L.TILE_SUM)
        self.t_with_value = b.table(L.WITH_VALUE)
        self.t_value_bit = b.table(L.VALUE_BIT)
        self.t_ends = b.table(L.ENDS_WORD)
        self.t_spread = b.table(L.SPREAD14)
        self.t_pop = b.table(L.POP14)
        self.t_pips_lo = b.table(L.PIPS_LO14)
        self.t_pips_hi = b.table(L.PIPS_HI14)
        self.t_counts = b.table(L.COUNTS_F32)
        self.t_open_rank = b.table(L.OPEN_RANK)
        self.t_team = b.table(np.array(config.teams, dtype=np.int64))
        self.t_count_shift = b.table(L.COUNT_BITS * np.arange(n, dtype=np.int64))
        self.t_shifts28 = b.table(np.arange(NUM_TILES, dtype=np.int64))
        self.seats = b.arange(n)
        self.rows = b.arange(num_envs)
        # state
        B = num_envs
        self.hands = b.zeros((B, n), "i64")
        self.played = b.zeros(B, "i64")
        self.left = b.zeros(B, "i64") - 1
        self.right = b.zeros(B, "i64") - 1
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
        # tail of the observation (scores, target, leader, ...) per game and observer
        self.tail = b.zeros((B, n, L.TAIL_DIM), "f32")

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
        self.legal = self._legal_for(self.hands[rows, self.current])

    def _start_hands(self, idx: Any, hands: Any, leader: Any, scores: Any, number: Any) -> None:
        b = self.b
        k = int(idx.shape[0])
        if self.config.opener == "highest_double":
            leader, opening = self._opening(hands)
            fit_left = self.t_tile_bit[opening]
        else:
            fit_left = b.zeros(k, "i64") + L.ALL
        self.hands[idx] = hands
        self.played[idx] = 0
        self.left[idx] = -1
        self.right[idx] = -1
        self.fit_left[idx] = fit_left
        self.fit_right[idx] = 0
        self.current[idx] = leader
        self.leader[idx] = leader
        self.voids[idx] = 0
        self.counts[idx] = (self._popcount(hands) << self.t_count_shift).sum(1)
        self.scores[idx] = scores
        self.out_of_play[idx] = NUM_TILES - self._popcount(hands.sum(1))
        self.hand_number[idx] = number
        rows, seat = self._rows_by_seat(idx)
        self.tail[idx] = self._tail(rows, seat, to_act=True).reshape(k, self.n, L.TAIL_DIM)

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
        n = self.n
        rows = self.rows
        ok = (actions >= 0) & (actions < NUM_ACTIONS)
        a = b.where(ok, actions, 0)
        ok = ok & (((self.legal >> a) & 1) == 1)
        if not b.all(ok):
            raise ValueError(self._illegal_message(actions, ok))

        c = self.current
        tile = a >> 1
        end = a & 1
        is_pass = a == L.PASS_TILE * 2
        bit = self.t_tile_bit[tile]  # 0 for a pass
        actor_hand = self.hands[rows, c] ^ bit
        self.hands[rows, c] = actor_hand
        self.played = self.played | bit
        self.counts = self.counts - ((bit >> tile) << (c * L.COUNT_BITS))
        left, right = self.left, self.right
        shown = self.t_value_bit[left + 1] | self.t_value_bit[right + 1]
        self.voids = self.voids | (b.where(is_pass, shown, 0) << (c * L.VOID_BITS))
        opening = left < 0
        new_value = self.t_tile_sum[tile] - b.where(end == 1, right, left)
        self.left = b.where(
            opening, self.t_tile_low[tile], b.where(is_pass | (end == 1), left, new_value)
        )
        self.right = b.where(
            opening, self.t_tile_high[tile], b.where(is_pass | (end == 0), right, new_value)
        )
        self.fit_left = self.t_with_value[self.left + 1]
        self.fit_right = self.t_with_value[self.right + 1]
        self.current = (c + 1) % n

        domino = actor_hand == 0
        open_tiles = (self.fit_left | self.fit_right)[:, None]
        stuck = ((self.hands & open_tiles) == 0).all(1)
        ended = domino | stuck

        rewards = b.zeros((self.num_envs, n), "f32")
        terminated = b.zeros(self.num_envs, "bool")
        info = self._blank_info()
        if b.any(ended):
            idx = b.nonzero(ended)
            self._end_hands(idx, domino[idx], c[idx], rewards, terminated, info)
        self.legal = self._legal_for(self.hands[rows, self.current])
        if self.auto_pass:
            self._auto_pass()
        return rewards, terminated, info

    def _auto_pass(self) -> None:
        """Play the forced passes: at most n-1 in a row, since a position where nobody can
        place has already ended the hand."""
        b = self.b
        for _ in range(self.n - 1):
            forced = self.legal == L.PASS_BIT
            if not b.any(forced):
                return
            c = self.current
            shown = self.t_value_bit[self.left + 1] | self.t_value_bit[self.right + 1]
            self.voids = self.voids | (b.where(forced, shown, 0) << (c * L.VOID_BITS))
            self.current = b.where(forced, (c + 1) % self.n, c)
            self.legal = self._legal_for(self.hands[self.rows, self.current])

    def _end_hands(
        self, idx: Any, domino: Any, actor: Any, rewards: Any, terminated: Any, info: dict
    ) -> None:
        """Score the hands that just ended (games ``idx``), fill rewards and info, and deal
        the next hand or, where the episode is over, a new match (same-step autoreset)."""
        b = self.b
        n = self.n
        k = int(idx.shape[0])
        ar = b.arange(k)
        hands = self.hands[idx]
        pips = self.t_pips_lo[hands & _LOW14] + self.t_pips_hi[hands >> 14]
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
        gained = b.where(domino, total - side_pips[ar, actor_side], total - 2 * low)
        gained = b.where(tied, 0, gained)
        winner = b.where(tied, -1, b.where(domino, actor, win_side))
        on_win_side = (self.t_team[None, :] == win_side[:, None]) & (~tied)[:, None]
        points = b.where(on_win_side, gained[:, None], 0)
        scores = self.scores[idx] + points
        self.scores[idx] = scores

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
            winners = (self.t_team[None, :] == self.t_team[first][:, None]) & decided[:, None]

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
        info["winner"][idx] = winner
        info["blocked"][idx] = ~domino
        info["pips"][idx] = pips
        info["points"][idx] = points
        info["match_winner"][idx] = match_winner
        info["match_winners"][idx] = winners
        if b.any(over):
            final = idx[over]
            info["final_index"] = final
            info["final_obs"] = self.final_observations(final)

        hands, lots = self.deals.draw(idx, over)
        leader = b.where(over, lots, (self.leader[idx] + 1) % n)
        scores = b.where(over[:, None], 0, scores)
        number = b.where(over, 0, self.hand_number[idx] + 1)
        self._start_hands(idx, hands, leader, scores, number)

    def _spread(self, winner: Any, amount: Any) -> Any:
        """Rewards (K, n) float64 as ``rules._spread``: +amount to the winner's side, the
        opposite split over the other side(s); zero when there is no winner or no amount."""
        b = self.b
        valid = (winner >= 0) & (amount != 0)
        safe = b.where(winner >= 0, winner, 0)
        if self.partnership:
            same = self.t_team[None, :] == self.t_team[safe][:, None]
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
            "winner": b.zeros(B, "i64") - 1,
            "blocked": b.zeros(B, "bool"),
            "pips": b.zeros((B, n), "i64"),
            "points": b.zeros((B, n), "i64"),
            "match_winner": b.zeros(B, "i64") - 1,
            "match_winners": b.zeros((B, n), "bool"),
            "final_index": b.zeros(0, "i64"),
            "final_obs": b.zeros((0, n, OBS_DIM), "f32"),
        }

    # ---- legality ----------------------------------------------------------------------
    def _spread_bits(self, tiles: Any) -> Any:
        return self.t_spread[tiles & _LOW14] | (self.t_spread[tiles >> 14] << 28)

    def _legal_for(self, hand: Any) -> Any:
        """57-bit legal words of the seat to act holding ``hand``."""
        word = self._spread_bits(hand & self.fit_left) | (
            self._spread_bits(hand & self.fit_right) << 1
        )
        return self.b.where(word == 0, L.PASS_BIT, word)

    def _popcount(self, masks: Any) -> Any:
        return self.t_pop[masks & _LOW14] + self.t_pop[masks >> 14]

    # ---- observations ------------------------------------------------------------------
    def observe(self) -> tuple[Any, Any]:
        """(obs (B, OBS_DIM) float32, mask (B, 57) int8) of the seat to act in each game."""
        b = self.b
        rows, cur = self.rows, self.current
        obs = b.empty((self.num_envs, OBS_DIM), "f32")
        self._head(obs, self.hands[rows, cur], rows, cur)
        obs[:, L.HEAD_END :] = self.tail[rows, cur]
        return obs, b.unpack_mask(self.legal, NUM_ACTIONS)

    def final_observations(self, idx: Any) -> Any:
        """(K, n, OBS_DIM): every seat's observation of games ``idx`` as they stand, with
        nobody to act (what the AEC env shows each agent once the episode has ended)."""
        rows, seat = self._rows_by_seat(idx)
        obs = self.b.empty((int(rows.shape[0]), OBS_DIM), "f32")
        self._head(obs, self.hands[rows, seat], rows, seat)
        obs[:, L.HEAD_END :] = self._tail(rows, seat, to_act=False)
        return obs.reshape(int(idx.shape[0]), self.n, OBS_DIM)

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
        every = rows is self.rows
        played = self.played if every else self.played[rows]
        left = self.left if every else self.left[rows]
        right = self.right if every else self.right[rows]
        voids = self.voids if every else self.voids[rows]
        counts = self.counts if every else self.counts[rows]
        ends = self.t_ends[(left + 1) * 8 + (right + 1)]
        word0 = hand | (played << L.LINE0) | ((ends & ((1 << L.ENDS_SPLIT) - 1)) << L.ENDS0)
        word1 = (ends >> L.ENDS_SPLIT) | (self._rotate(voids, L.VOID_BITS, seat) << L.VOIDS_SHIFT)
        bits = b.unpack_bits(b.stack1([word0, word1]), scratch=every)
        out[:, : L.HEAD_END] = bits[:, : L.HEAD_END]
        out[:, L.COUNTS] = self.t_counts[self._rotate(counts, L.COUNT_BITS, seat)]

    def _tail(self, rows: Any, seat: Any, to_act: bool) -> Any:
        """Positions HEAD_END.. (scores, target, leader, to_act, seats, partnership,
        out_of_play) for observer ``seat`` of games ``rows``; to_act marks the observer."""
        b = self.b
        n = self.n
        m = int(rows.shape[0])
        ar = b.arange(m)
        tail = b.zeros((m, L.TAIL_DIM), "f32")
        rel = (seat[:, None] + self.seats[None, :]) % n
        tail[:, L.T_SCORES : L.T_SCORES + n] = b.f32(self.scores[rows][ar[:, None], rel])
        tail[:, L.T_TARGET] = float(self.target)
        tail[ar, L.T_LEADER + (self.leader[rows] - seat) % n] = 1.0
        if to_act:
            tail[:, L.T_TO_ACT] = 1.0
        tail[:, L.T_SEATS : L.T_SEATS + n] = 1.0
        tail[:, L.T_PART] = float(self.partnership)
        tail[:, L.T_OUT] = b.f32(self.out_of_play[rows])
        return tail

    # ---- errors and inspection ---------------------------------------------------------
    def _illegal_message(self, actions: Any, ok: Any) -> str:
        b = self.b
        ok_np = b.to_numpy(ok)
        game = int(np.flatnonzero(~ok_np)[0])
        action = int(b.to_numpy(actions)[game])
        seat = int(b.to_numpy(self.current)[game])
        word = int(b.to_numpy(self.legal)[game])
        legal = [a for a in range(NUM_ACTIONS) if word >> a & 1]
        names = ", ".join(f"{a} ({describe_action(a)})" for a in legal)
        return (
            f"actions[{game}]={action} is not legal in game {game} (seat {seat} to act); "
            f"legal actions: {names}"
        )

    def snapshot(self) -> dict[str, np.ndarray]:
        """The full state as numpy arrays (privileged: every hand). ``voids`` is unpacked to
        (B, n) 7-bit masks and ``counts`` to (B, n) tile counts."""
        b = self.b
        voids = b.to_numpy(self.voids)
        counts = b.to_numpy(self.counts)
        seats = np.arange(self.n)
        return {
            "hands": b.to_numpy(self.hands).copy(),
            "played": b.to_numpy(self.played).copy(),
            "left": b.to_numpy(self.left).copy(),
            "right": b.to_numpy(self.right).copy(),
            "current": b.to_numpy(self.current).copy(),
            "leader": b.to_numpy(self.leader).copy(),
            "voids": (voids[:, None] >> (L.VOID_BITS * seats)) & 127,
            "counts": (counts[:, None] >> (L.COUNT_BITS * seats)) & 7,
            "scores": b.to_numpy(self.scores).copy(),
            "out_of_play": b.to_numpy(self.out_of_play).copy(),
            "hand_number": b.to_numpy(self.hand_number).copy(),
            "legal": b.to_numpy(self.legal).copy(),
        }

    def state_bytes(self) -> int:
        """Bytes held by the state arrays (grows linearly with the number of games)."""
        total = 0
        for name in _STATE_ARRAYS:
            x = getattr(self, name)
            total += int(x.nbytes) if hasattr(x, "nbytes") else x.element_size() * x.nelement()
        return total


assert MAX_SEATS == 4
