"""TMA kernels built by the pipeline and run in the simulator: a box loaded from global memory into a swizzled
shared tile (through the host-encoded tensor map), read back by threads, equals numpy, a tail box filled with zeros;
a TMA store writes only the rows inside the tensor; reading the tile before its mbarrier phase is seen is a
DataRace. Expected values are numpy slices of the inputs."""

import ml_dtypes
import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.sim import DataRace, SimulationError

from kernels import parse

SIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float8_e4m3fn": 1}
SPAN = {"32B": 32, "64B": 64, "128B": 128}
NUMPY = {
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float32": np.float32,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
}


def kernel(dtype, mode, *, wait="T.mbarrier_wait(bars[0], 0)", before_copy="", store=False):
    cols = SPAN[mode] // SIZE[dtype] if mode != "none" else 32
    layout = f'mma_shared_layout("{dtype}", "{mode}", (128, {cols}))' if mode != "none" else "None"
    out = f"T.tile_copy_async(C[128:256, 0:{cols}], As)\n    T.tma_store_wait()" if store else "T.tile_copy(B, As)"
    return (
        f"""
@T.prim_func
def k(a: T.handle, c: T.handle, B: T.Buffer((128, {cols}), "{dtype}")):
    M = T.int32()
    A = T.match_buffer(a, (M, {cols}), "{dtype}")
    C = T.match_buffer(c, (M, {cols}), "{dtype}")
    T.device_entry()
    tx = T.thread_id([128])
    As = T.alloc_shared((128, {cols}), "{dtype}", layout={layout}, align=1024)
    bars = T.alloc_shared((1,), "uint64")
    T.mbarrier_init(bars[0], 1)
    {before_copy}
    T.tile_copy_async(As, A[128:256, 0:{cols}], bars[0])
    {wait}
    {out}
""",
        cols,
    )


def inputs(dtype, rows, cols):
    values = (np.arange(rows * cols) % 97 - 48).astype(np.float32).reshape(rows, cols) / 4
    return values.astype(NUMPY[dtype])


@pytest.mark.parametrize(
    "dtype, mode",
    [("bfloat16", "128B"), ("float16", "64B"), ("float32", "32B"), ("float8_e4m3fn", "128B"), ("float16", "none")],
)
def test_a_tail_box_loads_the_rows_inside_the_tensor_and_zeros_below(dtype, mode):
    text, cols = kernel(dtype, mode)
    a = inputs(dtype, 200, cols)  # rows 128..199 inside, 200..255 past the end
    out = sim.run(parse(text), {"A": a, "C": np.zeros_like(a)}).outputs["B"]
    want = np.zeros((128, cols), a.dtype)
    want[:72] = a[128:]
    np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))


def test_a_store_writes_the_box_back_clipped_to_the_tensor():
    text, cols = kernel("bfloat16", "128B", store=True)
    a = inputs("bfloat16", 200, cols)
    out = sim.run(parse(text), {"A": a, "C": np.zeros_like(a)}).outputs["C"]
    want = np.zeros_like(a)
    want[128:] = a[128:]
    np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))


def test_reading_the_tile_without_waiting_on_its_barrier_is_a_data_race():
    text, cols = kernel("bfloat16", "128B", wait="")
    a = inputs("bfloat16", 256, cols)
    with pytest.raises(DataRace, match=r"As\[\d+\]: a load by thread \d+ before it has seen the TMA load"):
        sim.run(parse(text), {"A": a, "C": np.zeros_like(a)})


def test_a_wait_on_the_wrong_parity_before_the_copy_returns_at_once_and_the_read_is_a_data_race():
    # parity 1 on a fresh mbarrier is "the phase before", complete: the wait returns before the copy is issued
    text, cols = kernel("bfloat16", "128B", wait="", before_copy="T.mbarrier_wait(bars[0], 1)")
    a = inputs("bfloat16", 256, cols)
    with pytest.raises(DataRace, match=r"wait on bars\[0\] for phase 0"):
        sim.run(parse(text), {"A": a, "C": np.zeros_like(a)})


def test_a_wait_on_the_wrong_parity_after_the_copy_never_returns():
    text, cols = kernel("bfloat16", "128B", wait="T.mbarrier_wait(bars[0], 1)")
    a = inputs("bfloat16", 256, cols)
    with pytest.raises(SimulationError, match="never returns"):
        sim.run(parse(text), {"A": a, "C": np.zeros_like(a)})
