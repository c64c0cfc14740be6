"""Fine-tuning: ``init_policy`` starts a run from a policy's weights, or refuses a misfit file
before anything is written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import train  # noqa: E402
from agents.network import ActorCritic  # noqa: E402
from agents.policy_files import CRITIC_PREFIXES, read_policy_file, save_policy  # noqa: E402
from block_env.observation import layout_for_dim  # noqa: E402
from block_env.training.config import game_of, load_config  # noqa: E402
from block_env.training.errors import ConfigError  # noqa: E402
from block_env.training.init_policy import initial_weights  # noqa: E402
from block_env.training.ppo import new_model  # noqa: E402

SMOKE = ROOT / "configs" / "smoke.yaml"
FROZEN = ["lr=1e-12", "anneal_lr=false", "teacher=none", "ent_coef=0"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The latest checkpoint of a smoke run (actor and critic, weights away from init)."""
    run = tmp_path_factory.mktemp("source") / "run"
    train.train(load_config(SMOKE, [f"run_dir={run}", "lr=0.003", "seed=7"]))
    return run / "checkpoints" / "latest.pt"


def _weights(path: Path) -> dict[str, torch.Tensor]:
    return read_policy_file(path).model.state_dict()


def test_a_run_starts_from_the_policys_actor_and_critic(trained: Path, tmp_path: Path) -> None:
    source = _weights(trained)
    train.train(
        load_config(SMOKE, [f"run_dir={tmp_path / 'ft'}", f"init_policy={trained}", *FROZEN])
    )
    train.train(load_config(SMOKE, [f"run_dir={tmp_path / 'fresh'}", *FROZEN]))
    tuned = _weights(tmp_path / "ft" / "checkpoints" / "latest.pt")
    fresh = _weights(tmp_path / "fresh" / "checkpoints" / "latest.pt")
    for key, value in source.items():  # the frozen run kept the weights it started from
        torch.testing.assert_close(tuned[key], value, atol=1e-6, rtol=0)
    assert any(
        (fresh[k] - v).abs().max() > 1e-3 for k, v in source.items() if v.is_floating_point()
    )


def test_an_actor_only_file_gives_the_actor_and_leaves_the_critic_fresh(
    trained: Path, tmp_path: Path
) -> None:
    pf = read_policy_file(trained)
    save_policy(tmp_path / "actor.pt", pf.model, actor_only=True, game=pf.game)
    cfg = load_config(SMOKE, [f"init_policy={tmp_path / 'actor.pt'}"])
    model = new_model(cfg, "cpu")
    weights, with_critic = initial_weights(cfg, model)
    assert not with_critic
    assert weights and not any(k.startswith(CRITIC_PREFIXES) for k in weights)
    model.load_state_dict(weights, strict=False)
    obs = torch.rand(16, model.obs_dim)
    torch.testing.assert_close(model.logits(obs), pf.model.logits(obs))
    _, critic_too = initial_weights(load_config(SMOKE, [f"init_policy={trained}"]), model)
    assert critic_too


def test_a_shipped_name_is_accepted_for_its_game() -> None:
    cfg = load_config(None, ["init_policy=block-3p", "num_players=3"])
    weights, with_critic = initial_weights(cfg, new_model(cfg, "cpu"))
    assert not with_critic and "policy_head.weight" in weights  # shipped files are actor-only


def test_another_tables_policy_starts_a_run_only_when_asked() -> None:
    """block-4p (individual play) starts a partnership run with init_other_table=true: every
    table has the same inputs, so the run begins playing exactly as block-4p."""
    table = ["num_players=4", "partnership=true", "init_policy=block-4p"]
    cfg = load_config(None, table)
    with pytest.raises(ConfigError, match="partnership: file False vs run True") as info:
        initial_weights(cfg, new_model(cfg, "cpu"))
    assert "init_other_table=true" in str(info.value)
    cfg = load_config(None, [*table, "init_other_table=true"])
    model = new_model(cfg, "cpu")
    weights, _ = initial_weights(cfg, model)
    model.load_state_dict(weights, strict=False)
    source = read_policy_file("block-4p").model
    obs = torch.rand(16, model.obs_dim)
    torch.testing.assert_close(model.logits(obs), source.logits(obs))


