"""The batched engine's torch backend (CPU or CUDA): ``TorchBackend`` computes with torch's
own kernels (the path CUDA takes); ``TorchNumpyBackend`` runs the numpy or compiled kernels on
the CPU with torch's randomness (the same generators and draws, so the same deals and actions
as the torch kernels). torch is imported when a backend is made, not with this module.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from block_env.batched.backend import (
    _BYTE_BITS64,
    _NP_DTYPES,
    NumpyBackend,
    _check_actions,
    _select_random_bit_words,
    check_mask,
)
from block_env.batched.layout import SELECT8 as _SELECT8


class TorchBackend:
    """torch tensors on ``device`` (CPU or CUDA); randomness from ``torch.Generator``."""

    name = "torch"
    kernels = "torch"

    def __init__(self, device: Any = "cpu") -> None:
        try:
            import torch
        except ImportError as err:  # pragma: no cover - torch is an optional extra
            raise ValueError("backend='torch' needs torch: pip install block-env[train]") from err
        self.torch = torch
        self.device = _torch_device(torch, device)
        self._dtypes = {
            "i64": torch.int64,
            "f32": torch.float32,
            "f64": torch.float64,
            "bool": torch.bool,
            "i8": torch.int8,
        }
        byte_bits = (np.arange(256)[:, None] >> np.arange(8)) & 1  # bits of each byte value
        self._byte_bits64 = self.table(_BYTE_BITS64)
        self._byte_pop = self.table(byte_bits.sum(1).astype(np.uint8))  # set bits of a byte
        self._select8 = self.table(_SELECT8)

    def table(self, array: np.ndarray) -> Any:
        return self.torch.as_tensor(np.ascontiguousarray(array), device=self.device)

    def from_numpy(self, array: np.ndarray) -> Any:
        return self.torch.as_tensor(np.asarray(array), device=self.device)

    def to_numpy(self, x: Any) -> np.ndarray:
        return x.detach().cpu().numpy()

    def zeros(self, shape: Any, dtype: str) -> Any:
        return self.torch.zeros(shape, dtype=self._dtypes[dtype], device=self.device)

    def empty(self, shape: Any, dtype: str) -> Any:
        if self.device.type == "cpu":
            # numpy's allocator keeps freed blocks mapped, torch's CPU allocator does not:
            # a fresh multi-megabyte torch tensor per step pays its page faults each time
            return self.torch.from_numpy(np.empty(shape, dtype=_NP_DTYPES[dtype]))
        return self.torch.empty(shape, dtype=self._dtypes[dtype], device=self.device)

    def arange(self, n: int) -> Any:
        return self.torch.arange(n, device=self.device)

    def where(self, cond: Any, a: Any, b: Any) -> Any:
        return self.torch.where(cond, a, b)

    # index_select / index_copy_ are several times faster than tensor[idx] on the CPU
    def take(self, table: Any, idx: Any) -> Any:
        """``table[idx]`` for a 1-D table (a lookup), idx of any shape."""
        if idx.dim() == 1:
            return self.torch.index_select(table, 0, idx)
        return self.torch.index_select(table, 0, idx.reshape(-1)).reshape(idx.shape)

    def take_rows(self, table: Any, idx: Any) -> Any:
        """``table[idx]`` for a 2-D table and 1-D idx: whole rows."""
        return self.torch.index_select(table, 0, idx)

    def put(self, array: Any, idx: Any, values: Any) -> None:
        """``array[idx] = values`` along the first axis, in place (values: a tensor of the
        array's dtype, or a number)."""
        if isinstance(values, (int, float, bool)):
            array.index_fill_(0, idx, values)
        else:
            array.index_copy_(0, idx, values)

    def put_rows(self, array: Any, idx: Any, values: Any) -> None:
        """``array[idx] = values`` for a 2-D array, whole rows."""
        array.index_copy_(0, idx, values)

    def cat(self, parts: tuple) -> Any:
        """The 1-D tensors ``parts`` joined end to end."""
        return self.torch.cat(parts)

    def nonzero(self, mask: Any) -> Any:
        return self.torch.nonzero(mask).reshape(-1)

    def in_range(self, x: Any, high: int) -> Any:
        """``(0 <= x) & (x < high)``."""
        return (x >= 0) & (x < high)

    def any(self, mask: Any) -> bool:
        return bool(mask.any())

    def all(self, mask: Any) -> bool:
        return bool(mask.all())

    def min1(self, x: Any) -> Any:
        return x.amin(1)

    def minimum(self, x: Any, y: Any) -> Any:
        return self.torch.minimum(x, y)

    def maximum(self, x: Any, y: Any) -> Any:
        return self.torch.maximum(x, y)

    def argmax1(self, x: Any) -> Any:
        return self.torch.argmax(x.to(self.torch.int64) if x.dtype == self.torch.bool else x, 1)

    def full(self, n: int, value: int) -> Any:
        """(n,) int64 filled with ``value``."""
        return self.torch.full((n,), value, dtype=self.torch.int64, device=self.device)

    def take_cols(self, x: Any, idx: Any) -> Any:
        """``x[:, idx]`` for a 2-D x and 1-D idx."""
        return self.torch.index_select(x, 1, idx)

    def max1(self, x: Any) -> Any:
        return x.amax(1)

    def i64(self, x: Any) -> Any:
        return x.to(self.torch.int64)

    def f32(self, x: Any) -> Any:
        return x.to(self.torch.float32)

    def f64(self, x: Any) -> Any:
        return x.to(self.torch.float64)

    def copy(self, x: Any) -> Any:
        return x.clone()

    def _byte_indices(self, words: Any) -> Any:
        """The bytes of (M, k) int64 words as int64 indices, (M * 8 k,)."""
        return words.contiguous().view(self.torch.uint8).reshape(-1).long()

    def unpack_bits(self, words: Any) -> Any:
        """(M, k) int64 words -> (M, 64 k) uint8 bits (a new tensor), bit j of word i at
        column 64 i + j: each byte looked up as the 8 bytes of its bits (one int64 gather)."""
        bits = self.torch.index_select(self._byte_bits64, 0, self._byte_indices(words))
        return bits.view(self.torch.uint8).reshape(words.shape[0], -1)

    def unpack_words(self, words: Any) -> Any:
        """(M, k) int64 words -> (M, 8 k) int64: word 8 i + j holds bit 8 j + r of word i
        as its byte r."""
        bits = self.torch.index_select(self._byte_bits64, 0, self._byte_indices(words))
        return bits.reshape(words.shape[0], -1)

    def as_bytes(self, x: Any) -> Any:
        """A uint8 view of a contiguous int64 tensor (last axis 8 times longer)."""
        return x.view(self.torch.uint8)

    def u8(self, x: Any) -> Any:
        return x.to(self.torch.uint8)

    def assign(self, out: Any, values: Any) -> None:
        """``out[...] = values``, cast to out's dtype."""
        out.copy_(values)

    def unpack_mask(self, legal: Any, width: int) -> Any:
        """(M,) int64 action words -> (M, width) int8 action masks."""
        bits = self.torch.index_select(self._byte_bits64, 0, self._byte_indices(legal[:, None]))
        bits = bits.view(self.torch.int8).reshape(legal.shape[0], -1)[:, :width]
        # a copy, never a view of the wider tensor (a (1, width) slice counts as contiguous)
        return bits.clone(memory_format=self.torch.contiguous_format)

    def make_rng(self, seed: int | None) -> Any:
        """A torch generator; seeds of any size (as numpy takes) are folded into the 64 bits
        torch takes, seeds below 2**63 are used as they are."""
        gen = self.torch.Generator(device=self.device)
        if seed is None:
            gen.seed()
        else:
            gen.manual_seed(torch_seed(seed))
        return gen

    def permutations(self, rng: Any, k: int, num_tiles: int = 28) -> Any:
        """k independent uniform permutations of the T tiles, shape (k, T)."""
        keys = self.torch.rand((k, num_tiles), generator=rng, device=self.device)
        if self.device.type != "cpu" or num_tiles > 32:
            return keys.argsort(dim=1)
        return argsort_rows_cpu(self.torch, keys)

    def integers(self, rng: Any, high: int, k: int) -> Any:
        return self.torch.randint(high, (k,), generator=rng, device=self.device)

    def sample_legal(self, rng: Any, mask: Any) -> Any:
        """One uniformly random legal action per row of an int8 (M, 2T+1) mask."""
        torch = self.torch
        check_mask(tuple(mask.shape))
        running = (mask != 0).cumsum(1, dtype=torch.int16)  # legal actions up to each column
        u = torch.rand(mask.shape[0], generator=rng, device=self.device)
        count = running[:, -1]
        if not bool(count.all()):
            raise ValueError(f"mask row {int(count.argmin())} has no legal action to sample")
        rank = torch.minimum((u * count).to(torch.int16), count - 1)  # 0-based rank
        # rows of ``running`` are sorted: the chosen column is the first one above ``rank``
        return torch.searchsorted(running, rank[:, None], right=True)[:, 0]

    def uniform(self, rng: Any, m: int) -> Any:
        """(m,) float32 uniform draws in [0, 1): those ``sample_words`` ranks with."""
        return self.torch.rand(m, generator=rng, device=self.device)

    def sample_words(self, rng: Any, words: Any) -> Any:
        """One uniformly random set bit per (M,) int64 word (bits 0..62, none zero): the same
        draw and choice as ``sample_legal`` on the mask those words unpack to."""
        u = self.uniform(rng, words.shape[0])
        if self.device.type == "cpu":  # numpy on the same memory: several times fewer calls
            words = np.ascontiguousarray(words.numpy()).view(np.uint64)
            return self.torch.from_numpy(_select_random_bit_words(words, u.numpy()))
        return self.select_bits(words, u)

    def select_bits(self, words: Any, u: Any) -> Any:
        """The torch kernel of ``sample_words`` (used on CUDA; the same choices as numpy's):
        torch has no popcount, so bytes are counted by a table, the rest is SWAR on int64
        (wrapping)."""
        torch = self.torch
        as_bytes = words.contiguous().view(torch.uint8).reshape(-1).long()
        per_byte = torch.index_select(self._byte_pop, 0, as_bytes).view(torch.int64)
        running = per_byte * _SWAR_ONES  # byte j: set bits in bytes 0..j (top byte < 128)
        total = running >> 56
        if not bool(total.all()):
            raise ValueError(f"row {int(total.argmin())} has no legal action to sample")
        rank = torch.minimum((u * total.to(torch.int16)).to(torch.int16), total - 1).long()
        # high bit of byte j set iff running_j > rank (running_j <= 63: no borrow)
        above = ((running | _SWAR_HIGH) - (rank + 1) * _SWAR_ONES) & _SWAR_HIGH
        below = 8 - ((((above >> 7) & _SWAR_ONES) * _SWAR_ONES) >> 56)  # bytes with running <= rank
        shift = below * 8
        before = ((running << 8) >> shift) & 0xFF
        chosen = ((words >> shift) & 0xFF) * 8
        return shift + torch.index_select(self._select8, 0, chosen + rank - before)

    def as_actions(self, actions: Any, num_envs: int) -> Any:
        torch = self.torch
        if isinstance(actions, torch.Tensor):
            kind = "i"
            if actions.dtype == torch.bool:
                kind = "b"
            elif actions.is_floating_point() or actions.is_complex():
                kind = "f"
            _check_actions(tuple(actions.shape), kind, num_envs)
            return actions.to(device=self.device, dtype=torch.int64)
        arr = np.asarray(actions)
        _check_actions(arr.shape, arr.dtype.kind, num_envs)
        return torch.as_tensor(arr.astype(np.int64), device=self.device)


_SWAR_ONES = 0x0101010101010101
_SWAR_HIGH = 0x8080808080808080 - (1 << 64)  # as a signed int64


def argsort_rows_cpu(torch: Any, keys: Any) -> Any:
    """``keys.argsort(dim=1)`` for a 2-D CPU float32 tensor of keys in [0, 1) with at most 32
    columns, bit for bit, several times faster. Each key's column index replaces the 5
    lowest bits of its bit pattern (non-negative float32s order as their int32 patterns) and
    numpy sorts the patterns: where the keys of a row differ above those 5 bits, that order
    is the keys' unique order. The other rows (two keys equal, or equal but for the lowest
    bits: about 1e-3 per row of 28 ``torch.rand`` keys) are sorted by torch itself, whose
    order of equal keys depends on the row alone."""
    patterns = keys.numpy().view(np.int32) & ~31
    cols = keys.shape[1]
    patterns |= np.arange(cols, dtype=np.int32)
    patterns.sort(axis=1)
    # neighbours equal above the 5 lowest bits (their xor below 32): rows to sort by torch
    same_high = (patterns[:, 1:] ^ patterns[:, :-1]) < 32
    perm = torch.from_numpy((patterns & 31).astype(np.int64))
    if same_high.any():
        rows = torch.from_numpy(np.flatnonzero(same_high.any(1)))
        perm[rows] = keys[rows].argsort(dim=1)
    return perm


def torch_seed(seed: int) -> int:
    """A seed torch's ``manual_seed`` accepts (0 <= s < 2**63) for any int seed >= 0: small
    seeds unchanged, larger ones hashed by numpy's ``SeedSequence`` (as numpy seeds them)."""
    seed = int(seed)
    if seed < 0:
        raise ValueError(f"seed={seed!r} is not allowed: use an int >= 0")
    if seed < 2**63:
        return seed
    return int(np.random.SeedSequence(seed).generate_state(1, np.uint64)[0] >> np.uint64(1))


def _torch_device(torch: Any, device: Any) -> Any:
    """``torch.device(device)`` after checking that it exists here; ValueError naming what
    was asked and the devices available otherwise."""
    available = ["cpu"]
    if torch.cuda.is_available():
        available += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        available.append("mps")
    where = f"available here: {', '.join(available)}"
    if isinstance(device, bool) or not isinstance(device, (str, int, torch.device)):
        raise ValueError(
            f"device={device!r} is not allowed: use a device name such as 'cpu' or 'cuda:0' "
            f"(a str, an int or a torch.device); {where}"
        )
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as err:
        raise ValueError(f"device={device!r} is not a torch device ({err}); {where}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} needs CUDA, which this torch cannot use; {where}")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ValueError(f"device={device!r} does not exist; {where}")
    try:
        torch.empty(0, device=dev)
    except (RuntimeError, TypeError, AssertionError) as err:
        raise ValueError(f"device={device!r} is not usable by torch ({err}); {where}") from None
    return dev


class TorchNumpyBackend(NumpyBackend):
    """The numpy kernels for ``backend="torch"`` on the CPU: numpy arrays inside the engine,
    randomness from the ``torch.Generator`` of the wrapped ``TorchBackend`` (the same draws,
    hence the same deals, as the torch kernels)."""

    name = "torch"
    kernels = "numpy"

    def __init__(self, torch_backend: TorchBackend) -> None:
        self.torch_backend = torch_backend
        self.device = torch_backend.device

    def make_rng(self, seed: int | None) -> Any:
        return self.torch_backend.make_rng(seed)

    def permutations(self, rng: Any, k: int, num_tiles: int = 28) -> np.ndarray:
        return self.torch_backend.permutations(rng, k, num_tiles).numpy()

    def integers(self, rng: Any, high: int, k: int) -> np.ndarray:
        return self.torch_backend.integers(rng, high, k).numpy()

    def uniform(self, rng: Any, m: int) -> np.ndarray:
        return self.torch_backend.uniform(rng, m).numpy()

    def as_actions(self, actions: Any, num_envs: int) -> np.ndarray:
        return self.torch_backend.as_actions(actions, num_envs).numpy()

    def sample_legal(self, rng: Any, mask: Any) -> Any:
        raise NotImplementedError("sampling goes through the TorchBackend")

    sample_words = sample_legal
