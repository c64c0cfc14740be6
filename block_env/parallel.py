"""Block as a PettingZoo ``ParallelEnv``: every live seat acts at every step.

Simultaneous-move pipelines (BenchMARL, TorchRL's ``PettingZooWrapper(parallel=True)``,
JaxMARL-style trainers) step all agents at once. ``parallel_env(**kwargs)`` gives them Block
over the AEC env (``raw_env(**kwargs)``, whose rules, deals and rewards it uses unchanged):

==================  =======================================================================
actions             ``Discrete(2T + 2)``: the AEC env's ``2T + 1`` actions and ``WAIT = 2T +
                    1`` (57 on the standard set), the one legal action of every seat not to
                    act; the seat to act may not wait
observations        ``{"observation": float32 (D,), "action_mask": int8 (2T + 2,)}``: the AEC
                    observation; the mask is the AEC mask with ``0`` appended for the seat
                    to act, exactly ``{WAIT}`` for every other seat (and for every seat once
                    the episode is over)
rewards, dones      the AEC env's ``rewards``, ``terminations``, ``truncations`` and
                    ``infos`` of the move made, for every seat at every step (a hand's
                    points reach every seat on the step that ends it); all seats leave
                    ``agents`` together when the episode ends
state               ``state()``: the AEC env's privileged full position (all hands), for
                    centralised critics
==================  =======================================================================

A step with bad input (a missing or unknown seat, a wait from the seat to act, anything but
the wait from another seat, an illegal or out-of-range action) raises ValueError and changes
nothing. ``reset(seed, options)`` deals what ``raw_env`` deals for the same seed and options.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv

from block_env.env import raw_env

__all__ = ["BlockParallelEnv", "parallel_env", "wait_action"]

_F32 = np.dtype(np.float32)
_I8 = np.dtype(np.int8)
_frombuffer = np.frombuffer


def wait_action(num_actions: int) -> int:
    """The wait action's id for an AEC env of ``num_actions`` actions (``2T + 1``): the index
    appended after them, ``2T + 1`` (57 on the standard set)."""
    return num_actions


def parallel_env(**kwargs: Any) -> BlockParallelEnv:
    """Block as a PettingZoo ``ParallelEnv``; the keyword arguments are ``raw_env``'s."""
    return BlockParallelEnv(**kwargs)


