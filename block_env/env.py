"""PettingZoo AEC environment for Block dominoes over the pure rules engine.

Version History
---------------
* v0: initial release (Pagat individual Block, 2-4 players, variants, seat-relative
  observations of ``observation.OBS_DIM`` floats, 57 actions).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle, seeding
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from block_env import rules
from block_env.config import BlockConfig
from block_env.observation import (
    OBS_DIM,
    OBS_HIGH,
    OBS_LOW,
    STATE_HIGH,
    STATE_LOW,
    encode,
    encode_state,
)
from block_env.rules import State
from block_env.setup import parse_reset_options
from block_env.tiles import NUM_ACTIONS

__all__ = ["env", "raw_env"]

LANGS = ("en", "tr", "hi")


def env(**kwargs: Any) -> AECEnv:
    """``raw_env`` inside PettingZoo's classic wrapper stack: an illegal move ends the game
    with reward -1 for the mover, out-of-range actions assert, and the call order is enforced."""
    wrapped = raw_env(**kwargs)
    wrapped = wrappers.TerminateIllegalWrapper(wrapped, illegal_reward=-1)
    wrapped = wrappers.AssertOutOfBoundsWrapper(wrapped)
    return wrappers.OrderEnforcingWrapper(wrapped)


class raw_env(AECEnv, EzPickle):
    """Block dominoes, individual (Pagat) or partnership, as an AEC game.

    The rules are stated in docs/RULES.md. See the README for the full contract: agents
    ``player_0..player_{n-1}`` seated clockwise, ``Discrete(57)`` actions (``2*tile + end``,
    56 = pass), observation dicts with an int8 ``action_mask``, rewards at each hand's end.
    """

    metadata = {
        "name": "block_v0",
        "render_modes": ["human", "ansi", "rgb_array"],
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
    ) -> None:
        EzPickle.__init__(
            self, num_players, opener, episode, partnership, target_score, reward, render_mode, lang
        )
        super().__init__()
        self.config = BlockConfig(
            num_players=num_players,
            opener=opener,
            episode=episode,
            partnership=partnership,
            target_score=target_score,
            reward=reward,
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
        self.possible_agents = [f"player_{i}" for i in range(num_players)]
        self._seat = {a: i for i, a in enumerate(self.possible_agents)}
        obs_space = spaces.Dict(
            {
                "observation": spaces.Box(OBS_LOW, OBS_HIGH, (OBS_DIM,), np.float32),
                "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), np.int8),
            }
        )
        act_space = spaces.Discrete(NUM_ACTIONS)
        # One shared space object per kind, the same for every agent.
        self.observation_spaces = dict.fromkeys(self.possible_agents, obs_space)
        self.action_spaces = dict.fromkeys(self.possible_agents, act_space)
        self.state_space = spaces.Box(STATE_LOW, STATE_HIGH, STATE_LOW.shape, np.float32)
        self.np_random, _ = seeding.np_random(None)
        self.game: State | None = None
        self.last_hand: State | None = None  # the last finished hand, for rendering
        self._obs_cache: dict[int, dict[str, np.ndarray]] = {}

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    @property
    def scores(self) -> list[int]:
        """Match scores by seat."""
        return list(self._require_game().scores)

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """New match (or hand). ``options`` may hold ``hands``, ``leader`` and ``scores``."""
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
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self.game.current]
        self._obs_cache = {}
        self.last_hand = None

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = self._seat[agent]
        cached = self._obs_cache.get(seat)
        if cached is None:
            game = self._require_game()
            mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
            if seat == game.current and not game.episode_over:
                mask[list(rules.legal_actions(game))] = 1
            cached = {"observation": encode(self.config, game, seat), "action_mask": mask}
            self._obs_cache[seat] = cached
        return cached

    def state(self) -> np.ndarray:
        """Privileged full position (all hands); never part of any agent's observation."""
        return encode_state(self.config, self._require_game())

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        game = self._require_game()
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            raise ValueError(
                f"action {action!r} has type {type(action).__name__}: expected an int in "
                f"0..{NUM_ACTIONS - 1}; legal actions: {list(rules.legal_actions(game))}"
            )
        action = int(action)
        if not (0 <= action < NUM_ACTIONS and self.observe(agent)["action_mask"][action]):
            rules.apply_action(self.config, game, action)  # raises, naming the legal actions
        after = rules.apply_legal_action(self.config, game, action)
        self._cumulative_rewards[agent] = 0.0
        self._obs_cache = {}
        for a in self.agents:
            self.infos[a] = {}
        if after.result is None:
            self.rewards = dict.fromkeys(self.agents, 0.0)
            self.game = after
        else:
            self._finish_hand(after)
        if self.game.episode_over:
            # PettingZoo convention: always advance agent_selection, even on the last move.
            self.agent_selection = self.possible_agents[(self._seat[agent] + 1) % len(self._seat)]
        else:
            self.agent_selection = self.possible_agents[self.game.current]
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _finish_hand(self, after: State) -> None:
        rewards = rules.hand_rewards(self.config, after)
        self.rewards = {a: rewards[i] for i, a in enumerate(self.possible_agents)}
        result = after.result
        info: dict[str, Any] = {
            "hand_result": {
                "winner": result.winner,
                "blocked": result.blocked,
                "pips": list(result.pips),
                "points": list(result.points),
            }
        }
        if after.episode_over:
            info["match_winner"] = after.winners[0] if after.winners else None
            info["match_winners"] = list(after.winners)
            self.terminations = dict.fromkeys(self.agents, True)
            self.game = after
        else:
            self.game = rules.next_hand(self.config, after, self.np_random)
        self.infos = {a: dict(info) for a in self.agents}
        self.last_hand = after

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            import gymnasium

            gymnasium.logger.warn("render() called without a render_mode; returning None")
            return None
        from block_env import rendering

        game = self._require_game()
        if self.render_mode == "rgb_array":
            return rendering.render_rgb(game)
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
