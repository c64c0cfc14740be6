"""Policy files: the game configuration they carry, the shipped policies, and bad files."""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import agents  # noqa: E402
from agents.network import ActorCritic, NetConfig  # noqa: E402
from agents.policy_files import (  # noqa: E402
    EXPECTED_FILE,
    GAME_KEYS,
    load_model,
    policy_dict,
    save_policy,
)

GAME_3P = {
    "num_players": 3,
    "opener": "rotate",
    "episode": "hand",
    "partnership": False,
    "target_score": None,
    "reward": "zero_sum",
}

# sha256 of the shipped weight tensors (name, dtype, shape, bytes; sorted by name), computed
# from the files as shipped: re-saving a file's metadata must not touch a weight.
SHIPPED_WEIGHTS_SHA256 = {
    "block-2p": "2d4b77c2a8375600ec9f5e7cdddf9138bcb5917ccb4de3aaa67dfff552a4ff78",
    "block-2p-plain": "b01e75455457ab34b275b566ec7d8995a79e77acc5b1f2508f7af7efb157df06",
    "block-3p": "14e8c56f1362608383b0fa09a8f9bc162ef081b8beabc47f105663b957b52989",
    "block-4p": "91dce451d0057cb8865b1a8202a7daa3f5b3e1c273a94d35ba54ac10795fa205",
    "block-partnership": "42678ef4ccc142cfd7b079a1ab9ed93fbbc7dab7bdfbeab8c4ab3207a4c325ed",
}
# the names that no longer ship, the weights of the file each still loads
DEPRECATED_WEIGHTS_SHA256 = {
    "block-partnership-stage1": "324da49a70df92bec738f4a955d8374e6fceee78efae13a517c13599f72235b4",
    "block-partnership-scratch": "e59c33033c098666eff40549a2c50cc7383439caa329f19141c6b3aafc96378b",
}


