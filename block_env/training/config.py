"""``TrainConfig``: every setting of a training run, with its checks.

Settings come from the defaults below (the default 2-player run), then a YAML file, then
``key=value`` overrides; unknown keys and values that cannot work are refused here, before
anything runs, with a ``ConfigError`` (a ``ValueError``) naming the key and what is allowed.
"""

from __future__ import annotations

import math
import re
import typing
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from block_env.information_state import OBS_TYPES
from block_env.training.errors import ConfigError, ConfigFileMissing

OPPONENT_KINDS = ("self", "snapshot", "random", "greedy", "rules", "fixed")
TEACHERS = ("auto", "none", "greedy", "rules")
BASELINES = ("random", "greedy", "rules")
ALGOS = ("ppo", "sb3", "rllib")
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
SEED_LIMIT = 2**32
# A step total no run reaches: a run with it and a time limit stops on the clock alone.
NO_STEP_LIMIT = 10**12


@dataclass
class TrainConfig:
    """Every setting of a run. The defaults are the default (2-player) run."""

    name: str = "2p"
    run_dir: str = "runs/{name}"  # {name} is replaced by the name
    algo: str = "ppo"  # "ppo" (batched-engine self-play), "sb3" (MaskablePPO), "rllib"
    seed: int = 0
    device: str = "auto"  # auto = cuda when available, else cpu
    threads: int = 1  # torch CPU threads (per rank)
    # torchrun / nproc=N: bind each local rank to cores of its own when there are enough
    pin_cores: bool = True
    # data-parallel PPO (algo=ppo): ``nproc`` local ranks started by ``python train.py``
    # itself (torchrun's launcher; ignored when torchrun or Ray starts the ranks), each with
    # its share of num_envs and minibatch_size (both global) and ``threads`` threads
    nproc: int = 1
    ray_workers: int = 0  # > 0: that many ranks under Ray Train (needs the rllib extra)
    dist_timeout_s: float = 600.0  # longest wait for the other ranks before the run stops
    # game
    num_players: int = 2
    partnership: bool = False
    opener: str = "rotate"
    # what an episode is and what it pays: one hand scored zero-sum (the default), or a whole
    # match to the rules' target with reward "win" (+1 to the match's winning side, -1 or
    # -1/(n-1) to the others) or "zero_sum" (each hand's zero-sum points); algo=ppo only
    episode: str = "hand"
    reward: str = "zero_sum"
    max_pip: int = 6  # the tile set [0|0]..[N|N] (6: the standard 28 tiles)
    hand_size: int = 0  # tiles per hand (0: the rules' default for the set)
    # what the policy reads: "observation" (the plain vector) or "information_state" (the
    # observation plus the hand's public history, which the network sums per seat; algo=ppo
    # only)
    obs_type: str = "observation"
    # budget
    total_steps: int = 30_000_000  # environment agent-steps (all seats, all games)
    # A safety stop (0 = none, the default): past this many minutes of training the run
    # ends early and its result then depends on the machine's speed.
    time_limit_min: float = 0.0
    # rollouts
    num_envs: int = 1024
    rollout_steps: int = 32  # environment steps per game per update
    # network (agents.network.NetConfig)
    hidden: list[int] = field(default_factory=lambda: [256, 256])
    activation: str = "relu"
    shared: bool = False
    privileged_critic: bool = True  # the critic also sees the other hands (training only)
    # the network reads the match scores and target (off: it plays every hand alike; on for
    # episode=match runs that should play the score)
    use_scores: bool = False
    # PPO
    lr: float = 1e-3
    anneal_lr: bool = True
    gamma: float = 1.0
    gae_lambda: float = 0.95
    epochs: int = 4
    minibatch_size: int = 4096
    clip: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    # auxiliary belief loss (algo=ppo): the actor's last hidden layer also feeds a head that
    # predicts which other seat holds each tile, trained on the dealt hands (binary
    # cross-entropy per seat and tile x belief_coef); 0 = no belief head
    belief_coef: float = 0.0
    max_grad_norm: float = 0.5
    reward_scale: float = 0.05
    target_kl: float = 0.0  # stop an update's epochs early past this KL (0 = never)
    skip_forced: bool = True  # a learner seat with one legal action moves without a decision
    # kickstarting: early on, the loss also pulls the policy towards a teacher bot's move on
    # the learner's decisions (cross-entropy x teacher_coef, falling linearly to 0 at
    # teacher_steps environment steps); "none" turns it off, "auto" is "rules" with algo=ppo
    # and "none" with the other engines (only algo=ppo has a teacher)
    teacher: str = "auto"
    teacher_coef: float = 1.0
    teacher_steps: int = 3_000_000
    # fine-tuning: start the networks from this shipped name (block-3p), policy file or
    # checkpoint instead of fresh weights ("" = fresh); it must fit the run's game and network
    init_policy: str = ""
    # let init_policy come from another table of the same tile set (another player count, or
    # individual <-> partnership): every table has the same inputs, so the network transfers,
    # though hand sizes, teams and scoring differ
    init_other_table: bool = False
    # self-play
    opponents: dict[str, float] = field(
        default_factory=lambda: {
            "self": 0.3,
            "snapshot": 0.3,
            "random": 0.1,
            "greedy": 0.15,
            "rules": 0.15,
        }
    )
    # share of the games drawn against the rule bot played the other way round: the bot alone
    # in the seat the learner would hold, the learner in every other seat (the second lineup
    # of a both-lineups evaluation); 0 = the bot fills every seat but the learner's
    rules_alone: float = 0.0
    # the agent spec (block_env.agent_specs) of the "fixed" opponent kind and evaluation
    # opponent: a frozen agent to train a best response against ("" = none)
    fixed_agent: str = ""
    # partnership: share of the hands against an opponent kind other than "self" in which that
    # opponent also plays the learner's partner (ad hoc teamwork: a partner other than itself)
    bot_partner: float = 0.0
    snapshot_every: int = 10  # updates between snapshots added to the pool
    pool_size: int = 20
    # evaluation, logging, checkpoints
    eval_every: int = 25  # updates
    eval_hands: int = 1000
    eval_opponents: list[str] = field(default_factory=lambda: ["random", "greedy", "rules"])
    final_eval_hands: int = 4000
    keep_best: bool = True  # final policy = best periodic evaluation (mean margin)
    checkpoint_every: int = 10  # updates
    # NashConv of the policy every this many updates (0 = never; small sets only, needs
    # open_spiel): logged as nash_conv in log.jsonl
    nashconv_every: int = 0
    progress: bool = True
    tensorboard: bool = True
    # sb3 only
    sb3_envs: int = 8
    sb3_n_steps: int = 256
    # rllib only (block_env.training.rllib adds its keys here)
    num_env_runners: int = 2  # Ray env-runner actors sampling in parallel (any node)
    rllib_envs_per_runner: int = 1
    rllib_train_batch: int = 4000  # env steps per PPO iteration (all runners together)
    rllib_league_every: int = 5  # iterations between snapshots of main joining the league
    rllib_league_size: int = 8  # snapshots kept (the oldest is replaced)
    rllib_self_play: float = 0.2  # chance a non-learner seat is main itself, not a snapshot
    rllib_num_cpus: int = 0  # CPUs of a local Ray instance (0: num_env_runners + 1)


