"""The docs' tables of results, rendered from the JSON files in ``docs/results/``.

Why: a figure quoted in the docs must be the figure in its JSON file. Each generated table
sits in its page between two HTML comments (invisible on the site and on GitHub)::

    <!-- results-table: strength-3p -->

    | lone seat vs field | ... |

    <!-- /results-table -->

and ``tests/repo/test_results_manifest.py`` checks that every block equals what this script
renders. After changing a result file or a table, rewrite the blocks in place::

    python tools/results_tables.py --write    # rewrite every block in the pages
    python tools/results_tables.py --check    # exit status 1 if a block differs
    python tools/results_tables.py strength-3p    # print one table
    python tools/results_tables.py            # list the tables and the pages that hold them

The files are named by what they hold (``docs/results/manifest.csv`` lists them with the
command that reproduces each); the table functions below name the files they read.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
sys.path.insert(0, str(Path(__file__).resolve().parent))

import curve_table  # noqa: E402
import ladder_tables  # noqa: E402

from block_env.benchmark.tasks import shipped_name  # noqa: E402

MINUS = "\u2212"
BLOCK_RE = re.compile(
    r"(<!-- results-table: (?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /results-table -->)",
    re.S,
)

# ------------------------------------------------------------------ reading and formatting


@cache
def load(name: str) -> dict[str, Any]:
    """The JSON file ``docs/results/<name>``."""
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


@cache
def _shipped_as() -> dict[str, str]:
    """Policy id -> the name its file ships under now (docs/results/policies.csv)."""
    with open(RESULTS / "policies.csv", newline="", encoding="utf-8") as fh:
        return {row["id"]: row["shipped_as"] for row in csv.DictReader(fh) if row["shipped_as"]}


def current_id(agent: str) -> str:
    """``agent``'s id under the name its file ships under now (``block-partnership@f018eba4``
    -> ``block-partnership-stage1@f018eba4``), so that one file is one row whatever name a
    result recorded; other agents as given."""
    name = _shipped_as().get(agent)
    return f"{name}@{agent.rsplit('@', 1)[1]}" if name else agent


def signed(x: float, digits: int = 2) -> str:
    """``+0.27`` / ``−0.03`` (a true minus sign, as the pages print it)."""
    return f"{x:+.{digits}f}".replace("-", MINUS)


def ci(mean: float, lo: float, hi: float) -> str:
    """``+0.27 [+0.15, +0.40]``."""
    return f"{signed(mean)} [{signed(lo)}, {signed(hi)}]"


def estimate(m: dict[str, float]) -> str:
    """``ci`` of an estimate stored as ``mean``, ``lo``, ``hi``."""
    return ci(m["mean"], m["lo"], m["hi"])


def bold(text: str, on: bool) -> str:
    """``**text**`` when ``on``."""
    return f"**{text}**" if on else text


def pct(x: float) -> str:
    """``50.3%``."""
    return f"{100 * x:.1f}%"


def margin(name: str, seat: int = 0) -> str:
    """Agent ``seat``'s margin [95% CI] in the evaluation file ``name``."""
    m = load(name)["stats"][seat]["margin"]
    return estimate(m)


def hands_won(name: str) -> str:
    """``50.3% vs 47.6%``: both agents' shares of the hands won."""
    s = load(name)["stats"]
    return f"{pct(s[0]['hand_win']['mean'])} vs {pct(s[1]['hand_win']['mean'])}"


def hands(name: str) -> int:
    """Hands played in the evaluation file ``name``."""
    return int(load(name)["hands"])


def seed(name: str) -> int:
    """First deal seed of the evaluation file ``name``."""
    return int(load(name)["config"]["seed"])


def pooled(names: list[str], seat: int = 0) -> str:
    """Several evaluations of one pair on disjoint deals: the means averaged, their
    standard errors combined (each recovered from its normal CI)."""
    return pooled_estimates([load(n)["stats"][seat]["margin"] for n in names])


def pooled_row(label: str, names: list[str]) -> tuple[str, str, str]:
    """A headline row pooled over the sets ``names``: label with the set count, hands, margin."""
    return f"{label} ({len(names)} seeds pooled)", f"{sum(map(hands, names)):,}", pooled(names)


def pooled_estimates(ms: list[dict[str, float]]) -> str:
    """``pooled`` of estimates (``mean``, ``lo``, ``hi``) of equally many hands each."""
    mean = sum(m["mean"] for m in ms) / len(ms)
    half = math.sqrt(sum(((m["hi"] - m["lo"]) / 2) ** 2 for m in ms)) / len(ms)
    return ci(mean, mean - half, mean + half)


def training_final(name: str, opponent: str) -> str:
    """A training run's final evaluation against ``opponent`` (its ``eval.json``)."""
    f = load(name)["final"][opponent]
    return ci(f["margin"], f["lo"], f["hi"])


def minutes(name: str) -> str:
    """A training run's training time in minutes, ``15.2``."""
    return f"{load(name)['train_wall_s'] / 60:.1f}"


def table(head: list[str], align: list[str], rows: list[list[str]]) -> str:
    """A Markdown table; ``align`` holds ``---`` or ``---:`` per column."""
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def lone_field_rows(rows: list[tuple[str, str, bool]], players: int | None) -> list[list[str]]:
    """Rows of a lineup table: (label, file, bold lone margin) -> [players,] label, the lone
    seat's margin, the field seats' margin."""
    out = []
    for label, name, strong in rows:
        cells = [label, bold(margin(name, 0), strong), margin(name, 1)]
        out.append(([str(players)] if players else []) + cells)
    return out


def recorded(kind: str, data: dict[str, Any]) -> dict[str, str]:
    """What a result file itself records, spelt as in the manifest's columns: ``labels``
    (the agents' names in the file, ``;``-separated) and, where the file has them,
    ``players``, ``seed`` and ``hands``. ``kind`` is the manifest's: evaluate, ladder,
    crossplay, leaderboard, training, nashconv, scaling, benchmark or exploit."""
    if kind == "leaderboard":
        from block_env.benchmark.tasks import get_task

        out = {"labels": [data["algorithm"]["name"]], "seed": data["seed"]}
        out["players"] = get_task(data["task"]["id"]).num_players
    elif kind == "crossplay":
        out = {"labels": data["agents"], "players": 4, "seed": data["config"]["seed"]}
        out["hands"] = data["hands_per_pair"]
    elif kind in ("evaluate", "ladder"):
        c = data["config"]
        hands_ = data["hands"] if kind == "evaluate" else data["hands_per_pair"]
        out = {"labels": data["agents"], "players": c["num_players"], "seed": c["seed"]}
        out["hands"] = hands_
    elif kind == "training":
        c, final = data["config"], data["final"]
        (hands_,) = {f["hands"] for f in final.values()}
        out = {"labels": ["policy", *final], "players": c["num_players"], "seed": c["seed"]}
        out["hands"] = hands_
    elif kind == "nashconv":
        out = {"labels": [r["method"] for r in data["rows"]]}
        out["players"] = data["params"]["num_players"]
    elif kind == "scaling":
        out = {"labels": []}
    elif kind in ("benchmark", "exploit"):
        game = data["task"]["definition"]["game"]
        out = {"labels": [data["agent"]["id"]], "players": game["num_players"]}
        out["seed"] = data["deal_set"]["first_seed"]
        if kind == "exploit":
            out["hands"] = data["hands"]
    else:
        raise ValueError(f"unknown kind of result {kind!r}")
    return {k: ";".join(v) if k == "labels" else str(v) for k, v in out.items()}


# ------------------------------------------------------------------ the result files

P2 = "block-2p@82065c70"  # the information-state block-2p
PL = "block-2p-plain@7779b4d6"
S3, F3 = "block-3p@8760d310", "block-3p@e47588b8"  # stage 1, fine-tuned (shipped)
S4, F4 = "block-4p@ff4e549b", "block-4p@34e65c11"  # stage 1, fine-tuned (shipped)
SEARCH = "block-2p-search@7779b4d6"
BP = "block-partnership@f018eba4"  # block-partnership's first stage, now block-partnership-stage1
PF4 = "partnership_from4p@f018eba4"  # the same file, evaluated from docs/experiments
BP2 = "partnership_long@6e8217f3"  # its second stage, block-partnership (from docs/experiments)
BPN = "block-partnership@6e8217f3"  # the same file, evaluated as the shipped block-partnership
BPS = "block-partnership@0f2fe29b"  # the first block-partnership, now block-partnership-scratch
BP_SEARCH = "block-partnership-search@f018eba4"  # PIMC-20's worlds guided by the first stage


