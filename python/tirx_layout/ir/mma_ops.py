"""Our tensor-core operations as TIR.

* ``T.tile_mma(D, A, B, accumulate, barrier=..., scale_a=..., scale_b=..., scope=..., wait=...)`` is an ``Evaluate``
  of the op ``tirx_layout.tile_mma`` with eight arguments: the regions of D, A and B, the accumulate flag (a boolean
  expression), the completion mbarrier (``bars[i]``, a load of a shared ``uint64`` buffer), the scale-factor
  regions, and the scope; a ninth, ``False``, for ``wait=False`` (the asynchronous form of ``wgmma``, completed by
  ``T.tile_mma_wait``). An operand that is not given is the empty string.
* ``T.tile_mma_wait(pending)`` is the op ``tirx_layout.tile_mma_wait`` with one 32-bit constant: the warpgroup waits
  until at most ``pending`` of its asynchronous tile MMAs are outstanding (``wgmma.wait_group``).
* ``T.mbarrier_init/arrive/expect_tx/arrive_expect_tx/wait(bars[i], ...)`` are ops ``tirx_layout.mbarrier_<what>``
  with the mbarrier and, but for ``arrive``, one 32-bit value (count, bytes or parity).
* ``tirx_layout.tmem_base_address(buffer)`` stands for the TMEM address ``tcgen05.alloc`` returns for a TMEM
  buffer: the MMA lowering writes it, the TMEM lowering (which allocates) replaces it by the address.

``LowerTileMma`` lowers the first two; :func:`as_mma` and :func:`as_mbarrier` recognise them.
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
from tvm import tirx

from ..hw.mbarrier import MAX_ARRIVAL_COUNT, MAX_TX_COUNT, PARITIES
from .tile_ops import full_region, register_op

MMA_OP_NAME = "tirx_layout.tile_mma"
#: Who reaches a tile MMA: every thread of the CTA, one warpgroup (wgmma, sm_90a), one warp or one thread (tcgen05:
#: one elected thread issues).
MMA_SCOPES = ("cta", "warpgroup", "warp", "thread")
MMA_WAIT_OP_NAME = "tirx_layout.tile_mma_wait"
#: The most groups ``T.tile_mma_wait`` may leave pending: our bound (``wgmma.wait_group`` takes an integer
#: constant), well above the stages a shared-memory ring keeps in flight.
MAX_PENDING_GROUPS = 7
#: The mbarrier operations and how many values each takes after the mbarrier.
MBARRIER_OPS = {"init": 1, "arrive": 0, "expect_tx": 1, "arrive_expect_tx": 1, "wait": 1}
MBARRIER_OP_PREFIX = "tirx_layout.mbarrier_"
TMEM_BASE_OP_NAME = "tirx_layout.tmem_base_address"
#: Where an optional operand is absent.
_ABSENT = ""


MMA_OP = register_op(MMA_OP_NAME, "a tensor-core MMA over buffer regions", "tile_mma")
MMA_WAIT_OP = register_op(MMA_WAIT_OP_NAME, "wait for the asynchronous tile MMAs of the warpgroup", "tile_mma_wait")
MBARRIER_OP = {
    what: register_op(MBARRIER_OP_PREFIX + what, f"mbarrier {what}", f"mbarrier_{what}") for what in MBARRIER_OPS
}
TMEM_BASE_OP = register_op(TMEM_BASE_OP_NAME, "the TMEM address of a TMEM buffer", "tmem_base_address")


def _region(operand, name: str):
    if isinstance(operand, tvm.ir.TensorRegion):
        return operand
    if isinstance(operand, tirx.Buffer):
        return full_region(operand)
    raise TypeError(f"tile_mma: {name} must be a buffer or a region of one (acc[0, 0:128, 0:64]), got {operand!r}")


def _mbarrier(bar, what: str):
    if not isinstance(bar, tvm.ir.TensorLoad) or str(bar.source.dtype) != "uint64":
        raise TypeError(
            f"{what}: the mbarrier is an element of a shared uint64 buffer (bars[i], bars = T.alloc_shared((n,), "
            f'"uint64")), got {bar!r}'
        )
    return bar


def _flag(value):
    if isinstance(value, bool | int) and not isinstance(value, tvm.ir.Expr):
        if value not in (0, 1):
            raise ValueError(f"tile_mma: accumulate must be a bool or a boolean expression, got {value!r}")
        return tirx.const(bool(value), "bool")
    if not isinstance(value, tvm.ir.Expr):
        raise TypeError(f"tile_mma: accumulate must be a bool or a boolean expression (k > 0), got {value!r}")
    dtype = str(value.ty)
    if dtype == "bool":
        return value
    if "int" in dtype:
        return value != tirx.const(0, dtype)
    raise TypeError(f"tile_mma: accumulate must be a boolean expression, got {value} of type {dtype}")


def mma_call(
    d, a, b, accumulate=False, *, barrier=None, scale_a=None, scale_b=None, scope: str = "cta", wait: bool = True
):
    """The ``tirx_layout.tile_mma`` call computing ``D[m, n] (+)= sum_k A[m, k] * B[n, k]`` (``D = A @ B.T``).

    Example:
        >>> import tvm
        >>> D = tvm.tirx.decl_buffer((128, 64), "float32", "D", scope="tmem")
        >>> A = tvm.tirx.decl_buffer((128, 16), "float16", "A", scope="shared")
        >>> B = tvm.tirx.decl_buffer((64, 16), "float16", "B", scope="shared")
        >>> mma_call(D, A, B)
        T.tile_mma(D[0:128, 0:64], A[0:128, 0:16], B[0:64, 0:16], T.bool(False), "", "", "", "cta")
        >>> mma_call(D, A, B, wait=False).args[8]
        T.bool(False)
    """
    if scope not in MMA_SCOPES:
        raise ValueError(f"tile_mma scope must be one of {list(MMA_SCOPES)}, got {scope!r}")
    if (scale_a is None) != (scale_b is None):
        given = "scale_a" if scale_a is not None else "scale_b"
        raise ValueError(
            f"tile_mma: {given} without {'scale_b' if given == 'scale_a' else 'scale_a'}; a block-scaled MMA takes "
            "both scale-factor buffers, a dense one neither"
        )
    absent = tvm.ir.StringImm(_ABSENT)
    args = [_region(d, "D"), _region(a, "A"), _region(b, "B"), _flag(accumulate)]
    args.append(absent if barrier is None else _mbarrier(barrier, "tile_mma barrier"))
    for name, sf in (("scale_a", scale_a), ("scale_b", scale_b)):
        args.append(absent if sf is None else _region(sf, name))
    args.append(tvm.ir.StringImm(scope))
    if not _wait_flag(wait):  # the synchronous form keeps eight arguments (and its printed form)
        args.append(tirx.const(False, "bool"))
    return tvm.ir.Call(MMA_OP, args, ret_ty="void")


def _wait_flag(wait):
    """``wait`` as a constant boolean: whether the op completes before the next statement is a property of the code
    emitted, so it cannot depend on a runtime value."""
    if isinstance(wait, tirx.IntImm):
        wait = int(wait.value)
    if not isinstance(wait, bool | int) or wait not in (0, 1):
        raise TypeError(f"tile_mma: wait must be True or False (a constant), got {wait!r}")
    return bool(wait)


@dataclass(frozen=True)
class TileMma:
    """The operands of one ``T.tile_mma``: regions ``d``, ``a``, ``b``; ``accumulate`` (a boolean expression);
    ``barrier`` (``bars[i]``, ``None`` for the synchronous form); ``scale_a``/``scale_b`` (regions or ``None``);
    ``scope``; ``wait`` (``False``: the asynchronous form, completed by ``T.tile_mma_wait``)."""

    d: object
    a: object
    b: object
    accumulate: object
    barrier: object
    scale_a: object
    scale_b: object
    scope: str
    wait: bool = True


def _given(arg):
    return None if isinstance(arg, tvm.ir.StringImm) and str(arg.value) == _ABSENT else arg


def as_mma(stmt) -> TileMma | None:
    """The tile MMA ``stmt`` performs (an ``Evaluate`` of ``T.tile_mma``, or the call itself), else ``None``.

    Example:
        >>> import tvm
        >>> D = tvm.tirx.decl_buffer((128, 64), "float32", "D", scope="tmem")
        >>> A = tvm.tirx.decl_buffer((128, 16), "float16", "A", scope="shared")
        >>> B = tvm.tirx.decl_buffer((64, 16), "float16", "B", scope="shared")
        >>> mma = as_mma(tvm.tirx.Evaluate(mma_call(D, A, B, True, scope="warp")))
        >>> mma.scope, bool(mma.accumulate), mma.barrier, mma.wait, as_mma(tvm.tirx.Evaluate(0))
        ('warp', True, None, True, None)
    """
    value = stmt.value if isinstance(stmt, tirx.Evaluate) else stmt
    if not (isinstance(value, tvm.ir.Call) and getattr(value.op, "name", "") == MMA_OP_NAME):
        return None
    d, a, b, accumulate, barrier, scale_a, scale_b, scope, *rest = value.args
    wait = bool(rest[0].value) if rest else True
    return TileMma(d, a, b, accumulate, _given(barrier), _given(scale_a), _given(scale_b), str(scope.value), wait)


def mma_wait_call(pending: int):
    """The ``tirx_layout.tile_mma_wait`` call: the warpgroup waits until at most ``pending`` (a constant in
    0..``MAX_PENDING_GROUPS``) of its asynchronous tile MMAs (``T.tile_mma(..., wait=False)``) are outstanding.

    Example:
        >>> mma_wait_call(1)
        T.tile_mma_wait(1)
    """
    if isinstance(pending, tirx.IntImm):
        pending = int(pending.value)
    if isinstance(pending, bool) or not isinstance(pending, int):
        raise TypeError(f"T.tile_mma_wait: pending must be an integer constant (wgmma.wait_group's), got {pending!r}")
    if not 0 <= pending <= MAX_PENDING_GROUPS:
        raise ValueError(f"T.tile_mma_wait: pending must be in 0..{MAX_PENDING_GROUPS}, got {pending}")
    return tvm.ir.Call(MMA_WAIT_OP, [tirx.IntImm("int32", pending)], ret_ty="void")


def as_mma_wait(stmt) -> int | None:
    """The ``pending`` count of a ``T.tile_mma_wait`` (an ``Evaluate`` or the call), else ``None``.

    Example:
        >>> as_mma_wait(tvm.tirx.Evaluate(mma_wait_call(2))), as_mma_wait(tvm.tirx.Evaluate(0))
        (2, None)
    """
    value = stmt.value if isinstance(stmt, tirx.Evaluate) else stmt
    if not (isinstance(value, tvm.ir.Call) and getattr(value.op, "name", "") == MMA_WAIT_OP_NAME):
        return None
    return int(value.args[0].value)


#: The range of each operation's value (the arrival count, transaction bytes, the phase parity).
_VALUE_RANGES = {
    "init": (1, MAX_ARRIVAL_COUNT, "the arrival count"),
    "expect_tx": (0, MAX_TX_COUNT, "the transaction byte count"),
    "arrive_expect_tx": (0, MAX_TX_COUNT, "the transaction byte count"),
    "wait": (PARITIES[0], PARITIES[-1], "the phase parity"),
}


def mbarrier_call(what: str, bar, value=None):
    """The ``tirx_layout.mbarrier_<what>`` call on mbarrier ``bar`` (``bars[i]``) with ``value`` (the arrival count
    for ``init``, transaction bytes for ``expect_tx``/``arrive_expect_tx``, the phase parity for ``wait``).

    Example:
        >>> import tvm
        >>> bars = tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")
        >>> mbarrier_call("wait", bars[1], 0)
        T.mbarrier_wait(bars[1], T.uint32(0))
    """
    if what not in MBARRIER_OPS:
        raise ValueError(f"unknown mbarrier operation {what!r}; expected one of {sorted(MBARRIER_OPS)}")
    args = [_mbarrier(bar, f"T.mbarrier_{what}")]
    if MBARRIER_OPS[what]:
        if value is None:
            raise TypeError(f"T.mbarrier_{what} takes the mbarrier and a value")
        if isinstance(value, int) and not isinstance(value, bool):
            low, high, meaning = _VALUE_RANGES[what]
            if not low <= value <= high:
                raise ValueError(f"T.mbarrier_{what}: {meaning} must be in {low}..{high} (PTX ISA), got {value}")
        if isinstance(value, tvm.ir.Expr) and "int" not in str(value.ty):
            raise TypeError(f"T.mbarrier_{what}: the value must be an integer, got {value} of type {value.ty}")
        if not isinstance(value, tvm.ir.Expr):
            value = tirx.const(value, "uint32")
        elif str(value.ty) != "uint32":  # (a uint32 value is kept as it is: a printed kernel parses back equal)
            value = tirx.Cast("uint32", value)
        args.append(value)
    elif value is not None:
        raise TypeError(f"T.mbarrier_{what} takes the mbarrier only, got also {value!r}")
    return tvm.ir.Call(MBARRIER_OP[what], args, ret_ty="void")


@dataclass(frozen=True)
class MbarrierOp:
    """One ``T.mbarrier_<what>``: ``what``, the mbarrier (``bars[i]``) and its value (``None`` for ``arrive``)."""

    what: str
    bar: object
    value: object


def as_mbarrier(stmt) -> MbarrierOp | None:
    """The mbarrier operation ``stmt`` performs, else ``None``.

    Example:
        >>> import tvm
        >>> bars = tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")
        >>> op = as_mbarrier(tvm.tirx.Evaluate(mbarrier_call("arrive", bars[0])))
        >>> op.what, op.value
        ('arrive', None)
    """
    value = stmt.value if isinstance(stmt, tirx.Evaluate) else stmt
    if not isinstance(value, tvm.ir.Call):
        return None
    name = getattr(value.op, "name", "")
    if not name.startswith(MBARRIER_OP_PREFIX) or name[len(MBARRIER_OP_PREFIX) :] not in MBARRIER_OPS:
        return None
    return MbarrierOp(name[len(MBARRIER_OP_PREFIX) :], value.args[0], value.args[1] if len(value.args) > 1 else None)


def tmem_base_address(buffer):
    """The TMEM address (``uint32``: lane << 16 | column) of TMEM ``buffer``'s allocation, to be filled in by the
    pass that allocates it.

    Example:
        >>> import tvm
        >>> acc = tvm.tirx.decl_buffer((128, 64), "float32", "acc", scope="tmem")
        >>> str(tmem_base_address(acc).ty), tmem_base_buffer(tmem_base_address(acc)).same_as(acc)
        ('uint32', True)
    """
    return tvm.ir.Call(TMEM_BASE_OP, [buffer], ret_ty="uint32")


def tmem_base_buffer(expr):
    """The TMEM buffer whose base address ``expr`` stands for, else ``None``.

    Example:
        >>> tmem_base_buffer(tvm.tirx.const(0, "uint32")) is None
        True
    """
    if isinstance(expr, tvm.ir.Call) and getattr(expr.op, "name", "") == TMEM_BASE_OP_NAME:
        return expr.args[0]
    return None
