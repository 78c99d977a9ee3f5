"""``T.tile_reduce`` lowered, on every target, as its plan (``derive.reduction_plan``) says, in up to three stages:

1. **in the thread**: each result slot is its source slots combined (a balanced tree of static register reads, so
   the fragment stays in registers and the combining is not one long dependency chain);
2. **across lanes**: for each xor mask read off the layout, every result slot combined with the same slot of lane
   ``lane ^ mask`` (``T.tvm_warp_shuffle_xor(0xFFFFFFFF, v, mask, 32, 32)``, CUDA ``__shfl_xor_sync``); after the
   butterfly every lane of a group holds the same value (a + b and b + a are the same float);
3. **across warps**, when the reduced axes span warps: one lane per butterfly group (replica 0) writes its partial
   results into a shared scratch ``[scope unit][warp of the group][output element]`` the lowering allocates, a
   barrier of the scope, every holder reads the group's partials back and combines them in warp order (so every
   replica holds the same value), a second barrier (the scratch may be written again, as by the next iteration of
   a loop around the reduction).

``accumulate`` then combines the result with ``dst``'s old value (a runtime condition chooses per call).

Example (a row maximum of the Hopper accumulator: two slots per row in the thread, then the quad's xor 1 and 2):
    >>> import tvm
    >>> from tirx_layout.transform import infer_layouts, lower_tile_ops
    >>> func = tvm.script.from_source('''
    ... @T.prim_func
    ... def k():
    ...     T.device_entry()
    ...     tx = T.thread_id([128])
    ...     acc = T.alloc_local((64, 8), "float32", layout=wgmma_accumulator_layout(8))
    ...     rowmax = T.alloc_local((64,), "float32")
    ...     T.tile_reduce(rowmax, acc, "max", axis=1)
    ... ''', extra_vars={"T": tvm.script.tirx, "wgmma_accumulator_layout": wgmma_accumulator_layout})
    >>> lowered = lower_tile_ops(infer_layouts(func)).script()  # rowmax's layout is derived, then the op lowered
    >>> for line in lowered.splitlines():
    ...     if "shuffle" in line:
    ...         print(line.strip().replace("rowmax_flat[slot]", "r"))
    r = T.max(r, T.tvm_warp_shuffle_xor(T.uint32(4294967295), r, 1, 32, 32))
    r = T.max(r, T.tvm_warp_shuffle_xor(T.uint32(4294967295), r, 2, 32, 32))
"""

from __future__ import annotations

import math

import tvm
from tvm import tirx

from ...hw.threads import WARP_THREADS, level_threads, thread_axis_place
from ...ir.annotations import LAYOUT_KEY
from ...ir.device_calls import cta_barrier
from ...ir.rewrite import AllocBuffer, load, sequence, store
from ...layout.indexing import all_of, flatten, unflatten
from ...layout.inverse import PlaceInverse
from ..copy.lower import loop_var, lower_plan, simplify
from ..copy.plan import plan_copy, uncovered_thread_levels
from .spec import TILE_REDUCE, ReduceRecord

#: Every lane of the warp takes part in each shuffle.
FULL_WARP = 0xFFFFFFFF
#: The first named barrier a warpgroup-scope reduction uses (``bar.sync 1 + warpgroup, 128``); 0 is
#: ``__syncthreads()``'s.
FIRST_NAMED_BARRIER = 1
#: The bits of bfloat16's -inf (the identity of "max") and +inf ("min"): sign, eight 1 exponent bits, zero fraction.
BFLOAT16_INFINITY_BITS = {"max": 0xFF80, "min": 0x7F80}
#: The TIR intrinsic of ``atomicAdd(address, value)`` (CUDA's ``atom.add``; it returns the old value).
ATOMIC_ADD = "tirx.cuda.atomic_add"
#: The TIR intrinsic of a named barrier over the 128 threads of a warpgroup (``bar.sync id, 128``).
WARPGROUP_SYNC = "tirx.cuda.warpgroup_sync"


def combiner(op: str):
    """The binary TIR combination of reduction ``op``.

    Example:
        >>> import tvm
        >>> a, b = tvm.tirx.Var("a", "float32"), tvm.tirx.Var("b", "float32")
        >>> combiner("max")(a, b), combiner("sum")(a, b)
        (T.max(a, b), a + b)
    """
    return {"sum": lambda a, b: a + b, "max": tirx.max, "min": tirx.min}[op]