def ev(players: int, a: str, b: str, seed_: int, hands_: int) -> str:
    """The file name of an evaluation: ``<n>p/<a>_vs_<b>_seed<seed>_<hands>h.json``."""
    return f"{players}p/{a}_vs_{b}_seed{seed_}_{hands_}h.json"


# block-4p alone against three rule bots on four fresh 40,000-hand sets, and the other lineup
F4_SEEDS = (5000000, 9000000, 11000000, 13000000)
F4_RULES = [ev(4, F4, "rules", seed, 40000) for seed in F4_SEEDS]
RULES_F4 = [ev(4, "rules", F4, seed, 40000) for seed in F4_SEEDS]


TTS = f"training/2p_1rank_mb1024_lr3e-4_seed0_30M_eval10x2000h_{PL}.json"
RUNS = {
    "1rank": "training/2p_1rank_mb1024_lr3e-4_seed0_30M_eval25x1000h.json",
    "2ranks": "training/2p_2ranks_mb1024_lr3e-4_seed0_30M_eval25x1000h.json",
    "2ranks_mb4096": "training/2p_2ranks_mb4096_lr1e-3_seed0_30M_eval25x1000h.json",
    "2ranks_mb4096_seed1": "training/2p_2ranks_mb4096_lr1e-3_seed1_30M_eval25x1000h.json",
    "default_1rank": "training/2p_1rank_e1024x32_mb4096_lr1e-3_seed0_30M_eval25x1000h.json",
    "default_2ranks": "training/2p_2ranks_e1024x32_mb4096_lr1e-3_seed0_30M_eval25x1000h.json",
    # the same command on a fresh clone of a later commit: the README's figure
    "default_now": "training/2p_2ranks_e1024x32_mb4096_lr1e-3_seed0_30M_eval25x1000h_e1eedfa.json",
}
SCALING = "scaling/bench_scaling_2p_e1024x32_mb4096_lr1e-3_2cpu.json"  # the default run
LADDERS = {
    2: f"ladders/ladder_2p_{PL}_seed0_1000h.json",
    3: f"ladders/ladder_3p_{S3}_seed0_402h.json",
    4: f"ladders/ladder_4p_{F4}_seed0_300h.json",
    "partnership": f"ladders/ladder_partnership_{BPN}_seed133000000_400h.json",
}
VARIANT_LADDERS = {  # the round robins where the highest double opens (hd) and over whole matches
    "2p-hd": f"ladders/ladder_2p_hd_{P2}_seed98000000_1000h.json",
    "2p-match": f"ladders/ladder_2p_match_{P2}_seed99000000_200m.json",
    "3p-hd": f"ladders/ladder_3p_hd_{F3}_seed100000000_3000h.json",
    "3p-match": f"ladders/ladder_3p_match_{F3}_seed103000000_300m.json",
    "4p-hd": f"ladders/ladder_4p_hd_{F4}_seed101000000_2000h.json",
    "4p-match": f"ladders/ladder_4p_match_{F4}_seed104000000_300m.json",
    "partnership-hd": f"ladders/ladder_partnership_hd_{BPN}_seed134000000_400h.json",
    "partnership-match": f"ladders/ladder_partnership_match_{BPN}_seed135000000_60m.json",
}
LADDERS.update(VARIANT_LADDERS)
INFOSTATE = [  # label, file, bold margin
    ("pimc-100", ev(2, P2, "pimc-100", 15000000, 8000), True),
    ("pimc-100", ev(2, P2, "pimc-100", 18000000, 8000), True),
    ("pimc-20", ev(2, P2, "pimc-20", 17000000, 2000), False),
    ("block-2p-plain", ev(2, P2, PL, 13500000, 8000), False),
    ("rules", ev(2, P2, "rules", 16000000, 4000), False),
    ("greedy", ev(2, P2, "greedy", 16000000, 4000), False),
    ("random", ev(2, P2, "random", 16000000, 4000), False),
]
PIMC16K = [ev(4, F4, "pimc-20", s, 8000) for s in (6000000, 7000000)]
# headlines pooled over several fresh sets of equal size (label, files)
P2_RULES = [ev(2, P2, "rules", s, 40000) for s in (61000000, 62000000, 63000000, 64000000)]
F3_RULES_SEEDS = (65000000, 66000000, 67000000, 68000000)
F3_PIMC_SEEDS = (2000000, 69000000, 70000000, 71000000)
POOLED_3P = [
    ("block-3p vs two rule bots", [ev(3, F3, "rules", s, 39999) for s in F3_RULES_SEEDS]),
    ("a rule bot vs two block-3p", [ev(3, "rules", F3, s, 39999) for s in F3_RULES_SEEDS]),
    ("block-3p vs two PIMC-20", [ev(3, F3, "pimc-20", s, 8001) for s in F3_PIMC_SEEDS]),
]

# ------------------------------------------------------------------ the tables


def _infostate(rows: list[tuple[str, str, bool]]) -> str:
    head = ["block-2p (information state) vs", "hands (seed)", "points per hand [95% CI]"]
    return table(
        [*head, "hands won"],
        ["---"] * 4,
        [
            [label, f"{hands(f):,} ({seed(f):,})", bold(margin(f), strong), hands_won(f)]
            for label, f, strong in rows
        ],
    )


def strength_2p_infostate() -> str:
    """docs/strength.md: block-2p against every opponent on fresh deals."""
    return _infostate(INFOSTATE)


def ladder_2p_infostate() -> str:
    """docs/ladder.md: block-2p's pairs on fresh deals (the bots but greedy and random)."""
    return _infostate(INFOSTATE[:5])


def strength_2p_plain() -> str:
    """docs/strength.md: block-2p-plain on the seed-0 deals and in its run's final test."""
    rows = [
        (
            "a policy of the default run without the teacher",
            ev(2, PL, "block-2p@77f220b0", 0, 2000),
        ),
        ("pimc-20", ev(2, PL, "pimc-20", 0, 2000)),
        ("pimc-100", ev(2, PL, "pimc-100", 0, 2000)),
        ("rules (the run's final evaluation, 4,000 hands)", ev(2, PL, "rules", 1000000, 4000)),
    ]
    return table(
        ["block-2p-plain vs", "points per hand [95% CI]", "hands won"],
        ["---"] * 3,
        [[label, margin(f), hands_won(f)] for label, f in rows],
    )


def strength_3p() -> str:
    """docs/strength.md: block-3p in both lineups on fresh deals."""
    rows = [
        ("block-3p vs two rule bots", ev(3, F3, "rules", 1000000, 8001)),
        ("a rule bot vs two block-3p", ev(3, "rules", F3, 1000000, 8001)),
        ("block-3p vs two PIMC-20", ev(3, F3, "pimc-20", 2000000, 8001)),
        ("a PIMC-20 vs two block-3p", ev(3, "pimc-20", F3, 2000000, 8001)),
    ]
    return table(
        ["lone seat vs field", "lone seat's points per hand [95% CI]"],
        ["---"] * 2,
        [[label, margin(f)] for label, f in rows],
    )


def pooled_table(rows: list[tuple[str, list[str]]]) -> str:
    """Each row's sets one by one (seed: margin), then all of them pooled."""
    out = []
    for label, names in rows:
        sets = "; ".join(f"{seed(n):,}: {margin(n)}" for n in names)
        total = f"{sum(map(hands, names)):,} ({len(names)} × {hands(names[0]):,})"
        out.append([label, total, sets, bold(pooled(names), True)])
    head = ["lone seat vs field", "hands (sets × hands)", "each set (seed: margin)"]
    return table([*head, "pooled [95% CI]"], ["---", "---:", "---", "---"], out)


def strength_2p_pooled() -> str:
    """docs/strength.md: block-2p against the rule bot on four fresh sets."""
    return pooled_table([("block-2p vs the rule bot", P2_RULES)])


def strength_3p_pooled() -> str:
    """docs/strength.md: block-3p in both lineups on four fresh sets each."""
    return pooled_table(POOLED_3P)


