"""``rules_alone``: a share of the games against the rule bot is played the other way round
(the bot alone in one seat, the learner in all others), so training sees both lineups of a
both-lineups evaluation."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import tiny_collector

from block_env.training import rollout
from block_env.training.config import load_config

SMOKE = Path(__file__).resolve().parents[2] / "configs" / "smoke.yaml"


def collector(tmp_path: Path, share: float, players: int = 4) -> rollout.Collector:
    return tiny_collector(
        tmp_path / "run",
        [
            f"num_players={players}",
            "num_envs=400",
            "opponents={rules: 0.5, random: 0.5}",
            f"rules_alone={share}",
        ],
    )


@pytest.mark.parametrize("players", [3, 4])
def test_a_share_of_rule_bot_games_has_the_bot_alone(tmp_path: Path, players: int) -> None:
    c = collector(tmp_path, 0.5, players)
    learners = c.learn.sum(1)
    rules = c.kind == c.kinds.index("rules")
    alone = rules & (learners == players - 1)
    assert set(learners[~rules].tolist()) == {1}  # random games: one learner, as before
    assert set(learners[rules].tolist()) == {1, players - 1}
    assert 0.35 < alone.sum() / rules.sum() < 0.65  # about half of the 200 rule-bot games
    # the bot's seat rotates like the learner's: every seat holds it somewhere
    assert set((~c.learn[alone]).argmax(1).tolist()) == set(range(players))
    batch = c.collect()
    assert len(batch.actions) > 0


def test_no_share_keeps_one_learner_per_game(tmp_path: Path) -> None:
    assert set(collector(tmp_path, 0.0).learn.sum(1).tolist()) == {1}
    assert set(collector(tmp_path, 1.0).learn.sum(1).tolist()) == {1, 3}


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (["rules_alone=1.5"], "rules_alone.*in \\[0, 1\\]"),
        (["rules_alone=-0.1"], "rules_alone.*in \\[0, 1\\]"),
        (["num_players=4", "partnership=true", "rules_alone=0.3"], "rules_alone.*partner"),
        (["algo=sb3", "rules_alone=0.3"], "rules_alone.*algo=ppo"),
    ],
)
def test_bad_shares_are_refused(overrides: list[str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        load_config(None, overrides)