# Keys that may change when a run is resumed; every other key must match the checkpoint.
RESUMABLE = {
    "total_steps",
    "time_limit_min",
    "eval_every",
    "eval_hands",
    "final_eval_hands",
    "checkpoint_every",
    "nashconv_every",
    "progress",
    "tensorboard",
    "device",
    "threads",
    "nproc",  # launcher settings: the world size itself is checked against the checkpoint
    "ray_workers",
    "dist_timeout_s",
}

# Keys that may differ between the ranks of one run: none changes what a rank computes.
PER_RANK = {
    "nproc",
    "ray_workers",
    "dist_timeout_s",
    "threads",
    "pin_cores",
    "progress",
    "tensorboard",
}


def _field_types() -> dict[str, Any]:
    return typing.get_type_hints(TrainConfig)


def _number(value: Any, bad: Exception) -> int | float:
    """``value`` as an int or float (a string such as ``"1e6"`` is parsed); ``bad`` otherwise."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise bad from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad
    return value


def _coerce(key: str, value: Any, kind: Any) -> Any:
    """``value`` as the field's type, or ValueError naming the key, value and type."""
    origin = typing.get_origin(kind)
    bad = ConfigError(f"config {key}={value!r} is not allowed: expected {_type_name(kind)}")
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise bad
    if kind is int:
        value = _number(value, bad)
        if isinstance(value, float) and (not value.is_integer()):
            raise bad
        return int(value)
    if kind is float:
        value = _number(value, bad)
        if not math.isfinite(value):
            raise ConfigError(f"config {key}={value!r} is not allowed: use a finite number")
        return float(value)
    if kind is str:
        if not isinstance(value, str):
            raise bad
        return value
    if origin is list:
        (item,) = typing.get_args(kind)
        if isinstance(value, str):
            value = [v for v in value.split(",") if v.strip()]
        if not isinstance(value, (list, tuple)):
            raise bad
        return [_coerce(key, v.strip() if isinstance(v, str) else v, item) for v in value]
    if origin is dict:
        _, vkind = typing.get_args(kind)
        if not isinstance(value, dict):
            raise bad
        return {str(k): _coerce(f"{key}.{k}", v, vkind) for k, v in value.items()}
    raise bad


