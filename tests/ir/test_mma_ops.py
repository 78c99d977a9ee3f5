"""The tile_mma and mbarrier ops as TIR: what the TVMScript names build, what the recognisers read back, and the
errors for arguments no MMA or mbarrier takes."""

import pytest
import tvm

from tirx_layout.ir.device_calls import is_cta_barrier, is_warp_barrier, warp_barrier
from tirx_layout.ir.mma_ops import (
    MBARRIER_OPS,
    as_mbarrier,
    as_mma,
    mbarrier_call,
    mma_call,
    tmem_base_address,
    tmem_base_buffer,
)
from tirx_layout.ir.rewrite import walk
from tirx_layout.script.mma import tile_mma as script_tile_mma

from kernels import parse

D = tvm.tirx.decl_buffer((2, 128, 64), "float32", "D", scope="tmem")
A = tvm.tirx.decl_buffer((128, 32), "float16", "A", scope="shared")
B = tvm.tirx.decl_buffer((64, 32), "float16", "B", scope="shared")
SF = tvm.tirx.decl_buffer((32, 16), "float8_e8m0fnu", "SF", scope="tmem")
BARS = tvm.tirx.decl_buffer((4,), "uint64", "bars", scope="shared")


def test_tile_mma_in_tvmscript_is_read_back_with_every_operand():
    func = parse("""
@T.prim_func
def k():
    T.device_entry()
    tx = T.thread_id([128])
    bars = T.alloc_shared((2,), "uint64")
    A = T.alloc_shared((128, 32), "float16")
    B = T.alloc_shared((64, 32), "float16")
    acc = T.alloc_tmem((2, 128, 64), "float32", layout=T.layout("S[(2, 128, 64):(64@TCol, 1@TLane, 1@TCol)]"))
    for s in range(2):
        T.tile_mma(acc[s, 0:128, 0:64], A, B[0:64, 16:32], accumulate=s > 0, barrier=bars[1], scope="warp")
""")
    found = []
    walk(func.body, [(tvm.tirx.Evaluate, lambda n: found.append(as_mma(n)) if as_mma(n) else None)])
    (mma,) = found
    assert mma.d.source.name == "acc" and str(mma.d.region[0].min) == "s"
    assert [int(r.extent) for r in mma.a.region] == [128, 32]  # a whole buffer becomes its full region
    assert [int(r.min) for r in mma.b.region] == [0, 16]
    assert str(mma.accumulate) == "s > 0"
    assert mma.barrier.source.name == "bars" and int(mma.barrier.indices[0]) == 1
    assert (mma.scale_a, mma.scale_b, mma.scope) == (None, None, "warp")


def test_accumulate_takes_a_bool_an_integer_or_a_boolean_expression():
    assert bool(as_mma(mma_call(D[0, 0:128, 0:64], A, B, True)).accumulate)
    x = tvm.tirx.Var("x", "int32")
    assert str(as_mma(mma_call(D[0, 0:128, 0:64], A, B, x)).accumulate) == "x != 0"
    with pytest.raises(ValueError, match="accumulate must be a bool or a boolean expression, got 2"):
        mma_call(D, A, B, 2)
    with pytest.raises(TypeError, match=r"accumulate must be a boolean expression, got .* float32"):
        mma_call(D, A, B, tvm.tirx.const(1.0, "float32"))


def test_scale_factors_come_in_pairs():
    mma = as_mma(mma_call(D, A, B, scale_a=SF, scale_b=SF))
    assert mma.scale_a.source.name == "SF" and mma.scale_b.source.name == "SF"
    with pytest.raises(ValueError, match="scale_a without scale_b; a block-scaled MMA takes both"):
        mma_call(D, A, B, scale_a=SF)
    with pytest.raises(ValueError, match="scale_b without scale_a"):
        mma_call(D, A, B, scale_b=SF)


