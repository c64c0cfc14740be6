"""RLlib integration: the multi-agent env, league self-play, training on one machine and on
a simulated two-node Ray cluster, rewards reaching every seat, and playing the result.

Needs the ``rllib`` extra (its own venv: ``bash .ci/extra-rllib``). Ray jobs stay tiny
(one CPU per env runner, small batches) so the file runs in a few minutes on 2 cores.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="needs the rllib extra: bash .ci/extra-rllib")

import block_env  # noqa: E402
from block_env.integrations import rllib as R  # noqa: E402

TINY = dict(train_batch_size=400, minibatch_size=200, num_epochs=1, hidden=(32, 32), league_every=1)


def zero_sum(points: np.ndarray) -> np.ndarray:
    """The env's zero-sum reward of raw points by seat (individual play)."""
    points = np.asarray(points, dtype=float)
    n = len(points)
    return points - (points.sum() - points) / (n - 1)


def random_legal(obs: dict, rng: np.random.Generator) -> dict:
    (agent,) = obs
    return {agent: int(rng.choice(np.flatnonzero(obs[agent]["action_mask"])))}


# ----------------------------------------------------------------------------- env


def test_importing_block_env_never_imports_ray() -> None:
    code = (
        "import sys, block_env, block_env.integrations, agents, block_env.evaluate\n"
        "assert 'ray' not in sys.modules, 'ray imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_env_spaces_keys_and_agent_ids() -> None:
    env = R.env_creator({"num_players": 3})
    assert env.possible_agents == ["player_0", "player_1", "player_2"]
    space = env.get_observation_space("player_1")
    assert set(space.spaces) == {"observations", "action_mask"}
    assert all(env.get_observation_space(a) is space for a in env.possible_agents)
    obs, infos = env.reset(seed=3)
    (agent,) = obs
    assert agent == env.game.agent_selection and set(infos) == {agent}
    assert obs[agent]["observations"].dtype == np.float32
    assert obs[agent]["action_mask"].dtype == np.int8
    assert space.contains(obs[agent])
    expected = env.game.observe(agent)
    assert np.array_equal(obs[agent]["observations"], expected["observation"])
    assert np.array_equal(obs[agent]["action_mask"], expected["action_mask"])


def test_bad_env_config_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown block_env config key.*'colour'.*skip_forced"):
        R.env_creator({"colour": "red"})
    with pytest.raises(ValueError, match="skip_forced=1"):
        R.env_creator({"skip_forced": 1})
    with pytest.raises(RuntimeError, match="reset"):
        R.env_creator({}).step({"player_0": 0})
    with pytest.raises(ValueError, match="illegal_action='ignore'"):
        R.env_creator({"illegal_action": "ignore"})
    with pytest.raises(ValueError, match="num_players"):
        R.env_creator({"num_players": 5})


def test_passes_rllib_env_check_and_resets_cleanly() -> None:
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

    env = R.env_creator({"num_players": 2})
    check_multiagent_environments(env)  # steps one unmasked random action
    obs, _ = env.reset(seed=5)
    fresh = R.env_creator({"num_players": 2})
    obs2, _ = fresh.reset(seed=5)
    (agent,) = obs
    assert list(obs2) == [agent]
    assert np.array_equal(obs[agent]["observations"], obs2[agent]["observations"])


def test_illegal_action_raise_changes_nothing_and_end_follows_classic_convention() -> None:
    env = R.env_creator({"num_players": 2, "illegal_action": "raise"})
    obs, _ = env.reset(seed=1)
    (agent,) = obs
    illegal = int(np.flatnonzero(obs[agent]["action_mask"] == 0)[0])
    before = env.game.observe(agent)["observation"].copy()
    with pytest.raises(ValueError, match="legal actions are"):
        env.step({agent: illegal})
    assert env.game.agent_selection == agent
    assert np.array_equal(env.game.observe(agent)["observation"], before)
    with pytest.raises(ValueError, match="only"):
        env.step({"player_0": 56, "player_1": 56})

    env = R.env_creator({"num_players": 2})
    obs, _ = env.reset(seed=1)
    _, rew, term, _, _ = env.step({agent: illegal})
    assert term["__all__"] and all(term[a] for a in env.possible_agents)
    assert rew[agent] == -1.0 and sum(rew.values()) == -1.0
    assert env.illegal_actions == 1


@pytest.mark.parametrize("skip_forced", [False, True])
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_every_seat_gets_its_hand_rewards(num_players: int, skip_forced: bool) -> None:
    """Each step carries a reward for every seat; on a hand's last step every seat gets
    the zero-sum of the infos' hand points (also seats that did not move), and an
    episode's rewards add up to the zero-sum of the final match scores."""
    env = R.env_creator(
        {
            "num_players": num_players,
            "target_score": 25,
            "skip_forced": skip_forced,
            "illegal_action": "raise",
        }
    )
    rng = np.random.default_rng(num_players)
    idle_seat_paid = 0
    for episode in range(8):
        obs, _ = env.reset(seed=episode)
        total = np.zeros(num_players)
        while True:
            action = random_legal(obs, rng)
            obs, rew, term, trunc, infos = env.step(action)
            assert set(rew) == set(env.possible_agents) and not trunc["__all__"]
            r = np.array([rew[a] for a in env.possible_agents])
            total += r
            info = infos["player_0"]
            if info["hand_over"]:
                assert np.allclose(r, zero_sum(info["hand_points"]))
                movers = set(action)
                idle_seat_paid += sum(1 for a, v in rew.items() if a not in movers and v != 0.0)
            elif not skip_forced:
                assert not r.any()
            if term["__all__"]:
                assert set(obs) == set(env.possible_agents)  # a final obs for every seat
                break
            assert len(obs) == 1
        assert np.allclose(total, zero_sum(env.game.scores))
    assert idle_seat_paid > 0
    if skip_forced:
        assert env.forced_steps > 0


def test_seed_gives_the_same_episode() -> None:
    def play(seed: int) -> list[int]:
        env = R.env_creator({"num_players": 3, "episode": "hand"})
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(0)
        trace = []
        while True:
            action = random_legal(obs, rng)
            trace += [int(v) for v in action.values()]
            obs, _, term, _, _ = env.step(action)
            if term["__all__"]:
                return trace

    assert play(11) == play(11)
    assert play(11) != play(12)


@pytest.mark.parametrize("env_config", [{"num_players": 3}, {"max_pip": 3, "hand_size": 3}])
def test_module_masks_illegal_actions_and_fits_the_tile_set(env_config: dict) -> None:
    """The RLModule's logits put every illegal action at the dtype's minimum, so sampling
    and the greedy choice stay legal; its sizes follow the env's tile set."""
    import torch
    from ray.rllib.core.columns import Columns

    env = R.env_creator(env_config)
    agent = env.possible_agents[0]
    mc = {"hidden": [16], **({"max_pip": 3} if "max_pip" in env_config else {})}
    module = R.BlockRLModule(
        observation_space=env.get_observation_space(agent),
        action_space=env.get_action_space(agent),
        model_config=mc,
    )
    rng = np.random.default_rng(0)
    obs, masks = [], []
    for seed in range(20):
        o, _ = env.reset(seed=seed)
        for _ in range(int(rng.integers(0, 6))):
            o, _, term, _, _ = env.step(random_legal(o, rng))
            if term["__all__"]:
                o, _ = env.reset(seed=seed + 100)
        (seat,) = o
        obs.append(o[seat]["observations"])
        masks.append(o[seat]["action_mask"])
    batch = {
        Columns.OBS: {
            "observations": torch.as_tensor(np.stack(obs)),
            "action_mask": torch.as_tensor(np.stack(masks)),
        }
    }
    logits = module.forward_exploration(batch)[Columns.ACTION_DIST_INPUTS]
    mask = torch.as_tensor(np.stack(masks)).bool()
    assert logits.shape == mask.shape == (20, env.get_action_space(agent).n)
    assert (logits[~mask] == torch.finfo(logits.dtype).min).all()
    assert mask.gather(1, logits.argmax(1, keepdim=True)).all()
    draws = torch.distributions.Categorical(logits=logits).sample((50,))
    assert mask.gather(1, draws.T).all()
    values = module.compute_values(batch)
    assert values.shape == (20,) and torch.isfinite(values).all()


def test_league_mapping_is_fixed_per_episode_with_main_in_every_episode() -> None:
    mapping = R.LeagueMapping(3, ["main_v1", "main_v2"], self_play=0.25)
    seen = set()
    for i in range(300):
        episode = f"episode-{i}"
        mods = [mapping(f"player_{s}", episode) for s in range(3)]
        assert (
            mods == mapping.modules(episode) == [mapping(f"player_{s}", episode) for s in range(3)]
        )
        assert R.MAIN in mods
        seen.update(mods)
    assert seen == {"main", "main_v1", "main_v2"}
    assert all(m == R.MAIN for m in R.LeagueMapping(2).modules("x"))
    with pytest.raises(ValueError, match="self_play"):
        R.LeagueMapping(2, self_play=1.5)


# ----------------------------------------------------------------------------- Ray, local


def same_weights(a: dict, b: dict) -> bool:
    return set(a) == set(b) and all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in a)


