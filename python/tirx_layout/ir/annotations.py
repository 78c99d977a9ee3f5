"""Where a buffer's tirx_layout layout lives in TIR.

TVM's buffer type can only hold TVM's own layouts, so ours travels beside the buffer:

* an allocation keeps it in the ``AllocBuffer`` statement's annotations under :data:`LAYOUT_KEY`;
* a declaration (``DeclBuffer``, which has no annotation slot) is followed by ``AttrStmt(node=layout,
  attr_key=LAYOUT_KEY, value=buffer)`` around the rest of its scope.

Anything else found under that key is refused with a ``TypeError`` naming the buffer, and so is a TVM layout in a
buffer's own type that differs from the row-major one TVM gives every buffer: our passes would ignore it, so it
would be silently dropped.
"""

from __future__ import annotations

import tvm
import tvm_ffi

from ..hw.targets import parse_arch
from ..layout import LAYOUT_TYPES

#: Annotation / attribute key under which a buffer's layout is stored.
LAYOUT_KEY = "tirx_layout.layout"
#: Annotation of a TMEM allocation placed inside another one's columns (``T.alloc_tmem(..., within=acc)``): the
#: data variable of the buffer whose ``tcgen05.alloc`` it shares.
TMEM_WITHIN_KEY = "tirx_layout.tmem_within"
#: Annotation of a TMEM buffer placed ``within`` another that may reuse that allocation's columns
#: (``T.alloc_tmem(..., within=S, overlap=True)``: attention's P written over S); its value is ``True``.
TMEM_OVERLAP_KEY = "tirx_layout.tmem_overlap"
#: Attribute around the scope of a shared buffer that the lowering placed in the kernel's dynamic shared-memory pool:
#: ``AttrStmt(node=buffer, attr_key=SHARED_WINDOW_KEY, value=byte offset in the pool)`` whose body starts with the
#: buffer's ``DeclBuffer`` over the pool (TVM folds the buffer's element offset into its indices, so the offset is
#: kept here for the simulator).
SHARED_WINDOW_KEY = "tirx_layout.shared_window"
#: The attribute TVMScript's ``T.device_entry()`` opens the kernel region with.
DEVICE_ENTRY = "tirx.device_entry"
#: TVM's attribute of a kernel region that its CUDA code generator writes as the second argument of
#: ``__launch_bounds__(threads, min_blocks)``: the CTAs of the kernel one SM must be able to hold at once.
MIN_BLOCKS_PER_SM_KEY = "tirx.launch_bounds_min_blocks_per_sm"


def one_cta_per_sm(func):
    """``func`` with its ``T.device_entry()`` region declared to run one CTA per SM (``__launch_bounds__(threads,
    1)``), for a kernel whose own resources leave room for no second CTA on the SM (more than half of the shared
    memory or of the tensor memory). Without it ptxas does not know that (dynamic shared memory is sized at launch)
    and budgets registers for several resident CTAs: a 384-thread kernel gets 56 registers and spills (CUDA C++
    Programming Guide, "Launch Bounds": ``minBlocksPerMultiprocessor`` lets the compiler use up to
    ``registers per SM / (minBlocks x threads)`` registers). A region that already names its minimum is left alone.

    Example:
        >>> import tvm
        >>> func = tvm.script.from_source('''
        ... @T.prim_func
        ... def k(A: T.Buffer((64,), "float32")):
        ...     T.device_entry()
        ...     tx = T.thread_id([64])
        ...     A[tx] = A[tx] + T.float32(1)
        ... ''')
        >>> [line.strip() for line in one_cta_per_sm(func).script().splitlines() if "T.attr" in line][0]
        'T.attr({"tirx.device_entry": T.bool(True), "tirx.launch_bounds_min_blocks_per_sm": 1})'
    """
    from .rewrite import map_function, walk

    named = []
    walk(func.body, [(tvm.tirx.AttrStmt, lambda s: named.append(s) if s.attr_key == MIN_BLOCKS_PER_SM_KEY else None)])
    if named:
        return func

    def mark(stmt):
        if stmt.attr_key != DEVICE_ENTRY:
            return stmt
        one = tvm.tirx.AttrStmt(0, MIN_BLOCKS_PER_SM_KEY, tvm.tirx.const(1, "int32"), stmt.body)
        return tvm.tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value, one)

    return map_function(func, [(tvm.tirx.AttrStmt, mark)])


