"""Gymnasium single-agent adapter: one learner seat against fixed opponents.

``SingleAgentBlockEnv`` seats a learner at one seat of the AEC ``raw_env`` and plays every
other seat inside ``step`` with opponent agents (names for ``agents.make``, agent objects,
or snapshot ``agents.policy.PolicyAgent``\\ s). The learner sees only its own observation
vector (a ``Box``), gets its own reward summed over everything that happened since its
last move (the opponents' moves and the hand's end included), and ``action_masks()``
gives its legal actions, which is what sb3-contrib's ``MaskablePPO`` looks for::

    from sb3_contrib import MaskablePPO
    env = SingleAgentBlockEnv(opponents="greedy", episode="hand", scale_obs=True)
    model = MaskablePPO("MlpPolicy", env).learn(10_000)

Episodes follow the game's ``episode`` option (default ``"match"``, as in the AEC env).
A hand that ends before the learner gets a decision (it can block right after the
opening) is not an episode: in ``"hand"`` mode ``reset`` deals again; in ``"match"`` mode
its reward is added to the learner's next step. Opponent agents built from names are
reseeded from the env's generator on ``reset(seed=...)``, so seeded runs repeat.

Observations, as in ``block_env.evaluate``: ``obs_type`` is the learner's (the plain
observation by default, or ``"information_state"``), and each opponent reads its own
``obs_type`` attribute (``agents.load`` gives an information-state policy
``obs_type="information_state"``). When the learner or any opponent reads the information
state, the inner game env (``self.game``) is made with ``obs_type="information_state"`` and
everyone who reads the plain observation gets its first ``obs_dim`` entries
(``evaluate.plain_observation``): an opponent plays exactly as in ``evaluate``, and the
learner's observation space and observations do not depend on its opponents. Opponents
swapped in by ``set_opponents`` that need the other kind of game env get it at the next
``reset`` (at once when no episode is running): the running episode is finished on the game
env and opponents it started with.

An illegal learner action follows PettingZoo's classic convention (``TerminateIllegalWrapper``):
the episode ends at once with ``illegal_reward`` (default -1) and ``info["illegal_action"]``
True (False on every other step);
``illegal_action="raise"`` raises ValueError instead. Masked learners never hit either.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from block_env.agent_specs import agent_label, agent_obs_type, build_agent, plain_observation
from block_env.env import raw_env
from block_env.information_state import check_obs_type, information_state_bounds
from block_env.observation import obs_layout

SEAT_MODES = ("rotate", "random")
ALL_PIPS = 168  # pips of the whole double-six set (N(N+1)(N+2)/2 for [0|0]..[N|N])


class SingleAgentBlockEnv(gym.Env):
    """One learner against fixed opponents; see the module docstring.

    ``opponents``: one spec for every other seat, or a list of ``num_players - 1`` specs by
    relative seat (1 = the seat after the learner). ``opponent_pool``: specs of which one is
    drawn per episode to play all other seats (overrides ``opponents``). ``learner_seat``:
    a seat index, ``"rotate"`` (0, 1, ... per episode, restarting at a seeded reset) or
    ``"random"``. ``obs_type``: the learner's observation, ``"observation"`` (default) or
    ``"information_state"`` (see the module docstring). ``scale_obs`` divides the
    observation by ``OBS_SCALE`` (the information state's history, already 0..1, is kept).
    ``illegal_action`` and ``illegal_reward``: see the module docstring. Other keywords
    configure the game as for ``block_env.env``.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        opponents: Any = "random",
        learner_seat: int | str = "rotate",
        opponent_pool: Sequence[Any] | None = None,
        scale_obs: bool = False,
        illegal_action: str = "terminate",
        illegal_reward: float = -1.0,
        render_mode: str | None = None,
        obs_type: str = "observation",
        **config: Any,
    ) -> None:
        super().__init__()
        if illegal_action not in ("terminate", "raise"):
            raise ValueError(
                f"illegal_action={illegal_action!r} is not allowed: use 'terminate' or 'raise'"
            )
        self.illegal_action = illegal_action
        self.illegal_reward = float(illegal_reward)
        self.obs_type = check_obs_type(obs_type)  # the learner's
        # the inner game env is rebuilt (same game, other obs_type) when opponents need it
        self._game_kwargs: dict[str, Any] = {"render_mode": render_mode, **config}
        self.game = raw_env(obs_type=self.obs_type, **self._game_kwargs)
        self.config = self.game.config
        self.render_mode = render_mode
        n = self.config.num_players
        if isinstance(learner_seat, str):
            if learner_seat not in SEAT_MODES:
                raise ValueError(
                    f"learner_seat={learner_seat!r} is not allowed: use a seat 0..{n - 1}, "
                    f"'rotate' or 'random'"
                )
        elif isinstance(learner_seat, bool) or not 0 <= int(learner_seat) < n:
            raise ValueError(f"learner_seat={learner_seat!r} is not a seat: use 0..{n - 1}")
        self.learner_seat = learner_seat
        self.scale_obs = bool(scale_obs)
        lay = obs_layout(self.config)
        self._plain_dim = lay.dim
        self._num_actions = self.config.tiles.num_actions
        if self.obs_type == "information_state":
            low, high = information_state_bounds(self.config)
        else:
            low, high = lay.low, lay.high.copy()
        dim = len(low)
        # Scores never pass target + the set's pips (168 for the 28 tiles): a finite bound.
        high[lay.fields["scores"]] = self.config.target + sum(self.config.tiles.pips)
        high[lay.fields["target"]] = self.config.target
        self._scale = None
        if self.scale_obs:
            scale = np.ones(dim, dtype=np.float32)
            scale[: lay.dim] = 1.0 / lay.scale
            self._scale = scale
            low, high = low * scale, high * scale
        self.observation_space = spaces.Box(low, high, (dim,), np.float32)
        self.action_space = spaces.Discrete(self._num_actions)
        self._episodes = 0
        self._seat = 0
        self._players: list[Any] = []
        self._cut: list[bool] = []  # per seat: that player gets the plain observation cut out
        self._lineups: list[list[Any]] = []
        self._pending = 0.0
        self._over = True
        self.set_opponents(opponents, opponent_pool)

    # -- opponents ----------------------------------------------------------------------

    def set_opponents(
        self, opponents: Any = None, opponent_pool: Sequence[Any] | None = None
    ) -> None:
        """Replace the opponents (takes effect at the next ``reset``), e.g. to refresh
        self-play snapshots from a training callback. A bad spec raises ValueError and
        changes nothing. When the new opponents need the other kind of inner game env
        (information state or not), ``self.game`` is rebuilt at once if no episode is
        running, else at the next ``reset`` (the running episode ends as it began)."""
        n = self.config.num_players
        lineups = self._lineups
        if opponent_pool is not None:
            pool = list(opponent_pool)
            if not pool:
                raise ValueError("opponent_pool is empty: give at least one agent")
            lineups = [[p] * (n - 1) for p in pool]
        elif isinstance(opponents, (list, tuple)):
            if len(opponents) != n - 1:
                raise ValueError(
                    f"{len(opponents)} opponents given for {n} players: give one spec, or "
                    f"{n - 1} (one per other seat)"
                )
            lineups = [list(opponents)]
        elif opponents is not None:
            lineups = [[opponents] * (n - 1)]
        if not lineups:
            raise ValueError("no opponents given: give opponents or opponent_pool")
        # Build once now so a bad spec fails here, not in the middle of training.
        built = [self._build(lineup, seed=None) for lineup in lineups]
        reads = {self.obs_type} | {agent_obs_type(a) for others in built for a in others}
        self._lineups, self._built = lineups, built
        self._game_obs_type = "information_state" if "information_state" in reads else "observation"
        if self._over:
            self._sync_game()

    def _sync_game(self) -> None:
        """Rebuild the inner game env when its ``obs_type`` is not the one the learner and
        the opponents need, and the opponents built from specs on it (oracles read the env
        they were built with), unseeded as ``set_opponents`` builds them."""
        if self.game.obs_type == self._game_obs_type:
            return
        self.game.close()
        self.game = raw_env(obs_type=self._game_obs_type, **self._game_kwargs)
        self._built = [self._build(lineup, seed=None) for lineup in self._lineups]

    def _build(self, lineup: list[Any], seed: int | None) -> list[Any]:
        return [
            build_agent(spec, self.game, None if seed is None else seed + r)
            for r, spec in enumerate(lineup)
        ]

    @property
    def opponent_names(self) -> list[list[str]]:
        return [[agent_label(s) for s in lineup] for lineup in self._lineups]

    # -- gymnasium API ------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        n = self.config.num_players
        self._sync_game()
        if seed is not None:
            self._episodes = 0
            base = int(self.np_random.integers(2**31))
            self._built = [
                self._build(lineup, seed=base + 97 * i) for i, lineup in enumerate(self._lineups)
            ]
        self._pending = 0.0
        while True:
            if isinstance(self.learner_seat, str):
                if self.learner_seat == "rotate":
                    self._seat = self._episodes % n
                else:
                    self._seat = int(self.np_random.integers(n))
            else:
                self._seat = int(self.learner_seat)
            self._episodes += 1
            pick = int(self.np_random.integers(len(self._built))) if len(self._built) > 1 else 0
            others = self._built[pick]
            self._players = [None] * n
            for r in range(1, n):
                self._players[(self._seat + r) % n] = others[r - 1]
            info_game = self.game.obs_type == "information_state"
            self._cut = [
                info_game and p is not None and agent_obs_type(p) == "observation"
                for p in self._players
            ]
            self.game.reset(seed=int(self.np_random.integers(2**63)), options=options)
            self._over = False
            self._pending, ended = self._play_opponents()
            if not self._over:
                break
            if options is not None:
                raise ValueError("with these reset options the hand ends before the learner acts")
        return self._observation(), self._info(ended)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._over:
            raise RuntimeError("the episode is over: call reset()")
        agent = self.game.possible_agents[self._seat]
        mask = self.game.observe(agent)["action_mask"]
        legal = isinstance(action, (int, np.integer)) and 0 <= int(action) < self._num_actions
        if not legal or not mask[int(action)]:
            if self.illegal_action == "raise":
                raise ValueError(
                    f"action {action!r} is not legal for the learner: legal actions are "
                    f"{np.flatnonzero(mask).tolist()}"
                )
            self._over = True
            info = {**self._info(None), "illegal_action": True}
            return self._observation(), self.illegal_reward, True, False, info
        self.game.step(int(action))
        reward = self._pending + float(self.game.rewards[agent])
        self._pending = 0.0
        ended = self._hand_ended_info()
        self._over = all(self.game.terminations.values())
        if not self._over:
            more, later = self._play_opponents()
            reward += more
            ended = later if later is not None else ended
        return self._observation(), reward, self._over, False, self._info(ended)

    def action_masks(self) -> np.ndarray:
        """Legal actions of the learner (bool, length 2T+1: 57 for the standard set); all
        False once the episode ended."""
        if self._over:
            return np.zeros(self._num_actions, dtype=bool)
        agent = self.game.possible_agents[self._seat]
        return self.game.observe(agent)["action_mask"].astype(bool)

    def render(self) -> str | None:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; returning None")
            return None
        return self.game.render()

    # -- internals ----------------------------------------------------------------------

    def _observation(self) -> np.ndarray:
        """The learner's observation: of its own ``obs_type`` whatever the game env's."""
        observed = self.game.observe(self.game.possible_agents[self._seat])
        if self.obs_type == "observation" and self.game.obs_type == "information_state":
            observed = plain_observation(observed, self._plain_dim)
        obs = observed["observation"]
        return obs * self._scale if self._scale is not None else obs  # observe() copies

    def _info(self, ended: dict[str, Any] | None) -> dict[str, Any]:
        """The learner's info: the AEC env's flat info keys (those of the last step that
        ended a hand since the learner's previous decision, else the current ones) and
        ``learner_seat`` and ``illegal_action``; the same keys at every step."""
        if ended is None:
            ended = self.game.infos[self.game.possible_agents[self._seat]]
        info = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in ended.items()}
        return {**info, "learner_seat": self._seat, "illegal_action": False}

    def _hand_ended_info(self) -> dict[str, Any] | None:
        """The learner's AEC info if the last game step ended a hand, else None."""
        info = self.game.infos[self.game.possible_agents[self._seat]]
        return dict(info) if info["hand_over"] else None

    def _play_opponents(self) -> tuple[float, dict[str, Any] | None]:
        """Opponents move until the learner is to act or the episode ends; returns the
        learner's reward meanwhile and the info of the last hand that ended (or None)."""
        game = self.game
        me = game.possible_agents[self._seat]
        total = 0.0
        ended: dict[str, Any] | None = None
        while True:
            if all(game.terminations.values()):
                self._over = True
                return total, ended
            agent = game.agent_selection
            if agent == me:
                return total, ended
            seat = int(agent.rsplit("_", 1)[1])
            observed = game.observe(agent)
            if self._cut[seat]:
                observed = plain_observation(observed, self._plain_dim)
            game.step(int(self._players[seat].act(observed)))
            total += float(game.rewards[me])
            ended = self._hand_ended_info() or ended

    def close(self) -> None:
        self.game.close()


def make_env(**kwargs: Any) -> SingleAgentBlockEnv:
    """Factory for vectorised envs (``make_vec_env(make_env, env_kwargs=...)``)."""
    return SingleAgentBlockEnv(**kwargs)
