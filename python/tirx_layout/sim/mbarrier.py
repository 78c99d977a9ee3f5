"""mbarrier objects in shared memory, simulated from the PTX ISA's mbarrier section (not from the lowering).

What the ISA says, restated (PTX ISA, "mbarrier": phases, phase completion, init / arrive / expect-tx /
complete-tx / try_wait.parity):

* ``mbarrier.init [bar], count`` starts phase 0 with ``count`` pending arrivals and a tx-count of 0.
* ``mbarrier.arrive`` takes one pending arrival; ``mbarrier.expect_tx [bar], n`` adds ``n`` to the tx-count;
  ``mbarrier.arrive.expect_tx`` does both (the expect first); an asynchronous copy's ``complete_tx`` (TMA) takes
  ``n`` off it; ``tcgen05.commit ... mbarrier::arrive::one`` arrives once when the issuing thread's earlier
  ``tcgen05.mma``/``cp`` are complete.
* The current phase completes when its pending arrivals AND its tx-count are both zero; the barrier then moves to the
  next phase with ``count`` pending arrivals again.
* ``mbarrier.try_wait.parity [bar], p`` succeeds once the phase of parity ``p`` has completed: when the current
  (incomplete) phase's parity is not ``p``. On a fresh barrier, parity 1 succeeds at once (the phase "before" phase
  0) and parity 0 waits for phase 0.

The simulator performs asynchronous operations when issued, so a commit arrives as it is issued. A wait whose phase
has not completed raises :class:`WaitBlocked`: the interpreter suspends those threads and runs the other branch of
the ``if`` they are in (another warp's role) until the phase completes; if nothing can complete it, the wait would
hang, and the run stops with a :class:`SimulationError` naming the barrier, the phase and what it still waits for.

Memory ordering (PTX ISA, mbarrier and ``cp.async.bulk``): an arrive has release semantics, the complete-tx of a
TMA copy releases the copy's writes, and a test/try_wait that sees the phase complete acquires what was released
into it. A completed phase therefore carries what its arrivals publish: for the tcgen05 ordering model
(``sim/tmem_order.py``) the arriving warps' released windows and the commit generations it covers (and those the
arrivers had seen complete); for memory the arriving threads' clocks (``memory.SyncClocks``) joined with the
barrier's own column, its completed phases, which orders the TMA writes whose complete-tx it held; a
``tcgen05.commit`` arrives with what its issuing thread had acquired (its MMAs were issued after those waits and
the arrive follows their completion), so a TMA write seen by the MMA issuer is ordered before whatever waits on
the MMA's commit -- the producer refilling a ring stage; and the in-flight MMA operand reads the arrivers had seen
complete. A wait that succeeds takes in what the last completed phase carries (completion is cumulative: later
phases include earlier ones).

Example:
    >>> bar = Mbarrier(count=2, warps=1)
    >>> bar.arrive(); bar.completed, bar.wait_returns(0)
    (0, False)
    >>> bar.arrive(); bar.completed, bar.wait_returns(0), bar.wait_returns(1)
    (1, True, False)
"""

from __future__ import annotations

import numpy as np

from .addresses import shared_address
from .dispatch import HelperTable
from .memory import DataRace, SimulationError, SyncClocks, join, stamp

#: The tx-count's range (PTX ISA, mbarrier: "tx-count ... in the range [-(2^20 - 1), 2^20 - 1]").
TX_LIMIT = (1 << 20) - 1

__all__ = [
    "ARGUMENTS",
    "HELPERS",
    "TX_LIMIT",
    "Mbarrier",
    "WaitBlocked",
    "clocks",
    "commit",
    "drop_async_reads",
    "drop_async_writes",
    "find",
    "row",
]


class WaitBlocked(SimulationError):
    """An mbarrier wait whose phase has not completed: the waiting threads must let others run first."""


