"""The tensor map as data (``hw/tma.py``): every limit ``cuTensorMapEncodeTiled`` documents is refused with its field
named, and the map derived from an MMA operand's shared layout equals a computation written here from the driver
documentation (dimension 0 innermost, byte strides of the outer dimensions, the swizzle of the layout), for every
swizzle mode and element type, K-major and (from a transposed global box) MN-major."""

from __future__ import annotations

import re

import numpy as np
import pytest
import tvm

from tirx_layout.hw.constructors import mma_shared_layout
from tirx_layout.hw.memory import swizzle_128b_base32b
from tirx_layout.hw.tma import TensorMap, driver_data_type, tensor_map_for, transaction_bytes
from tirx_layout.layout.spec import S
from tirx_layout.layout.swizzle import ComposeLayout, SwizzleLayout
from tirx_layout.layout.tile import TileLayout

# cuda.h, CUtensorMapDataType and CUtensorMapSwizzle, copied by hand from the header's enum order.
CUDA_DATA_TYPE_ORDER = "uint8 uint16 uint32 int32 uint64 int64 float16 float32 float64 bfloat16"
CUDA_DATA_TYPE = {name: code for code, name in enumerate(CUDA_DATA_TYPE_ORDER.split())}
CUDA_SWIZZLE = {"none": 0, "32B": 1, "64B": 2, "128B": 3, "128B_atom_32B": 4}
BYTES = {
    **dict.fromkeys(("float8_e4m3fn", "float8_e5m2", "int8", "uint8"), 1),
    **dict.fromkeys(("float16", "bfloat16"), 2),
    **dict.fromkeys(("float32", "int32"), 4),
    "float64": 8,
}
# Programming guide TMA swizzle table ("swizzle width") and the PTX ISA's "starting address of the repeating pattern".
SPAN = {"none": 16, "32B": 32, "64B": 64, "128B": 128}
REPEAT = {"none": 128, "32B": 256, "64B": 512, "128B": 1024}

GOOD = {"dtype": "bfloat16", "global_dims": (4096, 512), "global_strides": (8192,), "box_dims": (64, 128)}


