"""The PettingZoo AEC environment of Block dominoes, over the pure rules engine (``rules``).

==================  =======================================================================
agents              ``player_0`` .. ``player_{n-1}``, seated clockwise (n = 2, 3 or 4)
actions             ``Discrete(2T + 1)`` for a set of T tiles: ``2 * tile + end`` (end 0 =
                    left, 1 = right), ``2T`` = pass (57 for the standard 28 tiles)
observations        ``{"observation": float32 (D,), "action_mask": int8 (2T + 1,)}``, seat-
                    relative, nothing hidden (``block_env.observation``; D = 122 for the
                    standard set); ``obs_type="information_state"`` appends the hand's public
                    history (``block_env.information_state``)
rewards             at each hand's end: ``zero_sum`` points (default), raw ``points``, or
                    ``win`` (+1 / -1 per match)
infos               the same flat keys at every step (``INFO_KEYS``): numbers and fixed-shape
                    arrays, never ``None``
variants            ``opener`` (``rotate`` or ``highest_double``), ``episode`` (``match`` or
                    ``hand``), ``partnership`` (4 players, seats 0 and 2 against 1 and 3),
                    ``target_score``, ``max_pip`` and ``hand_size`` (smaller sets)
reset options       ``hands``, ``leader``, ``scores`` (``block_env.reset_options``)
==================  =======================================================================

``raw_env`` is the bare game; ``env()`` wraps it in PettingZoo's classic checks (an illegal
move ends the game with -1 for the mover). ``observe`` hands out fresh arrays and legality is
decided from the game alone, never from a mask the caller wrote into; ``copy.deepcopy`` and
pickle keep the position, random generator included. The version (``metadata["name"]``,
``block_env.ENV_ID``) changes only when an observation, reward or rule would differ; each
version's changes are listed in CHANGELOG.md.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle, seeding
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger

from block_env import rules
from block_env.config import BlockConfig
from block_env.information_state import (
    check_obs_type,
    encode_history,
    information_state_bounds,
)
from block_env.observation import encode_state, obs_layout
from block_env.observation.bytes_encoder import bytes_encoder
from block_env.reset_options import check_seed, parse_reset_options
from block_env.rules import State

__all__ = ["INFO_KEYS", "env", "raw_env"]

LANGS = ("en", "tr", "hi")
# Every agent's infos hold exactly these keys at every step (see ``raw_env._hand_info``).
INFO_KEYS = (
    "hand_over",
    "hand_winner",
    "hand_blocked",
    "hand_pips",
    "hand_points",
    "match_over",
    "match_winner",
    "match_winners",
)


def env(**kwargs: Any) -> AECEnv:
    """``raw_env`` with PettingZoo's classic wrapper semantics: an illegal move ends the game
    with reward -1 for the mover, out-of-range actions assert, and the call order is enforced
    (what ``OrderEnforcingWrapper(AssertOutOfBoundsWrapper(TerminateIllegalWrapper(...)))``
    does, in one layer)."""
    return _Classic(raw_env(**kwargs))


class _Classic(wrappers.OrderEnforcingWrapper):
    """PettingZoo's classic stack (order enforcing, action-space assertion, termination on an
    illegal move with ``-1``) as one wrapper over ``raw_env``: the same checks, errors,
    warnings and rewards in the same order, without the attribute look-ups through three
    layers. Each move is judged by the legal actions of the game itself, never by the
    observation handed to the caller (who may have written into its mask)."""

    def __init__(self, env: raw_env, illegal_reward: float = -1) -> None:
        super().__init__(env)
        self._raw = env
        self._illegal_value = illegal_reward
        self._terminated = False  # the game was ended by an illegal move

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self._terminated = False
        super().reset(seed=seed, options=options)

    def last(self, observe: bool = True) -> tuple:
        """``AECEnv.last`` read from the env itself (the same values, one look-up each)."""
        if not self._has_reset:
            return super().last(observe)  # raises as the wrapper stack does
        raw = self._raw
        agent = raw.agent_selection
        observation = raw.observe(agent) if observe else None
        return (
            observation,
            raw._cumulative_rewards[agent],
            raw.terminations[agent],
            raw.truncations[agent],
            raw.infos[agent],
        )

    def step(self, action: Any) -> None:
        raw = self._raw
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        elif not raw.agents:
            self._has_updated = True
            EnvLogger.warn_step_after_terminated_truncated()
        else:
            self._has_updated = True
            agent = raw.agent_selection
            dead = raw.terminations[agent] or raw.truncations[agent]
            # AssertOutOfBoundsWrapper (an int in range is in the space: no call needed)
            in_space = type(action) is int and 0 <= action < raw._num_actions
            assert (
                in_space or (action is None and dead) or raw.action_space(agent).contains(action)
            ), "action is not in action space"
            # TerminateIllegalWrapper
            if self._terminated and dead:
                raw._was_dead_step(action)
            elif not dead and action not in raw._legal_actions():
                EnvLogger.warn_on_illegal_move()
                raw._cumulative_rewards[agent] = 0
                raw.terminations = dict.fromkeys(raw.agents, True)
                raw.truncations = dict.fromkeys(raw.agents, True)
                raw.rewards = dict.fromkeys(raw.truncations, 0)
                raw.rewards[agent] = float(self._illegal_value)
                raw._accumulate_rewards()
                raw._deads_step_first()
                self._terminated = True
            else:
                raw.step(action)

    def __str__(self) -> str:
        return str(self.env)


_ARRAY_KEYS = ("hand_pips", "hand_points", "match_winners")  # the info's array fields
_F32 = np.dtype(np.float32)
_I8 = np.dtype(np.int8)
_frombuffer = np.frombuffer
_apply_legal_action = rules.apply_legal_action
_legal_of = rules.legal_actions
_MASK_TABLE_MAX = 1 << 15  # masks kept per action count (about 4 MB when full; emptied then)
_MASK_KEPT_LEN = 4  # masks of longer legal tuples are built each time


@cache
def _mask_table(num_actions: int) -> dict[tuple[int, ...], bytes]:
    """The bytes of the int8 action mask of each legal tuple seen, for one action count
    (shared by every env of that tile set: masks repeat across positions and games)."""
    return {}


def _mask_bytes(table: dict[tuple[int, ...], bytes], legal: tuple[int, ...], size: int) -> bytes:
    """The mask of ``legal`` (length ``size``), kept in ``table`` when it has at most
    ``_MASK_KEPT_LEN`` actions (longer ones, such as the openings, rarely repeat)."""
    mask = bytearray(size)
    for action in legal:
        mask[action] = 1
    mask = bytes(mask)
    if len(legal) <= _MASK_KEPT_LEN:
        if len(table) >= _MASK_TABLE_MAX:
            table.clear()
        table[legal] = mask
    return mask


def _read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array`` (itself made read-only, so that the view's WRITEABLE
    flag cannot be turned back on): the zero arrays of the steps that end no hand are shared
    between agents and steps, so nobody may write into them."""
    array.flags.writeable = False
    return array.view()


