"""Shared memory on a real GPU: a kernel above 48 KB launches (its buffers in the dynamic shared pool, the launch
passing the size and TVM's runtime raising the kernel's limit), and a buffer declared ``align=1024`` sits at a
shared-window address that is a multiple of 1024 — in the dynamic pool and as a static array — which is what the
swizzling hardware (TMA, wgmma/tcgen05 descriptors) needs and what the lowering relies on ``__align__`` for."""

import numpy as np
import pytest

from tirx_layout.tools.device import device_arch, launch

from kernels import parse
from kernels.device import requires_gpu

pytestmark = requires_gpu

#: A device helper returning the shared-window address (``cvta.to.shared``) of a shared pointer.
ADDRESS_HELPER = (
    "\\n__device__ __forceinline__ unsigned int gpu_test_shared_address(void* p) {\\n"
    "  return (unsigned int)__cvta_generic_to_shared(p);\\n}\\n"
)


def big_copy(floats: int):
    """A through ``floats`` float32s of shared memory (plus a 1024-aligned tile) to B: B == A reversed; C holds the
    tile's shared address (every thread writes the same value)."""
    return parse(f"""
@T.prim_func
def big(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"), C: T.Buffer((1,), "uint32")):
    T.device_entry()
    tx = T.thread_id([256])
    small = T.alloc_shared((3,), "float32")
    tile = T.alloc_shared(({floats},), "float32", align=1024)
    for i in range(4):
        tile[{floats} - 1024 + i * 256 + tx] = A[i * 256 + tx]
    if tx == 0:
        small[0] = T.float32(1)
        C[0] = T.cuda.func_call("gpu_test_shared_address", T.address_of(tile[0]), source_code="{ADDRESS_HELPER}",
                                return_type="uint32")
    T.cuda.cta_sync()
    for i in range(4):
        B[i * 256 + tx] = tile[{floats} - 1 - i * 256 - tx] * small[0]
""")


@pytest.mark.parametrize("floats", [4096, 50000], ids=["16KB-static", "200KB-dynamic"])
def test_a_kernel_launches_with_its_shared_memory_and_the_aligned_tile_is_1024_aligned(floats):
    a = np.arange(1024, dtype=np.float32)
    out = launch(big_copy(floats), {"A": a}, device_arch())
    assert np.array_equal(out["B"], a[::-1])
    assert int(out["C"][0]) % 1024 == 0, f"the tile's shared address is {int(out['C'][0])}"
