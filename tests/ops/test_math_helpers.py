"""The ``math`` helper family (``ops/helpers/math.py``): each emitter's call and refusals, nvcc assembling the
helpers for the architectures the PTX ISA names (and ptxas refusing the packed f32x2 ones below sm_100), and a
kernel using them built, assembled and simulated against numpy."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm.script import tirx as T

from tirx_layout import sim
from tirx_layout.ir.device_calls import called_helper
from tirx_layout.ops.helpers import math as hm
from tirx_layout.tools.kernel_report import nvcc_assembles
from tirx_layout.transform import build

F32 = tvm.tirx.const(1.0, "float32")
PAIR = tvm.tirx.Broadcast(F32, 2)


def kernel(with_f32x2: bool = True):
    @T.prim_func
    def packed(
        A: T.Buffer((64,), "float32"),
        B: T.Buffer((64,), "float32"),
        C: T.Buffer((64,), "float32"),
        P: T.Buffer((32,), "uint32"),
        H: T.Buffer((32,), "uint32"),
        Q: T.Buffer((32,), "uint16"),
        R: T.Buffer((32,), "uint16"),
        X: T.Buffer((32,), "float32"),
    ):
        T.device_entry()
        tx = T.thread_id([32])
        a = A[T.ramp(tx * 2, 1, 2)]
        b = B[T.ramp(tx * 2, 1, 2)]
        C[T.ramp(tx * 2, 1, 2)] = hm.fma_f32x2(a, b, hm.add_f32x2(a, hm.mul_f32x2(a, b)))
        P[tx] = hm.cvt_pack(A[tx], B[tx], "bfloat16")
        H[tx] = hm.cvt_pack(A[tx], B[tx], "float16")
        Q[tx] = hm.cvt_pack(A[tx], B[tx], "float8_e4m3fn")
        R[tx] = hm.cvt_pack(A[tx], B[tx], "float8_e5m2")
        X[tx] = hm.ex2_approx(A[tx])

    @T.prim_func
    def scalar(
        A: T.Buffer((64,), "float32"),
        B: T.Buffer((64,), "float32"),
        Q: T.Buffer((32,), "uint16"),
        X: T.Buffer((32,), "float32"),
    ):
        T.device_entry()
        tx = T.thread_id([32])
        Q[tx] = hm.cvt_pack(A[tx], B[tx], "float8_e4m3fn")
        X[tx] = hm.ex2_approx(A[tx])

    return packed if with_f32x2 else scalar


def assembled(func, arch: str):
    result = nvcc_assembles(build(func, arch).imports[0].inspect_source(), arch)
    if result is None:
        pytest.skip("nvcc is not installed")
    return result


def test_each_emitter_names_its_helper_and_its_result_type():
    calls = {
        "ex2_approx": (hm.ex2_approx(F32), "float32"),
        "add_f32x2": (hm.add_f32x2(PAIR, PAIR), "float32x2"),
        "mul_f32x2": (hm.mul_f32x2(PAIR, PAIR), "float32x2"),
        "fma_f32x2": (hm.fma_f32x2(PAIR, PAIR, PAIR), "float32x2"),
        "cvt_pack_bf16x2": (hm.cvt_pack(F32, F32, "bfloat16"), "uint32"),
        "cvt_pack_f16x2": (hm.cvt_pack(F32, F32, "float16"), "uint32"),
        "cvt_pack_e4m3x2": (hm.cvt_pack(F32, F32, "float8_e4m3fn"), "uint16"),
        "cvt_pack_e5m2x2": (hm.cvt_pack(F32, F32, "float8_e5m2"), "uint16"),
    }
    for what, (call, dtype) in calls.items():
        assert called_helper(call)[:2] == ("math", what) and str(call.ty.dtype) == dtype


def test_emitters_refuse_operands_of_the_wrong_type_naming_it():
    with pytest.raises(ValueError, match="add_f32x2 takes float32x2 operands; b is float32"):
        hm.add_f32x2(PAIR, F32)
    with pytest.raises(ValueError, match="ex2_approx takes float32 operands; x is float16"):
        hm.ex2_approx(tvm.tirx.const(1.0, "float16"))
    with pytest.raises(ValueError, match=r"cvt_pack packs .* not 'int8'"):
        hm.cvt_pack(F32, F32, "int8")


def test_the_isa_operand_order_is_in_the_sources():
    source = str(hm.cvt_pack(F32, F32, "bfloat16").args[-1].value)
    assert 'cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(hi), "f"(lo)' in source
    source = str(hm.fma_f32x2(PAIR, PAIR, PAIR).args[-1].value)
    assert (
        "mov.b64 ra, {%2, %3}" in source and '"f"(a.x), "f"(a.y)' in source and "fma.rn.f32x2 rd, ra, rb, rc" in source
    )


def test_nvcc_assembles_every_helper_for_sm_100a():
    ok, messages = assembled(kernel(), "sm_100a")
    assert ok, messages


def test_ptxas_refuses_the_packed_f32x2_instructions_below_sm_100():
    ok, messages = assembled(kernel(), "sm_90a")
    assert not ok and "'add.f32x2' requires .target sm_100" in messages
    ok, messages = assembled(kernel(with_f32x2=False), "sm_90a")  # ex2.approx and the fp8 pack (sm_89+) do assemble
    assert ok, messages


def test_the_helpers_simulate_against_numpy():
    rng = np.random.default_rng(3)
    a = np.float32(rng.integers(-40, 40, 64) / 4)
    b = np.float32(rng.integers(-40, 40, 64) / 8)
    r = sim.run(kernel(), {"A": a, "B": b})
    assert r["C"].tolist() == (a * b + (a + a * b)).tolist()  # quarter/eighth integers: exact
    x, y = a[:32], b[:32]
    import ml_dtypes

    def bits(values, dtype, width):
        return values.astype(dtype).view(f"uint{width}").astype(np.uint32)

    assert r["P"].tolist() == ((bits(x, ml_dtypes.bfloat16, 16) << 16) | bits(y, ml_dtypes.bfloat16, 16)).tolist()
    assert r["H"].tolist() == ((bits(x, np.float16, 16) << 16) | bits(y, np.float16, 16)).tolist()
    assert (
        r["Q"].tolist() == ((bits(x, ml_dtypes.float8_e4m3fn, 8) << 8) | bits(y, ml_dtypes.float8_e4m3fn, 8)).tolist()
    )
    assert r["X"].tolist() == np.exp2(x.astype(np.float64)).astype(np.float32).tolist()
