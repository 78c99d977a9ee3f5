"""Casting copies: ``T.tile_copy`` between buffers of different dtypes converts, in every direction a copy exists
(memory <-> memory, fragment <-> memory, fragment <-> fragment, TMEM <-> fragment). The lowering against TIR written
by hand, the vector widths, the rounding per pair (exact values), end to end in the simulator against numpy /
ml_dtypes, and the refusals (tcgen05.cp, TMA, float -> integer) with their type and words."""

import ml_dtypes
import numpy as np
import pytest
import tvm
from tvm.script import tirx as T

from tirx_layout import sim, tcgen05_atom_layout, tmem_datapath_layout
from tirx_layout.ops.copy.cast import conversion, converted
from tirx_layout.ops.copy.plan import vector_width
from tirx_layout.ops.operands import operand
from tirx_layout.tools.kernel_report import nvcc_assembles
from tirx_layout.transform import build, infer_layouts, lower_tile_ops
from tirx_layout.transform.infer_layouts.cost_model import copy_cost

from kernels import parse


def numpy_dtype(dtype: str):
    return np.dtype(getattr(ml_dtypes, dtype, dtype))


def check(before: str, after: str):
    tvm.ir.assert_structural_equal(lower_tile_ops(parse(before)), parse(after), map_free_vars=True)


def test_memory_to_memory_cast_is_one_vector_conversion_per_narrow_16_bytes():
    # 8 bfloat16 (16 bytes) per store, from 8 float32 (two 16-byte loads): one Cast of the loaded vector.
    check(
        """
@T.prim_func
def k(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "bfloat16")):
    T.device_entry()
    tx = T.thread_id([32])
    T.tile_copy(B, A)
""",
        """
@T.prim_func
def k(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "bfloat16")):
    T.device_entry()
    tx = T.thread_id([32])
    B_flat = T.decl_buffer((256,), "bfloat16", data=B.data, layout=None)
    A_flat = T.decl_buffer((256,), data=A.data, layout=None)
    B_flat[tx * 8:tx * 8 + 8] = T.Cast("bfloat16x8", A_flat[T.Ramp(tx * 8, 1, 8)])
""",
    )


def test_fragment_to_fragment_cast_is_a_register_conversion_slot_by_slot():
    check(
        """
@T.prim_func
def k():
    T.device_entry()
    tx = T.thread_id([32])
    f = T.alloc_local((32, 16), "float32", layout=T.layout("S[(32, 16):(1@laneid, 1)]"))
    h = T.alloc_local((32, 16), "float16", layout=T.layout("S[(32, 16):(1@laneid, 1)]"))
    T.tile_copy(h, f)
""",
        """
@T.prim_func
def k():
    T.device_entry()
    tx = T.thread_id([32])
    f = T.alloc_local((32, 16), "float32", layout=T.layout("S[(32, 16):(1@laneid, 1)]"))
    h = T.alloc_local((32, 16), "float16", layout=T.layout("S[(32, 16):(1@laneid, 1)]"))
    h_flat = T.decl_buffer((16,), "float16", data=h.data, scope="local", layout=None)
    f_flat = T.decl_buffer((16,), data=f.data, scope="local", layout=None)
    for slot in T.unroll(2):
        h_flat[slot * 8:slot * 8 + 8] = T.Cast("float16x8", f_flat[T.Ramp(slot * 8, 1, 8)])
""",
    )


@pytest.mark.parametrize(
    ("src", "dst", "v"),
    [
        ("float32", "bfloat16", 8),  # 16 bytes of bf16, 32 of fp32
        ("bfloat16", "float32", 8),
        ("float32", "float8_e4m3fn", 4),  # an 8-bit-float conversion is 4 lanes; 16 fp8 would be 64 bytes of fp32
        ("float8_e5m2", "float16", 4),
        ("int32", "int8", 8),  # 8 bytes of int8: 16 would need 64 bytes of int32
        ("int8", "int32", 8),
        ("float16", "float16", 8),
    ],
)
def test_vector_width_is_decided_by_the_narrower_side(src, dst, v):
    a = tvm.tirx.decl_buffer((8, 64), src, "A")
    b = tvm.tirx.decl_buffer((8, 64), dst, "B")
    assert vector_width(operand(b[0:8, 0:64], {}, "destination"), operand(a[0:8, 0:64], {}, "source")) == v