def combined(combine, values: list):
    """``values`` combined pairwise as a balanced tree (independent combinations first).

    Example:
        >>> import tvm
        >>> a, b, c = (tvm.tirx.Var(n, "int32") for n in "abc")
        >>> combined(lambda x, y: x + y, [a, b, c])
        a + b + c
    """
    while len(values) > 1:
        pairs = [combine(values[k], values[k + 1]) for k in range(0, len(values) - 1, 2)]
        values = pairs + values[len(values) - len(values) % 2 :]
    return values[0]


def shuffle_xor(value, mask: int):
    """``value`` of lane ``laneid ^ mask`` (every lane of the warp taking part): CUDA's ``__shfl_xor_sync``.

    Example:
        >>> import tvm
        >>> shuffle_xor(tvm.tirx.Var("v", "float32"), 2)
        T.tvm_warp_shuffle_xor(T.uint32(4294967295), v, 2, 32, 32)
    """
    return tvm.tirx.op.tvm_warp_shuffle_xor(tirx.const(FULL_WARP, "uint32"), value, mask, WARP_THREADS, WARP_THREADS)


def scope_barrier(scope: str, tid):
    """The barrier of the threads of one ``scope`` unit that CTA thread ``tid`` is in: ``__syncthreads()`` for the
    CTA, the named barrier ``1 + warpgroup`` over 128 threads for a warpgroup.

    Example:
        >>> import tvm
        >>> scope_barrier("warpgroup", tvm.tirx.Var("tx", "int32")).value
        T.cuda.warpgroup_sync(tx // 128 + 1)
    """
    if scope == "cta":
        return cta_barrier()
    if scope == "warpgroup":
        return tirx.Evaluate(tvm.tirx.call_intrin("", WARPGROUP_SYNC, tid // 128 + FIRST_NAMED_BARRIER))
    raise ValueError(f"no shared-memory barrier for a {scope}-scope reduction (its threads are one warp or fewer)")


@TILE_REDUCE.lowering("any")
def lower_tile_reduce(record: ReduceRecord, ctx):
    dst, src, plan, call = record.dst, record.src, record.plan, record.call
    combine = combiner(call.op)
    accumulating = not (isinstance(call.accumulate, tirx.IntImm) and not bool(call.accumulate.value))
    stmts = [src.declaration(), dst.declaration()]
    if record.fragment is not None:  # a destination in memory: reduced into registers, then stored or added
        fragment = record.fragment
        stmts += [AllocBuffer(fragment.buffer, {LAYOUT_KEY: fragment.layout}), fragment.declaration()]
        stmts += _reduced(record, fragment.view, combine, ctx)
        stmts.append(_to_memory(record, accumulating, ctx))
        return sequence(stmts)
    if accumulating:  # the reduction goes into registers of its own, then into dst with its old value
        result = tvm.tirx.decl_buffer((len(plan.slots),), dst.dtype, f"{dst.buffer.name}_reduced", scope="local")
        stmts.append(AllocBuffer(result))
    else:
        result = dst.view
    stmts += _reduced(record, result, combine, ctx)
    if accumulating:
        condition = call.accumulate

        def total(s):
            both = combine(load(dst.view, s), load(result, s))
            return both if isinstance(condition, tirx.IntImm) else tirx.Select(condition, both, load(result, s))

        stmts.append(_per_slot(ctx, len(plan.slots), dst.view, total))
    return sequence(stmts)


def _reduced(record: ReduceRecord, result, combine, ctx) -> list:
    """The three stages (see the module docstring), leaving the reduction in ``result`` (a flat register view in
    the derived layout's slots)."""
    plan = record.plan
    value = _source_value(record, ctx)
    stmts = [
        store(result, combined(combine, [value(s) for s in sources]), slot) for slot, sources in enumerate(plan.slots)
    ]
    for mask in plan.lane_masks:

        def exchanged(s, mask=mask):
            return combine(load(result, s), shuffle_xor(load(result, s), mask))

        stmts.append(_per_slot(ctx, len(plan.slots), result, exchanged))
    if plan.warp_count > 1:
        stmts.append(_across_warps(record, result, combine, ctx))
    return stmts


def _source_value(record: ReduceRecord, ctx):
    """Source slot ``s`` of the thread as stage 1 combines it: its register, or, in a tail-padded source, the
    reduction's identity where the thread's place holds padding (a flat index past the elements, which no copy
    wrote)."""
    plan, src = record.plan, record.src
    if not plan.padded:
        return lambda s: load(src.view, s)
    inverse = PlaceInverse(plan.layout)
    tid, count = ctx.threads.index, ctx.threads.count
    places = {axis: thread_axis_place(axis, tid, count)[0] for axis in inverse.axes if axis != "m"}
    neutral = identity(record.call.op, src.view.dtype)

    def value(s):
        data = ctx.analyzer.simplify(inverse.flat_index({**places, "m": s}) < plan.elements)
        if isinstance(data, tirx.IntImm):
            return load(src.view, s) if bool(data.value) else neutral
        return tirx.Select(data, load(src.view, s), neutral)

    return value


def identity(op: str, dtype: str):
    """The value reduction ``op`` leaves any value unchanged by, in ``dtype``.

    Example:
        >>> identity("sum", "float32"), identity("max", "float32"), identity("min", "int8")
        (T.float32(0.0), T.float32("-inf"), T.int8(127))
        >>> identity("max", "bfloat16")
        T.reinterpret("bfloat16", T.uint16(65408))
    """
    dtype = str(dtype)
    if op == "sum":
        return tirx.const(0, dtype)
    if not dtype.startswith(("float", "bfloat")):
        return tirx.min_value(dtype) if op == "max" else tirx.max_value(dtype)
    if dtype == "bfloat16":  # TVM prints a bfloat16 infinity as ``inff`` (no CUDA name): its bits, reinterpreted
        return tirx.reinterpret(dtype, tirx.const(BFLOAT16_INFINITY_BITS[op], "uint16"))
    return tirx.const(float("-inf") if op == "max" else float("inf"), dtype)


def _to_memory(record: ReduceRecord, accumulating: bool, ctx):
    """The reduced fragment written to its global or shared destination: stored by replica 0 of each element (a
    copy's plan, ``ops/copy/plan.py``, with its vectors), or, accumulating, added with ``atomicAdd`` -- one atomic
    per element and CTA, the pattern of a reduction across CTAs -- each element's atomic issued by a different
    replica where there are several (replica ``slot % replicas``), so that a fully replicated result (column sums of
    one-row-per-thread tiles) spreads its atomics over the threads instead of serialising them on thread 0."""
    fragment, dst, scope = record.fragment, record.dst, record.call.scope
    tid, count = ctx.threads.index, ctx.threads.count
    if not accumulating:
        return lower_plan(plan_copy(dst, fragment, scope, count), ctx)
    inverse = PlaceInverse(fragment.layout)
    thread_axes = [axis for axis in inverse.axes if axis != "m"]
    places = {axis: thread_axis_place(axis, tid, count)[0] for axis in thread_axes}
    unread = uncovered_thread_levels(thread_axes, scope, count)
    digits = [*inverse.replica_digits({**places, "m": 0}), *((tid // u) % n for u, n in unread)]
    extents = [*inverse.replica_extents, *(n for _, n in unread)]
    replicas = math.prod(extents)
    var = loop_var(ctx, "slot", fragment.extent)
    local = unflatten(inverse.flat_index({**places, "m": var}), dst.extents)
    guards = [inverse.holds({**places, "m": var}), *dst.bounds_guards(local)]
    if replicas > 1:
        guards.append(flatten(digits, extents) == var % replicas)
    value = load(fragment.view, var)
    adds = [atomic_add(dst.view, simplify(ctx, a), value) for a in dst.addresses(local, every_replica=True)]
    return _unrolled(var, fragment.extent, _guarded(ctx, sequence(adds), guards))


def atomic_add(buffer, index, value):
    """``atomicAdd(&buffer[index], value)`` (``T.cuda.atomic_add``), as a statement.

    Example:
        >>> import tvm
        >>> out = tvm.tirx.decl_buffer((64,), "float32", "out")
        >>> atomic_add(out, 3, tvm.tirx.const(1.0, "float32")).value
        T.cuda.atomic_add(T.address_of(out[3]), T.float32(1.0))
    """
    address = tvm.tirx.address_of(tvm.tirx.BufferLoad(buffer, [index]))
    return tirx.Evaluate(tvm.tirx.call_intrin(buffer.dtype, ATOMIC_ADD, address, value))


def _per_slot(ctx, slots: int, target, value):
    """``target[s] = value(s)`` for every slot ``s``, unrolled."""
    var = loop_var(ctx, "slot", slots)
    return _unrolled(var, slots, store(target, value(var), var))


def _across_warps(record: ReduceRecord, result, combine, ctx):
    """Stage 3 (see the module docstring): the partial results of the ``W`` warps of each group through shared
    memory. One lane per butterfly group writes its partials to ``scratch[unit][warp of the group][element]``; then
    either every holder reads the ``W`` partials of each of its slots and combines them (``W`` loads per slot), or,
    where that reads more (a result every thread holds: column sums of one-row-per-thread tiles), the threads of the
    unit first combine the partials of one element each into ``scratch[final][unit][element]`` and every holder
    reads its slots' finals (one load per slot, one more barrier) -- fewer loads and fewer values in flight."""
    dst, plan, scope = record.dst, record.plan, record.call.scope
    tid, count = ctx.threads.index, ctx.threads.count
    source, target = PlaceInverse(plan.layout), PlaceInverse(plan.dst_layout)
    thread_axes = [axis for axis in source.axes if axis != "m"]
    places = {axis: thread_axis_place(axis, tid, count)[0] for axis in thread_axes}
    digits = source.shard_digits({**places, "m": 0})
    size, groups, slots = math.prod(plan.dst_shape), plan.warp_count, len(plan.slots)
    unit_threads = level_threads(scope, count)
    unit, units = tid // unit_threads, count // unit_threads
    rounds = -(-size // unit_threads)  # elements each thread of the unit combines, in the two-step form
    two_step = slots * groups > rounds * groups + slots
    scratch = tvm.tirx.decl_buffer(
        ((groups + two_step) * units * size,), dst.dtype, f"{dst.buffer.name}_scratch", scope="shared"
    )
    holds = ctx.analyzer.simplify(source.holds({**places, "m": plan.slots[0][0]}))
    held = [] if isinstance(holds, tirx.IntImm) and bool(holds.value) else [holds]
    replica_zero = [
        *(d == 0 for d in plan.lane_replica_digits(digits)),
        *(d == 0 for d in source.replica_digits({**places, "m": 0})),
        *((tid // u) % n == 0 for u, n in uncovered_thread_levels(thread_axes, scope, count)),
    ]

    def partial(group, element):
        return ctx.analyzer.simplify((unit * groups + group) * size + element)

    def final(element):
        return ctx.analyzer.simplify((units * groups + unit) * size + element)

    def element(slot):
        return target.flat_index({**places, "m": slot})

    barrier = scope_barrier(scope, tid)
    write_var = loop_var(ctx, "slot", slots)
    write = store(scratch, load(result, write_var), partial(plan.warp_digit(digits), element(write_var)))
    stmts = [AllocBuffer(scratch), _unrolled(write_var, slots, _guarded(ctx, write, [*held, *replica_zero])), barrier]
    read_var = loop_var(ctx, "slot", slots)
    if two_step:
        round_var = loop_var(ctx, "element_round", rounds)
        mine = round_var * unit_threads + tid % unit_threads
        total = combined(combine, [load(scratch, partial(group, mine)) for group in range(groups)])
        inside = [] if size % unit_threads == 0 else [mine < size]
        stmts += [_unrolled(round_var, rounds, _guarded(ctx, store(scratch, total, final(mine)), inside)), barrier]
        value = load(scratch, final(element(read_var)))
    else:
        value = combined(combine, [load(scratch, partial(group, element(read_var))) for group in range(groups)])
    stmts += [_unrolled(read_var, slots, _guarded(ctx, store(result, value, read_var), held)), barrier]
    return sequence(stmts)


def _unrolled(var, extent: int, body):
    return body if extent == 1 else tirx.For(var, 0, extent, tirx.ForKind.UNROLLED, body)


def _guarded(ctx, body, conditions: list):
    condition = ctx.analyzer.simplify(all_of(conditions)) if conditions else True
    if isinstance(condition, bool) or (isinstance(condition, tirx.IntImm) and bool(condition.value)):
        return body
    return tirx.IfThenElse(condition, body, None)
