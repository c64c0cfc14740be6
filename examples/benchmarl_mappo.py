"""BenchMARL's MAPPO on a Block task (``block_env.integrations.benchmarl``), then its
policy against the random bot on duplicate deals.

Needs the benchmarl extra in its own venv (``bash .ci/extra-benchmarl install``). The
training is BenchMARL's recipe under a wall-clock budget (the leaderboard's trainer); the
policy of ``player_0``'s group is exported and played in the AEC env by
``block_env.evaluate``.

    python examples/benchmarl_mappo.py --task partnership --minutes 5
    python examples/benchmarl_mappo.py --smoke      # a few seconds: tiny batches
"""

from __future__ import annotations

import argparse
import json
import tempfile
import warnings
from pathlib import Path

from block_env.evaluation import evaluate
from block_env.integrations.benchmarl.agent import load_agent
from block_env.integrations.benchmarl.leaderboard import train

GAMES = {
    "two_player": {"num_players": 2},
    "three_player": {"num_players": 3},
    "four_player": {"num_players": 4},
    "partnership": {"num_players": 4, "partnership": True},
}
SMOKE = {
    "on_policy_collected_frames_per_batch": 200,
    "on_policy_n_envs_per_worker": 2,
    "on_policy_minibatch_size": 100,
    "on_policy_n_minibatch_iters": 1,
    "evaluation_episodes": 2,
}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=sorted(GAMES), default="two_player")
    parser.add_argument("--minutes", type=float, default=5.0, help="training budget")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hands", type=int, default=2000, help="evaluation hands")
    parser.add_argument("--out", default=None, help="run folder (default: a temporary one)")
    parser.add_argument("--smoke", action="store_true", help="tiny batches, a few seconds")
    parser.add_argument("--json", default=None, help="write the numbers to this file")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message="TaskConfig python dataclass not found")
    game = {"episode": "hand", **GAMES[args.task]}
    minutes, hands = (0.01, 16) if args.smoke else (args.minutes, args.hands)
    out = Path(args.out or tempfile.mkdtemp(prefix="benchmarl-mappo-"))
    run = train("mappo", game, minutes, args.seed, out, SMOKE if args.smoke else None)
    agent = load_agent(run["policy"])
    result = evaluate([agent, "random"], hands=hands, seed=10_000, **game)
    summary = {**run, "hands": result.hands, "vs_random": result.summary()}
    print(json.dumps(summary, indent=2, default=str))
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2, default=str))
    return summary


if __name__ == "__main__":
    main()
