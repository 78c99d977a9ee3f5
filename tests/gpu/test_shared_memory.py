"""Shared memory on a real GPU: a kernel above 48 KB launches (its buffers in the dynamic shared pool, the launch
passing the size and TVM's runtime raising the kernel's limit), and a buffer declared ``align=1024`` sits at a
shared-window address that is a multiple of 1024 — in the dynamic pool and as a static array — which is what the
swizzling hardware (TMA, wgmma/tcgen05 descriptors) needs and what the lowering relies on ``__align__`` for."""

import numpy as np
import pytest

from tirx_layout.tools.device import device_arch, launch

from kernels.device import big_copy, requires_gpu

pytestmark = requires_gpu


@pytest.mark.parametrize("floats", [4096, 50000], ids=["16KB-static", "200KB-dynamic"])
def test_a_kernel_launches_with_its_shared_memory_and_the_aligned_tile_is_1024_aligned(floats):
    a = np.arange(1024, dtype=np.float32)
    out = launch(big_copy(floats), {"A": a}, device_arch())
    assert np.array_equal(out["B"], a[::-1])
    assert int(out["C"][0]) % 1024 == 0, f"the tile's shared address is {int(out['C'][0])}"
