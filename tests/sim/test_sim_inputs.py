"""What the simulator accepts as a kernel's inputs: every dtype a kernel may use (numpy's, and ml_dtypes' narrow
floats and sub-byte integers), symbolic buffer shapes bound from the arrays given, and scalar parameters by name."""

import ml_dtypes
import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.sim import SimulationError, numpy_dtype

from kernels import parse

COPY = """
@T.prim_func
def k(A: T.Buffer((64,), "DTYPE"), B: T.Buffer((64,), "DTYPE")):
    T.device_entry()
    bx = T.cta_id([2])
    tx = T.thread_id([32])
    B[bx * 32 + tx] = A[63 - bx * 32 - tx]
"""

DTYPES = {
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float4_e2m1fn": ml_dtypes.float4_e2m1fn,
    "bfloat16": ml_dtypes.bfloat16,
    "float16": np.float16,
    "float64": np.float64,
    "int4": ml_dtypes.int4,
    "uint4": ml_dtypes.uint4,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
}


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_every_dtype_is_simulated_with_its_own_values(dtype):
    assert numpy_dtype(dtype) == np.dtype(DTYPES[dtype])
    # Values the narrowest types hold exactly: 0..7 for 4-bit integers, 0, 0.5, 1, ..., 6 for float4_e2m1fn.
    values = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6] * 8) if dtype.startswith("float") or "bfloat" in dtype else None
    if values is None:
        values = np.arange(64) % 8
    a = values.astype(DTYPES[dtype])
    result = sim.run(parse(COPY.replace("DTYPE", dtype)), {"A": a})
    assert result["B"].dtype == np.dtype(DTYPES[dtype])
    np.testing.assert_array_equal(result["B"].astype(np.float64), a[::-1].astype(np.float64))


STAGED = """
@T.prim_func
def k(A: T.Buffer((16, 64), "DTYPE"), B: T.Buffer((16, 64), "DTYPE")):
    T.device_entry()
    tx = T.thread_id([32])
    sm = T.alloc_shared((16, 64), "DTYPE")
    T.tile_copy(sm, A)
    T.cuda.cta_sync()
    T.tile_copy(B, sm)
"""


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_float8_stored_as_bytes_on_sm_80_moves_the_same_bytes(dtype):
    """sm_80 has no float8 type: TVM stores the tiles as uint8 (the device pointers are uint8 ones) and the code
    moves bytes. The simulator views the inputs' bytes so too (found by the kernel fuzzer: it converted float8 -2.0
    to a uint8 number, and the copy came out wrong)."""
    a = (np.arange(16 * 64).reshape(16, 64) % 9 - 4).astype(DTYPES[dtype])
    result = sim.run(parse(STAGED.replace("DTYPE", dtype)), {"A": a}, "sm_80")
    assert result["B"].dtype == np.dtype(DTYPES[dtype]) and (result.writes["B"] == 1).all()
    np.testing.assert_array_equal(result["B"].view(np.uint8), a.view(np.uint8))


@pytest.mark.parametrize(("dtype", "scalar"), [("float8_e4m3fnx16", "float8_e4m3fn"), ("int8x4", "int8")])
def test_vector_dtypes_map_to_their_element_type(dtype, scalar):
    assert numpy_dtype(dtype) == numpy_dtype(scalar)


def test_an_unknown_dtype_is_a_simulation_error():
    with pytest.raises(SimulationError, match="no numpy type for dtype complex64"):
        numpy_dtype("complex64")


SYMBOLIC = """
@T.prim_func
def k(a: T.handle, b: T.handle):
    M = T.int32()
    A = T.match_buffer(a, (M, 4), "float32")
    B = T.match_buffer(b, (M, 4), "float32")
    T.device_entry()
    tx = T.thread_id([128])
    if tx < M * 4:
        B[tx // 4, tx % 4] = A[tx // 4, tx % 4] + T.float32(1)
"""


def test_symbolic_shapes_are_bound_from_the_input_arrays():
    a = np.arange(40, dtype=np.float32).reshape(10, 4)
    result = sim.run(parse(SYMBOLIC), {"A": a})
    np.testing.assert_array_equal(result["B"], a + 1)
    assert result["B"].shape == (10, 4) and (result.writes["B"] == 1).all()


def test_symbolic_shapes_that_disagree_or_are_missing_are_refused():
    with pytest.raises(ValueError, match="input B gives M = 3, an earlier input gave 10"):
        sim.run(parse(SYMBOLIC), {"A": np.zeros((10, 4), np.float32), "B": np.zeros((3, 4), np.float32)})
    with pytest.raises(ValueError, match=r"the shape \[M, 4\] of A uses M, which no input array gives"):
        sim.run(parse(SYMBOLIC))
    with pytest.raises(ValueError, match=r"input A has shape \(10, 5\), the kernel declares \(10, 4\)"):
        sim.run(parse(SYMBOLIC), {"A": np.zeros((10, 5), np.float32)})


SCALAR = """
@T.prim_func
def k(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"), n: T.int32, scale: T.float32):
    T.device_entry()
    tx = T.thread_id([128])
    if tx < n:
        B[tx] = A[tx] * scale
"""


def test_scalar_parameters_are_passed_by_name():
    a = np.arange(128, dtype=np.float32)
    result = sim.run(parse(SCALAR), {"A": a, "n": 100, "scale": 0.5})
    np.testing.assert_array_equal(result["B"][:100], a[:100] * 0.5)
    assert (result["B"][100:] == 0).all() and result.writes["B"].sum() == 100
    assert "n" not in result.outputs


def test_a_missing_scalar_parameter_is_named():
    with pytest.raises(ValueError, match=r"scalar parameter n needs a value: run\(kernel, \{'n': ...\}\)"):
        sim.run(parse(SCALAR), {"A": np.zeros(128, np.float32), "scale": 1.0})
