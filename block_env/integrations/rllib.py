"""Ray RLlib (new API stack) on block-env: the env, a masked RLModule and league self-play.

* ``env_creator(config)`` builds ``BlockMultiAgentEnv``, an RLlib ``MultiAgentEnv`` over the
  AEC ``raw_env``. ``config`` holds the env's keywords (``num_players``, ``episode``,
  ``reward``...) plus ``illegal_action`` (see the class). Observations are
  ``{"observations": float32[122], "action_mask": int8[57]}``, the keys RLlib's
  action-masking modules read. ``register(name)`` registers it with Ray Tune.
* ``BlockRLModule``: a torch RLModule holding ``agents.network.ActorCritic`` (the network the
  native trainer uses), so a trained module is saved as an ordinary policy file that
  ``agents.load`` and ``block_env.evaluate`` play without Ray.
* ``LeagueMapping`` / ``LeagueCallback``: self-play. Every seat is played by the shared
  trainable module ``"main"`` or by a frozen snapshot of it; every ``every`` training
  iterations the callback freezes a copy of ``main`` into the league (the oldest is
  overwritten once ``size`` snapshots exist), and the mapping draws each episode's
  opponents from it.
* ``ppo_config(...)``: the PPO configuration tying these together (used by ``train.py``'s
  ``algo: rllib`` engine, the example and the tests).
* ``RLlibAgent`` / ``load_agent(path)``: ``act(observation) -> int`` for the ``main`` module
  of an RLlib checkpoint: the agent ``rllib`` (``agents.make("rllib", path=...)``, the spec
  ``rllib:path=PATH``), registered by the entry point ``rllib`` of the group
  ``block_env.agents`` in ``pyproject.toml``.

Everything Ray needs on a remote node is importable from this module (nothing lives in
``__main__``), so env runners on other machines rebuild it from the module path; the nodes
need block-env installed, like Ray itself.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.torch import TorchRLModule
from ray.rllib.env.multi_agent_env import MultiAgentEnv

from agents.network import ActorCritic, NetConfig
from agents.policy import PolicyAgent
from block_env.env import raw_env

MAIN = "main"
SNAPSHOT_PREFIX = "main_v"
# raw_env's keywords (the game, its tile set, the rendering language), not its render_mode
ENV_KEYS = tuple(
    p for p in inspect.signature(raw_env.__init__).parameters if p not in ("self", "render_mode")
)
ILLEGAL_ACTIONS = ("end", "raise")
OPTIONS = ("illegal_action", "skip_forced")

__all__ = [
    "MAIN",
    "BlockMultiAgentEnv",
    "BlockRLModule",
    "LeagueCallback",
    "LeagueMapping",
    "RLlibAgent",
    "env_creator",
    "export_policy",
    "load_agent",
    "ppo_config",
    "register",
]


# ----------------------------------------------------------------------------- env


class BlockMultiAgentEnv(MultiAgentEnv):
    """Block as an RLlib multi-agent env (turn-based: one agent acts per step).

    * Agent ids are the AEC seats ``"player_0"`` ... (stable strings); ``agents`` always
      lists every seat of the table, since all play until the episode ends.
    * ``reset``/``step`` return an observation for the seat to act only, and on the last
      step of the episode a final observation for every seat, with ``terminateds`` true for
      all and ``"__all__"``. Truncation never happens.
    * Rewards: every seat's reward of every step (``raw_env.rewards``), so on the step that
      ends a hand every seat gets its points, also the seats that did not move; RLlib adds a
      reward that arrives while a seat waits to its last action (its "hanging" reward).
    * Infos: the AEC env's ``infos`` of every seat, passed through unchanged.
    * ``skip_forced`` (default False): after each action the env itself plays every move
      that has a single legal option (most are forced passes), adding their rewards to the
      step's; the seats then decide only real choices (fewer, more useful samples). The
      first move of an episode is always returned. ``infos`` are those of the last move
      played, or of the last one that ended a hand (``forced_steps`` counts the moves).
    * ``illegal_action``: ``"end"`` (default) follows PettingZoo's classic convention (the
      episode ends, the mover gets -1, the others 0; ``illegal_actions`` counts them), which
      is what lets RLlib's env check step its unmasked random action; a masked module never
      plays one. ``"raise"`` raises ``ValueError`` naming the legal actions, and changes
      nothing.
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        cfg = dict(config or {})
        self.illegal_action = cfg.pop("illegal_action", "end")
        self.skip_forced = cfg.pop("skip_forced", False)
        if not isinstance(self.skip_forced, bool):
            raise ValueError(f"skip_forced={self.skip_forced!r} is not allowed: use True or False")
        if self.illegal_action not in ILLEGAL_ACTIONS:
            raise ValueError(
                f"illegal_action={self.illegal_action!r} is not allowed: use one of "
                f"{', '.join(ILLEGAL_ACTIONS)}"
            )
        unknown = sorted(set(cfg) - set(ENV_KEYS))
        if unknown:
            raise ValueError(
                f"unknown block_env config key(s) {', '.join(map(repr, unknown))}: allowed "
                f"are {', '.join((*ENV_KEYS, *OPTIONS))}"
            )
        self.game = raw_env(**cfg)
        self.possible_agents = list(self.game.possible_agents)
        self.agents = list(self.possible_agents)
        inner = self.game.observation_space(self.possible_agents[0])
        space = gym.spaces.Dict(
            {"observations": inner["observation"], "action_mask": inner["action_mask"]}
        )
        act = self.game.action_space(self.possible_agents[0])
        self.observation_spaces = dict.fromkeys(self.possible_agents, space)
        self.action_spaces = dict.fromkeys(self.possible_agents, act)
        self.observation_space = gym.spaces.Dict(self.observation_spaces)
        self.action_space = gym.spaces.Dict(self.action_spaces)
        self.illegal_actions = 0
        self.forced_steps = 0

    def _obs(self, agent: str) -> dict[str, np.ndarray]:
        o = self.game.observe(agent)
        return {"observations": o["observation"], "action_mask": o["action_mask"]}

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A new episode; ``seed`` and ``options`` go to ``raw_env.reset`` unchanged."""
        self.game.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        agent = self.game.agent_selection
        return {agent: self._obs(agent)}, {agent: self.game.infos[agent]}

    def step(self, action_dict: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """Plays the action of the seat to act (the only key ``action_dict`` may hold)."""
        if self.game.game is None:
            raise RuntimeError("call reset() before step()")
        agent = self.game.agent_selection
        if set(action_dict) != {agent}:
            raise ValueError(
                f"expected an action for {agent!r} only (it is its turn), got one for "
                f"{sorted(action_dict)}"
            )
        if self.game.terminations[agent]:
            raise RuntimeError("the episode is over: call reset()")
        action = action_dict[agent]
        mask = self.game.observe(agent)["action_mask"]
        legal = (
            isinstance(action, (int, np.integer))
            and not isinstance(action, bool)
            and 0 <= int(action) < mask.shape[0]
            and bool(mask[int(action)])
        )
        if not legal:
            if self.illegal_action == "raise":
                raise ValueError(
                    f"illegal action {action!r} for {agent}: legal actions are "
                    f"{np.flatnonzero(mask).tolist()}"
                )
            return self._end_illegal(agent)
        self.game.step(int(action))
        rewards = {a: float(self.game.rewards[a]) for a in self.possible_agents}
        infos = {a: self.game.infos[a] for a in self.possible_agents}
        while self.skip_forced and not any(self.game.terminations.values()):
            forced = self.game.agent_selection
            legal = np.flatnonzero(self.game.observe(forced)["action_mask"])
            if legal.size != 1:
                break
            self.game.step(int(legal[0]))
            self.forced_steps += 1
            for a in self.possible_agents:
                rewards[a] += float(self.game.rewards[a])
            first = self.possible_agents[0]
            ended_hand = bool(self.game.infos[first].get("hand_over", False))
            if ended_hand or not infos[first].get("hand_over", False):  # keep a hand's end
                infos = {a: self.game.infos[a] for a in self.possible_agents}
        if any(self.game.terminations.values()):
            obs = {a: self._obs(a) for a in self.possible_agents}
            done = dict.fromkeys(self.possible_agents, True)
            done["__all__"] = True
        else:
            nxt = self.game.agent_selection
            obs = {nxt: self._obs(nxt)}
            done = {"__all__": False}
        return obs, rewards, done, {"__all__": False}, infos

    def _end_illegal(self, agent: str) -> tuple[dict, dict, dict, dict, dict]:
        self.illegal_actions += 1
        rewards = dict.fromkeys(self.possible_agents, 0.0)
        rewards[agent] = -1.0
        for a in self.possible_agents:  # the AEC env's state: this episode is over
            self.game.terminations[a] = True
        obs = {a: self._obs(a) for a in self.possible_agents}
        done = dict.fromkeys(self.possible_agents, True)
        done["__all__"] = True
        infos = {a: self.game.infos[a] for a in self.possible_agents}
        return obs, rewards, done, {"__all__": False}, infos


def env_creator(config: Mapping[str, Any] | None = None) -> BlockMultiAgentEnv:
    """RLlib env creator: ``BlockMultiAgentEnv(config)`` (an ``EnvContext`` is a dict)."""
    return BlockMultiAgentEnv(config)


def register(name: str = "block_env") -> str:
    """Register ``env_creator`` with Ray Tune under ``name`` (for ``config.environment``)."""
    from ray.tune.registry import register_env

    register_env(name, env_creator)
    return name


# ----------------------------------------------------------------------------- module


def net_config(model_config: Mapping[str, Any] | None) -> NetConfig:
    """The ``ActorCritic`` shape from an RLModule ``model_config`` dict (``hidden``,
    ``activation``, ``shared``, ``use_scores``); the privileged critic is not available here
    (the env gives only what a seat observes)."""
    mc = dict(model_config or {})
    return NetConfig(
        hidden=tuple(mc.get("hidden", (256, 256))),
        activation=mc.get("activation", "relu"),
        shared=bool(mc.get("shared", False)),
        use_scores=bool(mc.get("use_scores", False)),
    )


class BlockRLModule(TorchRLModule, ValueFunctionAPI):
    """PPO-ready RLModule: ``agents.network.ActorCritic`` on ``observations`` with illegal
    actions (``action_mask == 0``) at the dtype's minimum logit, so they are never sampled
    and contribute nothing to the entropy. The same network on env runners and learners."""

    def setup(self) -> None:
        mc = dict(self.model_config or {})
        self.net = ActorCritic(
            net_config(mc), **({"max_pip": mc["max_pip"]} if "max_pip" in mc else {})
        )

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        logits = self.net.masked_logits(obs["observations"].float(), obs["action_mask"])
        return {Columns.ACTION_DIST_INPUTS: logits}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        return self.net.value(batch[Columns.OBS]["observations"].float())


# ----------------------------------------------------------------------------- league


def _episode_rng(episode: Any) -> np.random.Generator:
    """A generator fixed by the episode's id (the same in every process)."""
    key = str(getattr(episode, "id_", episode)).encode()
    return np.random.default_rng(int.from_bytes(hashlib.blake2b(key, digest_size=8).digest()))


