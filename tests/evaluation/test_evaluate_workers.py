"""Parallel evaluation (``workers=N``, ``--workers N``): the same deals and, for deterministic
agents, the same figures bit for bit as a serial run; reproducible draws for agents with
their own randomness; clear refusals. Each parallel run spawns worker processes (~1 s)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import agents
import block_env.evaluate as ev
from block_env.env import raw_env
from block_env.evaluate import (
    SetupError,
    chunk_bounds,
    chunk_seeds,
    evaluate,
    ladder,
    main,
)
from block_env.evaluation import runner


def _assert_same_figures(serial: ev.EvalResult, parallel: ev.EvalResult) -> None:
    """Everything but the wall time and the ``workers`` config key is identical."""
    a, b = serial.to_dict(), parallel.to_dict()
    a.pop("seconds"), b.pop("seconds")
    assert b["config"].pop("workers") == 2 and "workers" not in a["config"]
    assert a == b
    assert serial.per_deal.keys() == parallel.per_deal.keys()
    for key in serial.per_deal:
        assert np.array_equal(serial.per_deal[key], parallel.per_deal[key]), key


@pytest.mark.parametrize(
    ("specs", "kwargs"),
    [
        (["rules", "greedy"], {"hands": 40}),
        (["block-2p", "rules"], {"hands": 40, "seed": 7}),
        (["rules", "greedy"], {"num_players": 3, "hands": 30, "seed": 3}),
        (["greedy", "rules"], {"episode": "match", "matches": 8, "target_score": 30}),
    ],
    ids=["rules-greedy", "block2p-rules", "3p-field", "matches"],
)
def test_two_workers_give_the_serial_figures_bit_for_bit(specs: list[str], kwargs: dict) -> None:
    serial = evaluate(specs, **kwargs)
    parallel = evaluate(specs, workers=2, **kwargs)
    _assert_same_figures(serial, parallel)


def test_the_shipped_policy_acts_deterministically() -> None:
    """What the bit-for-bit claim rests on: block-2p plays its argmax, so two separately
    loaded copies choose the same action on the same observations, every time."""
    first, second = agents.load("block-2p"), agents.load("block-2p")
    assert first.greedy and second.greedy
    env = raw_env(episode="hand", obs_type=first.obs_type)
    env.reset(seed=5)
    steps = 0
    while not all(env.terminations.values()):
        obs = env.observe(env.agent_selection)
        action = first.act(obs)
        assert action == first.act(obs) == second.act(obs)
        env.step(action)
        steps += 1
    assert steps > 5


def test_agents_with_their_own_randomness_repeat_for_the_same_seed_and_workers() -> None:
    specs = ["pimc:worlds=2", "random"]
    one = evaluate(specs, hands=40, seed=11, workers=2)
    two = evaluate(specs, hands=40, seed=11, workers=2)
    for key in one.per_deal:
        assert np.array_equal(one.per_deal[key], two.per_deal[key]), key
    assert one.stats[0].margin == two.stats[0].margin
    # Seeds come from (seed, chunk index): every chunk and position draws its own stream.
    seeds = [chunk_seeds(11, c, 2) for c in range(len(chunk_bounds(20, 2)))]
    flat = [s for chunk in seeds for s in chunk]
    assert len(set(flat)) == len(flat)
    assert chunk_seeds(11, 3, 2) == seeds[3] and chunk_seeds(12, 3, 2) != seeds[3]


@pytest.mark.parametrize(("deals", "workers"), [(20, 2), (1000, 2), (3, 2), (1, 4), (17, 3)])
def test_chunks_are_contiguous_cover_every_deal_and_are_many(deals: int, workers: int) -> None:
    bounds = chunk_bounds(deals, workers)
    assert bounds[0][0] == 0 and bounds[-1][1] == deals
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
    sizes = [stop - first for first, stop in bounds]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1
    assert len(bounds) == min(deals, workers * ev.CHUNKS_PER_WORKER)


def test_the_progress_bar_advances_chunk_by_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    updates: list[int] = []

    class Bar:
        def update(self, count: int) -> None:
            updates.append(count)

        def close(self) -> None:
            pass

    monkeypatch.setattr(runner, "progress_bar", lambda total, enabled, desc: Bar())
    res = evaluate(["rules", "greedy"], hands=60, workers=2, progress=True)
    assert sum(updates) == res.hands == 60
    assert len(updates) == len(chunk_bounds(res.deals, 2)) == 16


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "2", None])
def test_workers_must_be_an_int_of_at_least_one(bad: Any) -> None:
    with pytest.raises(SetupError, match=r"workers=.* is not allowed: use an int >= 1"):
        evaluate(["rules", "greedy"], hands=4, workers=bad)
    with pytest.raises(SetupError, match=r"use an int >= 1"):
        ladder(["rules", "greedy"], hands=4, workers=bad)


def test_agent_objects_are_refused_with_workers_but_played_serially() -> None:
    from agents.baselines import GreedyAgent

    with pytest.raises(SetupError, match="GreedyAgent is an object: pass spec strings"):
        evaluate(["rules", GreedyAgent()], hands=4, workers=2)
    with pytest.raises(SetupError, match="or use workers=1"):
        ladder(["rules", GreedyAgent()], hands=4, workers=2)
    assert evaluate(["rules", GreedyAgent()], hands=4, workers=1).hands == 4


def test_a_failure_in_a_worker_reaches_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent registered only in this process cannot be built in the workers: the
    workers' error is raised here (no hang, no silent partial result)."""
    monkeypatch.setitem(agents.REGISTRY, "greedy-here-only", "agents.baselines:GreedyAgent")
    assert evaluate(["greedy-here-only", "rules"], hands=4).hands == 4
    with pytest.raises(SetupError, match="greedy-here-only"):
        evaluate(["greedy-here-only", "rules"], hands=40, workers=2)


