"""Policy files: writing, reading and checking them (``save_policy``, ``read_policy_file``).

Policy file format (a dict, read with ``torch.load(weights_only=True)``)::

    {"format": "block-policy/1", "weights": state_dict, "net": {hidden, activation,
     shared, use_scores, privileged_critic}, "actor_only": bool, "obs_dim": 122,
     "num_actions": 57, "meta": {...}, "game": {num_players, opener, episode,
     partnership, target_score, reward[, max_pip, hand_size]}[, "obs_type":
     "information_state"]}

``"game"`` is the env configuration the policy was trained for (the keywords of
``block_env.raw_env``; ``max_pip`` and ``hand_size`` only for a set or hand size other than
the default), so an evaluation can refuse a policy made for another game; ``obs_dim`` and
``num_actions`` follow the tile set (2T + 6(N+1) + 24 and 2T+1); a file without ``"game"``
loads with ``PolicyAgent.game`` None. Training checkpoints hold the same dict under
``"policy"``, so ``load`` takes either.

``"obs_type"`` is what the network reads (``block_env.information_state.OBS_TYPES``):
``"observation"`` (the plain vector, also when the key is absent) or
``"information_state"`` (the env's ``obs_type="information_state"`` vector: the
observation, then per relative seat H slots of the hand's history). H depends on the game
(``block_env.information_state.history_slots``), so such a file must record its ``"game"``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from agents.network import ActorCritic, NetConfig
from block_env.config import SET_KEYS, BlockConfig, default_hand_size
from block_env.information_state import OBS_TYPES, history_slots
from block_env.observation import STANDARD_OBS_DIM, obs_dim_for
from block_env.tiles import MAX_PIP, STANDARD_NUM_ACTIONS, tile_set

FORMAT = "block-policy/1"
POLICY_DIR = Path(__file__).resolve().parent / "policies"
SHIPPED: dict[str, str] = {
    "block-2p": "block-2p.pt",
    "block-2p-plain": "block-2p-plain.pt",  # block-2p's recipe on the plain observation
    "block-3p": "block-3p.pt",
    "block-4p": "block-4p.pt",
    "block-partnership": "block-partnership.pt",
}
# Names that no longer ship, kept for one release: name -> (its file now, relative to the
# folder that holds the agents and block_env packages; what the file is). Loading one by
# such a name warns (DeprecationWarning).
DEPRECATED: dict[str, tuple[str, str]] = {
    "block-partnership-stage1": (
        "agents/policies/block-partnership-search.pt",
        "the block-partnership-search preset's network",
    ),
    "block-partnership-scratch": (
        "block_env/benchmark/networks/block-partnership-v1/block-partnership.pt",
        "the network of block-partnership-v1's field",
    ),
}
GAME_KEYS = ("num_players", "opener", "episode", "partnership", "target_score", "reward")
EXPECTED_FILE = "a block-env policy or train.py checkpoint written by torch.save"


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
            f"num_actions={data.get('num_actions')}; this block-env has "
            f"{STANDARD_OBS_DIM}, {STANDARD_NUM_ACTIONS} "
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
    if key in DEPRECATED:
        where, what = DEPRECATED[key]
        message = f"the policy name {key!r} is deprecated: it is {what}, {where}"
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return POLICY_DIR.parents[1] / where
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