class LeagueMapping:
    """``agent_to_module_mapping_fn`` for league self-play, drawn once per episode.

    Each episode one seat (uniformly drawn) is ``main``; every other seat is ``main`` too
    with probability ``self_play``, else a snapshot drawn uniformly from ``snapshots``
    (``main`` when there is none yet). The draw depends only on the episode id, so every
    seat of one episode sees the same draw whichever process asks.
    """

    def __init__(
        self, num_players: int, snapshots: Sequence[str] = (), self_play: float = 0.2
    ) -> None:
        if not 0.0 <= self_play <= 1.0:
            raise ValueError(f"self_play={self_play!r} is not allowed: use a number in [0, 1]")
        self.num_players = int(num_players)
        self.snapshots = list(snapshots)
        self.self_play = float(self_play)

    def modules(self, episode: Any) -> list[str]:
        """The module of every seat in ``episode``."""
        rng = _episode_rng(episode)
        learner = int(rng.integers(self.num_players))
        out = []
        for seat in range(self.num_players):
            pick_self = rng.random() < self.self_play
            pick = int(rng.integers(max(len(self.snapshots), 1)))
            if seat == learner or pick_self or not self.snapshots:
                out.append(MAIN)
            else:
                out.append(self.snapshots[pick])
        return out

    def __call__(self, agent_id: str, episode: Any, **kwargs: Any) -> str:
        return self.modules(episode)[int(str(agent_id).rsplit("_", 1)[1])]


