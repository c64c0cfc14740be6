"""The engine's fast paths (pip totals by byte tables, individual-play scoring) give the
same numbers as the plain definitions."""

from __future__ import annotations

import random

import pytest

from block_env.config import BlockConfig
from block_env.rules import HandResult, score_hand
from block_env.tiles import PIP_RANGE, iter_tiles, tile_set


@pytest.mark.parametrize("max_pip", PIP_RANGE)
def test_pip_total_equals_the_sum_over_tiles(max_pip: int) -> None:
    ts = tile_set(max_pip)
    rng = random.Random(max_pip)
    masks = [0, ts.all_tiles, *(rng.getrandbits(ts.num_tiles) for _ in range(500))]
    masks += [1 << t for t in range(ts.num_tiles)]
    for mask in masks:
        assert ts.pip_total(mask) == sum(ts.pips[t] for t in iter_tiles(mask))


def _by_teams(config: BlockConfig, hands: tuple[int, ...], domino: int | None) -> HandResult:
    """The scoring rule written over teams (one seat per team in individual play)."""
    pips = tuple(sum(config.tiles.pips[t] for t in iter_tiles(h)) for h in hands)
    teams = config.teams
    team_pips = {t: sum(p for p, tt in zip(pips, teams) if tt == t) for t in sorted(set(teams))}
    if domino is not None:
        win, winner = teams[domino], domino
        gained = sum(v for t, v in team_pips.items() if t != win)
    else:
        lowest = min(team_pips.values())
        lows = [t for t, v in team_pips.items() if v == lowest]
        if len(lows) > 1:
            return HandResult(None, True, pips, (0,) * len(hands))
        win = lows[0]
        gained = sum(v for t, v in team_pips.items() if t != win) - lowest
        winner = teams.index(win)
    return HandResult(winner, domino is None, pips, tuple(gained if t == win else 0 for t in teams))


@pytest.mark.parametrize(("n", "partnership"), [(2, False), (3, False), (4, False), (4, True)])
def test_score_hand_equals_the_team_rule(n: int, partnership: bool) -> None:
    config = BlockConfig(num_players=n, partnership=partnership)
    rng = random.Random(n)
    ties = 0
    for _ in range(2000):
        order = rng.sample(range(28), 28)
        hands = tuple(
            sum(1 << t for t in order[s * 7 : s * 7 + rng.randrange(0, 5)]) for s in range(n)
        )
        for domino in (None, *(s for s in range(n) if hands[s] == 0)):
            got = score_hand(config, hands, domino)
            assert got == _by_teams(config, hands, domino)
            ties += got.winner is None
    assert ties > 0  # tied blocks were exercised
