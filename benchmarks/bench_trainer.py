"""Where the PPO trainer's time goes, and the default run's agent-steps per second.

    python benchmarks/bench_trainer.py                  # 3 updates of the default config
    python benchmarks/bench_trainer.py --updates 5 num_players=3

Runs ``train_ppo`` (``python train.py``'s default engine) on the default config, or the
config given by ``key=value`` overrides, for a few updates in a temporary run folder, with
one periodic evaluation at the end and the final evaluation, and times each part by
wrapping the trainer's functions (nothing in the trainer is changed):

* ``rollout``: ``Collector.collect``, split into the batched environment's ``step``, each
  opponent kind's ``Opponents.act`` (``self`` and ``snapshot`` are network forwards), the
  learner's network forward, and the rest (privileged features, sampling, bookkeeping);
* ``update``: ``ppo_update`` (PPO epochs: forward, backward, optimizer);
* ``periodic eval`` and ``final eval``: the evaluations against the baselines.

It prints the split as a table and a projection for the default run: the per-update cost
times the run's number of updates, plus one periodic evaluation every ``eval_every``
updates and the final evaluation; agent-steps/s is the run's steps over that time.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import block_env.training.ppo as ppo  # noqa: E402
import block_env.training.results as results  # noqa: E402
import block_env.training.rollout as rollout  # noqa: E402
from agents.network import ActorCritic  # noqa: E402
from block_env.batched import BatchedEnv  # noqa: E402
from block_env.training.config import TrainConfig, load_config  # noqa: E402

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
TIMES: dict[str, dict[str, float]] = {c: defaultdict(float) for c in CLOCKS}
CALLS: dict[str, int] = defaultdict(int)
_STACK: list[str] = []  # the timed parts we are inside (innermost last)


@contextlib.contextmanager
def timed(name: str) -> Iterator[None]:
    _STACK.append(name)
    t0 = {c: clock() for c, clock in CLOCKS.items()}
    try:
        yield
    finally:
        for c, clock in CLOCKS.items():
            TIMES[c][name] += clock() - t0[c]
        CALLS[name] += 1
        _STACK.pop()


def wrap(owner: Any, attr: str, name: Callable[..., str | None]) -> None:
    """Replace ``owner.attr`` by a timed version; ``name(*args)`` picks the row (None: not
    timed here)."""
    fn = getattr(owner, attr)

    def timed_fn(*args: Any, **kwargs: Any) -> Any:
        row = name(*args, **kwargs)
        if row is None:
            return fn(*args, **kwargs)
        with timed(row):
            return fn(*args, **kwargs)

    setattr(owner, attr, timed_fn)


def inside(part: str) -> bool:
    return part in _STACK


FIRST: dict[str, float] = {}  # when the first rollout began (the end of the setup)


def instrument() -> None:
    def rollout_row(*a: Any, **k: Any) -> str:
        for c, clock in CLOCKS.items():
            FIRST.setdefault(c, clock())
        return "rollout"

    wrap(rollout.Collector, "collect", rollout_row)
    wrap(ppo, "ppo_update", lambda *a, **k: "update")

    def env_row(*a: Any, **k: Any) -> str | None:
        return "rollout: environment step" if inside("rollout") else None

    wrap(BatchedEnv, "step", env_row)

    def in_rollout(row: str) -> Callable[..., str | None]:
        return lambda *a, **k: row if inside("rollout") else None

    wrap(BatchedEnv, "snapshot", in_rollout("rollout: privileged features"))
    wrap(rollout, "privileged_features", in_rollout("rollout: privileged features"))
    wrap(rollout, "gae", in_rollout("rollout: advantages (gae)"))

    def opp_row(self: Any, kind: str, *a: Any, **k: Any) -> str | None:
        return f"rollout: opponent {kind}" if inside("rollout") else None

    wrap(rollout.Opponents, "act", opp_row)

    def forward_row(*a: Any, **k: Any) -> str | None:
        if inside("rollout") and not any(s.startswith("rollout: opponent") for s in _STACK):
            return "rollout: learner forward"
        return None

    wrap(ActorCritic, "__call__", forward_row)
    wrap(results, "finish", lambda *a, **k: "finish (final eval, files)")

    def eval_row(*a: Any, **k: Any) -> str | None:
        return "final eval" if inside("finish (final eval, files)") else "periodic eval"

    wrap(ppo, "evaluate_against", eval_row)
    wrap(results, "evaluate_against", eval_row)
    wrap(ppo, "finish", lambda *a, **k: "finish (final eval, files)")
    wrap(ppo, "save_checkpoint", lambda *a, **k: "checkpoint")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--updates", type=int, default=4, help="PPO updates to time (default 4)")
    p.add_argument("overrides", nargs="*", help="key=value config overrides")
    args = p.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    base = load_config(None, list(args.overrides))  # the run whose speed is projected
    per_update = base.num_envs * base.rollout_steps
    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config(
            None,
            [
                *args.overrides,
                f"total_steps={per_update * args.updates}",
                f"eval_every={args.updates}",
                f"checkpoint_every={args.updates}",
                "snapshot_every=1",  # the snapshot opponent plays from the second update on
                f"run_dir={tmp}/{{name}}",
                "progress=false",
                "tensorboard=false",
            ],
        )
        instrument()
        import io

        t0 = {c: clock() for c, clock in CLOCKS.items()}
        with contextlib.redirect_stdout(io.StringIO()):
            ppo.train_ppo(cfg, force=True)
        spent = {c: clock() - t0[c] for c, clock in CLOCKS.items()}
    setup = {c: FIRST[c] - t0[c] for c in CLOCKS}
    parts = {c: split(TIMES[c], spent[c], setup[c]) for c in CLOCKS}
    report(base, cfg, args.updates, parts)
    return 0


def split(t: dict[str, float], total: float, setup: float) -> dict[str, float]:
    """The table's rows for one clock (seconds)."""
    out = {
        "rollout": t["rollout"],
        "update": t["update"],
        "periodic eval": t["periodic eval"],
        "final eval": t["final eval"],
        "final files": t["finish (final eval, files)"] - t["final eval"],
        "checkpoint": t["checkpoint"],
        "setup": setup,
    }
    sub = {k: v for k, v in t.items() if k.startswith("rollout: ")}
    out.update(sub)
    out["rollout: rest (sampling, bookkeeping)"] = t["rollout"] - sum(sub.values())
    out["other"] = (
        total
        - setup
        - sum(t[k] for k in ("rollout", "update", "periodic eval", "checkpoint"))
        - t["finish (final eval, files)"]
    )
    return out