def is_layout(value) -> bool:
    """Whether ``value`` is a tirx_layout layout (as opposed to a TVM layout, a string or ``None``).

    Example:
        >>> from tirx_layout import TileLayout, S
        >>> is_layout(TileLayout(S[8, 8])), is_layout("default")
        (True, False)
    """
    return isinstance(value, LAYOUT_TYPES)


def foreign_layout(buffer):
    """The TVM (upstream) layout ``buffer``'s type carries when it is not the row-major one TVM gives every buffer
    declared without a layout, else ``None``. Such a layout is not ours and no tirx_layout pass reads it.

    Example:
        >>> import tvm
        >>> foreign_layout(tvm.tirx.decl_buffer((8, 8), "float32", "A")) is None
        True
    """
    layout = getattr(buffer, "layout", None)
    if layout is None:
        return None
    default = tvm.tirx.decl_buffer(buffer.shape, buffer.dtype, "default", scope=buffer.scope()).layout
    return None if tvm_ffi.structural_equal(layout, default) else layout


def foreign_layout_error(buffer, layout) -> TypeError:
    """The ``TypeError`` for a layout object that is not a tirx_layout layout, found on ``buffer``.

    Example:
        >>> import tvm
        >>> str(foreign_layout_error(tvm.tirx.decl_buffer((8,), "float32", "A"), "x")).split(";")[0]
        "buffer A carries a layout of type str ('x'), not a tirx_layout layout"
    """
    return TypeError(
        f"buffer {buffer.name} carries a layout of type {type(layout).__name__} ({layout!r}), not a tirx_layout "
        "layout; tirx_layout passes would ignore it. Pass a tirx_layout layout (TileLayout, ComposeLayout, "
        "T.layout(...)), converting an upstream tvm.tirx.layout one first"
    )


def buffer_layouts(func_or_stmt) -> dict:
    """Every buffer of a function (or statement) that carries a tirx_layout layout, mapped to that layout.

    Example:
        >>> import tvm
        >>> func = tvm.script.from_source('''
        ... @T.prim_func
        ... def k(A: T.Buffer((8, 8), "float32")):
        ...     T.device_entry()
        ...     tx = T.thread_id([64])
        ...     Sm = T.alloc_shared((8, 8), "float32", layout=T.layout("S[(8, 8):(1, 8)]"))
        ...     Sm[tx // 8, tx % 8] = A[tx // 8, tx % 8]
        ... ''')
        >>> [(buffer.name, str(layout)) for buffer, layout in buffer_layouts(func).items()]
        [('Sm', 'S[(8, 8):(1, 8)]')]
    """
    allocated, declared = _collect(func_or_stmt)
    return {**allocated, **declared}


def allocation_layouts(func_or_stmt) -> dict:
    """The allocations (``AllocBuffer``) that carry a layout: buffer -> layout.

    Example: ``allocation_layouts(func)`` is ``buffer_layouts(func)`` without the ``T.decl_buffer`` windows.
    """
    return _collect(func_or_stmt)[0]


def declaration_layouts(func_or_stmt) -> dict:
    """The declarations (``T.decl_buffer(..., layout=L)``, stored as an ``AttrStmt``) that carry a layout:
    buffer -> layout.

    Example: ``declaration_layouts(func)`` is ``buffer_layouts(func)`` without the allocations.
    """
    return _collect(func_or_stmt)[1]


def _collect(func_or_stmt) -> tuple[dict, dict]:
    allocated, declared = {}, {}
    for buffer, layout, stmt in layout_sites(func_or_stmt):
        (allocated if isinstance(stmt, tvm.tirx.AllocBuffer) else declared)[buffer] = layout
    return allocated, declared


