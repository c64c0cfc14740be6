"""OpenSpiel's learners as leaderboard entries, each for a wall-clock budget on
``python_block_env``: the PyTorch NFSP (``openspiel-nfsp``), with the agent that plays its
average policy in the AEC env, and CFR+ (``openspiel-cfr-plus``, small sets only: it walks
the whole tree, and its tabular policy is judged by its exact NashConv alone).

NFSP reads the game's observation tensor (not the perfect-recall information state): that
tensor is the AEC env's observation vector of the same position, so the trained average-policy
network plays the env's observations unchanged. One NFSP learner per player, as in
OpenSpiel's examples; the agent plays player 0's average policy in every seat (the vector is
seat-relative and the lead is drawn by lot, so both players meet the same positions).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

HIDDEN = [256, 256]


def train_nfsp(
    num_players: int,
    minutes: float,
    seed: int,
    out_dir: Path,
    max_pip: int = 6,
    hand_size: int | None = None,
    hidden: list[int] | None = None,
) -> dict[str, Any]:
    """Self-play NFSP on ``python_block_env`` until ``minutes`` of wall time have passed
    (checked after each episode); saves player 0's average policy as ``out_dir/policy.pt``
    and returns the steps (every player's decisions), episodes and seconds it took."""
    import torch
    from open_spiel.python import rl_environment

    from block_env.openspiel import analysis

    hidden = list(HIDDEN if hidden is None else hidden)
    game = analysis.load(max_pip, hand_size, num_players)
    torch.manual_seed(seed)
    np.random.seed(seed)
    env = rl_environment.Environment(
        game, seed=seed, observation_type=rl_environment.ObservationType.OBSERVATION
    )
    size = env.observation_spec()["info_state"][0]
    n_actions = env.action_spec()["num_actions"]
    learners = analysis.nfsp_learners(num_players, size, n_actions, hidden, "adam", 1e-3, seed)
    steps = episodes = 0
    start = time.perf_counter()
    while time.perf_counter() - start < minutes * 60:
        step = env.reset()
        while not step.last():
            p = step.observations["current_player"]
            step = env.step([learners[p].step(step).action])
            steps += 1
        for learner in learners:
            learner.step(step)
        episodes += 1
    seconds = time.perf_counter() - start
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "input": size,
            "hidden": hidden,
            "actions": n_actions,
            "state_dict": learners[0]._avg_network.state_dict(),
        },
        out_dir / "policy.pt",
    )
    return {"env_steps": steps, "episodes": episodes, "train_seconds": seconds}


def train_cfr_plus(
    num_players: int, minutes: float, max_pip: int, hand_size: int | None
) -> dict[str, Any]:
    """OpenSpiel's CFR+ iterations until ``minutes`` of wall time have passed (checked after
    each iteration); the iterations, seconds and the exact NashConv of the average policy."""
    from block_env.openspiel import analysis

    game = analysis.load(max_pip, hand_size, num_players)
    solver = analysis.cfr.CFRPlusSolver(game)
    iterations = 0
    start = time.perf_counter()
    while iterations == 0 or time.perf_counter() - start < minutes * 60:
        solver.evaluate_and_update_policy()
        iterations += 1
    seconds = time.perf_counter() - start
    nash_conv = analysis.nash_conv(game, solver.average_policy())
    return {"iterations": iterations, "train_seconds": seconds, "nash_conv": nash_conv}


class NFSPAgent:
    """``act(observation) -> int``: a draw from the average policy (a softmax over the legal
    actions' outputs, as NFSP plays it), from a generator seeded per agent."""

    name = "openspiel-nfsp"

    def __init__(self, network: Any, seed: int = 0) -> None:
        self.network = network
        self.rng = np.random.default_rng(seed)

    def probabilities(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        """The average policy's action probabilities (0 on illegal actions)."""
        import torch

        legal = np.flatnonzero(observation["action_mask"])
        with torch.no_grad():
            out = self.network(torch.as_tensor(observation["observation"][None]).float())[0]
        logits = out.numpy()[legal].astype(np.float64)
        probs = np.zeros(len(observation["action_mask"]))
        probs[legal] = np.exp(logits - logits.max())
        return probs / probs.sum()

    def act(self, observation: dict[str, np.ndarray]) -> int:
        probs = self.probabilities(observation)
        return int(self.rng.choice(len(probs), p=probs))


def load_agent(path: str, seed: int = 0) -> NFSPAgent:
    """An agent spec's factory (``block_env.openspiel.learners:load_agent:path=FILE``): the
    average policy saved by ``train_nfsp``."""
    import torch
    from open_spiel.python.pytorch import dqn

    data = torch.load(path, weights_only=True, map_location="cpu")
    network = dqn.MLP(data["input"], data["hidden"], data["actions"])
    network.load_state_dict(data["state_dict"])
    network.eval()
    return NFSPAgent(network, seed)
