"""The rollouts of the native PPO (``block_env.training.ppo``): B batched games in which the
learner plays its seats and the opponent drawn for each hand plays the others, recorded as
the learner's decisions with the advantages of each hand (GAE).

In each game one seat is the learner and the other seats are played by an opponent drawn
for that hand from a mix of the current policy itself ("self": every seat learns), a past
snapshot of the policy ("snapshot"), and the baseline bots ("random", "greedy", "rules"),
acting on batches (``agents.baselines``' batched bots: the same moves as the bots one
observation at a time). The learning seat rotates over all seats, episode after episode. The
learner's reward is the zero-sum points of the hand (scaled by ``reward_scale``; with
``episode=match`` the match's reward, ``reward=win`` or each hand's zero-sum points), summed
over everything that happens until its next decision; decisions whose hand has not ended when
the rollout stops are left out (a match's: only the seat's last one, whose value bootstraps
the ones before it), and a seat with a single legal move plays it without a decision
(``skip_forced``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from agents.baselines import greedy_actions, random_actions, rule_actions
from agents.network import PRIV_DIM, mask_logits, privileged_features, sample_actions
from block_env.batched import BatchedEnv
from block_env.training.config import OPPONENT_KINDS, TrainConfig, game_of, teacher_of
from block_env.training.errors import Diverged


class Opponents:
    """Acts for the non-learning seats: the baselines vectorised on batches (the rule bot
    by ``agents.baselines.rule_actions``, exactly ``RuleAgent().act`` row by row), the
    snapshot network on one batch, the frozen ``fixed`` agent (``fixed``: an actor on
    batches, ``evaluation.batched.agent_actor``)."""

    def __init__(self, kinds: list[str], rng: np.random.Generator, fixed: Any = None) -> None:
        self.kinds = kinds
        self.rng = rng
        self.fixed = fixed

    def act(
        self,
        kind: str,
        obs: np.ndarray,
        mask: np.ndarray,
        policy: Any,
    ) -> np.ndarray:
        if kind == "random":
            return random_actions(self.rng, mask)
        if kind == "greedy":
            return greedy_actions(mask)
        if kind == "rules":
            return rule_actions(obs, mask)
        if kind == "fixed":
            return self.fixed(obs, mask)
        return policy(obs, mask)  # self / snapshot: a network


def check_finite(x: torch.Tensor, what: str) -> None:
    """Diverged when ``x`` holds a NaN or an infinity (weights that blew up)."""
    if not bool(torch.isfinite(x).all()):
        raise Diverged(f"{what} are not finite")


@dataclass
class Batch:
    """Learner decisions of one rollout whose hand ended inside it (flat arrays)."""

    obs: np.ndarray
    priv: np.ndarray  # critic-only features (B, 0) without a privileged critic
    mask: np.ndarray
    actions: np.ndarray
    logp: np.ndarray
    values: np.ndarray
    advantages: np.ndarray
    returns: np.ndarray
    teacher: np.ndarray  # the teacher bot's action per decision (-1: no teacher this update)
    hands: int  # learner hands finished in this rollout
    reward_sum: float  # raw points the learner seats won in them


class Collector:
    """Runs the batched games and records the learner's decisions (see module docstring)."""

    def __init__(
        self,
        cfg: TrainConfig,
        model: Any,
        device: Any,
        rng: np.random.Generator,
        num_envs: int | None = None,
        seed: int | None = None,
    ):
        """``num_envs`` games (this rank's share; the config's by default), sampling seeded
        by ``seed`` (the config's by default)."""
        self.cfg = cfg
        self.num_envs = cfg.num_envs if num_envs is None else num_envs
        self.model = model
        self.device = device
        self.rng = rng
        n = cfg.num_players
        self.n = n
        kinds = [k for k in OPPONENT_KINDS if cfg.opponents.get(k, 0) > 0]
        self.kinds = kinds
        w = np.array([cfg.opponents[k] for k in kinds], dtype=np.float64)
        self.weights = w / w.sum()
        fixed = None
        self.fixed_history = False  # the fixed agent reads full information states
        if "fixed" in kinds:
            from block_env.evaluation.batched import actor_obs_type, agent_actor

            fixed_seed = cfg.seed if seed is None else seed
            fixed = agent_actor(cfg.fixed_agent, game_of(cfg), fixed_seed, information_state=True)
            self.fixed_history = actor_obs_type(fixed) == "information_state"
        self.opponents = Opponents(kinds, rng, fixed)
        self.history = cfg.obs_type == "information_state"  # the learner's networks
        env_obs = "information_state" if self.history or self.fixed_history else "observation"
        self.env = BatchedEnv(self.num_envs, auto_pass=True, obs_type=env_obs, **game_of(cfg))
        self.per_hand = cfg.episode == "hand"
        self.plain_dim = model.obs_dim  # the plain observation's length
        self.generator = torch.Generator(device="cpu")
        self.generator.manual_seed(cfg.seed if seed is None else seed)
        B = self.num_envs
        self.kind = np.zeros(B, dtype=np.int64)
        self.learn = np.zeros((B, n), dtype=bool)
        self.episodes = np.zeros(B, dtype=np.int64)
        self.snapshot: Any = None
        self.teacher = teacher_of(cfg)
        self.teaching = False  # record the teacher bot's move on each decision
        self.obs: np.ndarray | None = None
        # the other hands: the privileged critic's inputs and the belief head's labels
        self.privileged = bool(model.net.privileged_critic or model.net.belief_head)

    def reset(self, seed: int) -> None:
        self.obs, self.mask, self.seat = self.env.reset(seed=seed)
        self._assign(np.arange(self.num_envs))

    def state_dict(self) -> dict[str, Any]:
        """Everything the next rollouts depend on (the shared numpy generator aside): the
        games in progress, who learns in each, the sampling generator."""
        arrays = {
            k: torch.from_numpy(np.array(getattr(self, k), copy=True))
            for k in ("obs", "mask", "seat", "kind", "learn", "episodes")
        }
        env = self.env.state_dict()
        env["arrays"] = {k: torch.from_numpy(v) for k, v in env["arrays"].items()}
        return {"env": env, "generator": self.generator.get_state(), **arrays}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        env = state["env"]
        self.env.load_state_dict(
            {**env, "arrays": {k: v.numpy() for k, v in env["arrays"].items()}}
        )
        self.generator.set_state(state["generator"])
        for k in ("obs", "mask", "seat", "kind", "learn", "episodes"):
            setattr(self, k, state[k].numpy().copy())

    def _views(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(what the baseline bots and the teacher read, what the networks read and the
        rollout stores): the plain observation twice, or with ``obs_type=
        "information_state"`` its first ``obs_dim`` entries and the summarised information
        state (``agents.network.summarize_history``; the network's outputs on it are exactly
        those on the full vector, which would cost ~3x the memory and time to store)."""
        plain = obs if obs.shape[1] == self.plain_dim else obs[:, : self.plain_dim]
        if not self.history:
            return plain, plain
        return plain, self.model.summarize(obs)

    def _assign(self, rows: np.ndarray) -> None:
        """Draw the opponent kind and learner seat(s) of each game starting a hand."""
        if rows.size == 0:
            return
        n = self.n
        kind = self.rng.choice(len(self.kinds), size=rows.size, p=self.weights)
        if self.snapshot is None and "snapshot" in self.kinds and "self" in self.kinds:
            kind[kind == self.kinds.index("snapshot")] = self.kinds.index("self")
        self.kind[rows] = kind
        seat = (rows + self.episodes[rows]) % n  # rotate the learning seat hand after hand
        self.episodes[rows] += 1
        self.learn[rows] = False
        self.learn[rows, seat] = True
        if self.cfg.partnership:
            with_partner = np.ones(rows.size, dtype=bool)
            if self.cfg.bot_partner > 0:  # the opponent kind plays the partner in this share
                bots = kind != (self.kinds.index("self") if "self" in self.kinds else -1)
                with_partner = ~(bots & (self.rng.random(rows.size) < self.cfg.bot_partner))
            self.learn[rows[with_partner], (seat[with_partner] + 2) % n] = True
        if "self" in self.kinds:
            self.learn[rows[kind == self.kinds.index("self")]] = True
        if self.cfg.rules_alone > 0 and "rules" in self.kinds:
            self._rules_alone(rows[kind == self.kinds.index("rules")])

    def _rules_alone(self, rows: np.ndarray) -> None:
        """A share ``rules_alone`` of the rule-bot games ``rows`` turned round: the bot keeps
        only the seat the learner was given, the learner takes every other seat."""
        if rows.size == 0:
            return
        turned = rows[self.rng.random(rows.size) < self.cfg.rules_alone]
        bot_seat = self.learn[turned].argmax(1)
        self.learn[turned] = True
        self.learn[turned, bot_seat] = False

    def _policy(self, model: Any, sample: bool = True) -> Any:
        def act(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
            with torch.inference_mode():
                o = torch.from_numpy(obs).to(self.device)
                m = torch.from_numpy(mask).to(self.device)
                logits = model.logits(o)
                check_finite(logits, "the opponent network's logits")
                # drawn on the CPU, as the learner's moves are: the generator lives there
                masked = mask_logits(logits, m).cpu()
                a = sample_actions(masked, self.generator if sample else None)
            return a.numpy()

        return act

    def collect(self) -> Batch:
        """One rollout: ``rollout_steps`` steps of every game; the learner's decisions whose
        hand (with ``episode=match``, match) ended inside it, with their advantages."""
        buf = _Buffers.empty(
            self.cfg.rollout_steps,
            self.num_envs,
            self.n,
            self.model.summary_dim,
            self.mask.shape[1],
            self._priv_dim() if self.privileged else 0,
        )
        snap = self._policy(self.snapshot if self.snapshot is not None else self.model)
        all_rows = np.arange(self.num_envs)
        for t in range(self.cfg.rollout_steps):
            plain, obs = self._views(self.obs)  # bots read plain, networks obs
            learning = self.learn[all_rows, self.seat]
            actions, rows = self._forced_moves(learning)
            if rows.size:
                self._learner_moves(buf, t, rows, obs, plain, actions)
            self._opponent_moves(np.flatnonzero(~learning), obs, plain, actions, snap)
            self.obs, self.mask, self.seat, rewards, terminated, info = self.env.step(actions)
            self._credit(buf, rewards, terminated, info)
        return self._batch(buf)

    def _priv_dim(self) -> int:
        """Length of the privileged features: the 3 other seats' hands, one entry per tile."""
        tiles = self.env.config.tiles.num_tiles
        return PRIV_DIM if tiles == 28 else 3 * tiles

    def _forced_moves(self, learning: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The step's action array, with the forced moves of learning seats filled in when
        ``skip_forced``; and the rows where the learner decides."""
        actions = np.zeros(self.num_envs, dtype=np.int64)
        if self.cfg.skip_forced:
            forced = learning & (self.mask.sum(1) == 1)
            actions[forced] = self.mask[forced].argmax(1)
            learning = learning & ~forced
        return actions, np.flatnonzero(learning)

    def _learner_moves(
        self,
        buf: _Buffers,
        t: int,
        rows: np.ndarray,
        obs: np.ndarray,
        plain: np.ndarray,
        actions: np.ndarray,
    ) -> None:
        """The learner's sampled moves in ``rows``, recorded at step ``t`` of ``buf`` (with
        the privileged features, and the teacher's move while it teaches)."""
        mask, seat = self.mask, self.seat
        priv = None
        if self.privileged:
            dealt = self.env.snapshot()["hands"]
            tiles = self.env.config.tiles.num_tiles
            p = privileged_features(dealt[rows], seat[rows], *set_tiles(tiles))
            buf.priv[t, rows] = p
            priv = torch.from_numpy(p).to(self.device)
        a, logp, value = self._sample(obs[rows], mask[rows], priv)
        actions[rows] = a.numpy()
        buf.obs[t, rows] = obs[rows]
        buf.mask[t, rows] = mask[rows]
        buf.actions[t, rows] = actions[rows]
        buf.logp[t, rows] = logp.numpy()
        buf.values[t, rows] = value.cpu().numpy()
        buf.valid[t, rows] = True
        buf.seats[t, rows] = seat[rows]
        if self.teaching:
            buf.teacher[t, rows] = self.opponents.act(self.teacher, plain[rows], mask[rows], None)
        buf.last[rows, seat[rows]] = t

    def _sample(
        self, obs: np.ndarray, mask: np.ndarray, priv: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The learner's (action, log-probability, value) on each row, the action drawn
        from the masked policy with the collector's generator."""
        with torch.inference_mode():
            o = torch.from_numpy(obs).to(self.device)
            m = torch.from_numpy(mask).to(self.device)
            logits, value = self.model(o, priv)
            check_finite(logits, "the policy's logits")
            check_finite(value, "the critic's values")
            masked = mask_logits(logits, m)
            probs = torch.softmax(masked, -1)
            a = torch.multinomial(probs.cpu(), 1, generator=self.generator).squeeze(-1)
            logp = torch.log_softmax(masked, -1).cpu().gather(1, a[:, None]).squeeze(1)
        return a, logp, value

    def _opponent_moves(
        self,
        others: np.ndarray,
        obs: np.ndarray,
        plain: np.ndarray,
        actions: np.ndarray,
        snap: Any,
    ) -> None:
        """The moves of the seats the learner does not hold (rows ``others``), each game's
        opponent kind reading what it reads."""
        for k, kind in enumerate(self.kinds):
            sel = others[self.kind[others] == k]
            if sel.size:
                policy = snap if kind == "snapshot" else self._policy(self.model)
                seen = obs if kind in ("self", "snapshot") else plain
                if kind == "fixed" and self.fixed_history:
                    seen = self.obs  # the env's full information states
                actions[sel] = self.opponents.act(kind, seen[sel], self.mask[sel], policy)

    def _credit(
        self, buf: _Buffers, rewards: np.ndarray, terminated: np.ndarray, info: dict[str, Any]
    ) -> None:
        """Rewards reach each learning seat's last decision; the episode's end (a hand, or
        with episode=match the match) closes them, and the games that ended start anew."""
        last = buf.last
        for s in range(self.n):
            got = np.flatnonzero(self.learn[:, s] & (last[:, s] >= 0) & (rewards[:, s] != 0))
            buf.rewards[last[got, s], got] += rewards[got, s] * self.cfg.reward_scale
        over = np.flatnonzero(info["hand_over"] if self.per_hand else terminated)
        if over.size:
            for s in range(self.n):
                closed = over[self.learn[over, s] & (last[over, s] >= 0)]
                buf.dones[last[closed, s], closed] = True
                if closed.size:
                    buf.hands += int(closed.size)
                    buf.reward_sum += float(rewards[closed, s].sum())
            last[over] = -1
            self._assign(np.flatnonzero(terminated))

    def _batch(self, buf: _Buffers) -> Batch:
        """The trainable decisions of ``buf``, flat, with their advantages and returns."""
        cfg, n = self.cfg, self.n
        T, B = buf.actions.shape
        adv, trainable = gae(
            buf.rewards,
            buf.values,
            buf.dones,
            buf.valid,
            buf.seats,
            n,
            cfg.gamma,
            cfg.gae_lambda,
            not self.per_hand,
        )
        idx = trainable.ravel()
        flat_adv = adv.ravel()[idx]
        flat_val = buf.values.ravel()[idx]
        return Batch(
            obs=buf.obs.reshape(T * B, -1)[idx],
            priv=buf.priv.reshape(T * B, -1)[idx],
            mask=buf.mask.reshape(T * B, -1)[idx],
            actions=buf.actions.ravel()[idx],
            logp=buf.logp.ravel()[idx],
            values=flat_val,
            advantages=flat_adv,
            returns=flat_adv + flat_val,
            teacher=buf.teacher.ravel()[idx],
            hands=buf.hands,
            reward_sum=buf.reward_sum,
        )


@dataclass
class _Buffers:
    """One rollout's record, (T steps, B games) per array: the learner's decisions."""

    obs: np.ndarray
    priv: np.ndarray  # (T, B, 0) without privileged features
    mask: np.ndarray
    actions: np.ndarray
    logp: np.ndarray
    values: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray
    valid: np.ndarray  # a decision of the learner
    seats: np.ndarray
    teacher: np.ndarray  # -1: no teacher's move recorded
    last: np.ndarray  # (B, n) step of each learning seat's last open decision (-1: none)
    hands: int = 0  # learner hands finished in the rollout
    reward_sum: float = 0.0  # raw points the learner seats won in them

    @classmethod
    def empty(
        cls, T: int, B: int, n: int, obs_dim: int, num_actions: int, priv_dim: int
    ) -> _Buffers:
        return cls(
            obs=np.zeros((T, B, obs_dim), dtype=np.float32),
            priv=np.zeros((T, B, priv_dim), dtype=np.float32),
            mask=np.zeros((T, B, num_actions), dtype=np.int8),
            actions=np.zeros((T, B), dtype=np.int64),
            logp=np.zeros((T, B), dtype=np.float32),
            values=np.zeros((T, B), dtype=np.float32),
            rewards=np.zeros((T, B), dtype=np.float32),
            dones=np.zeros((T, B), dtype=bool),
            valid=np.zeros((T, B), dtype=bool),
            seats=np.zeros((T, B), dtype=np.int64),
            teacher=np.full((T, B), -1, dtype=np.int64),
            last=np.full((B, n), -1, dtype=np.int64),
        )


def gae(
    rewards: np.ndarray,
    values: np.ndarray,
    dones: np.ndarray,
    valid: np.ndarray,
    seats: np.ndarray,
    num_players: int,
    gamma: float,
    lam: float,
    bootstrap: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimates over each (game, seat)'s own sequence of decisions
    in a (T, B) buffer where only ``valid`` entries are decisions. Returns (advantages,
    trainable): trainable decisions are those whose episode ended inside the buffer, and
    with ``bootstrap`` (long episodes: whole matches) also those followed by another
    decision of the same seat, the last such decision standing in as the bootstrap value
    of the ones before it (it is not trained itself)."""
    T, B = rewards.shape
    next_v = np.zeros((B, num_players), dtype=np.float32)
    next_a = np.zeros((B, num_players), dtype=np.float32)
    closed = np.zeros((B, num_players), dtype=bool)
    adv = np.zeros((T, B), dtype=np.float32)
    trainable = np.zeros((T, B), dtype=bool)
    for t in range(T - 1, -1, -1):
        rows = np.flatnonzero(valid[t])
        if rows.size == 0:
            continue
        s = seats[t, rows]
        d = dones[t, rows]
        keep = (~d).astype(np.float32)
        delta = rewards[t, rows] + gamma * next_v[rows, s] * keep - values[t, rows]
        a = delta + gamma * lam * keep * next_a[rows, s]
        c = d | closed[rows, s]
        # with bootstrap: a seat's last decision in the buffer, its episode still running
        tail = ~c if bootstrap else np.zeros(rows.size, dtype=bool)
        a[tail] = 0.0
        adv[t, rows] = a
        trainable[t, rows] = c
        next_v[rows, s] = values[t, rows]
        next_a[rows, s] = a
        closed[rows, s] = c | tail
    return adv, trainable


def set_tiles(num_tiles: int) -> tuple[int, ...]:
    """``privileged_features``' tile count argument (none for the standard 28 tiles)."""
    return () if num_tiles == 28 else (num_tiles,)
