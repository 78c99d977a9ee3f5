"""Thread-block clusters in the simulator, modelled from the PTX ISA (``barrier.cluster``, ``mapa``,
``mbarrier.arrive`` with ``.shared::cluster``, ``ld``/``st.shared::cluster``, ``%cluster_ctarank``) and the CUDA
Programming Guide ("Distributed Shared Memory"), never from the lowering.

The CTAs of one cluster run together (``simulate`` interleaves them: each runs until every one of its threads waits,
then the next; a round in which none moves is a hang), so a CTA that waits for a peer really waits for it. They
share one :class:`~tirx_layout.sim.memory.SyncClocks` (a vector clock per thread of the cluster), so the ordering
the ISA gives across CTAs is the ordering the race checks use:

* ``barrier.cluster.arrive.release`` / ``wait.acquire`` (helpers ``arrive``, ``wait``): a phase completes when every
  thread of every CTA of the cluster has arrived; a wait returns once the phase the thread arrived in has completed,
  and acquires what every arrival released. A thread arriving twice without waiting, or waiting without arriving,
  is an error; a wait no arrival can complete is a hang;
* ``rank``: ``%cluster_ctarank``;
* ``arrive_peer(&bar, rank)``: ``mapa`` maps the address to the same offset in CTA ``rank``'s shared memory; the
  arrive (release, cluster scope) counts on that CTA's mbarrier and publishes the arriving thread's clock;
* ``load_<t>`` / ``store_<t>(&x, rank[, value])``: the element at ``&x``'s offset in CTA ``rank``'s shared memory,
  read or written as an access of the executing thread (checked against every other access of that element, the
  peer's own threads' included, through the cluster's clocks).

A CTA may reach a peer's shared memory only while the peer runs: the CUDA Programming Guide requires a cluster
barrier before the first access (every CTA has started) and one before a CTA exits (no peer still accesses its
shared memory). An access to a peer that has not yet placed the buffer is a :class:`DataRace`; one to a peer that
has exited is a :class:`SimulationError`.

Example:
    >>> HELPERS.knows("arrive"), HELPERS.knows("load_float32"), HELPERS.knows("arrive_peer")
    (True, True, True)
"""

from __future__ import annotations

import math

import numpy as np

from . import mbarrier
from .addresses import shared_address
from .dispatch import HelperTable
from .memory import DataRace, SimulationError, SyncClocks, join

__all__ = ["HELPERS", "ClusterRun", "peer_element", "peer_mbarrier", "peer_of"]

_START_HINT = (
    "a CTA may access a peer's shared memory only after a cluster barrier (T.cluster_sync()) that every CTA of the "
    "cluster reaches after it starts (CUDA Programming Guide, Distributed Shared Memory)"
)
_EXIT_HINT = (
    "a CTA must not exit while a peer may still access its shared memory: end with a cluster barrier "
    "(T.cluster_sync()) after the last access"
)


class ClusterRun:
    """One cluster of a launch as the simulator runs it: its CTAs' interpreters by rank, which have exited, the
    clocks they share, and the cluster barrier's state (per thread of the cluster: arrivals and completed waits;
    per phase: what its arrivals released).

    Example:
        >>> run = ClusterRun((2, 1, 1), threads=32, first_block=4)
        >>> run.size, run.clocks.base, run.clocks.clock.size
        (2, 128, 64)
    """

    def __init__(self, shape, threads: int, first_block: int):
        self.shape = tuple(shape)
        self.size = math.prod(self.shape)
        self.count = threads
        self.clocks = SyncClocks(self.size * threads, first_block * threads)
        self.interpreters: list = [None] * self.size
        self.finished = [False] * self.size
        self.arrived = np.zeros(self.size * threads, np.int64)
        self.waited = np.zeros(self.size * threads, np.int64)
        self.published: dict = {}  # phase -> what its arrivals released

    def rows(self, interp) -> np.ndarray:
        """The cluster-wide rows of ``interp``'s active threads."""
        return interp.global_ids[interp.mask] - self.clocks.base

    def cta_of(self, row: int) -> tuple[int, int]:
        """The rank and local thread of cluster-wide ``row``."""
        return divmod(int(row), self.count)