def _type_name(kind: Any) -> str:
    return getattr(kind, "__name__", None) or str(kind).replace("typing.", "")


def validate(cfg: TrainConfig) -> TrainConfig:
    """Range checks, one section of the config after another; ValueError (``ConfigError``)
    naming the key, the value and what is allowed."""
    for check in (
        _check_run,
        _check_game,
        _check_device,
        _check_sizes,
        _check_ranks,
        _check_rollout,
        _check_ppo,
        _check_observation,
        _check_init_policy,
        _check_teacher,
        _check_weights,
        _check_budget,
        _check_network,
        _check_seats,
        _check_opponents,
        _check_evaluation,
    ):
        check(cfg)
    return cfg


def _need(cfg: TrainConfig, ok: bool, key: str, allowed: str) -> None:
    """ConfigError naming ``key``, its value and what is ``allowed`` unless ``ok``."""
    if not ok:
        raise ConfigError(f"config {key}={getattr(cfg, key)!r} is not allowed: {allowed}")


def _check_run(cfg: TrainConfig) -> None:
    """The engine, the run's name and folder, the seed."""
    _need(cfg, cfg.algo in ALGOS, "algo", f"use one of {', '.join(ALGOS)}")
    _need(
        cfg,
        NAME_PATTERN.fullmatch(cfg.name) is not None and ".." not in cfg.name,
        "name",
        "use letters, digits, '.', '_' and '-' (no path separators, no '..'), up to 100",
    )
    _check_run_dir(cfg)
    _need(cfg, 0 <= cfg.seed < SEED_LIMIT, "seed", "use an int in [0, 2**32)")


def _check_game(cfg: TrainConfig) -> None:
    """The table, the episode and its reward, the tile set."""
    need = partial(_need, cfg)
    need(cfg.num_players in (2, 3, 4), "num_players", "use 2, 3 or 4")
    need(not cfg.partnership or cfg.num_players == 4, "partnership", "needs num_players=4")
    need(cfg.opener in ("rotate", "highest_double"), "opener", "use rotate or highest_double")
    need(cfg.episode in ("hand", "match"), "episode", "use hand or match")
    need(cfg.reward in ("zero_sum", "win"), "reward", "use zero_sum or win")
    need(
        cfg.reward == "zero_sum" or cfg.episode == "match",
        "reward",
        "a single hand pays zero-sum points: use reward=win with episode=match",
    )
    need(
        cfg.episode == "hand" or cfg.algo == "ppo",
        "episode",
        f"only algo=ppo trains on whole matches; algo={cfg.algo} trains on single hands",
    )
    need(2 <= cfg.max_pip <= 6, "max_pip", "use an int from 2 to 6 (the set [0|0]..[N|N])")
    need(cfg.hand_size >= 0, "hand_size", "use 0 (the rules' default) or a positive int")
    need(cfg.nashconv_every >= 0, "nashconv_every", "use 0 (never) or a positive int")
    try:
        _block_config(cfg)
    except ValueError as exc:
        raise ConfigError(f"config max_pip/hand_size: {exc}") from None


