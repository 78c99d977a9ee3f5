"""The device-side calls the lowering emits and the simulator executes, as TIR.

* Helpers: each is a call of a small ``__device__`` CUDA function whose source rides in TVM's ``tirx.cuda.func_call``
  intrinsic (the code generator prints every distinct helper once, above the kernel). Ours are named
  ``tirx_layout_<family>_<what>``: family ``tcgen05`` (tensor memory, ``tcgen05.mma``, mbarriers, TMA) or ``wgmma``
  (Hopper's warpgroup MMA); the simulator recognises a call by that name alone. This module is the one home of
  that naming convention.
* CTA barriers: the intrinsics that synchronise every thread of a CTA; the warp barrier (``__syncwarp()``).
"""

from __future__ import annotations

import tvm
from tvm import tirx

FUNC_CALL = "tirx.cuda.func_call"
#: The helper families and the prefix of each one's names.
HELPER_PREFIXES = {"tcgen05": "tirx_layout_tcgen05_", "wgmma": "tirx_layout_wgmma_"}
#: The prefix of the tcgen05 family (the default one).
HELPER_PREFIX = HELPER_PREFIXES["tcgen05"]


def _prefix(family: str) -> str:
    if family not in HELPER_PREFIXES:
        raise ValueError(f"unknown helper family {family!r}; expected one of {sorted(HELPER_PREFIXES)}")
    return HELPER_PREFIXES[family]


def helper_name(what: str, family: str = "tcgen05") -> str:
    """The CUDA name of helper ``what`` (``"ld_32x32b_x4"``, ``"alloc"``, ...) of ``family``.

    Example:
        >>> helper_name("wait_ld"), helper_name("fence", family="wgmma")
        ('tirx_layout_tcgen05_wait_ld', 'tirx_layout_wgmma_fence')
    """
    return _prefix(family) + what


def helper_call(what: str, source: str, *args, family: str = "tcgen05"):
    """An ``Evaluate`` of helper ``what`` of ``family`` (CUDA ``source``) with ``args``.

    Example:
        >>> "tirx_layout_tcgen05_wait_ld" in str(helper_call("wait_ld", ""))
        True
    """
    return tirx.Evaluate(tvm.tirx.call_intrin("void", FUNC_CALL, helper_name(what, family), *args, source))


def helper_value(what: str, source: str, dtype: str, *args, family: str = "tcgen05"):
    """A call of helper ``what`` of ``family`` (CUDA ``source``) that returns a ``dtype`` value: an expression, not a
    statement.

    Example:
        >>> str(helper_value("elect_sync", "", "uint32").ty.dtype)
        'uint32'
    """
    return tvm.tirx.call_intrin(dtype, FUNC_CALL, helper_name(what, family), *args, source)


def called_helper(node, family: str = "tcgen05") -> tuple[str, list] | None:
    """``(what, arguments)`` of a call of one of our helpers of ``family`` (an ``Evaluate`` or the call itself), else
    ``None``.

    Example:
        >>> what, args = called_helper(helper_call("dealloc", "", 0, 32))
        >>> what, [int(a) for a in args]
        ('dealloc', [0, 32])
        >>> fence = helper_call("fence", "", family="wgmma")
        >>> called_helper(fence), called_helper(fence, "wgmma")
        (None, ('fence', []))
    """
    prefix = _prefix(family)
    value = node.value if isinstance(node, tirx.Evaluate) else node
    # The op is registered as tirx.cuda.func_call; printers and older passes may spell the namespace prim.
    if not (isinstance(value, tvm.ir.Call) and getattr(value.op, "name", "").partition(".")[2] == "cuda.func_call"):
        return None
    name = value.args[0]
    if not isinstance(name, tvm.ir.StringImm) or not str(name.value).startswith(prefix):
        return None
    return str(name.value)[len(prefix) :], list(value.args[1:-1])


#: The TIR intrinsics that are a barrier of the whole CTA.
CTA_BARRIERS = ("tirx.cuda.cta_sync", "tirx.tvm_storage_sync")


def cta_barrier():
    """An ``Evaluate`` of a CTA-wide barrier (``__syncthreads()``).

    Example:
        >>> is_cta_barrier(cta_barrier())
        True
    """
    return tirx.Evaluate(tvm.tirx.call_intrin("", CTA_BARRIERS[0]))


def is_cta_barrier(node) -> bool:
    """Whether ``node`` (an ``Evaluate`` or a call) is a CTA-wide barrier, whichever namespace spells it.

    Example:
        >>> is_cta_barrier(tvm.tirx.Evaluate(0))
        False
    """
    value = node.value if isinstance(node, tirx.Evaluate) else node
    if not isinstance(value, tvm.ir.Call):
        return False
    name = getattr(value.op, "name", "").partition(".")[2]
    return name in {b.partition(".")[2] for b in CTA_BARRIERS}


#: The TIR intrinsic that is a barrier of the threads of one warp (``__syncwarp()``).
WARP_BARRIER = "tirx.cuda.warp_sync"


def warp_barrier():
    """An ``Evaluate`` of a barrier of the current warp's threads (``__syncwarp()``).

    Example:
        >>> is_warp_barrier(warp_barrier()), is_cta_barrier(warp_barrier())
        (True, False)
    """
    return tirx.Evaluate(tvm.tirx.call_intrin("", WARP_BARRIER))


def is_warp_barrier(node) -> bool:
    """Whether ``node`` (an ``Evaluate`` or a call) is a barrier of one warp.

    Example:
        >>> is_warp_barrier(tvm.tirx.Evaluate(0))
        False
    """
    value = node.value if isinstance(node, tirx.Evaluate) else node
    return isinstance(value, tvm.ir.Call) and getattr(value.op, "name", "").partition(".")[2] == "cuda.warp_sync"
