"""``T.tile_copy_async`` and ``T.tma_store_wait`` in TVMScript: they build the ops of ``tirx_layout.ir.tma_ops``,
which ``tirx_layout.transform.LowerTma`` lowers to ``cp.async.bulk.tensor`` with a tensor map encoded on the host."""

from __future__ import annotations

import tvm

from ..ir.tma_ops import tma_copy_call, tma_store_wait_call


def tile_copy_async(dst, src, barrier=None, *printed, expect_tx=True, scope: str = "cta", transposed=False):
    """``T.tile_copy_async(dst, src, barrier=None, *, expect_tx=True, scope="cta", transposed=False)``: copy a box
    between global and shared memory with the Tensor Memory Accelerator.

    * Load (``src`` a global region, ``dst`` a shared region, ``barrier=bars[i]``): one thread of the scope issues
      the copy; it performs complete-tx of the box's bytes on ``bars[i]`` when the data has landed. With
      ``expect_tx=True`` that thread first does ``mbarrier.arrive.expect_tx`` of those bytes, so initialise the
      barrier with one arrival per copy that signals it (two for an A and a B tile); with ``expect_tx=False`` the
      kernel announces the bytes itself (``T.mbarrier_arrive_expect_tx``). Consumers ``T.mbarrier_wait`` on it.
    * Store (``src`` shared, ``dst`` global, no barrier): every thread of the scope makes its shared writes visible
      to the TMA, the scope synchronises, one thread issues the store and commits it to its bulk async-group;
      ``T.tma_store_wait()`` waits for it before the shared tile is reused or the kernel ends.

    The tensor map comes from the global buffer's shape and the shared buffer's layout; the box is the region's
    shape; elements of a load box outside the global tensor are filled with zeros.

    ``transposed=True`` (loads): the shared region is the global one with its last two dimensions swapped -- an
    MN-major MMA operand ``(rows, K)`` (``mma_shared_layout(..., major="MN")``) filled from a global tensor stored
    ``(K, rows)``, rows contiguous: ``T.tile_copy_async(As, At[k0:k0 + 32, m0:m0 + 128], bars[0],
    transposed=True)``. TMA writes each box row-major, which is the MN-major image of one swizzle atom column, so
    a tile of several atom columns is copied as one box per column, all completing on ``barrier``.

    Example (inside a ``@T.prim_func``): ``T.tile_copy_async(As, A[m0:m0 + 128, k0:k0 + 64], bars[0])``.

        >>> import tvm
        >>> A = tvm.tirx.decl_buffer((128, 64), "float16", "A")
        >>> As = tvm.tirx.decl_buffer((128, 64), "float16", "As", scope="shared")
        >>> bars = tvm.tirx.decl_buffer((1,), "uint64", "bars", scope="shared")
        >>> tile_copy_async(As, A, bars[0]).args[3]
        T.bool(True)
    """
    if printed:  # the printed, positional form: expect_tx, scope[, transposed]
        if len(printed) not in (2, 3):
            raise TypeError(
                "T.tile_copy_async takes expect_tx=, scope= and transposed= by keyword (or positionally, as "
                f"printed); got {len(printed)} extra positional arguments"
            )
        expect_tx, scope = bool(printed[0]), str(printed[1])
        transposed = bool(printed[2]) if len(printed) == 3 else False
    if isinstance(barrier, str | tvm.ir.StringImm) and str(barrier) == "":
        barrier = None
    return tma_copy_call(dst, src, barrier, expect_tx=expect_tx, scope=scope, transposed=transposed)


def tma_store_wait(scope: str = "cta"):
    """``T.tma_store_wait(scope="cta")``: the thread that issued the scope's TMA stores waits until they have read
    shared memory and written global memory, then the scope synchronises.

    Example:
        >>> tma_store_wait()
        T.tma_store_wait("cta")
    """
    return tma_store_wait_call(str(scope))