def everywhere(algo, module_id: str) -> list[dict]:  # noqa: ANN001
    """The weights of ``module_id`` on the learner and on every env runner."""
    on_runners = algo.env_runner_group.foreach_env_runner(
        lambda r: {k: v.detach().numpy() for k, v in r.module[module_id].state_dict().items()},
        local_env_runner=True,
    )
    return [R.module_state(algo, module_id), *on_runners]


def tiny_train_config(tmp_path, **changes):  # noqa: ANN001, ANN003, ANN201
    """A ``train.py`` config of a few seconds of ``algo: rllib`` training."""
    from block_env.training.config import config_from_dict

    values = {
        "name": "rllib_test",
        "run_dir": str(tmp_path / "{name}"),
        "algo": "rllib",
        "total_steps": 800,
        "num_env_runners": 1,
        "rllib_envs_per_runner": 2,
        "rllib_train_batch": 400,
        "minibatch_size": 200,
        "epochs": 1,
        "hidden": [32, 32],
        "privileged_critic": False,
        "rllib_league_every": 1,
        "eval_every": 1,
        "eval_hands": 20,
        "eval_opponents": ["random"],
        "final_eval_hands": 20,
        "checkpoint_every": 1,
        "progress": False,
        "tensorboard": False,
    }
    return config_from_dict({**values, **changes})


