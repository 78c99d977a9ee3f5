"""Tile copies with layouts left out: the ``"tirx_layout"`` pipeline's InferLayouts picks them (io-aware cost model).

* ``inferred_staging_*``: the shared tile of a round trip has no layout; inference finds the swizzle that fills a
  ``wg_local`` fragment conflict-free (the ``matched`` layout of ``tile_copies.py``).
* ``inferred_fragment_*``: the fragment has no layout; inference reads a 128B-swizzled tile with one row per thread.
* ``inferred_both_fp32``: neither has one; the group is solved together.
* ``inferred_tail_*``: fragments of 192, 229 and 257 elements over 128 threads — padded layouts, tail predicates.

``tirx_layout.transform.explain_layouts(kernel)`` shows each decision; ``infer_layouts(kernel).script()`` shows
the chosen layouts as ``layout=T.layout(...)``.
"""

from __future__ import annotations

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers T.tile_copy, layout=..., the pipeline)
from tirx_layout import mma_shared_layout, wg_local_layout
from tirx_layout.tools.kernel_report import KernelTable


def round_trip(dtype: str, rows: int, threads: int, shared_layout=None, frag_layout=None):
    """Global ``A`` -> shared ``tile`` -> fragment ``frag`` -> global ``B``; a layout left ``None`` is inferred."""
    shared = {} if shared_layout is None else {"layout": shared_layout}
    fragment = {} if frag_layout is None else {"layout": frag_layout}

    @T.prim_func
    def round_trip(A: T.Buffer((rows, 64), dtype), B: T.Buffer((rows, 64), dtype)):
        T.device_entry()
        bx = T.cta_id([1])
        tx = T.thread_id([threads])
        tile = T.alloc_shared((rows, 64), dtype, **shared)
        frag = T.alloc_local((rows, 64), dtype, **fragment)
        T.tile_copy(tile, A)
        T.cuda.cta_sync()
        T.tile_copy(frag, tile)
        T.tile_copy(B, frag)

    return round_trip


def tail_kernel(width: int):
    """Global ``A`` -> a fragment of ``width`` floats over 128 threads -> global ``B``."""

    @T.prim_func
    def tail(A: T.Buffer((width,), "float32"), B: T.Buffer((width,), "float32")):
        T.device_entry()
        bx = T.cta_id([1])
        tx = T.thread_id([128])
        frag = T.alloc_local((width,), "float32")
        T.tile_copy(frag, A)
        T.tile_copy(B, frag)

    return tail


def same(a: np.ndarray) -> np.ndarray:
    """What every kernel here computes."""
    return a.copy()


KERNELS = KernelTable()  # each kernel built when first looked up
KERNELS.add("inferred_staging_fp16", same, round_trip, "float16", 128, 128, frag_layout=wg_local_layout(64))
KERNELS.add("inferred_staging_fp32", same, round_trip, "float32", 128, 128, frag_layout=wg_local_layout(64))
KERNELS.add(
    "inferred_fragment_bf16",
    same,
    round_trip,
    "bfloat16",
    128,
    128,
    shared_layout=mma_shared_layout("bfloat16", "128B", (128, 64)),
)
KERNELS.add("inferred_both_fp32", same, round_trip, "float32", 16, 64)
for width in (192, 229, 257):
    KERNELS.add(f"inferred_tail_{width}", same, tail_kernel, width)

#: The kernels the main job shows in full; the rest get a verdict line.
SHOWCASE = ["inferred_both_fp32", "inferred_tail_229"]
