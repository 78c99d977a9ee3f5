"""The ``sync`` helpers' executor (``ir/device_calls`` family ``sync``), from the PTX ISA:

* ``elect``: ``elect.sync _|p, 0xffffffff`` (``warps.elect_sync``): 1 on the lowest lane of each executing warp;
* ``fence_proxy_async``: ``fence.proxy.async.shared::cta`` -- the executing threads' generic-proxy writes to shared
  memory become visible to the async proxy, through which ``tcgen05.mma``/``cp``, ``wgmma`` and TMA stores read
  (``memory.Memory.fence_proxy``); an async-proxy read of a write its writer has not fenced is an error there.

Example:
    >>> HELPERS.knows("elect"), HELPERS.knows("fence_proxy_async"), HELPERS.knows("fence_proxy_global")
    (True, True, False)
"""

from __future__ import annotations

import numpy as np

from . import mbarrier
from .dispatch import HelperTable
from .memory import SimulationError, SyncClocks, join
from .warps import elect_sync, whole_warps

__all__ = ["HELPERS"]


def _elect(interp, args):
    return elect_sync(interp)


def _fence_proxy_async(interp, args) -> None:
    threads = interp.global_ids[interp.mask]
    for memory in {id(m): m for m in interp.memories.values()}.values():
        if memory.scope == "shared":
            memory.fence_proxy(threads)


class NamedBarrier:
    """One of the CTA's 16 hardware barriers: the arrivals of its current phase (threads and what they publish),
    the threads waiting in a ``bar.sync`` (by the phase they arrived in), and what each completed phase published.

    Example:
        >>> bar = NamedBarrier(3)
        >>> bar.arrive([0, 1], 4, None, []), bar.phase
        (False, 0)
        >>> bar.arrive([2, 3], 4, None, []), bar.phase
        (True, 1)
    """

    def __init__(self, number: int):
        self.number = number
        self.phase = 0
        self.expected = None  # the thread count the current phase's arrivals named
        self.arrived: list = []  # threads arrived in the current phase
        self.published = None  # what they released
        self.completed: dict = {}  # phase -> (what its arrivals published, its arriving threads)
        self.waiting: dict = {}  # thread -> the phase its bar.sync arrived in

    def arrive(self, threads, expected: int, published, reads) -> bool:
        """Count ``threads`` (naming ``expected``) into the current phase; whether they completed it."""
        if self.expected is not None and self.expected != expected:
            raise SimulationError(
                f"named barrier {self.number}: arrivals of one phase name {self.expected} and {expected} threads"
            )
        self.expected = expected
        self.arrived += list(threads)
        self.published = join(self.published, published)
        if len(self.arrived) > expected:
            raise SimulationError(
                f"named barrier {self.number} (bar.sync/bar.arrive {self.number}, {expected}): {len(self.arrived)} "
                f"threads arrive in phase {self.phase}, more than the {expected} that complete it"
            )
        if len(self.arrived) < expected:
            return False
        self.completed[self.phase] = (self.published, np.asarray(self.arrived))
        self.phase += 1
        self.expected, self.arrived, self.published = None, [], None
        return True


def _barriers_of(interp, args):
    """The named barriers the executing threads name, with those threads (CTA-local ids), and the expected count."""
    whole_warps(interp, "bar.sync/bar.arrive")
    active = np.nonzero(interp.mask)[0]
    numbers = np.broadcast_to(np.asarray(interp.eval(args[0])), (interp.count,))[active]
    expected = int(interp.eval(args[1]))
    if interp.sync is None:
        interp.sync = SyncClocks(interp.count, interp.launch.block * interp.count)
    for number in np.unique(numbers).tolist():
        bar = interp.named_barriers.setdefault(number, NamedBarrier(number))
        yield bar, active[numbers == number], expected


def _release(interp, threads):
    published = None
    for t in threads:
        published = join(published, interp.sync.release(int(t)))
    return published


def _named_barrier_arrive(interp, args) -> None:
    for bar, threads, expected in _barriers_of(interp, args):
        bar.arrive(threads, expected, _release(interp, threads), interp.async_reads)


def _named_barrier_sync(interp, args) -> None:
    blocked = []
    for bar, threads, expected in _barriers_of(interp, args):
        new = [t for t in threads.tolist() if t not in bar.waiting]
        if new:  # a retried bar.sync (after it blocked) arrives only once
            phase = bar.phase
            bar.arrive(new, expected, _release(interp, new), interp.async_reads)
            bar.waiting.update(dict.fromkeys(new, phase))
        if any(bar.waiting[t] >= bar.phase for t in threads.tolist()):
            blocked.append((bar, expected))
    if blocked:
        bar, expected = blocked[0]
        raise mbarrier.WaitBlocked(
            f"bar.sync {bar.number}, {expected}: {len(bar.arrived)} of {expected} threads have arrived in phase "
            f"{bar.phase}"
        )
    for bar, threads, _ in _barriers_of(interp, args):
        for t in threads.tolist():
            published, arrivers = bar.completed[bar.waiting.pop(t)]
            interp.sync.acquire(t, published)
            for read in interp.async_reads:  # an arriver saw an asynchronous read finish: so has the waiter
                if read.observed[arrivers].any():
                    read.observed[t] = True
    mbarrier.drop_async_reads(interp, lambda read: read.observed.all())


#: The sync executor: every helper by name.
HELPERS = HelperTable(
    "sync",
    {
        "elect": _elect,
        "fence_proxy_async": _fence_proxy_async,
        "named_barrier_sync": _named_barrier_sync,
        "named_barrier_arrive": _named_barrier_arrive,
    },
)