def strength_4p_first() -> str:
    """docs/strength.md: block-4p and its stage 1 on the first fresh deals."""
    rows = [  # label, lone seat, the field's agent, seed, hands, bold
        ("block-4p vs three rule bots", "lone", "rules", 3000000, 8000, True),
        ("a rule bot vs three block-4p", "field", "rules", 3000000, 8000, False),
        ("block-4p vs three PIMC-20", "lone", "pimc-20", 4000000, 2000, False),
        ("a PIMC-20 vs three block-4p", "field", "pimc-20", 4000000, 2000, True),
    ]
    out = []
    for label, where, bot, s, h, strong in rows:
        new, old = [
            ev(4, policy, bot, s, h) if where == "lone" else ev(4, bot, policy, s, h)
            for policy in (F4, S4)
        ]
        out.append([label, bold(margin(new), strong), margin(old)])
    head = ["lone seat vs field", "lone seat's points per hand [95% CI]"]
    return table([*head, "the first run, before fine-tuning"], ["---"] * 3, out)


def strength_4p_summary() -> str:
    """docs/strength.md: block-4p on the largest fresh checks of each lineup."""
    rows = [
        pooled_row("block-4p vs three rule bots", F4_RULES),
        pooled_row("a rule bot vs three block-4p", RULES_F4),
        ("block-4p vs three PIMC-20", f"{sum(map(hands, PIMC16K)):,}", pooled(PIMC16K)),
        ("a PIMC-20 vs three block-4p", "2,000", margin(ev(4, "pimc-20", F4, 4000000, 2000))),
    ]
    return table(
        [
            "lone seat vs field (deals far from those it was chosen on)",
            "hands",
            "lone seat's points per hand [95% CI]",
        ],
        ["---", "---:", "---"],
        [[label, h, bold(m, True)] for label, h, m in rows],
    )


def lineup_table(*groups: tuple[list, int], deals: str = "") -> str:
    """A lone-seat-vs-field table of (rows, players) groups; `deals` names the deals after the
    lineup column's title."""
    head = ["players", f"lone seat vs field{deals}", "lone seat's margin", "field seats' margin"]
    return table(head, ["---"] * 4, [r for rows, n in groups for r in lone_field_rows(rows, n)])


def ladder_lineups_seed0() -> str:
    """docs/ladder.md: the 2026-12-01 block-3p, its stage 1 and the 4p stage 1, seed 0."""
    r3 = [
        ("block-3p vs rules", ev(3, F3, "rules", 0, 2001), False),
        ("rules vs block-3p", ev(3, "rules", F3, 0, 2001), False),
        ("block-3p vs pimc-20", ev(3, F3, "pimc-20", 0, 2001), False),
        ("pimc-20 vs block-3p", ev(3, "pimc-20", F3, 0, 2001), False),
        ("block-3p vs stage 1", ev(3, F3, S3, 0, 2001), False),
        ("stage 1 vs block-3p", ev(3, S3, F3, 0, 2001), True),
        ("stage 1 vs rules", ev(3, S3, "rules", 0, 2001), False),
        ("rules vs stage 1", ev(3, "rules", S3, 0, 2001), False),
        ("stage 1 vs pimc-20", ev(3, S3, "pimc-20", 0, 2001), False),
        ("pimc-20 vs stage 1", ev(3, "pimc-20", S3, 0, 2001), False),
    ]
    r4 = [
        ("block-4p vs rules", ev(4, S4, "rules", 0, 2000), False),
        ("rules vs block-4p", ev(4, "rules", S4, 0, 2000), False),
    ]
    return lineup_table((r3, 3), (r4, 4))


def ladder_3p_seed9() -> str:
    """docs/ladder.md: block-3p on the seed-9 deals (which overlap its selection deals)."""
    rows = [
        ("block-3p vs rules", ev(3, F3, "rules", 9, 8001), False),
        ("rules vs block-3p", ev(3, "rules", F3, 9, 8001), False),
        ("block-3p vs pimc-20", ev(3, F3, "pimc-20", 9, 8001), False),
        ("pimc-20 vs block-3p", ev(3, "pimc-20", F3, 9, 8001), False),
    ]
    return lineup_table((rows, 3), deals=" (8,001 hands, seed 9: overlaps the selection deals)")


def ladder_3p_fresh() -> str:
    """docs/ladder.md: block-3p in both lineups on fresh deals."""
    rows = [
        ("block-3p vs rules", ev(3, F3, "rules", 1000000, 8001), True),
        ("rules vs block-3p", ev(3, "rules", F3, 1000000, 8001), True),
        ("block-3p vs pimc-20", ev(3, F3, "pimc-20", 2000000, 8001), True),
        ("pimc-20 vs block-3p", ev(3, "pimc-20", F3, 2000000, 8001), True),
    ]
    return lineup_table((rows, 3), deals=" (8,001 fresh hands)")


def ladder_4p_fresh() -> str:
    """docs/ladder.md: the fine-tuned block-4p and its stage 1 on the first fresh deals."""
    rows = [
        ("block-4p vs rules", ev(4, F4, "rules", 3000000, 8000), True),
        ("rules vs block-4p", ev(4, "rules", F4, 3000000, 8000), False),
        ("block-4p vs pimc-20", ev(4, F4, "pimc-20", 4000000, 2000), False),
        ("pimc-20 vs block-4p", ev(4, "pimc-20", F4, 4000000, 2000), True),
        ("stage 1 vs rules", ev(4, S4, "rules", 3000000, 8000), False),
        ("rules vs stage 1", ev(4, "rules", S4, 3000000, 8000), False),
        ("stage 1 vs pimc-20", ev(4, S4, "pimc-20", 4000000, 2000), False),
        ("pimc-20 vs stage 1", ev(4, "pimc-20", S4, 4000000, 2000), False),
    ]
    return lineup_table((rows, 4))


def ladder_4p_fresh40k() -> str:
    """docs/ladder.md: block-4p and its stage 1 against the rule bot, 40,000 hands."""
    rows = [
        ("block-4p vs rules", ev(4, F4, "rules", 5000000, 40000), True),
        ("rules vs block-4p", ev(4, "rules", F4, 5000000, 40000), True),
        ("stage 1 vs rules", ev(4, S4, "rules", 5000000, 40000), False),
        ("rules vs stage 1", ev(4, "rules", S4, 5000000, 40000), False),
    ]
    return lineup_table((rows, 4), deals=" (40,000 fresh hands)")


def ladder_4p_pimc16k() -> str:
    """docs/ladder.md: block-4p alone against three PIMC-20 on two sets of fresh deals."""
    rows = [
        [
            "4",
            f"block-4p vs pimc-20, seed {seed(f):,}",
            f"{hands(f):,}",
            bold(margin(f, 0), True),
            margin(f, 1),
        ]
        for f in PIMC16K
    ]
    rows.append(
        [
            "4",
            "both (means averaged, standard errors combined)",
            f"{sum(map(hands, PIMC16K)):,}",
            bold(pooled(PIMC16K), True),
            "",
        ]
    )
    head = ["players", "lone seat vs field", "hands", "lone seat's margin", "field seats' margin"]
    lines = table(head, ["---", "---", "---:", "---", "---"], rows).splitlines()
    lines[-1] = lines[-1].replace("|  |", "| |")  # the empty last cell, as typed
    return "\n".join(lines)


def ladder_2p_search() -> str:
    """docs/ladder.md: block-2p-search and its network on fresh deals."""
    rows = [
        ("block-2p-search vs PIMC-100", ev(2, SEARCH, "pimc-100", 11000000, 4000)),
        (
            "block-2p-plain (network alone) vs PIMC-100, same deals",
            ev(2, PL, "pimc-100", 11000000, 4000),
        ),
        ("block-2p-search vs block-2p-plain", ev(2, SEARCH, PL, 12000000, 4000)),
    ]
    return table(
        ["4,000 hands (2,000 deals × 2 seatings)", "points per hand [95% CI]", "hands won"],
        ["---"] * 3,
        [[label, margin(f), hands_won(f)] for label, f in rows],
    )


def _ladder(players: int | str, names: dict[str, str]) -> str:
    data = dict(load(LADDERS[players]))
    data["agents"] = [names.get(a, a) for a in data["agents"]]
    return ladder_tables.render(data)


def ladder_2p() -> str:
    """docs/ladder.md: the 2-player round robin (its block-2p is block-2p-plain)."""
    return _ladder(2, {"block-2p": "block-2p-plain"})