def _check_device(cfg: TrainConfig) -> None:
    """The torch device."""
    _need(
        cfg,
        cfg.device == "auto" or cfg.device.split(":")[0] in ("cpu", "cuda"),
        "device",
        "use auto, cpu, cuda or cuda:N",
    )


# Counts and sizes that must be positive ints, and those that may be 0.
POSITIVE_INTS = (
    "threads",
    "num_envs",
    "rollout_steps",
    "epochs",
    "minibatch_size",
    "snapshot_every",
    "pool_size",
    "eval_every",
    "eval_hands",
    "final_eval_hands",
    "checkpoint_every",
    "total_steps",
    "teacher_steps",
    "sb3_envs",
    "sb3_n_steps",
    "rllib_envs_per_runner",
    "rllib_train_batch",
    "rllib_league_every",
    "rllib_league_size",
)
NON_NEGATIVE_INTS = ("num_env_runners", "rllib_num_cpus")


def _check_sizes(cfg: TrainConfig) -> None:
    """Counts, sizes and periods of every engine."""
    for key in POSITIVE_INTS:
        _need(cfg, getattr(cfg, key) >= 1, key, "use a positive int")
    for key in NON_NEGATIVE_INTS:
        _need(cfg, getattr(cfg, key) >= 0, key, "use an int >= 0")
    _need(cfg, 0 <= cfg.rllib_self_play <= 1, "rllib_self_play", "use a number in [0, 1]")
    _need(
        cfg, cfg.minibatch_size >= 2, "minibatch_size", "use at least 2 (advantages are normalised)"
    )


def _check_ranks(cfg: TrainConfig) -> None:
    """Data-parallel ranks: local (nproc) or Ray Train, algo=ppo only, the split of the
    games and minibatches."""
    need = partial(_need, cfg)
    need(cfg.nproc >= 1, "nproc", "use a positive int (local ranks)")
    need(cfg.ray_workers >= 0, "ray_workers", "use 0 (no Ray) or a positive int")
    need(cfg.dist_timeout_s > 0, "dist_timeout_s", "use a positive number of seconds")
    need(
        cfg.nproc == 1 or cfg.ray_workers == 0,
        "ray_workers",
        "use either nproc (local ranks) or ray_workers (Ray Train ranks), not both",
    )
    ranks = max(cfg.nproc, cfg.ray_workers)
    need(
        ranks == 1 or cfg.algo == "ppo",
        "nproc" if cfg.nproc > 1 else "ray_workers",
        f"only algo=ppo trains on several ranks; algo={cfg.algo} runs in one process",
    )
    split_across(cfg, ranks)


def _check_rollout(cfg: TrainConfig) -> None:
    """A minibatch fits in one rollout."""
    if cfg.algo == "ppo":
        rollout = cfg.num_envs * cfg.rollout_steps
        _need(
            cfg,
            cfg.minibatch_size <= rollout,
            "minibatch_size",
            f"use at most num_envs x rollout_steps = {rollout}, the most decisions a rollout "
            f"can yield (or raise num_envs or rollout_steps)",
        )
    if cfg.algo == "sb3":
        _need(
            cfg, cfg.sb3_envs * cfg.sb3_n_steps >= 2, "sb3_n_steps", "sb3_envs x sb3_n_steps >= 2"
        )


def _check_ppo(cfg: TrainConfig) -> None:
    """The PPO numbers that must be positive."""
    for key in ("lr", "clip", "reward_scale", "max_grad_norm"):
        _need(cfg, getattr(cfg, key) > 0, key, "use a positive number")


def _check_observation(cfg: TrainConfig) -> None:
    """What the policy reads (the information state: algo=ppo without the NashConv probe)."""
    need = partial(_need, cfg)
    need(cfg.obs_type in OBS_TYPES, "obs_type", f"use one of {', '.join(OBS_TYPES)}")
    need(
        cfg.obs_type == "observation" or cfg.algo == "ppo",
        "obs_type",
        f"algo={cfg.algo} trains on the plain observation only: use obs_type=observation, "
        "or algo=ppo for information_state",
    )
    need(
        cfg.obs_type == "observation" or cfg.nashconv_every == 0,
        "obs_type",
        "the NashConv probe (nashconv_every > 0) plays the plain observation only: use "
        "obs_type=observation or nashconv_every=0",
    )


