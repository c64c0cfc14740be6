"""Trained policies: the masked actor-critic network, the agent that plays it, and ``load``.

The network reads the seat-relative observation vector of ``block_env.observation`` (divided
by ``OBS_SCALE`` inside the model, so callers pass raw observations) and returns 2T+1
action logits (57 for the standard 28 tiles) and a state value. Illegal actions get the
logit ``torch.finfo(dtype).min`` (not ``-inf``, which turns into NaN in softmax/entropy
arithmetic), so they have probability 0.

Policy file format (a dict, read with ``torch.load(weights_only=True)``)::

    {"format": "block-policy/1", "weights": state_dict, "net": {hidden, activation,
     shared, use_scores, privileged_critic}, "actor_only": bool, "obs_dim": 122,
     "num_actions": 57, "meta": {...}, "game": {num_players, opener, episode,
     partnership, target_score, reward[, max_pip, hand_size]}[, "obs_type":
     "information_state"]}

``"game"`` is the env configuration the policy was trained for (the keywords of
``block_env.raw_env``; ``max_pip`` and ``hand_size`` only for a set or hand size other than
the default), so an evaluation can refuse a policy made for another game; ``obs_dim`` and
``num_actions`` follow the tile set (2T + 6(N+1) + 24 and 2T+1); files
written before it existed have no ``"game"`` and still load (``PolicyAgent.game`` is None).
Training checkpoints hold the same dict under ``"policy"``, so ``load`` takes either.

``"obs_type"`` is what the network reads (``block_env.information_state.OBS_TYPES``):
``"observation"`` (the plain vector; files without the key, all those written before it
existed, are read as this) or ``"information_state"`` (the env's ``obs_type=
"information_state"`` vector: the observation, then per relative seat H slots of the hand's
history). An information-state network does not read the H slots one by one: it first
*summarises* the history, per relative seat, as the sum of that seat's slots (which tiles
it played, how many went left and right, how many times it passed: T + 3 numbers), so its
input is ``OBS_DIM + 4(T + 3)`` long (``summary_dim``). It accepts either the full vector
(``input_dim`` = ``OBS_DIM + 4H(T + 3)``, what the env hands out) or the summary already
taken by ``summarize_history`` (what the trainer stores in its rollouts: 124 floats for the
standard set instead of 1612), with exactly the same outputs. H depends on the game
(``block_env.information_state.history_slots``), so such a file must record its ``"game"``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from block_env.agent_specs import SET_KEYS
from block_env.config import BlockConfig, default_hand_size
from block_env.information_state import OBS_TYPES, check_obs_type, history_slots
from block_env.observation import MAX_SEATS, OBS_DIM, layout_for_dim, obs_dim_for
from block_env.tiles import MAX_PIP, NUM_ACTIONS, NUM_TILES, tile_set

FORMAT = "block-policy/1"
POLICY_DIR = Path(__file__).resolve().parent / "policies"
SHIPPED: dict[str, str] = {
    "block-2p": "block-2p.pt",
    "block-2p-plain": "block-2p-plain.pt",  # block-2p's recipe on the plain observation
    "block-3p": "block-3p.pt",
    "block-4p": "block-4p.pt",
}
ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU}
GAME_KEYS = ("num_players", "opener", "episode", "partnership", "target_score", "reward")
EXPECTED_FILE = "a block-env policy or train.py checkpoint written by torch.save"


PRIV_DIM = 3 * NUM_TILES  # the other seats' hands (relative seats 1..3), critic only
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
    variance; playing needs only the actor and the observation."""

    hidden: tuple[int, ...] = (256, 256)
    activation: str = "relu"
    shared: bool = False  # one trunk for actor and critic (faster) or two separate MLPs
    use_scores: bool = False
    privileged_critic: bool = False

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
    hands: np.ndarray, seat: np.ndarray, num_tiles: int = NUM_TILES
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

    def forward(
        self, obs: torch.Tensor, priv: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(unmasked logits (B, 2T+1), values (B,)) for raw observations (B, OBS_DIM), or
        with ``obs_type="information_state"`` full or summarised information states;
        ``priv`` (B, 3T) is required with a privileged critic."""
        x = self._inputs(obs)
        h = self.actor_body(x)
        if self.critic_body is None:
            return self.policy_head(h), self.value_head(h).squeeze(-1)
        return self.policy_head(h), self._value(x, priv)

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


# ----------------------------------------------------------------------------- files


CRITIC_PREFIXES = ("critic_body.", "value_head.")


def game_config(game: Mapping[str, Any] | BlockConfig) -> dict[str, Any]:
    """The env configuration a policy was trained for, as a dict of the six ``raw_env``
    keywords ``GAME_KEYS``, plus ``max_pip`` and ``hand_size`` (``SET_KEYS``) when the tile
    set or hand size is not the default: from a ``BlockConfig`` or a dict holding exactly
    those keys (all six: a guessed default would be stored as a fact; the set keys may be
    left out for the default set), validated by ``BlockConfig``. ValueError names a missing
    or unknown key or a bad value."""
    if isinstance(game, BlockConfig):
        cfg = game
    else:
        if not isinstance(game, Mapping):
            raise ValueError(f"game={game!r} is not allowed: use a dict of {', '.join(GAME_KEYS)}")
        unknown = sorted(str(k) for k in game if k not in GAME_KEYS + SET_KEYS)
        missing = [k for k in GAME_KEYS if k not in game]
        if unknown or missing:
            raise ValueError(
                f"game {dict(game)!r} has unknown key(s) {unknown} and lacks {missing}: "
                f"give exactly {', '.join(GAME_KEYS)} (and {', '.join(SET_KEYS)} for a "
                "set or hand size other than the default)"
            )
        cfg = BlockConfig(**dict(game))
    out = {k: getattr(cfg, k) for k in GAME_KEYS}
    default_hand = default_hand_size(cfg.num_players, cfg.partnership, cfg.max_pip)
    if cfg.max_pip != MAX_PIP or cfg.hand_size != default_hand:
        out.update(max_pip=cfg.max_pip, hand_size=cfg.hand_size)
    return out


def policy_dict(
    model: ActorCritic,
    meta: Mapping[str, Any] | None = None,
    actor_only: bool = False,
    game: Mapping[str, Any] | BlockConfig | None = None,
) -> dict[str, Any]:
    """The policy file contents for ``model`` (weights on CPU). ``actor_only`` leaves out
    the critic (about half the size): enough to play, not to resume training. ``game`` is
    the env configuration it was trained for (see ``game_config``); None leaves it out."""
    game_entry = None if game is None else game_config(game)
    net = asdict(model.net)
    net["hidden"] = list(net["hidden"])
    weights = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    if actor_only:
        weights = {k: v for k, v in weights.items() if not k.startswith(CRITIC_PREFIXES)}
    out = {
        "format": FORMAT,
        "actor_only": actor_only,
        "weights": weights,
        "net": net,
        "obs_dim": model.obs_dim,
        "num_actions": model.num_actions,
        "obs_type": model.obs_type,
        "meta": dict(meta or {}),
    }
    if game_entry is not None:
        out["game"] = game_entry
    if model.obs_type == "information_state":
        if game_entry is None:
            raise ValueError(
                "an obs_type='information_state' policy needs its game (the history length "
                "H follows the number of players and the hand size): pass game="
            )
        wanted = history_slots(BlockConfig(**game_entry))
        if wanted != model.history_slots:
            raise ValueError(
                f"the network has history_slots={model.history_slots} but the game "
                f"{game_entry} has H={wanted}"
            )
    return out


def save_policy(
    path: str | Path,
    model: ActorCritic,
    meta: Mapping[str, Any] | None = None,
    actor_only: bool = False,
    game: Mapping[str, Any] | BlockConfig | None = None,
) -> None:
    """Write a policy file that ``load`` reads; ``game`` as in ``policy_dict`` (checked
    before anything is written)."""
    data = policy_dict(model, meta, actor_only, game)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(data, path)


def _policy_entry(data: Any) -> Mapping[str, Any]:
    """The policy dict itself: ``data`` or a training checkpoint's ``data["policy"]``."""
    if isinstance(data, Mapping) and "format" not in data and "policy" in data:
        data = data["policy"]
    if not isinstance(data, Mapping):
        raise ValueError(f"it holds a {type(data).__name__}, not a policy dict")
    return data


def game_from_dict(data: Mapping[str, Any]) -> dict[str, Any] | None:
    """The game configuration stored in a policy dict (or checkpoint), None when the file
    predates it. ValueError when it is stored but malformed."""
    entry = _policy_entry(data).get("game")
    if entry is None:
        return None
    try:
        return game_config(entry)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"its game configuration {entry!r} is malformed: {exc}") from exc