def ladder_3p() -> str:
    """docs/ladder.md: the 3-player round robin (its block-3p is stage 1)."""
    return _ladder(3, {})


def ladder_4p() -> str:
    """docs/ladder.md: the 4-player round robin (the fine-tuned block-4p)."""
    return _ladder(4, {})


def ladder_partnership() -> str:
    """docs/ladder.md: the partnership round robin, team against team on fresh deals."""
    return _ladder("partnership", {})


def ladder_variant(key: str) -> str:
    """docs/ladder.md: a round robin where the highest double opens, or over whole matches."""
    return _ladder(key, {"docs/experiments/match_2p.pt": "match_2p"})


def policies_time_to_strength() -> str:
    """docs/policies.md: block-2p-plain's run, every 6th periodic evaluation."""
    history = load(TTS)["history"]
    opponents = list(history[0]["eval"])
    head = ["minutes", "steps", *(f"vs {o}" for o in opponents)]
    lines = table(head, ["---:", "---:"] + ["---"] * len(opponents), []).splitlines()
    lines += [row.replace("-", MINUS) for row in curve_table.rows_of(history, every=6)]
    return "\n".join(lines)


def policies_final_evaluation() -> str:
    """docs/policies.md: the final evaluation of block-2p-plain's run."""
    final = load(TTS)["final"]
    rules = load(ev(2, PL, "rules", 1000000, 4000))["stats"][1]["hand_win"]["mean"]
    rows = []
    for opponent in ("random", "greedy", "rules"):
        won = pct(final[opponent]["hand_win"])
        if opponent == "rules":  # the rule bot's share, from the same deals played again
            won += f" (rules {pct(rules)})"
        rows.append([opponent, training_final(TTS, opponent), won])
    return table(["policy vs", "points per hand [95% CI]", "hands won"], ["---"] * 3, rows)


def distributed_world_size() -> str:
    """docs/distributed.md: the default run on one and two ranks, and the runs before it."""
    rows = [
        ("default, 1 rank", RUNS["default_1rank"], "beside one-core jobs"),
        ("default, 2 ranks", RUNS["default_2ranks"], "beside light work"),
        ("the same, on a fresh clone of e1eedfa", RUNS["default_now"], "beside light work"),
        ("before: 512 × 64, minibatch 1024, lr 0.0003, 1 rank", RUNS["1rank"], "beside a run"),
        ("before, 2 ranks", RUNS["2ranks"], "alone"),
        ("before, 2 ranks, `minibatch_size=4096 lr=0.001`", RUNS["2ranks_mb4096"], "alone"),
        ("the same, `seed=1`", RUNS["2ranks_mb4096_seed1"], "alone"),
    ]
    out = [
        [label, *(training_final(f, o) for o in ("random", "greedy", "rules"))]
        + [f"{minutes(f)} min, {remark}"]
        for label, f, remark in rows
    ]
    head = ["run", "vs random", "vs greedy", "vs rules", "training time"]
    return table(head, ["---"] * 5, out)


def distributed_scaling() -> str:
    """docs/distributed.md: agent-steps/s on one and two ranks of the 2-core CPU."""
    rows = []
    for r in load(SCALING)["rows"]:
        lo, hi = r["ratio_range"]
        ratio = f"{r['ratio']:.2f}×"
        if r["ranks"] > 1:
            ratio = f"**{ratio}** ({lo:.2f}–{hi:.2f})"
        rows.append(
            [
                str(r["ranks"]),
                f"{r['steps_per_s']:,.0f}",
                ratio,
                f"{100 * r['efficiency']:.0f}%",
            ]
        )
    head = ["ranks", "agent-steps/s", "ratio (range over rounds)", "efficiency"]
    return table(head, ["---:", "---:", "---", "---:"], rows)


D3_NASHCONV = "nashconv/nashconv_n3k2_2p_tiny_n3k2@ebb22e6f.json"
D3_EXPLOIT = [  # label, the NashConv table's method, the exploit file
    ("uniform random", "uniform random", "exploit/block-d3-2p-v1/random_steps5000000.json"),
    ("greedy", "greedy", "exploit/block-d3-2p-v1/greedy_steps5000000.json"),
    ("rules", "rules", "exploit/block-d3-2p-v1/rules_steps5000000.json"),
    (
        "trained PPO policy (softmax)",
        "trained (tiny_n3k2.pt)",
        "exploit/block-d3-2p-v1/tiny_n3k2@ebb22e6f-softmax_steps5000000.json",
    ),
]


def benchmark_exploit_d3() -> str:
    """docs/benchmark.md: the approximate best response against the exact value on
    double-three (NashConv / 2 per hand, OpenSpiel)."""
    exact = {r["method"]: r["nash_conv"] for r in load(D3_NASHCONV)["rows"]}
    rows = []
    for label, method, name in D3_EXPLOIT:
        data, truth = load(name), exact[method] / 2
        bound, (lo, hi) = data["exploitability_lower_bound"], data["ci95"]
        rows.append(
            [
                label,
                f"{exact[method]:.4f}",
                f"{truth:.4f}",
                f"{signed(bound, 3)} [{signed(lo, 3)}, {signed(hi, 3)}]",
                f"{100 * bound / truth:.0f}%",
                "yes" if lo <= truth else "**no**",
                f"{data['steps'] / 1e6:.0f}M, {data['train_wall_s'] / 60:.1f} min",
            ]
        )
    head = ["agent", "NashConv", "NashConv / 2", "lower bound [95% CI]", "of exact"]
    head += ["CI reaches exact", "training"]
    return table(head, ["---", "---:", "---:", "---", "---:", "---", "---"], rows)


BENCH_VARIANTS = {  # table name -> [(column label, file)]: the agents scored on one task
    f"benchmark-{n}p{form}": [
        (f"block-{n}p", f"benchmark/block-{n}p{form}-v1/{net}.json"),
        ("rules", f"benchmark/block-{n}p{form}-v1/rules.json"),
    ]
    for n, net in ((2, P2), (3, F3), (4, F4))
    for form in ("", "-hd", "-match")
}
BENCH_VARIANTS["benchmark-2p-match"] = [  # block-2p was not scored there; the match-aware run was
    ("match_2p (match-aware, not shipped)", "benchmark/block-2p-match-v1/match_2p@d23f0a56.json"),
    ("rules", "benchmark/block-2p-match-v1/rules.json"),
]
for form in ("", "-hd", "-match"):
    BENCH_VARIANTS[f"benchmark-partnership{form}"] = [
        ("block-partnership", f"benchmark/block-partnership{form}-v1/{BPN}.json"),
        ("block-partnership-stage1", f"benchmark/block-partnership{form}-v1/{BP}.json"),
        ("rules", f"benchmark/block-partnership{form}-v1/rules.json"),
    ]


def benchmark_scores(agents: list[tuple[str, str]]) -> str:
    """Agents scored on one task, one column per agent (label, file): the margin over each
    opponent in each lineup, or in a match task the share of matches won, and the Elo where
    it has one. The lineup gets a column where the task has more than one."""
    data = [load(f) for _, f in agents]
    keys: list[tuple[str, str]] = []  # (opponent, lineup), in the order the files give them
    for d in data:
        keys += [(current_id(r["opponent"]), r["lineup"]) for r in d["rows"]]
    keys = list(dict.fromkeys(keys))
    by_lineup = len({lineup for _, lineup in keys}) > 1
    in_matches = any(r.get("match_win") for d in data for r in d["rows"])
    rows = []
    for opp, lineup in keys:
        cells = [opp, lineup] if by_lineup else [opp]
        for d in data:
            row = next(
                (r for r in d["rows"] if (current_id(r["opponent"]), r["lineup"]) == (opp, lineup)),
                None,
            )
            if row is None:
                cells.append("–")
            elif in_matches:
                m = row["match_win"]
                cells.append(
                    f"{pct(m['mean'])} [{pct(m['lo'])}, {pct(m['hi'])}] ({row['matches']:,})"
                )
            else:
                m = row["margin"]
                cells.append(f"{ci(m['mean'], m['lo'], m['hi'])} ({row['hands']:,})")
        rows.append(cells)
    if any(d["elo"] for d in data):
        elo = ["Elo (random = 0)", *([""] if by_lineup else [])]
        for d in data:
            e = d["elo"]
            elo.append(f"{e['mean']:+.0f} [{e['lo']:+.0f}, {e['hi']:+.0f}]".replace("-", MINUS))
        rows.append(elo)
    unit = ", matches won (matches)" if in_matches else " (hands)"
    head = ["opponent", *(["lineup"] if by_lineup else [])]
    head += [f"{label}{unit}" for label, _ in agents]
    return table(head, ["---"] * len(head), rows)


