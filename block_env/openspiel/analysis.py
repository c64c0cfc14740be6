"""Exact analysis of small Block games: game sizes, NashConv of bots and learners, CFR+.

Everything here runs OpenSpiel's own algorithms on the ``python_block_env`` game:
``exploitability.nash_conv`` (exact best responses over the whole tree), ``cfr.CFRPlusSolver``
and the PyTorch NFSP. The block-env bots act on the AEC observation dict, so a bot becomes an
OpenSpiel policy by mapping each information state to that dict (``encode`` + mask) at any
history of the information state (the observation depends only on what the seat knows).
"""

from __future__ import annotations

import random
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyspiel
from open_spiel.python import policy as os_policy
from open_spiel.python.algorithms import cfr, exploitability

from block_env.openspiel import game as _game  # noqa: F401  (registers the game)

Act = Callable[[Mapping[str, np.ndarray]], int]


def load(
    max_pip: int,
    hand_size: int | None,
    num_players: int = 2,
    partnership: bool = False,
    opener: str = "rotate",
) -> pyspiel.Game:
    """The ``python_block_env`` game of these parameters (``hand_size`` None or 0: the
    rules' own)."""
    return pyspiel.load_game(
        _game.GAME_NAME,
        {
            "num_players": num_players,
            "max_pip": max_pip,
            "hand_size": hand_size or 0,
            "partnership": partnership,
            "opener": opener,
        },
    )


@dataclass
class Tree:
    """The whole game tree, walked once: sizes and one history per information state."""

    histories: int  # every node: chance, decision and terminal
    terminals: int
    chance_nodes: int
    decision_nodes: int
    info_states: dict[str, pyspiel.State]  # information state string -> one of its histories
    seconds: float

    def sizes(self) -> dict[str, Any]:
        """The counts as a JSON-ready dict."""
        return {
            "histories": self.histories,
            "terminal_histories": self.terminals,
            "chance_nodes": self.chance_nodes,
            "decision_nodes": self.decision_nodes,
            "information_states": len(self.info_states),
            "walk_seconds": round(self.seconds, 3),
        }


def walk(game: pyspiel.Game) -> Tree:
    """Visit every history of ``game`` (depth first) and count it."""
    start = time.perf_counter()
    counts = {"h": 0, "t": 0, "c": 0, "d": 0}
    infos: dict[str, pyspiel.State] = {}
    stack = [game.new_initial_state()]
    while stack:
        state = stack.pop()
        counts["h"] += 1
        if state.is_terminal():
            counts["t"] += 1
            continue
        if state.is_chance_node():
            counts["c"] += 1
            actions = [a for a, _ in state.chance_outcomes()]
        else:
            counts["d"] += 1
            key = state.information_state_string()
            infos.setdefault(key, state)
            actions = state.legal_actions()
        stack.extend(state.child(a) for a in actions)
    return Tree(
        counts["h"], counts["t"], counts["c"], counts["d"], infos, time.perf_counter() - start
    )


def tabular(
    game: pyspiel.Game, tree: Tree, probs: Callable[[pyspiel.State], dict[int, float]]
) -> os_policy.TabularPolicy:
    """A ``TabularPolicy`` holding ``probs(state)`` at each information state of ``tree``."""
    pol = os_policy.TabularPolicy(game)
    for key, state in tree.info_states.items():
        row = pol.policy_for_key(key)
        row[:] = 0.0
        for a, p in probs(state).items():
            row[a] = p
    return pol


def uniform_probs(state: pyspiel.State) -> dict[int, float]:
    """Every legal action equally likely."""
    legal = state.legal_actions()
    return {a: 1.0 / len(legal) for a in legal}


def agent_probs(act: Act) -> Callable[[pyspiel.State], dict[int, float]]:
    """Probabilities of a deterministic bot: all mass on the action it plays from the AEC
    observation dict of the seat to act."""

    def probs(state: pyspiel.State) -> dict[int, float]:
        obs = state.env_observation(state.current_player())
        return {int(act(obs)): 1.0}

    return probs


def played_probs(agent: Any) -> Callable[[pyspiel.State], dict[int, float]]:
    """The policy an agent plays: the distribution of its ``probabilities(observation)``
    when it samples from it (no ``greedy`` attribute, or ``greedy`` False), else all mass on
    the move of ``act`` (greedy policies and deterministic bots)."""
    if not hasattr(agent, "probabilities") or getattr(agent, "greedy", False):
        return agent_probs(agent.act)

    def probs(state: pyspiel.State) -> dict[int, float]:
        obs = state.env_observation(state.current_player())
        p = np.asarray(agent.probabilities(obs), dtype=np.float64)
        legal = np.flatnonzero(obs["action_mask"])
        total = p[legal].sum()
        return {int(a): float(p[a] / total) for a in legal}

    return probs


def pimc_probs(worlds: int, seed: int) -> Callable[[pyspiel.State], dict[int, float]]:
    """PIMC as a policy: its generator is reseeded from the information state, so each
    information state gets one fixed move (a pure strategy, reproducible)."""
    import agents

    bot = agents.make("pimc", worlds=worlds, seed=seed)

    def probs(state: pyspiel.State) -> dict[int, float]:
        key = state.information_state_string()
        bot.rng = random.Random(seed * 1_000_003 + zlib.crc32(key.encode()))
        return {int(bot.act(state.env_observation(state.current_player()))): 1.0}

    return probs


