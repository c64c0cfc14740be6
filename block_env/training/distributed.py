"""The ranks of a data-parallel PPO run (DD-PPO) and the few collectives the trainer needs.

Every rank owns its own batched games, opponents and random streams and computes the PPO
gradient on its own decisions; the gradients are averaged with one all-reduce per optimizer
step, so every rank applies the same update and holds the same weights (checked after every
update). Rank 0 alone writes the run folder and evaluates.

``Ranks`` is the trainer's view of that world. ``Ranks.single()`` is one process with no
process group: every collective is then the identity, and the trainer runs its
single-process computation unchanged. Under ``torchrun`` (or ``python train.py nproc=N``, which
starts the same launcher, or Ray Train) ``Ranks.from_environment`` joins the process group
from the launcher's ``RANK``/``WORLD_SIZE``/``MASTER_*`` variables: gloo for the CPU, with
NCCL beside it for CUDA tensors when CUDA is available.

Failures never hang: collectives wait at most ``timeout`` seconds, and a peer that died or
stopped answering surfaces as ``PeerLost`` (one line, exit status 1). Errors a user can cause
on one rank (a bad config on one node, a diverged loss) reach every rank through ``agree``,
and rank 0 reports them, naming the rank.
"""

from __future__ import annotations

import hashlib
import io
import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import torch

from block_env.training import errors
from block_env.training.errors import ConfigError, PeerLost, RankFailed, TrainError

DEFAULT_TIMEOUT_S = 600.0
# errors whose constructor takes more than a message: ``agree`` cannot re-raise them as they are
NOT_BY_MESSAGE = (errors.Interrupted, RankFailed)


def launched() -> bool:
    """Whether this process was started as one rank of a launcher (torchrun, nproc, Ray)."""
    return "WORLD_SIZE" in os.environ and "RANK" in os.environ


def restarted() -> bool:
    """Whether torchrun restarted this rank after a failure (``--max-restarts``)."""
    return int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") or 0) > 0


def rank_seed(seed: int, rank: int) -> int:
    """The seed of rank ``rank``'s games and random streams: the run's own seed on rank 0
    (a 1-rank run is the single-process run), a stream of its own on every other rank."""
    if rank == 0:
        return seed
    return int(np.random.SeedSequence([seed, rank]).generate_state(1)[0])


def pin_to_cores(local_rank: int, local_world_size: int, threads: int) -> list[int] | None:
    """Bind this rank to ``threads`` cores of its own, the local ranks side by side, when
    the process may use enough cores for all of them (else None, nothing changed). Ranks
    that stay on their cores wait less for each other at every all-reduce (on two cores,
    two ranks: 1.73x one rank pinned, 1.68x not; docs/distributed.md)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    if local_world_size < 2 or len(cpus) < local_world_size * threads:
        return None
    mine = cpus[local_rank * threads : (local_rank + 1) * threads]
    os.sched_setaffinity(0, mine)
    return mine


def to_bytes(obj: Any) -> bytes:
    """``obj`` (tensors, numbers, strings, lists and dicts of them) as ``torch.save`` bytes."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def from_bytes(data: bytes) -> Any:
    """The object of ``to_bytes`` (``weights_only``: nothing that could run code)."""
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


def weights_digest(model: torch.nn.Module) -> bytes:
    """A 16-byte digest of every parameter and buffer, bit for bit."""
    h = hashlib.blake2b(digest_size=16)
    for name, tensor in model.state_dict().items():
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.digest()


