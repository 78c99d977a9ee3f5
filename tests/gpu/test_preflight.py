"""What can be checked of the GPU suite without a GPU (these tests run everywhere): its kernels build for sm_90a
(the lent H200), carry no Blackwell-only instruction, launch within sm_90's limits (1024 threads, 227 KB of shared
memory), assemble with ``nvcc -arch=sm_90a``, and the TMA loads simulate equal to numpy. A sample of the copy
examples (one per module, the replica kernels, every narrow dtype) and of their store-counting builds; the GEMM
examples are assembled for sm_90a by their own tests."""

import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.hw.targets import max_shared_bytes
from tirx_layout.tools.kernel_report import kernel_source, nvcc_assembles
from tirx_layout.tools.measurement import launch_values, lower
from tirx_layout.transform import build

from kernels.device import (
    COPY_MODULES,
    COUNTABLE,
    big_copy,
    count_stores,
    device_case,
    example_entries,
    example_entry,
    tma_load_kernel,
)

ARCH = "sm_90a"
SAMPLE = [entries[0] for entries in (example_entries([stem]) for stem in COPY_MODULES) if entries] + [
    ("swizzled_staging", "staging_bf16_128B"),  # bf16 and fp32 outputs: their atomicAdd counting builds
    ("swizzled_staging", "staging_fp32_64B"),
    ("tile_copies", "replica_over_lanes"),
    ("tile_copies", "replica_over_warps"),
    ("tile_copies", "shared_memory_replica"),
    *example_entries(["narrow_dtypes"]),
]
SAMPLE = list(dict.fromkeys(SAMPLE))


def check_launch(kernel, source: str) -> None:
    # (helper names carry tcgen05_ for history; the PTX instructions are what sm_90a lacks)
    assert "tcgen05." not in source, "a Blackwell-only instruction in a kernel meant for sm_90a"
    launch = launch_values(lower(kernel, "tirx_layout", ARCH))
    threads = launch.get("threadIdx.x", 1) * launch.get("threadIdx.y", 1) * launch.get("threadIdx.z", 1)
    assert threads <= 1024
    assert launch.get("tirx.use_dyn_shared_memory", 0) <= max_shared_bytes(ARCH)
    assembled = nvcc_assembles(source, ARCH)
    if assembled is not None:
        assert assembled[0], assembled[1]


@pytest.mark.parametrize(("stem", "name"), SAMPLE, ids=[name for _, name in SAMPLE])
def test_copy_examples_and_their_store_counting_builds_are_fit_for_sm_90a(stem, name):
    kernel, _arrays, wanted, _check = device_case(example_entry(stem, name))
    check_launch(kernel, build(kernel, ARCH).imports[0].inspect_source())
    if any(str(p.dtype) not in COUNTABLE for p in kernel.params if p.name in wanted):
        return  # no atomicAdd for this output type: the device test skips counting it too
    counting = count_stores(kernel, ARCH).imports[0].inspect_source()
    assert "atomicAdd(" in kernel_source(counting)
    assembled = nvcc_assembles(counting, ARCH)
    if assembled is not None:
        assert assembled[0], assembled[1]


@pytest.mark.parametrize("mode", ["none", "32B", "64B", "128B"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float8_e4m3fn", "int8"])
def test_tma_loads_are_fit_for_sm_90a_and_simulate_equal_to_numpy(dtype, mode):
    kernel = tma_load_kernel(dtype, mode)
    check_launch(kernel, build(kernel, ARCH).imports[0].inspect_source())
    shape = tuple(int(e) for e in kernel.params[0].shape)
    a = ((np.arange(np.prod(shape)) * 7) % 61 - 30).reshape(shape).astype(sim.numpy_dtype(kernel.params[0].dtype))
    rows = int(kernel.params[1].shape[0])
    result = sim.run(kernel, {"A": a}, ARCH)
    assert np.array_equal(result["B"].astype(np.float64), a[64 : 64 + rows].astype(np.float64))
    assert (result.writes["B"] == 1).all()


@pytest.mark.parametrize(("m", "n", "k", "dtype"), [(1000, 700, 320, "bfloat16"), (4096, 4096, 4096, "bfloat16")])
def test_the_pipelined_hopper_gemm_shapes_the_gpu_runs_are_fit_for_sm_90a(m, n, k, dtype):
    from kernels import example_module

    tiles = -(-m // 128) * -(-n // 256)
    kernel = example_module("hopper_pipelined_gemm").hopper_pipelined_gemm(m, n, k, dtype, ctas=min(132, tiles))
    check_launch(kernel, build(kernel, ARCH).imports[0].inspect_source())


@pytest.mark.parametrize("floats", [4096, 50000])
def test_the_shared_memory_kernels_are_fit_for_sm_90a(floats):
    kernel = big_copy(floats)
    check_launch(kernel, build(kernel, ARCH).imports[0].inspect_source())
