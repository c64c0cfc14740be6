"""The batched engine's fast kernels give exactly what the plain operations they replace give:
the deal permutations (numpy: a sort of keys carrying the tile index; torch on the CPU:
numpy's argsort with torch's own sort for rows with a tie), the bit unpacking of the
observation and the mask, and the set-bit selection of the mask-less sampler."""

from __future__ import annotations

import numpy as np
import pytest

from block_env.batched.backend import (
    NumpyBackend,
    _select_random_bit,
    _select_random_bit_words,
)


@pytest.mark.parametrize("num_tiles", [6, 10, 28])
def test_numpy_permutations_are_the_argsort_of_the_same_keys(num_tiles: int) -> None:
    got = NumpyBackend().permutations(np.random.default_rng(3), 20000, num_tiles)
    keys = np.random.default_rng(3).random((20000, num_tiles))
    np.testing.assert_array_equal(got, keys.argsort(axis=1))


def test_torch_cpu_argsort_matches_torch_even_with_ties() -> None:
    torch = pytest.importorskip("torch")
    from block_env.batched.torch_backend import argsort_rows_cpu

    gen = torch.Generator().manual_seed(0)
    plain = torch.rand((3000, 28), generator=gen)
    coarse = (torch.rand((3000, 28), generator=gen) * 5).floor()  # ties in every row
    mixed = plain.clone()
    mixed[::7] = coarse[::7]  # some rows tied, most not
    near = plain.clone()  # keys equal but for their lowest bits in some rows
    bits = near.numpy().view(np.int32)
    bits[::5, 1] = (bits[::5, 0] & ~31) | ((bits[::5, 0] + 7) & 31)
    small = torch.rand((3000, 6), generator=gen)  # a small tile set
    for keys in (plain, coarse, mixed, near, small):
        got = argsort_rows_cpu(torch, keys)
        assert got.dtype == torch.int64
        assert torch.equal(got, keys.argsort(dim=1))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_unpacked_bits_and_masks_match_numpy_unpackbits(backend: str) -> None:
    from block_env.batched.choice import make_backend

    b = make_backend(backend, "cpu")
    words = np.random.default_rng(1).integers(0, 2**63 - 1, size=(500, 2), dtype=np.int64)
    want = np.unpackbits(words.view(np.uint8).reshape(500, 16), axis=1, bitorder="little")
    got = b.to_numpy(b.unpack_bits(b.from_numpy(words)))
    np.testing.assert_array_equal(got, want)
    for width in (13, 57, 63):
        mask = b.to_numpy(b.unpack_mask(b.from_numpy(words[:, 0]), width))
        assert mask.dtype == np.int8 and mask.shape == (500, width) and mask.flags.c_contiguous
        np.testing.assert_array_equal(mask, want[:, :width])


def test_word_select_is_the_packed_mask_select() -> None:
    rng = np.random.default_rng(2)
    words = rng.integers(1, 2**57, size=50000, dtype=np.int64)
    words[:100] = 1 << 56  # only pass
    words[100:200] = (1 << 57) - 1  # everything
    words[200:300] = 1 << rng.integers(0, 57, size=100)  # one action anywhere
    u = rng.random(words.shape[0])
    packed = np.ascontiguousarray(words).view(np.uint8).reshape(-1, 8)
    want = _select_random_bit(packed, u)
    got = _select_random_bit_words(words.view(np.uint64), u)
    np.testing.assert_array_equal(got, want)
    assert ((words >> got) & 1).all()


def test_torch_select_kernel_matches_the_numpy_one_on_float32_draws() -> None:
    """The torch kernel (CUDA's path) and the numpy one the torch backend uses on the CPU
    choose the same bits for the same float32 draws, ranked in float32 as torch ranks."""
    torch = pytest.importorskip("torch")
    from block_env.batched.torch_backend import TorchBackend

    b = TorchBackend("cpu")
    rng = np.random.default_rng(4)
    words = rng.integers(1, 2**57, size=50000, dtype=np.int64)
    words[:100] = (1 << 57) - 1
    words[100:200] = 1 << rng.integers(0, 57, size=100)
    u = torch.rand(words.shape[0], generator=torch.Generator().manual_seed(1))
    u[:50] = 1.0 - 2.0**-24  # the largest draw
    # 11 legal actions and u = 13726813 / 2**24: u * 11 = 9 - 2**-24 exactly, which float32
    # rounds to 9 (rank 9) and float64 keeps below 9 (rank 8): the ranking must be float32's
    words[200:300] = (1 << 11) - 1
    u[200:300] = 13726813 * 2.0**-24
    want = b.select_bits(torch.from_numpy(words), u).numpy()
    got = _select_random_bit_words(words.view(np.uint64), u.numpy())
    np.testing.assert_array_equal(got, want)
    assert ((words >> got) & 1).all()


@pytest.mark.parametrize(
    "num_players, hand_size, max_pip",
    [(2, 7, 6), (3, 7, 6), (4, 7, 6), (2, 14, 6), (3, 3, 3), (2, 4, 3), (4, 1, 2), (3, 6, 5)],
)
def test_numpy_hands_from_permutations_are_the_sums_of_tile_bits(
    num_players: int, hand_size: int, max_pip: int
) -> None:
    """The numpy kernels sum each seat's tile bits by a float64 matrix product: exactly the
    integer sums the torch kernels take, for every hand size up to a whole 28-tile set."""
    from block_env.batched.deals import _hands_from_permutations
    from block_env.config import BlockConfig

    config = BlockConfig(num_players=num_players, hand_size=hand_size, max_pip=max_pip)
    t = config.tiles.num_tiles
    perm = NumpyBackend().permutations(np.random.default_rng(5), 3000, t)
    got = _hands_from_permutations(NumpyBackend(), config, perm)
    n, k = num_players, hand_size
    want = (np.int64(1) << perm[:, : n * k]).reshape(-1, n, k).sum(2)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.bitwise_count(got).sum(1), n * k)  # disjoint hands


@pytest.mark.parametrize("shape", [(50, 4), (37, 2), (10, 1)])
def test_numpy_put_rows_is_row_assignment(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(6)
    got = rng.integers(-(2**62), 2**62, size=shape)
    want = got.copy()
    idx = rng.choice(shape[0], size=shape[0] // 2, replace=False)
    values = rng.integers(-(2**62), 2**62, size=(idx.size, shape[1]))
    NumpyBackend().put_rows(got, idx, values)
    want[idx] = values
    np.testing.assert_array_equal(got, want)
