"""PoolSharedMemory: every shared buffer of a kernel becomes a window of one dynamic shared-memory pool.

A CUDA kernel may declare at most 48 KB of static ``__shared__`` memory; more must be dynamic shared memory, whose
size the launch passes (CUDA C++ Programming Guide, "Shared Memory": allocations above 48 KB per block need dynamic
shared memory and ``cudaFuncSetAttribute(..., MaxDynamicSharedMemorySize, ...)``). TVM emits a ``"shared.dyn"``
allocation as ``extern __shared__ __align__(A) uchar pool[]``, passes its size as the launch's
``tirx.use_dyn_shared_memory`` parameter, and its CUDA runtime raises the kernel's dynamic-shared limit to that size
(``cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)`` in ``libtvm_runtime_cuda``) — but it allows only one such
allocation per kernel. So this pass, run after LowerLayoutAccess (when every buffer has its final storage extent),
lays a kernel's shared buffers out in one ``uint8`` pool when together they need more than 48 KB (below that the
static arrays keep their names in the CUDA source, which the main job shows and tests read; the pooled path runs in
every pipelined-GEMM example; the footprint is checked against the architecture's limit either way):

* buffers in allocation order, each at a multiple of its declared alignment (``align=``; at least its element size),
  exactly where the simulator's ``SharedSpace`` placed separate buffers, so descriptors and addresses agree;
* the pool aligned to the largest of them: the ``__align__`` of an ``extern __shared__`` declaration is the PTX
  ``.align`` of the variable, which places its shared-window address (PTX ISA, "Variables: Alignment"); with no
  static shared memory left, that address is the pool's base. A swizzled MMA/TMA operand declared ``align=1024``
  thus sits at an absolute 1024-byte boundary (tests/gpu checks it on hardware);
* each buffer becomes ``T.decl_buffer(..., data=pool.data, elem_offset=k)`` preceded by an
  ``AttrStmt(node=buffer, attr_key=SHARED_WINDOW_KEY, value=byte offset)`` around the rest of its scope, which tells
  the simulator where the window starts (TVM folds ``elem_offset`` into the indices);
* more than the architecture allows (``hw.targets.max_shared_bytes``: 227 KB on sm_90/sm_100) is a ``ValueError``
  listing every buffer, its bytes and offset.

A kernel that already allocates ``"shared.dyn"`` memory itself manages its dynamic shared memory and is left alone.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ..hw.targets import PORTABLE_SHARED_KB_PER_BLOCK, max_shared_bytes
from ..ir.annotations import SHARED_WINDOW_KEY, one_cta_per_sm
from ..ir.rewrite import AllocBuffer, AttrStmt, DeclBuffer, map_function, sequence, walk

#: The name of the pool buffer (its data pointer is ``<name>_ptr`` in the CUDA source).
POOL_NAME = "shared_pool"
SHARED_SCOPES = ("shared", "shared.dyn")
#: Up to this many bytes a kernel keeps static ``__shared__`` arrays (named after their buffers in the CUDA source).
STATIC_SHARED_BYTES = PORTABLE_SHARED_KB_PER_BLOCK * 1024


def _element_bits(buffer) -> int:
    return tvm.runtime.DataType(str(buffer.dtype)).bits * tvm.runtime.DataType(str(buffer.dtype)).lanes


def _bytes(buffer) -> int:
    count = 1
    for extent in buffer.shape:
        if not isinstance(extent, tirx.IntImm):
            raise ValueError(
                f"shared buffer {buffer.name} has the non-constant extent {extent}; shared memory "
                "is laid out when the kernel is built, so its shape must be constant"
            )
        count *= int(extent)
    return -(-count * _element_bits(buffer) // 8)


def shared_layout(buffers) -> tuple[list[int], int, int]:
    """Byte offsets of ``buffers`` (in order) in one pool, the pool's size and its alignment: each buffer at the
    first multiple of its alignment (``data_alignment``, at least its element size) after the one before.

    Example:
        >>> import tvm
        >>> bar = tvm.tirx.decl_buffer((2,), "uint64", "bar", scope="shared", data_alignment=8)
        >>> tile = tvm.tirx.decl_buffer((64, 64), "float16", "tile", scope="shared", data_alignment=1024)
        >>> shared_layout([bar, tile])
        ([0, 1024], 9216, 1024)
    """
    offsets, top, alignment = [], 0, 16
    for buffer in buffers:
        align = max(int(buffer.data_alignment), -(-_element_bits(buffer) // 8), 1)
        top = -(-top // align) * align
        offsets.append(top)
        top += _bytes(buffer)
        alignment = max(alignment, align)
    return offsets, top, alignment


def _arch(func) -> str | None:
    target = func.attrs.get("target") if func.attrs else None
    if target is None or target.kind.name != "cuda" or "arch" not in target.attrs:
        return None
    return str(target.attrs["arch"])


def pool_shared_memory(func, arch: str | None = None, above: int = STATIC_SHARED_BYTES):
    """``func`` with its shared buffers placed in one dynamic shared-memory pool when together they need more than
    ``above`` bytes (see the module docstring); ``arch`` defaults to the function's target. ``ValueError`` when they
    need more than ``arch`` allows.

    Example (two buffers: the tile at byte 1024, its declared alignment):
        >>> import tvm
        >>> func = tvm.script.from_source('''
        ... @T.prim_func
        ... def k(A: T.Buffer((64,), "float32")):
        ...     T.device_entry()
        ...     tx = T.thread_id([64])
        ...     bar = T.alloc_shared((1,), "uint64")
        ...     tile = T.alloc_shared((64,), "float32", align=1024)
        ...     tile[tx] = A[tx]
        ... ''')
        >>> for line in pool_shared_memory(func, "sm_90a", above=0).script().splitlines()[-6:]:
        ...     print(line)
            shared_pool = T.alloc_buffer((1280,), "uint8", scope="shared.dyn", align=1024)
            with T.attr("bar", "tirx_layout.shared_window", 0):
                bar = T.decl_scalar(T.uint64, data=shared_pool.data, elem_offset=0, scope="shared.dyn")
                with T.attr("tile", "tirx_layout.shared_window", 1024):
                    tile = T.decl_buffer((64,), data=shared_pool.data, elem_offset=256, scope="shared.dyn", align=1024)
                    tile[tx] = A[tx]
    """
    allocations: list = []

    def on_alloc(stmt):
        if stmt.buffer.scope() in SHARED_SCOPES:
            allocations.append(stmt.buffer)

    walk(func.body, [(AllocBuffer, on_alloc)])
    if not allocations or any(b.scope() == "shared.dyn" for b in allocations):
        return func
    offsets, size, alignment = shared_layout(allocations)
    arch = arch or _arch(func)
    if arch is not None and size > max_shared_bytes(arch):
        name = str(func.attrs["global_symbol"]) if func.attrs and "global_symbol" in func.attrs else "the kernel"
        listed = ", ".join(f"{b.name} {_bytes(b)} at {o}" for b, o in zip(allocations, offsets, strict=True))
        raise ValueError(
            f"{name} needs {size} bytes of shared memory ({listed}); a CTA on {arch} may use at most "
            f"{max_shared_bytes(arch)} bytes"
        )
    # more than half of what a CTA may have: no second CTA fits beside it on the SM (which holds at most what one CTA
    # may have plus 1 KB, and reserves 1 KB per CTA), which ptxas, seeing no size, would otherwise budget for
    alone = one_cta_per_sm if arch is not None and 2 * size > max_shared_bytes(arch) else (lambda f: f)
    if size <= above:
        return alone(func)
    _check_one_scope(func, allocations)
    pool = tirx.decl_buffer((size,), "uint8", POOL_NAME, scope="shared.dyn", data_alignment=alignment)
    views: dict = {}  # old buffer var -> its window of the pool
    window_of: dict = {}  # window -> (the byte offset its AttrStmt names, whether it replaces an allocation)
    for buffer, offset in zip(allocations, offsets, strict=True):
        views[buffer] = _window(buffer, pool, offset * 8 // _element_bits(buffer))
        window_of[views[buffer]] = (offset, True)
    # Declarations over an allocation's storage (``T.decl_buffer(..., data=tile.data)``, the flat views the lowering
    # makes) move into the pool too, at their parent's offset plus their own.
    found = True
    while found:
        found = False
        for decl in _declarations(func):
            parent = _parent(decl.data)
            if decl.buffer in views or parent is None or parent not in views:
                continue
            offset = window_of[views[parent]][0]
            start = offset * 8 // _element_bits(decl.buffer) + decl.buffer.elem_offset
            views[decl.buffer] = _window(decl.buffer, pool, start)
            window_of[views[decl.buffer]] = (offset, False)
            found = True
    first = views[allocations[0]]

    def on_var(var):
        return views.get(var, var)

    def on_seq(seq):
        stmts = list(seq.seq)
        for i in reversed(range(len(stmts))):
            stmt = stmts[i]
            if isinstance(stmt, (AllocBuffer, DeclBuffer)) and stmt.buffer in window_of:
                view = stmt.buffer
                rest = sequence([DeclBuffer(view, data=pool.data), *stmts[i + 1 :]])
                offset = tirx.const(window_of[view][0], "int32")
                window = AttrStmt(tvm.ir.StringImm(view.name), SHARED_WINDOW_KEY, offset, rest)
                head = [AllocBuffer(pool)] if view.same_as(first) else []
                stmts = stmts[:i] + head + [window]
        return sequence(stmts)

    pooled = map_function(func, [(tirx.Var, on_var), (tvm.tirx.SeqStmt, on_seq)])
    left: list = []
    walk(pooled.body, [(AllocBuffer, lambda s: left.append(s.buffer.name) if s.buffer in views else None)])
    if left:  # an allocation that is not an element of a statement sequence (nothing emits one today)
        raise ValueError(f"could not place shared buffer(s) {left} in the dynamic shared-memory pool")
    return alone(pooled)


def _check_one_scope(func, allocations) -> None:
    """The pool is allocated where the first shared buffer was, so every shared buffer must be allocated in that
    same statement sequence (the kernel's top level, as every example does); ``ValueError`` naming two that are
    not."""
    home: dict = {}

    def on_seq(seq):
        for stmt in seq.seq:
            if isinstance(stmt, AllocBuffer) and stmt.buffer.scope() in SHARED_SCOPES:
                home[stmt.buffer] = seq

    walk(func.body, [(tvm.tirx.SeqStmt, on_seq)])
    first = home.get(allocations[0])
    for buffer in allocations:
        if first is None or home.get(buffer) is None or not home[buffer].same_as(first):
            raise ValueError(
                f"shared buffers {allocations[0].name} and {buffer.name} are allocated in different scopes; a kernel "
                "above 48 KB keeps its shared memory in one dynamic pool, so allocate them side by side (at the "
                "kernel's top level)"
            )


def _window(buffer, pool, elem_offset):
    """``buffer`` as a declaration over ``pool``'s storage starting ``elem_offset`` of its elements in."""
    return tirx.decl_buffer(
        buffer.shape,
        buffer.dtype,
        buffer.name,
        data=pool.data,
        elem_offset=elem_offset,
        scope="shared.dyn",
        data_alignment=int(buffer.data_alignment),
    )


def _declarations(func) -> list:
    found: list = []
    walk(func.body, [(DeclBuffer, found.append)])
    return found


def _parent(data):
    """The buffer whose storage ``data`` (a declaration's data) is, if it is ``buffer_data(P)``."""
    if isinstance(data, tvm.ir.Call) and getattr(data.op, "name", "") == "tirx.buffer_data":
        return data.args[0]
    return None


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tirx_layout.PoolSharedMemory")
class PoolSharedMemory:
    """The registered pass: :func:`pool_shared_memory` on every PrimFunc of a module.

    Example: ``PoolSharedMemory()(mod)`` is ``mod`` with :func:`pool_shared_memory` applied to each of its functions
    (that function's example shows the output).
    """

    def transform_function(self, func, mod, ctx):
        return pool_shared_memory(func)
