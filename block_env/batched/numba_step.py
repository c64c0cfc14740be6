"""The engine's step and observation run by the compiled kernels (``kernels="numba"``).

``Engine`` keeps the state arrays and the numpy kernels; with the compiled kernels it hands
``step`` and ``observe`` to a ``NumbaStep``, which calls ``block_env.batched.numba_kernels`` on
those same arrays (so ``reset``, the setups and ``snapshot`` stay the engine's own). Importing
this module imports numba.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from block_env.batched import numba_kernels as kernels


def no_event_outputs(num_envs: int, n: int) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Rewards, terminated and info of ``num_envs`` games on which no hand ended: the arrays
    the step kernel fills in where hands end."""
    info = {
        "hand_over": np.zeros(num_envs, dtype=bool),
        "hand_winner": np.full(num_envs, -1, dtype=np.int64),
        "hand_blocked": np.zeros(num_envs, dtype=bool),
        "hand_pips": np.zeros((num_envs, n), dtype=np.int64),
        "hand_points": np.zeros((num_envs, n), dtype=np.int64),
        "match_over": np.zeros(num_envs, dtype=bool),
        "match_winner": np.full(num_envs, -1, dtype=np.int64),
        "match_winners": np.zeros((num_envs, n), dtype=bool),
    }
    return np.zeros((num_envs, n), dtype=np.float32), np.zeros(num_envs, dtype=bool), info