def obs_type_from_dict(data: Mapping[str, Any]) -> str:
    """The ``obs_type`` a policy dict (or checkpoint) records; ``"observation"`` for files
    written before it was stored. ValueError for anything else than ``OBS_TYPES``."""
    value = _policy_entry(data).get("obs_type", "observation")
    if value not in OBS_TYPES:
        raise ValueError(f"its obs_type {value!r} is not one of {', '.join(OBS_TYPES)}")
    return str(value)


def _history_slots_of(data: Mapping[str, Any], obs_type: str) -> dict[str, int]:
    """``ActorCritic``'s ``history_slots`` keyword for a policy dict: H of its game for an
    information-state network (which must record its game), nothing otherwise."""
    if obs_type != "information_state":
        return {}
    game = game_from_dict(data)
    if game is None:
        raise ValueError("an obs_type='information_state' policy must record its game (for H)")
    return {"history_slots": history_slots(BlockConfig(**game))}


def model_from_dict(data: Mapping[str, Any]) -> ActorCritic:
    """Rebuild the network from a policy dict; ValueError if it is not one or does not fit."""
    data = _policy_entry(data)
    if data.get("format") != FORMAT:
        raise ValueError(f"not a block-env policy (format {data.get('format')!r}, want {FORMAT!r})")
    obs_type = obs_type_from_dict(data)
    slots = _history_slots_of(data, obs_type)
    sizes = _set_of_sizes(data.get("obs_dim"), data.get("num_actions"))
    if sizes is None:
        raise ValueError(
            f"policy was trained for obs_dim={data.get('obs_dim')}, "
            f"num_actions={data.get('num_actions')}; this block-env has {OBS_DIM}, {NUM_ACTIONS} "
            "for the standard set (2T + 6(N+1) + 24 and 2T+1 for the set [0|0]..[N|N])"
        )
    try:
        net = dict(data["net"])
        net["hidden"] = tuple(net["hidden"])
        model = ActorCritic(NetConfig(**net), max_pip=sizes, obs_type=obs_type, **slots)
        weights = data["weights"]
        if data.get("actor_only", False):
            missing, unexpected = model.load_state_dict(weights, strict=False)
            if unexpected or any(not k.startswith(CRITIC_PREFIXES) for k in missing):
                raise ValueError(f"policy weights do not fit the network: {missing + unexpected}")
        else:
            model.load_state_dict(weights)
    except (KeyError, TypeError, RuntimeError, AttributeError) as exc:
        raise ValueError(
            f"the policy entry is malformed ({type(exc).__name__}: {_one_line(exc)})"
        ) from exc
    model.eval()
    return model