def _ours(buffer, layout):
    if not is_layout(layout):
        raise foreign_layout_error(buffer, layout)
    return layout


def layout_sites(func_or_stmt) -> list:
    """Every statement that gives a buffer a tirx_layout layout, in program order: ``(buffer, layout, stmt)`` where
    ``stmt`` is the ``AllocBuffer`` or the ``AttrStmt`` after a ``DeclBuffer`` (its ``span`` locates the buffer in
    the TVMScript source).

    Example: for the kernel of :func:`buffer_layouts`'s example, ``layout_sites(func)`` is
    ``[(Sm, TileLayout(S[(8, 8):(1, 8)]), <the AllocBuffer of Sm>)]``.
    """
    root = func_or_stmt.body if isinstance(func_or_stmt, tvm.tirx.PrimFunc) else func_or_stmt
    sites = []

    def on_alloc(stmt):
        if LAYOUT_KEY in stmt.annotations:
            sites.append((stmt.buffer, _ours(stmt.buffer, stmt.annotations[LAYOUT_KEY]), stmt))

    def on_attr(stmt):
        if stmt.attr_key == LAYOUT_KEY:
            sites.append((stmt.value, _ours(stmt.value, stmt.node), stmt))

    tvm_ffi.structural_walk(root, [(tvm.tirx.AllocBuffer, on_alloc), (tvm.tirx.AttrStmt, on_attr)])
    return sites


def layout_of(buffer, func=None):
    """The tirx_layout layout a buffer carries in ``func`` (a ``PrimFunc``), or ``None``. ``buffer`` is a buffer
    object or its name.

    Example: for the kernel of :func:`buffer_layouts`'s example, ``layout_of("Sm", func)`` is
    ``TileLayout(S[(8, 8):(1, 8)])`` and ``layout_of("A", func)`` is ``None``. A buffer whose type carries a TVM
    layout other than the default (:func:`foreign_layout`) is a ``TypeError``: that layout is not ours.
    """
    if func is None:
        raise TypeError("layout_of(buffer, func): pass the PrimFunc that declares the buffer")

    def named(buf) -> bool:
        return (isinstance(buffer, str) and buf.name == buffer) or (not isinstance(buffer, str) and buf.same_as(buffer))

    for buf, layout in buffer_layouts(func).items():
        if named(buf):
            return layout
    for buf in function_buffers(func):
        if named(buf) and (foreign := foreign_layout(buf)) is not None:
            raise foreign_layout_error(buf, foreign)
    return None


def function_buffers(func) -> list:
    """Every buffer ``func`` binds: its parameters' buffers, then each ``AllocBuffer`` and ``DeclBuffer`` in program
    order.

    Example: for the kernel of :func:`buffer_layouts`'s example, ``[b.name for b in function_buffers(func)]`` is
    ``['A', 'Sm']``.
    """
    found = [p for p in func.params if isinstance(p.ty, tvm.tirx.BufferType)]

    def on_bind(stmt):
        found.append(stmt.buffer)

    tvm_ffi.structural_walk(func.body, [(tvm.tirx.AllocBuffer, on_bind), (tvm.tirx.DeclBuffer, on_bind)])
    return found


def target_arch(func):
    """The CUDA architecture (``hw.targets.Arch``) of the target ``func`` is compiled for, or ``None`` when it has no
    CUDA target with an ``arch`` (a function not yet bound to a target); an unknown architecture is a
    ``ValueError`` naming it.

    Example:
        >>> import tvm
        >>> func = tvm.tirx.PrimFunc([], tvm.tirx.Evaluate(0))
        >>> hopper = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
        >>> target_arch(func) is None, target_arch(func.with_attr("target", hopper))
        (True, Arch(sm=90, suffix='a'))
    """
    target = func.attrs.get("target") if func.attrs else None
    if target is None or target.kind.name != "cuda" or "arch" not in target.attrs:
        return None
    return parse_arch(str(target.attrs["arch"]))
