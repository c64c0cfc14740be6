"""Block as an OpenSpiel game: ``pyspiel.load_game("python_block_env", {...})``.

One hand per episode, played by the pure rules engine (``block_env.rules``) so that the game
is exactly the AEC env's ``episode="hand"``, ``reward="zero_sum"`` game. Parameters:
``num_players`` (2-4), ``max_pip`` (the set [0|0]..[N|N]), ``hand_size`` (0 = the rules'
default for the player count), ``partnership`` and ``opener`` ("rotate" or "highest_double").

Chance nodes, all exact and enumerable:

* ``opener="rotate"``: first a fair lot for the leader (one outcome per seat);
* then the deal, seat by seat, one node per tile: each seat's tiles are drawn in increasing
  tile order, so every hand (a set of tiles) has exactly one path, with probability
  1 / C(m, k) for m tiles left and k to deal. Tiles that are forced (as many candidates as
  tiles still due) are dealt without a node.

Player actions are the env's action ids (``2 * tile + end``, pass = 2T). The information
state is the seat, its dealt hand, the leader and every move so far (all public); the
observation is the env's observation vector (``block_env.observation.encode``).
"""

from __future__ import annotations

from math import comb
from typing import Any

import numpy as np
import pyspiel

from block_env import rules
from block_env.config import BlockConfig
from block_env.observation import decode, encode
from block_env.tiles import TileSet, mask_of

GAME_NAME = "python_block_env"
DEFAULT_PARAMS: dict[str, Any] = {
    "num_players": 2,
    "max_pip": 6,
    "hand_size": 0,
    "partnership": False,
    "opener": "rotate",
}

_GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Block dominoes (block-env, one hand)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=4,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=DEFAULT_PARAMS,
)


def max_moves(num_players: int, hand_size: int) -> int:
    """Most player moves in one hand: every tile placed, at most n-1 passes between plays."""
    plays = num_players * hand_size
    return plays + (plays - 1) * (num_players - 1)


class BlockGame(pyspiel.Game):
    """The OpenSpiel game; ``config`` is the block-env configuration it plays."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        merged = dict(DEFAULT_PARAMS)
        merged.update(params or {})
        unknown = set(merged) - set(DEFAULT_PARAMS)
        if unknown:
            raise ValueError(
                f"unknown parameters {sorted(unknown)}: use {', '.join(DEFAULT_PARAMS)}"
            )
        self.config: BlockConfig = BlockConfig(  # one hand, zero-sum points
            num_players=int(merged["num_players"]),
            opener=str(merged["opener"]),
            episode="hand",
            partnership=bool(merged["partnership"]),
            reward="zero_sum",
            max_pip=int(merged["max_pip"]),
            hand_size=int(merged["hand_size"]) or None,
        )
        self.tiles: TileSet = self.config.tiles
        n, k, t = self.config.num_players, self.config.hand_size, self.tiles.num_tiles
        heaviest = sorted((a + b for a, b in self.tiles.tiles), reverse=True)
        bound = float(sum(heaviest[: min(t, (n - 1) * k)]))
        self.move_limit = max_moves(n, k)
        info = pyspiel.GameInfo(
            num_distinct_actions=2 * t + 1,
            max_chance_outcomes=max(t, n),
            num_players=n,
            min_utility=-bound,
            max_utility=bound,
            utility_sum=0.0,
            max_game_length=self.move_limit,
        )
        super().__init__(_GAME_TYPE, info, merged)

    def new_initial_state(self) -> BlockState:
        """The state before the lot and the deal."""
        return BlockState(self)

    def make_py_observer(
        self, iig_obs_type: pyspiel.IIGObservationType | None = None, params: Any = None
    ) -> BlockObserver:
        """Information state (perfect recall) or the env's observation vector."""
        if params:
            raise ValueError(f"observer parameters are not supported, got {params!r}")
        if iig_obs_type is None:
            iig_obs_type = pyspiel.IIGObservationType(perfect_recall=False)
        return BlockObserver(self, iig_obs_type)


