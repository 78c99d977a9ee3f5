"""``T.tile_copy_async`` without a barrier -- ``cp.async`` global-to-shared copies (sm_80 onwards) -- and
``T.tile_copy_async_wait``, the wait for their groups.

``T.tile_copy_async(dst, src)`` with ``src`` a global region, ``dst`` a shared one and no ``barrier`` is the
asynchronous form of ``T.tile_copy``: the threads of ``scope`` deal the tile's vectors among them as the copy's plan
does (``ops/copy/plan.py``), each issuing one ``cp.async`` of 4, 8 or 16 bytes per vector, then every thread commits
its copies as one group (``cp.async.commit_group``; a thread with no vector commits an empty group, so every thread
counts the same groups). Elements of the region past the global tensor's edge are written as zeros (``src-size``
0), as the TMA fills a box. ``T.tile_copy_async_wait(pending=0, scope="cta")`` waits until at most ``pending`` of
each thread's newest groups are in flight (``cp.async.wait_group``), then synchronises the scope, after which the
tiles of the retired groups are readable by every thread of it. One copy is one group: a stage of two tiles is two
groups, so a pipeline that keeps ``s`` stages in flight waits with ``pending = 2 s``.

A load with ``barrier=`` stays the TMA's (``ops/tma``); so does a store.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...hw.memory import dtype_bytes
from ..copy.plan import MemoryCopy, plan_copy
from ..helpers.cpasync import COPY_BYTES
from ..operands import MemoryOperand, operand
from ..spec import CountField, OpCall, OpSpec, Reach, Record, ScopeField

#: Who runs an asynchronous copy or its wait together.
CP_ASYNC_SCOPES = ("cta", "warpgroup", "warp")
#: Who waits together: the CTA (then a CTA barrier) or each warp (then ``__syncwarp``).
WAIT_SCOPES = ("cta", "warp")
#: The most groups ``T.tile_copy_async_wait`` may leave pending (``cp.async.wait_group`` takes an integer constant;
#: our bound, above what a ring of a few stages of a few tiles keeps in flight).
MAX_PENDING_GROUPS = 15


@dataclass(frozen=True)
class CpAsyncCopy(Record):
    """A ``T.tile_copy_async`` through ``cp.async``: the shared destination and global source once the layouts are
    decided, the plan dealing the vectors, and the bytes of one ``cp.async``."""

    dst: MemoryOperand | None = None
    src: MemoryOperand | None = None
    plan: MemoryCopy | None = None

    @property
    def nbytes(self) -> int:
        return self.plan.v * self.dst.element_bytes


@dataclass(frozen=True)
class CpAsyncWait(Record):
    """A ``T.tile_copy_async_wait``: the groups it may leave pending."""

    pending: int


def cp_async_rules(call: OpCall, ctx) -> CpAsyncCopy:
    """The rules of a barrier-less ``T.tile_copy_async`` (a ``cp.async`` copy); called by the op's spec."""
    dst_buffer, src_buffer = call.dst.source, call.src.source
    if src_buffer.scope() != "global" or dst_buffer.scope() not in ("shared", "shared.dyn"):
        raise ValueError(
            "T.tile_copy_async without a barrier is a cp.async copy from global to shared memory, not "
            f"{src_buffer.name} ({src_buffer.scope()}) -> {dst_buffer.name} ({dst_buffer.scope()}); a TMA load takes "
            "barrier=bars[i], a TMA store goes shared -> global"
        )
    if str(src_buffer.dtype) != str(dst_buffer.dtype):
        raise ValueError(
            f"T.tile_copy_async (cp.async): {src_buffer.name} is {src_buffer.dtype} but {dst_buffer.name} is "
            f"{dst_buffer.dtype}; cp.async copies bytes without converting"
        )
    if call.scope not in CP_ASYNC_SCOPES:
        raise ValueError(
            f"T.tile_copy_async (cp.async) shares its vectors among the threads of its scope, one of "
            f"{CP_ASYNC_SCOPES}; got {call.scope!r}"
        )
    if call.transposed:
        raise ValueError("T.tile_copy_async (cp.async) copies element for element; transposed=True is a TMA load's")
    reach = Reach.shared_work("T.tile_copy_async", call.scope)
    if not ctx.decided(dst_buffer):
        return CpAsyncCopy(call, "cpasync", reach=reach)
    dst = operand(call.dst, ctx.layouts, "destination", analyzer=ctx.analyzer)
    src = operand(call.src, ctx.layouts, "source", analyzer=ctx.analyzer)
    if src.layout is not None:
        raise ValueError(f"T.tile_copy_async (cp.async): the global buffer {src.buffer.name} must be row-major")
    if tuple(e for e in src.extents if e != 1) != dst.tile_shape:
        raise ValueError(
            f"T.tile_copy_async (cp.async): the global region {src.region} ({tuple(src.extents)}) and the shared "
            f"region {dst.region} ({tuple(dst.extents)}) differ in shape"
        )
    plan = plan_copy(dst, src, call.scope, ctx.threads.count)
    nbytes = plan.v * dtype_bytes(dst.dtype)
    if not isinstance(plan, MemoryCopy) or nbytes not in COPY_BYTES:
        raise ValueError(
            f"T.tile_copy_async (cp.async) moves whole 4-, 8- or 16-byte vectors, contiguous and aligned on both "
            f"sides; {dst.region} <- {src.region} allows only {nbytes}-byte ones (the shared layout's contiguous "
            "runs, or the global row, are too short or misaligned)"
        )
    return CpAsyncCopy(call, "cpasync", dst=dst, src=src, plan=plan, reach=reach)


class TileCopyAsyncWait(OpSpec):
    """``T.tile_copy_async_wait(pending=0, scope="cta")``: every thread waits until at most ``pending`` of its
    newest ``cp.async`` groups (one per ``T.tile_copy_async`` without a barrier) are in flight, then the scope
    synchronises: the tiles of the retired groups are readable by all its threads.

    Example:
        >>> TILE_COPY_ASYNC_WAIT(2)
        T.tile_copy_async_wait("pending", 2)
    """

    name = "tile_copy_async_wait"
    description = "wait for the cp.async groups of the threads"
    fields = (CountField("pending", 0, MAX_PENDING_GROUPS, default=0), ScopeField(WAIT_SCOPES, keyword=True))
    families = ("cpasync",)

    def rules(self, call: OpCall, ctx) -> CpAsyncWait:
        family = self.family(ctx)
        if call.scope == "cta":
            reach = Reach(
                "cta",
                "a cta-scope T.tile_copy_async_wait ends with a CTA barrier every thread must reach, but it sits "
                'under `if {guard}`; write scope="warp" for the threads of one warp',
            )
        else:
            reach = Reach("warp", "a warp-scope T.tile_copy_async_wait synchronises its warp, but ")
        return CpAsyncWait(call, family, call.pending, reach=reach)


TILE_COPY_ASYNC_WAIT = TileCopyAsyncWait()
