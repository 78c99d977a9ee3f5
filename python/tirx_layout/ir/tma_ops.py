"""The Tensor Memory Accelerator's copy as TIR.

* ``T.tile_copy_async(dst, src, barrier, expect_tx=True, scope="cta", transposed=False)`` is an ``Evaluate`` of
  the op ``tirx_layout.tile_copy_async`` with five arguments: the destination and source regions, the mbarrier the
  copy completes on (``bars[i]``; the empty string for a store, which completes through a bulk async-group), the
  expect-tx flag, and the scope (who reaches the op: ``"cta"``, ``"warp"`` or ``"thread"``). A transposed load
  (the shared tile holds the global box with its last two dimensions swapped: an MN-major MMA operand) has a
  sixth, ``True``; the flag is left out when false, so a copy that is not transposed prints as before.
* ``T.tma_store_wait(scope="cta")`` is ``tirx_layout.tma_store_wait`` with the scope: the issuing thread waits until
  every store it committed has finished reading shared memory and writing global memory.

``LowerTma`` (``transform/lower_tma.py``) lowers both; :func:`as_tma_copy` and :func:`as_tma_store_wait` recognise
them.
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
from tvm import tirx

from .tile_ops import full_region, register_op

TMA_COPY_OP_NAME = "tirx_layout.tile_copy_async"
TMA_STORE_WAIT_OP_NAME = "tirx_layout.tma_store_wait"
#: Who reaches a TMA op: the same choices as ``T.tile_mma`` (thread 0 of the CTA, lane 0 of a warp, the thread).
TMA_SCOPES = ("cta", "warp", "thread")
_ABSENT = ""


TMA_COPY_OP = register_op(TMA_COPY_OP_NAME, "a TMA tiled copy between a global and a shared region", "tile_copy_async")
TMA_STORE_WAIT_OP = register_op(TMA_STORE_WAIT_OP_NAME, "wait for this thread's TMA stores", "tma_store_wait")


def _region(operand, name: str):
    if isinstance(operand, tvm.ir.TensorRegion):
        return operand
    if isinstance(operand, tirx.Buffer):
        return full_region(operand)
    raise TypeError(
        f"tile_copy_async: {name} must be a buffer or a region of one (A[0:128, k:k + 64]), got {operand!r}"
    )


def tma_copy_call(dst, src, barrier=None, *, expect_tx: bool = True, scope: str = "cta", transposed: bool = False):
    """The ``tirx_layout.tile_copy_async`` call copying region ``src`` to region ``dst`` with the TMA: a load
    (global ``src``, shared ``dst``) completes on mbarrier ``barrier``; a store (shared ``src``, global ``dst``)
    takes no barrier. ``transposed``: the shared region is the global one with its last two dimensions swapped.

    Example:
        >>> import tvm
        >>> A = tvm.tirx.decl_buffer((256, 64), "bfloat16", "A")
        >>> As = tvm.tirx.decl_buffer((128, 64), "bfloat16", "As", scope="shared")
        >>> bars = tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")
        >>> tma_copy_call(As, A[128:256, 0:64], bars[0])
        T.tile_copy_async(As[0:128, 0:64], A[128:256, 0:64], bars[0], T.bool(True), "cta")
        >>> At = tvm.tirx.decl_buffer((64, 256), "bfloat16", "At")
        >>> tma_copy_call(As, At[0:64, 128:256], bars[0], transposed=True)
        T.tile_copy_async(As[0:128, 0:64], At[0:64, 128:256], bars[0], T.bool(True), "cta", T.bool(True))
    """
    if scope not in TMA_SCOPES:
        raise ValueError(f"tile_copy_async scope must be one of {list(TMA_SCOPES)}, got {scope!r}")
    if not isinstance(expect_tx, bool):
        raise TypeError(f"tile_copy_async: expect_tx must be True or False, got {expect_tx!r}")
    if not isinstance(transposed, bool):
        raise TypeError(f"tile_copy_async: transposed must be True or False, got {transposed!r}")
    if barrier is not None and (not isinstance(barrier, tvm.ir.TensorLoad) or str(barrier.source.dtype) != "uint64"):
        raise TypeError(
            "tile_copy_async: the barrier is an element of a shared uint64 buffer (bars[i], bars = "
            f'T.alloc_shared((n,), "uint64")), got {barrier!r}'
        )
    args = [_region(dst, "dst"), _region(src, "src")]
    args.append(tvm.ir.StringImm(_ABSENT) if barrier is None else barrier)
    args += [tirx.const(expect_tx, "bool"), tvm.ir.StringImm(scope)]
    if transposed:  # left out when false: the printed form of every other copy stays as it was
        args.append(tirx.const(True, "bool"))
    return tvm.ir.Call(TMA_COPY_OP, args, ret_ty="void")


@dataclass(frozen=True)
class TmaCopy:
    """The operands of one ``T.tile_copy_async``: regions ``dst`` and ``src``, ``barrier`` (``None`` for a store),
    ``expect_tx``, ``scope`` and ``transposed``."""

    dst: object
    src: object
    barrier: object
    expect_tx: bool
    scope: str
    transposed: bool = False


def as_tma_copy(stmt) -> TmaCopy | None:
    """The TMA copy ``stmt`` performs (an ``Evaluate`` of ``T.tile_copy_async`` or the call), else ``None``.

    Example:
        >>> import tvm
        >>> A = tvm.tirx.decl_buffer((128, 64), "float16", "A")
        >>> As = tvm.tirx.decl_buffer((128, 64), "float16", "As", scope="shared")
        >>> copy = as_tma_copy(tvm.tirx.Evaluate(tma_copy_call(A, As, scope="warp")))
        >>> copy.barrier, copy.expect_tx, copy.scope, copy.transposed, as_tma_copy(tvm.tirx.Evaluate(0))
        (None, True, 'warp', False, None)
    """
    value = stmt.value if isinstance(stmt, tirx.Evaluate) else stmt
    if not (isinstance(value, tvm.ir.Call) and getattr(value.op, "name", "") == TMA_COPY_OP_NAME):
        return None
    dst, src, barrier, expect_tx, scope, *transposed = value.args
    absent = isinstance(barrier, tvm.ir.StringImm) and str(barrier.value) == _ABSENT
    flipped = bool(transposed[0].value) if transposed else False
    return TmaCopy(dst, src, None if absent else barrier, bool(expect_tx.value), str(scope.value), flipped)


def tma_store_wait_call(scope: str = "cta"):
    """The ``tirx_layout.tma_store_wait`` call.

    Example:
        >>> tma_store_wait_call()
        T.tma_store_wait("cta")
    """
    if scope not in TMA_SCOPES:
        raise ValueError(f"tma_store_wait scope must be one of {list(TMA_SCOPES)}, got {scope!r}")
    return tvm.ir.Call(TMA_STORE_WAIT_OP, [tvm.ir.StringImm(scope)], ret_ty="void")


def as_tma_store_wait(stmt) -> str | None:
    """The scope of the ``T.tma_store_wait`` ``stmt`` is, else ``None``.

    Example:
        >>> import tvm
        >>> as_tma_store_wait(tvm.tirx.Evaluate(tma_store_wait_call("warp"))), as_tma_store_wait(tvm.tirx.Evaluate(0))
        ('warp', None)
    """
    value = stmt.value if isinstance(stmt, tirx.Evaluate) else stmt
    if not (isinstance(value, tvm.ir.Call) and getattr(value.op, "name", "") == TMA_STORE_WAIT_OP_NAME):
        return None
    return str(value.args[0].value)
