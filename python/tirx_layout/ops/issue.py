"""Who issues an instruction that one thread issues for its scope (a ``tcgen05.mma``, a TMA copy): the lane
``elect.sync`` elects in warp 0 for the CTA, in the warpgroup's first warp for a warpgroup, the lane it elects in
the warp reaching the op for a warp, the thread
itself for a thread. An elected lane is one ptxas knows to be alone in a converged warp, so it issues without a
per-instruction election loop (which a ``threadIdx.x == 0`` guard costs, measured in ``bench_mma``); and
``elect.sync`` elects the lowest active lane, so a TMA store and its wait are issued by the same thread.
"""

from __future__ import annotations

from tvm import tirx

from ..hw.threads import WARP_THREADS, WARPGROUP_THREADS
from .helpers import sync


def issued_once(scope: str, issue, thread_index):
    """``issue`` (a statement) guarded so that one thread of ``scope`` (``"cta"``, ``"warpgroup"``, ``"warp"`` or
    ``"thread"``) runs
    it; ``thread_index`` is the CTA-wide thread index.

    Example (a CTA's: the lane ``elect.sync`` elects in the warp of threads 0..31):
        >>> import tvm
        >>> tx = tvm.tirx.Var("tx", "int32")
        >>> guarded = issued_once("cta", tvm.tirx.Evaluate(0), tx)
        >>> str(guarded.condition), str(guarded.then_case.condition.a.args[0])
        ('tx < 32', '"tirx_layout_sync_elect"')
        >>> issued_once("thread", tvm.tirx.Evaluate(0), tx)
        T.evaluate(0)
    """
    if scope == "thread":
        return issue
    elected = tirx.IfThenElse(sync.elect() != tirx.const(0, "uint32"), issue, None)
    if scope == "warp":
        return elected
    if scope == "warpgroup":  # the first warp of the warpgroup reaching the op
        return tirx.IfThenElse(thread_index % WARPGROUP_THREADS < WARP_THREADS, elected, None)
    return tirx.IfThenElse(thread_index < WARP_THREADS, elected, None)
