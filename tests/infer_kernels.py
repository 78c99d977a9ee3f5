"""Kernels for the layout-inference tests: the tile-copy round trips with some layouts left out, tail widths,
a conflicting kernel, and small random copies for the cost-model check."""

from __future__ import annotations

from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers T.tile_copy and layout=)


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
