"""The device-side calls the lowering emits and the simulator executes, as TIR.

* Helpers: each is a call of a small ``__device__`` CUDA function whose source rides in TVM's ``tirx.cuda.func_call``
  intrinsic (the code generator prints every distinct helper once, above the kernel). Ours are named
  ``tirx_layout_<family>_<what>``, one family per kind of instruction (:data:`HELPER_FAMILIES`); the simulator
  recognises a call by that name alone and runs it with its family's executor. This module is the one home of that
  naming convention; each family's CUDA sources live in ``tirx_layout.ops.helpers.<family>``.
* CTA barriers: the intrinsics that synchronise every thread of a CTA; the warp barrier (``__syncwarp()``).
"""

from __future__ import annotations

from typing import NamedTuple

import tvm
from tvm import tirx

FUNC_CALL = "tirx.cuda.func_call"
#: What every helper's name starts with, before its family.
HELPER_PREFIX = "tirx_layout_"
#: The helper families and the instructions each one's helpers issue (a family name has no underscore, so a
#: helper's name splits into its family and its ``what`` at the first underscore after the prefix).
HELPER_FAMILIES = {
    "mbarrier": "mbarrier objects in shared memory: init, arrive, expect-tx, arrive with expect-tx, wait",
    "tma": "the tensor memory accelerator: bulk tensor loads and stores (cp.async.bulk.tensor), the store wait",
    "sync": "warp and proxy synchronisation: elect.sync, fence.proxy.async",
    "tcgen05": "Blackwell's tensor memory and tensor cores: alloc, ld/st, cp, mma, commit, fences, descriptors",
    "wgmma": "Hopper's warpgroup MMA: wgmma.mma_async, fence, commit_group, wait_group, register fences",
    "math": "floating-point instructions as values: ex2.approx, packed f32x2 add/mul/fma, packing cvt to 16/8 bits",
    "mmasync": "the warp-level MMA of sm_80 onwards: mma.sync.aligned.m16n8k*",
    "cpasync": "asynchronous global-to-shared copies of sm_80 onwards: cp.async, commit_group, wait_group",
    "ldmatrix": "warp-level 8x8 matrix moves between shared memory and registers: ldmatrix, stmatrix",
    "cluster": "thread-block clusters: barrier.cluster, %cluster_ctarank, mapa with a peer mbarrier's arrive, "
    "ld/st.shared::cluster",
}


class HelperCall(NamedTuple):
    """A call of one of our helpers, read back from TIR: its family, its ``what`` and its TIR arguments."""

    family: str
    what: str
    args: list


def helper_name(family: str, what: str) -> str:
    """The CUDA name of helper ``what`` (``"ld_32x32b_x4"``, ``"wait"``, ...) of ``family`` (one of
    :data:`HELPER_FAMILIES`).

    Example:
        >>> helper_name("tcgen05", "wait_ld"), helper_name("mbarrier", "wait")
        ('tirx_layout_tcgen05_wait_ld', 'tirx_layout_mbarrier_wait')
    """
    if family not in HELPER_FAMILIES:
        raise ValueError(f"unknown helper family {family!r}; expected one of {list(HELPER_FAMILIES)}")
    if not what:
        raise ValueError(f"a helper of family {family!r} needs a non-empty name after its family")
    return f"{HELPER_PREFIX}{family}_{what}"


def helper_call(family: str, what: str, source: str, *args):
    """An ``Evaluate`` of helper ``what`` of ``family`` (CUDA ``source``) with ``args``.

    Example:
        >>> "tirx_layout_tcgen05_wait_ld" in str(helper_call("tcgen05", "wait_ld", ""))
        True
    """
    return tirx.Evaluate(tvm.tirx.call_intrin("void", FUNC_CALL, helper_name(family, what), *args, source))


def helper_value(family: str, what: str, source: str, dtype: str, *args):
    """A call of helper ``what`` of ``family`` (CUDA ``source``) that returns a ``dtype`` value: an expression, not
    a statement.

    Example:
        >>> str(helper_value("sync", "elect", "", "uint32").ty.dtype)
        'uint32'
    """
    return tvm.tirx.call_intrin(dtype, FUNC_CALL, helper_name(family, what), *args, source)


def called_helper(node) -> HelperCall | None:
    """The :class:`HelperCall` of a call of one of our helpers (an ``Evaluate`` or the call itself), of any family;
    ``None`` for anything else (another call, or a name of no family of ours).

    Example:
        >>> family, what, args = called_helper(helper_call("tcgen05", "dealloc", "", 0, 32))
        >>> family, what, [int(a) for a in args]
        ('tcgen05', 'dealloc', [0, 32])
        >>> called_helper(helper_call("mbarrier", "arrive_expect_tx", "", 0, 1024))[:2]
        ('mbarrier', 'arrive_expect_tx')
    """
    value = node.value if isinstance(node, tirx.Evaluate) else node
    # The op is registered as tirx.cuda.func_call; printers and older passes may spell the namespace prim.
    if not (isinstance(value, tvm.ir.Call) and getattr(value.op, "name", "").partition(".")[2] == "cuda.func_call"):
        return None
    name = value.args[0]
    if not isinstance(name, tvm.ir.StringImm) or not str(name.value).startswith(HELPER_PREFIX):
        return None
    family, _, what = str(name.value)[len(HELPER_PREFIX) :].partition("_")
    if family not in HELPER_FAMILIES or not what:
        return None
    return HelperCall(family, what, list(value.args[1:-1]))


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