class LeagueCallback(RLlibCallback):
    """Every ``every`` training iterations, freezes a copy of ``main`` into the league as a
    new module (``main_v1``, ``main_v2``... up to ``size`` of them, then the oldest slot is
    overwritten) and installs a ``LeagueMapping`` over the league. Snapshots are never
    trained (only ``main`` is). ``result["league"]`` reports the league's state."""

    def __init__(self, num_players: int, every: int = 5, size: int = 8, self_play: float = 0.2):
        super().__init__()
        if every < 1 or size < 1:
            raise ValueError(f"every={every!r}, size={size!r}: both must be positive ints")
        self.num_players = num_players
        self.every = every
        self.size = size
        self.self_play = self_play
        self.snapshots: list[str] = []
        self.added = 0  # snapshots taken so far (the next slot is added % size)

    def on_train_result(self, *, algorithm: Any, result: dict, **kwargs: Any) -> None:
        if algorithm.iteration % self.every == 0:
            self.snapshot(algorithm)
        result["league"] = {"snapshots": len(self.snapshots), "taken": self.added}

    def snapshot(self, algorithm: Any) -> str:
        """Freeze the current ``main`` into the league now; returns the module id used."""
        from ray.rllib.core.rl_module.rl_module import RLModuleSpec

        slot = f"{SNAPSHOT_PREFIX}{self.added % self.size + 1}"
        self.added += 1
        if slot not in self.snapshots:
            self.snapshots.append(slot)
            algorithm.add_module(
                module_id=slot,
                module_spec=RLModuleSpec.from_module(algorithm.get_module(MAIN)),
                new_agent_to_module_mapping_fn=LeagueMapping(
                    self.num_players, self.snapshots, self.self_play
                ),
                new_should_module_be_updated=[MAIN],
            )
        copy_module_weights(algorithm, MAIN, slot)
        return slot


