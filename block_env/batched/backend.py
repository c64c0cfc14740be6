"""Array backends of the batched engine: numpy here, torch (CPU or CUDA) in ``torch_backend``;
``choice`` builds the one a ``BatchedEnv`` asks for.

The engine is written once with Python operators (``&``, ``|``, ``<<``, ``>>``, ``%``,
comparisons, fancy indexing), which numpy arrays and torch tensors share; everything else it
needs goes through the few methods of these classes. All integers are int64.

Kernels: the engine's array operations run either as numpy calls (``NumpyBackend``) or as
torch calls (``TorchBackend``, the path CUDA uses); on the CPU most of a step can instead run
as compiled loops over the games (``kernels="numba"``, ``block_env.batched.numba_kernels``, over the
same numpy state arrays; ``"auto"`` takes them where numba is installed). ``backend="torch"``
on the CPU runs the numpy or compiled kernels by default (``TorchNumpyBackend``: numpy calls
cost a few times less than torch's on small arrays, and a step makes a few hundred): the
randomness is still torch's (the same generators and draws, so the same deals and actions as
the torch kernels), and the arrays handed out are torch tensors sharing the memory of the new
numpy arrays (``torch.from_numpy``, no copy). ``kernels="torch"`` keeps the torch kernels on
the CPU; the tests run every combination and compare them with the AEC env and with each
other.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from block_env.batched.layout import SELECT8 as _SELECT8

BACKENDS = ("numpy", "torch")

if sys.byteorder != "little":  # the bit unpacking reads int64 words byte by byte
    raise ImportError("block_env.batched needs a little-endian machine")


class NumpyBackend:
    """numpy arrays on the CPU; randomness from ``numpy.random.Generator``."""

    name = "numpy"
    kernels = "numpy"
    device = "cpu"

    def table(self, array: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(array)

    def from_numpy(self, array: np.ndarray) -> np.ndarray:
        return np.asarray(array)

    def to_numpy(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x)

    def zeros(self, shape: Any, dtype: str) -> np.ndarray:
        return np.zeros(shape, dtype=_NP_DTYPES[dtype])

    def empty(self, shape: Any, dtype: str) -> np.ndarray:
        return np.empty(shape, dtype=_NP_DTYPES[dtype])

    def arange(self, n: int) -> np.ndarray:
        return np.arange(n, dtype=np.int64)

    def where(self, cond: np.ndarray, a: Any, b: Any) -> np.ndarray:
        return np.where(cond, a, b)

    def take(self, table: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``table[idx]`` for a 1-D table (a lookup), idx of any shape."""
        return table.take(idx)

    def take_rows(self, table: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``table[idx]`` for a 2-D table and 1-D idx: whole rows."""
        return table.take(idx, axis=0)

    def put(self, array: np.ndarray, idx: np.ndarray, values: Any) -> None:
        """``array[idx] = values`` along the first axis, in place (values: an array or a
        number)."""
        array[idx] = values

    def put_rows(self, array: np.ndarray, idx: np.ndarray, values: np.ndarray) -> None:
        """``array[idx] = values`` for a C-contiguous 2-D array: each row moved as one item
        (a void view), a few times faster than numpy's row assignment."""
        item = np.dtype((np.void, array.shape[1] * array.itemsize))
        rows = np.ascontiguousarray(values, dtype=array.dtype).view(item).reshape(-1)
        array.view(item).reshape(-1)[idx] = rows

    def cat(self, parts: tuple) -> np.ndarray:
        """The 1-D arrays ``parts`` joined end to end."""
        return np.concatenate(parts)

    def nonzero(self, mask: np.ndarray) -> np.ndarray:
        return np.flatnonzero(mask)

    def in_range(self, x: np.ndarray, high: int) -> np.ndarray:
        """``(0 <= x) & (x < high)`` for int64 x, in one comparison (as unsigned)."""
        return x.view(np.uint64) < np.uint64(high)

    def any(self, mask: np.ndarray) -> bool:
        return bool(mask.any())

    def all(self, mask: np.ndarray) -> bool:
        return bool(mask.all())

    def min1(self, x: np.ndarray) -> np.ndarray:
        return x.min(1)

    def minimum(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.minimum(x, y)

    def maximum(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.maximum(x, y)

    def argmax1(self, x: np.ndarray) -> np.ndarray:
        return x.argmax(1)

    def full(self, n: int, value: int) -> np.ndarray:
        """(n,) int64 filled with ``value``."""
        return np.full(n, value, dtype=np.int64)

    def take_cols(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``x[:, idx]`` for a 2-D x and 1-D idx."""
        return x.take(idx, axis=1)

    def max1(self, x: np.ndarray) -> np.ndarray:
        return x.max(1)

    def i64(self, x: np.ndarray) -> np.ndarray:
        return x.astype(np.int64)

    def f32(self, x: np.ndarray) -> np.ndarray:
        return x.astype(np.float32)

    def f64(self, x: np.ndarray) -> np.ndarray:
        return x.astype(np.float64)

    def copy(self, x: np.ndarray) -> np.ndarray:
        return x.copy()

    def unpack_bits(self, words: np.ndarray) -> np.ndarray:
        """(M, k) int64 words -> (M, 64 k) uint8 bits (a new array), bit j of word i at
        column 64 i + j:
        each byte looked up as the 8 bytes of its bits (one int64 gather, faster than
        ``np.unpackbits``)."""
        m = words.shape[0]
        as_bytes = np.ascontiguousarray(words).view(np.uint8)
        return _BYTE_BITS64.take(as_bytes).view(np.uint8).reshape(m, -1)

    def unpack_words(self, words: np.ndarray) -> np.ndarray:
        """(M, k) int64 words -> (M, 8 k) int64: word 8 i + j holds bit 8 j + r of word i
        as its byte r (``unpack_bits`` as int64 words, to OR more bytes into)."""
        return _BYTE_BITS64.take(np.ascontiguousarray(words).view(np.uint8))

    def as_bytes(self, x: np.ndarray) -> np.ndarray:
        """A uint8 view of a C-contiguous int64 array (last axis 8 times longer)."""
        return x.view(np.uint8)

    def u8(self, x: np.ndarray) -> np.ndarray:
        return x.astype(np.uint8)

    def assign(self, out: np.ndarray, values: np.ndarray) -> None:
        """``out[...] = values``, cast to out's dtype."""
        out[...] = values

    def unpack_mask(self, legal: np.ndarray, width: int) -> np.ndarray:
        """(M,) int64 action words -> (M, width) int8 action masks (unpacked straight to
        the width: no copy of a wider array)."""
        as_bytes = np.ascontiguousarray(legal).view(np.uint8).reshape(-1, 8)
        return np.unpackbits(as_bytes, axis=1, count=width, bitorder="little").view(np.int8)

    def make_rng(self, seed: int | None) -> np.random.Generator:
        return np.random.default_rng(seed)

    def permutations(self, rng: np.random.Generator, k: int, num_tiles: int = 28) -> np.ndarray:
        """k independent uniform permutations of the T tiles, shape (k, T): the order of k
        rows of T uniform keys. The tile index is written into the 5 lowest bits of its
        key's bit pattern (positive doubles order as their int64 patterns), so a plain sort
        of the patterns, several times faster than an argsort of such short rows, yields
        the permutation in those bits. It is the argsort's permutation unless two keys of a
        row agree in all but their 5 lowest bits, a chance of about 1e-12 per deal (exact
        ties, where any two sorts may differ, are not much rarer)."""
        keys = rng.random((k, num_tiles)).view(np.int64)
        keys &= ~31
        keys |= np.arange(num_tiles, dtype=np.int64)
        keys.sort(axis=1)
        keys &= 31
        return keys

    def integers(self, rng: np.random.Generator, high: int, k: int) -> np.ndarray:
        return rng.integers(high, size=k, dtype=np.int64)

    def sample_legal(self, rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
        """One uniformly random legal action per row of an int8 (M, 2T+1) mask."""
        mask = np.asarray(mask)
        check_mask(tuple(mask.shape))
        as_bytes = mask.view(np.uint8) if mask.dtype.itemsize == 1 else (mask != 0).view(np.uint8)
        packed = np.packbits(as_bytes, axis=1, bitorder="little")
        return _select_random_bit(packed, rng.random(mask.shape[0]))

    def uniform(self, rng: np.random.Generator, m: int) -> np.ndarray:
        """(m,) uniform draws in [0, 1): those ``sample_words`` ranks with."""
        return rng.random(m)

    def sample_words(self, rng: np.random.Generator, words: np.ndarray) -> np.ndarray:
        """One uniformly random set bit per (M,) int64 word (bits 0..62, none zero): the same
        draw and choice as ``sample_legal`` on the mask those words unpack to."""
        u = self.uniform(rng, words.shape[0])
        return _select_random_bit_words(np.ascontiguousarray(words).view(np.uint64), u)

    def as_actions(self, actions: Any, num_envs: int) -> np.ndarray:
        if type(actions).__module__.startswith("torch"):
            actions = actions.detach().cpu().numpy()
        arr = np.asarray(actions)
        _check_actions(arr.shape, arr.dtype.kind, num_envs)
        return arr.astype(np.int64, copy=False)


# _BYTE_BITS64[x]: the 8 bytes (0 or 1) of the bits of byte x, little-endian, as one int64
_BYTE_BITS64 = (
    ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.uint8).view(np.int64).reshape(-1)
)

_NP_DTYPES = {
    "i64": np.int64,
    "f32": np.float32,
    "f64": np.float64,
    "bool": np.bool_,
    "i8": np.int8,
}


def _select_random_bit(packed: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Index of a uniformly chosen set bit in each row of packed bytes (little bit order;
    rows of at most 8 bytes), ``u`` uniform in [0, 1). SWAR: one multiply gives the running
    bit counts of the 8 bytes; the chosen bit is found by its byte, then a table."""
    m = packed.shape[0]
    if packed.shape[1] != 8:
        padded = np.zeros((m, 8), dtype=np.uint8)
        padded[:, : packed.shape[1]] = packed
        packed = padded
    packed = np.ascontiguousarray(packed)
    per_byte = np.bitwise_count(packed).view(np.uint64)[:, 0]
    running = per_byte * np.uint64(0x0101010101010101)  # byte j: set bits in bytes 0..j
    total = (running >> np.uint64(56)).astype(np.int64)
    if not total.all():
        raise ValueError(f"mask row {int(np.argmin(total))} has no legal action to sample")
    rank = np.minimum((u * total).astype(np.int64), total - 1)  # of the chosen bit
    running_bytes = running.view(np.uint8).reshape(m, 8)
    byte = (running_bytes <= rank.astype(np.uint8)[:, None]).sum(1)  # byte holding it
    flat = np.arange(m) * 8 + byte
    before = (running << np.uint64(8)).view(np.uint8).take(flat)  # set bits in earlier bytes
    chosen_byte = packed.reshape(-1).take(flat).astype(np.int64)
    return byte * 8 + _SELECT8.take(chosen_byte * 8 + rank - before)


_BYTES_1 = np.uint64(0x0101010101010101)
_BYTES_HIGH = np.uint64(0x8080808080808080)


def _select_random_bit_words(words: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``_select_random_bit`` on (M,) uint64 words (bits 0..62) without unpacking them: the
    running bit counts of the 8 bytes by one multiply, the byte holding the chosen bit by a
    byte-wise comparison in the same word (SWAR), then the 8-bit select table. float32
    ``u`` (torch's draws) are ranked in float32, as the torch backend ranks them. In-place
    steps and small tables: about twenty numpy calls."""
    running = np.bitwise_count(words.view(np.uint8)).view(np.uint64)
    running *= _BYTES_1  # byte j: set bits in bytes 0..j
    total = (running >> np.uint64(56)).view(np.int64)
    if not total.all():
        raise ValueError(f"row {int(np.argmin(total))} has no legal action to sample")
    if u.dtype == np.float32:  # torch's draw: torch ranks in float32 (as sample_legal does)
        rank = (u * total.astype(np.float32)).astype(np.int64)
    else:
        rank = (u * total).astype(np.int64)
    last = total - 1
    np.minimum(rank, last, out=rank)  # the rank of the chosen bit
    # high bit of byte j set iff running_j > rank (running_j <= 63: no borrow between bytes)
    step = last.view(np.uint64)
    np.add(rank.view(np.uint64), np.uint64(1), out=step)
    step *= _BYTES_1
    above = running | _BYTES_HIGH
    above -= step
    above &= _BYTES_HIGH
    shift = _SHIFT_BY_COUNT.take(np.bitwise_count(above))  # 8 * the byte holding it
    running <<= np.uint64(8)
    running >>= shift  # set bits in the bytes before it, in the low byte
    chosen = words >> shift
    chosen &= np.uint64(0xFF)
    chosen <<= np.uint64(3)
    chosen += rank.view(np.uint64)
    running &= np.uint64(0xFF)
    chosen -= running
    return shift.view(np.int64) + _SELECT8.take(chosen.view(np.int64))


# 8 * (8 - c) for c bytes above the rank: the bit offset of the byte holding the chosen bit
_SHIFT_BY_COUNT = (8 * (8 - np.arange(9))).astype(np.uint64)


def check_mask(shape: tuple[int, ...]) -> None:
    """ValueError unless ``shape`` is that of a batch of action masks (M, 2T+1)."""
    if len(shape) != 2 or not 1 <= shape[1] <= 64:
        raise ValueError(
            f"mask must have shape (M, 2T+1) (57 for 28 tiles), one row per game; got {shape}"
        )


def _check_actions(shape: tuple[int, ...], kind: str, num_envs: int) -> None:
    if shape != (num_envs,):
        raise ValueError(f"actions must have shape ({num_envs},), one per game; got {shape}")
    if kind not in "iu":
        raise ValueError(f"actions must be integers (action ids); got dtype kind {kind!r}")


def numba_available() -> bool:
    """Whether the compiled kernels can run (numba importable)."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True
