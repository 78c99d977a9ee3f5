"""Warp-wide instructions: ``elect.sync`` and ``__syncwarp()`` (``bar.warp.sync``), from the PTX ISA.

Both are ``.sync.aligned`` with the full member mask ``0xffffffff``: every lane of the warp executes them together.
A warp some of whose lanes reach one without the others is an error here (on hardware it is undefined behaviour,
or a hang). ``elect.sync`` gives true to one lane, the lowest active one; ``bar.warp.sync`` also orders memory among
the warp's lanes ("bar.warp.sync ... guarantees memory ordering among threads participating in barrier"), modelled
with the CTA's :class:`~tirx_layout.sim.memory.SyncClocks`: every lane acquires what every lane has done so far.

Example (a ``__syncwarp()`` that lanes 16..31 of warp 1 skip):
    >>> import tvm
    >>> from tirx_layout import sim
    >>> kernel = tvm.script.from_source('''
    ... @T.prim_func
    ... def k(A: T.Buffer((64,), "float32")):
    ...     T.device_entry()
    ...     tx = T.thread_id([64])
    ...     if tx < 48:
    ...         T.cuda.warp_sync()
    ...     A[tx] = T.float32(1)
    ... ''')
    >>> try:
    ...     sim.run(kernel)
    ... except sim.SimulationError as err:
    ...     print(str(err)[:81])
    __syncwarp() with member mask 0xffffffff is executed by only some lanes of warp 1
"""

from __future__ import annotations

import numpy as np

from . import mbarrier
from .memory import SimulationError

__all__ = ["elect_sync", "named_barrier", "warp_sync", "whole_warps"]

_WARP = 32


def whole_warps(interp, what: str) -> list[int]:
    """The warps with an active lane, each checked to have all its lanes active (a ``.sync.aligned`` instruction
    ``what`` that part of a warp reaches raises :class:`SimulationError` naming the missing lanes).

    Example: with ``interp.mask`` true for threads 32..63 of a 64-thread CTA, ``whole_warps(interp, "mma.sync")``
    is ``[1]``; true for threads 0..30 only, it raises naming lane 31.
    """
    warps = np.unique(np.nonzero(interp.mask)[0] // _WARP).tolist()
    for w in warps:
        lanes = interp.mask[_WARP * w : _WARP * (w + 1)]
        if not lanes.all():
            missing = (np.nonzero(~lanes)[0]).tolist()
            raise SimulationError(
                f"{what} with member mask 0xffffffff is executed by only some lanes of warp {w} (lanes {missing} "
                "do not reach it); every lane of the warp must execute it together"
            )
    return warps


def elect_sync(interp) -> np.ndarray:
    """``elect.sync _|p, 0xffffffff``: per thread, ``uint32`` 1 on the lowest lane of each executing warp, else 0.

    Example: inside ``if tx < 32:``, ``elect_sync(interp)`` is 1 for thread 0 and 0 for threads 1-31 (and for
    threads that do not execute it).
    """
    elected = np.zeros(interp.count, np.uint32)
    for w in whole_warps(interp, "elect.sync"):
        elected[_WARP * w] = 1  # every lane is active, so the lowest active lane is lane 0
    return elected


def _join(interp, groups) -> None:
    """Each group of threads (CTA-local ids) waits for each other: every thread's later accesses are ordered after
    every one's earlier ones, and what one saw of an asynchronous read finishing, all have seen."""
    clocks = mbarrier.clocks(interp)
    offset = mbarrier.row(interp, 0)
    for threads in groups:
        published = np.max([clocks.release(t + offset) for t in threads], axis=0)
        for t in threads:
            clocks.acquire(t + offset, published)
        for read in interp.async_reads:
            if read.observed[threads].any():
                read.observed[threads] = True
    mbarrier.drop_async_reads(interp, lambda read: read.observed.all())


def named_barrier(interp, ids, expected: int) -> None:
    """``bar.sync id, expected``: the executing threads that name barrier ``id`` (per thread, ``ids``) wait for each
    other; each barrier must be reached by exactly ``expected`` threads, whole warps (PTX ISA, ``bar.sync``: the
    thread count is a multiple of the warp size and every thread of a warp takes part).

    Example: inside ``if tx < 256:``, ``named_barrier(interp, tx // 128 + 1, 128)`` joins each warpgroup's clocks; a
    barrier reached by 96 threads raises ``SimulationError``.
    """
    whole_warps(interp, f"bar.sync with {expected} threads")
    active = np.nonzero(interp.mask)[0]
    ids = np.broadcast_to(np.asarray(ids), (interp.count,))[active]
    groups = []
    for barrier in np.unique(ids).tolist():
        threads = active[ids == barrier]
        if threads.size != expected:
            raise SimulationError(
                f"named barrier {barrier} (bar.sync {barrier}, {expected}) is reached by {threads.size} threads "
                f"({threads.min()}..{threads.max()}); it waits for {expected}: the kernel would hang"
            )
        groups.append(threads)
    _join(interp, groups)


def warp_sync(interp) -> None:
    """``__syncwarp()``: each executing warp's lanes wait for each other; each lane's later accesses are ordered
    after every lane's earlier ones.

    Example: ``warp_sync(interp)`` with the mask of warp 1's 32 lanes joins their clocks; a mask with lane 33
    missing raises ``SimulationError``.
    """
    warps = whole_warps(interp, "__syncwarp()")
    _join(interp, [np.arange(_WARP * w, min(_WARP * (w + 1), interp.count)) for w in warps])
