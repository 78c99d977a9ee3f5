"""LowerTma: ``T.tile_copy_async`` lowered to one ``cp.async.bulk.tensor`` issued by one thread, its tensor map
encoded on the host. Expected map fields are computed here from the driver's rules (``cuTensorMapEncodeTiled``:
dimension 0 innermost, byte strides of dimensions 1.., swizzle codes NONE 0 / 32B 1 / 64B 2 / 128B 3, data type
codes FLOAT16 6 / FLOAT32 7 / BFLOAT16 9 / UINT8 0), not by ``hw/tma.py``."""

import re

import pytest
import tvm

from tirx_layout.ir.rewrite import walk
from tirx_layout.tools.kernel_report import nvcc_assembles
from tirx_layout.transform import build, lower_tma

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
    return re.findall(r'func_call\("tirx_layout_tcgen05_(\w+)"', func.script())


@pytest.mark.parametrize(
    "dtype, mode",
    [("bfloat16", "128B"), ("float16", "64B"), ("float32", "32B"), ("float8_e4m3fn", "128B"), ("float16", "none")],
)
def test_the_encoded_map_has_the_driver_fields_of_the_global_shape_box_and_shared_swizzle(dtype, mode):
    func = lower_tma(parse(load_kernel(dtype, mode)))
    (call,) = encode_call(func)
    cols = SPAN.get(mode, 64) // SIZE[dtype] if mode != "none" else 32
    args = [int(a) for a in call.args[2:]]
    # global dims (cols, 256), byte stride of rows, box (cols, 128), element strides (1, 1)
    assert args == [cols, 256, cols * SIZE[dtype], cols, 128, 1, 1]
    assert call.args[1].same_as(func.body.seq[1].value.args[1]) or "A" in str(call.args[1])
    assert int(call.attrs.swizzle) == SWIZZLE_CODE[mode]
    assert int(call.attrs.rank) == 2 and int(call.attrs.interleave) == 0 and int(call.attrs.oob_fill) == 0


def test_a_load_is_an_expect_tx_of_the_box_bytes_then_the_copy_at_the_reversed_region_start_by_thread_0():
    func = lower_tma(parse(load_kernel("bfloat16", "128B")))
    assert helper_names(func) == ["mbarrier_arrive_expect_tx", "tma_load_2d"]
    text = func.script()
    assert "if tx == 0:" in text
    assert "T.uint32(16384)" in text  # 128 x 64 bf16
    # coordinates innermost first: column 0, row 128
    assert re.search(r"T.address_of\(bars(\[0\])?\), 0, 128, A.data", text)


def test_expect_tx_false_leaves_the_bytes_to_the_user():
    func = lower_tma(parse(load_kernel("bfloat16", "128B", extra=", expect_tx=False")))
    assert helper_names(func) == ["tma_load_2d"]


def test_a_symbolic_global_extent_stays_a_host_expression_and_the_start_a_device_one():
    func = lower_tma(parse(load_kernel("bfloat16", "128B", global_rows="M", begin="tx // 128 * 128")))
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


def test_a_box_row_wider_than_the_swizzle_span_is_refused_naming_the_buffers():
    with pytest.raises(ValueError, match=r"A <-> As.*inner row is 256 bytes but the 128B swizzle spans 128"):
        lower_tma(parse(load_kernel("bfloat16", "128B", cols=128)))


def test_regions_of_different_shapes_are_refused_naming_both():
    bad = load_kernel("bfloat16", "128B").replace("0:64], bars", "0:32], bars")
    with pytest.raises(ValueError, match=r"A\[128:256, 0:32\] .* As\[0:128, 0:64\] .* differ in shape"):
        lower_tma(parse(bad))


def test_a_load_without_a_barrier_and_a_swizzled_tile_without_alignment_are_refused():
    with pytest.raises(ValueError, match="needs barrier=bars"):
        lower_tma(parse(load_kernel("bfloat16", "128B").replace(", bars[0])", ")", 1)))
    with pytest.raises(ValueError, match="align=1024"):
        lower_tma(parse(load_kernel("bfloat16", "128B").replace("align=1024", "align=128")))
