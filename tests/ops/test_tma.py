"""``T.tile_copy_async`` (ops/tma) lowered to one ``cp.async.bulk.tensor`` issued by one thread, its tensor map
encoded on the host. Expected map fields are computed here from the driver's rules (``cuTensorMapEncodeTiled``:
dimension 0 innermost, byte strides of dimensions 1.., swizzle codes NONE 0 / 32B 1 / 64B 2 / 128B 3, data type
codes FLOAT16 6 / FLOAT32 7 / BFLOAT16 9 / UINT8 0), not by ``hw/tma.py``."""

import re

import ml_dtypes
import numpy as np
import pytest
import tvm
import tvm_ffi

from tirx_layout import sim
from tirx_layout.ir.rewrite import walk
from tirx_layout.tools.kernel_report import nvcc_assembles
from tirx_layout.transform import WrongPipelineError, build, lower_tile_ops

from kernels import parse

SWIZZLE_CODE = {"none": 0, "32B": 1, "64B": 2, "128B": 3}
DATA_TYPE_CODE = {"float16": 6, "bfloat16": 9, "float32": 7, "float8_e4m3fn": 0}
SIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float8_e4m3fn": 1}
SPAN = {"32B": 32, "64B": 64, "128B": 128}


def load_kernel(dtype, mode, rows=128, global_rows="256", global_cols=None, begin="128", extra="", cols=None):
    cols = cols or (SPAN.get(mode, 64) // SIZE[dtype] if mode != "none" else 32)
    global_cols = global_cols or cols
    layout = f'mma_shared_layout("{dtype}", "{mode}", ({rows}, {cols}))' if mode != "none" else "None"
    return f"""
@T.prim_func
def k(a: T.handle, B: T.Buffer(({rows}, {cols}), "{dtype}")):
    M = T.int32()
    A = T.match_buffer(a, ({global_rows}, {global_cols}), "{dtype}")
    T.device_entry()
    tx = T.thread_id([128])
    As = T.alloc_shared(({rows}, {cols}), "{dtype}", layout={layout}, align=1024)
    bars = T.alloc_shared((1,), "uint64")
    T.mbarrier_init(bars[0], 1)
    T.tile_copy_async(As, A[{begin}:{begin} + {rows}, 0:{cols}], bars[0]{extra})
    T.mbarrier_wait(bars[0], 0)
    T.tile_copy(B, As)
"""


def encode_call(func):
    found = []

    def visit(node):
        if isinstance(node, tvm.ir.Call) and getattr(node.op, "name", "") == "tirx.tensormap_encode_tiled":
            found.append(node)

    walk(func.body, [(tvm.ir.Call, visit)])
    return found


def helper_names(func):
    return re.findall(r'func_call\("tirx_layout_(\w+)"', func.script())


#: Every kernel here initialises its mbarrier before the copy and waits after it (on sm_100a, then fences).
INIT, WAIT = ["mbarrier_init"], ["mbarrier_wait", "tcgen05_fence_after"]


@pytest.mark.parametrize(
    "dtype, mode",
    [("bfloat16", "128B"), ("float16", "64B"), ("float32", "32B"), ("float8_e4m3fn", "128B"), ("float16", "none")],
)
def test_the_built_host_encodes_the_driver_fields_of_the_global_shape_box_and_shared_swizzle(dtype, mode):
    host, (device,) = sim.lower(parse(load_kernel(dtype, mode)))  # what code generation receives
    (call,) = [c for f in host.functions.values() for c in encode_call(f)]
    cols = SPAN.get(mode, 64) // SIZE[dtype] if mode != "none" else 32
    args = [int(a) for a in call.args[2:]]
    # global dims (cols, 256), byte stride of rows, box (cols, 128), element strides (1, 1)
    assert args == [cols, 256, cols * SIZE[dtype], cols, 128, 1, 1]
    assert str(call.args[1]).startswith("A")  # the global tensor's data
    assert [p.name for p in device.params if "tensormap" in p.name] == [str(call.args[0])]
    assert int(call.attrs.swizzle) == SWIZZLE_CODE[mode]
    assert str(call.attrs.descriptor_dtype) == {"float8_e4m3fn": "uint8"}.get(dtype, dtype)
    assert int(call.attrs.rank) == 2 and int(call.attrs.interleave) == 0 and int(call.attrs.oob_fill) == 0


def test_a_load_is_an_expect_tx_of_the_box_bytes_then_the_copy_at_the_reversed_region_start_by_one_lane():
    func = lower_tile_ops(parse(load_kernel("bfloat16", "128B")))
    assert helper_names(func) == [*INIT, "sync_elect", "mbarrier_arrive_expect_tx", "tma_load_2d", *WAIT]
    text = func.script()
    assert "if tx < 32:" in text and "tirx_layout_sync_elect" in text
    assert "T.uint32(16384)" in text  # 128 x 64 bf16
    # coordinates innermost first: column 0, row 128
    assert re.search(r"T.address_of\(bars(\[0\])?\), 0, 128, A.data", text)


def test_expect_tx_false_leaves_the_bytes_to_the_user():
    func = lower_tile_ops(parse(load_kernel("bfloat16", "128B", extra=", expect_tx=False")))
    assert helper_names(func) == [*INIT, "sync_elect", "tma_load_2d", *WAIT]


def test_a_symbolic_global_extent_stays_a_host_expression_and_the_start_a_device_one():
    func = lower_tile_ops(parse(load_kernel("bfloat16", "128B", global_rows="M", begin="tx // 128 * 128")))
    (call,) = encode_call(func)
    assert str(call.args[3]) == "M"


def test_the_kernel_builds_for_sm100a_with_a_grid_constant_tensor_map_parameter_and_assembles():
    mod = build(parse(load_kernel("bfloat16", "128B", global_rows="M")))
    cuda = mod.imports[0].inspect_source()
    assert "const __grid_constant__ CUtensorMap A_tensormap_0" in cuda
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" in cuda
    assembled = nvcc_assembles(cuda)
    if assembled is not None:
        assert assembled[0], assembled[1]


def test_a_k_major_tile_wider_than_the_swizzle_span_is_one_box_per_atom_column_under_one_expect_tx():
    # 128 bf16 columns under the 128B swizzle (64 columns per atom): two 128 x 64 boxes, one arrival of all bytes
    func = lower_tile_ops(parse(load_kernel("bfloat16", "128B", cols=128)))
    assert helper_names(func) == [*INIT, "sync_elect", "mbarrier_arrive_expect_tx", "tma_load_2d", "tma_load_2d", *WAIT]
    (call,) = encode_call(func)  # one map: global dims (128, 256), row stride 256 bytes, box (64, 128)
    assert [int(a) for a in call.args[2:]] == [128, 256, 256, 64, 128, 1, 1]
    text = func.script()
    assert "T.uint32(32768)" in text  # 128 x 128 bf16
    # box j: global column 64 j, row 128; it lands atom column j, 128 x 64 elements on
    starts = re.findall(r"T.address_of\(As(?:_\w+)?\[(\d+)\]\), T.address_of\(bars(?:\[0\])?\), (\d+), (\d+), A", text)
    assert starts == [("0", "0", "128"), ("8192", "64", "128")]


def test_a_k_major_tile_of_two_atom_columns_loads_and_stores_every_element_in_place():
    # load (two boxes) then read back through the layout; and a store of the tile (two boxes, one commit each)
    a = np.arange(256 * 128, dtype=np.float32).reshape(256, 128).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(sim.run(parse(load_kernel("bfloat16", "128B", cols=128)), {"A": a})["B"], a[128:])
    store = (
        load_kernel("bfloat16", "128B", cols=128)
        .replace("    T.tile_copy(B, As)\n", "    T.tile_copy_async(B2[0:128, 0:128], As)\n    T.tma_store_wait()\n")
        .replace(
            'B: T.Buffer((128, 128), "bfloat16")',
            'B: T.Buffer((128, 128), "bfloat16"), B2: T.Buffer((128, 128), "bfloat16")',
        )
    )
    result = sim.run(parse(store), {"A": a})
    np.testing.assert_array_equal(result["B2"], a[128:])
    assert (result.writes["B2"] == 1).all()


def test_a_box_row_wider_than_the_swizzle_span_and_not_whole_atoms_is_refused_naming_the_region():
    # 96 columns of a 128-column tile: one and a half atom columns, no box of the swizzle holds it
    with pytest.raises(ValueError, match=r"region As\[0:128, 0:96\] is not an affine sub-box of its layout"):
        lower_tile_ops(
            parse(
                load_kernel("bfloat16", "128B", cols=96)
                .replace("(128, 96))", "(128, 128))")
                .replace("As = T.alloc_shared((128, 96)", "As = T.alloc_shared((128, 128)")
                .replace("As, A[", "As[0:128, 0:96], A[")
            )
        )


def test_regions_of_different_shapes_are_refused_naming_both():
    bad = load_kernel("bfloat16", "128B").replace("0:64], bars", "0:32], bars")
    with pytest.raises(ValueError, match=r"A\[128:256, 0:32\] .* As\[0:128, 0:64\] .* differ in shape"):
        lower_tile_ops(parse(bad))


def test_a_load_without_a_barrier_is_cp_async_and_a_swizzled_tile_without_alignment_is_refused():
    # (ops/cp_async: the barrier-less load is the cp.async form on every target from sm_80)
    lowered = lower_tile_ops(parse(load_kernel("bfloat16", "128B").replace(", bars[0])", ")", 1))).script()
    assert "tirx_layout_cpasync_copy_16" in lowered and "tirx_layout_tma_load" not in lowered
    with pytest.raises(ValueError, match="align=1024"):
        lower_tile_ops(parse(load_kernel("bfloat16", "128B").replace("align=1024", "align=128")))


def two_loads(scope: str, between: str = "") -> str:
    """Two 64-row loads of A into As's halves, both completing on bars[0] (two arrivals), issued by ``scope``,
    with ``between`` (a statement, or nothing) between them."""
    kernel = load_kernel("bfloat16", "128B", rows=128, begin="0").replace("T.mbarrier_init(bars[0], 1)", "")
    loads = (
        f"    T.mbarrier_init(bars[0], 2)\n    if tx // 32 == 1:\n"
        f'        T.tile_copy_async(As[0:64, 0:64], A[0:64, 0:64], bars[0], scope="{scope}")\n'
        + (f"        {between}\n" if between else "")
        + f'        T.tile_copy_async(As[64:128, 0:64], A[64:128, 0:64], bars[0], scope="{scope}")\n'
    )
    return re.sub(r"    T.tile_copy_async\(As, .*\n", loads, kernel)


def test_consecutive_loads_of_a_warp_are_issued_under_one_election():
    # issue 34: one elect.sync for the run (each load still arrives with its own bytes: two arrivals); a statement
    # between the loads ends the run, and each elects again
    assert helper_names(lower_tile_ops(parse(two_loads("warp")))) == [
        *INIT,
        "sync_elect",
        *["mbarrier_arrive_expect_tx", "tma_load_2d"] * 2,
        *WAIT,
    ]
    split = helper_names(lower_tile_ops(parse(two_loads("warp", between="B[0, 0] = T.bfloat16(1)"))))
    assert split.count("sync_elect") == 2
    a = (np.arange(256 * 64).reshape(256, 64) % 200).astype(ml_dtypes.bfloat16)  # exact in bfloat16
    np.testing.assert_array_equal(sim.run(parse(two_loads("warp")), {"A": a})["B"], a[0:128])


STAGED = """
@T.prim_func
def k(a: T.handle):
    M = T.int32()
    A = T.match_buffer(a, (M, 64), "bfloat16")
    T.device_entry()
    tx = T.thread_id([128])
    bars = T.alloc_shared((2,), "uint64")
    As = T.alloc_shared((2, 128, 64), "bfloat16", layout=mma_shared_layout("bfloat16", "128B", (2, 128, 64)),
                        align=1024)
    for k in range(4):
        T.tile_copy_async(As[k % 2, 0:128, 0:64], A[k * 128:k * 128 + 128, 0:64], bars[k % 2])
"""

# By hand: the map of A (M x 64 bf16, row-major): dims (64, M), row stride 128 bytes, box (64, 128), unit element
# strides, swizzle 128B (code 3); a stage is 128 x 64 elements = 8192 further on; 128 x 64 x 2 = 16384 bytes;
# coordinates innermost first (0, k * 128); the lane elect.sync elects in warp 0 issues.
STAGED_EXPECTED = """
@T.prim_func
def k(A: T.Buffer(("M", 64), "bfloat16")):
    M = T.int32()
    A_tensormap_0: T.let[T.TensorMap()] = T.tvm_stack_alloca("tensormap", 1)
    T.tensormap_encode_tiled(A_tensormap_0, A.data, 64, M, 128, 64, 128, 1, 1, descriptor_dtype="bfloat16", rank=2,
                             interleave=0, swizzle=3, l2_promotion=2, oob_fill=0, force_cu_dtype=-1)
    with T.attr({"tirx.device_entry": T.bool(True)}):
        tx = T.thread_id([128])
        bars = T.alloc_shared((2,), "uint64")
        As = T.alloc_shared((2, 128, 64), "bfloat16", align=1024,
                            layout=T.layout("ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(2, 128, 64):(8192, 64, 1)]))"))
        for k in range(4):
            if tx < 32:
                if T.cuda.func_call("tirx_layout_sync_elect", source_code="", return_type="uint32") != T.uint32(0):
                    As_flat = T.decl_buffer((16384,), "bfloat16", data=As.data, scope="shared", layout=None)
                    T.cuda.func_call("tirx_layout_mbarrier_arrive_expect_tx", T.address_of(bars[k % 2]),
                                     T.uint32(16384), source_code="")
                    T.cuda.func_call("tirx_layout_tma_load_2d", T.address_of(A_tensormap_0),
                                     T.address_of(As_flat[k % 2 * 8192]), T.address_of(bars[k % 2]), 0, k * 128,
                                     A.data, source_code="")
"""


def _without_sources(func):
    def blank(call):
        if getattr(call.op, "name", "") != "tirx.cuda.func_call":
            return call
        return tvm.ir.Call(call.op, [*call.args[:-1], tvm.ir.StringImm("")], ret_ty=call.ty)

    return func.with_body(tvm_ffi.structural_map(func.body, [(tvm.ir.Call, blank)]))


def test_a_staged_load_lowers_to_the_hand_written_tir():
    tvm.ir.assert_structural_equal(
        _without_sources(lower_tile_ops(parse(STAGED))), parse(STAGED_EXPECTED), map_free_vars=True
    )


def _refused(text, match):
    with pytest.raises(ValueError, match=match):
        lower_tile_ops(parse(text))


def test_a_stage_step_off_the_swizzle_repeat_is_refused():
    # stages 8192 + 64 elements apart: 16512 bytes, not whole 1024-byte 128B repeats
    layout = 'T.layout("ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(2, 128, 64):(8256, 64, 1)]))")'
    text = STAGED.replace('mma_shared_layout("bfloat16", "128B", (2, 128, 64))', layout)
    _refused(text, r"As\[k % 2, 0:128, 0:64\] moves by \(k % 2\) 16512 bytes")


def test_a_symbolic_start_on_a_dimension_the_region_spans_is_refused():
    # rows k * 64 .. k * 64 + 64 of one stage: not one region moved by a fixed offset per stage
    text = STAGED.replace(
        "As[k % 2, 0:128, 0:64], A[k * 128:k * 128 + 128, 0:64]", "As[0, k * 64:k * 64 + 64, 0:64], A[0:64, 0:64]"
    )
    _refused(text, r"As\[0, k \* 64:k \* 64 \+ 64, 0:64\] starts at k \* 64 on dimension 1, which it takes 64 indices")


REGION = "A[128:128 + 128, 0:64]"


def test_a_copy_between_two_shared_buffers_is_refused_naming_both():
    text = load_kernel("bfloat16", "128B").replace(
        'bars = T.alloc_shared((1,), "uint64")',
        'bars = T.alloc_shared((1,), "uint64")\n    G = T.alloc_shared((128, 64), "bfloat16")',
    )
    _refused(text.replace(REGION, "G[0:128, 0:64]"), r"not G \(shared\) -> As \(shared\)")


def test_a_dtype_mismatch_is_refused_naming_both_types():
    text = load_kernel("bfloat16", "128B").replace(
        'T.alloc_shared((128, 64), "bfloat16"', 'T.alloc_shared((128, 64), "float16"'
    )
    _refused(
        text.replace('mma_shared_layout("bfloat16"', 'mma_shared_layout("float16"'), "A is bfloat16 but As is float16"
    )


def test_a_store_with_a_barrier_is_refused():
    text = load_kernel("bfloat16", "128B").replace(
        f"T.tile_copy_async(As, {REGION}, bars[0])", f"T.tile_copy_async({REGION}, As, bars[0])"
    )
    _refused(text, "store from As takes no barrier")


def test_the_staged_load_and_a_store_build_and_assemble():
    for text in (
        STAGED,
        load_kernel("bfloat16", "128B").replace(
            "T.tile_copy(B, As)", f"T.tile_copy_async({REGION}, As)\n    T.tma_store_wait()"
        ),
    ):
        cuda = build(parse(text)).imports[0].inspect_source()
        assert "const __grid_constant__ CUtensorMap A_tensormap_0" in cuda
        assembled = nvcc_assembles(cuda)
        if assembled is not None:
            assert assembled[0], assembled[1]
    assert "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group" in cuda
    assert "cp.async.bulk.wait_group.read 0" in cuda


def test_tvms_own_pipeline_refuses_a_kernel_with_a_tma_copy():
    text = load_kernel("float16", "none").replace("T.tile_copy(B, As)", "")
    func = parse(text.replace("T.mbarrier_init(bars[0], 1)", "").replace("T.mbarrier_wait(bars[0], 0)", ""))
    with pytest.raises(WrongPipelineError, match=r"T\.tile_copy_async"):
        tvm.tirx.build(func, target=tvm.target.Target({"kind": "cuda", "arch": "sm_100a"}), pipeline="tirx")


def test_a_global_buffer_allocated_inside_the_kernel_is_refused_naming_it():
    text = load_kernel("bfloat16", "128B").replace(
        'bars = T.alloc_shared((1,), "uint64")',
        'bars = T.alloc_shared((1,), "uint64")\n    G = T.alloc_buffer((256, 64), "bfloat16", scope="global")',
    )
    _refused(text.replace(REGION, "G[128:256, 0:64]"), "global buffer G is allocated inside the kernel")


def transposed_kernel(dtype="float32", mode="128B_base32B", k=32, extra=", transposed=True", region=None):
    region = region or f"At[32 : 32 + {k}, 128:256]"
    return f"""
@T.prim_func
def k(a: T.handle, B: T.Buffer((128, {k}), "{dtype}")):
    At = T.match_buffer(a, (64, 256), "{dtype}")
    T.device_entry()
    tx = T.thread_id([128])
    As = T.alloc_shared((128, {k}), "{dtype}", layout=mma_shared_layout("{dtype}", "{mode}", (128, {k}), major="MN"),
                        align=1024)
    bars = T.alloc_shared((1,), "uint64")
    T.mbarrier_init(bars[0], 1)
    T.tile_copy_async(As, {region}, bars[0]{extra})
    T.mbarrier_wait(bars[0], 0)
    T.tile_copy(B, As)
"""


@pytest.mark.parametrize(
    "dtype, mode, k, swizzle",
    # MN-major (rows, K) from a (K, rows) tensor: one box of K rows x one swizzle atom (span / element size) of rows;
    # swizzle codes 128B_ATOM_32B 4, 128B 3, 64B 2
    [("float32", "128B_base32B", 32, 4), ("bfloat16", "128B", 64, 3), ("float16", "64B", 32, 2)],
)
def test_a_transposed_load_is_one_box_per_swizzle_atom_column_under_one_expect_tx(dtype, mode, k, swizzle):
    func = lower_tile_ops(parse(transposed_kernel(dtype, mode, k)))
    atom = {"128B_base32B": 128, "128B": 128, "64B": 64}[mode] // SIZE[dtype]
    boxes = 128 // atom
    assert helper_names(func) == [*INIT, "sync_elect", "mbarrier_arrive_expect_tx", *["tma_load_2d"] * boxes, *WAIT]
    (call,) = encode_call(func)  # one map for every box
    # global dims (256, 64) innermost first, byte stride of a K row, box (atom rows, K), element strides (1, 1)
    assert [int(a) for a in call.args[2:]] == [256, 64, 256 * SIZE[dtype], atom, k, 1, 1]
    assert int(call.attrs.swizzle) == swizzle and str(call.attrs.descriptor_dtype) == dtype
    text = func.script()
    assert f"T.uint32({128 * k * SIZE[dtype]})" in text  # the bytes of all the boxes, one arrival
    # coordinates innermost first: rows 128 + j * atom, K row 32; box j lands atom column j (atom * K elements on)
    starts = re.findall(r"T.address_of\(As(?:_\w+)?\[(\d+)\]\), T.address_of\(bars(?:\[0\])?\), (\d+), (\d+), At", text)
    assert starts == [(str(j * atom * k), str(128 + j * atom), "32") for j in range(boxes)]


def test_the_transposed_load_builds_for_sm100a_and_assembles():
    cuda = build(parse(transposed_kernel())).imports[0].inspect_source()
    assert cuda.count("tirx_layout_tma_load_2d(") == 1 + 4  # the helper's definition and four boxes
    assembled = nvcc_assembles(cuda)
    if assembled is not None:
        assert assembled[0], assembled[1]


@pytest.mark.parametrize(
    "text, match",
    [
        # one MN-major atom column copied without transposed=True: the hint says to swap the box and transpose
        (
            transposed_kernel(extra="", region="At[0:32, 0:32]").replace("(As, At", "(As[0:32, 0:32], At"),
            r"At <-> As.*the row-major image of the box transposed .*last two dimensions swapped, transposed=True",
        ),
        # transposed, but the global region is not the shared one swapped
        (transposed_kernel(region="At[0:128, 0:32]").replace("(64, 256)", "(256, 64)"), r"last two dimensions swapped"),
        # a K-major shared tile cannot hold a transposed box
        (
            transposed_kernel("bfloat16", "128B", 64).replace(', major="MN"', ""),
            r"shared layout .* puts box element .* \(shared element",
        ),
    ],
)
def test_a_transposed_load_that_cannot_be_one_is_refused_naming_the_fix(text, match):
    with pytest.raises(ValueError, match=match):
        lower_tile_ops(parse(text))


def test_a_transposed_store_is_refused():
    text = transposed_kernel().replace(
        "T.tile_copy_async(As, At[32 : 32 + 32, 128:256], bars[0], transposed=True)",
        "T.tile_copy_async(At[32 : 32 + 32, 128:256], As, transposed=True)",
    )
    with pytest.raises(ValueError, match=r"transposed=True is for loads.*store As without it"):
        lower_tile_ops(parse(text))
