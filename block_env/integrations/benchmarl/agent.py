"""A BenchMARL policy as a block-env agent: ``act(observation) -> int`` on the AEC env.

``export_policy(experiment, path)`` writes one group's network (the actor of MAPPO/IPPO,
the Q-network of QMIX/VDN/IQL: BenchMARL's MLP) to a file that needs only torch to load.
``load_agent(path)`` (the agent spec ``block_env.integrations.benchmarl.agent:load_agent:
path=PATH``) plays it: the network's outputs over the parallel view's ``2T + 2`` actions,
masked by the AEC mask with the wait forbidden, and the best legal action taken (the
deterministic action BenchMARL evaluates: the mode of the masked categorical, or the
greedy Q-value).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

FORMAT = "block-env benchmarl policy 1"


def _layers_of(net: nn.Sequential) -> list[list[Any]]:
    """The layer list of a BenchMARL MLP: ``["linear", in, out]`` or ``["act", name]``."""
    out: list[list[Any]] = []
    for module in net:
        if isinstance(module, nn.Linear):
            out.append(["linear", module.in_features, module.out_features])
        elif type(module).__module__.startswith("torch.nn") and not any(module.parameters()):
            out.append(["act", type(module).__name__])
        else:
            raise ValueError(f"cannot export layer {module!r}: only linear layers and activations")
    return out


def _build(layers: list[list[Any]]) -> nn.Sequential:
    modules: list[nn.Module] = []
    for kind, *args in layers:
        if kind == "linear":
            modules.append(nn.Linear(int(args[0]), int(args[1])))
        else:
            modules.append(getattr(nn, str(args[0]))())
    return nn.Sequential(*modules)


def export_policy(experiment: Any, path: str | Path, group: str | None = None) -> Path:
    """Write ``group``'s network of a BenchMARL ``experiment`` (default: the group of
    ``player_0``) with the game it was trained on; the path written."""
    groups = experiment.group_map
    if group is None:
        group = next(g for g, seats in groups.items() if "player_0" in seats)
    if group not in groups:
        raise ValueError(f"unknown group {group!r}: the experiment has {list(groups)}")
    model = experiment.group_policies[group].module[0]
    stateful = model.mlp.get_stateful_net()
    state = stateful.state_dict()
    if not model.mlp.share_params:  # one network per agent: the group's first seat's
        state = {k: v[0] for k, v in state.items()}
    task = experiment.task
    payload = {
        "format": FORMAT,
        "layers": _layers_of(stateful),
        "state_dict": {k: v.detach().cpu().clone() for k, v in state.items()},
        "group": group,
        "seats": list(groups[group]),
        "game": {k: v for k, v in task.config.items() if v is not None and k != "batched"},
        "algorithm": type(experiment.algorithm_config).__name__,
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(payload, path)
    return path


class BenchMARLAgent:
    """Plays a network exported by ``export_policy``: the highest output among the legal
    actions of the AEC observation (never the wait)."""

    def __init__(self, net: nn.Sequential, game: dict[str, Any], group: str) -> None:
        self.net = net.eval()
        self.game = dict(game)  # checked against the game it plays (agent_specs.check_game)
        self.group = group

    def scores(self, observation: Mapping[str, np.ndarray]) -> np.ndarray:
        """The network's outputs over the AEC env's ``2T + 1`` actions (the wait dropped)."""
        obs = torch.as_tensor(np.asarray(observation["observation"], dtype=np.float32))
        with torch.no_grad():
            out = self.net(obs)
        return out.numpy()[: len(observation["action_mask"])]

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        mask = np.asarray(observation["action_mask"], dtype=bool)
        if not mask.any():
            raise ValueError("no legal action in the observation's mask: not this agent's turn")
        values = np.where(mask, self.scores(observation), -np.inf)
        return int(np.argmax(values))


def load_agent(path: str | Path) -> BenchMARLAgent:
    """The agent of a file written by ``export_policy`` (ValueError for another file)."""
    payload = torch.load(Path(path), map_location="cpu", weights_only=True)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path} is not a block-env BenchMARL policy file ({FORMAT})")
    net = _build(payload["layers"])
    net.load_state_dict(payload["state_dict"])
    return BenchMARLAgent(net, payload["game"], payload["group"])