class BlockState(pyspiel.State):
    """A position: the lot and deal so far, then the rules engine's state."""

    def __init__(self, game: BlockGame) -> None:
        super().__init__(game)
        # The state keeps what it needs itself: pyspiel may hand states a game wrapper
        # without the Python attributes.
        self.config = game.config
        self.tiles = game.tiles
        self.num_actions = 2 * game.tiles.num_tiles + 1
        n = self.config.num_players
        self.leader: int | None = None if self.config.opener == "rotate" else -1
        self.dealt: list[list[int]] = [[] for _ in range(n)]  # tiles per seat, ascending
        self.state: rules.State | None = None  # set once the deal is complete
        self.moves: list[int] = []  # player actions, in order
        self._left = list(range(game.tiles.num_tiles))  # tiles not dealt yet, ascending
        self._advance()

    def __deepcopy__(self, memo: dict) -> BlockState:
        # pyspiel clones Python states with deepcopy; everything here is immutable except the
        # lists, so a shallow copy of those is a full copy (and much faster than deepcopy).
        new = self.__class__.__new__(self.__class__)
        pyspiel.State.__init__(new, self.get_game())
        new.__dict__.update(self.__dict__)
        new.dealt = [list(h) for h in self.dealt]
        new.moves = list(self.moves)
        new._left = list(self._left)
        return new

    # -- chance ---------------------------------------------------------------------------
    def _dealing_seat(self) -> int:
        k = self.config.hand_size
        return next(s for s, h in enumerate(self.dealt) if len(h) < k)

    def _candidates(self) -> tuple[list[int], int]:
        """(tiles the next deal node may give, tiles still due to that seat)."""
        seat = self._dealing_seat()
        hand = self.dealt[seat]
        low = hand[-1] if hand else -1
        return [t for t in self._left if t > low], self.config.hand_size - len(hand)

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """(outcome, probability) pairs of this chance node."""
        if self.leader is None:
            n = self.config.num_players
            return [(s, 1.0 / n) for s in range(n)]
        cands, due = self._candidates()
        total = comb(len(cands), due)
        m = len(cands)
        out = []
        for r, t in enumerate(cands):
            ways = comb(m - r - 1, due - 1)
            if ways:
                out.append((t, ways / total))
        return out

    def _deal_tile(self, tile: int) -> None:
        self.dealt[self._dealing_seat()].append(tile)
        self._left.remove(tile)

    def _advance(self) -> None:
        """Deal forced tiles; once every hand is full, start the hand in the rules engine."""
        if self.leader is None:
            return
        k, n = self.config.hand_size, self.config.num_players
        while any(len(h) < k for h in self.dealt):
            cands, due = self._candidates()
            if len(cands) != due:
                return
            for t in cands:
                self._deal_tile(t)
        hands = tuple(mask_of(h) for h in self.dealt)
        lead = self.leader if self.leader >= 0 else 0
        self.state = rules.start_hand(self.config, hands, lead, (0,) * n)
        self.leader = self.state.leader

    # -- OpenSpiel API --------------------------------------------------------------------
    def current_player(self) -> int:
        """Seat to act, CHANCE while dealing, TERMINAL once the hand is over."""
        if self.state is None:
            return pyspiel.PlayerId.CHANCE
        if self.state.result is not None:
            return pyspiel.PlayerId.TERMINAL
        return self.state.current

    def _legal_actions(self, player: int) -> list[int]:
        if self.state is None or self.state.result is not None or player != self.state.current:
            return []
        return list(rules.legal_actions(self.state))

    def _apply_action(self, action: int) -> None:
        action = int(action)
        if self.state is None:
            legal = [a for a, _ in self.chance_outcomes()]
            if action not in legal:
                raise ValueError(f"chance outcome {action} is not possible here; use {legal}")
            if self.leader is None:
                self.leader = action
            else:
                self._deal_tile(action)
            self._advance()
            return
        self.state = rules.apply_action(self.config, self.state, action)
        self.moves.append(action)

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            if self.leader is None:
                return f"lot: seat {action} leads"
            return f"deal {self.tiles.tile_str(action)} to seat {self._dealing_seat()}"
        return self.tiles.describe_action(action)

    def is_terminal(self) -> bool:
        """True once the hand has ended (domino or block)."""
        return self.state is not None and self.state.result is not None

    def returns(self) -> list[float]:
        """Zero-sum points of the hand by seat (0 for everyone until it ends)."""
        if not self.is_terminal():
            return [0.0] * self.config.num_players
        return list(rules.hand_rewards(self.config, self.state))

    def __str__(self) -> str:
        tiles = self.tiles
        hands = " / ".join(" ".join(tiles.tile_str(t) for t in h) for h in self.dealt)
        moves = " ".join(tiles.short_action(a) for a in self.moves)
        return f"leader {self.leader} | hands {hands} | moves {moves}"

    # -- views used by the observer and by the policies -----------------------------------
    def information_key(self, player: int) -> str:
        """Perfect-recall information state of ``player`` as a string."""
        tiles = self.tiles
        hand = " ".join(tiles.tile_str(t) for t in self.dealt[player])
        lead = "?" if self.leader is None or self.state is None else str(self.leader)
        moves = " ".join(tiles.short_action(a) for a in self.moves)
        return f"p{player} hand {hand} leader {lead} moves {moves}"

    def env_observation(self, player: int) -> dict[str, np.ndarray]:
        """The AEC env's observation dict of ``player`` here (vector and action mask)."""
        if self.state is None:
            raise ValueError("no observation before the deal is complete")
        mask = np.zeros(self.num_actions, dtype=np.int8)
        if self.state.result is None and player == self.state.current:
            mask[list(rules.legal_actions(self.state))] = 1
        return {"observation": encode(self.config, self.state, player), "action_mask": mask}