def _check_init_policy(cfg: TrainConfig) -> None:
    """Fine-tuning: algo=ppo only; init_other_table only with an init_policy."""
    _need(
        cfg,
        not cfg.init_policy or cfg.algo == "ppo",
        "init_policy",
        "only algo=ppo starts from a policy: leave it empty",
    )
    _need(
        cfg,
        cfg.init_policy or not cfg.init_other_table,
        "init_other_table",
        "it only applies to an init_policy: name one or leave it false",
    )


def _check_teacher(cfg: TrainConfig) -> None:
    """Kickstarting's teacher bot (algo=ppo only) and the belief head (algo=ppo only)."""
    _need(cfg, cfg.teacher in TEACHERS, "teacher", f"use one of {', '.join(TEACHERS)}")
    _need(
        cfg,
        cfg.teacher in ("auto", "none") or cfg.algo == "ppo",
        "teacher",
        "only algo=ppo has a teacher: use auto or none",
    )
    _need(
        cfg,
        cfg.belief_coef == 0 or cfg.algo == "ppo",
        "belief_coef",
        f"only algo=ppo has a belief head: use 0 with algo={cfg.algo}",
    )


def _check_weights(cfg: TrainConfig) -> None:
    """Loss weights, the KL bound and the time limit: numbers >= 0."""
    for key in (
        "ent_coef",
        "vf_coef",
        "belief_coef",
        "target_kl",
        "time_limit_min",
        "teacher_coef",
    ):
        _need(cfg, getattr(cfg, key) >= 0, key, "use a number >= 0")


def _check_budget(cfg: TrainConfig) -> None:
    """A run ends; the discount and GAE's lambda lie in [0, 1]."""
    _need(
        cfg,
        cfg.total_steps < NO_STEP_LIMIT or cfg.time_limit_min > 0,
        "total_steps",
        f"{NO_STEP_LIMIT:.0e} or more never ends: set time_limit_min too, or fewer steps",
    )
    _need(cfg, 0 <= cfg.gamma <= 1, "gamma", "use a number in [0, 1]")
    _need(cfg, 0 <= cfg.gae_lambda <= 1, "gae_lambda", "use a number in [0, 1]")


def _check_network(cfg: TrainConfig) -> None:
    """The network's layers, trunk and activation."""
    need = partial(_need, cfg)
    need(bool(cfg.hidden) and all(h >= 1 for h in cfg.hidden), "hidden", "use positive ints")
    need(not (cfg.shared and cfg.privileged_critic), "shared", "needs privileged_critic=false")
    need(cfg.activation in ("relu", "tanh", "gelu"), "activation", "use relu, tanh or gelu")


def _check_seats(cfg: TrainConfig) -> None:
    """Who the learner plays beside: the lone rule bot (``rules_alone``), a bot partner
    (``bot_partner``)."""
    need = partial(_need, cfg)
    need(0 <= cfg.rules_alone <= 1, "rules_alone", "use a number in [0, 1]")
    need(
        cfg.rules_alone == 0 or cfg.algo == "ppo",
        "rules_alone",
        f"only algo=ppo draws its own opponents: use 0 with algo={cfg.algo}",
    )
    need(
        cfg.rules_alone == 0 or not cfg.partnership,
        "rules_alone",
        "a lone rule bot has no partner: use 0 with partnership=true",
    )
    need(0 <= cfg.bot_partner <= 1, "bot_partner", "use a number in [0, 1]")
    need(
        cfg.bot_partner == 0 or (cfg.partnership and cfg.algo == "ppo"),
        "bot_partner",
        "a partner exists only with partnership=true (and algo=ppo draws the seats)",
    )