def make(**changes):
    return TensorMap(**{**GOOD, **changes})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"global_dims": (), "global_strides": (), "box_dims": ()},
            "TensorMap.global_dims: rank 0; the driver takes rank 1 to 5",
        ),
        ({"global_dims": (2,) * 6, "global_strides": (64,) * 5, "box_dims": (8,) * 6}, "rank 6"),
        ({"global_dims": (0, 512)}, "TensorMap.global_dims[0] is 0; the driver takes 1 to 2^32"),
        ({"global_dims": (4096, 2**32 + 1)}, "TensorMap.global_dims[1] is 4294967297"),
        (
            {"global_strides": (8200,)},
            "TensorMap.global_strides[0] (dimension 1) is 8200 bytes; it must be a positive multiple of 16",
        ),
        ({"global_dims": (64, 2), "global_strides": (2**40,)}, "below 2^40"),
        ({"global_strides": (8192, 16)}, "TensorMap.global_strides has 2 entries; a rank-2 map needs 1"),
        ({"box_dims": (64,)}, "TensorMap.box_dims has 1 entries; a rank-2 map needs 2"),
        ({"box_dims": (64, 257)}, "TensorMap.box_dims[1] is 257; the driver takes 1 to 256"),
        ({"box_dims": (0, 8)}, "TensorMap.box_dims[0] is 0"),
        (
            {"box_dims": (4, 8)},
            "TensorMap.box_dims[0]: the inner box row is 8 bytes; without interleave it must be a multiple of 16",
        ),
        ({"box_dims": (32, 8), "swizzle": "32B"}, "the inner box row is 64 bytes; swizzle 32B takes at most 32"),
        ({"box_dims": (64, 8), "swizzle": "64B"}, "the inner box row is 128 bytes; swizzle 64B takes at most 64"),
        ({"box_dims": (72, 8), "swizzle": "128B_atom_64B"}, "swizzle 128B_atom_64B takes at most 128"),
        ({"element_strides": (1, 9)}, "TensorMap.element_strides[1] is 9; the driver takes 1 to 8"),
        ({"element_strides": (0, 1)}, "TensorMap.element_strides[0] is 0"),
        ({"interleave": "16B"}, "TensorMap.interleave 16B needs rank >= 3, got rank 2"),
        ({"interleave": "8B"}, "TensorMap.interleave '8B' is not one of"),
        ({"swizzle": "256B"}, "TensorMap.swizzle '256B' is not one of"),
        ({"l2_promotion": "512B"}, "TensorMap.l2_promotion '512B' is not one of"),
        ({"oob_fill": "ones"}, "TensorMap.oob_fill 'ones' is not one of"),
        (
            {"dtype": "int8", "global_strides": (4096,), "oob_fill": "nan"},
            "oob_fill nan needs a floating-point driver type, but int8 travels as uint8",
        ),
        ({"dtype": "float4_e2m1fn"}, "has 4 bits"),
    ],
)
def test_every_driver_limit_is_refused_naming_its_field(changes, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make(**changes)


def test_interleave_32b_needs_swizzle_32b_and_32_byte_strides():
    three = {"global_dims": (16, 8, 8), "box_dims": (16, 8, 8)}
    with pytest.raises(
        ValueError,
        match=re.escape("TensorMap.global_strides[0] (dimension 1) is 48 bytes; it must be a positive multiple of 32"),
    ):
        make(**three, global_strides=(48, 384), interleave="32B", swizzle="32B")
    with pytest.raises(ValueError, match=re.escape("TensorMap.swizzle is none; interleave 32B needs swizzle 32B")):
        make(**three, global_strides=(32, 256), interleave="32B")
    # Driver: 32-byte global alignment with this interleave; the guide's swizzle table: 128 for any swizzle.
    assert make(**three, global_strides=(32, 256), interleave="32B", swizzle="32B").global_alignment == 128
    assert make().global_alignment == 16


def test_limits_that_hold_are_accepted_at_their_edges():
    edge = make(global_dims=(2**32, 1), global_strides=(2**40 - 16,), box_dims=(256, 256), element_strides=(8, 8))
    assert edge.box_dims == (256, 256)
    # Without interleave the traversal stride of dimension 0 is ignored (driver: "the first element ... is ignored").
    assert edge.transaction_bytes == 2 * 256 * 32
    assert make(dtype="float8_e4m3fn", global_strides=(4096,), box_dims=(128, 8), swizzle="128B").swizzle == "128B"


@pytest.mark.parametrize(("swizzle", "alignment"), [("none", 128), ("32B", 256), ("64B", 512), ("128B", 1024)])
def test_shared_destinations_must_sit_on_the_swizzle_repeat(swizzle, alignment):
    m = make(box_dims=({"none": 64, "32B": 16, "64B": 32, "128B": 64}[swizzle], 8), swizzle=swizzle)
    assert m.check_shared_address(3 * alignment) == 3 * alignment
    for bad in (alignment // 2, 3 * alignment + 16, -alignment):
        with pytest.raises(ValueError, match=f"shared byte {bad} is not {alignment}-byte aligned"):
            m.check_shared_address(bad)


def test_symbolic_extents_and_strides_are_left_to_the_driver():
    n = tvm.tirx.Var("n", "int64")
    m = make(global_dims=(n, 512), global_strides=(n * 2,))
    assert m.driver_fields()["global_dim"][0].same_as(n)
    k = tvm.tirx.Var("k", "int64")
    derived = tensor_map_for((4096, k), "bfloat16", (128, 64), mma_shared_layout("bfloat16", "128B", (128, 64)))
    assert derived.global_dims[0].same_as(k)
    tvm.ir.assert_structural_equal(derived.global_strides[0], k * 2)


@pytest.mark.parametrize(
    ("dtype", "code"),
    [
        ("float16", 6),
        ("bfloat16", 9),
        ("float32", 7),
        ("float64", 8),
        ("int32", 3),
        ("int64", 5),
        ("uint16", 1),
        ("float8_e4m3fn", 0),
        ("float8_e5m2", 0),
        ("int8", 0),
        ("int16", 1),
    ],
)
def test_driver_data_type_is_the_named_type_or_the_unsigned_of_its_width(dtype, code):
    assert CUDA_DATA_TYPE[driver_data_type(dtype)] == code


def test_transaction_bytes_counts_every_element_the_box_moves():
    assert transaction_bytes((128, 64), "bfloat16") == 128 * 64 * 2
    assert transaction_bytes((5, 7, 3), "float32", (2, 3, 1)) == 3 * 3 * 3 * 4
    with pytest.raises(ValueError, match="must be positive"):
        transaction_bytes((0, 4), "float32")


DTYPES = ["float16", "bfloat16", "float32", "float8_e4m3fn", "int8", "float64"]


def expected_fields(global_shape, dtype, box_shape, mode):
    """The driver's view of a row-major (outermost-first) global tensor and box, written from the driver docs."""
    element = BYTES[dtype]
    rows, cols = global_shape
    data_type = CUDA_DATA_TYPE.get(dtype, {1: 0, 2: 1, 4: 2, 8: 4}[element])
    return {
        "data_type": data_type,
        "rank": 2,
        "global_dim": (cols, rows),
        "global_strides": (cols * element,),
        "box_dim": (box_shape[1], box_shape[0]),
        "element_strides": (1, 1),
        "interleave": 0,
        "swizzle": CUDA_SWIZZLE[mode],
        "l2_promotion": 2,  # CU_TENSOR_MAP_L2_PROMOTION_L2_128B: a copy's map asks for one L2 line, as CUTLASS's
        "oob_fill": 0,
    }


@pytest.mark.parametrize("mode", ["none", "32B", "64B", "128B"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_derived_map_equals_the_driver_side_computation(dtype, mode):
    element = BYTES[dtype]
    atom_cols = SPAN[mode] // element
    global_shape = (512, 4 * atom_cols)
    for rows in (8, 64, 256):
        box = (rows, atom_cols)
        m = tensor_map_for(global_shape, dtype, box, mma_shared_layout(dtype, mode, box))
        assert m.driver_fields() == expected_fields(global_shape, dtype, box, mode)
        assert m.transaction_bytes == rows * atom_cols * element
        assert m.shared_alignment == REPEAT[mode]


def test_the_mma_128b_32b_atom_swizzle_is_tma_mode_128b_atom_32b():
    layout = ComposeLayout(swizzle_128b_base32b("float32"), TileLayout(S[(16, 32) : (32, 1)]))
    m = tensor_map_for((64, 32), "float32", (16, 32), layout)
    assert m.driver_fields()["swizzle"] == CUDA_SWIZZLE["128B_atom_32B"]
    assert m.shared_alignment == 512  # 4 rows of 128 bytes repeat


def test_strided_and_symbolic_global_buffers():
    n = tvm.tirx.Var("n", "int32")
    layout = mma_shared_layout("bfloat16", "128B", (128, 64))
    m = tensor_map_for((n, 4096), "bfloat16", (128, 64), layout)
    assert m.global_dims[0] == 4096 and m.global_dims[1].same_as(n) and m.global_strides == (8192,)
    wide = tensor_map_for(
        (3, 256, 64),
        "bfloat16",
        (1, 128, 64),
        mma_shared_layout("bfloat16", "128B", (1, 128, 64)),
        global_strides=(256 * 128, 128, 1),
    )
    assert wide.global_dims == (64, 256, 3) and wide.global_strides == (256, 65536)


def test_layouts_tma_cannot_produce_are_refused_naming_them():
    with pytest.raises(
        ValueError,
        match=re.escape(
            "the box's inner row is 256 bytes but the 128B swizzle spans 128; copy one 64-column box per swizzle atom"
        ),
    ):
        tensor_map_for((256, 256), "bfloat16", (128, 128), mma_shared_layout("bfloat16", "128B", (128, 128)))
    with pytest.raises(ValueError, match=re.escape("the box's inner row is 64 bytes but the 128B swizzle spans 128")):
        tensor_map_for(
            (256, 256), "bfloat16", (8, 32), ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 32) : (32, 1)]))
        )
    with pytest.raises(ValueError, match="its swizzle period matches no TMA swizzle mode"):
        tensor_map_for(
            (256, 256), "bfloat16", (8, 64), ComposeLayout(SwizzleLayout(2, 3, 3), TileLayout(S[(8, 64) : (64, 1)]))
        )
    # No swizzle and 16 columns of bfloat16: mma_shared_layout stores 8-column core matrices apart, not row-major.
    with pytest.raises(
        ValueError,
        match=re.escape("puts box element (0, 8) at bfloat16 element 512, but TMA writes the box row-major: element 8"),
    ):
        tensor_map_for((256, 256), "bfloat16", (64, 16), mma_shared_layout("bfloat16", "none", (64, 16)))
    with pytest.raises(ValueError, match=re.escape("TensorMap.box_dims[1] is 512; the driver takes 1 to 256")):
        tensor_map_for((1024, 64), "bfloat16", (512, 64), mma_shared_layout("bfloat16", "128B", (512, 64)))
    with pytest.raises(ValueError, match="innermost must be 1"):
        tensor_map_for(
            (64, 64), "bfloat16", (8, 64), mma_shared_layout("bfloat16", "128B", (8, 64)), global_strides=(1, 64)
        )
    with pytest.raises(ValueError, match="differ in rank"):
        tensor_map_for((64,), "bfloat16", (8, 64), mma_shared_layout("bfloat16", "128B", (8, 64)))


