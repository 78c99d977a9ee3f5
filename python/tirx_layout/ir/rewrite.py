"""IR rewriting helpers every tirx_layout pass builds on: all of them go through ``tvm_ffi.structural_map``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import tvm
import tvm_ffi
from tvm.ir import TensorLoad
from tvm.tirx import AllocBuffer, AttrStmt, BufferStore, DeclBuffer, PrimFunc

#: A rule for one statement or expression type: ``(type, fn)`` where ``fn`` gets the node with its children already
#: rewritten and returns the replacement (or the node itself).
Rule = tuple[type, Callable]


def map_function(func: PrimFunc, rules: Sequence[Rule]) -> PrimFunc:
    """``func`` with ``rules`` applied bottom-up to its body.

    Example:
        ``map_function(func, [(tvm.tirx.AttrStmt, lambda s: s.body if s.attr_key == "x" else s)])`` drops every
        ``"x"`` attribute of ``func``.
    """
    return func.with_body(tvm_ffi.structural_map(func.body, list(rules), order="post"))


def map_stmt(stmt, rules: Sequence[Rule]):
    """``stmt`` with ``rules`` applied bottom-up (``map_function`` for a statement rather than a function).

    Example:
        >>> map_stmt(tvm.tirx.Evaluate(0), [(tvm.tirx.Evaluate, lambda s: tvm.tirx.Evaluate(1))]).value
        1
    """
    return tvm_ffi.structural_map(stmt, list(rules), order="post")


def substitute(node, values: dict):
    """``node`` (a statement or an expression) with each variable of ``values`` (``Var`` -> expression) replaced.

    Example:
        >>> i = tvm.tirx.Var("i", "int32")
        >>> substitute(i * 2 + 1, {i: tvm.tirx.Var("k", "int32")})
        k * 2 + 1
    """
    if not values:
        return node
    return tvm_ffi.structural_map(node, [(tvm.tirx.Var, lambda var: values.get(var, var))], order="post")


def walk(root, rules: Sequence[Rule]) -> None:
    """Call each rule on every node of its type under ``root`` (children first)."""
    tvm_ffi.structural_walk(root, list(rules))


def accesses_to(buffers, on_load: Callable, on_store: Callable) -> list[Rule]:
    """Rules that send every load of a buffer in ``buffers`` to ``on_load(load)`` and every store to
    ``on_store(store)``; other accesses are left alone. ``buffers`` is anything supporting ``in`` on buffer vars.

    Example:
        >>> len(accesses_to({}, None, None))
        2
    """

    def load(node: TensorLoad):
        return on_load(node) if node.source in buffers else node

    def store(node: BufferStore):
        return on_store(node) if node.buffer in buffers else node

    return [(TensorLoad, load), (BufferStore, store)]


def flat_buffer(like, extent: int, view: bool = False):
    """A one-dimensional buffer of ``extent`` elements with the name, dtype and scope of buffer ``like``; a ``view``
    (a declaration over another buffer's storage) carries no TVM layout, as TVMScript's own views do not.

    Example:
        >>> import tvm
        >>> b = flat_buffer(tvm.tirx.decl_buffer((8, 8), "float16", "A", scope="shared"), 64)
        >>> b.name
        'A'
        >>> tuple(int(e) for e in b.shape), str(b.dtype), b.scope()
        ((64,), 'float16', 'shared')
    """
    layout = None if view else "default"
    # The alignment the kernel asked for is kept: hardware that applies a swizzle to absolute shared addresses
    # (tcgen05.cp, MMA descriptors) needs the buffer aligned to the swizzle's repeat.
    return tvm.tirx.decl_buffer(
        (extent,), like.dtype, like.name, scope=like.scope(), layout=layout, data_alignment=int(like.data_alignment)
    )


def load(buffer, index):
    """A scalar load of ``buffer[index]``."""
    return tvm.tirx.BufferLoad(buffer, [index])


def store(buffer, value, index):
    """A scalar store ``buffer[index] = value``."""
    return BufferStore(buffer, value, [index])


def sequence(stmts: Sequence):
    """One statement for ``stmts`` (the statement itself when there is one, a no-op when there is none); nested
    sequences are flattened.

    Example:
        >>> e = tvm.tirx.Evaluate(0)
        >>> len(sequence([e, sequence([e, e])]).seq)
        3
    """
    flat = []
    for stmt in stmts:
        flat.extend(stmt.seq if isinstance(stmt, tvm.tirx.SeqStmt) else [stmt])
    if not flat:
        return tvm.tirx.Evaluate(0)
    return flat[0] if len(flat) == 1 else tvm.tirx.SeqStmt(flat)


__all__ = [
    "AllocBuffer",
    "AttrStmt",
    "DeclBuffer",
    "Rule",
    "accesses_to",
    "flat_buffer",
    "load",
    "map_function",
    "map_stmt",
    "sequence",
    "store",
    "substitute",
    "walk",
]
