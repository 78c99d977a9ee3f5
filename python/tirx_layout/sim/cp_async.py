"""The simulator's own model of ``cp.async`` and its commit and wait groups, written from the PTX ISA.

Written from the PTX ISA, "Data Movement and Conversion Instructions": ``cp.async``, ``cp.async.commit_group``,
``cp.async.wait_group`` -- never from the project's lowering. What it relies on, restated:

* ``cp.async.{ca,cg}.shared{::cta}.global [dst], [src], cp-size{, src-size}``: the executing thread starts an
  asynchronous copy of ``cp-size`` (4, 8 or 16; ``.cg`` only 16) bytes to shared ``dst`` from global ``src``, both
  aligned to ``cp-size``; only the first ``src-size`` bytes (at most ``cp-size``) are read from ``src``, the rest of
  ``dst`` is filled with zeros. The copy is weak and its write happens at some point before the thread's wait that
  covers it: until then, reading or writing ``dst`` is a race.
* ``cp.async.commit_group``: the thread's ``cp.async`` not yet committed become one group (possibly empty).
  ``cp.async.wait_group N``: the thread waits until at most its ``N`` most recent groups are pending; every older
  group's copies have completed and their writes are visible to the thread. Other threads see them through the
  usual ordering (a barrier after the wait). A ``cp.async`` not committed is not waited for.

How the simulator applies them. The helpers are those ``ir/device_calls`` names in the ``cpasync`` family:
``copy_<n>(dst, src, src_size)``, ``commit_group()``, ``wait_group_<n>()``. A copy reads its source when issued
(checked as a load by the issuing thread) and marks its destination in flight (``memory.InFlightWrite``): any load
or store of it by any thread is a :class:`DataRace` until a ``wait_group`` of the issuing thread retires the
group, which writes the data as a store by that thread (so another thread reading it without a barrier after the
wait races that store).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from tvm.ir import Call

from .dispatch import HelperTable
from .memory import InFlightWrite, OutOfBounds, SimulationError

__all__ = ["HELPERS", "CopyGroups"]

#: The hint of a race on an in-flight destination.
_HINT = (
    "wait for its group (T.tile_copy_async_wait: cp.async.wait_group, then a barrier for the other threads) before "
    "touching the tile"
)


@dataclass
class _Copy:
    memory: object
    elements: np.ndarray
    values: np.ndarray
    pending: InFlightWrite


@dataclass
class CopyGroups:
    """Per thread of the CTA: its copies not yet committed, and its committed groups not yet retired, oldest
    first (what ``commit_group`` closes and ``wait_group`` retires).

    Example:
        >>> groups = CopyGroups(threads=2)
        >>> groups.uncommitted, groups.groups
        ([[], []], [[], []])
    """

    threads: int
    uncommitted: list = field(default_factory=list)
    groups: list = field(default_factory=list)

    def __post_init__(self):
        self.uncommitted = [[] for _ in range(self.threads)]
        self.groups = [[] for _ in range(self.threads)]


def _state(interp) -> CopyGroups:
    if interp.cp_async is None:
        interp.cp_async = CopyGroups(interp.count)
    return interp.cp_async


def _element(interp, expr, what: str):
    if not (isinstance(expr, Call) and expr.op.name.endswith("address_of")):
        raise SimulationError(f"{what} needs the address of a buffer element, got {expr}")
    load = expr.args[0]
    memory = interp._memory(load.source)
    index = np.asarray(interp.element_index(load.source, load.indices), np.int64)
    return memory, np.broadcast_to(index, (interp.count,))


def _copy(interp, args, n: str) -> None:
    nbytes = int(n)
    what = f"cp.async of {nbytes} bytes"
    if nbytes not in (4, 8, 16) or len(args) != 3:
        raise SimulationError(f"{what}: cp-size is 4, 8 or 16 and the helper takes (dst, src, src_size)")
    dst, dst_index = _element(interp, args[0], f"{what}'s destination")
    src, src_index = _element(interp, args[1], f"{what}'s source")
    if dst.scope != "shared" or src.scope != "global":
        raise SimulationError(
            f"{what} copies global -> shared, not {src.name} ({src.scope}) -> {dst.name} ({dst.scope})"
        )
    element = dst.data.dtype.itemsize
    if src.data.dtype.itemsize != element or nbytes % element:
        raise SimulationError(f"{what}: {src.name} and {dst.name} must hold {nbytes // max(element, 1)} whole elements")
    sizes = np.broadcast_to(np.asarray(interp.eval(args[2]), np.int64), (interp.count,))
    base = interp.launch.shared_space.base(dst)
    state = _state(interp)
    block, interval = interp.launch.block, interp.launch.interval
    count = nbytes // element
    for t in np.nonzero(interp.mask)[0].tolist():
        thread = block * interp.count + t
        size = int(sizes[t])
        if not 0 <= size <= nbytes or size % element:
            raise SimulationError(f"{what} by thread {t}: src-size {size} must be whole elements in 0..{nbytes}")
        if (base + int(dst_index[t]) * element) % nbytes or (int(src_index[t]) * element) % nbytes:
            raise SimulationError(
                f"{what} by thread {t}: {dst.name}[{int(dst_index[t])}] and {src.name}[{int(src_index[t])}] must be "
                f"{nbytes}-byte aligned"
            )
        elements = int(dst_index[t]) + np.arange(count)
        if elements[0] < 0 or elements[-1] >= dst.data.size:
            raise OutOfBounds(f"{what} by thread {t} writes {dst.name}[{elements[0]}..{elements[-1]}] past its end")
        values = np.zeros(count, dst.data.dtype)
        read = size // element
        if read:
            values[:read] = src.load(
                int(src_index[t]) + np.arange(read), np.array([thread]), block, interval, interp.sync
            )
        pending = InFlightWrite(elements, f"cp.async issued by thread {t}", _HINT)
        dst.begin_in_flight(pending, thread)
        state.uncommitted[t].append(_Copy(dst, elements, values, pending))


def _commit(interp, args) -> None:
    state = _state(interp)
    for t in np.nonzero(interp.mask)[0].tolist():
        state.groups[t].append(state.uncommitted[t])
        state.uncommitted[t] = []


def _wait(interp, args, n: str) -> None:
    keep = int(n)
    state = _state(interp)
    block, interval = interp.launch.block, interp.launch.interval
    for t in np.nonzero(interp.mask)[0].tolist():
        while len(state.groups[t]) > keep:
            for copy in state.groups[t].pop(0):
                copy.memory.end_in_flight(copy.pending)
                thread = np.array([block * interp.count + t])
                copy.memory.store(copy.elements, copy.values, thread, block, interval, interp.sync)


#: The ``cpasync`` family's helpers.
HELPERS = HelperTable(
    "cpasync",
    {"commit_group": _commit},
    [(r"copy_(?P<n>\d+)", _copy), (r"wait_group_(?P<n>\d+)", _wait)],
)
