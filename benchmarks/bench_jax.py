"""Throughput of ``block_env.jax`` (random legal play under ``jit`` + ``vmap`` + ``scan``)
beside the batched engine's compiled kernels, in agent-steps per second.

The JAX side runs ``--scan`` steps per call of one compiled program: each step picks a
random legal action per game from ``state.legal_action_mask`` and applies it with
``BlockEnv.step_autoreset`` (``step``, and a new episode where one ended), which also
computes the next observation and mask, as every step of the batched engine does. Actions
are chosen without ``jax.random`` (whose generator costs more than a game step on a CPU):
each legal action gets a cheap integer hash of (step counter, game index, action), and the
action with the largest hash is played; the keys that deal new hands and episodes are the
raw words (step counter, game index). So the timing measures the game.

The batched engine (``BatchedEnv``, compiled numba kernels, actions from
``sample_actions()``, as ``bench_batched.py`` times it) runs in the same process, the two
timed in turn so that both see the same machine load; the ratio is the median of the
per-turn ratios. Also reported: the compile time of the scanned program and the bytes
of one game's state (position, and the observation and mask it carries).

Usage::

    python benchmarks/bench_jax.py                 # B = 1,024 .. 65,536 on the CPU
    python benchmarks/bench_jax.py --quick         # B = 4,096 only, short runs
    python benchmarks/bench_jax.py --sizes 4096 --repeats 5

On a machine where JAX sees a GPU the same command times the GPU (``jax.devices()[0]``) at
larger batches (``--sizes`` defaults to 65,536 .. 1,048,576 there) and skips the CPU-only
engine unless ``--with-batched`` is given.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from typing import Any

import jax
import jax.numpy as jnp

import block_env.jax as bj
from block_env.batched.backend import numba_available

HEADER = (
    "| engine | device | B | agent-steps/s | x batched | per CPU-s | x batched (CPU) "
    "| compile s | state B/game | obs+mask B/game |"
)


def _hash(x: jax.Array) -> jax.Array:
    x = x * jnp.uint32(0x9E3779B1)
    return x ^ (x >> 16)


def choose(mask: jax.Array, step: jax.Array, game: jax.Array) -> jax.Array:
    """A random legal action of one game: the legal action whose hash of (step, game,
    action) is largest (the action number in the low 6 bits breaks ties)."""
    u = _hash(step.astype(jnp.uint32) ^ _hash(game.astype(jnp.uint32) + jnp.uint32(0x632BE5AB)))
    a = jnp.arange(mask.shape[0], dtype=jnp.uint32)
    keys = (_hash(u + a * jnp.uint32(0x85EBCA77)) & ~jnp.uint32(63)) | a
    return (jnp.max(jnp.where(mask, keys, 0)) & 63).astype(jnp.int32)


def make_runner(env: bj.BlockEnv, num_envs: int, steps: int):
    """A compiled function (state, step counter) -> (state, counter) playing ``steps``
    random legal steps in every game; and its compile time."""
    games = jnp.arange(num_envs, dtype=jnp.uint32)

    def one(state: bj.State, step: jax.Array, game: jax.Array) -> bj.State:
        action = choose(state.legal_action_mask, step, game)
        key = jnp.stack([step.astype(jnp.uint32), game])  # raw key words: no generator
        return env.step_autoreset(state, action, key)

    def body(carry, _):
        state, step = carry
        state = jax.vmap(one, in_axes=(0, None, 0))(state, step, games)
        return (state, step + 1), None

    def run(state: bj.State, step: jax.Array):
        return jax.lax.scan(body, (state, step), None, length=steps)[0]

    state = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.PRNGKey(0), num_envs))
    start = time.perf_counter()
    compiled = jax.jit(run, donate_argnums=0).lower(state, jnp.uint32(0)).compile()
    return compiled, state, time.perf_counter() - start


class JaxRun:
    """Random legal play of ``num_envs`` JAX games, ``steps`` per compiled call."""

    def __init__(self, config: dict, num_envs: int, steps: int) -> None:
        env = bj.make(**config)
        self.run, state, self.compile_s = make_runner(env, num_envs, steps)
        self.carry = (state, jnp.uint32(0))
        self.per_call = steps * num_envs
        leaves = jax.tree_util.tree_leaves_with_path(state)
        outputs = sum(x.nbytes for p, x in leaves if jax.tree_util.keystr(p) in _OUTPUTS)
        self.state_bytes = (sum(x.nbytes for _, x in leaves) - outputs) / num_envs
        self.output_bytes = outputs / num_envs

    def rate(self, budget: float) -> tuple[float, float]:
        """Agent-steps per second and per CPU-second of this process, over at least
        ``budget`` seconds."""
        calls = 0
        jax.block_until_ready(self.carry)
        start, cpu = time.perf_counter(), time.process_time()
        while True:
            self.carry = self.run(*self.carry)
            calls += 1
            if calls % 4 == 0 or self.per_call >= 1 << 20:
                jax.block_until_ready(self.carry)
                elapsed = time.perf_counter() - start
                if elapsed >= budget:
                    steps = calls * self.per_call
                    return steps / elapsed, steps / (time.process_time() - cpu)


_OUTPUTS = (".observation", ".legal_action_mask")


class BatchedRun:
    """The batched engine with the compiled kernels, as ``bench_batched.py`` times it:
    ``step(sample_actions())``, which hands out the next observation and mask."""

    def __init__(self, config: dict, num_envs: int) -> None:
        from block_env.batched import BatchedEnv

        self.env = BatchedEnv(num_envs, backend="numpy", kernels="numba", **config)
        self.env.reset(seed=0)
        self.num_envs = num_envs

    def rate(self, budget: float) -> tuple[float, float]:
        """Agent-steps per second and per CPU-second, over at least ``budget`` seconds."""
        steps = 0
        start, cpu = time.perf_counter(), time.process_time()
        while True:
            for _ in range(10):
                self.env.step(self.env.sample_actions())
            steps += 10 * self.num_envs
            elapsed = time.perf_counter() - start
            if elapsed >= budget:
                return steps / elapsed, steps / (time.process_time() - cpu)


def bench_pair(
    config: dict, num_envs: int, steps: int, seconds: float, repeats: int, batched: bool
) -> dict[str, Any]:
    """Medians of ``repeats`` timed runs of each engine, taken in turn (so that both see
    the same machine load), and the median of the per-turn ratios."""
    jax_run = JaxRun(config, num_envs, steps)
    base = BatchedRun(config, num_envs) if batched else None
    jax_run.rate(seconds / 4)
    if base is not None:
        base.rate(seconds / 4)
    turns = []
    for _ in range(repeats):
        b = base.rate(seconds) if base is not None else None
        turns.append((jax_run.rate(seconds), b))
    out: dict[str, Any] = {
        "rate": statistics.median(j[0] for j, _ in turns),
        "cpu_rate": statistics.median(j[1] for j, _ in turns),
        "compile": jax_run.compile_s,
        "state_bytes": jax_run.state_bytes,
        "output_bytes": jax_run.output_bytes,
        "base": None,
    }
    if base is not None:
        out["base"] = statistics.median(b[0] for _, b in turns)
        out["base_cpu"] = statistics.median(b[1] for _, b in turns)
        out["ratio"] = statistics.median(j[0] / b[0] for j, b in turns)
        out["cpu_ratio"] = statistics.median(j[1] / b[1] for j, b in turns)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="B = 4,096, short runs")
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--seconds", type=float, default=None, help="length of each timed run")
    parser.add_argument("--scan", type=int, default=32, help="steps per compiled call")
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--episode", default="match", choices=["match", "hand"])
    parser.add_argument(
        "--with-batched", action="store_true", help="time the CPU batched engine on a GPU too"
    )
    args = parser.parse_args(argv)
    device = jax.devices()[0]
    on_gpu = device.platform == "gpu"
    default_sizes = [65_536, 262_144, 1_048_576] if on_gpu else [1024, 4096, 16_384, 65_536]
    sizes = args.sizes or ([4096] if args.quick else default_sizes)
    repeats = args.repeats or (3 if args.quick else 5)
    seconds = args.seconds or (0.5 if args.quick else 1.0)
    config = {"num_players": args.players, "episode": args.episode}
    with_batched = (args.with_batched or not on_gpu) and numba_available()
    print(
        f"# block_env.jax benchmark: {config}, jax {jax.__version__} on {device.device_kind} "
        f"({device.platform}), host {platform.processor() or platform.machine()} with "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; {args.scan} steps per call, "
        f"medians of {repeats} x {seconds:.1f} s"
    )
    print()
    print(HEADER)
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for num_envs in sizes:
        r = bench_pair(config, num_envs, args.scan, seconds, repeats, with_batched)
        ratio = cpu_ratio = "-"
        if r["base"] is not None:
            print(
                f"| batched (numba) | cpu | {num_envs} | {r['base']:,.0f} | 1.00 "
                f"| {r['base_cpu']:,.0f} | 1.00 | - | - | - |"
            )
            ratio, cpu_ratio = f"{r['ratio']:.2f}", f"{r['cpu_ratio']:.2f}"
        print(
            f"| block_env.jax | {device.platform} | {num_envs} | {r['rate']:,.0f} | {ratio} "
            f"| {r['cpu_rate']:,.0f} | {cpu_ratio} | {r['compile']:.1f} "
            f"| {r['state_bytes']:,.0f} | {r['output_bytes']:,.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
