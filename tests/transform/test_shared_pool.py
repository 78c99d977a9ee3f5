"""PoolSharedMemory: every shared buffer in one dynamic shared-memory pool, the launch passing its size.

Expected offsets and sizes are worked out by hand here from the buffers' shapes, element sizes and declared
alignments (each buffer at the next multiple of its alignment, in allocation order), not read off the pass.
"""

import re

import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.hw.targets import max_shared_bytes
from tirx_layout.tools.kernel_report import kernel_source, nvcc_assembles
from tirx_layout.tools.measurement import launch_values, lower
from tirx_layout.transform import build, pool_shared_memory

from kernels import example_module, parse


def two_tiles(first: int, second: int, dtype: str = "float32"):
    return parse(f"""
@T.prim_func
def k(A: T.Buffer((64,), "{dtype}"), B: T.Buffer((64,), "{dtype}")):
    T.device_entry()
    tx = T.thread_id([64])
    big = T.alloc_shared(({first},), "{dtype}")
    tile = T.alloc_shared(({second},), "{dtype}", align=1024)
    big[tx] = A[tx]
    tile[tx] = A[tx]
    T.cuda.cta_sync()
    B[tx] = big[63 - tx] + tile[tx]
""")


def test_the_pipelined_gemm_asks_its_launch_for_its_whole_ring_as_dynamic_shared_memory():
    gemm = example_module("pipelined_gemm").pipelined_gemm(4096, 4096, 4096, "bfloat16")
    # 4 stages of A 128x64 and B 256x64 bf16 (65536 + 131072 bytes, 1024-aligned), then the mbarriers and the TMEM
    # address slot, each at the next 64-byte boundary (TVM's default buffer alignment): full[4] at 196608,
    # empty[4] at 196672, acc_full[2] at 196736, acc_empty[2] at 196800, the 4-byte slot at 196864.
    expected = 196864 + 4
    assert launch_values(lower(gemm, "tirx_layout", "sm_100a"))["tirx.use_dyn_shared_memory"] == expected
    body = kernel_source(build(gemm, "sm_100a").imports[0].inspect_source())
    assert body.count("__shared__") == 1  # no static shared memory is left
    assert "extern __shared__ __align__(1024) uchar shared_pool_ptr[];" in body
    assert expected > 48 * 1024  # what static shared memory could not have launched


@pytest.mark.parametrize(("floats", "one_per_sm"), [(29100, True), (28900, False)])
def test_a_kernel_holding_more_than_half_a_ctas_shared_memory_runs_one_cta_per_sm(floats, one_per_sm):
    # sm_90a: a CTA may have 232448 bytes (an SM 1 KB more, less 1 KB reserved per CTA). 29100 floats, then 64 at
    # the next 1024 bytes: 116992 bytes, two of them 233984, over; 28900: 115968, two 231936, under (two might fit)
    size = 4 * floats + (-4 * floats) % 1024 + 256
    assert (2 * size > max_shared_bytes("sm_90a")) == one_per_sm
    source = build(two_tiles(floats, 64), "sm_90a").imports[0].inspect_source()
    assert ("__launch_bounds__(64, 1)" in source) == one_per_sm
    assert ("__launch_bounds__(64)" in source) != one_per_sm


def test_buffers_sit_at_their_alignment_in_allocation_order():
    func = pool_shared_memory(two_tiles(300, 64), "sm_90a", above=0)  # pooled however small
    script = func.script()
    # big: 1200 bytes at 0; tile: 64 floats at the next multiple of 1024, byte 2048 = element 512
    assert 'shared_pool = T.alloc_buffer((2304,), "uint8", scope="shared.dyn", align=1024)' in script
    assert 'T.attr("tile", "tirx_layout.shared_window", 2048)' in script
    assert "elem_offset=512" in script


