"""``T.tile_fill``: what it builds and prints, the values and places it refuses, where it must sit, and fills of every
kind of destination built, assembled and simulated equal to numpy (with exactly-once writes)."""

import numpy as np
import pytest
import tvm

from tirx_layout import sim
from tirx_layout.ops import find
from tirx_layout.ops.fill import TILE_FILL
from tirx_layout.tools.kernel_report import kernel_source, nvcc_assembles, report
from tirx_layout.transform import LayoutVerificationError, build
from tirx_layout.transform.infer_layouts import infer

from kernels import example_module, parse

S = tvm.tirx.decl_buffer((64, 64), "float16", "S", scope="shared")


def test_the_op_reads_back_its_fields_and_its_printed_form_parses_back():
    call = find(tvm.tirx.Evaluate(TILE_FILL(S[0:8, 0:64], 1.5, "warp")))
    assert (str(call.dst), float(call.value.value), call.scope) == ("S[0:8, 0:64]", 1.5, "warp")
    func = _kernel('T.tile_fill(tile, 0.5, scope="warp")')
    assert 'T.tile_fill(tile[0:64, 0:64], T.float32(0.5), scope="warp")' in func.script()
    tvm.ir.assert_structural_equal(parse(func.script()), func, map_free_vars=True)


def test_a_python_value_keeps_its_exact_value():
    assert str(find(tvm.tirx.Evaluate(TILE_FILL(S, 0.1))).value.ty) == "float64"  # 0.1 is not a float32
    assert str(find(tvm.tirx.Evaluate(TILE_FILL(S, 0.5))).value.ty) == "float32"
    assert str(find(tvm.tirx.Evaluate(TILE_FILL(S, 1 << 40))).value.ty) == "int64"
    with pytest.raises(TypeError, match=r"T.tile_fill: value must be a number or a scalar expression, got S\[0:64"):
        TILE_FILL(S, S[0:64, 0:64])


KERNEL = """
@T.prim_func
def k(A: T.Buffer((64, 64), "DTYPE"), B: T.Buffer((64, 64), "DTYPE")):
    T.device_entry()
    tx = T.thread_id([128])
    tile = T.alloc_shared((64, 64), "DTYPE")
    FILL
    T.cuda.cta_sync()
    T.tile_copy(B, tile)
"""


def _kernel(fill: str, dtype: str = "float16"):
    return parse(KERNEL.replace("DTYPE", dtype).replace("FILL", fill))


@pytest.mark.parametrize(
    ("dtype", "value", "why"),
    [
        ("int8", "300", "tile is int8, which cannot hold the value 300"),
        ("uint8", "-1", "tile is uint8, which cannot hold the value -1"),
        ("float16", "1e6", "tile is float16, which cannot hold the value 1000000.0"),
        ("int32", "0.5", "tile is int32, which cannot hold the value 0.5"),
        ("float8_e4m3fn", "500.0", "tile is float8_e4m3fn, which cannot hold the value 500.0"),
    ],
)
def test_a_constant_the_destination_cannot_hold_is_refused(dtype, value, why):
    with pytest.raises(LayoutVerificationError, match=why):
        build(_kernel(f"T.tile_fill(tile, {value})", dtype))


def test_a_float_expression_is_not_truncated_into_an_integer_tile_silently():
    text = KERNEL.replace("DTYPE", "int32").replace("FILL", "T.tile_fill(tile, T.Cast('float32', tx))")
    with pytest.raises(LayoutVerificationError, match="a float32 value would be truncated"):
        build(parse(text))


@pytest.mark.parametrize(
    ("condition", "scope", "refused"),
    [
        (
            "tx < 64",
            "cta",
            "a cta-scope T.tile_fill shares its work among every thread of the CTA, but it sits under `if tx < 64`",
        ),
        ("tx < 64", "warp", None),  # whole warps: each fills its share of the tile it names
        ("tx < 48", "warp", "splits warp 1"),
        ("tx == 0", "thread", None),
    ],
)
def test_the_threads_of_its_scope_reach_the_fill_together(condition, scope, refused):
    fill = f'if {condition}:\n        T.tile_fill(tile[0:8, 0:64], 1.0, "{scope}")'
    if refused is None:
        build(_kernel(fill))
    else:
        with pytest.raises(LayoutVerificationError, match=refused):
            build(_kernel(fill))