def test_ladder_with_workers_gives_the_serial_ladder() -> None:
    specs = ["greedy", "rules", "omniscient"]
    serial = ladder(specs, hands=20, bootstrap=20).to_dict()
    parallel = ladder(specs, hands=20, bootstrap=20, workers=2).to_dict()
    serial.pop("seconds"), parallel.pop("seconds")
    assert parallel["config"].pop("workers") == 2 and "workers" not in serial["config"]
    assert serial == parallel


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--workers", "0"], "--workers 0: use an integer >= 1"),
        (["--workers", "-3"], "--workers -3: use an integer >= 1"),
        (["--workers", "two"], "argument --workers: invalid int value"),
        (["--ladder", "--workers", "0"], "--workers 0: use an integer >= 1"),
    ],
)
def test_cli_refuses_bad_workers_in_one_line(capsys, argv: list[str], needle: str) -> None:
    assert main(["rules", "greedy", "--hands", "4", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_cli_workers_writes_the_serial_json_plus_workers(tmp_path: Path, capsys) -> None:
    common = ["rules", "greedy", "--hands", "40", "--seed", "4", "--no-progress", "--json"]
    assert main([*common, str(tmp_path / "one.json")]) == 0
    assert main([*common, str(tmp_path / "two.json"), "--workers", "2"]) == 0
    one = json.loads((tmp_path / "one.json").read_text())
    two = json.loads((tmp_path / "two.json").read_text())
    one.pop("seconds"), two.pop("seconds")
    assert "workers" not in one["config"] and two["config"].pop("workers") == 2
    assert one == two


def test_record_dir_with_workers_holds_the_serial_games(tmp_path: Path) -> None:
    base = ["rules", "greedy", "--hands", "20", "--no-progress", "--record"]
    assert main([*base, str(tmp_path / "serial")]) == 0
    assert main([*base, str(tmp_path / "parallel"), "--workers", "2"]) == 0
    serial = sorted(p.name for p in (tmp_path / "serial").iterdir())
    parallel = sorted(p.name for p in (tmp_path / "parallel").iterdir())
    assert len(serial) == 20 and serial == parallel  # deal00000_seating0.json ... per worker
    for name in serial:
        a = json.loads((tmp_path / "serial" / name).read_text())
        b = json.loads((tmp_path / "parallel" / name).read_text())
        assert a == b, name
