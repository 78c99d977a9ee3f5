"""The tcgen05 thread-sync fences a kernel's TMEM accesses need around its CTA barriers (PTX ISA 9.7.16.6).

Example (a store to TMEM, a barrier, a load: the barrier gets the fences on both sides):
    >>> import tvm
    >>> from tirx_layout.ir.device_calls import called_helper, cta_barrier
    >>> from tirx_layout.ops.helpers import tcgen05
    >>> zero = tvm.tirx.const(0, "uint32")
    >>> body = tvm.tirx.SeqStmt([tcgen05.ld_st("st", "32x32b", 1, zero, zero), cta_barrier(),
    ...                          tcgen05.ld_st("ld", "32x32b", 1, zero, zero)])
    >>> [called_helper(s).what if called_helper(s) else "barrier" for s in fence_barriers_between_accesses(body).seq]
    ['st_32x32b_x1', 'fence_before', 'barrier', 'fence_after', 'ld_32x32b_x1']
"""

from __future__ import annotations

from tvm import tirx

from ...ir.device_calls import called_helper, is_cta_barrier
from ...ir.rewrite import map_stmt, sequence, walk
from ..helpers import tcgen05


def fence_barriers_between_accesses(body):
    """``body`` with ``tcgen05.fence::before_thread_sync`` / ``after_thread_sync`` around each CTA barrier that has
    asynchronous tcgen05 accesses (ld/st/cp) on both sides, in program order or through an enclosing loop. Such a
    barrier is how one warp's TMEM accesses get ordered with another's, and without the fences it orders nothing
    for them (PTX ISA 9.7.16.6.3 and the patterns of 9.7.16.6.4.4). A barrier with no asynchronous tcgen05 access on
    one side needs none: the fences order asynchronous operations only, and ``tcgen05.alloc``/``dealloc`` are
    synchronous (9.7.16.6.1).

    A barrier that already has the two fences right around it (the MMA lowering emits them) is left as it is.

    Example: in ``st(acc[wg]); T.cuda.cta_sync(); ld(acc[1 - wg])`` the barrier becomes
    ``fence_before; cta_sync; fence_after``.
    """
    events = []  # (is_barrier, stmt, enclosing loops)
    fenced_already = []

    def note_fenced(seq):
        parts = list(seq.seq)
        for i in range(1, len(parts) - 1):
            if is_cta_barrier(parts[i]) and _is(parts[i - 1], "fence_before") and _is(parts[i + 1], "fence_after"):
                fenced_already.append(parts[i])

    def scan(stmt, loops):
        if isinstance(stmt, tirx.SeqStmt):
            for part in stmt.seq:
                scan(part, loops)
        elif isinstance(stmt, tirx.IfThenElse):
            scan(stmt.then_case, loops)
            if stmt.else_case is not None:
                scan(stmt.else_case, loops)
        elif isinstance(stmt, tirx.For | tirx.While):
            scan(stmt.body, (*loops, stmt))
        elif is_cta_barrier(stmt) or tcgen05.is_asynchronous(stmt):
            events.append((is_cta_barrier(stmt), stmt, loops))
        elif isinstance(getattr(stmt, "body", None), tirx.Stmt):
            scan(stmt.body, loops)

    scan(body, ())
    walk(body, [(tirx.SeqStmt, note_fenced)])

    def access(i, loops, after: bool) -> bool:
        """An asynchronous access before (or ``after``) event ``i``, or in a loop around it."""
        return any(
            not barrier and ((j > i) == after or any(a.same_as(b) for a in loops for b in theirs))
            for j, (barrier, _, theirs) in enumerate(events)
            if j != i
        )

    fenced = [
        stmt
        for i, (barrier, stmt, loops) in enumerate(events)
        if barrier
        and not any(stmt.same_as(f) for f in fenced_already)
        and access(i, loops, after=False)
        and access(i, loops, after=True)
    ]
    if not fenced:
        return body

    def fence(stmt):
        if not any(stmt.same_as(b) for b in fenced):
            return stmt
        return sequence([tcgen05.simple("fence_before"), stmt, tcgen05.simple("fence_after")])

    return map_stmt(body, [(tirx.Evaluate, fence), (tirx.SeqStmt, lambda seq: sequence(seq.seq))])


def _is(stmt, what: str) -> bool:
    called = called_helper(stmt) if isinstance(stmt, tirx.Evaluate) else None
    return called is not None and called[:2] == (tcgen05.FAMILY, what)
