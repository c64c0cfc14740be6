"""Policies that read the information state: the network's history summary (full and
summarised inputs give the same outputs), policy files that record ``obs_type``, refusals of
observations of the wrong length, and evaluations that hand every other agent the plain
observation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import agents
from agents.baselines import RuleAgent
from agents.network import ActorCritic, NetConfig, summarize_history
from agents.policy import PolicyAgent
from agents.policy_files import model_from_dict, policy_dict
from block_env import raw_env
from block_env.batched import BatchedEnv
from block_env.config import BlockConfig
from block_env.evaluate import SetupError, evaluate, prepare
from block_env.evaluation.batched import evaluate_batched
from block_env.information_state import history_slots, information_state_dim
from block_env.observation import obs_layout

GAMES = [
    {"num_players": 2},
    {"num_players": 3},
    {"num_players": 4, "partnership": True},
    {"num_players": 3, "max_pip": 4, "hand_size": 4},
]


def single_hand(**kw: Any) -> dict[str, Any]:
    base = {"opener": "rotate", "episode": "hand", "partnership": False}
    return {**base, "target_score": None, "reward": "zero_sum", **kw}


def info_model(game: dict[str, Any], seed: int = 0, **net: Any) -> ActorCritic:
    torch.manual_seed(seed)
    config = BlockConfig(**game)
    return ActorCritic(
        NetConfig(hidden=(32, 32), **net),
        max_pip=config.max_pip,
        obs_type="information_state",
        history_slots=history_slots(config),
    )


def played_states(game: dict[str, Any], steps: int, seed: int = 0) -> np.ndarray:
    """Information states of 64 batched games after ``steps`` random moves."""
    env = BatchedEnv(64, auto_pass=True, obs_type="information_state", **game)
    obs, mask, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        obs, mask, *_ = env.step(np.where(mask > 0, rng.random(mask.shape), -1.0).argmax(1))
    return obs


@pytest.mark.parametrize("kw", GAMES, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
def test_the_network_gives_the_same_outputs_on_the_full_vector_and_on_its_summary(kw):
    game = single_hand(**kw)
    config = BlockConfig(**game)
    model = info_model(game, privileged_critic=True)
    obs = played_states(game, steps=3 * config.num_players)
    assert obs.shape[1] == information_state_dim(config) == model.input_dim
    summary = summarize_history(obs, model.obs_dim, model.history_slots)
    assert summary.shape == (64, model.summary_dim)
    assert model.summary_dim == model.obs_dim + 4 * (config.tiles.num_tiles + 3)
    # numpy and torch summaries agree, and the model's own summary is the same function
    torch_summary = summarize_history(torch.from_numpy(obs), model.obs_dim, model.history_slots)
    assert torch.equal(torch_summary, torch.from_numpy(summary))
    assert np.array_equal(model.summarize(obs), summary)
    priv = torch.rand(64, 3 * config.tiles.num_tiles)
    with torch.no_grad():
        logits_full, value_full = model(torch.from_numpy(obs), priv)
        logits_sum, value_sum = model(torch.from_numpy(summary), priv)
        assert torch.equal(logits_full, logits_sum) and torch.equal(value_full, value_sum)
        assert torch.equal(model.logits(torch.from_numpy(obs)), logits_sum)
        assert torch.equal(model.value(torch.from_numpy(obs), priv), value_sum)
    # what the summary holds: per seat the tiles it played, their ends and its passes; the
    # tiles of all seats together are the line (the plain observation's field)
    t = config.tiles.num_tiles
    lay = obs_layout(config)
    per_seat = summary[:, lay.dim :].reshape(64, 4, t + 3)
    line = obs[:, lay.fields["line"]]
    np.testing.assert_array_equal(per_seat[:, :, :t].sum(1), line)
    np.testing.assert_array_equal(per_seat[:, :, t : t + 2].sum((1, 2)), line.sum(1))


def test_the_plain_network_is_unchanged_by_the_summary_path():
    torch.manual_seed(0)
    model = ActorCritic(NetConfig(hidden=(32,)))
    assert (model.obs_type, model.history_slots) == ("observation", None)
    assert model.input_dim == model.summary_dim == model.obs_dim == 122
    x = torch.rand(5, 122)
    assert model.summarize(x) is x  # no copy, no summary: the vector itself
    torch.manual_seed(0)
    again = ActorCritic(NetConfig(hidden=(32,)))
    for (k, a), b in zip(model.state_dict().items(), again.state_dict().values()):
        assert torch.equal(a, b), k
    assert policy_dict(model)["obs_type"] == "observation"


def test_policy_files_record_obs_type_and_old_files_load_as_observation(tmp_path):
    game = single_hand(num_players=3)
    model = info_model(game)
    data = policy_dict(model, game=game)
    assert data["obs_type"] == "information_state"
    back = model_from_dict(data)
    slots = history_slots(BlockConfig(**game))
    assert (back.obs_type, back.history_slots) == ("information_state", slots)
    for a, b in zip(model.state_dict().values(), back.state_dict().values()):
        assert torch.equal(a, b)
    path = tmp_path / "info.pt"
    torch.save(data, path)
    agent = agents.load(path)
    assert agent.obs_type == "information_state"
    assert agent.model.input_dim == 122 + 4 * slots * 31
    # a checkpoint holds the same dict under "policy"
    torch.save({"policy": data, "update": 1}, tmp_path / "ckpt.pt")
    assert agents.load(tmp_path / "ckpt.pt").obs_type == "information_state"
    # a file written before obs_type was stored is a plain policy
    plain = policy_dict(ActorCritic(NetConfig(hidden=(32,))), game=single_hand(num_players=2))
    del plain["obs_type"]
    torch.save(plain, tmp_path / "old.pt")
    assert agents.load(tmp_path / "old.pt").obs_type == "observation"


def test_an_information_state_policy_must_record_its_game(tmp_path):
    model = info_model(single_hand(num_players=2))
    with pytest.raises(ValueError, match="needs its game"):
        policy_dict(model)
    four = single_hand(num_players=4)
    with pytest.raises(
        ValueError, match=f"history_slots=13 .* has H={history_slots(BlockConfig(**four))}"
    ):
        policy_dict(model, game=four)
    data = policy_dict(model, game=single_hand(num_players=2))
    del data["game"]
    torch.save(data, tmp_path / "nogame.pt")
    with pytest.raises(ValueError, match="must record its game"):
        agents.load(tmp_path / "nogame.pt")
    data["obs_type"] = "pixels"
    with pytest.raises(ValueError, match="obs_type 'pixels'"):
        model_from_dict(data)
    with pytest.raises(ValueError, match="needs history_slots"):
        ActorCritic(NetConfig(hidden=(8,)), obs_type="information_state")
    with pytest.raises(ValueError, match="only for obs_type='information_state'"):
        ActorCritic(NetConfig(hidden=(8,)), history_slots=13)


def test_wrong_lengths_are_refused_naming_the_obs_type():
    game = single_hand(num_players=2)
    info = PolicyAgent(info_model(game), name="hist", game=game)
    plain = PolicyAgent(ActorCritic(NetConfig(hidden=(8,))), name="flat", game=game)
    env_info = raw_env(**game, obs_type="information_state")
    env_plain = raw_env(**game)
    env_info.reset(seed=0)
    env_plain.reset(seed=0)
    agent = env_plain.agent_selection
    full, short = env_info.observe(agent), env_plain.observe(agent)
    assert isinstance(info.act(full), int) and isinstance(plain.act(short), int)
    with pytest.raises(ValueError, match="reads obs_type='information_state' \\(length 1734"):
        info.act(short)
    with pytest.raises(ValueError, match="reads obs_type='observation'.*length 1734"):
        plain.act(full)
    # act() wants what the env hands out; act_batch also takes the stored summaries
    summary = summarize_history(full["observation"][None], 122, 13)
    with pytest.raises(ValueError, match="length 246"):
        info.act({**full, "observation": summary[0]})
    mask = full["action_mask"][None]
    assert info.act_batch(summary, mask)[0] == info.act(full)
    with pytest.raises(ValueError, match="information_state"):
        info.act_batch(short["observation"][None], mask)
    with pytest.raises(ValueError, match="obs_type='information_state'"):
        info.model.logits(torch.zeros(1, 200))


class Recorder(RuleAgent):
    """The rule bot, remembering the observation lengths it was handed."""

    def __init__(self) -> None:
        super().__init__()
        self.lengths: set[int] = set()

    def act(self, observation: Any) -> int:
        self.lengths.add(len(observation["observation"]))
        return super().act(observation)


@pytest.mark.parametrize("kw", GAMES[:3], ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
def test_evaluations_give_the_other_agents_the_plain_observation(kw):
    game = single_hand(**kw)
    policy = PolicyAgent(info_model(game), name="hist", game=game)
    bot = Recorder()
    res = evaluate([policy, bot], hands=60, seed=5, **kw)
    assert bot.lengths == {obs_layout(BlockConfig(**game)).dim}
    assert res.hands == 60 and res.stats[0].margin.mean != 0.0
    plan = prepare(["rules", "greedy"], **kw)
    assert plan.env.obs_type == "observation" and plan.plain_cut == []
    plan = prepare([policy, "rules"], **kw)
    assert plan.env.obs_type == "information_state"
    assert plan.plain_cut == [p is not policy for p in plan.players]


def test_agents_built_from_specs_are_built_on_the_information_state_env():
    game = single_hand(num_players=2)
    policy = PolicyAgent(info_model(game), name="hist", game=game)
    plan = prepare([policy, "omniscient"], hands=4)
    oracle = [p for p in plan.players if p is not policy]
    assert oracle and all(p.env is plan.env for p in oracle)  # it reads this env's deal
    res = evaluate([policy, "omniscient"], hands=40, seed=2)
    assert res.stats[1].margin.mean > 0


def test_an_agent_with_an_unknown_obs_type_is_refused():
    bot = RuleAgent()
    bot.obs_type = "pixels"  # type: ignore[attr-defined]
    with pytest.raises(SetupError, match="obs_type='pixels'"):
        evaluate([bot, "rules"], hands=2)


@pytest.mark.parametrize("kw", GAMES, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
def test_batched_and_aec_evaluations_agree_exactly_for_an_information_state_policy(kw):
    game = single_hand(**kw)
    policy = PolicyAgent(info_model(game, seed=3), name="policy", game=game)
    aec = evaluate([policy, "rules"], hands=120, seed=7, **kw)
    batched = evaluate_batched(policy, game, "rules", 120, 7)
    for key, value in aec.per_deal.items():
        np.testing.assert_array_equal(batched.per_deal[key], value, err_msg=key)
    assert batched.stats == aec.stats