def test_a_kernel_over_the_architectures_shared_memory_is_an_error_naming_the_bytes():
    # 58000 floats (232000 bytes) at 0, then 64 floats at 232448: 232704 bytes, over sm_90a's 232448
    with pytest.raises(
        ValueError,
        match=r"needs 232704 bytes of shared memory \(big 232000 at 0, tile 256 at 232448\)"
        r"; a CTA on sm_90a may use at most 232448 bytes",
    ):
        build(two_tiles(58000, 64), "sm_90a")
    assert max_shared_bytes("sm_90a") == 227 * 1024


def test_the_same_kernel_fits_where_the_limit_allows_and_not_where_it_does_not():
    kernel = two_tiles(20000, 64)  # big: 80000 bytes; tile: 256 bytes at 80896 (79 x 1024): over 48 KB
    assert launch_values(lower(kernel, "tirx_layout", "sm_90a"))["tirx.use_dyn_shared_memory"] == 80896 + 256
    with pytest.raises(ValueError, match=r"at most 65536 bytes"):
        build(kernel, "sm_75")


def test_the_simulator_keeps_each_pooled_buffer_its_own_bounds():
    bad = parse("""
@T.prim_func
def k(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    T.device_entry()
    tx = T.thread_id([64])
    first = T.alloc_shared((32,), "float32")
    second = T.alloc_shared((16384,), "float32")
    first[tx] = A[tx]
    T.cuda.cta_sync()
    B[tx] = second[tx]
""")
    # (64 KB in all: pooled) first[32..63] lies in the pool (second starts at byte 128), not in first: an error
    with pytest.raises(sim.OutOfBounds, match="first"):
        sim.run(bad, {"A": np.arange(64, dtype=np.float32)})


def test_a_view_of_a_pooled_buffer_reads_that_buffer_not_the_pools_start():
    kernel = parse("""
@T.prim_func
def k(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    T.device_entry()
    tx = T.thread_id([64])
    first = T.alloc_shared((64,), "float32")
    second = T.alloc_shared((16384,), "float32")
    first[tx] = T.float32(0)
    second[tx] = A[tx]
    T.cuda.cta_sync()
    window = T.decl_buffer((16384,), "float32", data=second.data, scope="shared")
    B[tx] = window[63 - tx]
""")
    a = np.arange(64, dtype=np.float32)
    assert np.array_equal(sim.run(kernel, {"A": a})["B"], a[::-1])
    body = kernel_source(build(kernel, "sm_90a").imports[0].inspect_source())
    # (64 KB in all: pooled) second starts at byte 256 (64 floats after first, 64-aligned): element 64 of the pool
    assert re.search(r"\(\(float\*\)shared_pool_ptr\)\[\(127 - \(\(int\)threadIdx\.x\)\)\]", body)


def test_up_to_48_kb_the_buffers_stay_static_arrays_named_after_them():
    body = kernel_source(build(two_tiles(300, 64), "sm_90a").imports[0].inspect_source())
    assert "extern __shared__" not in body
    assert "__shared__ alignas(1024) float tile_ptr[64];" in body
    assert launch_values(lower(two_tiles(300, 64), "tirx_layout", "sm_90a")).get("tirx.use_dyn_shared_memory") is None


def test_the_pooled_cuda_assembles_for_hopper():
    assembled = nvcc_assembles(build(two_tiles(20000, 64), "sm_90a").imports[0].inspect_source(), "sm_90a")
    if assembled is None:
        pytest.skip("nvcc is not installed")
    assert assembled[0], assembled[1]


def test_pooled_buffers_allocated_in_different_scopes_are_an_error_naming_them():
    kernel = parse("""
@T.prim_func
def k(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    T.device_entry()
    tx = T.thread_id([64])
    big = T.alloc_shared((16384,), "float32")
    big[tx] = A[tx]
    for i in range(2):
        late = T.alloc_shared((64,), "float32")
        late[tx] = big[tx]
        B[tx] = late[tx]
""")
    with pytest.raises(ValueError, match="shared buffers big and late are allocated in different scopes"):
        build(kernel, "sm_90a")