class Mbarrier:
    """One mbarrier object: expected arrivals per phase, pending arrivals, tx-count, completed phases, and what the
    current and completed phases publish to the tcgen05 ordering model of ``warps`` warps."""

    def __init__(
        self,
        count: int,
        warps: int,
        name: str = "mbarrier",
        thread: int = 0,
        interval: int = 0,
        agent: int | None = None,
        earlier_phases: int = 0,
    ):
        if not 1 <= count <= TX_LIMIT:
            raise SimulationError(f"mbarrier.init of {name} with count {count}: the count must be in [1, 2^20 - 1]")
        self.name = name
        self.init_thread, self.init_interval = thread, interval  # who initialised it, in which barrier interval
        self.count = count
        self.pending = count
        self.tx = 0
        self.completed = 0  # phases completed so far; the current phase is number ``completed``
        self.published = np.zeros(warps, np.int64)  # what the current phase's arrivals published
        self.generations = np.full(warps, -1, np.int64)  # the commits (per warp) the current phase covers
        self.done_published = np.zeros(warps, np.int64)  # ... and the same for the last completed phase
        self.done_generations = np.full(warps, -1, np.int64)
        # in-flight MMA operand reads (memory.AsyncRead) that an arriving thread had seen complete: a waiter of the
        # phase is ordered after them too (the arrive releases what its thread knows)
        self.reads: list = []
        self.done_reads: list = []
        # what the arrivals published (memory.SyncClocks: one epoch per thread, then the agents), or None; a
        # completed phase adds the barrier's own column (``agent``): its completed phases, which order the
        # asynchronous writes whose complete-tx they hold; a barrier initialised again at the same address keeps
        # the column and counts on from the phases of the earlier one (``earlier_phases``), so a clock never runs back
        self.agent = agent
        self.earlier_phases = earlier_phases
        self.clocks = None
        self.done_clocks = None

    def arrive(
        self,
        published=None,
        warp: int | None = None,
        generation: int | None = None,
        seen_reads=(),
        seen_done=None,
        clocks=None,
    ) -> None:
        """One arrival (``mbarrier.arrive``, or a ``tcgen05.commit`` of ``warp``'s generation ``generation``) by a
        thread that has seen the in-flight reads ``seen_reads`` and each warp's commits up to ``seen_done``
        complete: a waiter of the phase sees them complete too. ``clocks`` is what the thread's arrive publishes
        for memory (``memory.SyncClocks.release``; a commit's is ``SyncClocks.view``, what its thread acquired)."""
        self.reads.extend(read for read in seen_reads if read not in self.reads)
        if published is not None:
            np.maximum(self.published, published, out=self.published)
        if seen_done is not None:
            np.maximum(self.generations, seen_done, out=self.generations)
        self.clocks = join(self.clocks, clocks)
        if warp is not None and generation is not None:
            self.generations[warp] = max(self.generations[warp], generation)
        self.pending -= 1
        self._complete()

    def expect_tx(self, nbytes: int) -> None:
        """``mbarrier.expect_tx``: the current phase also waits for ``nbytes`` more bytes of asynchronous copies."""
        self._tx(self.tx + nbytes, f"expect_tx of {nbytes} bytes")

    def complete_tx(self, nbytes: int) -> None:
        """An asynchronous copy (TMA) signals ``nbytes`` bytes arrived: the tx-count drops, which may complete the
        phase."""
        self._tx(self.tx - nbytes, f"complete_tx of {nbytes} bytes")
        self._complete()

    def _tx(self, value: int, what: str) -> None:
        if not -TX_LIMIT <= value <= TX_LIMIT:
            raise SimulationError(
                f"{what} on {self.name} takes its tx-count to {value}, outside [-(2^20 - 1), 2^20 - 1]"
            )
        self.tx = value

    def _complete(self) -> None:
        if self.pending < 0:
            raise SimulationError(f"{self.name}: more arrivals than the phase expects")
        if self.pending == 0 and self.tx == 0:
            self.completed += 1
            self.pending = self.count
            np.maximum(self.done_published, self.published, out=self.done_published)
            np.maximum(self.done_generations, self.generations, out=self.done_generations)
            self.done_reads.extend(self.reads)
            self.reads = []
            # release at completion: the arrivals' clocks, and (complete-tx of TMA copies) this barrier's phases
            phases = self.earlier_phases + self.completed
            published = self.clocks if self.agent is None else stamp(self.clocks, self.agent, phases)
            self.done_clocks = join(self.done_clocks, published)

    def wait_returns(self, parity: int) -> bool:
        """Whether ``mbarrier.try_wait.parity`` with ``parity`` succeeds now: the current phase has the other
        parity."""
        if parity not in (0, 1):
            raise SimulationError(f"mbarrier wait on {self.name} with phase parity {parity}; it must be 0 or 1")
        return self.completed % 2 != parity

    def describe(self) -> str:
        """The current phase's state, for error messages."""
        return (
            f"phase {self.completed} (parity {self.completed % 2}) has {self.pending} of {self.count} arrivals "
            f"pending and a tx-count of {self.tx}"
        )


# ---- the helpers (``ir/device_calls`` family ``mbarrier``) -----------------------------------------------------------

#: How many arguments each mbarrier helper takes (ops/helpers/mbarrier.py): the barrier's address, then the count,
#: the bytes or the parity.
ARGUMENTS = {"init": 2, "arrive": 1, "expect_tx": 2, "arrive_expect_tx": 2, "wait": 2}


