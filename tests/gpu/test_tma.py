"""TMA loads on a real GPU (sm_90 and later): one ``cp.async.bulk.tensor`` of a box into a shared tile in every
swizzle mode (none, 32B, 64B, 128B) and for 1-, 2- and 4-byte types, then a thread copy out through the same
layout. The hardware applies the swizzle to absolute shared addresses, so this also checks the tile's 1024-byte
alignment and the tensor map the host encodes."""

import numpy as np
import pytest

from tirx_layout.hw.targets import parse_arch
from tirx_layout.tools.device import device_arch, launch

from kernels.device import requires_gpu, tma_load_kernel

pytestmark = requires_gpu

MODES = ("none", "32B", "64B", "128B")
DTYPES = ("float16", "bfloat16", "float32", "float8_e4m3fn", "int8")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_tma_load_lands_in_the_swizzled_tile_where_the_layout_says(dtype, mode):
    arch = device_arch()
    if parse_arch(arch).sm < 90:
        pytest.skip(f"{arch} has no TMA (cp.async.bulk.tensor needs sm_90)")
    kernel = tma_load_kernel(dtype, mode)
    shape = tuple(int(e) for e in kernel.params[0].shape)
    a = ((np.arange(np.prod(shape)) * 7) % 61 - 30).reshape(shape)
    rows = int(kernel.params[1].shape[0])
    out = launch(kernel, {"A": a}, arch)["B"]
    assert np.array_equal(out.astype(np.float64), a[64 : 64 + rows].astype(out.dtype).astype(np.float64))