def test_a_fill_opens_no_buffer_for_inference_and_keeps_a_per_thread_array_whole():
    func = parse("""
@T.prim_func
def k(B: T.Buffer((64, 4), "float32")):
    T.device_entry()
    tx = T.thread_id([64])
    mine = T.alloc_local((4,), "float32")
    T.tile_fill(mine, 2.0, "thread")
    for i in range(4):
        B[tx, i] = mine[i]
""")
    chosen, decisions = infer(func)
    assert chosen == {} and decisions == []
    assert (sim.run(func)["B"] == 2.0).all()


EXAMPLES = example_module("tile_fill")


@pytest.mark.parametrize("name", list(EXAMPLES.KERNELS))
def test_every_fill_example_builds_assembles_and_simulates_equal_to_numpy(name):
    found = report(name, *EXAMPLES.KERNELS[name])
    assert found.ok, found.verdict()


@pytest.mark.parametrize("dtype", ["int8", "uint8", "float8_e4m3fn", "float8_e5m2", "int16", "bfloat16", "float32"])
def test_every_dtype_is_filled_with_whole_vectors_that_assemble_and_simulate(dtype):
    value = -2 if dtype.startswith("int") else 2
    func = _kernel(f"T.tile_fill(tile, {value})", dtype)
    cuda = build(func).imports[0].inspect_source()
    assert "uint4" in kernel_source(cuda) or "float4" in kernel_source(cuda) or "int4" in kernel_source(cuda)
    assembled = nvcc_assembles(cuda)
    assert assembled is None or assembled[0], assembled
    result = sim.run(func)
    assert (result["B"].astype(np.float64) == value).all() and (result.writes["B"] == 1).all()


def test_a_fragment_fill_keeps_the_fragment_in_registers():
    func = parse("""
@T.prim_func
def k(B: T.Buffer((128, 64), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    frag = T.alloc_local((128, 64), "float32", layout=wg_local_layout(64))
    T.tile_fill(frag, 3.0)
    T.tile_copy(B, frag)
""")
    cuda = build(func).imports[0].inspect_source()
    assert "frag_flat[64]" in kernel_source(cuda) or "frag_ptr[64]" in kernel_source(cuda)
    stack = ptxas_stack_frame(cuda)
    assert stack in (None, 0), f"the fragment spilled to a {stack}-byte stack frame"


def ptxas_stack_frame(cuda: str) -> int | None:
    """The stack frame ptxas reports for the kernel (``-Xptxas -v``), ``None`` without nvcc."""
    import re
    import subprocess
    import tempfile
    from pathlib import Path

    from tirx_layout.tools.kernel_report import find_nvcc

    nvcc = find_nvcc()
    if nvcc is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "k.cu"
        source.write_text(cuda)
        done = subprocess.run(
            [nvcc, "-arch=sm_100a", "-cubin", "-Xptxas", "-v", "-o", str(Path(tmp) / "k.cubin"), str(source)],
            capture_output=True,
            text=True,
            timeout=600,
        )
    frames = [int(n) for n in re.findall(r"(\d+) bytes stack frame", done.stderr)]
    return max(frames) if frames else 0


@pytest.mark.parametrize(("dtype", "per_slot"), [("bfloat16", 2), ("float16", 2), ("int8", 4), ("float8_e4m3fn", 4)])
def test_a_fragment_of_four_byte_slot_vectors_is_filled(dtype, per_slot):
    # Found by the kernel fuzzer (issue 33): a 4-byte vector of 8- or 16-bit elements is one 32-bit word, which a
    # broadcast of words (at least two lanes) cannot make; it is two 16-bit half-words instead.
    kernel = parse(f"""
@T.prim_func
def k(B: T.Buffer((8, {4 * per_slot}), "{dtype}")):
    T.device_entry()
    tx = T.thread_id([32])
    frag = T.alloc_local((8, {4 * per_slot}), "{dtype}", layout=T.layout("S[(32, {per_slot}):(1@laneid, 1)]"))
    T.tile_fill(frag, -3)
    T.tile_copy(B, frag)
""")
    cuda = build(kernel).imports[0].inspect_source()
    result = sim.run(kernel, {})
    assert (result["B"].astype(np.float32) == -3).all() and (result.writes["B"] == 1).all()
    assembled = nvcc_assembles(cuda)
    assert assembled is None or assembled[0], assembled
