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
from agents.policy import ActorCritic  # noqa: E402
from block_env.batched import BatchedEnv  # noqa: E402
from block_env.training.config import TrainConfig, load_config  # noqa: E402

TIMES: dict[str, float] = defaultdict(float)
CALLS: dict[str, int] = defaultdict(int)
_STACK: list[str] = []  # the timed parts we are inside (innermost last)


@contextlib.contextmanager
def timed(name: str) -> Iterator[None]:
    _STACK.append(name)
    t0 = time.perf_counter()
    try:
        yield
    finally:
        TIMES[name] += time.perf_counter() - t0
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
        FIRST.setdefault("rollout", time.perf_counter())
        return "rollout"

    wrap(ppo.Collector, "collect", rollout_row)
    wrap(ppo, "ppo_update", lambda *a, **k: "update")

    def env_row(*a: Any, **k: Any) -> str | None:
        return "rollout: environment step" if inside("rollout") else None

    wrap(BatchedEnv, "step", env_row)

    def opp_row(self: Any, kind: str, *a: Any, **k: Any) -> str | None:
        return f"rollout: opponent {kind}" if inside("rollout") else None

    wrap(ppo.Opponents, "act", opp_row)

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

        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            ppo.train_ppo(cfg, force=True)
        wall = time.perf_counter() - t0
    report(base, cfg, args.updates, wall, FIRST["rollout"] - t0)
    return 0


def report(base: TrainConfig, cfg: TrainConfig, updates: int, wall: float, setup: float) -> None:
    steps = cfg.num_envs * cfg.rollout_steps * updates
    rollout, update = TIMES["rollout"], TIMES["update"]
    periodic, final = TIMES["periodic eval"], TIMES["final eval"]
    finish = TIMES["finish (final eval, files)"]
    ckpt = TIMES["checkpoint"]
    other = wall - setup - rollout - update - periodic - finish - ckpt
    rows: list[tuple[str, float, str]] = []
    sub = [k for k in TIMES if k.startswith("rollout: ")]
    rest = rollout - sum(TIMES[k] for k in sub)
    for k in sorted(sub, key=lambda k: -TIMES[k]):
        rows.append((k, TIMES[k], f"{CALLS[k]} calls"))
    rows.append(("rollout: rest (features, sampling, bookkeeping)", rest, ""))
    loop = rollout + update + other
    print(
        f"bench_trainer: {updates} updates x {cfg.num_envs * cfg.rollout_steps:,} agent-steps, "
        f"{cfg.num_players} players, threads={cfg.threads}, eval_hands={cfg.eval_hands}, "
        f"final_eval_hands={cfg.final_eval_hands}\n"
    )
    print(f"{'part':<50} {'seconds':>9} {'% of loop':>10}  note")
    print(f"{'-' * 50} {'-' * 9} {'-' * 10}  ----")
    print(f"{'rollout (Collector.collect)':<50} {rollout:9.2f} {100 * rollout / loop:9.1f}%")
    for k, v, note in rows:
        print(f"{'  ' + k[len('rollout: ') :]:<50} {v:9.2f} {100 * v / loop:9.1f}%  {note}")
    print(f"{'update (ppo_update)':<50} {update:9.2f} {100 * update / loop:9.1f}%")
    print(f"{'other (logs, snapshots, checks)':<50} {other:9.2f} {100 * other / loop:9.1f}%")
    print(f"{'setup (once: model, optimizer, games)':<50} {setup:9.2f}")
    print(f"{'checkpoint (1 call)':<50} {ckpt:9.2f}")
    print(f"{'periodic eval (1 call)':<50} {periodic:9.2f}")
    print(f"{'final eval (1 call)':<50} {final:9.2f}")
    print(f"{'final files (policy, eval.json, curve.png)':<50} {finish - final:9.2f}")
    print()
    print(f"training loop: {steps / loop:,.0f} agent-steps/s (rollout + update + other)")
    # Projection for the base config's full run (default: 30M steps).
    per = base.num_envs * base.rollout_steps
    n_upd = max(1, math.ceil(base.total_steps / per))
    n_eval = n_upd // base.eval_every + (1 if n_upd % base.eval_every else 0)
    per_update_s = (rollout + update + other) / updates + ckpt / base.checkpoint_every
    eval_s = periodic * base.eval_hands / max(cfg.eval_hands, 1)
    final_s = final * base.final_eval_hands / max(cfg.final_eval_hands, 1)
    files_s = finish - final  # policy file, eval.json, curve.png (once)
    total = setup + n_upd * per_update_s + n_eval * eval_s + final_s + files_s
    print(
        f"projected full run ({n_upd} updates, {n_eval} periodic evals of {base.eval_hands} "
        f"hands, final eval of {base.final_eval_hands}): {total / 60:.1f} min, "
        f"{n_upd * per / total:,.0f} agent-steps/s; evaluations "
        f"{100 * (n_eval * eval_s + final_s) / total:.1f}% of it"
    )


if __name__ == "__main__":
    sys.exit(main())