EXPLOIT_FULL = [  # label, file
    ("random", "exploit/block-2p-v1/random_steps30000000.json"),
    ("greedy", "exploit/block-2p-v1/greedy_steps30000000.json"),
    ("rules", "exploit/block-2p-v1/rules_steps30000000.json"),
    ("block-2p-plain", "exploit/block-2p-v1/block-2p-plain@7779b4d6_steps30000000.json"),
    ("block-2p", "exploit/block-2p-v1/block-2p@82065c70_steps30000000.json"),
    ("rules", "exploit/block-3p-v1/rules_steps30000000.json"),
    ("rules", "exploit/block-4p-v1/rules_steps30000000.json"),
    ("rules", "exploit/block-partnership-v1/rules_steps30000000.json"),
]
for _task, _agents in [
    ("block-2p", ["block-2p-plain", "block-2p"]),
    ("block-3p", ["random", "greedy", "rules", "block-3p"]),
    ("block-4p", ["random", "greedy", "rules", "block-4p"]),
    ("block-partnership", ["random", "greedy", "rules", "block-partnership"]),
]:
    for _agent in _agents:
        _init = _agent if _agent.startswith("block-2p") else _task
        EXPLOIT_FULL.append(
            (_agent, f"exploit/{_task}-v1/{_agent}_from-{_init}_steps30000000.json")
        )
# a search agent, as far as its speed allows: PIMC-20 acts on one game at a time
EXPLOIT_FULL.append(("pimc-20", "exploit/block-2p-v1/pimc-20_from-block-2p_steps327680.json"))


def _responder_start(data: dict) -> str:
    """Where an exploit run's responder started: a shipped network, or the rule bot's moves."""
    for arg in data.get("train_args", []):
        if arg.startswith("init_policy="):
            name = arg.split("=", 1)[1]
            return f"{shipped_name(data['task']['id'], name)} network"
    return "rule bot (teacher)"


def steps_short(steps: int) -> str:
    """``30M`` / ``328k``."""
    return f"{steps / 1e6:.0f}M" if steps >= 10**6 else f"{steps / 1e3:.0f}k"


def exploit_full() -> str:
    """docs/benchmark.md: lower bounds on exploitability on the full tasks."""
    rows = []
    for label, name in EXPLOIT_FULL:
        d = load(name)
        lo, hi = d["ci95"]
        rows.append(
            [
                shipped_name(d["task"]["id"], label),
                d["task"]["id"],
                _responder_start(d),
                f"{steps_short(d['steps'])}, {d['train_wall_s'] / 60:.1f} min",
                ci(d["exploitability_lower_bound"], lo, hi),
                f"{d['hands']:,}",
            ]
        )
    head = ["agent", "task", "responder starts from", "best response's training"]
    head += ["lower bound, points per hand [95% CI]", "held-out hands"]
    return table(head, ["---"] * 5 + ["---:"], rows)


LEADERBOARD_HEAD = ["algorithm", "budget", "seeds", "steps (mean)", "minutes (mean)"]
LEADERBOARD_ALIGN = ["---", "---", "---:", "---:", "---:", "---", "---", "---"]


def leaderboard_cells(entry: dict[str, Any], strength: str, per_seed: str) -> list[str]:
    """One leaderboard entry's cells: what it is and its budget, then the two strength cells
    given, then its IQM margin against the rule bot."""
    margin_ = entry["margin"]
    return [
        f"`{entry['algorithm']}`",
        f"{entry['budget_min']:g} min",
        str(len(entry["seeds"])),
        f"{entry['env_steps']:,.0f}",
        f"{entry['train_min']:.1f}",
        strength,
        per_seed,
        "-" if margin_ is None else signed(margin_[0]),
    ]


def leaderboard_small(task: str) -> str:
    """docs/benchmark.md: the leaderboard rows of a small-set task, by exact NashConv."""
    from block_env.benchmark.leaderboard import aggregate, load_rows

    rows = []
    for e in aggregate(load_rows([RESULTS / "leaderboard" / task])):
        nc = e["nash_conv"]
        iqm = f"{nc[0]:.3f}" + ("" if math.isnan(nc[1]) else f" [{nc[1]:.3f}, {nc[2]:.3f}]")
        rows.append(
            leaderboard_cells(e, iqm, ", ".join(f"{x:.3f}" for x in e["nash_conv_per_seed"]))
        )
    head = [*LEADERBOARD_HEAD, "NashConv, IQM [95% CI]", "NashConv per seed", "vs rules, IQM"]
    return table(head, LEADERBOARD_ALIGN, rows)


def leaderboard_full(task: str) -> str:
    """docs/benchmark.md: the leaderboard rows of a full-game task, by Elo on its ladder; each
    seed's rating with its CI over deals beside the IQM over seeds."""
    from block_env.benchmark.leaderboard import aggregate, load_rows

    files = load_rows([RESULTS / "leaderboard" / task])
    per_seed: dict[tuple[str, float], list[str]] = {}
    for r in sorted(files, key=lambda r: r["seed"]):
        e = r["score"]["elo"]
        cell = f"{e['mean']:+.0f} [{e['lo']:+.0f}, {e['hi']:+.0f}]"
        per_seed.setdefault((r["algorithm"]["name"], r["budget_min"]), []).append(cell)
    rows = []
    for e in aggregate(files):
        elo = e["elo"]
        iqm = f"{elo[0]:+.0f}" + ("" if math.isnan(elo[1]) else f" [{elo[1]:+.0f}, {elo[2]:+.0f}]")
        rows.append(leaderboard_cells(e, iqm, ", ".join(per_seed[e["algorithm"], e["budget_min"]])))
    head = [*LEADERBOARD_HEAD, "Elo, IQM [95% CI over seeds]", "Elo per seed [95% CI over deals]"]
    return table([*head, "vs rules, IQM"], LEADERBOARD_ALIGN, rows)


CROSSPLAY = "4p/crossplay_vs_rules_seed81000000_40000h.json"  # block-partnership-stage1 and scratch
CROSSPLAY_SEEDS = "4p/crossplay_vs_rules_seed83000000_40000h.json"  # stage 1 and its seeds
CROSSPLAY_SCRATCH = "4p/crossplay_vs_rules_seed51000000_40000h.json"  # the first policy's
CROSSPLAY_LONG = "4p/crossplay_vs_rules_seed125000000_40000h.json"  # block-partnership, its seeds
STAGE1_CROSSPLAY = (CROSSPLAY, CROSSPLAY_SEEDS)  # the tables with block-partnership-stage1
LONG = "docs/experiments/partnership_long.pt"  # block-partnership in its cross-play table


def crossplay_margin(name: str, partner: str) -> dict[str, float]:
    """The first agent of a cross-play file beside ``partner`` (a label) against the field."""
    d = load(name)
    return d["margins"][0][d["agents"].index(partner)]


def pooled_with(files: list[str], cells: list[dict[str, float]]) -> str:
    """``pooled`` of the evaluation files and cross-play cells on as many hands each."""
    return pooled_estimates([*(load(f)["stats"][0]["margin"] for f in files), *cells])


def pooled_rows(
    label: str, files: list[str], crossplay: tuple[str, ...], partner: str
) -> list[list[str]]:
    """One row per 40,000-hand evaluation file, one per cross-play table's deals (the
    table's first agent beside ``partner``), and the pooled row of them all."""
    rows = [[label, "40,000", margin(files[0])]]
    rows += [["the same, another fresh seed", "40,000", margin(f)] for f in files[1:]]
    cells = [crossplay_margin(f, partner) for f in crossplay]
    for name, cell in zip(crossplay, cells):
        deals = f"the same, on a cross-play table's deals (seed {seed(name):,})"
        rows.append([deals, "40,000", estimate(cell)])
    pooled_hands = f"{40000 * (len(files) + len(cells)):,}"
    rows.append(["the same, all pooled", pooled_hands, pooled_with(files, cells)])
    return rows


