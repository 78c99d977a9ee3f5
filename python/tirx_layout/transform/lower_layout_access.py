"""LowerLayoutAccess: loads and stores of buffers with a tirx_layout layout become flat accesses.

* A buffer whose layout lives in memory (axis ``m``; a ``ComposeLayout``/``SwizzleLayout`` too) becomes a flat
  buffer of the layout's storage extent, and ``A[i, j]`` becomes ``A[layout.apply(i, j)["m"]]`` — for a swizzle, an
  XOR/shift expression. A store to a layout with memory replicas writes every replica place.
* A buffer distributed over threads (its layout has thread axes) becomes each thread's register array of
  ``slot_count(layout)`` elements. Per-thread code reaches it through ``T.local_view(buffer)``, whose element ``k``
  is slot ``k``; indexing the buffer itself by logical coordinates is an error that says so.
* A ``T.decl_buffer(..., data=P.data, layout=L)`` window maps its indices through ``L`` into the physical storage of
  ``P`` (the flat buffer ``P`` became, when ``P`` has a layout itself).

It must run before TVM's ``LowerTIRx``, which flattens every buffer row-major.
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
from tvm.ir import Call, TensorLoad
from tvm.tirx import BufferStore

from ..ir.annotations import LAYOUT_KEY, allocation_layouts, declaration_layouts
from ..ir.rewrite import (
    AllocBuffer,
    AttrStmt,
    DeclBuffer,
    accesses_to,
    flat_buffer,
    load,
    map_function,
    sequence,
    store,
    walk,
)
from ..layout.placement import axes_used, layout_threads, slot_count, storage_addresses, storage_extent
from ..script.buffers import pending_view_extent


def _check_memory_layout(layout, buffer) -> None:
    foreign = sorted(a for a in axes_used(layout) if a != "m")
    if foreign:
        raise ValueError(
            f"buffer {buffer.name} (scope {buffer.scope()!r}) has layout {layout} on axes {foreign}; "
            "loads and stores reach memory layouts on axis m only (tensor memory is reached by tile copies)"
        )


@dataclass
class _Flat:
    """How accesses to one layout buffer are rewritten."""

    buffer: object  # the flat buffer that replaces it
    layout: object
    shape: tuple

    def addresses(self, indices, every_replica: bool) -> list:
        return storage_addresses(self.layout, self.shape, indices, every_replica)


def _parent_of(data):
    """The buffer whose storage ``data`` (a DeclBuffer's data) points at, if it is ``buffer_data(P)``."""
    if isinstance(data, Call) and getattr(data.op, "name", "") == "tirx.buffer_data":
        return data.args[0]
    return None


def _shape(buffer) -> tuple:
    return tuple(int(e) for e in buffer.shape)


def lower_layout_access(func):
    """The function with every layout buffer access lowered (see the module docstring). Raises ``ValueError`` for
    an access the layout does not allow, naming the buffer and what to write instead.

    Example (a 128-byte swizzled fp16 tile: the store address becomes an XOR):
        >>> import tvm
        >>> func = tvm.script.from_source('''
        ... @T.prim_func
        ... def k(A: T.Buffer((8, 64), "float16")):
        ...     T.device_entry()
        ...     tx = T.thread_id([64])
        ...     Sm = T.alloc_shared((8, 64), "float16", layout=T.layout("ComposeLayout(SwizzleLayout(3, 3, 3), "
        ...                                                              "TileLayout(S[(8, 64):(64, 1)]))"))
        ...     for i in range(8):
        ...         Sm[i, tx] = A[i, tx]
        ... ''')
        >>> for line in lower_layout_access(func).script().splitlines()[-3:]:
        ...     print(line)
            Sm = T.alloc_shared((512,), "float16")
            for i in range(8):
                Sm[i * 64 + tx ^ (i * 64 + tx >> 6 & 7) << 3] = A[i, tx]
    """
    allocated, declared = allocation_layouts(func), declaration_layouts(func)
    if not allocated and not declared:
        return func
    flat: dict = {}  # old buffer -> _Flat
    registers: dict = {}  # thread-distributed allocation -> its per-thread register array
    for buffer, layout in allocated.items():
        if layout_threads(layout):
            registers[buffer] = flat_buffer(buffer, slot_count(layout))
        else:
            _check_memory_layout(layout, buffer)
            flat[buffer] = _Flat(flat_buffer(buffer, storage_extent(layout)), layout, _shape(buffer))
    windows = _fragment_windows(func, allocated) if any(map(layout_threads, declared.values())) else {}
    for buffer, layout in declared.items():
        if layout_threads(layout):
            parent = windows.get(buffer)
            if parent is None or slot_count(layout) > slot_count(allocated[parent]):
                raise ValueError(
                    f"declared buffer {buffer.name} has a thread-distributed layout {layout}; declare a window with a "
                    "memory layout, a window on a register fragment's own slots (T.decl_buffer(..., data=frag.data) "
                    "with a layout of at most its slots), or allocate the fragment with T.alloc_local"
                )
            registers[buffer] = flat_buffer(buffer, slot_count(layout), view=True)
            continue
        _check_memory_layout(layout, buffer)
        flat[buffer] = _Flat(flat_buffer(buffer, storage_extent(layout), view=True), layout, _shape(buffer))

    def new_storage(data):
        parent = _parent_of(data)
        if parent is None:
            return data
        if parent in registers:
            return registers[parent].data
        if parent in flat:  # an allocation's flat buffer, or a window's flat view of its parent's storage
            return flat[parent].buffer.data
        return data

    views = _inferred_views(func, registers, allocated)

    def on_load(node: TensorLoad):
        if node.source in views:
            return load(views[node.source], node.indices[0])
        if node.source in registers:
            _reject_direct(node.source, allocated[node.source])
        target = flat[node.source]
        return load(target.buffer, target.addresses(list(node.indices), every_replica=False)[0])

    def on_store(node: BufferStore):
        if node.buffer in views:
            return store(views[node.buffer], node.value, node.indices[0])
        if node.buffer in registers:
            _reject_direct(node.buffer, allocated[node.buffer])
        target = flat[node.buffer]
        addresses = target.addresses(list(node.indices), every_replica=True)
        return sequence([store(target.buffer, node.value, address) for address in addresses])

    def on_alloc(stmt: AllocBuffer):
        if stmt.buffer in registers or stmt.buffer in flat:
            new = registers[stmt.buffer] if stmt.buffer in registers else flat[stmt.buffer].buffer
            rest = {k: v for k, v in stmt.annotations.items() if k != LAYOUT_KEY}
            return AllocBuffer(new, rest)
        return stmt

    def on_decl(stmt: DeclBuffer):
        buffer = flat[stmt.buffer].buffer if stmt.buffer in flat else stmt.buffer
        if stmt.buffer in registers:  # a window on a fragment's registers
            buffer = registers[stmt.buffer]
        if stmt.buffer in views:
            buffer = views[stmt.buffer]
        data = new_storage(stmt.data)
        if buffer.same_as(stmt.buffer) and data.same_as(stmt.data):
            return stmt
        return DeclBuffer(buffer, data=data)

    def on_attr(stmt: AttrStmt):
        return stmt.body if stmt.attr_key == LAYOUT_KEY else stmt

    touched = {**flat, **registers, **views}
    rules = accesses_to(touched, on_load, on_store)
    rules += [(AllocBuffer, on_alloc), (DeclBuffer, on_decl), (AttrStmt, on_attr)]
    return map_function(func, rules)


def _fragment_windows(func, allocated: dict) -> dict:
    """Declarations over a register fragment's storage (``T.decl_buffer(shape, data=frag.data, layout=L)`` with a
    thread-distributed ``L``: the same registers seen as another fragment, the transposed tile of an operand),
    each mapped to the fragment whose registers it names."""
    windows = {}

    def on_decl(stmt: DeclBuffer):
        parent = _parent_of(stmt.data)
        if parent is not None and parent in allocated and layout_threads(allocated[parent]):
            windows[stmt.buffer] = parent

    walk(func.body, [(DeclBuffer, on_decl)])
    return windows


def _inferred_views(func, registers: dict, allocated: dict) -> dict:
    """``T.local_view``s of register fragments whose layout was inferred (declared with the fragment's element count,
    ``script.buffers.pending_view_extent``), each mapped to the view of the layout's slot count it becomes."""
    views = {}

    def on_decl(stmt: DeclBuffer):
        parent = _parent_of(stmt.data)
        if parent is None or parent not in registers or parent not in allocated or len(stmt.buffer.shape) != 1:
            return
        slots = slot_count(allocated[parent])
        extent = int(stmt.buffer.shape[0])
        if extent != slots and extent == pending_view_extent(parent):
            views[stmt.buffer] = flat_buffer(stmt.buffer, slots, view=True)

    walk(func.body, [(DeclBuffer, on_decl)])
    return views


def _reject_direct(buffer, layout):
    name = buffer.name
    raise ValueError(
        f"{name} is distributed over threads ({', '.join(layout_threads(layout))}) by its layout {layout}, so "
        f"per-thread code cannot index it by logical coordinates; write `{name}_local = T.local_view({name})` and "
        f"index its {slot_count(layout)} slots as `{name}_local[k]` (or move data with a tile copy)"
    )


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tirx_layout.LowerLayoutAccess")
class LowerLayoutAccess:
    """The registered pass: :func:`lower_layout_access` on every PrimFunc of a module.

    Example: ``LowerLayoutAccess()(mod)`` is ``mod`` with :func:`lower_layout_access` applied to each of its
    functions (that function's example shows the output).
    """

    def transform_function(self, func, mod, ctx):
        return lower_layout_access(func)
