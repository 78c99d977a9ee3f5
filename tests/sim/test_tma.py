"""The simulator's TMA model (``sim/tma.py``, written from the driver and PTX documentation) against the ISA's own
pattern tables, and against the project's layouts: for every swizzle mode and element type a simulated load puts
each element of the box exactly where ``mma_shared_layout`` says it lives (an enumerating check), out-of-bounds
elements become zeros, the mbarrier is told the whole box's bytes, and a store writes back only what is inside."""

from __future__ import annotations

import numpy as np
import pytest

from tirx_layout.hw.constructors import mma_shared_layout
from tirx_layout.hw.memory import swizzle_128b_base32b
from tirx_layout.hw.tma import tensor_map_for
from tirx_layout.layout.spec import S
from tirx_layout.layout.swizzle import ComposeLayout
from tirx_layout.layout.tile import TileLayout
from tirx_layout.sim.memory import OutOfBounds
from tirx_layout.sim.tma import TensorMapError, load_box, store_box, swizzled_address, transaction_bytes

from oracles.optional import pycute

# PTX ISA "Swizzling modes": each row is one 128-byte line, each entry the 16-byte chunk the line's chunk i holds.
ISA_TABLE_16B = {
    1: [[0, 1, 2, 3, 4, 5, 6, 7], [1, 0, 3, 2, 5, 4, 7, 6]],
    2: [[0, 1, 2, 3, 4, 5, 6, 7], [1, 0, 3, 2, 5, 4, 7, 6], [2, 3, 0, 1, 6, 7, 4, 5], [3, 2, 1, 0, 7, 6, 5, 4]],
    3: [
        [0, 1, 2, 3, 4, 5, 6, 7],
        [1, 0, 3, 2, 5, 4, 7, 6],
        [2, 3, 0, 1, 6, 7, 4, 5],
        [3, 2, 1, 0, 7, 6, 5, 4],
        [4, 5, 6, 7, 0, 1, 2, 3],
        [5, 4, 7, 6, 1, 0, 3, 2],
        [6, 7, 4, 5, 2, 3, 0, 1],
        [7, 6, 5, 4, 3, 2, 1, 0],
    ],
    4: [[0, 1, 2, 3, 4, 5, 6, 7], [2, 3, 0, 1, 6, 7, 4, 5], [4, 5, 6, 7, 0, 1, 2, 3], [6, 7, 4, 5, 2, 3, 0, 1]],
    6: [[0, 1, 2, 3, 4, 5, 6, 7], [4, 5, 6, 7, 0, 1, 2, 3]],
}


@pytest.mark.parametrize("swizzle", sorted(ISA_TABLE_16B))
def test_swizzle_follows_the_isa_pattern_tables(swizzle):
    table = ISA_TABLE_16B[swizzle]
    for repeat in range(3):  # "... pattern repeats ..."
        for line, holds in enumerate(table):
            base = 128 * (repeat * len(table) + line)
            for position, chunk in enumerate(holds):
                # The chunk the row-major order puts at `chunk` lands at `position` of its line.
                assert swizzled_address(swizzle, base + 16 * chunk + 5) == base + 16 * position + 5


# CuTe's swizzle functor on byte addresses for each mode: Swizzle<B, M, S> XORs bits [M, M+B) with [M+S, M+S+B).
CUTE_SWIZZLE = {1: (1, 4, 3), 2: (2, 4, 3), 3: (3, 4, 3), 4: (2, 5, 2), 6: (1, 6, 1)}


@pytest.mark.parametrize("swizzle", sorted(CUTE_SWIZZLE))
def test_swizzle_equals_cutes_swizzle_functor(swizzle):
    """Oracle: pycute's ``Swizzle`` with the parameters CUTLASS pairs with each TMA mode."""
    cute_swizzle = pycute.Swizzle(*CUTE_SWIZZLE[swizzle])
    addresses = np.arange(3 * 4096)
    expected = [cute_swizzle(int(a)) for a in addresses]
    assert swizzled_address(swizzle, addresses).tolist() == expected


def test_a_destination_off_the_repeat_starts_mid_pattern():
    # PTX ISA: base offset = (dstMem / 128) % 8 for the 128-byte mode.
    assert swizzled_address(3, 3 * 128 + 0) == 3 * 128 + 16 * 3
    with pytest.raises(TensorMapError, match="swizzle code 5 is not modelled"):
        swizzled_address(5, 0)


BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float8_e4m3fn": 1, "int8": 1, "float64": 8}
SPAN = {"none": 16, "32B": 32, "64B": 64, "128B": 128}
DST = 3 * 1024  # on every mode's repeat


def global_image(rows: int, cols: int, element: int, seed: int = 0) -> np.ndarray:
    """A row-major global tensor whose every element's bytes are distinct enough to be told apart."""
    return np.random.default_rng(seed).integers(0, 256, rows * cols * element, dtype=np.uint8)