def _check_opponents(cfg: TrainConfig) -> None:
    """The opponent mix, and the frozen ``fixed`` agent exactly when a kind uses it."""
    need = partial(_need, cfg)
    unknown = sorted(set(cfg.opponents) - set(OPPONENT_KINDS))
    need(not unknown, "opponents", f"unknown kinds {unknown}; use {', '.join(OPPONENT_KINDS)}")
    need(
        all(w >= 0 for w in cfg.opponents.values()) and sum(cfg.opponents.values()) > 0,
        "opponents",
        "weights must be >= 0 with a positive sum",
    )
    fixed_used = cfg.opponents.get("fixed", 0) > 0 or "fixed" in cfg.eval_opponents
    need(
        bool(cfg.fixed_agent) == fixed_used,
        "fixed_agent",
        "name the frozen agent (an agent spec) exactly when opponents or eval_opponents "
        "use the kind fixed",
    )
    need(
        not fixed_used or cfg.algo == "ppo",
        "fixed_agent",
        f"only algo=ppo draws its own opponents: drop the fixed kind with algo={cfg.algo}",
    )
    if fixed_used and cfg.fixed_agent:
        _check_fixed_agent(cfg)


def _check_evaluation(cfg: TrainConfig) -> None:
    """The evaluation opponents: known, at least one, each once."""
    allowed = (*BASELINES, "fixed") if cfg.fixed_agent else BASELINES
    unknown = sorted(set(cfg.eval_opponents) - set(allowed))
    need = partial(_need, cfg)
    need(not unknown, "eval_opponents", f"unknown agents {unknown}; use {', '.join(allowed)}")
    need(bool(cfg.eval_opponents), "eval_opponents", f"name at least one of {', '.join(allowed)}")
    need(
        len(set(cfg.eval_opponents)) == len(cfg.eval_opponents),
        "eval_opponents",
        "name each opponent once",
    )


def _check_fixed_agent(cfg: TrainConfig) -> None:
    """Build the frozen agent once, so that a spec that cannot play this game fails here."""
    from block_env.agent_specs import SetupError
    from block_env.evaluation.batched import agent_actor

    try:
        agent_actor(cfg.fixed_agent, game_of(cfg), cfg.seed, information_state=True)
    except SetupError as exc:
        raise ConfigError(f"config fixed_agent={cfg.fixed_agent!r} is not allowed: {exc}") from None


def split_across(cfg: TrainConfig, world_size: int) -> tuple[int, int]:
    """(games, minibatch size) of one of ``world_size`` ranks: the config's global
    ``num_envs`` and ``minibatch_size`` split evenly, or a ConfigError naming the key that
    does not divide."""
    for key in ("num_envs", "minibatch_size"):
        value = getattr(cfg, key)
        if value % world_size:
            raise ConfigError(
                f"config {key}={value} is not allowed with {world_size} ranks: it is global "
                f"and split evenly across the ranks, so use a multiple of {world_size}"
            )
    if cfg.minibatch_size // world_size < 2:
        raise ConfigError(
            f"config minibatch_size={cfg.minibatch_size} is not allowed with {world_size} ranks: "
            f"each rank needs at least 2 decisions per minibatch"
        )
    return cfg.num_envs // world_size, cfg.minibatch_size // world_size


def _check_run_dir(cfg: TrainConfig) -> None:
    """``run_dir`` must format with ``{name}`` only; a relative one must stay inside
    ``runs/`` of the project (an absolute path is the user's explicit choice)."""
    try:
        path = Path(cfg.run_dir.format(name=cfg.name))
    except (KeyError, IndexError, ValueError):
        raise ConfigError(
            f"config run_dir={cfg.run_dir!r} is not allowed: the only placeholder is {{name}}"
        ) from None
    if not cfg.run_dir.strip():
        raise ConfigError("config run_dir='' is not allowed: give a folder")
    if not path.is_absolute():
        runs = (project_root() / "runs").resolve()
        target = (project_root() / path).resolve()
        if target == runs or runs not in target.parents:
            raise ConfigError(
                f"config run_dir={cfg.run_dir!r} (with name={cfg.name!r}) is not allowed: a "
                f"relative run folder must lie inside runs/ (or give an absolute path)"
            )


