"""Fine-tuning: the weights a new run starts from when ``init_policy`` names a policy.

``init_policy`` is a shipped name (``block-3p``), a policy file or a training checkpoint.
The file is read with ``weights_only=True`` and must fit the run: the same observation
(``obs_type``, tile set) and the same actor (``hidden``, ``activation``, ``shared``), and,
when it records its game, the same number of players and partnership. The actor always
comes from the file; the critic too when the file holds one of the same shape (a training
checkpoint, or a policy file saved with its critic), otherwise the critic starts fresh (a
shipped policy holds the actor only). Everything is checked before the run folder is made,
so a misfit file stops the run with a ConfigError that names both sides and writes nothing.

Three widenings are allowed, each starting the new weights so that the new network plays
exactly as the file's did (and gives its values) and training then learns what they are
worth: a plain-observation policy may start an ``obs_type="information_state"`` run (zero
weights on the history summary's columns), a policy that does not read the match scores may
start a ``use_scores=true`` run (zero weights on the scores' and target's columns), and a
network may start a wider one of the same depth (``hidden`` at least as wide, layer by
layer: the new units get fresh incoming weights and zero outgoing ones, so the capacity
grows while the play is kept). A belief head (``belief_coef`` > 0) is kept when file and
run both have one, starts fresh when only the run has one, and is dropped otherwise.
"""

from __future__ import annotations

from typing import Any

import torch

from agents.network import ActorCritic
from agents.policy_files import CRITIC_PREFIXES, read_policy_file
from block_env.observation import layout_for_dim
from block_env.training.config import TrainConfig
from block_env.training.errors import ConfigError

BELIEF_PREFIX = "belief_head."


def initial_weights(cfg: TrainConfig, model: ActorCritic) -> tuple[dict[str, torch.Tensor], bool]:
    """(the state-dict entries to load into ``model``, whether they include the critic), read
    from ``cfg.init_policy``. ConfigError when the file is missing, unreadable or misfit."""
    try:
        pf = read_policy_file(cfg.init_policy)
    except (FileNotFoundError, ValueError) as exc:
        raise ConfigError(f"config init_policy={cfg.init_policy!r}: {exc}") from None
    source = pf.model
    _check_fits(cfg, model, source, pf.game)
    mine = model.state_dict()
    theirs = source.state_dict()
    if source.obs_type != model.obs_type:  # observation -> information_state (_check_fits)
        theirs = _widened(theirs, mine, at=source.obs_dim)
    if source.net.use_scores != model.net.use_scores:  # False -> True (_check_fits)
        theirs = _scores_widened(theirs, mine, source.obs_dim)
    if tuple(source.net.hidden) != tuple(model.net.hidden):  # wider, same depth (_check_fits)
        theirs = _hidden_widened(theirs, mine)
    theirs = _with_run_belief_head(theirs, mine)
    actor = {k: v for k, v in theirs.items() if not k.startswith(CRITIC_PREFIXES)}
    critic = {k: v for k, v in theirs.items() if k.startswith(CRITIC_PREFIXES)}
    critic_fits = (
        pf.has_critic
        and set(critic) == {k for k in mine if k.startswith(CRITIC_PREFIXES)}
        and all(v.shape == mine[k].shape for k, v in critic.items())
    )
    return ({**actor, **critic} if critic_fits else actor), critic_fits


def _widened(
    theirs: dict[str, torch.Tensor], mine: dict[str, torch.Tensor], at: int
) -> dict[str, torch.Tensor]:
    """``theirs`` (a plain-observation network) reshaped for ``mine`` (an information-state
    one): each first layer gets zero columns for the history summary, inserted after the
    ``at`` observation inputs (before a privileged critic's extra inputs), and the input
    scale is ``mine``'s."""
    out = dict(theirs)
    out["in_scale"] = mine["in_scale"]
    for key in ("actor_body.0.weight", "critic_body.0.weight"):
        if key in theirs and key in mine:
            old = theirs[key]
            extra = mine[key].shape[1] - old.shape[1]
            zeros = old.new_zeros(old.shape[0], extra)
            out[key] = torch.cat([old[:, :at], zeros, old[:, at:]], dim=1)
    return out


