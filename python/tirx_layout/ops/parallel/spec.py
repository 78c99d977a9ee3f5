"""``T.tile_parallel(extent, scope="cta")``: an element-wise loop nest over a tile's logical coordinates.

Each loop of the nest is ``for i in T.tile_parallel(extent)``; the body reads and writes elements *by logical index*
-- register fragments, shared and global tiles, per-thread scalars -- with any TIR arithmetic (``T.exp2``,
``T.max``, ``T.if_then_else`` on the indices for a mask, ``T.Cast``)::

    for i in T.tile_parallel(128, scope="warpgroup"):
        for j in T.tile_parallel(64):
            out[i, j] = T.Cast("bfloat16", T.max(acc[i, j] + bias[j], T.float32(0)))

The compiler partitions the nest per thread through a fragment's layout, as a copy walks a fragment: the **driver**
is the first fragment written (else the first read) whose indices are the loop variables themselves, in order; each
thread runs the coordinates its own slots hold, unrolled, so fragments stay in registers. Every other fragment the
body touches must hold each coordinate the driver's thread runs on that same thread (a row vector ``rowmax[i]``
replicated over the threads of a row does); one that does not is refused, naming both layouts and the first element.
Memory stores are made by one replica only (a fragment replicated over threads, or threads of the scope the
fragment's thread axes do not tell apart). Without any fragment the nest's coordinates are dealt round-robin to the
threads of ``scope``, as a memory copy deals its vectors.

How it sits in TIR: each loop carries the annotation ``tirx_layout.tile_parallel``: the outermost one the scope, the
loops nested directly inside it ``"nested"`` (so the nest prints and parses back as annotated ``T.serial`` loops).

Inference: the buffers indexed by the loop variables themselves are related like the two sides of a copy
(:class:`Equal`): an open fragment written from another takes its placement, and a shared tile written from a
fragment is scored by the copy plan between them. An open fragment indexed by some of them (``bias[j]``,
``rowmax[i]``) is :class:`Derived`: the placement of the fragment the loop is partitioned by, the other axes reduced
away -- the threads that held them hold it as replicas, as a reduction's result (``ops/reduce``).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np
import tvm
from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as builder

from ...analysis.thread_placement import slot_holders
from ...hw.tcgen05 import TMEM_SCOPE
from ...hw.threads import CTA_LEVELS
from ...ir.op_calls import full_region
from ...ir.rewrite import walk
from ...layout.indexing import flatten, unflatten
from ...layout.placement import layout_threads
from ..operands import FragmentOperand
from ..reduce.derive import reduced_layout
from ..spec import Derived, Equal, Field, OpCall, OpSpec, Reach, Record, ScopeField, find

#: The value the loops nested inside a nest's outermost loop carry in place of a scope.
NESTED = "nested"
#: The threads a nest may be shared by (its scope).
PARALLEL_SCOPES = tuple(level for level in CTA_LEVELS if level != "thread")


@dataclass(frozen=True)
class Access:
    """One load or store of a buffer in the body: its index expressions (over the loop variables and anything else
    in scope) and whether it writes."""

    buffer: object
    indices: tuple
    writes: bool


@dataclass(frozen=True)
class ParallelRecord(Record):
    """A ``T.tile_parallel`` nest checked: its loops (outermost first), its body, every access of the body, and once
    the layouts are decided the fragment that partitions it (``driver``, ``None``: dealt to the scope's threads) and
    every fragment the body touches, as operands."""

    loops: tuple = ()
    body: object = None
    accesses: tuple = ()
    driver: object = None
    fragments: tuple = ()

    @property
    def extents(self) -> tuple:
        return tuple(int(loop.extent) for loop in self.loops)

    @property
    def loop_vars(self) -> tuple:
        return tuple(loop.loop_var for loop in self.loops)


def nest_of(loop) -> tuple[tuple, object]:
    """The loops of the ``T.tile_parallel`` nest headed by ``loop`` (outermost first) and its body.

    Example: for ``for i in T.tile_parallel(4): for j in T.tile_parallel(8): B[i, j] = ...`` the two loops and
    the store.
    """
    loops, body = [loop], loop.body
    while isinstance(body, tirx.For) and str(body.annotations.get(TILE_PARALLEL.annotation, "")) == NESTED:
        loops.append(body)
        body = body.body
    return tuple(loops), body


def body_accesses(body) -> tuple[Access, ...]:
    """Every load and store of a buffer in ``body``, in the order the walk meets them.

    Example: ``out[i, j] = acc[i, j] + bias[j]`` gives the loads of ``acc`` and ``bias``, then the store of ``out``.
    """
    found = []
    walk(
        body,
        [
            (tvm.ir.TensorLoad, lambda n: found.append(Access(n.source, tuple(n.indices), False))),
            (tirx.BufferStore, lambda n: found.append(Access(n.buffer, tuple(n.indices), True))),
        ],
    )
    return tuple(found)


def _is_fragment(buffer, layouts) -> bool:
    layout = layouts.get(buffer)
    return buffer.scope() == "local" and layout is not None and bool(layout_threads(layout))


def _indexed_by(access: Access, loop_vars) -> bool:
    """Whether the access's indices are the loop variables themselves, in order."""
    return len(access.indices) == len(loop_vars) and all(
        isinstance(index, tirx.Var) and index.same_as(var) for index, var in zip(access.indices, loop_vars, strict=True)
    )


def _kept_axes(access: Access, loop_vars) -> tuple | None:
    """The loop axes an access's indices are, when they are some of the loop variables themselves, in loop order
    (``bias[j]`` in a nest over ``i, j`` keeps axis 1); ``None`` otherwise."""
    axes = []
    for index in access.indices:
        found = [d for d, var in enumerate(loop_vars) if isinstance(index, tirx.Var) and index.same_as(var)]
        if not found or (axes and found[0] <= axes[-1]):
            return None
        axes.append(found[0])
    return tuple(axes) if 0 < len(axes) < len(loop_vars) else None


def _vector_of(anchor, dropped: tuple):
    """The layout of a vector the loop reads along the kept axes: the anchor's, with the ``dropped`` axes reduced
    away (the threads that held them hold it as replicas: ``ops/reduce``'s derivation)."""

    def derive(layouts: dict):
        return reduced_layout(layouts[anchor], tuple(int(e) for e in anchor.shape), dropped)

    return derive


def evaluate(expr, env: dict):
    """``expr`` (an index expression of integer arithmetic) evaluated with the variables of ``env`` (``Var`` ->
    int or numpy array); ``None`` when it uses anything else.

    Example:
        >>> i = tvm.tirx.Var("i", "int32")
        >>> evaluate(i * 2 + 1, {i: np.arange(3)}).tolist(), evaluate(i // 2 % 2, {i: 5})
        ([1, 3, 5], 0)
    """
    if isinstance(expr, int):
        return expr
    if isinstance(expr, tirx.IntImm):
        return int(expr.value)
    if isinstance(expr, tirx.Var):
        for var, value in env.items():
            if var.same_as(expr):
                return value
        return None
    binary = {  # Python's // and % floor, as TIR's FloorDiv and FloorMod, on ints and numpy arrays alike
        tirx.Add: operator.add,
        tirx.Sub: operator.sub,
        tirx.Mul: operator.mul,
        tirx.FloorDiv: operator.floordiv,
        tirx.FloorMod: operator.mod,
        tirx.Min: lambda a, b: (
            np.minimum(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else min(a, b)
        ),
        tirx.Max: lambda a, b: (
            np.maximum(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else max(a, b)
        ),
    }
    for kind, op in binary.items():
        if isinstance(expr, kind):
            a, b = evaluate(expr.a, env), evaluate(expr.b, env)
            return None if a is None or b is None else op(a, b)
    return None


class TileParallel(OpSpec):
    """``for i in T.tile_parallel(extent, scope="cta")``: an element-wise loop over a tile's logical coordinates,
    partitioned per thread by the layouts of the fragments it touches (see the module docstring).

    Example (inside a ``@T.prim_func``): ``for i in T.tile_parallel(128): for j in T.tile_parallel(64):
    P[i, j] = T.exp2(S[i, j] - rowmax[i])``.
    """

    name = "tile_parallel"
    description = "an element-wise loop nest over a tile's logical coordinates"
    form = "loop"
    fields = (Field("extent"), ScopeField(PARALLEL_SCOPES))

    # -- the loop form ----------------------------------------------------------------------------------------------

    def script(self, extent, scope=None):
        """The ``T.serial`` loop frame of one loop of a nest: the outermost carries the scope (``"cta"`` by
        default), a loop directly inside another ``T.tile_parallel`` loop carries :data:`NESTED` and no scope of its
        own."""
        if not isinstance(extent, int) and not (isinstance(extent, tirx.IntImm)):
            raise TypeError(f"T.tile_parallel's extent is the tile's extent on one axis, a constant; got {extent!r}")
        nested = _directly_inside_nest()
        if nested and scope is not None:
            raise ValueError(
                f"T.tile_parallel({extent}, scope={scope!r}) is nested in another T.tile_parallel loop: the scope is "
                "given on the outermost loop of the nest"
            )
        if not nested:
            scope = "cta" if scope is None else scope
            if scope not in PARALLEL_SCOPES:
                raise ValueError(f"T.tile_parallel's scope must be one of {list(PARALLEL_SCOPES)}, got {scope!r}")
        frame = builder.serial(0, extent, annotations={self.annotation: NESTED if nested else scope})
        _OPEN_FRAMES.append(frame)
        return frame

    def __call__(self, *args, **kwargs):
        return self.script(*args, **kwargs)

    def match(self, stmt) -> OpCall | None:
        if not isinstance(stmt, tirx.For) or self.annotation not in stmt.annotations:
            return None
        scope = str(stmt.annotations[self.annotation])
        if scope == NESTED:
            return None  # part of the nest of the loop around it
        if scope not in PARALLEL_SCOPES:
            raise ValueError(
                f"a T.tile_parallel loop's annotation {self.annotation} must be one of {list(PARALLEL_SCOPES)} (or "
                f"{NESTED!r} inside another), got {scope!r}"
            )
        loops, body = nest_of(stmt)
        return OpCall(self, stmt, {"extent": stmt.extent, "scope": scope, "loops": loops, "body": body})

    # -- rules ----------------------------------------------------------------------------------------------------

    def relations(self, call: OpCall) -> tuple:
        loop_vars = tuple(loop.loop_var for loop in call.loops)
        accesses = body_accesses(call.body)
        full = [a for a in accesses if _indexed_by(a, loop_vars)]
        locals_ = [a for a in full if a.buffer.scope() == "local"]
        if not locals_:
            return ()
        # the first local buffer written (else read) by the loop's own indices anchors the others
        anchor = next((a for a in locals_ if a.writes), locals_[0])
        related, seen = [], {anchor.buffer}
        for access in full:
            if access.buffer in seen:
                continue
            seen.add(access.buffer)
            dst, src = (access.buffer, anchor.buffer) if access.writes else (anchor.buffer, access.buffer)
            related.append(Equal(full_region(dst), full_region(src), call.scope, call.where))
        why = f"T.tile_parallel over {[int(loop.extent) for loop in call.loops]}{call.where}"
        for access in accesses:  # a row or column vector (bias[j], rowmax[i]): the anchor's placement, reduced
            kept = _kept_axes(access, loop_vars)
            if access.buffer.scope() == "local" and access.buffer not in seen and kept is not None:
                seen.add(access.buffer)
                dropped = tuple(d for d in range(len(loop_vars)) if d not in kept)
                related.append(Derived(access.buffer, (anchor.buffer,), _vector_of(anchor.buffer, dropped), why))
        return tuple(related)

    def rules(self, call: OpCall, ctx) -> ParallelRecord:
        family = self.family(ctx)
        loops, body = call.loops, call.body
        for loop in loops:
            if not (isinstance(loop.min, tirx.IntImm) and int(loop.min) == 0 and isinstance(loop.extent, tirx.IntImm)):
                raise ValueError(
                    f"T.tile_parallel loops run over a tile's extent from 0; loop {loop.loop_var} runs from "
                    f"{loop.min} for {loop.extent}"
                )
        inner = []
        walk(body, [(tirx.Evaluate, lambda s: inner.append(s) if find(s) is not None else None)])
        walk(body, [(tirx.For, lambda s: inner.append(s) if find(s) is not None else None)])
        if inner:
            raise ValueError(
                f"a T.tile_parallel body is element-wise code; it holds the tile op {find(inner[0]).spec.title}: "
                "put it before or after the loop"
            )
        accesses = body_accesses(body)
        for access in accesses:
            if access.buffer.scope() == TMEM_SCOPE:
                raise ValueError(
                    f"T.tile_parallel reads tensor memory {access.buffer.name} by index; TMEM is reached by "
                    "tcgen05.ld/st: T.tile_copy it into a register fragment first"
                )
        reach = Reach.shared_work("T.tile_parallel", call.scope, by_holder=True, per_warp=True)
        record = ParallelRecord(call, family, loops=loops, body=body, accesses=accesses, reach=reach)
        if not all(ctx.decided(a.buffer) for a in accesses):
            return record
        loop_vars = record.loop_vars
        fragments = {}
        for access in accesses:
            if _is_fragment(access.buffer, ctx.layouts) and access.buffer not in fragments:
                fragments[access.buffer] = FragmentOperand(
                    full_region(access.buffer), ctx.layouts[access.buffer], "operand"
                )
            elif access.buffer.scope() == "local" and access.buffer not in fragments:
                _check_per_thread(access, loop_vars)
        if not fragments:
            return record
        candidates = [a for a in accesses if a.buffer in fragments and _indexed_by(a, loop_vars)]
        driving = next((a for a in candidates if a.writes), candidates[0] if candidates else None)
        if driving is None:
            names = ", ".join(b.name for b in fragments)
            raise ValueError(
                f"T.tile_parallel over {list(record.extents)} touches the fragments {names} but indexes none of them "
                f"by the loop variables ({', '.join(v.name for v in loop_vars)}) themselves: one such fragment "
                "says which thread runs which coordinates"
            )
        driver = fragments[driving.buffer]
        if driver.shape != record.extents:
            raise ValueError(
                f"T.tile_parallel over {list(record.extents)} partitions by fragment {driver.buffer.name} of shape "
                f"{list(driver.shape)}: the loops run over the fragment's whole tile"
            )
        for access in accesses:
            if access.buffer in fragments and access.buffer is not driving.buffer:
                _check_held(driver, fragments[access.buffer], access, loop_vars, ctx.threads.count)
            elif access.buffer in fragments and not _indexed_by(access, loop_vars):
                _check_held(driver, driver, access, loop_vars, ctx.threads.count)
        return ParallelRecord(
            call,
            family,
            loops=loops,
            body=body,
            accesses=accesses,
            driver=driver,
            fragments=tuple(fragments.values()),
            reach=reach,
        )


def _directly_inside_nest() -> bool:
    """Whether the loop being built sits directly in a ``T.tile_parallel`` loop (no statement before it)."""
    if not IRBuilder.is_in_scope():
        return False
    frames = IRBuilder.current().frames
    if not frames:
        return False
    innermost = frames[-1]
    return any(innermost.same_as(f) for f in _OPEN_FRAMES) and len(innermost.stmts) == 0


#: The loop frames ``T.tile_parallel`` made (a nested loop looks for its parent among them while the kernel parses).
_OPEN_FRAMES: list = []


def _check_per_thread(access: Access, loop_vars) -> None:
    """A per-thread array (local, no layout) may be read and written in the body only at indices the loop variables
    do not reach: each thread runs only some coordinates, so it would hold only some of the elements."""
    for index in access.indices:
        uses = []
        walk(index, [(tirx.Var, uses.append)])
        if any(u.same_as(v) for u in uses for v in loop_vars):
            raise ValueError(
                f"T.tile_parallel indexes the per-thread array {access.buffer.name} (a local buffer without a "
                f"layout) by the loop's coordinates ({', '.join(str(i) for i in access.indices)}); each thread runs "
                "only the coordinates its fragment slots hold, so it would fill only some of it: give it a fragment "
                "layout, or write it like a fragment the loop partitions (inference then lays it out)"
            )


def _check_held(driver: FragmentOperand, other: FragmentOperand, access: Access, loop_vars, threads: int) -> None:
    """Refuse unless every coordinate a thread runs (a slot of ``driver``) finds the element ``access`` reads of
    ``other`` in that same thread, at the slot ``other``'s layout gives it."""
    holder, _ = slot_holders(driver.layout, threads)
    # A tail layout's places past the tile's last element hold nothing: no thread runs them.
    tids, slots = np.nonzero((holder >= 0) & (holder < int(np.prod(driver.shape))))
    coords = unflatten(holder[tids, slots], driver.shape)
    env = dict(zip(loop_vars, coords, strict=True))
    index = [evaluate(i, env) for i in access.indices]
    name = other.buffer.name
    if any(i is None for i in index):
        raise ValueError(
            f"T.tile_parallel reads fragment {name} at [{', '.join(str(i) for i in access.indices)}]; a fragment's "
            "index must be integer arithmetic of the loop variables (its thread is decided when the kernel compiles)"
        )
    index = [np.array(np.broadcast_to(np.asarray(i, np.int64), tids.shape)) for i in index]
    for dim, (values, extent) in enumerate(zip(index, other.shape, strict=True)):
        outside = (values < 0) | (values >= extent)
        if outside.any():
            k = int(np.argmax(outside))
            where = tuple(int(c[k]) for c in coords)
            raise ValueError(
                f"T.tile_parallel reads fragment {name} at [{', '.join(str(i) for i in access.indices)}], which at "
                f"coordinate {where} is {int(values[k])} on dimension {dim}, outside its extent {extent}"
            )
    other_holder, _ = slot_holders(other.layout, threads)
    flat = flatten(index, other.shape)
    slot = np.asarray(other.layout.apply(*index, shape=list(other.shape)).get("m", np.zeros_like(flat)), np.int64)
    slot = np.broadcast_to(slot, tids.shape)
    inside = (slot >= 0) & (slot < other_holder.shape[1])
    held = inside & (other_holder[tids, np.clip(slot, 0, other_holder.shape[1] - 1)] == flat)
    if held.all():
        return
    k = int(np.argmax(~held))
    where = tuple(int(c[k]) for c in coords)
    element = tuple(int(i[k]) for i in index)
    raise ValueError(
        f"T.tile_parallel partitions by fragment {driver.buffer.name} (layout {driver.layout}), but reads "
        f"{name}{list(element)} (layout {other.layout}) at coordinate {where}: thread {int(tids[k])} runs that "
        f"coordinate and does not hold the element; the two fragments place it on different threads (convert one "
        "with T.tile_copy first)"
    )


TILE_PARALLEL = TileParallel()

__all__ = ["NESTED", "PARALLEL_SCOPES", "TILE_PARALLEL", "ParallelRecord", "TileParallel", "evaluate", "nest_of"]