def find(interp, memory, index: int, what: str) -> Mbarrier:
    """The mbarrier at element ``index`` of shared ``memory`` in ``interp``'s CTA; ``SimulationError`` naming
    ``what`` if it was never initialised. (An asynchronous copy that signals bytes calls ``complete_tx`` on it.)

    Example: ``find(interp, memory, 0, "cp.async.bulk").complete_tx(4096)``.
    """
    key = (memory.name, index)
    if key not in interp.mbarriers:
        raise SimulationError(f"{what} on {memory.name}[{index}], an mbarrier that was never initialised")
    return interp.mbarriers[key]


class _Call:
    """One call of an mbarrier helper (or of ``tcgen05.commit``, which arrives on one): the active threads, the
    barrier element each names, and their second operand (``None`` for a helper of one argument)."""

    def __init__(self, interp, label: str, args, expected: int):
        if len(args) != expected:
            raise SimulationError(f"the {label} helper takes {expected} argument(s) (ops/helpers), got {len(args)}")
        self.interp, self.label = interp, label
        self.memory, self.index = shared_address(interp, args[0], label)
        self.threads = np.nonzero(interp.mask)[0].tolist()
        self.operand = (
            None if len(args) < 2 else np.broadcast_to(np.asarray(interp.eval(args[1]), np.int64), (interp.count,))
        )

    def barriers(self):
        """``(thread, its Mbarrier)`` for each active thread, the barrier initialised and that initialisation
        ordered before this use."""
        for t in self.threads:
            bar = find(self.interp, self.memory, int(self.index[t]), self.label)
            if bar.init_thread != t and bar.init_interval == self.interp.launch.interval:
                raise DataRace(
                    f"data race on shared {bar.name}: thread {t} uses the mbarrier thread {bar.init_thread} "
                    "initialised with no barrier between them (mbarrier.init, fence.mbarrier_init, then a CTA barrier)"
                )
            yield t, bar


def _tcgen05_order(interp):
    """The CTA's tcgen05 ordering model (``tmem_order.TmemOrder``), or ``None`` while no tcgen05 instruction has
    run: then an arrive has nothing of it to publish and a wait nothing to take in."""
    return None if interp.tmem is None else interp.tmem.order


def _seen_reads(interp, thread: int) -> list:
    """The in-flight shared-memory reads ``thread`` has seen complete (an arrive passes them on)."""
    return [read for read in interp.async_reads if read.observed[thread]]


def _init(interp, args) -> None:
    call = _Call(interp, "mbarrier_init", args, ARGUMENTS["init"])
    interval = interp.launch.interval
    for t in call.threads:
        i = int(call.index[t])
        earlier = interp.mbarriers.get((call.memory.name, i))
        if earlier is not None and earlier.init_interval == interval and earlier.init_thread != t:
            raise DataRace(
                f"data race on shared {call.memory.name}[{i}]: threads {earlier.init_thread} and {t} both initialise "
                "the mbarrier with no barrier between them; one thread initialises it"
            )
        name = f"{call.memory.name}[{i}]"
        if earlier is None:
            agent, phases = clocks(interp).add_agent(), 0
        else:
            agent, phases = earlier.agent, earlier.earlier_phases + earlier.completed
        warps = interp.count // 32
        bar = Mbarrier(int(call.operand[t]), warps, name, t, interval, agent, phases)
        # who initialised it, in which epoch of the clocks: a peer CTA's use must be ordered after (sim/cluster.py)
        bar.init_global = int(interp.global_ids[t])
        bar.init_epoch = int(clocks(interp).now(np.array([bar.init_global]))[0])
        interp.mbarriers[(call.memory.name, i)] = bar


def _arrive_once(interp, thread: int, bar: Mbarrier) -> None:
    """``mbarrier.arrive`` by ``thread``: it publishes its memory clock, the in-flight reads it has seen complete
    and, for the tcgen05 ordering model, its warp's released windows and the commits it has seen complete."""
    order, warp = _tcgen05_order(interp), thread // 32
    published, done = (None, None) if order is None else (order.publish(warp), order.seen_done(warp))
    seen = _seen_reads(interp, thread)
    bar.arrive(published, seen_reads=seen, seen_done=done, clocks=clocks(interp).release(row(interp, thread)))


def _arrive(interp, args) -> None:
    for t, bar in _Call(interp, "mbarrier_arrive", args, ARGUMENTS["arrive"]).barriers():
        _arrive_once(interp, t, bar)


def _expect_tx(interp, args) -> None:
    call = _Call(interp, "mbarrier_expect_tx", args, ARGUMENTS["expect_tx"])
    for t, bar in call.barriers():
        bar.expect_tx(int(call.operand[t]))


def _arrive_expect_tx(interp, args) -> None:
    call = _Call(interp, "mbarrier_arrive_expect_tx", args, ARGUMENTS["arrive_expect_tx"])
    for t, bar in call.barriers():
        bar.expect_tx(int(call.operand[t]))
        _arrive_once(interp, t, bar)


