"""8-bit and integer data through the same copies: global -> 128B-swizzled shared tile -> register fragment -> global.

``narrow_<dtype>``: a (128, 128) tile of ``float8_e4m3fn``, ``float8_e5m2``, ``int8`` or ``uint8`` (128 bytes a row,
one 128B swizzle atom wide) staged in the MMA operand layout of the 128B mode, then read into ``wg_local_layout``
(one row per thread) and written back: 16-byte vectors everywhere, 16 elements each.
"""

from __future__ import annotations

from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers T.tile_copy, layout=..., the pipeline)
from tirx_layout import mma_shared_layout, wg_local_layout
from tirx_layout.tools.kernel_report import KernelTable

DTYPES = ("float8_e4m3fn", "float8_e5m2", "int8", "uint8")


def narrow_kernel(dtype: str):
    """``B = A`` for a (128, 128) ``dtype`` tile, staged through shared memory and registers."""
    shared = mma_shared_layout(dtype, "128B", (128, 128))

    @T.prim_func
    def narrow(A: T.Buffer((128, 128), dtype), B: T.Buffer((128, 128), dtype)):
        T.device_entry()
        tx = T.thread_id([128])
        tile = T.alloc_shared((128, 128), dtype, layout=shared, align=1024)
        frag = T.alloc_local((128, 128), dtype, layout=wg_local_layout(128))
        T.tile_copy(tile, A)
        T.cuda.cta_sync()
        T.tile_copy(frag, tile)
        T.tile_copy(B, frag)

    return narrow


KERNELS = KernelTable()  # each kernel built when first looked up
for dtype in DTYPES:
    KERNELS.add(f"narrow_{dtype}", lambda a: a.copy(), narrow_kernel, dtype)

SHOWCASE = ["narrow_float8_e4m3fn"]