def _set_of_sizes(obs_dim: Any, num_actions: Any) -> int | None:
    """The ``max_pip`` whose observation length and action count these are, or None."""
    for n in range(2, MAX_PIP + 1):
        ts = tile_set(n)
        if (obs_dim, num_actions) == (obs_dim_for(ts.num_tiles, ts.num_values), ts.num_actions):
            return n
    return None


def _one_line(exc: BaseException, limit: int = 240) -> str:
    """An exception's message on one line, cut to ``limit`` characters."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def resolve(name_or_path: str | Path) -> Path:
    """Path of a shipped policy name (``block-2p``...) or of a given file."""
    key = str(name_or_path)
    if key in SHIPPED:
        path = POLICY_DIR / SHIPPED[key]
        if not path.is_file():
            raise FileNotFoundError(
                f"shipped policy {key!r} is not installed ({path} is missing): train one with "
                f"`python train.py configs/{key.split('-')[1]}.yaml` and copy its policy.pt there"
            )
        return path
    path = Path(key).expanduser()
    if not path.is_file():
        raise FileNotFoundError(
            f"no policy {key!r}: give a shipped name ({', '.join(SHIPPED)}) or an existing .pt file"
        )
    return path


@dataclass
class PolicyFile:
    """A policy file or checkpoint as read: its path, the network (CPU, eval mode), the game
    configuration it was trained for (None for files written before it was stored), the
    free-form ``meta`` and whether the file holds the critic's weights (``model``'s critic
    is freshly initialised when it does not: an ``actor_only`` file)."""

    path: Path
    model: ActorCritic
    game: dict[str, Any] | None
    meta: dict[str, Any]
    has_critic: bool = True


def read_policy_file(name_or_path: str | Path) -> PolicyFile:
    """Read a shipped name, policy file or training checkpoint with ``weights_only=True`` (a
    pickle that would run code is refused, never executed). FileNotFoundError when missing;
    ValueError naming the file and what was expected for anything that is not such a file
    (empty, text, truncated, another pickle, a dict of something else)."""
    path = resolve(name_or_path)
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        raise
    except Exception as exc:  # noqa: BLE001 - torch.load fails in many ways on bad bytes
        detail = _one_line(exc) or "no detail"
        if path.stat().st_size == 0:
            detail = "the file is empty"
        raise ValueError(
            f"cannot read {path}: expected {EXPECTED_FILE} ({type(exc).__name__}: {detail})"
        ) from exc
    try:
        entry = _policy_entry(data)
        model = model_from_dict(entry)
        game = game_from_dict(entry)
        meta = entry.get("meta") or {}
    except ValueError as exc:
        raise ValueError(f"{path} is not {EXPECTED_FILE}: {exc}") from exc
    meta = dict(meta) if isinstance(meta, Mapping) else {}
    return PolicyFile(path, model, game, meta, not entry.get("actor_only", False))


def load_model(name_or_path: str | Path, device: str | torch.device = "cpu") -> ActorCritic:
    """The network stored in a policy file or training checkpoint (weights_only load);
    errors as in ``read_policy_file``."""
    return read_policy_file(name_or_path).model.to(device)


# ----------------------------------------------------------------------------- agent


class PolicyAgent:
    """Plays a trained network: ``act(observation) -> int`` on one observation dict, and
    ``act_batch(obs, mask)`` on arrays of many (used for fast training opponents).
    ``game`` is the env configuration the network was trained for (``game_config`` keys),
    None when unknown; evaluations use it to refuse a policy made for another game.
    ``obs_type`` (the network's) says which observation it plays on: evaluations make the
    env with ``obs_type="information_state"`` when an agent's ``obs_type`` is that, and
    hand every other agent the plain observation."""

    def __init__(
        self,
        model: ActorCritic,
        device: str | torch.device = "cpu",
        greedy: bool = True,
        seed: int | None = None,
        name: str | None = None,
        game: Mapping[str, Any] | BlockConfig | None = None,
    ) -> None:
        self.game: dict[str, Any] | None = None if game is None else game_config(game)
        self.model = model.to(device).eval()
        self.obs_type: str = model.obs_type
        self.device = torch.device(device)
        self.greedy = greedy
        self.name = name or "policy"
        self.generator = torch.Generator(device=self.device)
        if seed is not None:
            self.generator.manual_seed(seed)

    @torch.no_grad()
    def act_batch(self, obs: np.ndarray | torch.Tensor, mask: np.ndarray | torch.Tensor) -> Any:
        """Actions for a batch: numpy in, numpy out; torch in, torch out (on the same device).
        An information-state policy takes full or summarised information states."""
        is_np = not isinstance(obs, torch.Tensor)
        if obs.shape[-1] not in (self.model.input_dim, self.model.summary_dim):
            raise ValueError(self._wrong_length(obs.shape[-1]))
        o = torch.as_tensor(obs, dtype=torch.float32, device=self.device)
        m = torch.as_tensor(mask, device=self.device)
        masked = self.model.masked_logits(o, m)
        actions = sample_actions(masked, self.generator, self.greedy)
        return actions.cpu().numpy() if is_np else actions

    @torch.no_grad()
    def probabilities(self, observation: Mapping[str, np.ndarray]) -> np.ndarray:
        """The network's action probabilities for one observation dict (0 on illegal
        actions): what ``act`` samples from, or takes the argmax of when greedy."""
        obs, mask = self._single(observation)
        o = torch.as_tensor(obs, device=self.device)
        logits = self.model.masked_logits(o, torch.as_tensor(mask, device=self.device))
        return torch.softmax(logits.float(), dim=-1)[0].cpu().numpy()

    def _single(self, observation: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """One observation dict as a batch of one (observation, mask), checked."""
        obs = np.asarray(observation["observation"], dtype=np.float32)[None]
        if obs.shape[-1] != self.model.input_dim:
            raise ValueError(self._wrong_length(obs.shape[-1]))
        mask = np.asarray(observation["action_mask"])[None]
        if not mask.any():
            raise ValueError("the action mask holds no legal action: this seat is not on turn")
        return obs, mask

    def _wrong_length(self, got: int) -> str:
        """The refusal of observations of length ``got``, naming what this policy reads."""
        m = self.model
        if m.obs_type == "observation":
            return (
                f"{self.name} reads obs_type='observation' and plays the set "
                f"max_pip={m.max_pip} (observations of length {m.obs_dim}) but got "
                f"observations of length {got}: it was trained for another tile set, or the "
                "env hands out another obs_type (make it with obs_type='observation', or give "
                f"the policy the first {m.obs_dim} entries)"
            )
        return (
            f"{self.name} reads obs_type='information_state' (length {m.input_dim} for its "
            f"game, max_pip={m.max_pip}, H={m.history_slots}) but got observations of length "
            f"{got}: make the env with obs_type='information_state' for the game it was "
            "trained for"
        )

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        return int(self.act_batch(*self._single(observation))[0])


def load(
    name_or_path: str | Path,
    device: str | torch.device = "cpu",
    greedy: bool = True,
    seed: int | None = None,
) -> PolicyAgent:
    """A ``PolicyAgent`` for a shipped policy (``"block-2p"``, ``"block-3p"``,
    ``"block-4p"``), a policy file or a training checkpoint, with ``agent.game`` the game
    configuration stored in the file (None for older files) and ``agent.obs_type`` the
    observation it plays on (see ``PolicyAgent``). FileNotFoundError when
    missing, ValueError naming the file when it is not a policy (``read_policy_file``)."""
    name = str(name_or_path)
    label = name if name in SHIPPED else Path(name).stem
    pf = read_policy_file(name_or_path)
    return PolicyAgent(pf.model, device, greedy, seed, name=label, game=pf.game)
