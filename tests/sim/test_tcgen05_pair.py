"""The simulator's model of the CTA pair's ``tcgen05.mma.cta_group::2`` (``sim/tcgen05_pair.py``) against numpy:
each CTA's shared memory holds its half of A and of B, built element by element from the ISA's canonical layouts
(``oracles.canonical_operands``); the pair's D lands in both CTAs' TMEM by the ISA's datapath layouts A and B."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tirx_layout.sim.matrix_operands import DescriptorError
from tirx_layout.sim.tcgen05_pair import commit_multicast_ranks, pair_accumulator_place, pair_mma, pair_shape_error

from oracles import mma_isa
from oracles.canonical_operands import Operand

SWIZZLE_CODE = {"none": 0, "128B": 2, "64B": 4, "32B": 6}  # ISA "Shared memory descriptor", bits 61-63
B_OFFSET = 0x8000  # B's halves sit at this shared offset in both CTAs, A's at 0


def encode(start: int):
    def descriptor(lbo, sbo, mode):
        return start >> 4 | (lbo >> 4) << 16 | (sbo >> 4) << 32 | 1 << 46 | SWIZZLE_CODE[mode] << 61

    return descriptor


def pair_state(a, b, mode="none", major="K"):
    """Both CTAs' shared-memory images (A's half at 0, B's half at ``B_OFFSET``), the two descriptors, and two
    empty TMEMs."""
    m, n = a.shape[0], b.shape[0]
    images = []
    for r in (0, 1):
        a_half = Operand(np.ascontiguousarray(a[r * m // 2 : (r + 1) * m // 2]), major, mode, encode(0))
        b_half = Operand(np.ascontiguousarray(b[r * n // 2 : (r + 1) * n // 2]), major, mode, encode(B_OFFSET))
        image = np.zeros(2 * B_OFFSET, np.uint8)
        a_bytes, b_bytes = a_half.words.view(np.uint8), b_half.words.view(np.uint8)
        image[: a_bytes.size] = a_bytes
        image[B_OFFSET : B_OFFSET + b_bytes.size] = b_bytes
        images.append(image)
    tmem = [np.zeros((128, 512), np.uint32) for _ in range(2)]
    return images, a_half.descriptor, b_half.descriptor, tmem


def exact(shape, rng, dtype):
    return rng.integers(-3, 4, size=shape).astype(dtype)


def idesc(kind, a, b, d, m, n):
    return mma_isa.instruction_descriptor(kind, a, b, d, m, n)


@pytest.mark.parametrize(("mode", "n"), [("none", 32), ("128B", 64), ("32B", 256)])
def test_m256_reads_both_ctas_halves_and_writes_layout_a_in_both_tmems(mode, n):
    rng = np.random.default_rng(n)
    k = 16  # one bf16 instruction step: 32 bytes of K
    a, b = exact((256, k), rng, ml_dtypes.bfloat16), exact((n, k), rng, ml_dtypes.bfloat16)
    images, a_desc, b_desc, tmem = pair_state(a, b, mode)
    column = 32
    pair_mma(
        "f16", images, tmem, column, a_desc, b_desc, idesc("f16", "bfloat16", "bfloat16", "float32", 256, n), False
    )
    want = a.astype(np.float32) @ b.astype(np.float32).T
    for r in (0, 1):  # Layout A: CTA r's row i on lane i, column j on column 32 + j
        got = tmem[r][:, column : column + n].view(np.float32)
        np.testing.assert_array_equal(got, want[128 * r : 128 * (r + 1)])
        assert not tmem[r][:, :column].any() and not tmem[r][:, column + n :].any()


def test_m128_folds_each_ctas_64_rows_into_layout_b():
    rng = np.random.default_rng(7)
    n, k = 64, 32  # two i8 K steps would be 64: one step of 32 int8
    a, b = exact((128, k), rng, np.int8), exact((n, k), rng, np.int8)
    images, a_desc, b_desc, tmem = pair_state(a, b)
    pair_mma("i8", images, tmem, 0, a_desc, b_desc, idesc("i8", "int8", "int8", "int32", 128, n), False)
    want = a.astype(np.int32) @ b.astype(np.int32).T
    for r in (0, 1):  # Layout B: CTA r's row i on lane i for columns 0..31, on lane 64 + i for columns 32..63
        cells = tmem[r].view(np.int32)
        np.testing.assert_array_equal(cells[:64, :32], want[64 * r : 64 * (r + 1), :32])
        np.testing.assert_array_equal(cells[64:, :32], want[64 * r : 64 * (r + 1), 32:])


def test_enable_input_d_accumulates_and_each_half_of_b_comes_from_its_own_cta():
    rng = np.random.default_rng(3)
    a, b = exact((256, 16), rng, np.float16), exact((32, 16), rng, np.float16)
    images, a_desc, b_desc, tmem = pair_state(a, b)
    code = idesc("f16", "float16", "float16", "float32", 256, 32)
    pair_mma("f16", images, tmem, 0, a_desc, b_desc, code, False)
    pair_mma("f16", images, tmem, 0, a_desc, b_desc, code, True)
    want = 2 * (a.astype(np.float32) @ b.astype(np.float32).T)
    np.testing.assert_array_equal(tmem[1][:, :32].view(np.float32), want[128:])
    # the peer's shared memory is read: with B's two halves swapped between the CTAs, D's columns swap halves
    swapped, _, _, fresh = pair_state(a, np.concatenate([b[16:], b[:16]]))
    pair_mma("f16", swapped, fresh, 0, a_desc, b_desc, code, False)
    np.testing.assert_array_equal(fresh[0][:, :16].view(np.float32), want[:128, 16:] / 2)


def test_the_isas_pair_shapes_and_places():
    assert pair_shape_error("f16", 256, 16) is None and pair_shape_error("i8", 128, 32) is None
    assert "takes M = 128 or 256" in pair_shape_error("f16", 64, 64)
    assert "steps of 16, not 24" in pair_shape_error("tf32", 256, 24)
    assert "steps of 32, not 16" in pair_shape_error("i8", 256, 16)
    assert pair_accumulator_place(256, 16, 255, 15) == (1, 127, 15)
    assert pair_accumulator_place(128, 32, 63, 16) == (0, 127, 0)
    assert commit_multicast_ranks(0b11, 2) == (0, 1) and commit_multicast_ranks(0b110000, 8) == (4, 5)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (idesc("f16", "float16", "float16", "float32", 64, 32), r"cta_group::2 takes M = 128 or 256"),
        (idesc("f16", "float16", "float16", "float32", 256, 24), r"steps of 16, not 24"),
    ],
)
def test_shapes_off_the_pair_grid_are_refused(code, message):
    rng = np.random.default_rng(0)
    images, a_desc, b_desc, tmem = pair_state(exact((256, 16), rng, np.float16), exact((32, 16), rng, np.float16))
    with pytest.raises(DescriptorError, match=message):
        pair_mma("f16", images, tmem, 0, a_desc, b_desc, code, False)


def test_refusals_name_the_value():
    with pytest.raises(DescriptorError, match="ctaMask 0x0 must be a non-zero 16-bit mask"):
        commit_multicast_ranks(0, 2)
    with pytest.raises(DescriptorError, match="names rank 3, but the cluster has 2 CTAs"):
        commit_multicast_ranks(0b1001, 2)
    with pytest.raises(DescriptorError, match=r"element \(256, 0\) is outside the pair's 256 x 16 D"):
        pair_accumulator_place(256, 16, 256, 0)
    rng = np.random.default_rng(0)
    images, a_desc, b_desc, tmem = pair_state(exact((256, 16), rng, np.float16), exact((32, 16), rng, np.float16))
    code = idesc("f16", "float16", "float16", "float32", 256, 32)
    with pytest.raises(DescriptorError, match="starts at lane 0 of each CTA's TMEM; d-tmem 0x00100000 names lane 16"):
        pair_mma("f16", images, tmem, 16 << 16, a_desc, b_desc, code, False)
    with pytest.raises(DescriptorError, match="two CTAs' shared memory"):
        pair_mma("f16", images[:1], tmem, 0, a_desc, b_desc, code, False)


@pytest.mark.parametrize(("m", "n"), [(256, 64), (128, 64), (128, 256)])
def test_the_simulators_pair_places_are_the_projects_datapath_layouts(m, n):
    """The simulator's places (from the ISA) against ``tmem_datapath_layout`` ("A" for M = 256, "B" for M = 128):
    each CTA's half of D, row ``i`` of the half and column ``j``, at the same lane and column."""
    from tirx_layout import tmem_datapath_layout

    half = m // 2
    layout = tmem_datapath_layout("A" if m == 256 else "B", half, n)
    rows, cols = np.meshgrid(np.arange(half), np.arange(n), indexing="ij")
    places = layout.apply(rows, cols, shape=[half, n])
    for cta in (0, 1):
        got = np.array([[pair_accumulator_place(m, n, cta * half + i, j) for j in range(n)] for i in range(half)])
        assert (got[..., 0] == cta).all()
        np.testing.assert_array_equal(got[..., 1], places["TLane"])
        np.testing.assert_array_equal(got[..., 2], places["TCol"])