def test_without_ray_train_py_says_which_extra_to_install(tmp_path, monkeypatch) -> None:
    from block_env.training.errors import ConfigError
    from block_env.training.rllib import train_rllib

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(ConfigError, match="rllib extra"):
        train_rllib(tiny_train_config(tmp_path))
    assert not (tmp_path / "rllib_test").exists()


def test_rllib_runs_refuse_resume_before_starting_ray(tmp_path) -> None:
    from block_env.training.errors import ConfigError
    from block_env.training.rllib import train_rllib

    with pytest.raises(ConfigError, match="cannot be resumed"):
        train_rllib(tiny_train_config(tmp_path), resume=True)
    assert not ray.is_initialized()


class _TallyEnv(R.BlockMultiAgentEnv):
    """The env, keeping its own account of each finished episode: the zero-sum of its final
    match scores and the zero-sum of the hand points its infos reported."""

    def __init__(self, config: dict | None = None) -> None:
        super().__init__(config)
        self.tallies: list[dict[str, np.ndarray]] = []
        self._hands = np.zeros(len(self.possible_agents))

    def reset(self, *, seed=None, options=None):  # noqa: ANN001, ANN201
        self._hands = np.zeros(len(self.possible_agents))
        return super().reset(seed=seed, options=options)

    def step(self, action_dict):  # noqa: ANN001, ANN201
        out = super().step(action_dict)
        info = out[4]["player_0"]
        if info["hand_over"]:
            self._hands += zero_sum(info["hand_points"])
        if out[2]["__all__"]:
            self.tallies.append({"scores": zero_sum(self.game.scores), "hands": self._hands.copy()})
        return out