def project(base: TrainConfig, cfg: TrainConfig, updates: int, p: dict[str, float]) -> float:
    """Seconds of the base config's whole run from the parts measured on this short one."""
    per = base.num_envs * base.rollout_steps
    n_upd = max(1, math.ceil(base.total_steps / per))
    n_eval = n_upd // base.eval_every + (1 if n_upd % base.eval_every else 0)
    per_update = (p["rollout"] + p["update"] + p["other"]) / updates
    per_update += p["checkpoint"] / base.checkpoint_every
    eval_s = p["periodic eval"] * base.eval_hands / max(cfg.eval_hands, 1)
    final_s = p["final eval"] * base.final_eval_hands / max(cfg.final_eval_hands, 1)
    return p["setup"] + n_upd * per_update + n_eval * eval_s + final_s + p["final files"]


def report(
    base: TrainConfig, cfg: TrainConfig, updates: int, parts: dict[str, dict[str, float]]
) -> None:
    steps = cfg.num_envs * cfg.rollout_steps * updates
    wall, cpu = parts["wall"], parts["cpu"]
    loop = {c: parts[c]["rollout"] + parts[c]["update"] + parts[c]["other"] for c in CLOCKS}
    print(
        f"bench_trainer: {updates} updates x {cfg.num_envs * cfg.rollout_steps:,} agent-steps, "
        f"{cfg.num_players} players, threads={cfg.threads}, eval_hands={cfg.eval_hands}, "
        f"final_eval_hands={cfg.final_eval_hands}\n"
    )
    head = f"{'part':<46} {'wall s':>7} {'CPU s':>7} {'CPU % of loop':>14}"
    print(head)
    print("-" * len(head))

    def row(label: str, key: str, share: bool = True) -> None:
        pct = f"{100 * cpu[key] / loop['cpu']:13.1f}%" if share else ""
        print(f"{label:<46} {wall[key]:7.2f} {cpu[key]:7.2f} {pct:>14}")

    row("rollout (Collector.collect)", "rollout")
    sub = [k for k in cpu if k.startswith("rollout: ") and not k.startswith("rollout: rest")]
    for k in sorted(sub, key=lambda k: -cpu[k]):
        row(f"  {k[len('rollout: ') :]} ({CALLS[k]} calls)", k)
    row(
        "  rest (sampling, bookkeeping)",
        "rollout: rest (sampling, bookkeeping)",
    )
    row("update (ppo_update)", "update")
    row("other (logs, snapshots, checks)", "other")
    row("setup (once: model, optimizer, games)", "setup", False)
    row("checkpoint (1 call)", "checkpoint", False)
    row(f"periodic eval (1 call, {cfg.eval_hands} hands x opponent)", "periodic eval", False)
    row(f"final eval (1 call, {cfg.final_eval_hands} hands x opponent)", "final eval", False)
    row("final files (policy, eval.json, curve.png)", "final files", False)
    print()
    for c in CLOCKS:
        print(f"training loop ({c}): {steps / loop[c]:,.0f} agent-steps/s")
    per = base.num_envs * base.rollout_steps
    n_upd = max(1, math.ceil(base.total_steps / per))
    n_eval = n_upd // base.eval_every + (1 if n_upd % base.eval_every else 0)
    print(
        f"projected full run ({n_upd} updates, {n_eval} periodic evals of {base.eval_hands} "
        f"hands, final eval of {base.final_eval_hands} hands):"
    )
    for c in CLOCKS:
        total = project(base, cfg, updates, parts[c])
        p = parts[c]
        evals = n_eval * p["periodic eval"] * base.eval_hands / max(cfg.eval_hands, 1)
        evals += p["final eval"] * base.final_eval_hands / max(cfg.final_eval_hands, 1)
        print(
            f"  {c:>4}: {total / 60:5.1f} min, {n_upd * per / total:,.0f} agent-steps/s, "
            f"evaluations {100 * evals / total:.1f}% of it"
        )


if __name__ == "__main__":
    sys.exit(main())
