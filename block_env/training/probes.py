"""Measurements of the policy during a native PPO run, as ``ppo.Callback`` objects; the place
that builds a run (``cli.train``, ``ray_train``) attaches the ones its config asks for
(``callbacks_of``). The PPO module itself imports none of them.

* ``NashConvCallback`` (``nashconv_every`` > 0): the exact NashConv of the policy
  (``block_env.openspiel.probe``: small tile sets only, needs open_spiel), logged as
  ``nash_conv`` in ``log.jsonl``.
"""

from __future__ import annotations

from typing import Any

from block_env.training.config import TrainConfig
from block_env.training.errors import ConfigError
from block_env.training.ppo import Callback, RunSpec


def callbacks_of(cfg: TrainConfig) -> list[Callback]:
    """The callbacks ``cfg`` asks for: the NashConv probe when ``nashconv_every`` > 0."""
    return [NashConvCallback(cfg)] if cfg.nashconv_every else []


class NashConvCallback(Callback):
    """``nash_conv`` in the log record every ``nashconv_every`` updates and after the last
    one. The game tree is walked once, when the run starts (ConfigError there when
    open_spiel is missing or the game is too large to walk)."""

    def __init__(self, cfg: TrainConfig) -> None:
        if cfg.nashconv_every < 1:
            raise ValueError(f"nashconv_every={cfg.nashconv_every}: use a positive int")
        self.cfg = cfg
        self.probe: Any = None

    def on_start(self, spec: RunSpec, model: Any) -> None:
        self.probe = nashconv_probe(self.cfg)

    def on_update(self, spec: RunSpec, model: Any, record: dict[str, Any]) -> None:
        if spec.due(record["update"], self.cfg.nashconv_every):
            record["nash_conv"] = self.probe(model)


def nashconv_probe(cfg: TrainConfig) -> Any:
    """The NashConv measurement of ``block_env.openspiel.probe`` for the run's game.
    ConfigError when open_spiel is missing or the game is too large to walk."""
    try:
        from block_env.openspiel.probe import NashConvProbe
    except ImportError as exc:
        raise ConfigError(
            f"config nashconv_every={cfg.nashconv_every} needs open_spiel "
            f"(pip install -e '.[openspiel]'): {exc}"
        ) from None
    try:
        return NashConvProbe(
            cfg.num_players, cfg.max_pip, cfg.hand_size, cfg.partnership, cfg.opener
        )
    except ValueError as exc:
        raise ConfigError(f"config nashconv_every={cfg.nashconv_every}: {exc}") from None
