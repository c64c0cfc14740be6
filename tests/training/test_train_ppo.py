"""train.py: smoke run, resume, config handling, masking, rollout bookkeeping, determinism."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from helpers import TWO_PLAYER_HAND_GAME  # noqa: E402

import train  # noqa: E402
from agents.network import ActorCritic, NetConfig, mask_logits, sample_actions  # noqa: E402
from block_env.training import rollout  # noqa: E402
from block_env.training.config import TrainConfig, load_config  # noqa: E402
from block_env.training.errors import ConfigError  # noqa: E402

SMOKE = ROOT / "configs" / "smoke.yaml"


def smoke(tmp_path: Path, *overrides: str) -> TrainConfig:
    return load_config(SMOKE, [f"run_dir={tmp_path / 'run'}", *overrides])


# ---------------------------------------------------------------- smoke, resume, outputs


def test_smoke_run_writes_checkpoint_policy_table_and_curve(tmp_path: Path) -> None:
    cfg = smoke(tmp_path)
    summary = train.train(cfg)
    run = tmp_path / "run"
    for name in ("checkpoints/latest.pt", "policy.pt", "eval.txt", "eval.json", "curve.png"):
        assert (run / name).is_file(), name
    table = (run / "eval.txt").read_text()
    assert "points/hand margin" in table and "random" in table and "greedy" in table
    assert set(summary["final"]) == {"random", "greedy"}
    assert json.loads((run / "eval.json").read_text())["final"]["random"]["hands"] == 40
    updates = [json.loads(line)["update"] for line in (run / "log.jsonl").read_text().splitlines()]
    assert updates == [1, 2, 3, 4]
    # The saved policy plays through the public loader and names the game it was made for.
    import agents

    saved = torch.load(run / "policy.pt", weights_only=True)
    assert saved["actor_only"] and not any(k.startswith("critic") for k in saved["weights"])
    assert saved["game"] == TWO_PLAYER_HAND_GAME
    assert agents.load(str(run / "checkpoints/latest.pt")).game == saved["game"]
    agent = agents.load(str(run / "policy.pt"))
    obs = np.zeros(122, dtype=np.float32)
    mask = np.zeros(57, dtype=np.int8)
    mask[[3, 10]] = 1
    assert agent.act({"observation": obs, "action_mask": mask}) in (3, 10)
    # A second run into the same folder must not silently overwrite it.
    with pytest.raises(FileExistsError, match="--resume"):
        train.train(cfg)


def test_resume_continues_from_the_checkpoint(tmp_path: Path) -> None:
    train.train(smoke(tmp_path, "total_steps=1024"))  # 2 updates, then "killed"
    state = torch.load(tmp_path / "run/checkpoints/latest.pt", weights_only=True)
    assert state["update"] == 2 and state["env_steps"] == 1024
    assert "optimizer" in state and state["config"]["name"] == "smoke"
    # Through the command line, as a user would after a kill.
    assert train.main([str(SMOKE), f"run_dir={tmp_path / 'run'}", "--resume"]) == 0
    updates = [
        json.loads(line)["update"] for line in (tmp_path / "run/log.jsonl").read_text().splitlines()
    ]
    assert updates == [1, 2, 3, 4]
    state = torch.load(tmp_path / "run/checkpoints/latest.pt", weights_only=True)
    assert state["update"] == 4


def test_checkpoint_from_another_config_is_rejected(tmp_path: Path) -> None:
    train.train(smoke(tmp_path, "total_steps=512"))
    with pytest.raises(ValueError, match="hidden"):
        train.train(smoke(tmp_path, "hidden=[16,16]"), resume=True)
    with pytest.raises(FileNotFoundError, match="nothing to resume"):
        train.train(smoke(tmp_path, f"run_dir={tmp_path / 'other'}"), resume=True)


def test_same_seed_same_weights_on_cpu(tmp_path: Path) -> None:
    def weights(sub: str) -> dict:
        cfg = load_config(SMOKE, [f"run_dir={tmp_path / sub}", "total_steps=1024"])
        train.train(cfg)
        return torch.load(tmp_path / sub / "checkpoints/latest.pt", weights_only=True)["policy"]

    a, b = weights("a"), weights("b")
    assert all(torch.equal(a["weights"][k], b["weights"][k]) for k in a["weights"])


def test_sb3_algo_trains_and_evaluates(tmp_path: Path) -> None:
    summary = train.train(smoke(tmp_path, "algo=sb3", "total_steps=256", "eval_every=1"))
    assert (tmp_path / "run/sb3_model.zip").is_file()
    assert "points/hand margin" in (tmp_path / "run/eval.txt").read_text()
    assert set(summary["final"]) == {"random", "greedy"} and summary["history"]


# ---------------------------------------------------------------- config handling


def test_default_config_is_two_players_and_matches_2p_yaml() -> None:
    default = load_config(None, [])
    assert default.num_players == 2
    assert asdict(load_config(ROOT / "configs" / "2p.yaml")) == asdict(default)


@pytest.mark.parametrize(
    "name",
    ["2p", "3p", "4p", "partnership", "partnership_from4p", "partnership_long", "smoke", "long_2p"],
)
def test_shipped_configs_load(name: str) -> None:
    cfg = load_config(ROOT / "configs" / f"{name}.yaml")
    assert cfg.num_players in (2, 3, 4)
    if name.startswith("partnership"):
        assert cfg.partnership and cfg.num_players == 4


def _keys_unlike_its_config(policy_file: Path, config_name: str) -> set[str]:
    """The keys whose value in ``policy_file``'s recorded training configuration differs from
    configs/<config_name>.yaml with nproc=2. Keys added to the config since the file was
    trained must sit at the values that train as before."""
    from block_env.training.runs import KEYS_ADDED_LATER

    recorded = torch.load(policy_file, weights_only=True)["meta"]["config"]
    config = asdict(load_config(ROOT / "configs" / f"{config_name}.yaml", ["nproc=2"]))
    added_since = set(config) - set(recorded)
    assert added_since <= set(KEYS_ADDED_LATER)
    assert all(config[k] == KEYS_ADDED_LATER[k] for k in added_since)
    return {k for k in recorded if config[k] != recorded[k]}


@pytest.mark.parametrize(
    "policy_file, config, differ",
    [
        # block-partnership's first stage, key for key (the run's name and folder aside)
        ("agents/policies/block-partnership-search.pt", "partnership_from4p", {"name", "run_dir"}),
        # its second stage: started from the first (shipped as block-partnership then), under
        # a time limit that 90M steps did not reach
        (
            "agents/policies/block-partnership.pt",
            "partnership_long",
            {"run_dir", "init_policy", "time_limit_min"},
        ),
    ],
)
def test_partnership_policies_record_their_stage_config_on_two_ranks(
    policy_file: str, config: str, differ: set[str]
) -> None:
    """The partnership networks (block-partnership and the block-partnership-search preset's)
    were trained by their stage's config with nproc=2; only the named keys differ."""
    assert _keys_unlike_its_config(ROOT / policy_file, config) == differ


def test_unknown_keys_and_bad_values_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown config key.*learning_rate"):
        load_config(None, ["learning_rate=0.1"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("num_players: 2\nbatchsize: 3\n")
    with pytest.raises(ValueError, match="batchsize"):
        load_config(bad)
    for override, key in (
        ("num_players=5", "num_players"),
        ("lr=-1", "lr"),
        ("total_steps=lots", "total_steps"),
        ("total_steps=1.5", "total_steps"),
        ("opponents={foo: 1}", "opponents"),
        ("gamma=2", "gamma"),
        ("partnership=true", "partnership"),
        ("algo=dqn", "algo"),
        ("hidden=[0]", "hidden"),
        ("progress=maybe", "progress"),
        ("shared=true", "shared"),
    ):
        with pytest.raises(ValueError, match=key):
            load_config(None, [override])


def test_overrides_are_typed() -> None:
    cfg = load_config(
        None,
        ["total_steps=1e6", "hidden=[64,32]", "lr=1e-3", "shared=true", "privileged_critic=false"],
    )
    assert cfg.total_steps == 1_000_000 and isinstance(cfg.total_steps, int)
    assert cfg.hidden == [64, 32] and cfg.lr == 1e-3 and cfg.shared is True
    assert load_config(None, ["hidden=128,128"]).hidden == [128, 128]


def test_cli_reports_config_errors(capsys: pytest.CaptureFixture) -> None:
    assert train.main([str(SMOKE), "no_such_key=1"]) == 2
    assert "no_such_key" in capsys.readouterr().err


# ---------------------------------------------------------------- masking


def test_masked_logits_use_the_dtype_minimum_and_are_never_sampled() -> None:
    logits = torch.tensor([[5.0, 0.0, 9.0, -1.0]] * 4000)
    mask = torch.tensor([[1, 0, 0, 1]] * 4000, dtype=torch.int8)
    masked = mask_logits(logits, mask)
    assert torch.all(masked[:, [1, 2]] == torch.finfo(torch.float32).min)
    assert not torch.isinf(masked).any()
    gen = torch.Generator().manual_seed(0)
    actions = sample_actions(masked, gen)
    assert set(actions.tolist()) == {0, 3}
    assert sample_actions(masked, greedy=True).unique().tolist() == [0]
    probs = torch.softmax(masked, -1)
    assert torch.all(probs[:, [1, 2]] == 0) and not torch.isnan(probs).any()


def test_policy_network_masks_half_precision_too() -> None:
    logits = torch.zeros(2, 57, dtype=torch.float16)
    mask = torch.zeros(2, 57, dtype=torch.int8)
    mask[:, 56] = 1
    masked = mask_logits(logits, mask)
    assert masked[0, 0] == torch.finfo(torch.float16).min
    assert sample_actions(masked.float()).tolist() == [56, 56]


@pytest.mark.parametrize("privileged", [False, True])
def test_rollout_actions_are_legal_and_returns_are_hand_points(
    tmp_path: Path, privileged: bool
) -> None:
    cfg = smoke(tmp_path, "gamma=1", "gae_lambda=1", "num_envs=16", "rollout_steps=40")
    torch.manual_seed(0)
    model = ActorCritic(NetConfig((16,), privileged_critic=privileged))
    collector = rollout.Collector(cfg, model, "cpu", np.random.default_rng(0))
    collector.reset(seed=1)
    batch = collector.collect()
    assert len(batch.actions) > 0 and batch.hands > 0
    assert np.all(batch.mask[np.arange(len(batch.actions)), batch.actions] == 1)
    # gamma = lambda = 1: each decision's return is its seat's zero-sum points of the hand,
    # which in 2 players is +-(points), an integer.
    points = batch.returns / cfg.reward_scale
    assert np.allclose(points, np.round(points), atol=1e-3)
    assert np.abs(points).max() <= 168
    assert batch.priv.shape == (len(batch.actions), 84 if privileged else 0)
    # Single-option moves are not decisions (skip_forced).
    assert np.all(batch.mask.sum(1) >= 2)


# ---------------------------------------------------------------- GAE bookkeeping


def test_gae_follows_each_seats_own_decisions() -> None:
    # One game, two learning seats alternating; the hand ends at t=3 (done on the last
    # decision of each seat); t=4 starts a hand that is cut off by the buffer end.
    T, B = 5, 1
    seats = np.array([[0], [1], [0], [1], [0]])
    valid = np.ones((T, B), dtype=bool)
    values = np.array([[0.5], [0.1], [0.2], [0.3], [0.9]], dtype=np.float32)
    rewards = np.array([[0.0], [0.0], [2.0], [-2.0], [0.0]], dtype=np.float32)
    dones = np.array([[False], [False], [True], [True], [False]])
    adv, trainable = rollout.gae(rewards, values, dones, valid, seats, 2, 1.0, 1.0)
    returns = adv + values
    assert returns[:4, 0].tolist() == pytest.approx([2.0, -2.0, 2.0, -2.0])
    assert trainable[:, 0].tolist() == [True, True, True, True, False]
    adv_half, _ = rollout.gae(rewards, values, dones, valid, seats, 2, 1.0, 0.5)
    # seat 0: delta0 = 0 + V(t=2) - V(t=0) = -0.3; delta2 = 2 - 0.2 = 1.8 -> A0 = -0.3 + 0.9
    assert adv_half[0, 0] == pytest.approx(-0.3 + 0.5 * 1.8)


@pytest.mark.parametrize("max_pip", [3, 6])
def test_trainer_opponents_play_as_the_greedy_and_random_bots(max_pip: int) -> None:
    from agents.baselines import GreedyAgent
    from block_env.tiles import tile_set

    width = tile_set(max_pip).num_actions
    rng = np.random.default_rng(0)
    masks = (rng.random((300, width)) < 0.1).astype(np.int8)
    masks[masks.sum(1) == 0, width - 1] = 1
    bot = GreedyAgent()
    expected = [bot.act({"observation": np.zeros(1), "action_mask": m}) for m in masks]
    opponents = rollout.Opponents(["greedy", "random"], np.random.default_rng(1))
    assert opponents.act("greedy", masks, masks, None).tolist() == expected
    picks = opponents.act("random", masks, masks, None)
    assert np.all(masks[np.arange(300), picks] == 1)


# ---------------------------------------------------------------- privileged critic


def test_privileged_features_are_the_other_seats_hands_by_relative_seat() -> None:
    from agents.network import PRIV_DIM, privileged_features

    hands = np.array([[0b1, 0b10, 0b100], [1 << 27, 1 << 5, 0]], dtype=np.int64)
    feats = privileged_features(hands, np.array([1, 0])).reshape(2, 3, 28)
    assert feats.shape == (2, 3, 28) and PRIV_DIM == 84
    # game 0, seat 1: relative seat 1 is seat 2 (tile 2), relative seat 2 is seat 0 (tile 0)
    assert np.flatnonzero(feats[0, 0]).tolist() == [2]
    assert np.flatnonzero(feats[0, 1]).tolist() == [0]
    assert not feats[0, 2].any()  # no fourth seat
    assert np.flatnonzero(feats[1, 0]).tolist() == [5] and not feats[1, 1].any()


def test_privileged_critic_is_never_needed_to_play() -> None:
    from agents.policy import PolicyAgent

    model = ActorCritic(NetConfig((8,), privileged_critic=True))
    obs = torch.zeros(3, 122)
    with pytest.raises(ValueError, match="privileged"):
        model(obs)
    logits, value = model(obs, torch.zeros(3, 84))
    assert logits.shape == (3, 57) and value.shape == (3,)
    mask = np.zeros(57, dtype=np.int8)
    mask[56] = 1
    assert PolicyAgent(model).act({"observation": np.zeros(122), "action_mask": mask}) == 56
    with pytest.raises(ValueError, match="shared"):
        NetConfig((8,), shared=True, privileged_critic=True)


# ---------------------------------------------------------------- progress and logs


def test_progress_bar_shows_rate_and_eta_and_the_log_is_strict_json(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    train.train(smoke(tmp_path, "progress=true", "total_steps=1024"))
    err = capsys.readouterr().err
    assert "step/s" in err and "<" in err  # tqdm: rate and elapsed<remaining
    assert "1.02k/1.02k" in err
    records = [
        json.loads(line, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
        for line in (tmp_path / "run/log.jsonl").read_text().splitlines()
    ]
    assert [r["update"] for r in records] == [1, 2]
    for r in records:
        assert {"env_steps", "wall", "pg", "vf", "ent", "kl", "points_per_hand"} <= set(r)


def test_a_run_on_the_clock_alone_shows_its_budget_instead_of_a_meaningless_eta(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from block_env.training.config import NO_STEP_LIMIT

    overrides = ("progress=true", f"total_steps={NO_STEP_LIMIT}", "time_limit_min=0.0001")
    train.train(smoke(tmp_path, *overrides))
    bar_lines = [line for line in capsys.readouterr().err.split("\r") if "budget" in line]
    assert bar_lines and all("0.0001-min budget" in line for line in bar_lines)
    assert "step/s" in bar_lines[-1] and "<" not in bar_lines[-1]  # rate, no ETA
    with pytest.raises(ConfigError, match="time_limit_min"):  # that total alone never ends
        smoke(tmp_path, f"total_steps={NO_STEP_LIMIT}")
