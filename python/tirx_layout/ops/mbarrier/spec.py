"""The mbarrier ops: ``T.mbarrier_init(bar, count)``, ``T.mbarrier_arrive(bar)``, ``T.mbarrier_expect_tx(bar,
nbytes)``, ``T.mbarrier_arrive_expect_tx(bar, nbytes)`` and ``T.mbarrier_wait(bar, parity)``, on an mbarrier
``bars[i]`` (an element of a shared ``uint64`` buffer). Their values are checked against the PTX ISA's ranges
(``hw/mbarrier.py``) when the op is written; ``T.mbarrier_init`` must be reached by every thread of the CTA (thread 0
initialises, then a CTA barrier publishes it). They lower the same way on every target (``ops/mbarrier/lower.py``).

Example:
    >>> import tvm
    >>> bars = tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")
    >>> MBARRIER_WAIT(bars[1], 0)
    T.mbarrier_wait(bars[1], T.uint32(0))
    >>> MBARRIER_INIT(bars[0], 0)
    Traceback (most recent call last):
    ...
    ValueError: T.mbarrier_init: the arrival count must be in 1..1048575 (PTX ISA), got 0
"""

from __future__ import annotations

from ...hw.mbarrier import MAX_ARRIVAL_COUNT, MAX_TX_COUNT, PARITIES
from ..spec import MbarrierField, OpCall, OpSpec, Reach, Record, Uint32Field


def _transaction_bytes() -> Uint32Field:
    return Uint32Field("nbytes", 0, MAX_TX_COUNT, "the transaction byte count")


class MbarrierInit(OpSpec):
    """``T.mbarrier_init(bars[i], count)``: thread 0 initialises the mbarrier for ``count`` arrivals per phase;
    every thread reaches it (a CTA barrier follows, so no thread uses it uninitialised; consecutive inits share one).

    Example:
        >>> import tvm
        >>> MBARRIER_INIT(tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")[0], 1)
        T.mbarrier_init(bars[0], T.uint32(1))
    """

    name = "mbarrier_init"
    description = "initialise an mbarrier"
    fields = (MbarrierField("bar"), Uint32Field("count", 1, MAX_ARRIVAL_COUNT, "the arrival count"))

    def rules(self, call: OpCall, ctx) -> Record:
        reach = Reach(
            "cta",
            "T.mbarrier_init is CTA-wide (thread 0 initialises, then a CTA barrier) but it sits under `if {guard}`; "
            "initialise mbarriers where every thread of the CTA passes",
        )
        return Record(call, self.family(ctx), reach=reach)


class MbarrierArrive(OpSpec):
    """``T.mbarrier_arrive(bars[i])``: every thread reaching it arrives on the mbarrier once, releasing what it did
    before (its shared-memory writes, its tensor-memory accesses) to whoever waits for the phase.

    Example:
        >>> import tvm
        >>> MBARRIER_ARRIVE(tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")[1])
        T.mbarrier_arrive(bars[1])
    """

    name = "mbarrier_arrive"
    description = "arrive on an mbarrier"
    fields = (MbarrierField("bar"),)


class MbarrierExpectTx(OpSpec):
    """``T.mbarrier_expect_tx(bars[i], nbytes)``: every thread reaching it adds ``nbytes`` to the current phase's
    transaction count, without arriving.

    Example:
        >>> import tvm
        >>> MBARRIER_EXPECT_TX(tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")[0], 16384)
        T.mbarrier_expect_tx(bars[0], T.uint32(16384))
    """

    name = "mbarrier_expect_tx"
    description = "add to an mbarrier's transaction count"
    fields = (MbarrierField("bar"), _transaction_bytes())


class MbarrierArriveExpectTx(OpSpec):
    """``T.mbarrier_arrive_expect_tx(bars[i], nbytes)``: add ``nbytes`` to the transaction count, then arrive.

    Example:
        >>> import tvm
        >>> MBARRIER_ARRIVE_EXPECT_TX(tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")[0], 64)
        T.mbarrier_arrive_expect_tx(bars[0], T.uint32(64))
    """

    name = "mbarrier_arrive_expect_tx"
    description = "add to an mbarrier's transaction count and arrive"
    fields = (MbarrierField("bar"), _transaction_bytes())


class MbarrierWait(OpSpec):
    """``T.mbarrier_wait(bars[i], parity)``: every thread reaching it waits until the mbarrier's phase of that
    parity has completed (on a tcgen05 target it then orders its later tensor-memory accesses after it).

    Example:
        >>> import tvm
        >>> MBARRIER_WAIT(tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")[0], 1)
        T.mbarrier_wait(bars[0], T.uint32(1))
    """

    name = "mbarrier_wait"
    description = "wait for an mbarrier phase"
    fields = (MbarrierField("bar"), Uint32Field("parity", PARITIES[0], PARITIES[-1], "the phase parity"))


MBARRIER_INIT = MbarrierInit()
MBARRIER_ARRIVE = MbarrierArrive()
MBARRIER_EXPECT_TX = MbarrierExpectTx()
MBARRIER_ARRIVE_EXPECT_TX = MbarrierArriveExpectTx()
MBARRIER_WAIT = MbarrierWait()