def test_init_other_table_without_a_policy_is_refused() -> None:
    with pytest.raises(ConfigError, match="init_other_table"):
        load_config(None, ["init_other_table=true"])


@pytest.mark.parametrize(
    "overrides, names",
    [
        (["hidden=[64, 16]"], ["hidden: file (32, 32) vs run (64, 16)"]),
        (["hidden=[32, 32, 32]"], ["hidden: file (32, 32) vs run (32, 32, 32)"]),
        (["num_players=3"], ["num_players: file 2 vs run 3"]),
        (["activation=tanh", "obs_type=information_state"], ["activation: file"]),
        (["max_pip=4"], ["max_pip: file 6 vs run 4"]),
    ],
)
def test_a_misfit_policy_is_refused_before_the_run_folder_is_made(
    trained: Path, tmp_path: Path, overrides: list[str], names: list[str]
) -> None:
    run = tmp_path / "run"
    cfg = load_config(SMOKE, [f"run_dir={run}", f"init_policy={trained}", *overrides])
    with pytest.raises(ConfigError, match="does not fit this run") as info:
        train.train(cfg)
    assert all(name in str(info.value) for name in names), str(info.value)
    assert not run.exists()


def _started_from(trained: Path, *overrides: str) -> tuple[ActorCritic, ActorCritic]:
    """(the run's network loaded with its initial weights, the file's network) for a run of
    the smoke config started from ``trained`` with ``overrides``; the critic comes too."""
    cfg = load_config(SMOKE, [f"init_policy={trained}", *overrides])
    model = new_model(cfg, "cpu")
    weights, with_critic = initial_weights(cfg, model)
    assert with_critic
    model.load_state_dict(weights, strict=True)
    return model, read_policy_file(trained).model


def test_a_plain_policy_starts_an_information_state_run_playing_exactly_as_before(
    trained: Path,
) -> None:
    """The widened network gives the file's logits (and, from a checkpoint, its values)
    whatever the history holds: the history columns start at zero."""
    model, source = _started_from(trained, "obs_type=information_state")
    info = torch.rand(32, model.input_dim) * 3
    plain = info[:, : source.obs_dim]
    priv = torch.rand(32, 3 * 28)
    torch.testing.assert_close(model.logits(info), source.logits(plain))
    torch.testing.assert_close(model.value(info, priv), source.value(plain, priv))
    columns = model.actor_body[0].weight[:, source.obs_dim :]
    assert columns.shape[1] == model.summary_dim - source.obs_dim > 0
    assert not columns.any()


def test_a_policy_starts_a_wider_run_playing_exactly_as_before(trained: Path) -> None:
    """Wider hidden layers of the same depth: the file's units keep their weights and read
    nothing from the new ones, the heads read the new units through zero weights, so the
    logits and values are the file's; the new units start from fresh, non-zero weights."""
    model, source = _started_from(trained, "hidden=[48, 64]")
    assert tuple(source.net.hidden) == (32, 32)
    obs = torch.rand(32, model.obs_dim) * 3
    priv = torch.rand(32, 3 * 28)
    torch.testing.assert_close(model.logits(obs), source.logits(obs))
    torch.testing.assert_close(model.value(obs, priv), source.value(obs, priv))
    for body in (model.actor_body, model.critic_body):
        assert body[0].weight[32:].abs().sum() > 0  # new units: fresh incoming weights
        assert not body[2].weight[:32, 32:].any()  # old units read nothing from new ones
        assert body[2].weight[32:].abs().sum() > 0
    assert not model.policy_head.weight[:, 32:].any()
    assert not model.value_head.weight[:, 32:].any()


