"""Buffers that carry a tirx_layout layout in TVMScript kernels: ``T.alloc_buffer`` / ``T.alloc_shared`` /
``T.alloc_local`` / ``T.smem`` / ``T.alloc_tmem`` / ``T.decl_buffer`` with ``layout=L``, and ``T.local_view``.

The layout is stored where ``tirx_layout.ir.annotations`` says (an allocation's annotations, or an attribute around a
declaration's scope). An upstream ``tvm.tirx.layout`` layout is converted to ours first (``layout.interop``), so a
kernel written for upstream moves over one buffer at a time. The wrappers below replace those ``T.`` names and hand
anything else that is not one of our layouts (layout strings, no layout) to TVM's original builder unchanged.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence

import tvm
from tvm.script.ir_builder import IRBuilder
from tvm.tirx.script.builder import ir as _builder

from ..hw.tcgen05 import TMEM_SCOPE
from ..ir.annotations import LAYOUT_KEY, TMEM_OVERLAP_KEY, TMEM_WITHIN_KEY, is_layout
from ..layout.interop import from_upstream, is_upstream_layout
from ..layout.placement import layout_threads, slot_count

_upstream_alloc_buffer = _builder.alloc_buffer
_upstream_decl_buffer = _builder.decl_buffer


def check_layout_fits(layout, shape: Sequence, what: str) -> None:
    """Raise ``ValueError`` unless ``layout`` covers exactly the elements of a buffer of ``shape``.

    Example:
        >>> from tirx_layout import TileLayout, S
        >>> check_layout_fits(TileLayout(S[8, 8]), (4, 16), "buffer A")
        >>> check_layout_fits(TileLayout(S[8, 8]), (8, 4), "buffer A")
        Traceback (most recent call last):
        ...
        ValueError: buffer A has shape (8, 4) (32 elements) but its layout S[(8, 8):(8, 1)] covers 64

    A register fragment (a layout with thread axes) may cover more: its tail is predicated
    (``tirx_layout.layout.placement.tail_padded``).
    """
    if not all(isinstance(e, (int, tvm.tirx.IntImm)) for e in shape):
        raise ValueError(f"{what} has a symbolic shape {tuple(shape)}; a layout needs static extents")
    extents = tuple(int(e) for e in shape)
    covered = layout.size()
    if covered > math.prod(extents) and layout_threads(layout):
        return  # a register fragment with a tail: LowerTileOps predicates the places past the last element
    if math.prod(extents) != covered:
        raise ValueError(
            f"{what} has shape {extents} ({math.prod(extents)} elements) but its layout {layout} covers {covered}"
        )


def _shape_tuple(shape) -> tuple:
    return tuple(shape) if isinstance(shape, list | tuple) else (shape,)


def _bound(upstream, shape, dtype, args, kwargs) -> dict:
    # Bind by TVM's own signature: TVM's tile dispatch passes ``layout`` (and ``scope``) positionally.
    bound = inspect.signature(upstream).bind_partial(shape, dtype, *args, **kwargs).arguments
    if is_upstream_layout(bound.get("layout")):
        bound["layout"] = from_upstream(bound["layout"])
    return bound


def alloc_buffer(shape, dtype="float32", *args, **kwargs):
    """``T.alloc_buffer`` that also takes a tirx_layout ``layout`` (or an upstream one, converted); anything else
    goes to TVM unchanged.

    Example (inside a ``@T.prim_func``):
        ``L = mma_shared_layout("float16", "128B", (64, 64))``
        ``Sm = T.alloc_buffer((64, 64), "float16", scope="shared", layout=L)``
    """
    bound = _bound(_upstream_alloc_buffer, shape, dtype, args, kwargs)
    layout = bound.get("layout", "default")
    if not is_layout(layout):
        return _upstream_alloc_buffer(shape, dtype, *args, **kwargs)
    check_layout_fits(layout, _shape_tuple(shape), "the allocation")
    bound["annotations"] = {**(bound.get("annotations") or {}), LAYOUT_KEY: layout}
    bound["layout"] = "default"
    return _upstream_alloc_buffer(**bound)


def alloc_shared(shape, dtype="float32", *args, **kwargs):
    """``T.alloc_shared``: a shared-memory :func:`alloc_buffer`.

    Example:
        ``Sm = T.alloc_shared((64, 64), "float16", layout=L)``
    """
    return alloc_buffer(shape, dtype, *args, scope="shared", **kwargs)


def alloc_local(shape, dtype="float32", *args, **kwargs):
    """``T.alloc_local``: a register (``local``) :func:`alloc_buffer`; thread axes in the layout distribute it.

    Example:
        ``frag = T.alloc_local((32, 4), "float32", layout=TileLayout(S[(32, 4):(1@laneid, 1)]))``
    """
    return alloc_buffer(shape, dtype, *args, scope="local", **kwargs)


def alloc_tmem(shape, dtype="float32", *args, layout=None, within=None, overlap=False, **kwargs):
    """``T.alloc_tmem``: a tensor-memory buffer whose ``layout`` (a TileLayout on ``TLane``/``TCol``, replicas
    allowed) says where each element lives. LowerTileOps turns it into ``tcgen05.alloc`` ... ``tcgen05.dealloc``
    (``ops/tmem/``); it prints as ``T.alloc_buffer(..., scope=TMEM_SCOPE, layout=...)``, which parses back.

    ``within=acc`` places the buffer inside the allocation of the TMEM buffer ``acc`` instead of a fresh one: its
    layout's columns count from ``acc``'s first column (in its own dtype's units), they must not overlap ``acc``'s,
    and the one ``tcgen05.alloc`` covers both. This is how buffers of different dtypes (an f32 accumulator and 8-bit
    scale factors) share one allocation. ``overlap=True`` lets its columns reuse columns of ``acc`` (or of another
    buffer within it): two views of the same cells, as attention writes its 16-bit P over the float32 S it was
    computed from and reads it as the MMA's A operand. Nothing orders the views' accesses but the kernel's own
    waits and fences; the simulator checks them on the cells.

    Example:
        ``acc = T.alloc_tmem((128, 64), "float32", layout=tmem_datapath_layout("D", 128, 64))``
        ``sfa = T.alloc_tmem((128, 4), "float8_e8m0fnu", layout=mma_scale_factor_layout(128, 4, column=64),
        within=acc)``
    """
    if is_upstream_layout(layout):
        layout = from_upstream(layout)
    if not is_layout(layout):
        raise ValueError(f"T.alloc_tmem needs a tirx_layout layout on TLane/TCol, got {layout!r}")
    if within is not None:
        if not isinstance(within, tvm.tirx.Buffer) or within.scope() != TMEM_SCOPE:
            raise TypeError(f"T.alloc_tmem(within=...) takes a TMEM buffer (T.alloc_tmem), got {within!r}")
        annotations = {**(kwargs.pop("annotations", None) or {}), TMEM_WITHIN_KEY: within.data}
        if overlap:
            annotations[TMEM_OVERLAP_KEY] = True
        kwargs["annotations"] = annotations
    elif overlap:
        raise ValueError("T.alloc_tmem(overlap=True) reuses the columns of another buffer: give it within=acc")
    return alloc_buffer(shape, dtype, *args, scope=TMEM_SCOPE, layout=layout, **kwargs)


def decl_buffer(shape, dtype="float32", *args, **kwargs):
    """``T.decl_buffer`` that also takes a tirx_layout ``layout``: the layout maps the buffer's indices to places
    in the storage of ``data`` (or of a fresh buffer). Stored as ``T.attr(layout, LAYOUT_KEY, buffer)``.

    Example (a 2-D window with its own layout over a flat shared buffer):
        ``W = T.decl_buffer((8, 8), "float32", data=Sm.data, scope="shared", layout=TileLayout(S[(8, 8):(1, 8)]))``
    """
    bound = _bound(_upstream_decl_buffer, shape, dtype, args, kwargs)
    layout = bound.get("layout", "default")
    if not is_layout(layout):
        return _upstream_decl_buffer(shape, dtype, *args, **kwargs)
    check_layout_fits(layout, _shape_tuple(shape), "the declared buffer")
    bound["layout"] = None
    buffer = _upstream_decl_buffer(**bound)
    _enter_for_rest_of_scope(_builder.attr(layout, LAYOUT_KEY, buffer))
    return buffer


def _enter_for_rest_of_scope(frame) -> None:
    # What the parser does with a frame assigned to a name: it closes when the enclosing scope closes.
    frame.add_callback(lambda: frame.__exit__(None, None, None))
    frame.__enter__()


def local_view(buffer):
    """The calling thread's slots of a thread-distributed buffer: element ``k`` is the thread's ``m``-slot ``k``.

    A buffer whose layout has thread axes (``laneid``, ``warpid``, ...) cannot be indexed by logical coordinates in
    per-thread code; index its local view instead. A register buffer given no layout (inference decides it) has a
    view of as many elements as the buffer while the kernel is written; LowerLayoutAccess declares it with the
    inferred layout's slot count (``pending_view_extent``).

    Example (inside a ``@T.prim_func``):
        ``frag = T.alloc_local((32, 8), "float32", layout=TileLayout(S[(32, 8):(1@laneid, 1)]))``
        ``mine = T.local_view(frag)       # shape (8,): this lane's row``
    """
    layout = building_layout_of(buffer)
    if layout is None:
        if buffer.scope() != "local":
            raise ValueError(
                f"T.local_view({buffer.name}): the buffer is {buffer.scope()} and has no tirx_layout layout; a local "
                "view is of a register fragment (T.alloc_local)"
            )
        extent = pending_view_extent(buffer)
    elif not layout_threads(layout):
        raise ValueError(f"T.local_view({buffer.name}): its layout {layout} has no thread axes; index it directly")
    else:
        extent = slot_count(layout)
    return _upstream_decl_buffer((extent,), buffer.dtype, buffer.data, scope=buffer.scope(), layout=None)


def pending_view_extent(buffer) -> int:
    """The extent ``T.local_view`` declares for a register buffer whose layout is inferred: its element count (each
    thread's slot count is known only after inference, and LowerLayoutAccess re-declares the view with it).

    Example:
        >>> import tvm
        >>> pending_view_extent(tvm.tirx.decl_buffer((128, 64), "float32", "acc", scope="local"))
        8192
    """
    return math.prod(int(e) for e in buffer.shape)


def building_layout_of(buffer):
    """The layout given to ``buffer`` in the kernel being parsed right now (``None`` if none), read from the
    statements and attribute frames the builder has collected so far.

    Example: ``T.local_view(frag)`` calls ``building_layout_of(frag)`` to size the view while the kernel is parsed.
    """
    for frame in reversed(IRBuilder.current().frames):
        if getattr(frame, "attr_key", None) == LAYOUT_KEY and frame.value.same_as(buffer):
            return frame.node
        for stmt in getattr(frame, "stmts", ()):
            if isinstance(stmt, tvm.tirx.AllocBuffer) and stmt.buffer.same_as(buffer):
                return stmt.annotations.get(LAYOUT_KEY)
    return None