# block-partnership (the second stage) on fresh deals
PARTNERSHIP_TEAM = [ev(4, BP2, "rules", s, 40000) for s in (120000000, 129000000, 130000000)]
PARTNERSHIP_AD_HOC = [ev(4, BP2, "rules", 121000000, 40000)]
PARTNERSHIP_PIMC = [ev(4, BP2, "pimc-20", s, 4000) for s in (112000000, 116000000)]
PARTNERSHIP_PIMC_AD_HOC = [ev(4, BP2, "pimc-20", s, 4000) for s in (118000000, 119000000)]
# block-partnership-stage1 on fresh deals
STAGE1_TEAM = [ev(4, PF4, "rules", 74000000, 40000), ev(4, BP, "rules", 79000000, 40000)]
STAGE1_AD_HOC = [ev(4, PF4, "rules", 76000000, 40000), ev(4, BP, "rules", 80000000, 40000)]
STAGE1_PIMC = [ev(4, PF4, "pimc-20", 73000000, 4000), ev(4, BP, "pimc-20", 82000000, 4000)]
STAGE1_PIMC_AD_HOC = [ev(4, PF4, "pimc-20", 77000000, 4000), ev(4, BP, "pimc-20", 97000000, 4000)]
TEAM_HEAD = ["team vs team (fresh deals)", "hands", "the team's points per hand [95% CI]"]


def partnership_team_pooled() -> str:
    """Two block-partnership against two rule bots: the three 40,000-hand seeds and the
    cross-play table's 40,000, pooled."""
    return pooled_with(PARTNERSHIP_TEAM, [crossplay_margin(CROSSPLAY_LONG, LONG)])


def strength_partnership() -> str:
    """docs/strength.md: block-partnership with a copy of itself, a rule-bot partner and a
    PIMC-20 partner, and against its first stage."""
    rows = [
        *pooled_rows(
            "two block-partnership vs two rule bots", PARTNERSHIP_TEAM, (CROSSPLAY_LONG,), LONG
        ),
        *pooled_rows(
            "block-partnership with a rule-bot partner vs two rule bots (`--lineup 0,1,1,1`)",
            PARTNERSHIP_AD_HOC,
            (CROSSPLAY_LONG,),
            "rules",
        ),
        [
            "two block-partnership vs two block-partnership-stage1",
            "40,000",
            margin(ev(4, BP2, BP, 113000000, 40000)),
        ],
        *seeds_rows("two block-partnership vs two PIMC-20", PARTNERSHIP_PIMC),
        *seeds_rows(
            "block-partnership with a PIMC-20 partner vs two PIMC-20 (`--lineup 0,1,1,1`)",
            PARTNERSHIP_PIMC_AD_HOC,
        ),
    ]
    return table(TEAM_HEAD, ["---", "---:", "---"], rows)


def strength_partnership_stage1() -> str:
    """docs/strength.md: block-partnership-stage1 with a copy of itself, a rule-bot partner
    and a PIMC-20 partner."""
    name = "block-partnership-stage1"
    rows = [
        *pooled_rows(
            f"two {name} vs two rule bots", STAGE1_TEAM, STAGE1_CROSSPLAY, "block-partnership"
        ),
        *pooled_rows(
            f"{name} with a rule-bot partner vs two rule bots (`--lineup 0,1,1,1`)",
            STAGE1_AD_HOC,
            STAGE1_CROSSPLAY,
            "rules",
        ),
        [
            f"two {name} vs two block-partnership-scratch",
            "20,000",
            margin(ev(4, PF4, BPS, 75000000, 20000)),
        ],
        *seeds_rows(f"two {name} vs two PIMC-20", STAGE1_PIMC),
        *seeds_rows(
            f"{name} with a PIMC-20 partner vs two PIMC-20 (`--lineup 0,1,1,1`)",
            STAGE1_PIMC_AD_HOC,
        ),
    ]
    return table(TEAM_HEAD, ["---", "---:", "---"], rows)


PARTNERSHIP_SEARCH_TEAM = [ev(4, BP_SEARCH, "pimc-20", s, 4000) for s in (84000000, 88000000)]
# three rounds of two seeds, each round added after the ones before (docs/strength.md)
AD_HOC_SEEDS = (85000000, 95000000, 108000000, 109000000, 110000000, 111000000)
PARTNERSHIP_SEARCH_AD_HOC = [ev(4, BP_SEARCH, "pimc-20", s, 4000) for s in AD_HOC_SEEDS]
PARTNERSHIP_SEARCH_RULES = [ev(4, BP_SEARCH, "rules", s, 4000) for s in (86000000, 96000000)]


def seeds_rows(label: str, files: list[str]) -> list[list[str]]:
    """One row per fresh seed (the first under ``label``), then all of them pooled."""
    rows = [
        [label if i == 0 else "the same, another fresh seed", f"{hands(f):,}", margin(f)]
        for i, f in enumerate(files)
    ]
    pooled_label = "both" if len(files) == 2 else f"all {len(files)}"
    return rows + [
        [f"the same, {pooled_label} pooled", f"{sum(map(hands, files)):,}", pooled(files)]
    ]


def strength_partnership_search() -> str:
    """docs/strength.md: block-partnership-search against two PIMC-20, as a team of two and
    beside a PIMC-20 partner, and beside a rule-bot partner against two rule bots."""
    rows = [
        *seeds_rows("two block-partnership-search vs two PIMC-20", PARTNERSHIP_SEARCH_TEAM),
        *seeds_rows(
            "block-partnership-search with a PIMC-20 partner vs two PIMC-20 (`--lineup 0,1,1,1`)",
            PARTNERSHIP_SEARCH_AD_HOC,
        ),
        *seeds_rows(
            "block-partnership-search with a rule-bot partner vs two rule bots"
            " (`--lineup 0,1,1,1`)",
            PARTNERSHIP_SEARCH_RULES,
        ),
    ]
    return table(
        ["fresh deals", "hands", "the team's points per hand [95% CI]"],
        ["---", "---:", "---"],
        rows,
    )


def strength_partnership_scratch() -> str:
    """docs/strength.md: the first partnership policy, block-partnership-scratch."""
    rows = [
        ["two copies vs two rule bots", "40,000", margin(ev(4, BPS, "rules", 23000000, 40000))],
        [
            "the same, on its cross-play table's deals (seed 51,000,000)",
            "40,000",
            estimate(crossplay_margin(CROSSPLAY_SCRATCH, "block-partnership")),
        ],
        [
            "with a rule-bot partner vs two rule bots (`--lineup 0,1,1,1`)",
            "40,000",
            margin(ev(4, BPS, "rules", 24000000, 40000)),
        ],
        [
            "the same, on its cross-play table's deals (seed 51,000,000)",
            "40,000",
            estimate(crossplay_margin(CROSSPLAY_SCRATCH, "rules")),
        ],
        ["two copies vs two PIMC-20", "4,000", margin(ev(4, BPS, "pimc-20", 42000000, 4000))],
        [
            "with a PIMC-20 partner vs two PIMC-20 (`--lineup 0,1,1,1`)",
            "4,000",
            margin(ev(4, BPS, "pimc-20", 43000000, 4000)),
        ],
    ]
    return table(
        ["block-partnership-scratch, team vs team", "hands", "the team's points per hand [95% CI]"],
        ["---", "---:", "---"],
        rows,
    )


CROSSPLAY_NAMES = {  # the files' labels -> the tables'
    "block-partnership": "block-partnership-stage1",  # in the tables of seeds 81M and 83M
    "block-partnership-scratch": "scratch",
    "docs/experiments/partnership_s1.pt": "scratch seed 1",
    "docs/experiments/partnership_s2.pt": "scratch seed 2",
    "docs/experiments/partnership_from4p_s5.pt": "seed 5",
    "docs/experiments/partnership_from4p_s6.pt": "seed 6",
    LONG: "block-partnership",
    "docs/experiments/partnership_long_s5.pt": "long seed 5",
    "docs/experiments/partnership_long_s6.pt": "long seed 6",
}