def weights_sha256(weights: dict) -> str:
    h = hashlib.sha256()
    for k in sorted(weights):
        t = weights[k].contiguous()
        h.update(k.encode())
        h.update(str(t.dtype).encode())
        h.update(str(tuple(t.shape)).encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()


def small_model() -> ActorCritic:
    torch.manual_seed(0)
    return ActorCritic(NetConfig(hidden=(8,)))


# ----------------------------------------------------------------------------- game config


def test_saved_game_config_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "p.pt"
    save_policy(path, small_model(), meta={"note": "x"}, actor_only=True, game=GAME_3P)
    agent = agents.load(str(path))
    assert agent.game == GAME_3P
    assert torch.load(path, weights_only=True)["game"] == GAME_3P


def test_game_config_from_a_block_config(tmp_path: Path) -> None:
    from block_env.config import BlockConfig

    path = tmp_path / "p.pt"
    cfg = BlockConfig(num_players=4, partnership=True, episode="hand", target_score=50)
    save_policy(path, small_model(), game=cfg)
    game = agents.load(str(path)).game
    assert game == {
        "num_players": 4,
        "opener": "rotate",
        "episode": "hand",
        "partnership": True,
        "target_score": 50,
        "reward": "zero_sum",
    }


@pytest.mark.parametrize(
    ("game", "match"),
    [
        ({**GAME_3P, "num_players": 5}, "num_players=5"),
        ({**GAME_3P, "colour": "red"}, "colour"),
        ({k: v for k, v in GAME_3P.items() if k != "episode"}, "episode"),
        ({**GAME_3P, "partnership": True}, "partnership"),
        ("3p", "game="),
    ],
)
def test_bad_game_config_is_refused_before_writing(tmp_path: Path, game, match: str) -> None:
    path = tmp_path / "sub" / "p.pt"
    with pytest.raises(ValueError, match=match):
        save_policy(path, small_model(), game=game)
    assert not path.exists()


def test_old_file_without_game_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "old.pt"
    data = policy_dict(small_model())
    assert "game" not in data
    torch.save(data, path)
    agent = agents.load(str(path))
    assert agent.game is None
    assert agent.act(_first_observation()) >= 0


def test_checkpoint_carries_the_policy_game(tmp_path: Path) -> None:
    path = tmp_path / "ckpt.pt"
    torch.save({"config": {"seed": 0}, "policy": policy_dict(small_model(), game=GAME_3P)}, path)
    assert agents.load(str(path)).game == GAME_3P


def test_malformed_stored_game_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.pt"
    data = policy_dict(small_model())
    data["game"] = {"num_players": 9}
    torch.save(data, path)
    with pytest.raises(ValueError, match="game configuration") as err:
        agents.load(str(path))
    assert str(path) in str(err.value)


def test_every_shipped_policy_has_its_weights_pinned() -> None:
    assert set(SHIPPED_WEIGHTS_SHA256) == set(agents.policy_files.SHIPPED)


@pytest.mark.parametrize(
    ("name", "players"),
    [("block-2p", 2), ("block-2p-plain", 2), ("block-3p", 3), ("block-4p", 4)]
    + [("block-partnership", 4)],
)
def test_shipped_policies_carry_their_game_and_unchanged_weights(name: str, players: int) -> None:
    agent = agents.load(name)
    assert agent.game == {
        "num_players": players,
        "opener": "rotate",
        "episode": "hand",  # train.py trains on single hands
        "partnership": name.startswith("block-partnership"),
        "target_score": None,
        "reward": "zero_sum",
    }
    data = torch.load(Path(agents.policy_files.POLICY_DIR) / f"{name}.pt", weights_only=True)
    assert weights_sha256(data["weights"]) == SHIPPED_WEIGHTS_SHA256[name]
    assert set(data["game"]) == set(GAME_KEYS)


@pytest.mark.parametrize("name", sorted(DEPRECATED_WEIGHTS_SHA256))
def test_a_name_that_no_longer_ships_loads_its_file_with_a_warning(name: str) -> None:
    """The partnership networks' old names still load, for one release, warning where the
    file is now: the same weights as before, no shipped name."""
    assert name not in agents.policy_files.SHIPPED
    with pytest.warns(DeprecationWarning, match=f"{name}.*deprecated.*block-partnership"):
        path = agents.policy_files.resolve(name)
    assert path.is_file()
    data = torch.load(path, weights_only=True)
    assert weights_sha256(data["weights"]) == DEPRECATED_WEIGHTS_SHA256[name]
    with pytest.warns(DeprecationWarning):
        agent = agents.load(name)
    assert agent.game is not None and agent.game["partnership"] is True


# ----------------------------------------------------------------------------- bad files


def _first_observation() -> dict:
    from block_env.env import raw_env

    env = raw_env()
    env.reset(seed=0)
    return env.observe(env.agent_selection)


def _shipped_bytes() -> bytes:
    return (Path(agents.policy_files.POLICY_DIR) / "block-2p.pt").read_bytes()


class RunsCode:
    """A pickle that would create a file when unpickled by a full (unsafe) load."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def _write_bad(kind: str, path: Path) -> None:
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("hello, this is not a policy\n")
    elif kind.startswith("truncated"):
        data = _shipped_bytes()
        cut = {"truncated-head": 64, "truncated-mid": 20000, "truncated-tail": len(data) - 10}
        path.write_bytes(data[: cut[kind]])
    elif kind == "code":
        with path.open("wb") as fh:
            pickle.dump({"format": RunsCode(path.with_suffix(".ran"))}, fh, protocol=2)
    elif kind == "tensor":
        torch.save(torch.zeros(3), path)
    elif kind == "other-dict":
        torch.save({"hello": 1}, path)
    elif kind == "broken-weights":
        data = policy_dict(small_model())
        data["weights"] = {"actor_body.0.weight": torch.zeros(2, 2)}
        torch.save(data, path)
    else:
        raise AssertionError(kind)


BAD_KINDS = [
    "empty",
    "text",
    "truncated-head",
    "truncated-mid",
    "truncated-tail",
    "code",
    "tensor",
    "other-dict",
    "broken-weights",
]


@pytest.mark.parametrize("kind", BAD_KINDS)
@pytest.mark.parametrize("loader", ["agents.load", "load_model"])
def test_bad_files_raise_a_value_error_naming_the_file(tmp_path: Path, kind: str, loader) -> None:
    path = tmp_path / f"{kind}.pt"
    _write_bad(kind, path)
    fn = agents.load if loader == "agents.load" else load_model
    with pytest.raises(ValueError) as err:
        fn(str(path))
    message = str(err.value)
    assert str(path) in message and EXPECTED_FILE in message
    assert "\n" not in message
    assert not path.with_suffix(".ran").exists()  # a pickle's code never runs


def test_missing_file_is_still_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no policy"):
        agents.load(str(tmp_path / "nope.pt"))