@pytest.fixture(scope="class")
def local_ray():
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.usefixtures("local_ray")
class TestLocal:
    def test_one_iteration_with_two_env_runners_and_a_frozen_league(self, tmp_path) -> None:
        import agents
        from block_env.evaluate import evaluate

        name = R.register("block_env")  # a name registered with Ray Tune works as well
        config = R.ppo_config(
            {"num_players": 2, "episode": "hand"}, env=name, num_env_runners=2, **TINY
        )
        algo = config.build_algo()
        try:
            assert algo.env_runner_group.num_remote_env_runners() == 2
            before = R.module_state(algo, "main")
            result = algo.train()
            runners = result["env_runners"]
            assert runners["num_env_steps_sampled_lifetime"] >= TINY["train_batch_size"]
            assert result["league"]["snapshots"] == 1
            main = R.module_state(algo, "main")
            assert not same_weights(before, main)  # main learned
            for copy in everywhere(algo, "main_v1"):  # the learner and every env runner
                assert same_weights(copy, main)
            algo.train()
            assert not same_weights(R.module_state(algo, "main"), main)
            assert all(same_weights(c, main) for c in everywhere(algo, "main_v1"))  # frozen
            assert set(algo.env_runner.module.keys()) == {"main", "main_v1", "main_v2"}
            path = R.export_policy(algo, tmp_path / "policy.pt", {"episode": "hand"})
        finally:
            algo.stop()
        # The result plays like any agent, through the policy file and the registry.
        for agent in (agents.load(str(path)), agents.make("rllib", path=str(tmp_path))):
            res = evaluate([agent, "random"], num_players=2, hands=40, seed=0)
            assert res.hands == 40  # the raw env raises on any illegal action

    @pytest.mark.filterwarnings("ignore:.*Overriding environment rllib-multi-agent-env-v0")
    @pytest.mark.parametrize(("num_players", "episode"), [(2, "hand"), (3, "match")])
    def test_rewards_rllib_collects_equal_the_envs_scoring(
        self, num_players: int, episode: str
    ) -> None:
        from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner

        env_config = {"num_players": num_players, "episode": episode, "skip_forced": True}
        if episode == "match":
            env_config["target_score"] = 30
        config = R.ppo_config(env_config, env=_TallyEnv, num_env_runners=0, **TINY)
        runner = MultiAgentEnvRunner(config=config)
        env = runner.env.envs[0].unwrapped
        illegal = env.illegal_actions  # the env check's random action may count one
        env.tallies.clear()
        episodes = runner.sample(num_episodes=12, random_actions=False)
        assert env.illegal_actions == illegal  # the masked module never played one
        done = [ep for ep in episodes if ep.is_done]
        assert len(done) >= 12 and len(env.tallies) >= len(done)
        for ep, tally in zip(done, env.tallies):
            assert np.allclose(tally["hands"], tally["scores"])
            got = {aid: sa.get_return() for aid, sa in ep.agent_episodes.items()}
            assert set(got) == set(env.possible_agents)
            want = dict(zip(env.possible_agents, tally["scores"]))
            assert got == pytest.approx(want)
        runner.stop()

    def test_train_py_engine_writes_a_run_that_evaluates(self, tmp_path) -> None:
        import agents
        from block_env.evaluate import evaluate
        from block_env.training.rllib import train_rllib

        summary = train_rllib(tiny_train_config(tmp_path))
        out = tmp_path / "rllib_test"
        for name in ("policy.pt", "eval.txt", "eval.json", "log.jsonl"):
            assert (out / name).is_file(), name
        assert summary["final"]["random"]["hands"] == 20
        assert len(summary["history"]) >= 2
        ckpt = out / "checkpoints" / "rllib"
        assert (ckpt / "policy.pt").is_file()
        policy = agents.load(str(out / "policy.pt"))
        assert policy.game["episode"] == "hand"
        res = evaluate([policy, "random"], num_players=2, hands=20, seed=0, episode="hand")
        assert res.hands == 20
        # An RLlib checkpoint without the exported file loads through RLlib itself.
        (ckpt / "policy.pt").unlink()
        module = R.load_agent(ckpt)
        assert module.act(self._first_observation()) in range(57)
        with pytest.raises(FileNotFoundError, match="no RLlib policy"):
            R.load_agent(tmp_path / "nowhere")

    @staticmethod
    def _first_observation() -> dict:
        env = block_env.raw_env()
        env.reset(seed=0)
        return env.observe(env.agent_selection)