def test_bad_operands_scopes_and_barriers_are_refused_when_the_op_is_built():
    with pytest.raises(
        ValueError, match=r"tile_mma scope must be one of \['cta', 'warpgroup', 'warp', 'thread'\], got 'block'"
    ):
        mma_call(D, A, B, scope="block")
    with pytest.raises(TypeError, match="D must be a buffer or a region of one"):
        mma_call(3, A, B)
    with pytest.raises(TypeError, match=r"the mbarrier is an element of a shared uint64 buffer .* got A\[0, 0\]"):
        mma_call(D, A, B, barrier=A[0, 0])


def test_mbarrier_ops_carry_their_value_as_uint32():
    for what, takes_value in MBARRIER_OPS.items():
        call = mbarrier_call(what, BARS[2], 1) if takes_value else mbarrier_call(what, BARS[2])
        op = as_mbarrier(tvm.tirx.Evaluate(call))
        assert op.what == what and int(op.bar.indices[0]) == 2
        assert (op.value is None) == (not takes_value)
        if takes_value:
            assert str(op.value.ty) == "uint32" and int(op.value) == 1
    assert as_mbarrier(tvm.tirx.Evaluate(0)) is None and as_mma(tvm.tirx.Evaluate(0)) is None


def test_mbarrier_ops_refuse_what_they_cannot_take():
    with pytest.raises(ValueError, match="unknown mbarrier operation 'try_wait'"):
        mbarrier_call("try_wait", BARS[0], 0)
    with pytest.raises(TypeError, match=r"T\.mbarrier_wait takes the mbarrier and a value"):
        mbarrier_call("wait", BARS[0])
    with pytest.raises(TypeError, match=r"T\.mbarrier_arrive takes the mbarrier only"):
        mbarrier_call("arrive", BARS[0], 1)
    with pytest.raises(ValueError, match=r"T.mbarrier_expect_tx: the transaction byte count must be in 0..1048575"):
        mbarrier_call("expect_tx", BARS[0], 1 << 20)
    with pytest.raises(
        ValueError, match=r"T.mbarrier_init: the arrival count must be in 1..1048575 \(PTX ISA\), got 0"
    ):
        mbarrier_call("init", BARS[0], 0)
    with pytest.raises(ValueError, match=r"T.mbarrier_wait: the phase parity must be in 0..1 \(PTX ISA\), got 2"):
        mbarrier_call("wait", BARS[0], 2)
    assert int(as_mbarrier(mbarrier_call("init", BARS[0], (1 << 20) - 1)).value) == (1 << 20) - 1
    with pytest.raises(TypeError, match=r"the value must be an integer, got .* float32"):
        mbarrier_call("init", BARS[0], tvm.tirx.const(1.0, "float32"))


def test_the_tmem_base_address_names_its_buffer():
    address = tmem_base_address(D)
    assert tmem_base_buffer(address).same_as(D) and str(address.ty) == "uint32"
    assert tmem_base_buffer(address + tvm.tirx.const(1, "uint32")) is None


def test_warp_barrier_is_not_a_cta_barrier():
    assert is_warp_barrier(warp_barrier()) and not is_cta_barrier(warp_barrier())


def test_a_printed_tile_mma_parses_back_to_the_same_op():
    func = parse("""
@T.prim_func
def k():
    T.device_entry()
    tx = T.thread_id([128])
    bars = T.alloc_shared((2,), "uint64")
    A = T.alloc_shared((128, 32), "float16")
    B = T.alloc_shared((64, 32), "float16")
    acc = T.alloc_tmem((128, 64), "float32", layout=T.layout("S[(128, 64):(1@TLane, 1@TCol)]"))
    for s in range(2):
        T.tile_mma(acc, A, B, accumulate=s > 0, barrier=bars[1], scope="warp")
        T.tile_mma(acc, A, B)
""")
    printed = func.script()
    assert 'T.tile_mma(acc[0:128, 0:64], A[0:128, 0:32], B[0:64, 0:32], s > 0, bars[1], "", "", "warp")' in printed
    tvm.ir.assert_structural_equal(parse(printed), func)
    with pytest.raises(TypeError, match=r"by keyword .* got 2 extra positional arguments"):
        script_tile_mma(D, A, B, False, BARS[0], "warp")
