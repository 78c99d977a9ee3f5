"""``T.tile_copy_async`` lowered to ``cp.async.bulk.tensor`` issued by one thread, its tensor map encoded on the
host, and ``T.tma_store_wait`` to ``cp.async.bulk.wait_group.read`` (facts: ``docs/notes/tma-facts.md``; the helpers are
``ops/helpers/tma.py``).

The host side: each distinct map gets a 128-byte slot on the host function's stack (``tvm_stack_alloca
("tensormap", 1)``) filled by ``tensormap_encode_tiled`` before the kernel's ``T.device_entry`` region
(:class:`TensorMaps`); the kernel uses ``&map``, which TVM's host/device split turns into a ``const
__grid_constant__ CUtensorMap`` kernel parameter. The user writes no descriptor.

The device side, by ``scope`` (who reaches the op; the issuing thread is chosen as for ``T.tile_mma``,
``ops/issue.py``):

* load: the issuing thread does ``mbarrier.arrive.expect_tx`` of the boxes' bytes (``expect_tx=True``), then the
  copies, which perform complete-tx on the mbarrier when their boxes have landed;
* store: every thread of the scope ``fence.proxy.async.shared::cta`` (its generic shared writes become visible to
  the TMA), a barrier of the scope, then the issuing thread issues the store and ``cp.async.bulk.commit_group``;
  ``T.tma_store_wait`` makes the issuing thread ``cp.async.bulk.wait_group.read 0``, then the scope synchronises.

The helpers carry, after the PTX operands, the global tensor's address: the compiled helper ignores it (the
hardware reads it from the map); the simulator copies from that buffer, with the map's fields as the host encodes
them (``sim.run`` reads the ``tensormap_encode_tiled`` call the host passes the kernel).

Example (a 128x64 bf16 box into a 128B-swizzled tile: an elected lane expects 16384 bytes, issues the copy):
    >>> import re, tvm, tirx_layout
    >>> from tirx_layout.transform import lower_tile_ops
    >>> func = tvm.script.from_source('''
    ... @T.prim_func
    ... def k(A: T.Buffer((256, 64), "bfloat16")):
    ...     T.device_entry()
    ...     tx = T.thread_id([128])
    ...     As = T.alloc_shared((128, 64), "bfloat16", layout=mma_shared_layout("bfloat16", "128B", (128, 64)),
    ...                         align=1024)
    ...     bars = T.alloc_shared((1,), "uint64")
    ...     T.tile_copy_async(As, A[128:256, 0:64], bars[0])
    ... ''', extra_vars={"T": tvm.script.tirx, "mma_shared_layout": tirx_layout.mma_shared_layout})
    >>> text = lower_tile_ops(func).script()
    >>> re.findall(r'func_call\\("tirx_layout_(\\w+)"', text)
    ['sync_elect', 'mbarrier_arrive_expect_tx', 'tma_load_2d']
    >>> "T.tensormap_encode_tiled" in text
    True
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ...hw.tma import TensorMap, driver_data_type
from ...ir.device_calls import cta_barrier, warp_barrier
from ...ir.rewrite import map_function, sequence
from ...ir.spans import located_errors
from ..helpers import cluster, mbarrier, sync, tma
from ..issue import issued_once
from ..spec import Record, find
from .spec import TILE_COPY_ASYNC, TMA_STORE_WAIT, TmaBox, TmaCopy

#: The attribute TVMScript's ``T.device_entry()`` opens the kernel region with.
DEVICE_ENTRY = "tirx.device_entry"


def _tensormap_type():
    from tvm.script import tirx as T

    return T.handle("tensormap").ty


class TensorMaps:
    """The tensor maps of a function's TMA copies: one host variable per distinct (global buffer, map), encoded by
    host statements that :meth:`finish` puts before the kernel's ``T.device_entry`` region."""

    def __init__(self, ctx):
        self.maps: dict = {}  # (global buffer, map text) -> map variable
        self.host: list = []

    def variable(self, glob, tmap: TensorMap):
        """The host variable holding ``tmap`` for global buffer ``glob`` (made, and its encoding added, once)."""
        key = (glob.buffer, str(tmap))
        if key not in self.maps:
            var = tirx.Var(f"{glob.buffer.name}_tensormap_{len(self.maps)}", ty=_tensormap_type())
            fields = tmap.driver_fields()
            encode = tvm.tirx.tensormap_encode_tiled(
                var,
                glob.buffer.data,
                *fields["global_dim"],
                *fields["global_strides"],
                *fields["box_dim"],
                *fields["element_strides"],
                descriptor_dtype=driver_data_type(glob.dtype),
                rank=fields["rank"],
                interleave=fields["interleave"],
                swizzle=fields["swizzle"],
                l2_promotion=fields["l2_promotion"],
                oob_fill=fields["oob_fill"],
            )
            self.host += [tirx.Bind(var, tvm.tirx.tvm_stack_alloca("tensormap", 1)), tirx.Evaluate(encode)]
            self.maps[key] = var
        return self.maps[key]

    def finish(self, func):
        placed = []

        def before_device_entry(stmt):
            if stmt.attr_key != DEVICE_ENTRY or placed:
                return stmt
            placed.append(True)
            return tirx.SeqStmt([*self.host, stmt])

        result = map_function(func, [(tirx.AttrStmt, before_device_entry)])
        if not placed:
            raise ValueError(
                "T.tile_copy_async: the kernel has no T.device_entry() region to encode its tensor maps before"
            )
        return result


