"""env()'s one-layer classic wrapper behaves as PettingZoo's three stacked wrappers."""

from __future__ import annotations

import random
import warnings
from typing import Any

import numpy as np
import pytest
from pettingzoo.utils import wrappers

import block_env


class _JudgeByGame(wrappers.TerminateIllegalWrapper):
    """The reference's illegal-move check: the game's legal actions, not the handed-out mask
    (what env() did with PettingZoo's stack before it became one layer)."""

    def step(self, action: Any) -> None:
        raw = self.env.unwrapped
        agent = raw.agent_selection
        if raw.agents and not (raw.terminations[agent] or raw.truncations[agent]):
            self._prev_obs = {"action_mask": _Legal(raw._legal_actions())}
        super().step(action)


class _Legal:
    def __init__(self, actions: tuple[int, ...]) -> None:
        self.actions = actions

    def __getitem__(self, action: Any) -> bool:
        return action in self.actions


def _stack(**kwargs: Any) -> Any:
    """PettingZoo's own classic stack over raw_env (the reference)."""
    env = _JudgeByGame(block_env.raw_env(**kwargs), illegal_reward=-1)
    return wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(env))


def _call(env: Any, method: str, *args: Any) -> tuple:
    """(result or exception type and message, warnings raised) of one call."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out: Any = getattr(env, method)(*args)
        except Exception as err:  # compared between the two envs
            out = (type(err).__name__, str(err))
    return out, [str(w.message) for w in caught]


def _view(env: Any) -> tuple:
    """Everything a caller can read after a call, as comparable values."""
    if not env.unwrapped.agents and env.unwrapped.game is None:
        return ()
    raw = env.unwrapped
    last = None
    if raw.agents:
        obs, rew, term, trunc, info = env.last()
        last = (obs["observation"].tobytes(), obs["action_mask"].tobytes(), rew, term, trunc)
        last += (sorted(info),)
    return (
        last,
        list(raw.agents),
        raw.agent_selection,
        dict(raw.rewards),
        dict(raw._cumulative_rewards),
        dict(raw.terminations),
        dict(raw.truncations),
    )


def _same(a: Any, b: Any) -> None:
    assert _norm(a) == _norm(b)


def _norm(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _norm(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return type(x)(_norm(v) for v in x)
    if isinstance(x, np.ndarray):
        return ("array", x.tobytes(), x.dtype.str)
    return x


@pytest.mark.parametrize("players", [2, 3, 4])
def test_classic_env_matches_pettingzoo_stack(players: int) -> None:
    """Random sequences of legal, illegal, out-of-range, None, bool and numpy actions,
    resets and calls before reset: same results, errors, warnings and state."""
    rng = random.Random(players)
    for episode in range(30):
        ours, ref = block_env.env(num_players=players), _stack(num_players=players)
        if episode % 5 == 0:  # calls before reset
            for method, args in (("step", (0,)), ("observe", ("player_0",)), ("last", ())):
                _same(_call(ours, method, *args), _call(ref, method, *args))
        for env in (ours, ref):
            env.reset(seed=episode)
        for _ in range(200):
            raw = ours.unwrapped
            legal = list(raw._legal_actions()) if raw.agents else []
            roll = rng.random()
            if roll < 0.8 and legal:
                action: Any = rng.choice(legal)
                if rng.random() < 0.3:
                    action = np.int64(action)
            elif roll < 0.85:
                action = None
            elif roll < 0.9:
                action = rng.choice([-1, 57, 10**30, True, 1.0, "0"])
            elif roll < 0.95:
                action = rng.randrange(57)  # often illegal
            else:
                action = None if not raw.agents else rng.randrange(57)
            _same(_call(ours, "step", action), _call(ref, "step", action))
            _same(_view(ours), _view(ref))
            if rng.random() < 0.02:
                seed = rng.randrange(100)
                for env in (ours, ref):
                    env.reset(seed=seed)


def test_classic_env_str_and_agent_iter() -> None:
    """Printed like the stack, and agent_iter still insists on a step per agent."""
    ours, ref = block_env.env(), _stack()
    assert str(ours) == str(ref)
    ours.reset(seed=0)
    it = iter(ours.agent_iter())
    next(it)
    with pytest.raises(AssertionError, match="need to call step"):
        next(it)