# ----------------------------------------------------------------------------- Ray cluster


@pytest.fixture(scope="class")
def two_node_cluster():
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    worker = cluster.add_node(num_cpus=2, resources={"sampler": 2})
    ray.init(address=cluster.address, log_to_driver=False)
    cluster.wait_for_nodes()
    yield cluster, worker
    ray.shutdown()
    cluster.shutdown()


class TestCluster:
    def test_env_runners_on_the_second_node_train_and_evaluate(
        self, two_node_cluster, tmp_path
    ) -> None:
        import agents
        from block_env.evaluate import evaluate

        _, worker = two_node_cluster
        config = R.ppo_config(
            {"num_players": 2, "episode": "hand"},
            num_env_runners=2,
            custom_resources_per_env_runner={"sampler": 1},
            **TINY,
        )
        algo = config.build_algo()
        try:
            nodes = algo.env_runner_group.foreach_env_runner(
                lambda r: ray.get_runtime_context().get_node_id(), local_env_runner=False
            )
            assert nodes == [worker.node_id] * 2
            assert ray.get_runtime_context().get_node_id() != worker.node_id
            result = algo.train()
            assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 400
            path = R.export_policy(algo, tmp_path / "policy.pt", {"episode": "hand"})
        finally:
            algo.stop()
        res = evaluate([agents.load(str(path)), "random"], num_players=2, hands=40, seed=0)
        assert res.hands == 40

    def test_train_py_joins_the_cluster_named_by_ray_address(
        self, two_node_cluster, tmp_path, monkeypatch
    ) -> None:
        """``train.py`` unchanged: with RAY_ADDRESS set it joins that cluster (no local
        instance, no CPU count of its own) and trains there."""
        from block_env.training.rllib import train_rllib

        cluster, _ = two_node_cluster
        ray.shutdown()
        monkeypatch.setenv("RAY_ADDRESS", cluster.address)
        calls = []
        real_init = ray.init

        def spy(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            ctx = real_init(*args, **kwargs)
            calls.append((kwargs, len([n for n in ray.nodes() if n["Alive"]])))
            return ctx

        monkeypatch.setattr(ray, "init", spy)
        summary = train_rllib(tiny_train_config(tmp_path, num_env_runners=2))
        assert len(calls) == 1
        kwargs, nodes = calls[0]
        assert "num_cpus" not in kwargs and nodes == 2
        assert summary["final"]["random"]["hands"] == 20
        assert not ray.is_initialized()  # it let go of the cluster at the end
        ray.init(address=cluster.address, log_to_driver=False)  # for the fixture's teardown