def _shared_address(box: TmaBox, view):
    """``&view[first element of the box's shared piece]`` (``view``: the flat view the copy declares)."""
    offset = box.offset
    for begin, step in box.terms:
        offset = offset + begin * step
    index = tirx.IntImm("int32", offset) if isinstance(offset, int) else offset
    return tvm.tirx.address_of(tvm.tirx.BufferLoad(view, [index]))


def _int32(value):
    """A coordinate as the ``.s32`` operand: an int as a constant, an expression cast unless it is ``int32``."""
    if isinstance(value, int):
        return tirx.IntImm("int32", value)
    return value if str(value.ty) == "int32" else tirx.Cast("int32", value)


def _scope_barrier(scope: str) -> list:
    if scope == "cta":
        return [cta_barrier()]
    if scope == "warp":
        return [warp_barrier()]
    return []


@TILE_COPY_ASYNC.lowering("tma")
def lower_tma_copy(record: TmaCopy, ctx):
    before, issue = _copy(record, ctx)
    return sequence([*before, issued_once(record.call.scope, issue, ctx.threads.index)])


def _copy(record: TmaCopy, ctx) -> tuple[list, tirx.Stmt]:
    """What every thread of the copy's scope runs before the issue, and what the issuing thread runs."""
    call = record.call
    maps = ctx.state(TensorMaps)
    view = record.shared.view
    copies = []  # (map variable, rank, shared address, coordinates innermost first, global operand)
    for box in record.boxes:
        var = maps.variable(box.glob, box.tensor_map)
        coords = [_int32(b) for b in box.glob.begins][::-1]
        copies.append((var, box.tensor_map.rank, _shared_address(box, view), coords, box.glob))
    if record.load and call.multicast is not None:
        return [], sequence([record.shared.declaration(), *_multicast(record, copies)])
    if record.load:
        issue = []
        if call.expect_tx:  # one arrival for the whole copy: the bytes of all its boxes
            issue.append(mbarrier.arrive_expect_tx(tvm.tirx.address_of(call.barrier), record.transaction_bytes))
        for var, rank, address, coords, piece in copies:
            bar = tvm.tirx.address_of(call.barrier)
            issue.append(tma.load(rank, tvm.tirx.address_of(var), address, bar, coords, piece.buffer.data))
        before = []
    else:
        ((var, rank, address, coords, piece),) = copies
        issue = [tma.store(rank, tvm.tirx.address_of(var), address, coords, piece.buffer.data)]
        before = [sync.fence_proxy_async(), *_scope_barrier(call.scope)]
    return before, sequence([record.shared.declaration(), *issue])