def _running_info(num_players: int) -> dict[str, Any]:
    """The info of a step that ends no hand, its zero arrays read-only."""
    return {
        "hand_over": False,
        "hand_winner": -1,
        "hand_blocked": False,
        "hand_pips": _read_only(np.zeros(num_players, dtype=np.int64)),
        "hand_points": _read_only(np.zeros(num_players, dtype=np.int64)),
        "match_over": False,
        "match_winner": -1,
        "match_winners": _read_only(np.zeros(num_players, dtype=np.bool_)),
    }


def _observation_box(config: BlockConfig, obs_type: str) -> spaces.Box:
    """The Box of the ``"observation"`` entry for ``obs_type`` (the same for every agent)."""
    if obs_type == "information_state":
        low, high = information_state_bounds(config)
    else:
        lay = obs_layout(config)
        low, high = lay.low, lay.high
    return spaces.Box(low, high, low.shape, np.float32)


class raw_env(AECEnv, EzPickle):
    """Block dominoes, individual (Pagat) or partnership, as an AEC game.

    The contract is in the module docstring: agents ``player_0..player_{n-1}`` seated
    clockwise, ``Discrete(2T+1)`` actions for a set of T tiles (``2*tile + end``, ``2T`` =
    pass; 57 and 56 for the standard 28 tiles), observation dicts with an int8
    ``action_mask``, rewards at each hand's end, flat ``infos`` (``INFO_KEYS``).
    ``copy.deepcopy(env)`` and ``pickle`` give an independent env at the same position,
    random generator included.
    """

    metadata = {
        "name": "block-v1",  # the registry id block_env.ENV_ID without its namespace
        "render_modes": ["human", "ansi", "rgb_array", "svg"],
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(
        self,
        num_players: int = 2,
        opener: str = "rotate",
        episode: str = "match",
        partnership: bool = False,
        target_score: int | None = None,
        reward: str = "zero_sum",
        render_mode: str | None = None,
        lang: str = "en",
        max_pip: int = 6,
        hand_size: int | None = None,
        obs_type: str = "observation",
    ) -> None:
        EzPickle.__init__(
            self,
            num_players,
            opener,
            episode,
            partnership,
            target_score,
            reward,
            render_mode,
            lang,
            max_pip,
            hand_size,
            obs_type,
        )
        super().__init__()
        self.config = BlockConfig(
            num_players=num_players,
            opener=opener,
            episode=episode,
            partnership=partnership,
            target_score=target_score,
            reward=reward,
            max_pip=max_pip,
            hand_size=hand_size,
        )
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode={render_mode!r} is not allowed: use None or one of "
                f"{', '.join(self.metadata['render_modes'])}"
            )
        if lang not in LANGS:
            raise ValueError(f"lang={lang!r} is not allowed: use one of {', '.join(LANGS)}")
        self.render_mode = render_mode
        self.lang = lang
        self.obs_type = check_obs_type(obs_type)
        # the current hand's action ids, kept only for the information state
        self._info_state = obs_type == "information_state"
        self._moves: list[int] = []
        self.possible_agents = [f"player_{i}" for i in range(num_players)]
        self._seat = {a: i for i, a in enumerate(self.possible_agents)}
        lay = obs_layout(self.config)
        self._num_actions = num_actions = self.config.tiles.num_actions
        obs_space = spaces.Dict(
            {
                "observation": _observation_box(self.config, obs_type),
                "action_mask": spaces.Box(0, 1, (num_actions,), np.int8),
            }
        )
        act_space = spaces.Discrete(num_actions)
        # One shared space object per kind, the same for every agent.
        self.observation_spaces = dict.fromkeys(self.possible_agents, obs_space)
        self.action_spaces = dict.fromkeys(self.possible_agents, act_space)
        self.state_space = spaces.Box(
            lay.state_low, lay.state_high, lay.state_low.shape, np.float32
        )
        self.np_random, _ = seeding.np_random(None)
        self.game: State | None = None
        self.last_hand: State | None = None  # the last finished hand, for rendering
        # Private per-position caches: the bytes of each seat's observation and mask (handed
        # out as new arrays) and the legal actions of the seat to act (what ``step`` checks);
        # the encoder's per-hand memo (emptied whenever the hand changes).
        self._obs_cache: dict[int, tuple[bytes, bytes]] = {}
        self._encode = bytes_encoder(self.config)  # equals observation.encode, faster
        self._memo: dict = {}
        self._legal: tuple[int, ...] | None = None
        self._no_mask = bytes(num_actions)  # the mask of every seat not to act
        self._masks = _mask_table(num_actions)
        self._zero_rewards: dict[str, float] | None = None  # ``rewards`` while all are 0.0
        self._num_players = num_players
        # The info of a step that ends no hand: all agents share its read-only zero arrays,
        # which costs no allocation per step. reset() and hand ends give writable copies.
        # They are kept from step to step until a hand ends (``_infos_running``).
        self._running = _running_info(num_players)
        self._infos_running = False

    # -- copies: deepcopy and pickle keep the position -------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        """The whole position (game, rewards, infos, random generator), without caches."""
        state = self.__dict__.copy()
        state["_obs_cache"] = {}
        state["_memo"] = {}
        state["_legal"] = None
        state["_zero_rewards"] = None  # the copy's rewards are its own dict
        del state["_masks"]  # shared by the envs of a tile set: looked up again on load
        del state["_running"]  # rebuilt read-only on load (copies of arrays are writable)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "config" not in state:  # a constructor-only pickle (EzPickle format)
            EzPickle.__setstate__(self, state)
            return
        self.__dict__.update(state)
        self._running = _running_info(self.config.num_players)
        self._masks = _mask_table(self._num_actions)
        if self._infos_running:
            self.infos = {a: dict(self._running) for a in self.infos}

    # -- PettingZoo API -------------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    @property
    def scores(self) -> list[int]:
        """Match scores by seat."""
        return list(self._require_game().scores)

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """New match (or hand). ``seed``: None or an int >= 0 (any size). ``options`` may hold
        ``hands``, ``leader`` and ``scores``. Bad input raises ValueError, changing nothing."""
        seed = check_seed(seed)
        setup = parse_reset_options(self.config, options)
        if seed is not None:
            self.np_random, _ = seeding.np_random(seed)
        self.game = rules.new_match(
            self.config, self.np_random, setup.hands, setup.leader, setup.scores
        )
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: self._fresh_info(self._running) for a in self.agents}
        self._infos_running = False  # infos hold per-agent arrays, not the shared zeros
        self.agent_selection = self.possible_agents[self.game.current]
        self._obs_cache = {}
        self._memo = {}
        self._legal = None
        self._zero_rewards = None
        self.last_hand = None
        self._moves = []

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """``{"observation": float32[obs_dim], "action_mask": int8[2T+1]}``: fresh arrays
        the caller may keep or modify without affecting the env. With
        ``obs_type="information_state"`` the observation is followed by the hand's history
        (``block_env.information_state``)."""
        seat = self._seat[agent]
        cached = self._obs_cache.get(seat)
        if cached is None:
            cached = self._obs_cache[seat] = self._observation_bytes(seat)
        # each array over a new bytearray of its own: writable, owned by the caller alone
        return {
            "observation": _frombuffer(bytearray(cached[0]), _F32),
            "action_mask": _frombuffer(bytearray(cached[1]), _I8),
        }

    def last(self, observe: bool = True) -> tuple:
        """``AECEnv.last``: the same values, with ``observe`` inlined (the hot path of every
        AEC loop)."""
        agent = self.agent_selection
        assert agent is not None
        if observe:
            seat = self._seat[agent]
            cached = self._obs_cache.get(seat)
            if cached is None:
                cached = self._obs_cache[seat] = self._observation_bytes(seat)
            observation = {
                "observation": _frombuffer(bytearray(cached[0]), _F32),
                "action_mask": _frombuffer(bytearray(cached[1]), _I8),
            }
        else:
            observation = None
        return (
            observation,
            self._cumulative_rewards[agent],
            self.terminations[agent],
            self.truncations[agent],
            self.infos[agent],
        )

    def _observation_bytes(self, seat: int) -> tuple[bytes, bytes]:
        """The bytes of ``seat``'s observation vector and action mask in this position."""
        game = self.game
        if game is None:
            self._require_game()  # raises
        if seat == game.current and not game.episode_over:
            legal = self._legal
            if legal is None:
                legal = self._legal = _legal_of(game)
            mask = self._masks.get(legal)
            if mask is None:
                mask = _mask_bytes(self._masks, legal, self._num_actions)
        else:
            mask = self._no_mask
        obs = self._encode.observation_bytes(game, seat, self._memo)
        if self._info_state:
            obs += encode_history(self.config, game.leader, self._moves, seat).tobytes()
        return obs, mask

    def state(self) -> np.ndarray:
        """Privileged full position (all hands); never part of any agent's observation."""
        return encode_state(self.config, self._require_game())

    def step(self, action: Any) -> None:
        game = self.game
        if game is None:
            self._require_game()  # raises
        if not self.agents:
            self._step_after_end(action)
            return
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if type(action) is not int:
            if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
                raise ValueError(
                    f"action {action!r} has type {type(action).__name__}: expected an int in "
                    f"0..{self._num_actions - 1}; legal actions: {list(self._legal_actions())}"
                )
            action = int(action)
        legal = self._legal
        if legal is None:
            legal = self._legal = _legal_of(game)
        if action not in legal:  # decided from the game state alone
            rules.apply_action(self.config, game, action)  # raises, naming the legal actions
        after = _apply_legal_action(self.config, game, action)
        if self._info_state:
            self._moves.append(action)
        self._cumulative_rewards[agent] = 0.0
        self._obs_cache = {}
        self._legal = None
        if after.result is None:
            self.game = after
            # every reward is 0.0: the all-zero dict of the previous step is kept (as are
            # the infos) until a hand ends; nothing to add to the cumulative rewards
            if self.rewards is not self._zero_rewards:
                self.rewards = self._zero_rewards = dict.fromkeys(self.agents, 0.0)
            if not self._infos_running:  # kept while no hand ends: nothing in them changes
                self.infos = {a: dict(self._running) for a in self.agents}
                self._infos_running = True
            self.agent_selection = self.possible_agents[after.current]
        else:
            self._finish_hand(after)
            if self.game.episode_over:
                # PettingZoo convention: always advance agent_selection, even on the last move.
                seat = self._seat[agent] + 1
                self.agent_selection = self.possible_agents[seat % self._num_players]
            else:
                self.agent_selection = self.possible_agents[self.game.current]
            self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _step_after_end(self, action: Any) -> None:
        """Every agent has taken its final (dead) step: ``None`` is a no-op with PettingZoo's
        warning (what ``OrderEnforcingWrapper`` does); any other action is refused."""
        if action is not None:
            raise ValueError(
                f"action {action!r} is not allowed: the episode is over and every agent is "
                "done; call reset()"
            )
        EnvLogger.warn_step_after_terminated_truncated()

    def _legal_actions(self) -> tuple[int, ...]:
        """Legal actions of the seat to act, from the game state (cached per position)."""
        if self._legal is None:
            self._legal = rules.legal_actions(self._require_game())
        return self._legal

    def _finish_hand(self, after: State) -> None:
        self.rewards = dict(zip(self.possible_agents, rules.hand_rewards(self.config, after)))
        info = self._hand_info(after)  # new arrays: the first agent's, copies for the others
        first, *others = self.agents
        self.infos = {first: info, **{a: self._fresh_info(info) for a in others}}
        self._infos_running = False
        self._memo = {}  # the encoder's per-hand parts: the scores (and maybe the deal) change
        if after.episode_over:
            self.terminations = dict.fromkeys(self.agents, True)
            self.game = after
        else:
            self.game = rules.next_hand(self.config, after, self.np_random)
            self._moves = []  # the history holds the current hand only
        self.last_hand = after

    @staticmethod
    def _fresh_info(info: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``info`` with new, writable arrays (one per agent: nothing shared)."""
        fresh = dict(info)
        for key in _ARRAY_KEYS:
            fresh[key] = info[key].copy()
        return fresh

    def _hand_info(self, after: State) -> dict[str, Any]:
        """The info of the step that ended a hand (each agent gets a ``_fresh_info`` copy)."""
        result = after.result
        over = after.episode_over
        winners = np.zeros(self.config.num_players, dtype=np.bool_)
        if after.winners:  # empty until the match is won
            winners[list(after.winners)] = True
        return {
            "hand_over": True,
            "hand_winner": -1 if result.winner is None else int(result.winner),
            "hand_blocked": bool(result.blocked),
            "hand_pips": np.array(result.pips, dtype=np.int64),
            "hand_points": np.array(result.points, dtype=np.int64),
            "match_over": bool(over),
            "match_winner": int(after.winners[0]) if over and after.winners else -1,
            "match_winners": winners,
        }

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            import gymnasium

            gymnasium.logger.warn("render() called without a render_mode; returning None")
            return None
        from block_env import rendering

        game = self._require_game()
        if self.render_mode == "rgb_array":
            return rendering.render_table(self.config, game, last_hand=self.last_hand)
        if self.render_mode == "svg":
            from block_env.svg import position_svg

            return position_svg(game, self.config, last_hand=self.last_hand)
        viewer = self._seat.get(self.agent_selection, game.current)
        last = None if self.last_hand is None else self.last_hand.result
        text = rendering.render_text(self.config, game, viewer, self.lang, last_result=last)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release: rendering opens no window."""

    def _require_game(self) -> State:
        if self.game is None:
            raise RuntimeError("call reset() before using the environment")
        return self.game