def test_conversions_say_their_rounding():
    assert conversion("float32", "float32") == "a copy"
    assert conversion("bfloat16", "float32") == "exact"
    assert conversion("float8_e4m3fn", "float16") == "exact"
    assert conversion("float16", "bfloat16") == "round to nearest even (PTX cvt.rn), overflow to infinity"
    assert conversion("float32", "float8_e5m2").startswith("round to nearest even, saturating")
    assert "57344" in conversion("float32", "float8_e5m2") and "448" in conversion("bfloat16", "float8_e4m3fn")
    assert conversion("int32", "int8") == "the low 8 bits (two's complement wrap-around)"
    assert conversion("int8", "int32") == "sign-extended" and conversion("uint8", "int32") == "zero-extended"
    assert conversion("int32", "float32") == "round to nearest even (PTX cvt.rn)"


def test_an_8_bit_float_converts_to_16_bits_through_float32():
    x = tvm.tirx.Var("x", "float8_e5m2x4")
    assert str(converted(x, "float8_e5m2", "bfloat16", 4)) == 'T.Cast("bfloat16x4", T.Cast("float32x4", x))'
    assert str(converted(x, "float8_e5m2", "float32", 4)) == 'T.Cast("float32x4", x)'


FRAGMENTS = """
@T.prim_func
def k(A: T.Buffer((64, 64), "{src}"), B: T.Buffer((64, 64), "{dst}"), C: T.Buffer((64, 64), "{dst}"),
      D: T.Buffer((64, 64), "{dst}")):
    T.device_entry()
    tx = T.thread_id([128])
    f = T.alloc_local((64, 64), "{src}", layout=T.layout("{layout}"))
    g = T.alloc_local((64, 64), "{dst}", layout=T.layout("{layout}"))
    h = T.alloc_local((64, 64), "{dst}", layout=T.layout("{layout}"))
    Sm = T.alloc_shared((64, 64), "{dst}")
    T.tile_copy(f, A)
    T.tile_copy(g, f)
    T.tile_copy(B, g)
    T.tile_copy(h, A)
    T.tile_copy(C, h)
    T.tile_copy(Sm, f)
    T.cuda.cta_sync()
    T.tile_copy(D, Sm)
"""
# rows over the lanes of warps 0-1, replicated on warps 2-3: a fragment store writes from replica 0 only
REPLICATED = "S[(2, 32, 64):(1@warpid, 1@laneid, 1)] + R[2:2@warpid]"


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        ("float32", "bfloat16"),
        ("float32", "float16"),
        ("float32", "float8_e4m3fn"),
        ("float16", "float8_e5m2"),
        ("float8_e5m2", "bfloat16"),
        ("bfloat16", "float32"),
        ("int32", "int8"),
        ("int8", "int32"),
        ("uint8", "int32"),
        ("int32", "float32"),
    ],
)
def test_casting_copies_simulate_as_numpy_converts(src, dst):
    # global -> fragment -> fragment (cast) -> global, global -> fragment (cast) -> global, fragment -> shared
    # (cast) -> global: every path converts once, as ml_dtypes / numpy do (round to nearest even, wrap-around).
    func = parse(FRAGMENTS.format(src=src, dst=dst, layout=REPLICATED))
    values = np.arange(64 * 64) % 251 - 125  # 125 is in range of every dtype here; bf16 and fp8 round some
    if src == "uint8":
        values = values + 125
    a = (values / 4 if src.startswith(("float", "bfloat")) else values).reshape(64, 64).astype(numpy_dtype(src))
    result = sim.run(func, [a])
    wanted = a.astype(numpy_dtype(dst))
    for name in "BCD":
        np.testing.assert_array_equal(np.asarray(result[name]).view(wanted.dtype), wanted, err_msg=name)
        assert (result.writes[name] == 1).all()


