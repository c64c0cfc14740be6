"""The frozen tasks: each definition and deal set is pinned (a change must be a new version),
the deals are raw_env's, and no deal that training or its evaluations use is held out."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from block_env.batched import BatchedEnv
from block_env.benchmark.tasks import (
    HELD_OUT_SEED,
    SEEDS_PER_TASK,
    TASKS,
    deal,
    deal_digest,
    get_task,
)
from block_env.env import raw_env
from block_env.tiles import STANDARD_TILES
from block_env.training.config import SEED_LIMIT, game_of, load_config
from block_env.training.distributed import rank_seed
from block_env.training.results import FINAL_EVAL_SEED, PERIODIC_EVAL_SEED

CONFIGS = Path(__file__).resolve().parents[2] / "configs"

# sha256 of each task's definition (json, sorted keys) and of its whole held-out deal set.
# A failure here means a task changed: give the change a new version (block-2p-v2) instead.
PINNED = {
    "block-2p-v1": (
        "ff9d2a743af56318f131570a112b475e786d3ff6eb39486ef5dac8d790461105",
        "401cfdd06fc798c44cf9abd541403b300eb53f855df10a431b537c94460a82b3",
    ),
    "block-3p-v1": (
        "40acbf3edcf4dc49c00f2d632b82165e548a098b56d534a439399ca8bce178e6",
        "2c16712b941de30a18ff11a7ad444ce9698edcc1a2e6f8b7cb6721c2313b8b8d",
    ),
    "block-4p-v1": (
        "0f8ab739158fd9c60c37310ae2285ca93c7f153407f005c38be2ece3a4ff2ccf",
        "f77dfb9fa78d45307c2ceab980220e8caa03022ff4c063db140b16bf430fbbda",
    ),
    "block-partnership-v1": (
        "bd02d6bd2944c6791b54dc6b77cc04b0d7fb45265fcb936d18c10dd9aefe03b5",
        "1a42d3bbc563befce623e6e994f8bc1f02816f80fab8a02cc32957533e6aab65",
    ),
    "block-d2-2p-v1": (
        "d44a2fc203ef6d28f05f8305ef8b80374c410e7895d72b5c000e15b9ead9f637",
        "c82ab0d86222cc7a7abef9dad64c0ea00f9666e9db12f0013b4424f618faa9fd",
    ),
    "block-d3-2p-v1": (
        "6c30482c6f5bb2eed7ac9c012e04c50bf592ff124a69362b68617f616267a837",
        "2a9f1b3798492303201cad70d3bc7bc554de8236495aab1e8a804053123fd667",
    ),
    "block-2p-hd-v1": (
        "b461b7dceeb5fd7108120f3653df7ae4bfe00a6aa7d11df0d62ff62a446a9a3f",
        "2d8063c0ff908be715d964cb942ce6aa45d4aee2f750027f9aa39d0656d77ac4",
    ),
    "block-2p-match-v1": (
        "44d6e973999249f11082f6554ca41585f5cb5e5a50bf84907102403f5b437687",
        "88233908e87ae77522a4aa567571b1a2dbf494c3121c319910687982300eddc3",
    ),
    "block-3p-hd-v1": (
        "80fbd0b0fefceeba670bfefc05159c93a2462fd2740a046ceb70ade1263009eb",
        "39a518a7894f84fe9176d602133ca286d5113925a7cd8b830abeeb5b13b168c2",
    ),
    "block-4p-hd-v1": (
        "1f39d1811ba111ba9652fc44ff8f10fee292ac0e4773dc1bf8052684e8f2b77d",
        "1998cc649ca24ec19fb6c58e70d2dc8a992572d8e6083871af1fb269372ede0f",
    ),
    "block-partnership-hd-v1": (
        "c66e4acbc6c8ab1c97512a570a81e5f88e6cfe33c6d9db88f7bcbd5ef3821cc6",
        "45c50a947318e4d04fe4d21a5c788adbd3f7607887e00d9fd97056abc018fe1d",
    ),
    "block-3p-match-v1": (
        "62c2164de8240aaf78d82d9b67f83e3cb12d92a154e2db82f5f95c90dbdd7885",
        "40717e89dc7047d45a5852f61fce4136b9f398c70436ddbfb9f6ffe4e4e837f6",
    ),
    "block-4p-match-v1": (
        "6a4fc5b6d77dc75b88e0bd24df8b67cde9cea286b4b95d13e3dab55b859ffe24",
        "7fffa054a53e356057e207b3a239bb0354d9920344077f0ebfbc50c2af1fc8ba",
    ),
    "block-partnership-match-v1": (
        "6fde2fc94a675c2794084a9b98cf0fc8aa5836200e7566825cdec6d543163da8",
        "21ce7b58c2e46b76ca4b2fa298cfcb593095e122416f35c85ead11b3c581671f",
    ),
}


def test_the_pinned_tasks_are_exactly_the_tasks() -> None:
    assert set(PINNED) == set(TASKS)
    for needed in ("block-2p-v1", "block-3p-v1", "block-4p-v1", "block-partnership-v1"):
        assert needed in TASKS


@pytest.mark.parametrize("task_id", sorted(PINNED))
def test_task_definition_and_deal_set_are_pinned(task_id: str) -> None:
    task = TASKS[task_id]
    definition = json.dumps(task.definition(), sort_keys=True)
    assert hashlib.sha256(definition.encode()).hexdigest() == PINNED[task_id][0], definition
    assert deal_digest(task) == PINNED[task_id][1]


def test_small_set_tasks_are_the_openspiel_games() -> None:
    for task_id, pip in (("block-d2-2p-v1", 2), ("block-d3-2p-v1", 3)):
        game = TASKS[task_id].definition()["game"]
        assert game == {
            "num_players": 2,
            "episode": "hand",
            "opener": "rotate",
            "partnership": False,
            "max_pip": pip,
            "hand_size": 2,
            "reward": "zero_sum",
        }


def test_the_variant_tasks_play_the_other_tables_of_the_rules() -> None:
    """Every table has a task where the highest double opens (its holder leads: the leader
    differs from the rotating lead's lot on some deals) and one of whole matches to the
    rules' target (100 with 2 players and in partnership, 61 with 3 and 4)."""
    hd, plain = TASKS["block-2p-hd-v1"], TASKS["block-2p-v1"]
    assert hd.definition()["field_off_its_game"] is True
    assert "field_off_its_game" not in plain.definition()
    for task in TASKS.values():  # every table has its highest-double and match task
        base = TASKS[task.id.replace("-hd", "").replace("-match", "")]
        assert task.env_kwargs() == {
            **base.env_kwargs(),
            "episode": task.episode,
            "opener": task.opener,
        }
        if task.episode == "match":
            assert task.block_config().target == (
                61 if task.num_players > 2 and not task.partnership else 100
            )
        assert task.field_off_its_game == (task.opener == "highest_double")
    tables = {t.id for t in TASKS.values() if t.max_pip == 6}
    assert tables == {
        f"block-{g}{v}-v1" for g in ("2p", "3p", "4p", "partnership") for v in ("", "-hd", "-match")
    }
    led = [deal(hd, d) for d in range(40)]
    holders = [max((_highest_double(hand), seat) for seat, hand in enumerate(h)) for _, h in led]
    assert all(leader == seat for (leader, _), (pips, seat) in zip(led, holders) if pips >= 0)
    assert sum(deal(hd, d)[0] != deal(plain, d)[0] for d in range(40)) > 0


def _highest_double(hand: int) -> int:
    """The pips of the highest double in the tile mask ``hand``, -1 without one."""
    doubles = [a for i, (a, b) in enumerate(STANDARD_TILES) if a == b and hand >> i & 1]
    return max(doubles, default=-1)


def test_the_digest_sees_every_deal() -> None:
    task = TASKS["block-d2-2p-v1"]
    assert deal_digest(task, 10) != deal_digest(task, 11)
    assert deal_digest(task, 10) == deal_digest(task, 10)


@pytest.mark.parametrize("task_id", sorted(PINNED))
def test_deals_are_raw_env_deals(task_id: str) -> None:
    task = TASKS[task_id]
    env = raw_env(**task.env_kwargs())
    for d in (0, 1, task.deals - 1):
        env.reset(seed=task.deal_seed + d)
        assert deal(task, d) == (env.game.leader, tuple(env.game.hands))


def test_unknown_task_names_the_tasks() -> None:
    with pytest.raises(ValueError, match="block-2p-v1.*block-d3-2p-v1"):
        get_task("block-2p")


def test_tasks_own_disjoint_stretches_of_the_held_out_block() -> None:
    stretches = sorted((t.deal_seed, t.deal_seed + t.deals) for t in TASKS.values())
    assert stretches[0][0] >= HELD_OUT_SEED
    for (lo, hi), (next_lo, _) in zip(stretches, stretches[1:]):
        assert hi <= next_lo and hi - lo < SEEDS_PER_TASK
    assert len({t.index for t in TASKS.values()}) == len(TASKS)


def test_training_seeds_lie_below_the_held_out_block() -> None:
    """train.py takes seeds below 2**32, its other ranks' seeds are 32-bit too, and its
    evaluations deal from seeds 10,000 and 1,000,000 upward."""
    assert SEED_LIMIT <= 2**32 < HELD_OUT_SEED
    assert max(rank_seed(SEED_LIMIT - 1, r) for r in range(1, 64)) < 2**32
    assert PERIODIC_EVAL_SEED < FINAL_EVAL_SEED < FINAL_EVAL_SEED + 10**9 < HELD_OUT_SEED
    with pytest.raises(Exception, match="seed"):
        load_config(None, [f"seed={HELD_OUT_SEED}"])


def _held_out_hands(task_id: str) -> set[tuple[int, ...]]:
    task = TASKS[task_id]
    return {deal(task, d)[1] for d in range(task.deals)}


@pytest.mark.parametrize(
    ("task_id", "config"), [("block-2p-v1", "2p"), ("block-partnership-v1", "partnership")]
)
def test_no_training_or_evaluation_deal_is_held_out(task_id: str, config: str) -> None:
    """The deals that train.py's games start from (seeds 0-3 on up to four ranks) and those
    of its periodic and final evaluations are none of the task's held-out deals."""
    held_out = _held_out_hands(task_id)
    cfg = load_config(CONFIGS / f"{config}.yaml", [])
    env = BatchedEnv(cfg.num_envs, auto_pass=True, **game_of(cfg))
    seen = 0
    for seed in range(4):
        for rank in range(4):
            env.reset(seed=rank_seed(seed, rank))
            hands = {tuple(int(x) for x in row) for row in np.asarray(env.snapshot()["hands"])}
            assert not hands & held_out
            seen += len(hands)
    assert seen > 8000
    task = TASKS[task_id]
    evaluation = raw_env(**task.env_kwargs())
    for first in (PERIODIC_EVAL_SEED, FINAL_EVAL_SEED):
        for d in range(1000):
            evaluation.reset(seed=first + d)
            assert tuple(evaluation.game.hands) not in held_out