@dataclass
class Ranks:
    """One rank's place in the run: ``rank`` of ``world_size``, ``local_rank`` on its node."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    timeout_s: float = DEFAULT_TIMEOUT_S
    owns_group: bool = False  # this object made the process group (and destroys it)

    @classmethod
    def single(cls) -> Ranks:
        return cls()

    @classmethod
    def from_environment(cls, timeout_s: float = DEFAULT_TIMEOUT_S) -> Ranks:
        """Join (or adopt, under Ray Train) the launcher's process group."""
        import torch.distributed as dist

        owns = False
        if not dist.is_initialized():
            backend = "cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo"
            timeout = timedelta(seconds=timeout_s)
            if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
                # torchrun's store outlives a restart: keys of this attempt of their own, or
                # a restarted rank can read a dead rank's address and fail to connect
                rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
                base = dist.TCPStore(
                    os.environ["MASTER_ADDR"],
                    int(os.environ["MASTER_PORT"]),
                    world,
                    is_master=False,
                    timeout=timeout,
                )
                attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
                store = dist.PrefixStore(f"block-env/attempt_{attempt}", base)
                dist.init_process_group(
                    backend, store=store, rank=rank, world_size=world, timeout=timeout
                )
            else:
                dist.init_process_group(backend, timeout=timeout)
            owns = True
        local = int(os.environ.get("LOCAL_RANK", "0") or 0)
        return cls(dist.get_rank(), dist.get_world_size(), local, timeout_s, owns)

    @property
    def main(self) -> bool:
        """Rank 0: the one that writes the run folder, evaluates and prints."""
        return self.rank == 0

    @property
    def many(self) -> bool:
        return self.world_size > 1

    def close(self) -> None:
        if self.owns_group:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()
            self.owns_group = False

    # ------------------------------------------------------------------ collectives

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """A collective; a dead peer or the timeout becomes PeerLost."""
        try:
            return fn(*args, **kwargs)
        except RuntimeError as exc:  # DistBackendError, gloo's "Connection closed", timeouts
            detail = " ".join(str(exc).split())[:160]
            raise PeerLost(
                f"rank {self.rank}: lost the other ranks during {what} (another rank stopped, "
                f"was killed or stopped answering for {self.timeout_s:.0f} s: {detail})"
            ) from None

    def all_reduce(self, tensor: torch.Tensor, op: str = "sum", what: str = "an update") -> None:
        """In place over all ranks (``sum`` or ``max``); nothing with one rank."""
        if not self.many:
            return
        import torch.distributed as dist

        reduce_op = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX}[op]
        self._call(what, dist.all_reduce, tensor, op=reduce_op)

    def flags(self, *values: float, what: str = "an update") -> list[float]:
        """The maximum of each value over all ranks (stop requests, errors, minimum counts
        as negated maxima)."""
        t = torch.tensor(values, dtype=torch.float64)
        self.all_reduce(t, "max", what)
        return t.tolist()

    def total(self, values: list[float]) -> list[float]:
        """Each value summed over the ranks (the values themselves on one rank)."""
        if not self.many:
            return list(values)
        t = torch.tensor(values, dtype=torch.float64)
        self.all_reduce(t, "sum", "the statistics")
        return t.tolist()

    def mean(self, values: list[float]) -> list[float]:
        """Each value averaged over the ranks (exactly the values themselves on one rank)."""
        if not self.many:
            return list(values)
        return [v / self.world_size for v in self.total(values)]

    def average_gradients(self, params: list[torch.nn.Parameter], failed: bool) -> bool:
        """Replace each gradient by its mean over the ranks (one all-reduce of one flat
        buffer, which also carries whether any rank ``failed``); returns that. A parameter
        without a gradient adds zeros and keeps none (every rank runs the same graph)."""
        if not self.many:
            return failed
        parts = [p.new_zeros(p.numel()) if p.grad is None else p.grad.reshape(-1) for p in params]
        flat = torch.cat([*parts, torch.ones(1, device=params[0].device)])
        flat[-1] = float(failed)
        if failed:  # a rank whose loss is not finite adds nothing (all ranks stop anyway)
            flat[:-1] = 0
        self.all_reduce(flat, "sum", "the gradient all-reduce")
        failed_anywhere = bool(flat[-1] > 0)
        flat /= self.world_size
        offset = 0
        for p in params:
            n = p.numel()
            if p.grad is not None:
                p.grad.copy_(flat[offset : offset + n].view_as(p))
            offset += n
        return failed_anywhere

    def gather(self, obj: Any) -> list[Any] | None:
        """Every rank's ``obj`` on rank 0 (in rank order), None elsewhere."""
        if not self.many:
            return [obj]
        import torch.distributed as dist

        data = torch.frombuffer(bytearray(to_bytes(obj)), dtype=torch.uint8)
        size = torch.tensor([data.numel()], dtype=torch.int64)
        sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(self.world_size)]
        self._call("a checkpoint", dist.all_gather, sizes, size)
        longest = int(max(s.item() for s in sizes))
        padded = torch.zeros(longest, dtype=torch.uint8)
        padded[: data.numel()] = data
        parts = [torch.zeros(longest, dtype=torch.uint8) for _ in range(self.world_size)]
        self._call("a checkpoint", dist.all_gather, parts, padded)
        if not self.main:
            return None
        return [from_bytes(p[: int(s.item())].numpy().tobytes()) for p, s in zip(parts, sizes)]

    def broadcast(self, obj: Any = None) -> Any:
        """Rank 0's ``obj`` on every rank."""
        if not self.many:
            return obj
        import torch.distributed as dist

        data = torch.frombuffer(bytearray(to_bytes(obj)), dtype=torch.uint8) if self.main else None
        size = torch.tensor([0 if data is None else data.numel()], dtype=torch.int64)
        self._call("the start", dist.broadcast, size, 0)
        if data is None:
            data = torch.zeros(int(size.item()), dtype=torch.uint8)
        self._call("the start", dist.broadcast, data, 0)
        return obj if self.main else from_bytes(data.numpy().tobytes())

    def agree(self, error: TrainError | None) -> None:
        """Every rank learns whether any rank hit ``error``; if one did, every rank raises
        the first failing rank's error (its class and message, the rank named when it is
        not 0), so that all ranks stop at the same point with the same exit status."""
        if not self.many:
            if error is not None:
                raise error
            return
        (failed,) = self.flags(float(error is not None), what="an error check")
        if not failed:
            return
        mine = None if error is None else [type(error).__name__, str(error), error.exit_status]
        reports = self.gather(mine)
        first = None
        if reports is not None:
            first = next([r, *rep] for r, rep in enumerate(reports) if rep is not None)
        rank, kind, message, status = self.broadcast(first)
        message = message if rank == 0 else f"rank {rank}: {message}"
        cls = getattr(errors, kind, None)
        if isinstance(cls, type) and issubclass(cls, TrainError) and cls not in NOT_BY_MESSAGE:
            raise cls(message)
        raise RankFailed(message, status)

    def check_same_config(self, config: dict[str, Any], per_rank: set[str]) -> None:
        """ConfigError on every rank unless all ranks were given the same config (a node
        started with another file or other overrides), naming the first differing keys;
        the ``per_rank`` keys may differ."""
        if not self.many:
            return
        configs = self.gather({k: v for k, v in config.items() if k not in per_rank})
        verdict = None
        if configs is not None:
            for r, other in enumerate(configs[1:], start=1):
                diff = sorted(
                    k for k in set(other) | set(configs[0]) if other.get(k) != configs[0].get(k)
                )
                if diff:
                    shown = ", ".join(
                        f"{k}: {configs[0].get(k)!r} vs {other.get(k)!r}" for k in diff[:3]
                    )
                    verdict = (
                        f"rank {r} was started with another config than rank 0 ({shown}): "
                        f"start every rank with the same config file and overrides"
                    )
                    break
        verdict = self.broadcast(verdict)
        if verdict is not None:
            raise ConfigError(verdict)

    def check_replicas(self, model: torch.nn.Module, update: int) -> None:
        """TrainError unless every rank holds bit-identical weights."""
        if not self.many:
            return
        digests = self.gather(weights_digest(model).hex())
        verdict = None
        if digests is not None and len(set(digests)) > 1:
            odd = [r for r, d in enumerate(digests) if d != digests[0]]
            verdict = (
                f"after update {update} the weights of rank(s) {odd} differ from rank 0's: "
                f"the ranks no longer run the same computation (mixed hardware or library "
                f"versions across nodes?)"
            )
        verdict = self.broadcast(verdict)
        if verdict is not None:
            raise RankFailed(verdict, 1)
