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
        cfg, n, B, T = self.cfg, self.n, self.num_envs, self.cfg.rollout_steps
        obs_b = np.zeros((T, B, self.model.summary_dim), dtype=np.float32)
        mask_b = np.zeros((T, B, self.mask.shape[1]), dtype=np.int8)
        act_b = np.zeros((T, B), dtype=np.int64)
        logp_b = np.zeros((T, B), dtype=np.float32)
        val_b = np.zeros((T, B), dtype=np.float32)
        rew_b = np.zeros((T, B), dtype=np.float32)
        done_b = np.zeros((T, B), dtype=bool)
        valid_b = np.zeros((T, B), dtype=bool)
        seat_b = np.zeros((T, B), dtype=np.int64)
        teacher_b = np.full((T, B), -1, dtype=np.int64)
        tiles = self.env.config.tiles.num_tiles
        priv_dim = PRIV_DIM if tiles == 28 else 3 * tiles  # 3 other seats' hands, T tiles each
        priv_b = np.zeros((T, B, priv_dim if self.privileged else 0), dtype=np.float32)
        last = np.full((B, n), -1, dtype=np.int64)  # step of each learning seat's last decision
        snap = self._policy(self.snapshot if self.snapshot is not None else self.model)
        hands, reward_sum = 0, 0.0
        all_rows = np.arange(B)
        for t in range(T):
            mask, seat = self.mask, self.seat
            plain, obs = self._views(self.obs)  # bots read plain, networks obs
            learning = self.learn[all_rows, seat]
            actions = np.zeros(B, dtype=np.int64)
            if cfg.skip_forced:
                forced = learning & (mask.sum(1) == 1)
                actions[forced] = mask[forced].argmax(1)
                learning_rows = learning & ~forced
            else:
                learning_rows = learning
            rows = np.flatnonzero(learning_rows)
            if rows.size:
                priv = None
                if self.privileged:
                    dealt = self.env.snapshot()["hands"]
                    p = privileged_features(dealt[rows], seat[rows], *set_tiles(tiles))
                    priv_b[t, rows] = p
                    priv = torch.from_numpy(p).to(self.device)
                with torch.inference_mode():
                    o = torch.from_numpy(obs[rows]).to(self.device)
                    m = torch.from_numpy(mask[rows]).to(self.device)
                    logits, value = self.model(o, priv)
                    check_finite(logits, "the policy's logits")
                    check_finite(value, "the critic's values")
                    masked = mask_logits(logits, m)
                    probs = torch.softmax(masked, -1)
                    a = torch.multinomial(probs.cpu(), 1, generator=self.generator).squeeze(-1)
                    logp = torch.log_softmax(masked, -1).cpu().gather(1, a[:, None]).squeeze(1)
                actions[rows] = a.numpy()
                obs_b[t, rows] = obs[rows]
                mask_b[t, rows] = mask[rows]
                act_b[t, rows] = actions[rows]
                logp_b[t, rows] = logp.numpy()
                val_b[t, rows] = value.cpu().numpy()
                valid_b[t, rows] = True
                seat_b[t, rows] = seat[rows]
                if self.teaching:
                    teacher_b[t, rows] = self.opponents.act(
                        self.teacher, plain[rows], mask[rows], None
                    )
                last[rows, seat[rows]] = t
            others = np.flatnonzero(~learning)
            for k, kind in enumerate(self.kinds):
                sel = others[self.kind[others] == k]
                if sel.size:
                    policy = snap if kind == "snapshot" else self._policy(self.model)
                    seen = obs if kind in ("self", "snapshot") else plain
                    if kind == "fixed" and self.fixed_history:
                        seen = self.obs  # the env's full information states
                    actions[sel] = self.opponents.act(kind, seen[sel], mask[sel], policy)
            self.obs, self.mask, self.seat, rewards, terminated, info = self.env.step(actions)
            # Rewards reach each learning seat's last decision; the episode's end (a hand, or
            # with episode=match the match) closes them.
            for s in range(n):
                got = np.flatnonzero(self.learn[:, s] & (last[:, s] >= 0) & (rewards[:, s] != 0))
                rew_b[last[got, s], got] += rewards[got, s] * cfg.reward_scale
            over = np.flatnonzero(info["hand_over"] if self.per_hand else terminated)
            if over.size:
                for s in range(n):
                    closed = over[self.learn[over, s] & (last[over, s] >= 0)]
                    done_b[last[closed, s], closed] = True
                    if closed.size:
                        hands += int(closed.size)
                        reward_sum += float(rewards[closed, s].sum())
                last[over] = -1
                self._assign(np.flatnonzero(terminated))
        adv, trainable = gae(
            rew_b, val_b, done_b, valid_b, seat_b, n, cfg.gamma, cfg.gae_lambda, not self.per_hand
        )
        idx = trainable.ravel()
        flat_adv = adv.ravel()[idx]
        flat_val = val_b.ravel()[idx]
        return Batch(
            obs=obs_b.reshape(T * B, -1)[idx],
            priv=priv_b.reshape(T * B, -1)[idx],
            mask=mask_b.reshape(T * B, -1)[idx],
            actions=act_b.ravel()[idx],
            logp=logp_b.ravel()[idx],
            values=flat_val,
            advantages=flat_adv,
            returns=flat_adv + flat_val,
            teacher=teacher_b.ravel()[idx],
            hands=hands,
            reward_sum=reward_sum,
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