def test_an_information_state_policy_does_not_start_a_plain_run(tmp_path: Path) -> None:
    cfg = load_config(SMOKE, ["obs_type=information_state"])
    save_policy(tmp_path / "info.pt", new_model(cfg, "cpu"), game=game_of(cfg))
    plain = load_config(SMOKE, [f"init_policy={tmp_path / 'info.pt'}"])
    with pytest.raises(ConfigError, match="obs_type: file 'information_state' vs run"):
        initial_weights(plain, new_model(plain, "cpu"))


def test_a_score_blind_policy_starts_a_use_scores_run_playing_exactly_as_before(
    trained: Path,
) -> None:
    """The widened network reads the scores and target, with zero weights on them at the
    start: the file's logits and values whatever the scores are."""
    model, source = _started_from(trained, "use_scores=true")
    assert model.net.use_scores
    fields = layout_for_dim(model.obs_dim).fields
    obs = torch.rand(32, model.obs_dim) * 3
    priv = torch.rand(32, 3 * 28)
    torch.testing.assert_close(model.logits(obs), source.logits(obs))
    torch.testing.assert_close(model.value(obs, priv), source.value(obs, priv))
    for name in ("scores", "target"):
        assert model.in_scale[fields[name]].all()  # the inputs are read ...
        assert not model.actor_body[0].weight[:, fields[name]].any()  # ... from zero weights


def test_a_policy_that_reads_the_scores_does_not_start_a_blind_run(tmp_path: Path) -> None:
    cfg = load_config(SMOKE, ["use_scores=true"])
    save_policy(tmp_path / "scores.pt", new_model(cfg, "cpu"), game=game_of(cfg))
    blind = load_config(SMOKE, [f"init_policy={tmp_path / 'scores.pt'}"])
    with pytest.raises(ConfigError, match="use_scores: file True vs run False"):
        initial_weights(blind, new_model(blind, "cpu"))


def test_a_missing_or_unreadable_file_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "notes.pt"
    bad.write_text("not a policy")
    for source in (tmp_path / "missing.pt", bad):
        cfg = load_config(SMOKE, [f"run_dir={tmp_path / 'run'}", f"init_policy={source}"])
        with pytest.raises(ConfigError, match="config init_policy="):
            train.train(cfg)
        assert not (tmp_path / "run").exists()


def test_only_ppo_starts_from_a_policy() -> None:
    with pytest.raises(ConfigError, match="config init_policy="):
        load_config(SMOKE, ["algo=sb3", "init_policy=block-2p"])


def _fresh_file(tmp_path: Path, *overrides: str) -> Path:
    """A policy file (actor and critic) of a fresh smoke network with ``overrides``."""
    cfg = load_config(SMOKE, list(overrides))
    torch.manual_seed(3)
    path = tmp_path / "source.pt"
    save_policy(path, new_model(cfg, "cpu"), game=game_of(cfg))
    return path


@pytest.mark.parametrize(
    ("file_has", "run_has"), [(False, True), (True, False), (True, True)], ids=str
)
def test_init_policy_keeps_adds_or_drops_the_belief_head(
    tmp_path: Path, file_has: bool, run_has: bool
) -> None:
    """The actor and critic always come from the file; the head is the file's when both have
    one, fresh when only the run has one, absent when only the file has one."""
    path = _fresh_file(tmp_path, f"belief_coef={int(file_has)}")
    model, source = _started_from(path, f"belief_coef={int(run_has)}")
    obs, priv = torch.rand(8, 122) * 3, torch.rand(8, 84)
    torch.testing.assert_close(model.logits(obs), source.logits(obs))
    torch.testing.assert_close(model.value(obs, priv), source.value(obs, priv))
    assert (model.belief_head is not None) == run_has
    if file_has and run_has:
        torch.testing.assert_close(model.belief_head.weight, source.belief_head.weight)
    elif run_has:
        assert model.belief_head.weight.abs().sum() > 0