def network_probs(path: str) -> Callable[[pyspiel.State], dict[int, float]]:
    """A trained policy file's action distribution (softmax over the legal logits)."""
    import torch

    import agents

    model = agents.load(path).model

    def probs(state: pyspiel.State) -> dict[int, float]:
        obs = state.env_observation(state.current_player())
        with torch.no_grad():
            o = torch.as_tensor(obs["observation"], dtype=torch.float32)[None]
            m = torch.as_tensor(obs["action_mask"])[None]
            p = torch.softmax(model.masked_logits(o, m), dim=-1)[0].double().numpy()
        legal = np.flatnonzero(obs["action_mask"])
        total = p[legal].sum()
        return {int(a): float(p[a] / total) for a in legal}

    return probs


def nash_conv(game: pyspiel.Game, pol: os_policy.Policy) -> float:
    """OpenSpiel's NashConv: the sum over players of best-response value minus policy value."""
    return float(exploitability.nash_conv(game, pol))


def run_cfr_plus(
    game: pyspiel.Game, iterations: int, checkpoints: list[int] | None = None
) -> tuple[os_policy.Policy, list[dict[str, float]]]:
    """OpenSpiel's CFR+ for ``iterations``; NashConv of the average policy at the
    ``checkpoints`` (iteration counts), with the solver's own wall time so far."""
    marks = set(checkpoints or [iterations]) | {iterations}
    solver = cfr.CFRPlusSolver(game)
    curve, spent = [], 0.0
    for i in range(1, iterations + 1):
        start = time.perf_counter()
        solver.evaluate_and_update_policy()
        spent += time.perf_counter() - start
        if i in marks:
            curve.append(
                {
                    "iteration": i,
                    "seconds": spent,
                    "nash_conv": nash_conv(game, avg := solver.average_policy()),
                }
            )
    return avg, curve


def nfsp_learners(
    num_players: int,
    size: int,
    num_actions: int,
    hidden: list[int],
    optimizer: str,
    lr: float,
    seed: int,
) -> list[Any]:
    """One OpenSpiel PyTorch NFSP learner per player on vectors of ``size``: ``hidden``
    layers, ``optimizer`` and ``lr`` for both networks, OpenSpiel's Leduc settings otherwise."""
    from open_spiel.python.pytorch import nfsp

    return [
        nfsp.NFSP(
            p,
            state_representation_size=size,
            num_actions=num_actions,
            hidden_layers_sizes=hidden,
            reservoir_buffer_capacity=int(2e5),
            anticipatory_param=0.1,
            batch_size=128,
            rl_learning_rate=lr,
            sl_learning_rate=lr,
            min_buffer_size_to_learn=1000,
            learn_every=64,
            optimizer_str=optimizer,
            replay_buffer_capacity=int(2e5),
            epsilon_start=0.06,
            epsilon_end=0.001,
            seed=seed + p,
        )
        for p in range(num_players)
    ]


def run_nfsp(
    game: pyspiel.Game,
    tree: Tree,
    episodes: int,
    seed: int = 0,
    checkpoints: list[int] | None = None,
    optimizer: str = "sgd",
    lr: float = 0.01,
) -> tuple[os_policy.Policy, list[dict[str, float]]]:
    """A short run of OpenSpiel's PyTorch NFSP (self-play on the information state tensor);
    NashConv of its average policy at the ``checkpoints`` (episode counts). ``optimizer``
    ("sgd" or "adam") and ``lr`` serve both its networks."""
    import torch
    from open_spiel.python import rl_environment
    from open_spiel.python.pytorch import nfsp

    torch.manual_seed(seed)
    np.random.seed(seed)
    env = rl_environment.Environment(game, seed=seed)
    size = env.observation_spec()["info_state"][0]
    n_actions = env.action_spec()["num_actions"]
    learners = nfsp_learners(game.num_players(), size, n_actions, [64], optimizer, lr, seed)

    def average_probs(state: pyspiel.State) -> dict[int, float]:
        p = state.current_player()
        legal = state.legal_actions()
        obs = {
            "info_state": [state.information_state_tensor(q) for q in range(game.num_players())],
            "legal_actions": [legal if q == p else [] for q in range(game.num_players())],
            "current_player": p,
        }
        step = rl_environment.TimeStep(
            observations=obs, rewards=None, discounts=None, step_type=rl_environment.StepType.MID
        )
        with learners[p].temp_mode_as(nfsp.MODE.AVERAGE_POLICY):
            probs = learners[p].step(step, is_evaluation=True).probs
        total = sum(probs[a] for a in legal)
        return {a: float(probs[a] / total) for a in legal}

    marks = set(checkpoints or [episodes]) | {episodes}
    curve, spent = [], 0.0
    pol = None
    for ep in range(1, episodes + 1):
        start = time.perf_counter()
        step = env.reset()
        while not step.last():
            p = step.observations["current_player"]
            out = learners[p].step(step)
            step = env.step([out.action])
        for learner in learners:
            learner.step(step)
        spent += time.perf_counter() - start
        if ep in marks:
            pol = tabular(game, tree, average_probs)
            curve.append({"iteration": ep, "seconds": spent, "nash_conv": nash_conv(game, pol)})
    return pol, curve