class BlockObserver:
    """PyObserver: the perfect-recall information state, or the env's observation vector."""

    def __init__(self, game: BlockGame, iig_obs_type: pyspiel.IIGObservationType) -> None:
        if iig_obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER or (
            not iig_obs_type.public_info
        ):
            raise ValueError(
                "only the single-player views are supported (private_info=SINGLE_PLAYER, "
                "public_info=True)"
            )
        self.game = game
        self.perfect_recall = bool(iig_obs_type.perfect_recall)
        n, t = game.num_players(), game.tiles.num_tiles
        if self.perfect_recall:
            pieces = [
                ("player", n, (n,)),
                ("leader", n, (n,)),
                ("hand", t, (t,)),
                ("moves", game.move_limit * (2 * t + 1), (game.move_limit, 2 * t + 1)),
            ]
        else:
            size = encode(game.config, _blank_state(game), 0).shape[0]
            pieces = [("observation", size, (size,))]
        self.tensor = np.zeros(sum(p[1] for p in pieces), np.float32)
        self.dict: dict[str, np.ndarray] = {}
        i = 0
        for name, size, shape in pieces:
            self.dict[name] = self.tensor[i : i + size].reshape(shape)
            i += size

    def set_from(self, state: BlockState, player: int) -> None:
        """Fill ``tensor`` with ``player``'s view of ``state``."""
        self.tensor.fill(0)
        if not self.perfect_recall:
            if state.state is not None:
                self.dict["observation"][:] = encode(state.config, state.state, player)
            return
        self.dict["player"][player] = 1
        if state.state is not None:
            self.dict["leader"][state.leader] = 1
        self.dict["hand"][state.dealt[player]] = 1
        moves = self.dict["moves"]
        for i, a in enumerate(state.moves):
            moves[i, a] = 1

    def string_from(self, state: BlockState, player: int) -> str:
        """``player``'s view of ``state`` as a string."""
        if self.perfect_recall:
            return state.information_key(player)
        if state.state is None:
            return f"p{player} dealing"
        view = decode(encode(state.config, state.state, player))
        return " ".join(f"{k}={v}" for k, v in view.items())


def _blank_state(game: BlockGame) -> rules.State:
    n = game.config.num_players
    return rules.start_hand(game.config, (1,) + (0,) * (n - 1), 0, (0,) * n)


pyspiel.register_game(_GAME_TYPE, BlockGame)
