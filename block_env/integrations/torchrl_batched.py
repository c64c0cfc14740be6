"""``BatchedBlockEnv``: B Block games as one TorchRL ``EnvBase`` of batch size ``[B]``.

The games are ``block_env.batched.BatchedParallelEnv``'s (the parallel view: every seat
acts at every step, the seats not to act send the wait, the last of the ``2T + 2``
actions). The keys and specs are those TorchRL's ``PettingZooWrapper`` gives
``block_env.parallel_env`` in the BenchMARL tasks (``group_map``, categorical actions,
``return_state=True``, ``use_mask=False``, ``done_on_any=True``), with the batch dimension in
front, so BenchMARL's algorithms and TorchRL's collectors take either env unchanged:

* per group ``g`` (one per seat, or one per team in partnership): ``(g, "observation",
  "observation")`` (B, n_g, D) float32, ``(g, "action_mask")`` (B, n_g, 2T+2) bool,
  ``(g, "info", key)`` float32 for each of ``block_env.env.INFO_KEYS``, ``(g, "action")``
  (B, n_g) int64, ``(g, "reward")`` (B, n_g, 1) float32, ``(g, "done" | "terminated" |
  "truncated")`` (B, n_g, 1) bool;
* ``"state"`` (B, state_dim) float32: the privileged position (``parallel_env.state()``)
  for centralised critics and mixers; ``"done"``, ``"terminated"``, ``"truncated"`` (B, 1).

Episode ends, the TorchRL way: a step that ends game i's episode returns, under ``"next"``,
its final position (every seat's final observation and the final state; every action
mask all True, as the wrapper gives once the agents have left) with ``done`` set. The engine
has already dealt game i's next episode on that step (same-step autoreset); the collector's
partial reset (``reset`` with ``"_reset"`` marking the games that ended, as
``step_and_maybe_reset`` and ``rollout`` send it) hands out that episode's first position
without stepping anything. A ``reset()`` without ``"_reset"`` starts a new episode in every
game. ``set_seed(s)`` deals as ``PettingZooWrapper``'s: games restart from seed ``s`` (with
``deal_source="aec"``, game i deals exactly as ``parallel_env`` reset with ``s + i``), and
the next ``reset()`` deals the episode after that.

Tensors come from the engine without copies where the layout allows: each group's
observations, rewards and dones are views of the engine's (B, n, ...) arrays (a slice for a
group of evenly spaced seats); the copies are the bool masks, the final positions of the
games that ended, and the infos spread to each seat.
``tests/fast_paths/test_torchrl_batched_vs_pettingzoo.py`` binds it to the
``PettingZooWrapper`` task env, bit for bit.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Bounded, Categorical, Composite, Unbounded
from torchrl.envs import EnvBase

from block_env.batched.parallel import BatchedParallelEnv
from block_env.env import INFO_KEYS

__all__ = ["BatchedBlockEnv", "default_group_map"]

# A TensorDict built without its per-entry checks (tensordict's own fast constructor, where
# it has one): the entries are made here in the specs' shapes, which check_env_specs and
# the differential test hold them to.
_tensordict = getattr(TensorDict, "_new_unsafe", TensorDict)

# the infos of a step that ends no hand (and of a reset), as the AEC env gives them
_NO_WINNER = {"hand_winner": -1.0, "match_winner": -1.0}
_PER_SEAT = ("hand_pips", "hand_points", "match_winners")  # (n,) per seat; the rest scalars
_DONE = ("done", "terminated", "truncated")  # the done keys, per group and per game


def default_group_map(num_players: int, partnership: bool) -> dict[str, list[str]]:
    """One group per seat, or one per team in partnership (``team_0`` = seats 0 and 2)."""
    seats = [f"player_{i}" for i in range(num_players)]
    if partnership:
        return {"team_0": seats[0::2], "team_1": seats[1::2]}
    return {seat: [seat] for seat in seats}


def _seat_index(seats: list[int]) -> slice | list[int]:
    """A slice for evenly spaced increasing seats (indexing gives a view), else the list."""
    step = seats[1] - seats[0] if len(seats) > 1 else 1
    if step > 0 and seats == list(range(seats[0], seats[-1] + 1, step)):
        return slice(seats[0], seats[-1] + 1, step)
    return seats


class BatchedBlockEnv(EnvBase):
    """B games of the parallel view as a TorchRL env; see the module docstring.

    ``group_map``: group name -> agent names (``player_<seat>``), every seat in exactly one
    group (default: ``default_group_map``). ``seed``: as ``set_seed(seed)`` at once.
    ``deal_source`` and ``kernels``: ``BatchedParallelEnv``'s (``"aec"`` deals as the AEC
    env, slowly; ``"fast"`` vectorised). ``game``: ``raw_env``'s keywords."""

    def __init__(
        self,
        num_envs: int,
        group_map: dict[str, list[str]] | None = None,
        *,
        seed: int | None = None,
        device: Any = "cpu",
        deal_source: str = "fast",
        kernels: str = "auto",
        **game: Any,
    ) -> None:
        self.game = BatchedParallelEnv(
            num_envs,
            backend="torch",
            device=device,
            deal_source=deal_source,
            kernels=kernels,
            **game,
        )
        config = self.game.config
        if group_map is None:
            group_map = default_group_map(config.num_players, config.partnership)
        self.group_map = {g: list(agents) for g, agents in group_map.items()}
        self._seats = self._checked_groups(self.group_map)
        super().__init__(device=device, batch_size=torch.Size([num_envs]))
        self._index = {g: _seat_index(s) for g, s in self._seats.items()}
        order = [s for seats in self._seats.values() for s in seats]
        by_seat = sorted(range(len(order)), key=order.__getitem__)
        self._order = None if by_seat == list(range(len(order))) else by_seat
        self._make_specs()
        self._live: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None
        self._ended = torch.zeros(num_envs, dtype=torch.bool, device=self.device)
        if seed is not None:
            self._set_seed(seed)

    def _checked_groups(self, group_map: dict[str, list[str]]) -> dict[str, list[int]]:
        """Each group's seats; ValueError unless every agent is in exactly one group."""
        agents = self.game.possible_agents
        listed = [a for members in group_map.values() for a in members]
        if sorted(listed) != sorted(agents) or any(not m for m in group_map.values()):
            raise ValueError(
                f"group_map must put each of {agents} in exactly one non-empty group; got "
                f"{group_map}"
            )
        return {g: [agents.index(a) for a in members] for g, members in group_map.items()}

    # -- specs ----------------------------------------------------------------------------

    def _make_specs(self) -> None:
        b, game = self.batch_size[0], self.game
        n_actions, dev = game.num_actions, self.device
        box = game.single_observation_space
        state_box = game.single_state_space
        flag = dict(n=2, dtype=torch.bool, device=dev)
        observation, action, reward, done = {}, {}, {}, {}
        for group, seats in self._seats.items():
            shape = (b, len(seats))
            obs = Bounded(
                low=torch.as_tensor(box.low).expand(*shape, -1),
                high=torch.as_tensor(box.high).expand(*shape, -1),
                shape=(*shape, box.shape[0]),
                dtype=torch.float32,
                device=dev,
            )
            info = {k: Unbounded(shape=self._info_shape(shape, k), device=dev) for k in INFO_KEYS}
            observation[group] = Composite(
                observation=Composite(observation=obs, shape=shape),
                action_mask=Categorical(shape=(*shape, n_actions), **flag),
                info=Composite(info, shape=shape),
                shape=shape,
            )
            action[group] = Composite(
                action=Categorical(n=n_actions, shape=shape, dtype=torch.int64, device=dev),
                shape=shape,
            )
            reward[group] = Composite(
                reward=Unbounded(shape=(*shape, 1), dtype=torch.float32, device=dev), shape=shape
            )
            done[group] = Composite(
                {k: Categorical(shape=(*shape, 1), **flag) for k in _DONE}, shape=shape
            )
        observation["state"] = Bounded(
            low=torch.as_tensor(state_box.low).expand(b, -1),
            high=torch.as_tensor(state_box.high).expand(b, -1),
            shape=(b, state_box.shape[0]),
            dtype=torch.float32,
            device=dev,
        )
        done.update({k: Categorical(shape=(b, 1), **flag) for k in _DONE})
        self.full_observation_spec = Composite(observation, shape=(b,))
        self.full_action_spec = Composite(action, shape=(b,))
        self.full_reward_spec = Composite(reward, shape=(b,))
        self.full_done_spec = Composite(done, shape=(b,))

    def _info_shape(self, shape: tuple[int, int], key: str) -> tuple[int, ...]:
        return (*shape, self.game.num_players) if key in _PER_SEAT else shape

    # -- the TorchRL API ------------------------------------------------------------------

    def _set_seed(self, seed: int | None) -> None:
        """Restart every game from ``seed`` (the next ``reset()`` deals the episode after)."""
        self._view(*self.game.reset(seed=seed)[:2])
        self._ended.zero_()

    def _reset(
        self, tensordict: TensorDictBase | None = None, seed: int | None = None, **kwargs: Any
    ) -> TensorDictBase:
        """Hand out the games restarted on the last step (a partial reset naming only
        them), or start a new episode in every game (``seed``: as ``set_seed``'s)."""
        games = self._reset_games(tensordict)
        if seed is not None and games is not None and not bool(games.all()):
            raise ValueError("a seed restarts every game: reset(seed=...) without '_reset'")
        if games is not None and seed is None and bool(self._ended[games].all()):
            self._ended &= ~games  # they restarted on the step that ended them
        elif games is None or bool(games.all()):
            self._view(*self.game.reset(seed=seed)[:2])
            self._ended.zero_()
        else:
            raise RuntimeError(
                "BatchedBlockEnv can reset only the games whose episode ended on the last step "
                f"(they restart on that step); games {self._not_ended(games)} were asked to "
                "reset mid-episode: call reset() without '_reset' to restart every game"
            )
        obs, mask, state = self._live
        return self._out(obs, mask, state, self._reset_infos(), None, None)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        actions = torch.cat([tensordict.get((g, "action")) for g in self._seats], dim=-1)
        if self._order is not None:
            actions = actions[:, self._order]
        obs, mask, _, rewards, terminated, info = self.game.step(actions)
        obs, mask, state = self._view(obs, mask)
        ended = info["final_index"]
        self._ended.zero_()
        if ended.numel():  # the final positions, under "next"; the new ones wait for reset
            self._ended[ended] = True
            final = info["final_obs"]
            obs, mask, state = obs.clone(), mask.clone(), state.clone()
            obs[ended] = final
            mask[ended] = True
            state[ended] = self.game.state_from_observations(final)
        return self._out(obs, mask, state, self._step_infos(info), rewards, terminated)

    # -- the views ------------------------------------------------------------------------

    def _view(self, obs: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Keep the engine's current position (obs, bool masks, state) for the next reset,
        and show its legal actions to the action spec (what ``rand_action`` draws from)."""
        live = (obs, mask.bool(), self.game.state_from_observations(obs))
        self._live = live
        spec = self.full_action_spec
        for group, index in self._index.items():
            spec[group, "action"].update_mask(live[1][:, index])
        return live

    def _step_infos(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {k: info[k].to(torch.float32) for k in INFO_KEYS}

    def _reset_infos(self) -> dict[str, torch.Tensor]:
        """The infos after a reset: no hand over, no winner (-1), zeros."""
        b, n = self.batch_size[0], self.game.num_players
        return {
            k: torch.full(
                (b, n) if k in _PER_SEAT else (b,), _NO_WINNER.get(k, 0.0), device=self.device
            )
            for k in INFO_KEYS
        }

    def _out(
        self,
        obs: torch.Tensor,
        mask: torch.Tensor,
        state: torch.Tensor,
        infos: dict[str, torch.Tensor],
        rewards: torch.Tensor | None,
        terminated: torch.Tensor | None,
    ) -> TensorDictBase:
        """The output tensordict: each group's views, the state and the dones (all False
        and no rewards for a reset)."""
        b, dev = self.batch_size[0], self.device
        if terminated is None:
            terminated = torch.zeros((b, self.game.num_players), dtype=torch.bool, device=dev)
        out: dict[str, Any] = {"state": state}
        for group, index in self._index.items():
            shape = (b, len(self._seats[group]))
            dead = terminated[:, index].unsqueeze(-1)
            info = {k: self._spread(v, shape) for k, v in infos.items()}
            entries = {
                "observation": _tensordict({"observation": obs[:, index]}, shape, device=dev),
                "action_mask": mask[:, index],
                "info": _tensordict(info, shape, device=dev),
                "done": dead,
                "terminated": dead.clone(),  # entries of their own, as the wrapper's
                "truncated": torch.zeros_like(dead),
            }
            if rewards is not None:
                entries["reward"] = rewards[:, index].unsqueeze(-1)
            out[group] = _tensordict(entries, shape, device=dev)
        done = terminated.any(-1, keepdim=True)
        out.update(done=done, terminated=done.clone(), truncated=torch.zeros_like(done))
        return _tensordict(out, self.batch_size, device=dev)

    @staticmethod
    def _spread(value: torch.Tensor, shape: tuple[int, int]) -> torch.Tensor:
        """A game's info (B, ...) given to each of the group's seats: (B, n_g, ...)."""
        return value.unsqueeze(1).expand(shape[0], shape[1], *value.shape[1:]).clone()

    def _reset_games(self, tensordict: TensorDictBase | None) -> torch.Tensor | None:
        """(B,) bool: the games a partial reset names (any of its ``_reset`` entries), or
        None for a reset of every game (no ``_reset`` given)."""
        if tensordict is None:
            return None
        flags = [tensordict.get(k, None) for k in self.reset_keys]
        flags = [f.reshape(self.batch_size[0], -1).any(-1) for f in flags if f is not None]
        if not flags:
            return None
        return torch.stack(flags).any(0)

    def _not_ended(self, games: torch.Tensor) -> list[int]:
        return (games & ~self._ended).nonzero().flatten().tolist()