def crossplay_tables(name: str) -> str:
    """Every pair of partners against the field in the cross-play file ``name``, then each
    trained policy beside itself, beside the other trained policies and beside a rule bot."""
    d = load(name)
    names = [CROSSPLAY_NAMES.get(a, a) for a in d["agents"]]
    m = [[estimate(e) for e in row] for row in d["margins"]]
    rows = [[f"**{n}**", *cells] for n, cells in zip(names, m)]
    matrix = table(["partner", *names], ["---"] * (len(names) + 1), rows)
    trained = [i for i, a in enumerate(d["agents"]) if a in CROSSPLAY_NAMES]
    rules = d["agents"].index("rules")
    rows = [
        [names[i], m[i][i], "; ".join(m[i][j] for j in trained if j != i), m[i][rules]]
        for i in trained
    ]
    count = ("two", "three", "four", "five")[len(trained) - 3]  # both files have 3 or more
    head = ["policy", "beside itself", f"beside the other {count} policies", "beside a rule bot"]
    return matrix + "\n\n" + table(head, ["---"] * 4, rows)


def strength_partnership_crossplay() -> str:
    """docs/strength.md: block-partnership and the first policy's recipe, as partners."""
    return crossplay_tables(CROSSPLAY)


def strength_partnership_seeds() -> str:
    """docs/strength.md: block-partnership and two more seeds of its own recipe, as partners."""
    return crossplay_tables(CROSSPLAY_SEEDS)


def strength_partnership_long_seeds() -> str:
    """docs/strength.md: partnership_long and two more seeds of the longer recipe, as partners."""
    return crossplay_tables(CROSSPLAY_LONG)


def match_win(names: str | list[str], seat: int = 0) -> str:
    """Agent ``seat``'s share of the matches won [95% CI] in the evaluation file ``names``,
    or pooled over the files ``names`` (equally many matches each, as ``pooled``)."""
    files = [names] if isinstance(names, str) else names
    shares = [load(n)["stats"][seat]["match_win"] for n in files]
    mean = sum(m["mean"] for m in shares) / len(shares)
    half = math.sqrt(sum(((m["hi"] - m["lo"]) / 2) ** 2 for m in shares)) / len(shares)
    lo, hi = (shares[0]["lo"], shares[0]["hi"]) if len(shares) == 1 else (mean - half, mean + half)
    return f"{pct(mean)} [{pct(lo)}, {pct(hi)}]"


def matches(names: list[str]) -> int:
    """Matches played in the evaluation files ``names``."""
    return sum(int(load(n)["matches"]) for n in names)


def match_file(agent: str, seed_: int) -> str:
    """A 2-player evaluation of ``agent`` against PIMC-20 over 2,000 matches to 100."""
    return f"2p/{agent}_vs_pimc-20_seed{seed_}_2000m.json"


# block-2p against PIMC-20 where the highest double opens, and over whole matches (the
# match-aware experiment on the same match deals): headlines pooled over four fresh seeds
HIGHEST_DOUBLE_2P_PIMC = [
    ev(2, P2, "pimc-20", s, 4000) for s in (44000000, 89000000, 90000000, 91000000)
]
HIGHEST_DOUBLE_PARTNERSHIP_PIMC = [ev(4, BP2, "pimc-20", s, 4000) for s in (127000000, 131000000)]
MATCH_SEEDS = (47000000, 92000000, 93000000, 94000000)
MATCHES_2P_PIMC = [match_file(P2, s) for s in MATCH_SEEDS]
MATCHES_MATCH_2P_PIMC = [match_file("match_2p@d23f0a56", s) for s in MATCH_SEEDS]
# label, file (the lone seat or the team first) or files pooled
HIGHEST_DOUBLE: list[tuple[str, str | list[str]]] = [
    ("block-2p vs the rule bot", ev(2, P2, "rules", 31000000, 4000)),
    ("block-3p vs two rule bots", ev(3, F3, "rules", 32000000, 4002)),
    ("a rule bot vs two block-3p", ev(3, "rules", F3, 32000000, 4002)),
    ("block-4p vs three rule bots", ev(4, F4, "rules", 33000000, 4000)),
    ("a rule bot vs three block-4p", ev(4, "rules", F4, 33000000, 4000)),
    ("two block-partnership vs two rule bots", ev(4, BP2, "rules", 126000000, 40000)),
    ("two block-partnership-stage1 vs two rule bots", ev(4, BP, "rules", 34000000, 4000)),
    (
        "two block-partnership-scratch vs two rule bots, the same deals",
        ev(4, BPS, "rules", 34000000, 4000),
    ),
    ("block-2p vs PIMC-20", HIGHEST_DOUBLE_2P_PIMC[0]),
    ("the same, 4 seeds pooled", HIGHEST_DOUBLE_2P_PIMC),
    ("block-3p vs two PIMC-20", ev(3, F3, "pimc-20", 45000000, 4002)),
    ("a PIMC-20 vs two block-3p", ev(3, "pimc-20", F3, 45000000, 4002)),
    ("block-4p vs three PIMC-20", ev(4, F4, "pimc-20", 46000000, 4000)),
    ("a PIMC-20 vs three block-4p", ev(4, "pimc-20", F4, 46000000, 4000)),
    ("two block-partnership vs two PIMC-20", HIGHEST_DOUBLE_PARTNERSHIP_PIMC[0]),
    ("the same, 2 seeds pooled", HIGHEST_DOUBLE_PARTNERSHIP_PIMC),
    ("two block-partnership-stage1 vs two PIMC-20", ev(4, BP, "pimc-20", 52000000, 4000)),
    (
        "two block-partnership-scratch vs two PIMC-20, the same deals",
        ev(4, BPS, "pimc-20", 52000000, 4000),
    ),
    (
        "two partnership_hd (block-partnership-scratch fine-tuned for this opening, not "
        "shipped) vs two PIMC-20",
        ev(4, "partnership_hd@286b0be2", "pimc-20", 54000000, 4000),
    ),
    (
        "two block-partnership-scratch vs two PIMC-20, partnership_hd's deals",
        ev(4, BPS, "pimc-20", 54000000, 4000),
    ),
]
# label, file or files pooled, the share a seat would win by chance
MATCHES: list[tuple[str, str | list[str], str]] = [
    (
        "block-2p vs the rule bot (to 100)",
        "2p/block-2p@82065c70_vs_rules_seed35000000_1000m.json",
        "50%",
    ),
    (
        "block-3p vs two rule bots (to 61)",
        "3p/block-3p@e47588b8_vs_rules_seed36000000_999m.json",
        "33.3%",
    ),
    (
        "block-4p vs three rule bots (to 61)",
        "4p/block-4p@34e65c11_vs_rules_seed37000000_1000m.json",
        "25%",
    ),
    (
        "two block-partnership vs two rule bots (to 100)",
        f"4p/{BP2}_vs_rules_seed128000000_1000m.json",
        "50%",
    ),
    (
        "two block-partnership-stage1 vs two rule bots (to 100)",
        f"4p/{BP}_vs_rules_seed38000000_1000m.json",
        "50%",
    ),
    (
        "two block-partnership-scratch vs two rule bots (to 100, the same seed)",
        f"4p/{BPS}_vs_rules_seed38000000_1000m.json",
        "50%",
    ),
    ("block-2p vs PIMC-20 (to 100)", MATCHES_2P_PIMC[0], "50%"),
    (
        "match_2p (match-aware, not shipped) vs PIMC-20 (to 100, the same seed)",
        MATCHES_MATCH_2P_PIMC[0],
        "50%",
    ),
    ("block-2p vs PIMC-20 (to 100, 4 seeds pooled)", MATCHES_2P_PIMC, "50%"),
    ("match_2p vs PIMC-20 (to 100, the same 4 seeds pooled)", MATCHES_MATCH_2P_PIMC, "50%"),
    (
        "match_2p vs block-2p (to 100)",
        "2p/match_2p@d23f0a56_vs_block-2p@82065c70_seed50000000_2000m.json",
        "50%",
    ),
    (
        "block-3p vs two PIMC-20 (to 61)",
        "3p/block-3p@e47588b8_vs_pimc-20_seed48000000_999m.json",
        "33.3%",
    ),
    (
        "block-4p vs three PIMC-20 (to 61)",
        "4p/block-4p@34e65c11_vs_pimc-20_seed49000000_1000m.json",
        "25%",
    ),
    (
        "two block-partnership vs two PIMC-20 (to 100)",
        f"4p/{BP2}_vs_pimc-20_seed59000000_1000m.json",
        "50%",
    ),
    (
        "two block-partnership-stage1 vs two PIMC-20 (to 100, the same seed)",
        f"4p/{BP}_vs_pimc-20_seed59000000_1000m.json",
        "50%",
    ),
    (
        "two block-partnership-scratch vs two PIMC-20 (to 100, the same seed)",
        f"4p/{BPS}_vs_pimc-20_seed59000000_1000m.json",
        "50%",
    ),
]