def test_float32_to_bfloat16_rounds_to_nearest_even_in_the_simulated_kernel():
    func = parse(FRAGMENTS.format(src="float32", dst="bfloat16", layout=REPLICATED))
    a = np.zeros((64, 64), np.float32)
    a[0, :4] = [1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8 + 2**-20), 3.0]  # a tie to even, a tie up, past a tie, exact
    got = np.asarray(sim.run(func, [a])["B"]).view(ml_dtypes.bfloat16)[0, :4].astype(np.float32)
    np.testing.assert_array_equal(got, [1.0, 1.015625, -1.0078125, 3.0])


def test_casting_kernel_assembles():
    cuda = build(parse(FRAGMENTS.format(src="float32", dst="bfloat16", layout=REPLICATED))).imports[0]
    assembled = nvcc_assembles(cuda.inspect_source())
    assert assembled is None or assembled[0], assembled


def tmem_round_trip(tmem_dtype: str, dtype: str):
    tmem_layout = tmem_datapath_layout("D", 128, 64)
    fragment = tcgen05_atom_layout("32x32b", (128, 64), tmem_dtype)

    @T.prim_func
    def k(A: T.Buffer((128, 64), dtype), B: T.Buffer((128, 64), dtype)):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_tmem((128, 64), tmem_dtype, layout=tmem_layout)
        into = T.alloc_local((128, 64), dtype, layout=fragment)
        out = T.alloc_local((128, 64), dtype)  # inferred: the image of the float32 tcgen05.ld
        T.tile_copy(into, A)
        T.tile_copy(acc, into)
        T.tile_copy(out, acc)
        T.tile_copy(B, out)

    return k


@pytest.mark.parametrize(
    ("tmem_dtype", "dtype"), [("float32", "bfloat16"), ("float32", "float8_e4m3fn"), ("float16", "float32")]
)
def test_tmem_casting_copies_convert_in_registers_of_the_tmem_dtype(tmem_dtype, dtype):
    func = tmem_round_trip(tmem_dtype, dtype)
    inferred = infer_layouts(func)
    assert "out = T.alloc_local((128, 64)" in inferred.script()
    lowered = lower_tile_ops(inferred).script()
    # tcgen05.st from, and tcgen05.ld into, registers of TMEM's dtype placed as the fragment; converted slot by slot
    assert f"into_{tmem_dtype} = T.alloc_local((128, 64)" in lowered
    assert f"out_{tmem_dtype} = T.alloc_local((128, 64)" in lowered
    wide = dtype if tmem_dtype == "float16" else tmem_dtype
    lanes = 4 if "float8" in dtype else 8
    assert f'T.Cast("{wide if wide != dtype else tmem_dtype}x{lanes}"' in lowered
    a = (np.arange(128 * 64) % 61 - 30).reshape(128, 64).astype(numpy_dtype(dtype))
    np.testing.assert_array_equal(np.asarray(sim.run(func, [a])["B"]).view(a.dtype), a)


REFUSED = """
@T.prim_func
def k(A: T.Buffer((128, 64), "float32"), I: T.Buffer((128, 64), "int32"), H: T.Buffer((128, 64), "float64")):
    T.device_entry()
    tx = T.thread_id([128])
    {body}
"""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("T.tile_copy(I, A)", r"from A to I: a casting copy does not convert float32 to int32: .*round and clamp"),
        ("T.tile_copy(H, A)", r"does not convert float32 to float64: it converts between float32, float16"),
    ],
)
def test_unconverted_pairs_are_refused_naming_both_dtypes(body, message):
    with pytest.raises(ValueError, match=message):
        lower_tile_ops(parse(REFUSED.format(body=body)))


def test_tcgen05_cp_with_a_dtype_change_is_refused_saying_what_to_do():
    @T.prim_func
    def k(A: T.Buffer((128, 64), "float16")):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_tmem((128, 32), "float32", layout=tmem_datapath_layout("D", 128, 32))
        tile = T.alloc_shared((128, 32), "float16")
        T.tile_copy(acc, tile, "thread")

    with pytest.raises(ValueError, match=r"tile \(float16, shared\) to acc \(float32, TMEM\) is a tcgen05.cp, which"):
        lower_tile_ops(k)
    with pytest.raises(ValueError, match=r"copies bits without converting; convert on the way through registers"):
        lower_tile_ops(k)