def _run(interp) -> ClusterRun:
    """The cluster ``interp``'s CTA runs in; a launch without clusters is a cluster of one CTA (PTX ISA: every CTA
    is in a cluster, of shape 1 x 1 x 1 unless the launch says otherwise)."""
    if interp.launch.cluster is None:
        run = ClusterRun((1, 1, 1), interp.count, interp.launch.block)
        run.clocks = mbarrier.clocks(interp)
        run.interpreters[0] = interp
        interp.launch.cluster = run
    return interp.launch.cluster


def peer_of(interp, rank: int, what: str, exited: bool = False):
    """The interpreter of CTA ``rank`` of ``interp``'s cluster; ``SimulationError`` naming ``what`` for a rank
    outside the cluster or (unless ``exited``) a CTA that has exited."""
    run = _run(interp)
    if not 0 <= rank < run.size:
        raise SimulationError(f"{what} names CTA rank {rank}; the cluster {run.shape} has ranks 0..{run.size - 1}")
    if run.finished[rank] and not exited:
        raise SimulationError(
            f"{what} reaches the shared memory of CTA {rank} of the cluster after it exited; {_EXIT_HINT}"
        )
    return run.interpreters[rank]


def peer_element(interp, memory, index: np.ndarray, rank: int, what: str):
    """``mapa``: the shared memory of CTA ``rank`` at the byte offsets of ``memory``'s elements ``index`` in
    ``interp``'s own CTA, as (that CTA's :class:`~tirx_layout.sim.memory.Memory`, its element indices).

    Example: ``peer_element(interp, xs_memory, np.array([3]), 1, "ld.shared::cluster")`` is CTA 1's ``xs`` and
    ``[3]``. (A CTA that has exited still answers: the access is checked for races first, then refused.)
    """
    peer = peer_of(interp, rank, what, exited=True)
    size = memory.data.dtype.itemsize
    addresses = interp.launch.shared_space.base(memory) + np.asarray(index, np.int64) * size
    try:
        target, offset = peer.launch.shared_space.find(int(addresses.min()), size, what)
    except SimulationError:
        raise DataRace(
            f"data race on shared {memory.name} of CTA {rank}: {what} before CTA {rank} has allocated it; {_START_HINT}"
        ) from None
    base = int(addresses.min()) - offset
    if target.data.dtype != memory.data.dtype or int(addresses.max()) + size > base + target.data.nbytes:
        raise SimulationError(f"{what}: CTA {rank}'s shared memory at {memory.name}'s offsets is not a {memory.name}")
    return target, (addresses - base) // size


def peer_mbarrier(interp, thread: int, memory, index: int, rank: int, what: str):
    """The mbarrier at element ``index`` of CTA ``rank``'s shared ``memory`` that local ``thread`` of ``interp``
    signals (``what``): initialised, and for another CTA's, that initialisation ordered before this use by the
    cluster's clocks (``mbarrier.init`` then ``fence.mbarrier_init.release.cluster``, then a cluster barrier: PTX
    ISA, mbarrier; otherwise a :class:`DataRace`).

    Example: ``peer_mbarrier(interp, 0, bars_memory, 0, 1, "mbarrier.arrive.shared::cluster")``.
    """
    bar = mbarrier.find(peer_of(interp, rank, what), memory, index, what)
    if rank != interp.launch.rank:
        clocks = mbarrier.clocks(interp)
        me = np.array([interp.launch.block * interp.count + thread])
        if not clocks.ordered(me, np.array([bar.init_global]), np.array([bar.init_epoch]))[0]:
            raise DataRace(
                f"data race on shared {bar.name} of CTA {rank}: {what} uses the mbarrier before its initialisation "
                "is ordered before the use; initialise, then a cluster barrier (T.cluster_sync()), before a peer "
                "signals it"
            )
    return bar


