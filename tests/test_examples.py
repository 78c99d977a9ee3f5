"""End to end, for every kernel in examples/: build for sm_100a, assemble with nvcc where it is installed, simulate,
compare with numpy, and check that every output element is written exactly once."""

import re

import numpy as np
import pytest

from kernels import example_kernels, nvcc_assembles
from tirx_layout import sim
from tirx_layout.sim.interpreter import numpy_dtype
from tirx_layout.transform import build

KERNELS = example_kernels()


def kernel_body(cuda: str) -> str:
    return cuda[cuda.rindex('extern "C" __global__') :]


def sample_input(kernel) -> np.ndarray:
    param = kernel.params[0]
    shape = tuple(int(e) for e in param.shape)
    values = (np.arange(int(np.prod(shape))) * 7 % 61 - 30).reshape(shape)  # exact in every float type
    return values.astype(numpy_dtype(param.dtype))


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_example_builds_assembles_and_simulates(name, tmp_path):
    kernel, expected = KERNELS[name]
    cuda = build(kernel).imports[0].inspect_source()
    assembled = nvcc_assembles(cuda, tmp_path)
    if assembled is not None:
        assert assembled.returncode == 0, assembled.stderr
    a = sample_input(kernel)
    result = sim.run(kernel, [a])
    output = kernel.params[1].name
    np.testing.assert_array_equal(result[output].astype(np.float64), expected(a).astype(np.float64))
    assert (result.writes[output] == 1).all()


def test_128B_swizzled_staging_addresses_shared_memory_with_xor_and_no_division():
    body = kernel_body(build(KERNELS["staging_fp16_128B"][0]).imports[0].inspect_source())
    indices = re.findall(r"tile_ptr\[([^\]]*(?:\][^\]]*)*?)\] ?[=;]", body)
    shared_accesses = [index for index in indices if not index.isdigit()]  # not the declaration's size
    assert len(shared_accesses) == 2
    assert all("^" in index and ">> 6) & 7) << 3" in index for index in shared_accesses)
    assert not re.search(r"[/%]", body), "division or modulo left in the kernel"