@pytest.mark.parametrize("mode", ["none", "32B", "64B", "128B"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float8_e4m3fn", "int8"])
def test_upstream_agrees_on_the_swizzle_mode(dtype, mode):
    """Oracle: upstream TVM's TMA planner reads the same swizzle mode off our layout, and its own MMA atom layout
    yields the same tensor map here."""
    tma_utils = pytest.importorskip("tvm.backend.cuda.tile_primitive.tma_utils")
    from tirx_layout.layout.interop import from_upstream, to_upstream

    cols = SPAN[mode] // BYTES[dtype]
    ours = mma_shared_layout(dtype, mode, (64, cols))
    derived = tensor_map_for((256, 4 * cols), dtype, (64, cols), ours)
    assert tma_utils.get_swizzle_mode_from_layout(to_upstream(ours)).value == CUDA_SWIZZLE[derived.swizzle]
    if mode != "none":
        atom = from_upstream(tma_utils.mma_atom_layout(dtype, CUDA_SWIZZLE[mode]))
        assert tensor_map_for((256, 4 * cols), dtype, (8, cols), atom).swizzle == mode


UPSTREAM_BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "uint8": 8, "int32": 32}


def upstream_spec(tma, dtype, dims, strides, box, steps, interleave, swizzle, l2_promotion, oob_fill):
    """Upstream's TensorMapSpec for a plain global-to-shared tile copy; only the map's fields vary."""
    return tma.TensorMapSpec(
        descriptor_dtype=dtype,
        descriptor_bits=UPSTREAM_BITS[dtype],
        effective_bytes=UPSTREAM_BITS[dtype] // 8,
        packed_kind=None,
        force_cu_dtype=-1,
        base=None,
        base_key="",
        descriptor_name="m",
        base_byte_offset=0,
        global_dims=dims,
        global_strides=strides,
        inner_stride=1,
        box_dims=box,
        element_strides=steps,
        interleave=interleave,
        swizzle=swizzle,
        l2_promotion=l2_promotion,
        oob_fill=oob_fill,
        direction="g2s",
        load_mode="tile",
        target_arch="sm_100a",
        coordinates=(0,) * len(dims),
        gather4=(),
        smem_buffer=None,
        smem_start=(),
        smem_base_offset=0,
        mbar=object(),
        mbar_is_shared_addr=True,
        cta_group=1,
        cta_mask=0,
        cache_hint=None,
        cache_policy=None,
        use_tma_reduce=None,
        payload_bits=0,
        transaction_bits=0,
    )


def test_limits_agree_with_upstreams_tensor_map_validator():
    """Oracle: upstream TVM's static TensorMap validator accepts exactly the random maps ``TensorMap`` accepts, over
    values on both sides of every limit (upstream also demands elementStrides[0] = 1, which the driver ignores, so
    that entry stays 1)."""
    tma = pytest.importorskip("tvm.backend.cuda.tile_primitive.copy_async.tma")
    rng = np.random.default_rng(21)
    interleaves, swizzles, promotions, fills = (
        ["none", "16B", "32B"],
        ["none", "32B", "64B", "128B"],
        ["none", "256B"],
        ["zero", "nan"],
    )
    refused = 0
    for _ in range(1500):
        dtype = str(rng.choice(list(UPSTREAM_BITS)))
        rank = int(rng.integers(1, 6))

        def pick(good, bad):
            return int(rng.choice(bad if rng.random() < 0.04 else good))

        dims = tuple(pick([1, 3, 64, 200, 2**32], [0, 2**32 + 1]) for _ in range(rank))
        strides = tuple(pick([32, 64, 8192, 2**40 - 32], [24, 48, 2**40]) for _ in range(rank - 1))
        box = tuple(pick([1, 8, 16, 32, 64, 256], [0, 257]) for _ in range(rank))
        steps = (1, *(pick([1, 2, 8], [0, 9]) for _ in range(rank - 1)))
        il, sw = pick([0, 0, 0, 1], [2]), int(rng.integers(0, 4))
        l2, oob = int(rng.integers(0, 2)), int(rng.integers(0, 2))
        findings = tma.validate_tensor_map_spec(
            upstream_spec(tma, dtype, dims, strides, box, steps, il, sw, 3 * l2, oob)
        )
        upstream_ok = not any(f.status == tma.ProofStatus.DISPROVEN for f in findings)
        try:
            TensorMap(dtype, dims, strides, box, steps, interleaves[il], swizzles[sw], promotions[l2], fills[oob])
            ours_ok = True
        except ValueError:
            ours_ok = False
        assert ours_ok == upstream_ok, (dtype, dims, strides, box, steps, il, sw, oob, findings)
        refused += not ours_ok
    assert 300 < refused < 1200, refused  # both sides of the limits were exercised


# MN-major operands, (rows, K) with rows contiguous: one atom spans the swizzle width of rows (16 bytes with no
# swizzle), and "128B_base32B" is the MMA's name of TMA's 128B_atom_32B (32-bit operands only).
MN_CASES = [
    ("float32", "128B_base32B", "128B_atom_32B", 128),
    ("bfloat16", "128B", "128B", 128),
    ("bfloat16", "64B", "64B", 64),
    ("float16", "32B", "32B", 32),
    ("float8_e4m3fn", "128B", "128B", 128),
    ("bfloat16", "none", "none", 16),
]


@pytest.mark.parametrize("dtype, mode, tma_mode, width", MN_CASES)
def test_an_mn_major_operand_maps_from_the_transposed_global_box(dtype, mode, tma_mode, width):
    # The global tensor is (K, MN) with MN contiguous (A or B stored transposed); the box is k_rows x one atom of MN.
    element = BYTES[dtype]
    rows = width // element
    k_total, mn_total = 64, 8 * rows
    for k_rows in (8, 16, 32):
        layout = mma_shared_layout(dtype, mode, (rows, k_rows), major="MN")
        m = tensor_map_for((k_total, mn_total), dtype, (k_rows, rows), layout, transposed=True)
        assert m.driver_fields() == expected_fields((k_total, mn_total), dtype, (k_rows, rows), tma_mode)
        assert m.transaction_bytes == rows * k_rows * element
    assert m.shared_alignment == {"128B_atom_32B": 512, **REPEAT}[tma_mode]


def test_an_mn_major_copy_that_is_not_transposed_or_spans_two_atoms_is_refused_naming_the_fix():
    layout = mma_shared_layout("float32", "128B_base32B", (32, 8), major="MN")
    with pytest.raises(ValueError, match=re.escape("copy from a (8, 32) global box with transposed=True")):
        tensor_map_for((256, 64), "float32", (32, 8), layout)
    # 64 rows are two MN atoms, stored 32 x 8 elements apart: one box per atom
    wide = mma_shared_layout("float32", "128B_base32B", (64, 8), major="MN")
    with pytest.raises(ValueError, match=re.escape("inner row is 256 bytes but the 128B_atom_32B swizzle spans 128")):
        tensor_map_for((64, 256), "float32", (8, 64), wide, transposed=True)
    # a K-major layout is not the image of a transposed box
    k_major = mma_shared_layout("bfloat16", "128B", (64, 64))
    with pytest.raises(ValueError, match=re.escape("puts box element (0, 1) (shared element (1, 0)) at bfloat16")):
        tensor_map_for((64, 256), "bfloat16", (64, 64), k_major, transposed=True)
    with pytest.raises(ValueError, match="a transposed box needs two or more dimensions"):
        tensor_map_for((256,), "float32", (32,), TileLayout(S[32:1]), transposed=True)