def element_bytes(image: np.ndarray, index: int, element: int) -> list[int]:
    return image[index * element : (index + 1) * element].tolist()


@pytest.mark.parametrize("mode", ["none", "32B", "64B", "128B"])
@pytest.mark.parametrize("dtype", sorted(BYTES))
def test_a_load_places_every_element_where_the_shared_layout_says(dtype, mode):
    element = BYTES[dtype]
    cols = SPAN[mode] // element
    rows_total, cols_total = 96, 3 * cols
    gmem = global_image(rows_total, cols_total, element)
    for rows, (row0, col0) in ((8, (0, 0)), (64, (24, cols)), (32, (40, 2 * cols))):
        box = (rows, cols)
        layout = mma_shared_layout(dtype, mode, box)
        fields = tensor_map_for((rows_total, cols_total), dtype, box, layout).driver_fields()
        smem = np.full(DST + rows * cols * element + 1024, 0xEE, dtype=np.uint8)
        assert load_box(fields, gmem, (col0, row0), smem, DST) == rows * cols * element
        for r in range(rows):
            for c in range(cols):
                address = DST + int(layout.apply(r, c, shape=list(box))["m"]) * element
                source = (row0 + r) * cols_total + col0 + c
                assert smem[address : address + element].tolist() == element_bytes(gmem, source, element), (r, c)
        untouched = np.ones(smem.size, dtype=bool)
        untouched[DST : DST + rows * cols * element] = False
        assert (smem[untouched] == 0xEE).all()


def test_the_128b_32b_atom_mode_places_elements_like_the_mma_swizzle():
    layout = ComposeLayout(swizzle_128b_base32b("float32"), TileLayout(S[(16, 32) : (32, 1)]))
    fields = tensor_map_for((40, 32), "float32", (16, 32), layout).driver_fields()
    gmem = global_image(40, 32, 4, seed=3)
    smem = np.zeros(2048 + 4096, dtype=np.uint8)
    load_box(fields, gmem, (0, 8), smem, 2048)
    for r in range(16):
        for c in range(32):
            address = 2048 + int(layout.apply(r, c, shape=[16, 32])["m"]) * 4
            assert smem[address : address + 4].tolist() == element_bytes(gmem, (8 + r) * 32 + c, 4)


def hand_written_fields(**changes):
    """A 2-D float16 map written by hand from the driver's parameter list: a 20 x 24 tensor, an 8 x 16 box."""
    fields = {
        "data_type": 6,
        "rank": 2,
        "global_dim": (24, 20),
        "global_strides": (48,),
        "box_dim": (8, 16),
        "element_strides": (1, 1),
        "interleave": 0,
        "swizzle": 0,
        "l2_promotion": 0,
        "oob_fill": 0,
    }
    return {**fields, **changes}


def test_out_of_bounds_elements_are_zero_and_still_counted():
    gmem = np.arange(20 * 24, dtype=np.uint16).view(np.uint8) | 0  # element value = row * 24 + col, never 0 past [0]
    gmem = np.ascontiguousarray(gmem)
    smem = np.full(1024, 0xEE, dtype=np.uint8)
    fields = hand_written_fields()
    # The box starts at column 20 (4 columns inside) and row -3 (3 rows above the tensor), and reaches row 12.
    tx = load_box(fields, gmem, (20, -3), smem, 128)
    assert tx == 8 * 16 * 2 == transaction_bytes(fields)
    got = smem[128 : 128 + 256].view(np.uint16).reshape(16, 8)
    want = np.zeros((16, 8), dtype=np.uint16)
    for r in range(16):
        for c in range(8):
            row, col = r - 3, 20 + c
            if 0 <= row < 20 and col < 24:
                want[r, c] = row * 24 + col
    np.testing.assert_array_equal(got, want)
    assert (got[:3] == 0).all() and (got[:, 4:] == 0).all()


def test_traversal_strides_skip_rows_and_count_only_what_moves():
    gmem = np.ascontiguousarray(np.arange(20 * 24, dtype=np.uint16).view(np.uint8))
    fields = hand_written_fields(element_strides=(4, 3))  # dimension 0's stride is ignored without interleave
    smem = np.zeros(512, dtype=np.uint8)
    assert load_box(fields, gmem, (0, 1), smem, 0) == 8 * 6 * 2
    got = smem[: 8 * 6 * 2].view(np.uint16).reshape(6, 8)
    np.testing.assert_array_equal(got[:, 0], [24 * row for row in range(1, 17, 3)])
    np.testing.assert_array_equal(got[0], np.arange(24, 32))


