"""The masked actor-critic network of the trained policies (``ActorCritic``) and the tensor
helpers around it: masked logits, sampling, the privileged critic's input.

The network reads the seat-relative observation vector of ``block_env.observation`` (divided
by ``OBS_SCALE`` inside the model, so callers pass raw observations) and returns 2T+1
action logits (57 for the standard 28 tiles) and a state value. Illegal actions get the
logit ``torch.finfo(dtype).min`` (not ``-inf``, which turns into NaN in softmax/entropy
arithmetic), so they have probability 0.

An information-state network (``obs_type="information_state"``) does not read the H history
slots one by one: it first *summarises* the history, per relative seat, as the sum of that
seat's slots (which tiles it played, how many went left and right, how many times it passed:
T + 3 numbers), so its input is ``obs_dim + 4(T + 3)`` long (``summary_dim``). It accepts
either the full vector (``input_dim`` = ``obs_dim + 4H(T + 3)``, what the env hands out) or
the summary already taken by ``summarize_history`` (what the trainer stores in its rollouts:
124 floats for the standard set instead of 1612), with exactly the same outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from block_env.information_state import check_obs_type
from block_env.observation import MAX_SEATS, layout_for_dim, obs_dim_for
from block_env.tiles import MAX_PIP, STANDARD_NUM_TILES, tile_set

ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU}


PRIV_DIM = 3 * STANDARD_NUM_TILES  # the other seats' hands (relative seats 1..3), critic only
# (3T for a set of T tiles: ``priv_dim``)


def priv_dim(max_pip: int = MAX_PIP) -> int:
    """Length of the privileged critic input for the set [0|0]..[N|N]: 3T."""
    return 3 * tile_set(max_pip).num_tiles


@dataclass(frozen=True)
class NetConfig:
    """Shape of the actor-critic. ``use_scores=False`` hides the match scores and target
    from the network: policies trained on single hands then behave the same inside a match
    (per-hand points do not depend on the score). ``privileged_critic=True`` gives the
    critic (never the actor) the other seats' hands, a training-time baseline with far less
    variance; playing needs only the actor and the observation. ``belief_head=True`` adds a
    head on the actor's last hidden layer that predicts which other seat holds each tile
    (``forward_beliefs``): an auxiliary target that shapes the actor's features during
    training and that play never reads."""

    hidden: tuple[int, ...] = (256, 256)
    activation: str = "relu"
    shared: bool = False  # one trunk for actor and critic (faster) or two separate MLPs
    use_scores: bool = False
    privileged_critic: bool = False
    belief_head: bool = False

    def __post_init__(self) -> None:
        hidden = tuple(self.hidden)
        if not hidden or any(
            isinstance(h, bool) or not isinstance(h, int) or h < 1 for h in hidden
        ):
            raise ValueError(f"hidden={self.hidden!r} is not allowed: use a list of positive ints")
        object.__setattr__(self, "hidden", hidden)
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"activation={self.activation!r} is not allowed: "
                f"use one of {', '.join(ACTIVATIONS)}"
            )
        if self.shared and self.privileged_critic:
            raise ValueError("shared=True and privileged_critic=True do not combine: pick one")


def _mlp(sizes: Sequence[int], activation: type[nn.Module]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), activation()]
    return nn.Sequential(*layers)


def _init(layer: nn.Linear, gain: float) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


def privileged_features(
    hands: np.ndarray, seat: np.ndarray, num_tiles: int = STANDARD_NUM_TILES
) -> np.ndarray:
    """(B, 3T) float32: the tiles of relative seats 1, 2, 3 of ``seat`` (zeros for absent
    seats), from ``hands`` (B, n) T-bit masks by absolute seat. Critic input only."""
    hands = np.asarray(hands, dtype=np.int64)
    b, n = hands.shape
    out = np.zeros((b, 3, num_tiles), dtype=np.float32)
    rows = np.arange(b)
    shifts = np.arange(num_tiles, dtype=np.int64)
    for r in range(1, n):
        other = hands[rows, (np.asarray(seat) + r) % n]
        out[:, r - 1] = (other[:, None] >> shifts) & 1
    return out.reshape(b, 3 * num_tiles)


def summarize_history(vectors: Any, obs_dim: int, slots: int) -> Any:
    """Information-state vectors (..., ``obs_dim + 4 * slots * S``) with their history
    summed over each seat's ``slots`` slots: (..., ``obs_dim + 4 * S``), S = T + 3 the slot
    size. Per relative seat the summary holds the tiles it played (one-hot: a tile is played
    once), the number of its tiles that went left and right, and its number of passes. Works
    on numpy arrays and torch tensors alike (sums of 0/1 floats: exact in float32, so a
    network gives the same outputs on the summary as on the full vector)."""
    width = vectors.shape[-1] - obs_dim
    if width <= 0 or width % (MAX_SEATS * slots):
        raise ValueError(
            f"expected information-state vectors of length {obs_dim} + 4 * {slots} * (T + 3), "
            f"got length {vectors.shape[-1]}"
        )
    size = width // (MAX_SEATS * slots)
    lead = tuple(vectors.shape[:-1])
    slotted = vectors[..., obs_dim:].reshape(lead + (MAX_SEATS, slots, size))
    if isinstance(vectors, torch.Tensor):
        history = slotted.sum(-2).reshape(lead + (MAX_SEATS * size,))
        return torch.cat([vectors[..., :obs_dim], history], dim=-1)
    history = slotted[..., 0, :].copy()  # slot by slot: ~2x faster than sum(-2), same sums
    for j in range(1, slots):
        history += slotted[..., j, :]
    return np.concatenate([vectors[..., :obs_dim], history.reshape(lead + (-1,))], axis=-1)


class ActorCritic(nn.Module):
    """Masked actor-critic MLP over the raw observation vector of one tile set
    (``max_pip``; the input and output sizes follow the set). With ``obs_type=
    "information_state"`` (``history_slots`` = H of the game required) it reads the
    information state, full or already summarised (``summarize_history``): see the module
    docstring. ``obs_dim`` is the plain observation's length in both cases; ``input_dim``
    the full vector's, ``summary_dim`` what the MLP reads."""

    def __init__(
        self,
        net: NetConfig | None = None,
        max_pip: int = MAX_PIP,
        obs_type: str = "observation",
        history_slots: int | None = None,
    ) -> None:
        super().__init__()
        self.net = net or NetConfig()
        self.obs_type = check_obs_type(obs_type)
        ts = tile_set(max_pip)
        self.max_pip = ts.max_pip
        self.obs_dim = obs_dim_for(ts.num_tiles, ts.num_values)
        self.num_actions = ts.num_actions
        lay = layout_for_dim(self.obs_dim)
        scale = 1.0 / lay.scale.astype(np.float32)
        if not self.net.use_scores:
            scale[lay.fields["scores"]] = 0.0
            scale[lay.fields["target"]] = 0.0
        self.history_slots: int | None = None
        self.input_dim = self.summary_dim = self.obs_dim
        if self.obs_type == "information_state":
            if isinstance(history_slots, bool) or not isinstance(history_slots, int):
                raise ValueError(
                    "obs_type='information_state' needs history_slots (H of the game: "
                    f"block_env.information_state.history_slots), got {history_slots!r}"
                )
            if history_slots < 1:
                raise ValueError(f"history_slots={history_slots} is not allowed: use H >= 1")
            self.history_slots = history_slots
            size = ts.num_tiles + 3
            self.input_dim = self.obs_dim + MAX_SEATS * history_slots * size
            self.summary_dim = self.obs_dim + MAX_SEATS * size
            # per seat: tiles played (0/1 each), then counts of left, right, passes (scaled
            # by the hand's most moves of one seat, H, to stay within [0, 1])
            seat = np.concatenate([np.ones(ts.num_tiles), np.full(3, 1.0 / history_slots)]).astype(
                np.float32
            )
            scale = np.concatenate([scale, np.tile(seat, MAX_SEATS)]).astype(np.float32)
        elif history_slots is not None:
            raise ValueError("history_slots is only for obs_type='information_state'")
        self.register_buffer("in_scale", torch.as_tensor(scale))
        act = ACTIVATIONS[self.net.activation]
        sizes = [self.summary_dim, *self.net.hidden]
        critic_in = self.summary_dim + (3 * ts.num_tiles if self.net.privileged_critic else 0)
        gain = float(np.sqrt(2.0)) if self.net.activation != "tanh" else 1.0
        self.actor_body = _mlp(sizes, act)
        self.critic_body = None if self.net.shared else _mlp([critic_in, *sizes[1:]], act)
        for body in (self.actor_body, self.critic_body):
            for m in body.modules() if body is not None else ():
                if isinstance(m, nn.Linear):
                    _init(m, gain)
        self.policy_head = _init(nn.Linear(sizes[-1], self.num_actions), 0.01)
        self.value_head = _init(nn.Linear(sizes[-1], 1), 1.0)
        self.belief_head = (
            _init(nn.Linear(sizes[-1], 3 * ts.num_tiles), 1.0) if self.net.belief_head else None
        )

    def forward(
        self, obs: torch.Tensor, priv: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(unmasked logits (B, 2T+1), values (B,)) for raw observations (B, obs_dim), or
        with ``obs_type="information_state"`` full or summarised information states;
        ``priv`` (B, 3T) is required with a privileged critic."""
        x = self._inputs(obs)
        h = self.actor_body(x)
        return self.policy_head(h), self._value_beside(x, h, priv)

    def forward_beliefs(
        self, obs: torch.Tensor, priv: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``forward``'s (logits, values) and the belief logits (B, 3T) from the same actor
        features: for relative seats 1, 2, 3 in turn, one logit per tile that the seat holds
        it (the layout of ``privileged_features``, which are its labels). ValueError without
        a belief head."""
        if self.belief_head is None:
            raise ValueError("this network has no belief head: build it with belief_head=True")
        x = self._inputs(obs)
        h = self.actor_body(x)
        return self.policy_head(h), self._value_beside(x, h, priv), self.belief_head(h)

    def _value_beside(
        self, x: torch.Tensor, h: torch.Tensor, priv: torch.Tensor | None
    ) -> torch.Tensor:
        """The values for inputs ``x`` whose actor features are ``h`` (the shared trunk's, or
        the critic's own)."""
        return self.value_head(h).squeeze(-1) if self.critic_body is None else self._value(x, priv)

    def summarize(self, obs: Any) -> Any:
        """What the MLP reads, before scaling: ``obs`` itself for the plain observation (and
        for already summarised information states), else ``summarize_history`` of the full
        information state. ValueError naming ``obs_type`` for any other length."""
        width = obs.shape[-1]
        if width == self.summary_dim:
            return obs
        if width == self.input_dim:
            return summarize_history(obs, self.obs_dim, self.history_slots or 0)
        if self.obs_type == "observation":
            wanted = f"the observation (length {self.obs_dim})"
        else:
            wanted = (
                f"the information state (length {self.input_dim}) or its summary "
                f"(length {self.summary_dim})"
            )
        raise ValueError(
            f"this network reads obs_type={self.obs_type!r}: it takes {wanted}, got vectors "
            f"of length {width}"
        )

    def _inputs(self, obs: torch.Tensor) -> torch.Tensor:
        return self.summarize(obs) * self.in_scale

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        """Unmasked action logits (the actor alone: all a player needs)."""
        return self.policy_head(self.actor_body(self._inputs(obs)))

    def value(self, obs: torch.Tensor, priv: torch.Tensor | None = None) -> torch.Tensor:
        x = self._inputs(obs)
        if self.critic_body is None:
            return self.value_head(self.actor_body(x)).squeeze(-1)
        return self._value(x, priv)

    def _value(self, x: torch.Tensor, priv: torch.Tensor | None) -> torch.Tensor:
        if self.net.privileged_critic:
            if priv is None:
                raise ValueError("this critic is privileged: pass the other seats' hands (priv)")
            x = torch.cat([x, priv], dim=-1)
        return self.value_head(self.critic_body(x)).squeeze(-1)

    def masked_logits(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Action logits with illegal actions (mask == 0) at the dtype's minimum."""
        return mask_logits(self.logits(obs), mask)


def mask_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Illegal entries (mask == 0) set to the dtype's minimum, so softmax gives them 0."""
    return logits.masked_fill(mask == 0, torch.finfo(logits.dtype).min)


def log_softmax_entropy(masked: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(log-probabilities, entropy) of masked logits; masked entries add 0 to the entropy."""
    logp = torch.log_softmax(masked, dim=-1)
    p = logp.exp()
    entropy = -(p * logp).sum(-1)  # p == 0 exactly where masked, and logp is finite there
    return logp, entropy


def sample_actions(
    masked: torch.Tensor, generator: torch.Generator | None = None, greedy: bool = False
) -> torch.Tensor:
    """One action per row: argmax when greedy, else a draw from softmax(masked)."""
    if greedy:
        return masked.argmax(-1)
    probs = torch.softmax(masked, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)
