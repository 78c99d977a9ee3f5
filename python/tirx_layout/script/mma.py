"""``T.tile_mma`` and the ``T.mbarrier_*`` operations in TVMScript: they build the ops of
``tirx_layout.ir.mma_ops``, which ``tirx_layout.transform.LowerTileMma`` lowers to ``tcgen05.mma`` and mbarrier
instructions."""

from __future__ import annotations

import tvm

from ..ir.mma_ops import mbarrier_call, mma_call, mma_wait_call


def tile_mma(
    D, A, B, accumulate=False, *printed, barrier=None, scale_a=None, scale_b=None, scope: str = "cta", wait=True
):
    """``T.tile_mma(D, A, B, accumulate=False, *, barrier=None, scale_a=None, scale_b=None, scope="cta",
    wait=True)``: ``D[m, n] (+)= sum_k A[m, k] * B[n, k]`` on the tensor cores (``D = A @ B.T``).

    ``D`` is an ``(M, N)`` region of a TMEM buffer in an MMA accumulator layout (``tmem_datapath_layout("D", 128,
    N)``, or ``"F"`` for M = 64); ``A`` an ``(M, K)`` region in shared memory (or TMEM), ``B`` an ``(N, K)`` region
    in shared memory, each in a layout the MMA reads (``mma_shared_layout``). ``accumulate`` (a bool or an
    expression such as ``k > 0``) adds to D instead of overwriting it. Without ``barrier`` the op waits for its
    result; with ``barrier=bars[i]`` it commits to that mbarrier and the kernel waits with ``T.mbarrier_wait``.
    ``scope`` says who reaches the op: every thread of the CTA, one warp, or one thread.

    On a Hopper target (sm_90a) the op is ``wgmma``: ``D`` is a register fragment in
    ``wgmma_accumulator_layout(N)`` (M = 64 per warpgroup), ``A`` in shared memory or a register fragment in
    ``wgmma_operand_a_layout(K, dtype)``, ``B`` in shared memory; ``scope`` is ``"cta"`` (every warpgroup issues its
    own 64 rows) or ``"warpgroup"``, whose shared operands must already be published to the async proxy wgmma reads
    through (a TMA load then ``T.mbarrier_wait``, or writers that ``T.mbarrier_arrive``; no fence is emitted for
    them, the simulator reports a missing one as a race). ``wait=False`` issues without waiting (a pipeline's
    form): D is readable, and the shared operands may be overwritten, after ``T.tile_mma_wait(pending)`` has left
    at most ``pending`` newer groups in flight.

    Example (inside a ``@T.prim_func``): ``T.tile_mma(acc, As, Bs, accumulate=k > 0)``.

    A printed kernel spells the op positionally, ``T.tile_mma(D, A, B, accumulate, barrier, scale_a, scale_b,
    scope, wait)`` with ``""`` for an operand not given; that form is read back too (``printed``), and only that one
    (``wait`` may be left out: it is then True).

        >>> import tvm
        >>> D = tvm.tirx.decl_buffer((128, 64), "float32", "D", scope="tmem")
        >>> A = tvm.tirx.decl_buffer((128, 16), "float16", "A", scope="shared")
        >>> B = tvm.tirx.decl_buffer((64, 16), "float16", "B", scope="shared")
        >>> tile_mma(D, A, B, True).args[3]
        T.bool(True)
    """
    if printed:
        keywords = any(v is not None for v in (barrier, scale_a, scale_b)) or scope != "cta" or wait is not True
        if len(printed) not in (4, 5) or keywords:
            raise TypeError(
                "T.tile_mma takes barrier=, scale_a=, scale_b=, scope= and wait= by keyword (or positionally, "
                f"as printed); got {len(printed)} extra positional arguments"
            )
        barrier, scale_a, scale_b, scope = (None if _absent(v) else v for v in printed[:4])
        scope = "cta" if scope is None else str(scope)
        wait = printed[4] if len(printed) == 5 else True
    return mma_call(D, A, B, accumulate, barrier=barrier, scale_a=scale_a, scale_b=scale_b, scope=scope, wait=wait)


def tile_mma_wait(pending=0):
    """``T.tile_mma_wait(pending=0)``: every thread of the warpgroup waits until at most ``pending`` of its
    asynchronous tile MMAs (``T.tile_mma(..., wait=False)``) are still in flight (``wgmma.wait_group``); after
    ``T.tile_mma_wait(0)`` every accumulator is readable and every shared operand may be overwritten.

    Example:
        >>> tile_mma_wait(1)
        T.tile_mma_wait(1)
    """
    return mma_wait_call(pending)


def _absent(value) -> bool:
    return isinstance(value, str | tvm.ir.StringImm) and str(value) in ("",)


def mbarrier_init(bar, count):
    """``T.mbarrier_init(bars[i], count)``: thread 0 initialises the mbarrier for ``count`` arrivals per phase;
    every thread reaches it (a CTA barrier follows, so no thread uses it uninitialised).

    Example:
        >>> import tvm
        >>> bars = tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")
        >>> mbarrier_init(bars[0], 1)
        T.mbarrier_init(bars[0], T.uint32(1))
    """
    return mbarrier_call("init", bar, count)


def mbarrier_arrive(bar):
    """``T.mbarrier_arrive(bars[i])``: every thread reaching it arrives on the mbarrier once.

    Example:
        >>> import tvm
        >>> mbarrier_arrive(tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")[1])
        T.mbarrier_arrive(bars[1])
    """
    return mbarrier_call("arrive", bar)


def mbarrier_expect_tx(bar, nbytes):
    """``T.mbarrier_expect_tx(bars[i], nbytes)``: every thread reaching it adds ``nbytes`` to the current phase's
    transaction count, without arriving.

    Example:
        >>> import tvm
        >>> mbarrier_expect_tx(tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")[0], 16384)
        T.mbarrier_expect_tx(bars[0], T.uint32(16384))
    """
    return mbarrier_call("expect_tx", bar, nbytes)


def mbarrier_arrive_expect_tx(bar, nbytes):
    """``T.mbarrier_arrive_expect_tx(bars[i], nbytes)``: add ``nbytes`` to the transaction count, then arrive.

    Example:
        >>> import tvm
        >>> mbarrier_arrive_expect_tx(tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")[0], 64)
        T.mbarrier_arrive_expect_tx(bars[0], T.uint32(64))
    """
    return mbarrier_call("arrive_expect_tx", bar, nbytes)


def mbarrier_wait(bar, parity):
    """``T.mbarrier_wait(bars[i], parity)``: every thread reaching it waits until the mbarrier's phase of that
    parity has completed, then orders its later tcgen05 accesses after it (``tcgen05.fence::after_thread_sync``).

    Example:
        >>> import tvm
        >>> mbarrier_wait(tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")[0], 1)
        T.mbarrier_wait(bars[0], T.uint32(1))
    """
    return mbarrier_call("wait", bar, parity)