def _scores_widened(
    theirs: dict[str, torch.Tensor], mine: dict[str, torch.Tensor], obs_dim: int
) -> dict[str, torch.Tensor]:
    """``theirs`` (a network blind to the scores, its score inputs scaled to zero) for
    ``mine`` (one that reads them): ``mine``'s input scale, and zero first-layer weights on
    the scores and target, which the file's network never learned from."""
    fields = layout_for_dim(obs_dim).fields
    out = dict(theirs)
    out["in_scale"] = mine["in_scale"]
    for key in ("actor_body.0.weight", "critic_body.0.weight"):
        if key in theirs:
            weight = theirs[key].clone()
            weight[:, fields["scores"]] = 0.0
            weight[:, fields["target"]] = 0.0
            out[key] = weight
    return out


def _hidden_widened(
    theirs: dict[str, torch.Tensor], mine: dict[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """``theirs`` embedded in ``mine``'s wider layers: each weight keeps the file's block
    (its units' weights on the units it had), the file's units read nothing from new ones
    (zero), and the new units keep ``mine``'s fresh weights and biases. The heads read the
    new units through zero weights, so the outputs are the file's."""
    out = dict(theirs)
    for key, old in theirs.items():
        new = mine.get(key)
        if new is None or new.shape == old.shape or not key.endswith((".weight", ".bias")):
            continue
        widened = new.clone()
        if old.dim() == 2:
            widened[: old.shape[0]] = 0.0
            widened[: old.shape[0], : old.shape[1]] = old
        else:
            widened[: old.shape[0]] = old
        out[key] = widened
    return out


def _with_run_belief_head(
    theirs: dict[str, torch.Tensor], mine: dict[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """``theirs`` with the run's belief head: the file's when both have one, ``mine``'s fresh
    weights when only the run has one, none when only the file has one (play never reads
    it, so the actor plays the same either way)."""
    out = {k: v for k, v in theirs.items() if not k.startswith(BELIEF_PREFIX)}
    for key, fresh in mine.items():
        if key.startswith(BELIEF_PREFIX):
            old = theirs.get(key)
            out[key] = old if old is not None and old.shape == fresh.shape else fresh
    return out


def _widens(source: tuple[int, ...], run: tuple[int, ...]) -> bool:
    """Whether a network with hidden layers ``source`` embeds in one with ``run``."""
    return len(source) == len(run) and all(a <= b for a, b in zip(source, run))


def _check_fits(
    cfg: TrainConfig, model: ActorCritic, source: ActorCritic, game: dict[str, Any] | None
) -> None:
    """ConfigError naming every way ``source`` (the file's network) does not fit the run."""
    wanted = {
        "obs_type": model.obs_type,
        "max_pip": model.max_pip,
        "history_slots": model.history_slots,
        "hidden": tuple(model.net.hidden),
        "activation": model.net.activation,
        "shared": model.net.shared,
        "use_scores": model.net.use_scores,
    }
    got = {
        "obs_type": source.obs_type,
        "max_pip": source.max_pip,
        "history_slots": source.history_slots,
        "hidden": tuple(source.net.hidden),
        "activation": source.net.activation,
        "shared": source.net.shared,
        "use_scores": source.net.use_scores,
    }
    if not source.net.use_scores:  # a blind network widens to one that reads the scores
        del wanted["use_scores"], got["use_scores"]
    if _widens(got["hidden"], wanted["hidden"]):  # widened by _hidden_widened
        del wanted["hidden"], got["hidden"]
    if source.obs_type == "observation" and model.obs_type == "information_state":
        for key in ("obs_type", "history_slots"):  # widened by _widened
            del wanted[key], got[key]
    if game is not None and not cfg.init_other_table:
        wanted["num_players"], got["num_players"] = cfg.num_players, game.get("num_players")
        wanted["partnership"] = cfg.partnership
        got["partnership"] = bool(game.get("partnership", False))
    diff = [f"{k}: file {got[k]!r} vs run {wanted[k]!r}" for k in wanted if got[k] != wanted[k]]
    if diff:
        raise ConfigError(
            f"config init_policy={cfg.init_policy!r} does not fit this run ({'; '.join(diff)}): "
            "use a policy trained for the same game and network (or a narrower one of the same "
            "depth), or change the run's settings"
            + ("" if cfg.init_other_table else " (init_other_table=true accepts another table)")
        )