def _multicast(record: TmaCopy, copies: list) -> list:
    """A multicast load as the elected thread of each CTA runs it: a CTA whose rank is in the mask expects the
    boxes' bytes on its own barrier (each receives every box; no test of the rank when the mask names every CTA of
    the cluster); the issuing CTA issues each box once, to the mask."""
    call = record.call
    mask = tirx.Cast("uint32", call.multicast) if str(call.multicast.ty) != "uint32" else call.multicast
    if call.issuer is not None:
        issuer = call.issuer
    else:  # a constant mask (the rules refuse a computed one without issuer=): its lowest rank
        value = int(mask.value) if isinstance(mask, tirx.IntImm) else int(mask.value.value)
        issuer = tirx.const((value & -value).bit_length() - 1, "uint32")
    rank = cluster.rank()
    bar = tvm.tirx.address_of(call.barrier)
    out = []
    if call.expect_tx:
        expect = mbarrier.arrive_expect_tx(bar, record.transaction_bytes)
        if record.everyone:  # the mask names every CTA of the cluster: each receives
            out.append(expect)
        else:
            receives = ((mask >> rank) & tirx.const(1, "uint32")) != tirx.const(0, "uint32")
            out.append(tirx.IfThenElse(receives, expect, None))
    loads = [
        tma.load_multicast(r, tvm.tirx.address_of(var), address, bar, coords, mask, piece.buffer.data)
        for var, r, address, coords, piece in copies
    ]
    out.append(tirx.IfThenElse(rank == issuer, sequence(loads), None))
    return out


def _elected_load(stmt, ctx):
    """The record of ``stmt`` when it is a TMA load an elected lane issues ("warp" or "cta" scope), else ``None``."""
    call = find(stmt) if isinstance(stmt, tirx.Evaluate) else None
    if call is None or call.spec is not TILE_COPY_ASYNC or call.scope == "thread":
        return None
    record = located_errors(lambda s: call.spec.resolve(call, ctx), stmt)
    # (a barrier-less copy is the cp.async form, not a TMA load: ops/cp_async)
    return record if isinstance(record, TmaCopy) and record.load else None


@TILE_COPY_ASYNC.run_lowering("tma")
def lower_load_runs(seq, ctx):
    """``seq`` with each run of consecutive TMA loads of one scope ("warp" or "cta") issued under ONE election:
    the lane ``elect.sync`` elects issues every load of the run (a producer's A and B copies of a K tile), where
    each load on its own would elect again (``BRA.DIV``, ``ELECT``, a reconvergence per copy in SASS). Loads need
    nothing before their issue, so nothing else moves; a store or a thread-scope copy ends the run."""
    out, run, grouped = [], [], False

    def close_run():
        if len(run) > 1:
            issues = [_copy(record, ctx)[1] for record in run]
            out.append(issued_once(run[0].call.scope, sequence(issues), ctx.threads.index))
        else:
            out.extend(run_statements)
        run.clear()
        run_statements.clear()

    run_statements = []
    for part in seq.seq:
        record = _elected_load(part, ctx)
        if record is not None and run and record.call.scope != run[0].call.scope:
            close_run()
        if record is None:
            close_run()
            out.append(part)
            continue
        run.append(record)
        run_statements.append(part)
        grouped |= len(run) > 1
    close_run()
    return sequence(out) if grouped else seq


@TMA_STORE_WAIT.lowering("tma")
def lower_store_wait(record: Record, ctx):
    scope = record.call.scope
    return sequence([issued_once(scope, tma.store_wait(), ctx.threads.index), *_scope_barrier(scope)])
