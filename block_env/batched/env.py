"""``BatchedEnv``: B independent Block games stepped together, numpy or torch.

Contract (docs/batched.md describes it with examples):

* ``BatchedEnv(num_envs, backend="numpy"|"torch", device="cpu", auto_pass=False,
  deal_source="fast"|"aec", obs_type="observation"|"information_state",
  kernels="auto"|"numba"|"numpy"|"torch", **config)``;
  ``config`` takes the AEC keywords (``num_players``, ``opener``, ``episode``,
  ``partnership``, ``target_score``, ``reward``, ``max_pip``, ``hand_size``), validated by
  ``BlockConfig``.
* ``obs, mask, seat = env.reset(seed=None, options=None)``; ``options`` is None or a list of
  ``num_envs`` entries, each None or a dict of the AEC reset options (``hands``, ``leader``,
  ``scores``) for that game, checked by ``block_env.reset_options.parse_reset_options``.
* ``obs, mask, seat, rewards, terminated, info = env.step(actions)`` with ``actions`` of
  shape (B,) holding one action id per game, for the seat that was to act.

Returned arrays (numpy arrays, or torch tensors on ``device``): ``obs`` (B, obs_dim) float32,
exactly ``block_env.observation.encode`` for ``seat`` (with
``obs_type="information_state"``: (B, ``information_state_dim(config)``), exactly the AEC
env's information state, the hand's history appended); ``mask`` (B, 2T+1) int8, the legal
actions of ``seat``; ``seat`` (B,) int64; ``rewards`` (B, n) float32 by absolute seat, as
the AEC env's ``rewards`` on that step (non-zero only on a step that ends a hand);
``terminated`` (B,) bool, True on the step that ends the episode (match, or hand with
``episode="hand"``). Truncation never happens.

Autoreset: same step. On a step with ``terminated[i]``, game i's rewards and ``info`` describe
the episode that just ended, while ``obs[i]``, ``mask[i]`` and ``seat[i]`` are already the
first position of the next episode. Likewise, in match mode, a step that ends a hand returns
the first position of the next hand (as the AEC env, which deals the next hand at once).

``info`` (arrays, all of the batch size unless said otherwise), with the names and meaning
of the AEC env's ``infos`` (see ``block_env.env.INFO_KEYS``):

* ``hand_over`` (B,) bool: a hand ended on this step;
* ``hand_winner`` (B,) int64: the seat that dominoed or won the block, -1 on a tied block
  (and where no hand ended);
* ``hand_blocked`` (B,) bool; ``hand_pips`` (B, n) int64 pips left by seat;
  ``hand_points`` (B, n) int64 raw points scored by seat (both partners show their team's
  points); zeros where no hand ended;
* ``match_over`` (B,) bool: the episode ended on this step (equal to ``terminated``);
  ``match_winner`` (B,) int64: where it ended, the lowest seat of the winning side, -1 on a
  draw and where the episode goes on; ``match_winners`` (B, n) bool: the seats of the
  winning side;
* ``final_index`` (K,) int64: the games that terminated on this step; ``final_obs``
  (K, n, obs_dim) float32: for each of them, every seat's observation of the final position
  (what ``raw_env.observe(agent)`` gives once the episode is over: nobody to act, and the
  mask, not returned, is all zeros).

Every array returned (``obs``, ``mask``, ``seat``, ``rewards``, ``terminated``, the info
arrays) is new on each call and shares no memory with the engine: callers may keep or
modify them; legality is checked against the engine's own state.

``auto_pass=True``: a seat whose only legal action is pass is passed for automatically (the
pass is recorded as usual, so voids and observations are those of the AEC env after that
pass); the returned ``seat`` is always one that can place. A pass never ends a hand, so no
reward is lost: rewards are given on the hand's last step for every seat at once, by
absolute seat, whether or not that seat took a decision on that step.

Kernels: on the CPU the engine computes with the compiled kernels (``kernels="numba"``,
``block_env.batched.numba_kernels``) or with numpy calls (``"numpy"``); ``"auto"`` takes numba's
where numba is installed. Both give the same outputs bit for bit. With ``backend="torch"`` on
the CPU they work on arrays whose memory the returned tensors share; the randomness stays
torch's, so deals, actions and every output are those of the torch kernels
(``kernels="torch"``, always used on other devices). See ``block_env.batched.backend``.

Randomness: see ``block_env.batched.deals`` (``deal_source``). ``sample_actions(mask)`` draws
uniform legal actions in the backend from a generator seeded by ``reset``'s seed;
``sample_actions()`` (no mask) draws the same actions from the engine's own legal actions of
the seat to act, without reading any mask (the fast path for random play).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from block_env.batched.backend import check_mask
from block_env.batched.checkpoint import load_state, state_of
from block_env.batched.choice import make_backend, make_kernels
from block_env.batched.deals import make_deals
from block_env.batched.engine import Engine
from block_env.config import BlockConfig
from block_env.information_state import check_obs_type, information_state_bounds
from block_env.observation import obs_layout
from block_env.reset_options import Setup, check_seed, parse_reset_options

CONFIG_KEYS = (
    "num_players",
    "opener",
    "episode",
    "partnership",
    "target_score",
    "reward",
    "max_pip",
    "hand_size",
)


class BatchedEnv:
    """B Block games stepped together in one backend. See the module docstring."""

    def __init__(
        self,
        num_envs: int,
        backend: str = "numpy",
        device: Any = "cpu",
        auto_pass: bool = False,
        deal_source: str = "fast",
        obs_type: str = "observation",
        kernels: str = "auto",
        **config: Any,
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)):
            raise ValueError(f"num_envs={num_envs!r} is not allowed: use a positive int")
        if num_envs < 1:
            raise ValueError(f"num_envs={num_envs!r} is not allowed: use a positive int")
        if not isinstance(auto_pass, bool):
            raise ValueError(f"auto_pass={auto_pass!r} is not allowed: use True or False")
        unknown = sorted(set(config) - set(CONFIG_KEYS))
        if unknown:
            raise ValueError(
                f"unknown option(s) {', '.join(unknown)}: use {', '.join(CONFIG_KEYS)}"
            )
        self.config = BlockConfig(**config)
        self.obs_type = check_obs_type(obs_type)
        self.num_envs = int(num_envs)
        self.backend = make_backend(backend, device)
        # what the engine computes with: the backend, or numpy kernels for torch on the CPU
        self.compute, compiled = make_kernels(self.backend, kernels)
        self._wrap = self.compute is not self.backend  # hand out numpy arrays as tensors
        self.deals = make_deals(deal_source, self.compute, self.config, self.num_envs)
        self.deal_source = deal_source
        self.auto_pass = auto_pass
        self.engine = Engine(
            self.config,
            self.num_envs,
            self.compute,
            self.deals,
            auto_pass,
            history=obs_type == "information_state",
            compiled=compiled,
        )
        self._sample_rng: Any = None
        self._ready = False

    @property
    def num_players(self) -> int:
        return self.config.num_players

    @property
    def obs_dim(self) -> int:
        """Observation length of the game's tile set (122 for the standard set); with
        ``obs_type="information_state"``, ``information_state_dim(config)``."""
        return self.engine.obs_width

    @property
    def num_actions(self) -> int:
        """2T+1 for a set of T tiles (57 for the standard set)."""
        return self.config.tiles.num_actions

    @property
    def device(self) -> Any:
        return self.backend.device

    @property
    def single_observation_space(self) -> spaces.Box:
        """The space of one game's observation (as the AEC env's ``"observation"``)."""
        if self.obs_type == "information_state":
            low, high = information_state_bounds(self.config)
        else:
            lay = obs_layout(self.config)
            low, high = lay.low, lay.high
        return spaces.Box(low, high, low.shape, np.float32)

    @property
    def single_action_space(self) -> spaces.Discrete:
        return spaces.Discrete(self.num_actions)

    def reset(self, seed: int | None = None, options: list | None = None) -> tuple[Any, Any, Any]:
        """Start a new episode in every game; returns (obs, mask, seat). ``seed``: None or
        an int >= 0 of any size (as numpy takes), on every backend."""
        seed = check_seed(seed)
        setups = self._parse_options(options)
        self.engine.reset(seed, setups)
        if seed is not None or self._sample_rng is None:
            derived = None
            if seed is not None:  # a stream apart from the deals', fixed by the seed
                derived = int(np.random.SeedSequence([seed, 1]).generate_state(2, np.uint64)[0])
            self._sample_rng = self.backend.make_rng(None if derived is None else derived >> 1)
        self._ready = True
        obs, mask = self.engine.observe()
        return self.hand_out((obs, mask, self.compute.copy(self.engine.current)))

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, Any, dict[str, Any]]:
        """One action per game; returns (obs, mask, seat, rewards, terminated, info)."""
        if not self._ready:
            raise RuntimeError("call reset() before step()")
        acts = self.compute.as_actions(actions, self.num_envs)
        rewards, terminated, info = self.engine.step(acts)
        obs, mask = self.engine.observe()
        seat = self.compute.copy(self.engine.current)
        return self.hand_out((obs, mask, seat, rewards, terminated, info))

    @property
    def kernels(self) -> str:
        """What the engine computes with: "numba", "numpy" or "torch" (see ``kernels=``)."""
        return "numba" if self.engine.compiled is not None else self.compute.kernels

    @property
    def ready(self) -> bool:
        """Whether a position is set up (``reset`` was called, or a ready state loaded):
        ``step`` and ``sample_actions()`` without a mask need one."""
        return self._ready

    def hand_out(self, arrays: tuple) -> tuple:
        """The compute backend's ``arrays`` (and dicts of arrays) as handed out: as they
        are, or (numpy kernels behind the torch backend) as torch tensors sharing their
        memory. For views on top of the engine, as ``BatchedParallelEnv``."""
        if not self._wrap:
            return arrays
        from_numpy = self.backend.torch.from_numpy
        return tuple(
            {k: from_numpy(v) for k, v in x.items()} if isinstance(x, dict) else from_numpy(x)
            for x in arrays
        )

    def to_compute(self, array: Any) -> Any:
        """An array handed out as the compute backend's (the inverse of ``hand_out``): the
        numpy array behind a tensor where numpy kernels run behind the torch backend, else
        ``array`` itself."""
        return array.numpy() if self._wrap else array

    def sample_actions(self, mask: Any = None) -> Any:
        """A uniformly random legal action per game, drawn in the backend (no copy to the
        host). With ``mask`` (M, 2T+1): one for each row of that mask. Without: one for each
        game, read from the engine's own legal actions of the seat to act (the fast path: no
        mask is read, and a mask the caller changed cannot mislead it); the draw and the choice
        are those of ``sample_actions(mask)`` on the mask the last ``reset``/``step`` handed
        out, so both give the same actions from the same generator state."""
        if self._sample_rng is None:
            self._sample_rng = self.backend.make_rng(None)
        if mask is None:
            if not self._ready:
                raise RuntimeError("call reset() before sample_actions() without a mask")
            words = self.engine.legal
            if self.engine.compiled is not None:  # the same draw, chosen by compiled code
                u = self.backend.to_numpy(self.backend.uniform(self._sample_rng, self.num_envs))
                actions = self.engine.compiled.sample(words, u)
                return self.backend.torch.from_numpy(actions) if self._wrap else actions
            if self._wrap:
                words = self.backend.torch.from_numpy(words)
            return self.backend.sample_words(self._sample_rng, words)
        if self.engine.compiled is not None:  # the same draw and choice, compiled
            return self._sample_from_mask_compiled(mask)
        return self.backend.sample_legal(self._sample_rng, mask)

    def _sample_from_mask_compiled(self, mask: Any) -> Any:
        array = mask.numpy() if type(mask).__module__.startswith("torch") else np.asarray(mask)
        check_mask(tuple(array.shape))
        u = self.backend.to_numpy(self.backend.uniform(self._sample_rng, array.shape[0]))
        actions, empty_row = self.engine.compiled.sample_from_mask(array, u)
        if empty_row >= 0:
            raise ValueError(f"mask row {empty_row} has no legal action to sample")
        return self.backend.torch.from_numpy(actions) if self._wrap else actions

    @property
    def scores(self) -> np.ndarray:
        """Match scores (B, n) by absolute seat, as a numpy copy."""
        return self.compute.to_numpy(self.engine.scores).copy()

    def snapshot(self) -> dict[str, np.ndarray]:
        """The full, privileged state as numpy arrays (every hand); see ``Engine.snapshot``."""
        return self.engine.snapshot()

    def state_dict(self) -> dict[str, Any]:
        """Everything the next steps depend on (the games in progress, the deal and sampling
        generators) as numpy arrays and plain dicts; numpy backend only."""
        return state_of(self)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state_dict()`` of an env of the same configuration and size
        (ValueError, with this env unchanged, when it does not fit)."""
        load_state(self, state)

    def state_bytes(self) -> int:
        """Bytes of state held per batch (linear in ``num_envs``)."""
        return self.engine.state_bytes()

    def _parse_options(self, options: Any) -> list[Setup | None] | None:
        if options is None:
            return None
        if isinstance(options, dict) or not isinstance(options, (list, tuple)):
            raise ValueError(
                f"options must be None or a list of {self.num_envs} entries (a dict of AEC "
                f"reset options or None per game), got {type(options).__name__}"
            )
        if len(options) != self.num_envs:
            raise ValueError(
                f"options has {len(options)} entries: expected {self.num_envs}, one per game"
            )
        setups: list[Setup | None] = []
        for i, opt in enumerate(options):
            if opt is None:
                setups.append(None)
                continue
            try:
                setups.append(parse_reset_options(self.config, opt))
            except ValueError as err:
                raise ValueError(f"options[{i}]: {err}") from None
        return setups