class NumbaStep:
    """``step`` and ``observe`` of an ``Engine`` by the compiled kernels, on its arrays."""

    def __init__(self, engine: Any) -> None:
        self.e = e = engine
        self.params = kernels.params(e)
        self.observation = kernels.observation_kernels(kernels.layout_key(self.params))
        self._idx = np.empty(e.num_envs, dtype=np.int64)  # the games whose hand ended, first K
        self._over = np.empty(e.num_envs, dtype=bool)
        if not e.history:  # placeholders the kernels never touch
            e.hist = np.zeros((1, 1), dtype=np.float32)
            e.turn = np.zeros(1, dtype=np.int64)
        self.t_start_tails = e.t_tail_by_leader[1].view(np.uint8)  # a hand starts: to act
        self.t_final_tails = e.t_tail_by_leader[0].view(np.uint8)  # the end: nobody to act
        if hasattr(e.deals, "hands_from_permutations"):
            e.deals.hands_from_permutations = kernels.hands_from_permutations
        self._compile_now()

    # ---- the kernels on the engine's arrays ----------------------------------------------
    def _play(self, actions: np.ndarray, rewards: Any, terminated: Any, info: dict) -> int:
        e = self.e
        return kernels.play(
            self.params, actions, e.hands, e.in_hands, e.played, e.counts, e.voids, e.ends,
            e.fit, e.current, e.scores, e.hist, e.turn, e.t_tile_bit, e.t_shown,
            e.t_next_ends, e.t_fit, e.t_pips_lo14, e.t_pips_hi14, e.t_side_seats, self._idx,
            self._over, rewards, info["hand_winner"], info["hand_pips"], info["hand_points"],
            terminated, info["match_winner"], info["match_winners"], info["hand_over"],
            info["hand_blocked"],
        )  # fmt: skip

    def _deal(self, idx: np.ndarray, hands: Any, lots: Any, over: np.ndarray) -> bool:
        e = self.e
        return kernels.deal(
            self.params, idx, idx.shape[0], np.ascontiguousarray(hands),
            np.ascontiguousarray(lots), over, e.hands, e.in_hands, e.played, e.ends, e.fit,
            e.current, e.leader, e.voids, e.counts, e.scores, e.out_of_play, e.hand_number,
            e.hist, e.turn, e.tail.view(np.uint8), self.t_start_tails, e.t_tile_bit,
            e.t_open_rank, e.L.ALL, e.full_out,
        )  # fmt: skip

    def _legal(self, current: np.ndarray) -> None:
        e = self.e
        kernels.legal_actions(
            self.params, e.hands, e.fit, e.ends, current, e.voids, e.legal, e.hist, e.turn,
            e.t_shown, e.t_both_lo, e.t_both_hi, e.t_fit_actions, e.auto_pass,
        )  # fmt: skip

    def _observe_into(self, current: np.ndarray, obs: np.ndarray, mask: np.ndarray) -> None:
        e = self.e
        self.observation.observe(
            e.hands, current, e.played, e.ends, e.voids, e.counts, e.legal, e.scores,
            e.tail.view(np.uint8), e.hist, e.t_ends_word0, e.t_ends_word1, bool(e.wide),
            e.target, obs, mask,
        )  # fmt: skip

    def final_observations(self, idx: np.ndarray) -> np.ndarray:
        """(K, n, width): every seat's observation of games ``idx``, nobody to act."""
        e = self.e
        obs = np.empty((idx.shape[0] * e.n, e.obs_width), dtype=np.float32)
        self.observation.final_observe(
            idx, e.hands, e.played, e.ends, e.voids, e.counts, e.leader, e.scores,
            e.out_of_play, e.hist, self.t_final_tails, e.t_ends_word0, e.t_ends_word1,
            e.target, obs,
        )  # fmt: skip
        return obs.reshape(idx.shape[0], e.n, e.obs_width)

    def _compile_now(self) -> None:
        """Compile (or load from the disk cache) every kernel now, on empty batches: no pause
        the first time a hand or a match ends."""
        e = self.e
        none = np.zeros(0, dtype=np.int64)
        kernels.first_illegal(none, e.legal, e.L.num_actions)
        kernels.select_bits(none, np.zeros(0, np.float32 if e.b.name == "torch" else np.float64))
        kernels.hands_from_permutations(np.zeros((0, e.L.num_tiles), dtype=np.int64), e.n, 1)
        self._play(none, *no_event_outputs(0, e.n))
        self._deal(none, np.zeros((0, e.n), dtype=np.int64), none, np.zeros(0, dtype=bool))
        self._legal(e.current[:0])
        self.final_observations(none)
        obs = np.zeros((0, e.obs_width), dtype=np.float32)
        self._observe_into(e.current[:0], obs, np.zeros((0, e.L.num_actions), dtype=np.int8))

    # ---- the engine's step and observation -----------------------------------------------
    def step(self, actions: np.ndarray) -> tuple[Any, Any, dict[str, Any]]:
        """``Engine.step``: the move and the scoring of the hands that ended, their final
        observations, the next deals, the legal actions (and forced passes)."""
        e = self.e
        actions = np.ascontiguousarray(actions)
        if kernels.first_illegal(actions, e.legal, e.L.num_actions) >= 0:
            e._refuse(actions)
        rewards, terminated, info = no_event_outputs(e.num_envs, e.n)
        k = self._play(actions, rewards, terminated, info)
        info["match_over"] = terminated.copy()
        idx, over = self._idx[:k].copy(), self._over[:k].copy()
        info["final_index"] = final = idx[over]  # before the deal: the final positions
        info["final_obs"] = self.final_observations(final)
        if k:
            hands, lots = e.deals.draw(idx, over)
            e.wide = self._deal(idx, hands, lots, over) or e.wide
        self._legal(e.current)
        return rewards, terminated, info

    @staticmethod
    def sample(words: np.ndarray, u: np.ndarray) -> np.ndarray:
        """One legal action per legal-action word, chosen by the draws ``u``."""
        return kernels.select_bits(words, u)

    @staticmethod
    def sample_from_mask(mask: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, int]:
        """One legal action per mask row chosen by ``u``, and the first empty row (or -1)."""
        return kernels.select_from_mask(mask, u)

    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        """``Engine.observe``: the observation and mask of the seat to act in every game."""
        e = self.e
        obs = np.empty((e.num_envs, e.obs_width), dtype=np.float32)
        mask = np.empty((e.num_envs, e.L.num_actions), dtype=np.int8)
        self._observe_into(e.current, obs, mask)
        return obs, mask