def _arrive(interp, args) -> None:
    run = _run(interp)
    for row in run.rows(interp).tolist():
        phase = int(run.arrived[row])
        if phase > run.waited[row]:
            rank, thread = run.cta_of(row)
            raise SimulationError(
                f"thread {thread} of CTA {rank} arrives at the cluster barrier again before waiting for phase "
                f"{phase - 1} (barrier.cluster.arrive twice with no wait between)"
            )
        run.published[phase] = join(run.published.get(phase), run.clocks.release(row))
        run.arrived[row] += 1


def _wait(interp, args) -> None:
    run = _run(interp)
    rows = run.rows(interp)
    for row in rows.tolist():
        phase = int(run.waited[row])
        if run.arrived[row] <= phase:
            rank, thread = run.cta_of(row)
            raise SimulationError(
                f"thread {thread} of CTA {rank} waits at the cluster barrier without arriving first "
                "(barrier.cluster.wait needs a barrier.cluster.arrive before it)"
            )
        if run.arrived.min() <= phase:
            late = sorted({run.cta_of(r)[0] for r in np.nonzero(run.arrived <= phase)[0].tolist()})
            rank, thread = run.cta_of(row)
            raise mbarrier.WaitBlocked(
                f"cluster barrier wait by thread {thread} of CTA {rank} for phase {phase} never returns: threads of "
                f"CTA(s) {late} have not arrived"
            )
    for row in rows.tolist():
        run.clocks.acquire(row, run.published[int(run.waited[row])])
        run.waited[row] += 1
    if interp.mask.all():  # every thread of the CTA waited: a CTA barrier too
        interp.launch.interval += 1
        if interp.tmem is not None:  # ... for the tcgen05 ordering too (a thread-sync point of every warp)
            interp.tmem.order.barrier()


def _rank(interp, args):
    return np.full(interp.count, interp.launch.rank, np.uint32)


def _ranks(interp, arg) -> np.ndarray:
    return np.broadcast_to(np.asarray(interp.eval(arg), np.int64), (interp.count,))


def _arrive_peer(interp, args) -> None:
    memory, index = shared_address(interp, args[0], "mbarrier_arrive_peer")
    ranks = _ranks(interp, args[1])
    clocks = mbarrier.clocks(interp)
    for t in np.nonzero(interp.mask)[0].tolist():
        rank = int(ranks[t])
        what = f"mbarrier.arrive.shared::cluster by thread {t} of CTA {interp.launch.rank}"
        target, element = peer_element(interp, memory, index[t : t + 1], rank, what)
        bar = peer_mbarrier(interp, t, target, int(element[0]), rank, what)
        bar.arrive(clocks=clocks.release(mbarrier.row(interp, t)))


def _access(interp, args, dtype: str, store: bool):
    what = f"{'st' if store else 'ld'}.shared::cluster by CTA {interp.launch.rank}"
    memory, index = shared_address(interp, args[0], what)
    ranks = _ranks(interp, args[1])
    values = None if not store else np.broadcast_to(np.asarray(interp.eval(args[2])), (interp.count,))
    out = np.zeros(interp.count, memory.data.dtype)
    active = np.nonzero(interp.mask)[0]
    block, interval, clocks = interp.launch.block, interp.launch.interval, mbarrier.clocks(interp)
    for rank in np.unique(ranks[active]).tolist():
        threads = active[ranks[active] == rank]
        target, elements = peer_element(interp, memory, index[threads], int(rank), what)
        ids = interp.global_ids[threads]
        if store:
            target.store(elements, values[threads], ids, block, interval, clocks)
        else:
            out[threads] = target.load(elements, ids, block, interval, clocks)
        peer_of(interp, int(rank), what)  # the peer must still run (checked after the race check: the finer report)
    return None if store else out


#: The cluster executor: the barrier, the rank, the peer arrive by name; the distributed-shared-memory accesses by
#: pattern (their element type in the name).
HELPERS = HelperTable(
    "cluster",
    {"arrive": _arrive, "wait": _wait, "rank": _rank, "arrive_peer": _arrive_peer},
    [
        (r"load_(?P<dtype>\w+)", lambda interp, args, dtype: _access(interp, args, dtype, store=False)),
        (r"store_(?P<dtype>\w+)", lambda interp, args, dtype: _access(interp, args, dtype, store=True)),
    ],
)