def _wait(interp, args) -> None:
    call = _Call(interp, "mbarrier_wait", args, ARGUMENTS["wait"])
    # all of the threads' waits return, or none does (they are suspended together)
    for t in call.threads:
        bar = find(interp, call.memory, int(call.index[t]), call.label)
        if not bar.wait_returns(int(call.operand[t])):
            raise WaitBlocked(
                f"mbarrier wait by thread {t} on {bar.name} for phase parity {int(call.operand[t])} never returns: "
                f"{bar.describe()}"
            )
    order, waited = _tcgen05_order(interp), set()
    for t, bar in call.barriers():
        if bar.done_clocks is not None:
            clocks(interp).acquire(row(interp, t), bar.done_clocks)
        key = (t // 32, int(call.index[t]))
        if order is not None and key not in waited:  # the tcgen05 model is per warp: once per warp and barrier
            waited.add(key)
            order.mbarrier_wait(t // 32, bar.done_published, bar.done_generations)
        _observe_async_reads(interp, t, bar)
    if interp.mask.all():
        # Every thread of the CTA waited: later shared/global accesses are ordered after earlier ones.
        interp.launch.interval += 1


def commit(interp, args, order) -> None:
    """``tcgen05.commit ... mbarrier::arrive::one`` by every active thread of ``interp``: one arrival on the mbarrier
    at ``args[0]`` once the thread's earlier ``tcgen05.mma``/``cp`` are complete (the simulator performs them at
    issue, so the arrival is now), carrying the commit's generation of the tcgen05 ordering model ``order``
    (``tmem_order.TmemOrder``) and what the thread had acquired. The tcgen05 executor (``tmem.py``) calls it.

    Example: ``commit(interp, [address_of(bars[0])], interp.tmem.order)`` arrives once per active thread.
    """
    for t, bar in _Call(interp, "commit", args, 1).barriers():
        warp = t // 32
        seen, done = _seen_reads(interp, t), order.seen_done(warp)
        published, generation = order.commit(warp)
        bar.arrive(published, warp, generation, seen, done, clocks=clocks(interp).view(row(interp, t)))


#: The mbarrier executor: every helper of the family by its exact name.
HELPERS = HelperTable(
    "mbarrier",
    {"init": _init, "arrive": _arrive, "expect_tx": _expect_tx, "arrive_expect_tx": _arrive_expect_tx, "wait": _wait},
)


def clocks(interp) -> SyncClocks:
    """The CTA's :class:`~tirx_layout.sim.memory.SyncClocks`, made when first needed (an mbarrier's init gives the
    barrier its column; a TMA load's issue is a store ordered by them).

    Example: ``clocks(interp).release(t)`` is what thread ``t``'s arrive publishes.
    """
    if interp.sync is None:
        interp.sync = SyncClocks(interp.count, interp.launch.block * interp.count)
    return interp.sync


def row(interp, thread: int) -> int:
    """The row of ``interp``'s local ``thread`` in its clocks: the thread itself, or its place among the threads of
    its cluster when the clocks span one (``sim/cluster.py``).

    Example: ``clocks(interp).release(row(interp, t))`` is what thread ``t``'s arrive publishes.
    """
    return thread + interp.launch.block * interp.count - clocks(interp).base


def _observe_async_reads(interp, thread: int, bar: Mbarrier) -> None:
    """``thread`` saw ``bar``'s last phase complete: the MMAs its commits cover, and those its arriving threads had
    seen complete, no longer read shared memory, for this thread."""
    for read in interp.async_reads:
        if read.generation <= bar.done_generations[read.warp] or read in bar.done_reads:
            read.observed[thread] = True
    drop_async_reads(interp, lambda read: read.observed.all())


def drop_async_writes(interp, finished) -> None:
    """Forget the asynchronous writes for which ``finished(write)`` holds (seen complete by every thread).

    Example: ``drop_async_writes(interp, lambda write: write.seen_by(interp.sync, np.arange(interp.count)).all())``.
    """
    for memory in {id(m): m for m in interp.memories.values()}.values():
        memory.async_writes = [write for write in memory.async_writes if not finished(write)]


def drop_async_reads(interp, finished) -> None:
    """Forget the in-flight shared-memory reads for which ``finished(read)`` holds (completed for every thread).

    Example: after a CTA barrier, ``drop_async_reads(interp, lambda read: read.observed.any())``.
    """
    done = [read for read in interp.async_reads if finished(read)]
    for read in done:
        interp.async_reads.remove(read)
        for memory in interp.memories.values():
            if read in memory.async_reads:
                memory.async_reads.remove(read)