class BlockParallelEnv(ParallelEnv):
    """Every live seat acts each step: the seat to act plays, the others take ``WAIT``.

    The game is ``self.aec``, a ``raw_env`` built from the same keyword arguments; each
    parallel step is one AEC step of the seat to act. Pickle and ``copy.deepcopy`` keep the
    position (the AEC env's do).
    """

    def __init__(self, **kwargs: Any) -> None:
        self.aec = aec = raw_env(**kwargs)
        self.config = aec.config
        self.render_mode = aec.render_mode
        self.metadata = {
            "name": aec.metadata["name"],
            "render_modes": list(aec.metadata["render_modes"]),
            "render_fps": aec.metadata["render_fps"],
        }
        self.possible_agents = list(aec.possible_agents)
        self.agents: list[str] = []
        aec_actions = aec.config.tiles.num_actions  # 2T + 1
        self.wait = wait_action(aec_actions)  # 2T + 1: the last of the 2T + 2 actions
        obs_box = aec.observation_spaces[self.possible_agents[0]]["observation"]
        obs_space = spaces.Dict(
            {
                "observation": obs_box,
                "action_mask": spaces.Box(0, 1, (aec_actions + 1,), np.int8),
            }
        )
        act_space = spaces.Discrete(aec_actions + 1)
        self.observation_spaces = dict.fromkeys(self.possible_agents, obs_space)
        self.action_spaces = dict.fromkeys(self.possible_agents, act_space)
        self.state_space = aec.state_space
        self._seat_of = {a: i for i, a in enumerate(self.possible_agents)}
        # for the step's hot path: the waiting seats' mask (copied for each seat: read-only
        # here), the seats not to act by the seat to act, every seat's vector in one pass
        self._waiting_mask = bytes(aec_actions) + b"\x01"  # a seat not to act: {WAIT}
        self._waiting = _frombuffer(self._waiting_mask, _I8)
        self._seat_agents = tuple(enumerate(self.possible_agents))
        self._others = [
            tuple(a for a in self.possible_agents if a != current)
            for current in self.possible_agents
        ]
        self._info_state = aec.obs_type == "information_state"
        self._encode_all = aec._encode.all_observation_bytes

    # -- PettingZoo API -------------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    @property
    def current_agent(self) -> str | None:
        """The seat to act (the one that may not wait); None before reset and once the
        episode is over."""
        game = self.aec.game
        if game is None or game.episode_over:
            return None
        return self.possible_agents[game.current]

    def reset(
        self, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict[str, Any]]]:
        """New match (or hand), dealt as ``raw_env.reset(seed, options)`` deals it."""
        aec = self.aec
        aec.reset(seed=seed, options=options)
        self.agents = self.possible_agents[:]
        return self._observations(), dict(aec.infos)

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """Play the seat to act's action (every other live seat must send ``WAIT``);
        observations, rewards, terminations, truncations and infos of every live seat."""
        aec = self.aec
        if aec.game is None:
            raise RuntimeError("call reset() before step()")
        if not self.agents:
            raise ValueError("the episode is over: every agent is done; call reset()")
        action = self._checked(actions)
        aec.step(action)  # the AEC env checks legality before it changes anything
        # the AEC env keeps every seat in its dicts (no dead steps are taken on it)
        out = (
            self._observations(),
            aec.rewards.copy(),
            aec.terminations.copy(),
            aec.truncations.copy(),
            aec.infos.copy(),
        )
        if aec.game.episode_over:
            self.agents = []  # the seats of a game all finish together
        return out

    def state(self) -> np.ndarray:
        """The privileged full position (all hands): the AEC env's ``state()``."""
        return self.aec.state()

    def render(self) -> str | np.ndarray | None:
        return self.aec.render()

    def close(self) -> None:
        self.aec.close()

    # -- the views ------------------------------------------------------------------------

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """``agent``'s observation in this position, with its ``2T + 2`` mask (fresh
        arrays)."""
        return self._observation(self._seat_of[agent])

    def _observations(self) -> dict[str, dict[str, np.ndarray]]:
        """Every seat's observation and mask, each a fresh array of its own that shares no
        memory with the env or with another seat's. The vectors are built for all seats in
        one pass (``BytesEncoder.all_observation_bytes``); every mask is the wait's, then the
        seat to act's is given its legal actions instead."""
        aec = self.aec
        game = aec.game
        if self._info_state:  # the history is appended per seat: the AEC env's bytes
            data = [bytearray(aec._observation_bytes(seat)[0]) for seat, _ in self._seat_agents]
        else:
            data = self._encode_all(game, aec._memo)  # new bytearrays, one per seat
        waiting = self._waiting.copy
        out = {}
        for seat, agent in self._seat_agents:
            out[agent] = {"observation": _frombuffer(data[seat], _F32), "action_mask": waiting()}
        if not game.episode_over:
            mask = out[self.possible_agents[game.current]]["action_mask"]
            mask[self.wait] = 0
            for action in aec._legal_actions():
                mask[action] = 1
        return out

    def _observation(self, seat: int) -> dict[str, np.ndarray]:
        """``seat``'s observation over fresh bytes: the AEC env's cached bytes, the mask
        with the wait appended."""
        aec = self.aec
        cached = aec._obs_cache.get(seat)
        if cached is None:
            cached = aec._obs_cache[seat] = aec._observation_bytes(seat)
        game = aec.game
        to_act = seat == game.current and not game.episode_over
        mask = cached[1] + b"\x00" if to_act else self._waiting_mask
        return {
            "observation": _frombuffer(bytearray(cached[0]), _F32),
            "action_mask": _frombuffer(bytearray(mask), _I8),
        }

    # -- input checks ---------------------------------------------------------------------

    def _checked(self, actions: Any) -> int:
        """The action of the seat to act, after checking the whole dict (ValueError naming
        what is wrong otherwise; nothing has changed then). The common case, a dict of plain
        ints with the wait for every seat not to act and a legal move, is decided by integer
        compares; anything else goes through ``_checked_in_full``, which names the fault."""
        aec = self.aec
        current = aec.game.current
        if type(actions) is dict and len(actions) == len(self.agents):
            wait = self.wait
            for agent in self._others[current]:
                action = actions.get(agent)
                if type(action) is not int or action != wait:
                    break
            else:  # every other seat waits: the keys are the live agents exactly
                chosen = actions.get(self.possible_agents[current])
                if type(chosen) is int and chosen in aec._legal_actions():
                    return chosen
        return self._checked_in_full(actions)

    def _checked_in_full(self, actions: Any) -> int:
        """``_checked`` for any input: each seat's action in turn, ValueError at the first
        fault."""
        agents = self.agents
        if type(actions) is not dict or len(actions) != len(agents):
            raise self._bad_keys(actions)
        current = self.possible_agents[self.aec.game.current]
        wait = self.wait
        chosen = wait
        for agent in agents:
            if agent not in actions:
                raise self._bad_keys(actions)
            action = actions[agent]
            if type(action) is not int:
                action = _as_int(action, agent)
            if agent == current:
                chosen = action
            elif action != wait:
                raise ValueError(
                    f"{agent} is not the seat to act ({current} is): its only legal action "
                    f"is the wait ({wait}), got {action}"
                )
        legal = self.aec._legal_actions()
        if chosen not in legal:
            if chosen == wait:
                why = "may not wait"
            elif 0 <= chosen < wait:
                why = f"may not play {chosen}"
            else:
                why = f"may not play {chosen}, out of range 0..{wait}"
            raise ValueError(
                f"{current} is the seat to act and {why}; legal actions: {list(legal)}"
            )
        return chosen

    def _bad_keys(self, actions: Any) -> ValueError:
        if not isinstance(actions, dict):
            return ValueError(
                f"actions must be a dict with one action per live agent {self.agents}, got "
                f"{type(actions).__name__}"
            )
        missing = [a for a in self.agents if a not in actions]
        extra = [a for a in actions if a not in self.agents]
        return ValueError(
            f"actions must hold exactly one action per live agent {self.agents}: missing "
            f"{missing}, not live {extra}"
        )


def _as_int(action: Any, agent: str) -> int:
    """``action`` as a Python int (numpy integers and 0-d integer arrays included; not a
    bool); ValueError otherwise."""
    if isinstance(action, np.ndarray) and action.ndim == 0 and action.dtype.kind in "iu":
        return int(action)
    if isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_)):
        return int(action)
    raise ValueError(
        f"action {action!r} of {agent} has type {type(action).__name__}: expected an int"
    )
