"""``BatchedParallelEnv``: the parallel view (``block_env.parallel_env``) of B games at once.

Every live seat of every game acts at every step, as in ``parallel_env``: the seat to act
plays one of the AEC env's ``2T + 1`` actions, every other seat sends the wait, ``WAIT = 2T +
1`` (57 on the standard set; ``2T + 2`` actions in all). It runs on the batched engine
(``BatchedEnv``: the same backends, kernels, deal sources and same-step autoreset) and hands
out, bit for bit, what B ``parallel_env`` games would
(``tests/fast_paths/test_batched_parallel_vs_parallel.py``):

* ``obs, mask, seat = env.reset(seed=None, options=None)`` (``BatchedEnv.reset``'s seeds
  and options);
* ``obs, mask, seat, rewards, terminated, info = env.step(actions)``, ``actions`` (B, n):
  by absolute seat, the seat to act's action and ``WAIT`` for every other seat;
* ``obs`` (B, n, D) float32: every seat's observation (``parallel_env``'s
  ``"observation"`` of each agent, written by ``batched/writer.py``); ``mask`` (B, n, 2T+2)
  int8: the seat to act's AEC mask with ``0`` appended, exactly ``{WAIT}`` for every other
  seat; ``seat`` (B,) int64: the seat to act; ``rewards`` (B, n) float32 and
  ``terminated`` (B, n) bool by seat, ``parallel_env``'s ``rewards`` and ``terminations``
  (every seat of a game ends together; nothing is ever truncated); ``info``:
  ``BatchedEnv``'s info arrays;
* autoreset on the same step, as ``BatchedEnv``: where ``terminated[i]``, ``obs[i]``,
  ``mask[i]`` and ``seat[i]`` already belong to the next episode; ``info["final_obs"]``
  (K, n, D) holds every seat's observation of the final position of the games
  ``info["final_index"]`` (what ``parallel_env`` returns on the step that ends the episode;
  every seat's mask there is ``{WAIT}``);
* ``state()`` (B, state_dim) float32: each game's privileged full position, as
  ``parallel_env.state()``; ``state_from_observations(obs)`` the same from every seat's
  observations handed out (the final positions' ``info["final_obs"]`` among them).

A step with bad actions (wrong shape or type, a wait from the seat to act, anything but the
wait from another seat, an illegal or out-of-range action) raises ValueError naming the game
and seat, and changes nothing. Arrays handed out are new on every call (numpy arrays, or
torch tensors on ``device``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from block_env.batched.env import BatchedEnv
from block_env.observation import obs_layout

__all__ = ["BatchedParallelEnv"]


class BatchedParallelEnv:
    """B games of the parallel view stepped together; see the module docstring. Keywords
    are ``BatchedEnv``'s (``raw_env``'s game keywords among them), without ``auto_pass``:
    the parallel view asks the seat to act for every move, forced passes included."""

    def __init__(
        self,
        num_envs: int,
        backend: str = "numpy",
        device: Any = "cpu",
        deal_source: str = "fast",
        obs_type: str = "observation",
        kernels: str = "auto",
        **config: Any,
    ) -> None:
        if "auto_pass" in config:
            raise ValueError(
                "auto_pass is not an option of the parallel view: the seat to act makes "
                "every move (use BatchedEnv for auto_pass)"
            )
        self.env = env = BatchedEnv(
            num_envs,
            backend=backend,
            device=device,
            deal_source=deal_source,
            obs_type=obs_type,
            kernels=kernels,
            **config,
        )
        self.engine = env.engine
        self.config = env.config
        self.num_envs = env.num_envs
        self.possible_agents = [f"player_{i}" for i in range(env.num_players)]
        self.wait = env.num_actions  # 2T + 1: the last of the 2T + 2 actions

    # -- sizes and spaces -----------------------------------------------------------------

    @property
    def num_players(self) -> int:
        return self.config.num_players

    @property
    def num_actions(self) -> int:
        """2T + 2 (58 on the standard set): the AEC env's actions and the wait."""
        return self.wait + 1

    @property
    def obs_dim(self) -> int:
        return self.env.obs_dim

    @property
    def device(self) -> Any:
        return self.env.device

    @property
    def single_observation_space(self) -> spaces.Box:
        """One seat's observation (``parallel_env``'s ``"observation"``)."""
        return self.env.single_observation_space

    @property
    def single_action_space(self) -> spaces.Discrete:
        return spaces.Discrete(self.num_actions)

    @property
    def single_state_space(self) -> spaces.Box:
        """One game's ``state()`` (``parallel_env``'s ``state_space``)."""
        lay = obs_layout(self.config)
        return spaces.Box(lay.state_low, lay.state_high, lay.state_low.shape, np.float32)

    # -- the API --------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: list | None = None) -> tuple[Any, Any, Any]:
        """A new episode in every game (``BatchedEnv.reset``'s seeds and options); returns
        (obs (B, n, D), mask (B, n, 2T+2), seat (B,))."""
        self.env.reset(seed=seed, options=options)
        return self.env.hand_out((*self._views(), self.compute.copy(self.engine.current)))

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, Any, dict[str, Any]]:
        """``actions`` (B, n) by seat: the seat to act's move, ``WAIT`` for the others.
        Returns (obs, mask, seat, rewards (B, n), terminated (B, n), info)."""
        if not self.env.ready:
            raise RuntimeError("call reset() before step()")
        moves = self._checked(actions)
        rewards, terminated, info = self.engine.step(moves)
        obs, mask = self._views()
        seat = self.compute.copy(self.engine.current)
        by_seat = terminated[:, None] & (self.engine.seats[None, :] >= 0)  # (B, n)
        return self.env.hand_out((obs, mask, seat, rewards, by_seat, info))

    def state(self) -> Any:
        """(B, state_dim) float32: every game's privileged full position (every hand, then
        seat 0's observation), as ``parallel_env.state()``."""
        if not self.env.ready:
            raise RuntimeError("call reset() before state()")
        b, e = self.compute, self.engine
        held = (e.hands[:, :, None] >> e.t_shifts28[None, None, :]) & 1  # (B, n, T)
        seat0 = e.observations_of(e.rows, e.rows * 0)
        out = self._lay_out_state(b, b.f32(held.reshape(self.num_envs, -1)), seat0)
        return self.env.hand_out((out,))[0]

    def state_from_observations(self, obs: Any) -> Any:
        """(K, state_dim) float32: the ``state()`` of K games from every seat's observation
        of them, ``obs`` (K, n, D) as handed out (``reset``/``step``'s ``obs``, or
        ``info["final_obs"]`` for the final positions): each seat's own ``hand`` field, then
        seat 0's observation. ValueError for another shape."""
        lay = obs_layout(self.config)
        expected = (self.num_players, self.obs_dim)
        if len(obs.shape) != 3 or tuple(obs.shape[1:]) != expected:
            raise ValueError(
                f"obs must have shape (K, {expected[0]}, {expected[1]}): every seat's "
                f"observation of K games; got {tuple(obs.shape)}"
            )
        hands = obs[:, :, lay.fields["hand"]].reshape(int(obs.shape[0]), -1)
        return self._lay_out_state(self.env.backend, hands, obs[:, 0])

    def _lay_out_state(self, b: Any, hands: Any, seat0: Any) -> Any:
        """(K, state_dim) float32 in backend ``b``, laid out as ``parallel_env.state()``:
        the seats' hands ``hands`` (K, n T) as 0/1, zeros up to four seats, then seat 0's
        observation (the first ``dim`` columns of ``seat0`` (K, D))."""
        lay = obs_layout(self.config)
        out = b.zeros((int(hands.shape[0]), lay.state_dim), "f32")
        out[:, : hands.shape[1]] = hands
        out[:, lay.state_dim - lay.dim :] = seat0[:, : lay.dim]
        return out

    def sample_actions(self) -> Any:
        """(B, n) actions: a uniformly random legal move of the seat to act in each game
        (``BatchedEnv.sample_actions()``'s draw), ``WAIT`` for every other seat."""
        moves = self.env.to_compute(self.env.sample_actions())
        b, e = self.compute, self.engine
        out = b.zeros(self.num_envs * self.num_players, "i64") + self.wait
        b.put(out, e.row_base + e.current, moves)
        return self.env.hand_out((out.reshape(self.num_envs, self.num_players),))[0]

    # -- the views ------------------------------------------------------------------------

    @property
    def compute(self) -> Any:
        """The backend the engine computes with (``BatchedEnv.compute``)."""
        return self.env.compute

    def _views(self) -> tuple[Any, Any]:
        """Every seat's observation (the writer's) and mask with the wait column."""
        b, e = self.compute, self.engine
        obs = e.every_seat_observations()
        mask = b.zeros((self.num_envs * self.num_players, self.num_actions), "i8")
        mask[:, self.wait] = 1
        acting = b.zeros((self.num_envs, self.num_actions), "i8")
        acting[:, : self.wait] = b.unpack_mask(e.legal, self.wait)
        b.put_rows(mask, e.row_base + e.current, acting)
        return obs, mask.reshape(self.num_envs, self.num_players, self.num_actions)

    # -- input checks ---------------------------------------------------------------------

    def _checked(self, actions: Any) -> Any:
        """The seat to act's action of each game (B,), after checking every action;
        ValueError naming the first bad one otherwise (nothing has changed then)."""
        b, e = self.compute, self.engine
        acts = self._as_array(actions)
        moves = b.take(acts.reshape(-1), e.row_base + e.current)
        waiting = e.seats[None, :] != e.current[:, None]
        bad_wait = waiting & (acts != self.wait)
        legal = b.in_range(moves, self.wait)
        legal = legal & (((e.legal >> b.where(legal, moves, 0)) & 1) == 1)
        if b.any(bad_wait) or not b.all(legal):
            raise ValueError(self._refusal(acts, bad_wait, legal))
        return moves

    def _as_array(self, actions: Any) -> Any:
        """``actions`` as a (B, n) int64 array of the compute backend; ValueError for
        another shape or a type that is not integers."""
        shape = (self.num_envs, self.num_players)
        if type(actions).__module__.startswith("torch"):
            kind = "f" if actions.is_floating_point() or actions.is_complex() else "i"
            kind = "b" if str(actions.dtype) == "torch.bool" else kind
            got, array = tuple(actions.shape), actions
        else:
            array = np.asarray(actions)
            got, kind = array.shape, array.dtype.kind
        if got != shape:
            raise ValueError(
                f"actions must have shape {shape}, one action per game and seat (WAIT = "
                f"{self.wait} for every seat not to act); got {got}"
            )
        if kind not in "iu":
            raise ValueError(f"actions must be integers (action ids); got dtype kind {kind!r}")
        flat = array.reshape(-1)  # the backend's own conversion (a tensor on its device)
        return self.compute.as_actions(flat, int(flat.shape[0])).reshape(shape)

    def _refusal(self, acts: Any, bad_wait: Any, legal: Any) -> str:
        b, e = self.compute, self.engine
        current = b.to_numpy(e.current)
        bad_wait = b.to_numpy(bad_wait)
        if bad_wait.any():
            game, seat = (int(x) for x in np.argwhere(bad_wait)[0])
            return (
                f"actions[{game}, {seat}]={int(b.to_numpy(acts)[game, seat])}: seat {seat} is "
                f"not to act in game {game} (seat {int(current[game])} is): its only legal "
                f"action is the wait ({self.wait})"
            )
        game = int(np.flatnonzero(~b.to_numpy(legal))[0])
        seat = int(current[game])
        action = int(b.to_numpy(acts)[game, seat])
        word = int(b.to_numpy(e.legal)[game])
        moves = [a for a in range(self.wait) if word >> a & 1]
        names = ", ".join(f"{a} ({self.config.tiles.describe_action(a)})" for a in moves)
        why = "may not wait" if action == self.wait else f"may not play {action}"
        return (
            f"actions[{game}, {seat}]={action}: seat {seat} is to act in game {game} and "
            f"{why}; legal actions: {names}"
        )