def test_tma_with_a_dtype_change_is_refused_saying_what_to_do():
    text = """
@T.prim_func
def k(A: T.Buffer((64, 64), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    tile = T.alloc_shared((64, 64), "bfloat16", layout=mma_shared_layout("bfloat16", "128B", (64, 64)), align=1024)
    bars = T.alloc_shared((1,), "uint64")
    T.tile_copy_async(tile, A, bars[0])
"""
    with pytest.raises(ValueError, match=r"A is float32 but tile is bfloat16; TMA copies bytes without converting; "):
        lower_tile_ops(parse(text))


def test_cost_model_counts_the_wider_side_in_16_byte_instructions():
    a = tvm.tirx.decl_buffer((16, 16), "float32", "A")
    b = tvm.tirx.decl_buffer((16, 16), "bfloat16", "B", scope="shared")
    # 32 threads, one round of 8 elements each: two 16-byte loads of float32, one 16-byte store of bfloat16
    cost = copy_cost(b[0:16, 0:16], a[0:16, 0:16], "cta", {}, 32)
    assert (cost.instructions, cost.global_instructions, cost.bytes) == (3, 2, 32 * 32 + 32 * 16)
    assert cost.wavefronts == cost.minimum_wavefronts == 4  # 512 bytes of shared stores, 128 per wavefront


GLOBAL_CAST = """
@T.prim_func
def k(A: T.Buffer((ROWS, COLS), "SRC"), B: T.Buffer((ROWS, COLS), "DST")):
    T.device_entry()
    tx = T.thread_id([THREADS])
    T.tile_copy(B, A)
"""


def _global_cast(src, dst, rows, cols, threads):
    text = GLOBAL_CAST.replace("SRC", src).replace("DST", dst).replace("ROWS", str(rows)).replace("COLS", str(cols))
    return parse(text.replace("THREADS", str(threads)))


@pytest.mark.parametrize(("src", "dst"), [("int32", "float8_e5m2"), ("int8", "float8_e4m3fn")])
def test_an_integer_to_an_8_bit_float_copy_assembles(src, dst):
    cuda = build(_global_cast(src, dst, 32, 32, 128), "sm_100a").imports[0].inspect_source()
    assembled = nvcc_assembles(cuda, "sm_100a")
    if assembled is None:
        pytest.skip("nvcc is not installed")
    assert assembled[0], assembled[1][-600:]


@pytest.mark.parametrize("dst", ["float16", "bfloat16"])
def test_a_byte_to_half_copy_builds(dst):
    a = np.arange(64 * 16).reshape(64, 16) % 200
    func = _global_cast("uint8", dst, 64, 16, 32)
    build(func, "sm_100a")
    assert np.array_equal(sim.run(func, {"A": a.astype(np.uint8)})["B"].astype(np.float64), a)


def test_two_open_fragments_chained_by_a_narrowing_cast_are_inferred():
    """Found by the kernel fuzzer (note33b): each side alone prefers its own widest vector (float16: 8 lanes,
    float8: 16), but a copy between fragments keeps one placement, so the group takes one layout for both."""
    text = """
@T.prim_func
def k(A: T.Buffer((64, 64), "float16"), B: T.Buffer((64, 64), "float8_e5m2")):
    T.device_entry()
    tx = T.thread_id([128])
    f = T.alloc_local((64, 64), "float16")
    T.tile_copy(f, A)
    g = T.alloc_local((64, 64), "float8_e5m2")
    T.tile_copy(g, f)
    T.tile_copy(B, g)
"""
    a = (np.arange(64 * 64).reshape(64, 64) % 9 - 4).astype(np.float16)
    result = sim.run(parse(text), {"A": a})
    assert np.array_equal(result["B"].astype(np.float64), a.astype(np.float64))