def config_from_dict(data: dict[str, Any]) -> TrainConfig:
    """A validated config from a mapping; unknown keys raise ValueError listing them."""
    if not isinstance(data, dict):
        raise ConfigError(
            f"a config must be a mapping of keys to values, got {type(data).__name__}"
        )
    types = _field_types()
    unknown = sorted(set(data) - set(types))
    if unknown:
        raise ConfigError(
            f"unknown config key(s) {', '.join(unknown)}: allowed keys are {', '.join(types)}"
        )
    values = {k: _coerce(k, v, types[k]) for k, v in data.items()}
    return validate(TrainConfig(**values))


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``["total_steps=1e6", "hidden=[128,128]"]`` -> dict (values read as YAML)."""
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        if not eq or not key:
            raise ConfigError(f"override {item!r} is not key=value")
        try:
            out[key.strip()] = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as exc:
            raise ConfigError(
                f"override {item!r}: the value is not valid YAML ({_first(exc)})"
            ) from None
    return out


def _first(exc: Exception) -> str:
    """The first line of an exception's message (YAML errors span several lines)."""
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """Defaults, then the YAML file (if any), then ``key=value`` overrides."""
    import yaml

    data: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise ConfigFileMissing(f"config file {path} does not exist (or is not a file)")
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            raise ConfigError(f"config file {path} is not UTF-8 text") from None
        except yaml.YAMLError as exc:  # broken YAML, or tags such as !!python/... (never run)
            raise ConfigError(f"config file {path} is not plain YAML: {_first(exc)}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: a config file must hold a mapping of keys to values")
        data.update(loaded)
    data.update(parse_overrides(overrides or []))
    return config_from_dict(data)


def teacher_of(cfg: TrainConfig) -> str:
    """The teacher bot of a run ("none", "greedy" or "rules"), with "auto" resolved."""
    if cfg.teacher == "auto":
        return "rules" if cfg.algo == "ppo" else "none"
    return cfg.teacher


def game_of(cfg: TrainConfig) -> dict[str, Any]:
    """The env configuration the policy trains on (the keywords of ``block_env.raw_env``):
    single hands scored zero-sum unless the config says otherwise; it is stored in policy
    files and checkpoints. The tile set (``max_pip``, ``hand_size``) is named only when it
    is not the standard one, so default runs record exactly the keys they always did."""
    game = {
        "num_players": cfg.num_players,
        "opener": cfg.opener,
        "episode": cfg.episode,
        "partnership": cfg.partnership,
        "target_score": None,
        "reward": cfg.reward,
    }
    return {**game, **set_of(cfg)}


def hand_game_of(cfg: TrainConfig) -> dict[str, Any]:
    """``game_of`` as single hands scored zero-sum: the game the trainer's evaluations play
    (a match-trained policy is measured per hand there, and by matches with
    ``python -m block_env.evaluate --episode match``)."""
    return {**game_of(cfg), "episode": "hand", "reward": "zero_sum"}


def set_of(cfg: TrainConfig) -> dict[str, Any]:
    """``max_pip`` and ``hand_size`` as env keywords; empty for the standard set."""
    config = _block_config(cfg)
    if config.is_standard_set:
        return {}
    return {"max_pip": config.max_pip, "hand_size": config.hand_size}


def obs_of(cfg: TrainConfig) -> dict[str, Any]:
    """``agents.network.ActorCritic``'s keywords for the run's ``obs_type``: empty for the
    plain observation, else ``obs_type`` and ``history_slots`` (H of the run's game)."""
    if cfg.obs_type == "observation":
        return {}
    from block_env.information_state import history_slots

    return {"obs_type": cfg.obs_type, "history_slots": history_slots(_block_config(cfg))}


def _block_config(cfg: TrainConfig):
    """The ``BlockConfig`` of the run's game (ValueError for a set that does not fit)."""
    from block_env.config import BlockConfig

    return BlockConfig(
        num_players=cfg.num_players,
        partnership=cfg.partnership,
        opener=cfg.opener,
        max_pip=cfg.max_pip,
        hand_size=cfg.hand_size or None,
    )


def project_root() -> Path:
    """Where relative run folders live: the source checkout holding ``train.py`` when this
    package runs from one, else the current directory."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "train.py").is_file() else Path.cwd()


def run_dir_of(cfg: TrainConfig) -> Path:
    """The run folder of ``cfg`` (``run_dir`` with ``{name}`` filled in)."""
    path = Path(cfg.run_dir.format(name=cfg.name))
    return path if path.is_absolute() else project_root() / path
