"""The CUDA thread hierarchy as data: how many threads one unit of each level below the CTA holds, and where a CTA
thread sits on each thread axis.

A thread axis indexes its subscope level within its scope level (SPEC §1: ``laneid`` is a thread within a warp,
``wid_in_wg`` a warp within a warpgroup), so the place of CTA thread ``t`` on it is ``t // threads(subscope)``, taken
modulo the subscopes per scope unless the scope is the CTA itself. That one rule, read off the axis registry, gives
every built-in thread axis (and any registered axis between the CTA and the thread level) its formula.
"""

from __future__ import annotations

import numpy as np

from ..layout.axis import EXEC_LEVELS, Axis

#: Threads in one unit of each level below the CTA.
LEVEL_THREADS = {"thread": 1, "warp": 32, "warpgroup": 128}
WARP_THREADS = LEVEL_THREADS["warp"]
WARPGROUP_THREADS = LEVEL_THREADS["warpgroup"]
#: The levels a CTA's threads are defined at, coarse to fine (the scopes a tile copy may run at, and ``thread``).
CTA_LEVELS = EXEC_LEVELS[EXEC_LEVELS.index("cta") :]
#: The largest CTA CUDA launches.
MAX_CTA_THREADS = 1024


def running_warps(active) -> np.ndarray:
    """For each warp of a CTA, whether any of its threads is ``active`` (one bool per thread, in CTA order; a last
    partial warp counts as a warp): the warps that execute an instruction.

    Example:
        >>> running_warps(np.arange(80) >= 40).tolist()
        [False, True, True]
    """
    active = np.asarray(active, bool)
    padded = np.zeros(-(-active.shape[0] // WARP_THREADS) * WARP_THREADS, bool)
    padded[: active.shape[0]] = active
    return padded.reshape(-1, WARP_THREADS).any(axis=1)


def level_threads(level: str, cta_threads: int) -> int:
    """Threads in one unit of ``level`` in a CTA of ``cta_threads`` threads (a unit never exceeds the CTA).

    Example:
        >>> level_threads("warpgroup", 256), level_threads("warpgroup", 64), level_threads("cta", 256)
        (128, 64, 256)
    """
    if level == "cta":
        return cta_threads
    if level not in LEVEL_THREADS:
        raise ValueError(f"{level!r} is no execution level inside a CTA; expected one of {CTA_LEVELS}")
    return min(LEVEL_THREADS[level], cta_threads)


def cta_thread_axis(name: str) -> Axis:
    """The thread axis ``name``, checked to index threads, warps or warpgroups inside one CTA.

    Example:
        >>> cta_thread_axis("wid_in_wg").get_scope().name
        'warpgroup'
    """
    axis = Axis.get(name)
    if not axis.is_thread() or axis.get_scope() not in CTA_LEVELS or axis.get_subscope() not in LEVEL_THREADS:
        inside = sorted(a for a in Axis.known() if _inside_cta(Axis.get(a)))
        raise ValueError(f"a register fragment cannot be laid out on axis {name!r} (per-thread axes: {inside})")
    return axis


def _inside_cta(axis: Axis) -> bool:
    return axis.is_thread() and axis.get_scope() in CTA_LEVELS and axis.get_subscope() in LEVEL_THREADS


def axis_within(name: str, level: str) -> bool:
    """Whether thread axis ``name`` tells threads apart only inside one unit of ``level`` (its scope is ``level`` or
    finer), so that every unit of ``level`` sees the same places on it: ``laneid`` is within a warp, ``wid_in_wg``
    within a warpgroup, ``warpid`` only within the CTA. A fragment an op runs at scope ``level`` may use only such
    axes freely: one on a wider axis puts elements on threads of other units.

    Example:
        >>> axis_within("laneid", "warp"), axis_within("wid_in_wg", "warpgroup"), axis_within("warpid", "warpgroup")
        (True, True, False)
    """
    return EXEC_LEVELS.index(cta_thread_axis(name).get_scope()) >= EXEC_LEVELS.index(level)


def thread_unit(name: str) -> int:
    """Threads one step on thread axis ``name`` is worth (its subscope's size): 1 for ``laneid``, 32 for ``warpid``.

    Example:
        >>> thread_unit("laneid"), thread_unit("wid_in_wg"), thread_unit("wgid")
        (1, 32, 128)
    """
    return LEVEL_THREADS[cta_thread_axis(name).get_subscope()]


def thread_axis_place(name: str, tid, cta_threads: int):
    """The place on thread axis ``name`` of CTA thread ``tid`` (an int, an integer numpy array or a PrimExpr), and
    how many places the axis has in a CTA of ``cta_threads`` threads.

    Example:
        >>> thread_axis_place("wid_in_wg", 200, 256), thread_axis_place("laneid", 200, 256)
        ((2, 4), (8, 32))
    """
    axis = cta_thread_axis(name)
    scope, unit = axis.get_scope(), LEVEL_THREADS[axis.get_subscope()]
    count = max(level_threads(scope, cta_threads) // unit, 1)
    # TVM's // and % on expressions are floordiv and floormod, numpy's on integer arrays floor too: one formula.
    step = tid if unit == 1 else tid // unit
    place = step if scope == "cta" else step % (LEVEL_THREADS[scope] // unit)
    return place, count
