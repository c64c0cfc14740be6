"""``bot_partner``: in partnership training, a share of the hands against an opponent kind
other than the policy itself has that opponent play the learner's partner too (ad hoc
teamwork: the policy learns to help partners other than itself); the partner seat then acts
for the bot, learns nothing, and the learner's seats stay a team."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import tiny_collector

from block_env.training import rollout
from block_env.training.config import load_config
from block_env.training.errors import ConfigError

SMOKE = Path(__file__).resolve().parents[2] / "configs" / "smoke.yaml"


def collector(tmp_path: Path, share: float) -> rollout.Collector:
    return tiny_collector(
        tmp_path / "run",
        [
            "num_players=4",
            "partnership=true",
            "num_envs=600",
            "opponents={self: 0.25, rules: 0.5, greedy: 0.25}",
            f"bot_partner={share}",
        ],
    )


def test_a_share_of_bot_games_gives_the_learner_a_bot_partner(tmp_path: Path) -> None:
    c = collector(tmp_path, 0.5)
    learners = c.learn.sum(1)
    selfplay = c.kind == c.kinds.index("self")
    assert set(learners[selfplay].tolist()) == {4}  # self-play: every seat learns
    bots = ~selfplay
    assert set(learners[bots].tolist()) == {1, 2}
    alone = bots & (learners == 1)
    assert 0.4 < alone.sum() / bots.sum() < 0.6  # about half of the ~450 bot games
    paired = bots & (learners == 2)
    seat = c.learn[paired].argmax(1)  # the lower learning seat; its partner learns too
    assert c.learn[paired][np.arange(paired.sum()), seat + 2].all()
    # the lone learner's seat rotates over all four seats
    assert set(c.learn[alone].argmax(1).tolist()) == {0, 1, 2, 3}
    batch = c.collect()
    assert len(batch.actions) > 0


def test_no_share_keeps_the_team_of_two_learners(tmp_path: Path) -> None:
    c = collector(tmp_path, 0.0)
    bots = c.kind != c.kinds.index("self")
    assert set(c.learn[bots].sum(1).tolist()) == {2}
    assert set(collector(tmp_path, 1.0).learn[bots].sum(1).tolist()) == {1}


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (["bot_partner=1.5"], "bot_partner=1.5 is not allowed: use a number in"),
        (["bot_partner=0.5"], "a partner exists only with partnership=true"),
    ],
)
def test_bad_values_are_refused_naming_the_key(overrides: list[str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load_config(SMOKE, overrides)