def module_state(algorithm: Any, module_id: str) -> dict[str, Any]:
    """The learner's weights of ``module_id`` (numpy arrays): the source of truth."""
    state = algorithm.learner_group.get_state(components=f"learner/rl_module/{module_id}")
    return state["learner"]["rl_module"][module_id]


def copy_module_weights(algorithm: Any, source: str, target: str) -> None:
    """Give ``target`` the weights of ``source`` on the learner(s) and on every env runner.

    Set explicitly everywhere: ``Algorithm.set_state`` would push the weights to the env
    runners tagged with the learner's current update number, which the runners already
    hold, so they would skip them and keep the new module's random initial weights."""
    state = module_state(algorithm, source)
    algorithm.learner_group.foreach_learner(lambda learner: learner.module[target].set_state(state))
    algorithm.env_runner_group.foreach_env_runner(
        lambda runner: runner.module[target].set_state(state), local_env_runner=True
    )


# ----------------------------------------------------------------------------- PPO


def ppo_config(
    env_config: Mapping[str, Any] | None = None,
    *,
    env: str | type = BlockMultiAgentEnv,
    num_env_runners: int = 2,
    num_envs_per_env_runner: int = 1,
    hidden: Sequence[int] = (256, 256),
    activation: str = "relu",
    lr: float = 3e-4,
    gamma: float = 1.0,
    gae_lambda: float = 0.95,
    train_batch_size: int = 4000,
    minibatch_size: int = 1000,
    num_epochs: int = 4,
    clip: float = 0.2,
    ent_coef: float = 0.01,
    vf_coef: float = 0.5,
    league_every: int = 5,
    league_size: int = 8,
    self_play: float = 0.2,
    custom_resources_per_env_runner: Mapping[str, float] | None = None,
    seed: int | None = 0,
) -> Any:
    """A ``PPOConfig`` for league self-play on ``env``: the env class itself by default (env
    runners import it by module path, on any node), or a name given to ``register``.

    Rewards stay in points (zero-sum points per hand by default): the actor and critic are
    separate networks, advantages are standardized per batch and the value loss is not
    clipped, so their scale does not reach the policy gradient. ``custom_resources_per_env_runner``
    pins env runners to nodes offering those Ray resources (e.g. ``{"sampler": 1}``).
    """
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    env_config = dict(env_config or {})
    BlockMultiAgentEnv(env_config)  # refuse a bad env config here, not on a remote runner
    num_players = int(env_config.get("num_players", 2))
    model = {"hidden": list(hidden), "activation": activation}
    if "max_pip" in env_config:  # a smaller tile set: the network's sizes follow it
        model["max_pip"] = int(env_config["max_pip"])
    return (
        PPOConfig()
        .environment(env, env_config=env_config)
        .env_runners(
            num_env_runners=num_env_runners,
            num_envs_per_env_runner=num_envs_per_env_runner,
            custom_resources_per_env_runner=dict(custom_resources_per_env_runner or {}),
        )
        .multi_agent(
            policies={MAIN},
            policy_mapping_fn=LeagueMapping(num_players, (), self_play),
            policies_to_train=[MAIN],
        )
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={MAIN: RLModuleSpec(module_class=BlockRLModule, model_config=model)}
            )
        )
        .training(
            lr=lr,
            gamma=gamma,
            lambda_=gae_lambda,
            train_batch_size_per_learner=train_batch_size,
            minibatch_size=minibatch_size,
            num_epochs=num_epochs,
            clip_param=clip,
            entropy_coeff=ent_coef,
            vf_loss_coeff=vf_coef,
            vf_clip_param=float("inf"),
        )
        .callbacks(_league_callback_factory(num_players, league_every, league_size, self_play))
        .debugging(seed=seed)
    )