def strength_highest_double() -> str:
    """docs/strength.md: the shipped policies where the highest double opens, one hand."""
    rows = [
        [label, f"{hands(f):,}", margin(f)]
        if isinstance(f, str)
        else [label, f"{sum(map(hands, f)):,}", pooled(f)]
        for label, f in HIGHEST_DOUBLE
    ]
    head = [
        "first agent vs field, `--opener highest_double`",
        "hands",
        "first agent's points per hand [95% CI]",
    ]
    return table(head, ["---", "---:", "---"], rows)


def strength_matches() -> str:
    """docs/strength.md: the shipped policies over whole matches."""
    rows = [
        [label, f"{matches([f] if isinstance(f, str) else f):,}", match_win(f), chance]
        for label, f, chance in MATCHES
    ]
    head = ["policy vs field, `--episode match`", "matches", "matches won [95% CI]", "by chance"]
    return table(head, ["---", "---:", "---", "---:"], rows)


def readme_strength() -> str:
    """README.md: the headline results of the shipped policies."""
    rows = [
        (
            "block-2p vs PIMC-100 (2 seeds pooled)",
            f"{sum(hands(f) for _, f, _ in INFOSTATE[:2]):,}",
            bold(pooled([f for _, f, _ in INFOSTATE[:2]]), True),
        ),
        pooled_row("block-2p vs the rule bot", P2_RULES),
        *(pooled_row(label, names) for label, names in POOLED_3P if label.startswith("block-3p")),
        pooled_row("block-4p vs three rule bots", F4_RULES),
        pooled_row("block-4p vs three PIMC-20", PIMC16K),
        (
            "two block-partnership vs two rule bots (partnership, 4 seeds pooled)",
            "160,000",
            partnership_team_pooled(),
        ),
        (
            "two block-partnership vs two PIMC-20 (partnership, 2 seeds pooled)",
            f"{sum(map(hands, PARTNERSHIP_PIMC)):,}",
            pooled(PARTNERSHIP_PIMC),
        ),
        pooled_row(
            "two block-partnership-search (block-partnership-stage1 guiding PIMC-20's worlds)"
            " vs two PIMC-20",
            PARTNERSHIP_SEARCH_TEAM,
        ),
        pooled_row(
            "block-partnership-search beside a PIMC-20 partner vs two PIMC-20, ad hoc",
            PARTNERSHIP_SEARCH_AD_HOC,
        ),
        pooled_row(
            "block-2p vs PIMC-20, the highest double opens, one hand", HIGHEST_DOUBLE_2P_PIMC
        ),
        (
            f"block-2p vs PIMC-20, whole matches to 100 ({len(MATCHES_2P_PIMC)} seeds pooled)",
            f"{matches(MATCHES_2P_PIMC):,} matches",
            f"{match_win(MATCHES_2P_PIMC)} of matches won",
        ),
        (
            f"the default run (`python train.py nproc=2`, {minutes(RUNS['default_now'])} "
            "min on the 2-core CPU) vs the rule bot",
            f"{load(RUNS['default_now'])['final']['rules']['hands']:,}",
            training_final(RUNS["default_now"], "rules"),
        ),
    ]
    return table(
        ["policy vs", "hands", "points per hand [95% CI]"],
        ["---", "---:", "---"],
        [list(r) for r in rows],
    )


TABLES: dict[str, Callable[[], str]] = {
    "strength-2p-infostate": strength_2p_infostate,
    "strength-2p-plain": strength_2p_plain,
    "strength-2p-pooled": strength_2p_pooled,
    "strength-3p": strength_3p,
    "strength-3p-pooled": strength_3p_pooled,
    "strength-4p-first": strength_4p_first,
    "strength-4p-summary": strength_4p_summary,
    "strength-partnership": strength_partnership,
    "strength-partnership-stage1": strength_partnership_stage1,
    "strength-partnership-crossplay": strength_partnership_crossplay,
    "strength-partnership-seeds": strength_partnership_seeds,
    "strength-partnership-long-seeds": strength_partnership_long_seeds,
    "strength-partnership-scratch": strength_partnership_scratch,
    "strength-partnership-search": strength_partnership_search,
    "strength-highest-double": strength_highest_double,
    "strength-matches": strength_matches,
    "ladder-lineups-seed0": ladder_lineups_seed0,
    "ladder-3p-seed9": ladder_3p_seed9,
    "ladder-3p-fresh": ladder_3p_fresh,
    "ladder-4p-fresh": ladder_4p_fresh,
    "ladder-4p-fresh40k": ladder_4p_fresh40k,
    "ladder-4p-pimc16k": ladder_4p_pimc16k,
    "ladder-2p": ladder_2p,
    "ladder-2p-infostate": ladder_2p_infostate,
    "ladder-3p": ladder_3p,
    "ladder-4p": ladder_4p,
    "ladder-partnership": ladder_partnership,
    **{f"ladder-{key}": partial(ladder_variant, key) for key in VARIANT_LADDERS},
    "ladder-2p-search": ladder_2p_search,
    "policies-time-to-strength": policies_time_to_strength,
    "policies-final-evaluation": policies_final_evaluation,
    "distributed-world-size": distributed_world_size,
    "distributed-scaling": distributed_scaling,
    "readme-strength": readme_strength,
    "benchmark-exploit-d3": benchmark_exploit_d3,
    **{name: partial(benchmark_scores, agents) for name, agents in BENCH_VARIANTS.items()},
    "benchmark-exploit-full": exploit_full,
    "leaderboard-d3": lambda: leaderboard_small("block-d3-2p-v1"),
    "leaderboard-2p": lambda: leaderboard_full("block-2p-v1"),
}

# ------------------------------------------------------------------ the pages


def pages() -> list[Path]:
    """The Markdown pages that may hold generated tables: README.md and docs/**/*.md."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(text: str) -> list[tuple[str, str]]:
    """(name, body) of every generated block in a page's text."""
    return [(m["name"], m["body"]) for m in BLOCK_RE.finditer(text)]


def render_block(name: str) -> str:
    """A block's body: a blank line, the table, a blank line."""
    return f"\n{TABLES[name]()}\n\n"


def rewrite(text: str) -> str:
    """The page's text with every generated block re-rendered."""

    def sub(m: re.Match[str]) -> str:
        if m["name"] not in TABLES:
            raise SystemExit(f"unknown results table {m['name']!r}; known: {', '.join(TABLES)}")
        return m.group(1) + render_block(m["name"]) + m.group(4)

    return BLOCK_RE.sub(sub, text)


def stale() -> list[str]:
    """'page: name' for every block whose body differs from what this script renders."""
    out = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for name, body in blocks(text):
            if name not in TABLES or body != render_block(name):
                out.append(f"{page.relative_to(ROOT).as_posix()}: {name}")
    return out


def main(argv: list[str] | None = None) -> int:
    """Print, check or rewrite the generated tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="tables to print (default: list them)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="rewrite the blocks in the pages")
    group.add_argument("--check", action="store_true", help="exit 1 if a block is stale")
    args = parser.parse_args(argv)
    if args.write:
        for page in pages():
            text = page.read_text(encoding="utf-8")
            new = rewrite(text)
            if new != text:
                page.write_text(new, encoding="utf-8")
                print(f"rewrote {page.relative_to(ROOT).as_posix()}")
        return 0
    if args.check:
        bad = stale()
        for line in bad:
            print(f"stale: {line}")
        return 1 if bad else 0
    if args.names:
        for name in args.names:
            if name not in TABLES:
                parser.error(f"unknown table {name!r}; known: {', '.join(TABLES)}")
            print(TABLES[name]())
        return 0
    where: dict[str, list[str]] = {name: [] for name in TABLES}
    for page in pages():
        for name, _ in blocks(page.read_text(encoding="utf-8")):
            where.setdefault(name, []).append(page.relative_to(ROOT).as_posix())
    for name, found in where.items():
        print(f"{name}: {', '.join(found) or '(in no page)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