def test_a_store_writes_back_only_what_is_inside():
    layout = mma_shared_layout("bfloat16", "128B", (32, 64))
    fields = tensor_map_for((40, 64), "bfloat16", (32, 64), layout).driver_fields()
    source = global_image(40, 64, 2, seed=7)
    smem = np.zeros(1024 + 4096, dtype=np.uint8)
    load_box(fields, source, (0, 16), smem, 1024)  # rows 16..39 inside, 40..47 filled
    target = np.zeros_like(source)
    store_box(fields, target, (0, 16), smem, 1024)
    np.testing.assert_array_equal(target[16 * 128 :], source[16 * 128 :])
    assert (target[: 16 * 128] == 0).all()
    with pytest.raises(TensorMapError, match="must be non-negative"):
        store_box(fields, target, (0, -1), smem, 1024)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"data_type": 13}, "data_type 13 is not a modelled"),
        ({"rank": 6}, "rank 6 is not 1..5"),
        ({"global_dim": (24,)}, "global_dim must be 2 integers"),
        ({"box_dim": (8, 257)}, r"box_dim entries must be integers in \[1, 256\]"),
        ({"element_strides": (1, 9)}, r"element_strides entries must be integers in \[1, 8\]"),
        ({"interleave": 1}, "only the non-interleaved layout"),
        ({"oob_fill": 1}, "only the zero fill"),
        ({"swizzle": 5}, "swizzle 5 is not modelled"),
        ({"box_dim": (4, 16)}, "8-byte rows"),
        ({"swizzle": 3}, "under swizzle 3 this model takes rows of exactly the 128-byte span"),
    ],
)
def test_bad_fields_are_refused_by_name(changes, message):
    gmem = np.zeros(20 * 48, dtype=np.uint8)
    with pytest.raises(TensorMapError, match=message):
        load_box(hand_written_fields(**changes), gmem, (0, 0), np.zeros(4096, np.uint8), 0)


def test_bad_coordinates_and_addresses_are_refused():
    gmem, smem = np.zeros(20 * 48, dtype=np.uint8), np.zeros(512, np.uint8)
    fields = hand_written_fields()
    with pytest.raises(TensorMapError, match="not 128-byte aligned"):
        load_box(fields, gmem, (0, 0), smem, 64)
    with pytest.raises(TensorMapError, match="tensor coordinates"):
        load_box(fields, gmem, (2**31, 0), smem, 0)
    with pytest.raises(OutOfBounds, match="load destination"):
        load_box(fields, gmem, (0, 0), smem, 384)
    with pytest.raises(OutOfBounds, match="load source"):
        load_box(fields, gmem[:100], (0, 0), smem, 0)
    with pytest.raises(TensorMapError, match="1-D uint8"):
        load_box(fields, gmem.astype(np.int32), (0, 0), smem, 0)


@pytest.mark.parametrize(
    "dtype, mode",
    [
        ("float32", "128B_base32B"),
        ("bfloat16", "128B"),
        ("bfloat16", "64B"),
        ("float8_e4m3fn", "32B"),
        ("float16", "none"),
    ],
)
def test_an_mn_major_operand_loads_one_transposed_box_per_atom_where_the_shared_layout_says(dtype, mode):
    # A (K, MN) global tensor, MN contiguous; the shared operand (rows, K) is MN-major: rows contiguous. Each box is
    # K x one atom of rows, placed at the shared offset of the atom's first element.
    element = BYTES[dtype]
    width = 16 if mode == "none" else 128 if mode == "128B_base32B" else SPAN[mode]
    atom = width // element
    rows, k_rows, k_total, mn_total = 2 * atom, 16, 48, 5 * atom
    layout = mma_shared_layout(dtype, mode, (rows, k_rows), major="MN")
    gmem = global_image(k_total, mn_total, element, seed=5)
    smem = np.full(DST + rows * k_rows * element + 1024, 0xEE, dtype=np.uint8)
    k0, mn0 = 16, atom
    for block in range(rows // atom):
        box_layout = mma_shared_layout(dtype, mode, (atom, k_rows), major="MN")
        fields = tensor_map_for((k_total, mn_total), dtype, (k_rows, atom), box_layout, transposed=True).driver_fields()
        place = DST + int(layout.apply(block * atom, 0, shape=[rows, k_rows])["m"]) * element
        assert load_box(fields, gmem, (mn0 + block * atom, k0), smem, place) == atom * k_rows * element
    for r in range(rows):
        for k in range(k_rows):
            address = DST + int(layout.apply(r, k, shape=[rows, k_rows])["m"]) * element
            source = (k0 + k) * mn_total + mn0 + r
            assert smem[address : address + element].tolist() == element_bytes(gmem, source, element), (r, k)
    untouched = np.ones(smem.size, dtype=bool)
    untouched[DST : DST + rows * k_rows * element] = False
    assert (smem[untouched] == 0xEE).all()
