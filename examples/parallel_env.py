"""Block as a PettingZoo ParallelEnv: every seat acts at every step, the seats not to act
with the wait action (the last action, 57 on the standard set).

    python examples/parallel_env.py            # one 4-player partnership hand, printed
"""

from __future__ import annotations

import numpy as np

import block_env

env = block_env.parallel_env(num_players=4, partnership=True, episode="hand")
observations, infos = env.reset(seed=3)
print(f"actions: {env.action_space('player_0').n} (wait = {env.wait}); state: {env.state().shape}")
rng = np.random.default_rng(0)
steps = 0
while env.agents:
    actions = {}
    for agent in env.agents:  # every live seat sends an action; only one has a choice
        legal = np.flatnonzero(observations[agent]["action_mask"])
        actions[agent] = int(rng.choice(legal))  # the wait alone for the seats not to act
    observations, rewards, terminations, truncations, infos = env.step(actions)
    steps += 1
print(f"hand over after {steps} steps; rewards {rewards}")
print(f"hand points by seat: {infos['player_0']['hand_points'].tolist()}")
