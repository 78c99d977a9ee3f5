"""``T.tile_parallel`` lowered, on every target: the nest becomes each thread's own loop.

* **Partitioned by a fragment** (the record's ``driver``): one unrolled loop over the driver's slots; the logical
  coordinates slot ``s`` of thread ``t`` holds come from the driver layout's inverse (as a fragment copy's do,
  ``ops/copy/plan.py``), and replace the loop variables in the body. Every fragment access becomes an access of the
  fragment's register array at the slot its layout gives that coordinate (the spec checked that the thread holds
  it); memory accesses stay logical (LowerLayoutAccess maps them through their layouts). A store to memory is made
  by replica 0 only: the driver's replicas over threads, and the threads of the scope its thread axes do not tell
  apart, hold the same coordinates. Slots no element reaches (holes, a tail layout's padding) do nothing. Where the
  target has packed float32 arithmetic (sm_100 and later) the slots go two at a time (``pairs.py``).
* **Dealt** (no fragment): the coordinates, flattened row-major, dealt round-robin to the threads of the scope in
  rounds, the last round guarded when they do not divide.

Example (a fragment of one row per thread, doubled into a global tile):
    >>> import tvm
    >>> from tirx_layout.transform import lower_tile_ops
    >>> func = tvm.script.from_source('''
    ... @T.prim_func
    ... def k(B: T.Buffer((32, 4), "float32")):
    ...     T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_90a"})})
    ...     T.device_entry()
    ...     tx = T.thread_id([32])
    ...     frag = T.alloc_local((32, 4), "float32", layout=T.layout("S[(32, 4):(1@laneid, 1)]"))
    ...     for i in T.tile_parallel(32):
    ...         for j in T.tile_parallel(4):
    ...             B[i, j] = frag[i, j] * T.float32(2)
    ... ''')
    >>> print(lower_tile_ops(func).script().splitlines()[-1].strip())
    B[tx, slot] = frag_flat[slot] * T.float32(2.0)
"""

from __future__ import annotations

import math

import tvm
from tvm import tirx

from ...hw.threads import LEVEL_THREADS, thread_axis_place
from ...ir.rewrite import accesses_to, map_stmt, sequence, substitute, walk
from ...layout.indexing import all_of, unflatten
from ...layout.inverse import PlaceInverse
from ..copy.lower import loop_var, simplify
from ..copy.plan import uncovered_thread_levels
from .pairs import paired_body
from .spec import TILE_PARALLEL, ParallelRecord


@TILE_PARALLEL.lowering("any")
def lower_tile_parallel(record: ParallelRecord, ctx):
    if record.driver is None:
        return _lower_dealt(record, ctx)
    return _lower_partitioned(record, ctx)


def _lower_partitioned(record: ParallelRecord, ctx):
    driver, threads = record.driver, ctx.threads
    inverse = PlaceInverse(driver.layout)
    thread_axes = [axis for axis in inverse.axes if axis != "m"]
    slot = loop_var(ctx, "slot", driver.extent)
    places = {"m": slot} | {axis: thread_axis_place(axis, threads.index, threads.count)[0] for axis in thread_axes}
    coords = [simplify(ctx, c) for c in unflatten(inverse.flat_index(places), driver.shape)]
    body = substitute(record.body, dict(zip(record.loop_vars, coords, strict=True)))

    views = {f.buffer: f for f in record.fragments}

    def register(buffer, indices):
        fragment = views[buffer]
        index = fragment.layout.apply(*indices, shape=list(fragment.shape)).get("m", 0)
        return [simplify(ctx, index)]

    # one replica of the coordinates stores to memory (see the module docstring)
    unread = uncovered_thread_levels(thread_axes, record.call.scope, threads.count)
    digits = [*inverse.replica_digits(places), *((threads.index // u) % n for u, n in unread)]
    replica_zero = simplify(ctx, all_of(d == 0 for d in digits))

    def on_load(node):
        fragment = views[node.source]
        return tvm.tirx.BufferLoad(fragment.view, register(node.source, node.indices))

    def on_store(node):
        fragment = views[node.buffer]
        return tirx.BufferStore(fragment.view, node.value, register(node.buffer, node.indices))

    def on_memory_store(node):
        if node.buffer in views or replica_zero is True or node.buffer.scope() == "local":
            return node
        return tirx.IfThenElse(replica_zero, node, None)

    body = map_stmt(body, [(tirx.BufferStore, on_memory_store)])
    body = map_stmt(body, accesses_to(views, on_load, on_store))
    guards = []
    if driver.padded:  # places past the tile's last element hold nothing
        guards.append(inverse.flat_index(places) < math.prod(driver.shape))
    if not all(inverse.covered(a, _places(a, driver, threads.count)).all() for a in inverse.axes):
        guards.append(inverse.holds(places))
    for guard in guards:
        condition = simplify(ctx, guard)
        if condition is True or (isinstance(condition, tirx.IntImm) and bool(condition)):
            continue
        body = tirx.IfThenElse(condition, body, None)
    if ctx.arch.has("f32x2") and driver.extent % 2 == 0 and _float_arithmetic(body):
        pair = loop_var(ctx, "pair", driver.extent // 2)
        paired = paired_body(body, slot, pair)
        loop = paired if driver.extent == 2 else tirx.For(pair, 0, driver.extent // 2, tirx.ForKind.UNROLLED, paired)
    else:
        loop = body if driver.extent == 1 else tirx.For(slot, 0, driver.extent, tirx.ForKind.UNROLLED, body)
    return sequence([*(f.declaration() for f in record.fragments), loop])


def _float_arithmetic(body) -> bool:
    """Whether ``body`` adds, subtracts or multiplies float32 values (what a packed pair of slots does at once)."""
    found = []
    kinds = (tirx.Add, tirx.Sub, tirx.Mul)
    walk(body, [(kind, lambda e: found.append(e) if str(e.ty.dtype) == "float32" else None) for kind in kinds])
    return bool(found)


def _places(axis: str, driver, cta_threads: int) -> int:
    return driver.extent if axis == "m" else thread_axis_place(axis, 0, cta_threads)[1]


def _lower_dealt(record: ParallelRecord, ctx):
    threads, scope = ctx.threads, record.call.scope
    size = threads.count if scope == "cta" else LEVEL_THREADS[scope]
    total = 1
    for extent in record.extents:
        total *= extent
    rounds = -(-total // size)
    round_ = loop_var(ctx, "parallel_round", rounds)
    lane = threads.index if size == threads.count else threads.index % size
    flat = round_ * size + lane
    coords = [simplify(ctx, c) for c in unflatten(flat, record.extents)]
    body = substitute(record.body, dict(zip(record.loop_vars, coords, strict=True)))
    if total % size:
        body = tirx.IfThenElse(simplify(ctx, flat < total), body, None)
    return body if rounds == 1 else tirx.For(round_, 0, rounds, tirx.ForKind.SERIAL, body)
