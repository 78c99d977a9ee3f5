"""Kernels for the layout-inference tests: the tile-copy round trips with some layouts left out, tail widths,
a conflicting kernel, and small random copies for the cost-model check."""

from __future__ import annotations

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers T.tile_copy and layout=)
from tirx_layout import sim
from tirx_layout.tools.measurement import kernel_accesses
from tirx_layout.transform.infer_layouts.cost_model import Cost


def measured(kernel) -> Cost:
    """Bytes, instructions and wavefronts of ``kernel``'s shared/global instructions as the simulator runs the
    lowered kernel: ``kernel_accesses`` for instructions and wavefronts, an observer for the bytes of active lanes."""
    moved = [0]

    def observe(node, kind, memory, addresses, active):
        lanes = addresses.shape[1] if addresses.ndim == 2 else 1
        moved[0] += int(np.sum(active)) * lanes * memory.data.dtype.itemsize

    sim.run(kernel, observer=observe)
    reports = kernel_accesses(kernel)
    return Cost(
        bytes=moved[0],
        instructions=sum(r.warp_executions for r in reports),
        global_instructions=sum(r.warp_executions for r in reports if r.scope == "global"),
        wavefronts=sum(r.wavefronts for r in reports),
        minimum_wavefronts=sum(r.minimum_wavefronts for r in reports),
    )


def round_trip(dtype: str, rows: int, threads: int, shared_layout=None, frag_layout=None, cols: int = 64):
    """Global A -> shared tile -> fragment -> global B (the examples' round trip), each layout optional."""
    kw_s = {} if shared_layout is None else {"layout": shared_layout}
    kw_f = {} if frag_layout is None else {"layout": frag_layout}

    @T.prim_func
    def round_trip(A: T.Buffer((rows, cols), dtype), B: T.Buffer((rows, cols), dtype)):
        T.device_entry()
        bx = T.cta_id([1])
        tx = T.thread_id([threads])
        tile = T.alloc_shared((rows, cols), dtype, **kw_s)
        frag = T.alloc_local((rows, cols), dtype, **kw_f)
        T.tile_copy(tile, A)
        T.cuda.cta_sync()
        T.tile_copy(frag, tile)
        T.tile_copy(B, frag)

    return round_trip


def fragment_only(shape: tuple, dtype: str, threads: int, frag_layout=None):
    """Global A -> fragment -> global B."""
    kw_f = {} if frag_layout is None else {"layout": frag_layout}

    @T.prim_func
    def fragment_only(A: T.Buffer(shape, dtype), B: T.Buffer(shape, dtype)):
        T.device_entry()
        bx = T.cta_id([1])
        tx = T.thread_id([threads])
        frag = T.alloc_local(shape, dtype, **kw_f)
        T.tile_copy(frag, A)
        T.tile_copy(B, frag)

    return fragment_only


def conflicting(first, second):
    """Fragment ``mid`` (no layout) copied from ``a`` (layout ``first``) and into ``c`` (layout ``second``): both
    copies force ``mid``'s layout, and the two differ."""

    @T.prim_func
    def conflicting(A: T.Buffer((128, 8), "float32"), B: T.Buffer((128, 8), "float32")):
        T.device_entry()
        bx = T.cta_id([1])
        tx = T.thread_id([128])
        a = T.alloc_local((128, 8), "float32", layout=first)
        mid = T.alloc_local((128, 8), "float32")
        c = T.alloc_local((128, 8), "float32", layout=second)
        T.tile_copy(a, A)
        T.tile_copy(mid, a)
        T.tile_copy(c, mid)
        T.tile_copy(B, c)

    return conflicting


def staged(shape: tuple, dtype: str, threads: int, shared_layout, frag_layout):
    """Global A -> shared (``shared_layout``) -> fragment (``frag_layout``) -> global B, for random cases."""

    @T.prim_func
    def staged(A: T.Buffer(shape, dtype), B: T.Buffer(shape, dtype)):
        T.device_entry()
        bx = T.cta_id([1])
        tx = T.thread_id([threads])
        tile = T.alloc_shared(shape, dtype, layout=shared_layout)
        frag = T.alloc_local(shape, dtype, layout=frag_layout)
        T.tile_copy(tile, A)
        T.cuda.cta_sync()
        T.tile_copy(frag, tile)
        T.tile_copy(B, frag)

    return staged