def _league_callback_factory(num_players: int, every: int, size: int, self_play: float) -> Any:
    import functools

    return functools.partial(
        LeagueCallback, num_players=num_players, every=every, size=size, self_play=self_play
    )


# ----------------------------------------------------------------------------- playing


def main_network(algorithm_or_module: Any) -> ActorCritic:
    """The ``ActorCritic`` of the ``main`` module (an Algorithm, a MultiRLModule or a
    ``BlockRLModule``), copied to the CPU."""
    module = algorithm_or_module
    if hasattr(module, "get_module"):
        module = module.get_module(MAIN)
    elif not isinstance(module, BlockRLModule) and MAIN in module:
        module = module[MAIN]
    if not isinstance(module, BlockRLModule):
        raise ValueError(f"{type(module).__name__} is not a BlockRLModule")
    net = ActorCritic(module.net.net, max_pip=module.net.max_pip)
    net.load_state_dict({k: v.detach().cpu() for k, v in module.net.state_dict().items()})
    return net.eval()


def export_policy(
    algorithm_or_module: Any, path: str | Path, game: Mapping[str, Any] | None = None
) -> Path:
    """Write ``main``'s network as a block-env policy file (``agents.load`` plays it without
    Ray). ``game`` is the env configuration it was trained for (an RLlib ``env_config``:
    keys left out take the env's defaults)."""
    from agents.policy_files import save_policy

    path = Path(path)
    played = None if game is None else BlockMultiAgentEnv(game).game.config
    save_policy(path, main_network(algorithm_or_module), {"trainer": "rllib"}, game=played)
    return path


class RLlibAgent(PolicyAgent):
    """``act(observation) -> int`` (greedy by default, illegal actions masked) for the
    ``main`` module of an RLlib run; plays the AEC env's observation dicts."""


def load_agent(path: str | Path, greedy: bool = True, seed: int | None = None) -> RLlibAgent:
    """An agent for ``main`` of an RLlib run: ``path`` is a policy file, a folder holding
    ``policy.pt`` (a ``train.py`` run folder or one of its RLlib checkpoints: read with
    ``weights_only``, Ray not needed), or any RLlib Algorithm checkpoint (or the folder of
    its ``main`` module). An RLlib checkpoint is unpickled, which can run code: load only
    checkpoints you trust. FileNotFoundError when none of these is found."""
    from agents.policy_files import read_policy_file

    root = Path(path)
    policy_file = root if root.is_file() else root / "policy.pt"
    if policy_file.is_file():
        pf = read_policy_file(policy_file)
        return RLlibAgent(pf.model, greedy=greedy, seed=seed, name=root.stem, game=pf.game)
    for candidate in (
        root / "learner_group" / "learner" / "rl_module" / MAIN,
        root / "rl_module" / MAIN,
        root,
    ):
        if any(candidate.glob("module_state.*")):
            from ray.rllib.core.rl_module.rl_module import RLModule

            module = RLModule.from_checkpoint(str(candidate.resolve()))
            return RLlibAgent(main_network(module), greedy=greedy, seed=seed, name=root.name)
    raise FileNotFoundError(
        f"no RLlib policy under {root}: expected a policy file, a folder with policy.pt, or "
        f"an RLlib checkpoint (learner_group/learner/rl_module/{MAIN}, rl_module/{MAIN})"
    )
