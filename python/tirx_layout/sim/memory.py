"""Simulated memories that check every access: bounds, and conflicting accesses between barriers.

Two accesses to one element conflict when they come from different threads, at least one is a write, and nothing
orders them: the same CTA with no barrier in between (and no mbarrier phase the first thread arrived at before
the second waited on it: :class:`SyncClocks`), or different CTAs, unless both are of one cluster and a cluster
barrier or a peer's mbarrier arrival orders them (the cluster's clocks); CTAs of different clusters never
synchronise with each other.
Each element remembers its last writer and its readers since then, with the barrier interval and the thread's
clock they acted in; an element several threads read in one barrier interval remembers each reader's latest clock,
so a later store is ordered when every one of those reads happens before it (each reader's release reaching the
storing thread's acquires: PTX ISA 8.8, the memory consistency model's causality order is per pair of operations).
"""

from __future__ import annotations

import numpy as np

NO_THREAD = -1
MANY_THREADS = -2


class SimulationError(Exception):
    """A kernel did something the hardware would not do reliably."""


class OutOfBounds(SimulationError):
    """An access outside the memory it addresses."""


class DataRace(SimulationError):
    """Two threads touched one element, at least one writing, with no barrier between them."""


class SyncClocks:
    """Happens-before between the threads of one CTA (or of one cluster: ``sim/cluster.py``) through mbarriers
    (PTX ISA, mbarrier: an arrive releases, a wait that sees the phase complete acquires): a vector clock per
    thread.

    Thread ``t`` acts in epoch ``clock[t]``; an arrive publishes what ``t`` has seen plus its current epoch, then
    starts a new one; a wait takes in what the completed phase's arrivals published. An access by thread ``w`` in
    epoch ``c`` is ordered before a later one by ``r`` when ``seen[r, w] >= c``. Threads are CTA-wide ids, ``base``
    (the CTA's first) subtracted.

    Asynchronous agents get columns after the threads' (:meth:`add_agent`): an mbarrier's column counts its
    completed phases, and a phase completion publishes that count next to its arrivals' clocks (the complete-tx of a
    TMA copy releases the copy's writes: they are ordered before a reader ``r`` when ``seen[r, agent]`` is past
    the phase holding the complete-tx). Knowledge of agents travels like any other: a later arrive of the waiter
    releases it, and so does a ``tcgen05.commit`` (:meth:`view`). A released clock may be shorter than ``seen``
    (agents added later); missing columns read as "nothing seen" (-1).

    Example:
        >>> clocks = SyncClocks(threads=2, base=0)
        >>> write = clocks.now(np.array([0]))          # thread 0 writes in epoch 0
        >>> published = clocks.release(0)               # then arrives
        >>> bool(clocks.ordered(np.array([1]), np.array([0]), write)[0])
        False
        >>> clocks.acquire(1, published)                # thread 1 waits on that phase
        >>> bool(clocks.ordered(np.array([1]), np.array([0]), write)[0])
        True
        >>> bar = clocks.add_agent()                    # an mbarrier; a TMA write completes in its phase 0
        >>> clocks.acquire(0, stamp(None, bar, 1))      # thread 0 sees phase 0 complete
        >>> clocks.seen_phase(np.array([0, 1]), bar).tolist()   # phases each thread has seen complete
        [1, 0]
    """

    def __init__(self, threads: int, base: int):
        self.base = base
        self.clock = np.zeros(threads, np.int64)
        self.seen = np.full((threads, threads), -1, np.int64)

    def now(self, threads) -> np.ndarray:
        """The current epoch of each of the CTA-wide ``threads``."""
        return self.clock[np.asarray(threads, np.int64) - self.base]

    def add_agent(self) -> int:
        """A new column for an asynchronous agent (one mbarrier's completed phases); its index."""
        self.seen = np.pad(self.seen, ((0, 0), (0, 1)), constant_values=-1)
        return self.seen.shape[1] - 1

    def release(self, thread: int) -> np.ndarray:
        """An arrive by local ``thread``: what it publishes; its later accesses are in a new epoch."""
        published = self.seen[thread].copy()
        published[thread] = self.clock[thread]
        self.clock[thread] += 1
        return published

    def view(self, thread: int) -> np.ndarray:
        """What local ``thread`` has acquired so far, without an epoch of its own: what a ``tcgen05.commit`` it
        issues carries to the waiters of the phase its arrive completes (the MMAs and copies the commit tracks were
        issued after those acquires; the commit releases none of the thread's own generic accesses)."""
        return self.seen[thread].copy()

    def acquire(self, thread: int, published: np.ndarray) -> None:
        """A wait by local ``thread`` that saw a phase complete whose arrivals published ``published``."""
        width = len(published)
        np.maximum(self.seen[thread, :width], published, out=self.seen[thread, :width])

    def barrier(self, rows=None) -> None:
        """A CTA barrier: every thread acquires what any thread has acquired (its own epochs are ordered by the
        barrier interval; this carries the agents' completions). ``rows``: the CTA's local threads when the clocks
        span a cluster (every thread by default)."""
        rows = slice(None) if rows is None else rows
        self.seen[rows] = self.seen[rows].max(axis=0)

    def seen_phase(self, threads, agent: int) -> np.ndarray:
        """For each local thread of ``threads``: how many phases of ``agent`` it has seen complete."""
        return np.maximum(self.seen[np.asarray(threads, np.int64), agent], 0)

    def ordered(self, later, earlier, earlier_clock) -> np.ndarray:
        """Whether each access by CTA-wide ``later`` comes after ``earlier``'s in epoch ``earlier_clock``."""
        later = np.asarray(later, np.int64) - self.base
        earlier = np.asarray(earlier, np.int64)
        single = (earlier >= self.base) & (earlier - self.base < self.clock.size)
        index = np.where(single, earlier - self.base, 0)
        return single & (self.seen[later, index] >= earlier_clock)


def join(first: np.ndarray | None, second: np.ndarray | None) -> np.ndarray | None:
    """The element-wise maximum of two released clocks (``None`` for none), the shorter padded with -1.

    Example:
        >>> join(np.array([3, -1]), np.array([1, 2, 5])).tolist(), join(None, None)
        ([3, 2, 5], None)
    """
    if first is None or second is None:
        return second.copy() if first is None and second is not None else first
    if len(first) < len(second):
        first, second = second, first
    out = first.copy()
    np.maximum(out[: len(second)], second, out=out[: len(second)])
    return out


def stamp(published: np.ndarray | None, agent: int, phases: int) -> np.ndarray:
    """``published`` (a released clock, or ``None``) with agent column ``agent`` raised to ``phases``: what a phase
    completion of that mbarrier publishes.

    Example:
        >>> stamp(None, 2, 1).tolist(), stamp(np.array([4, 0, 0]), 1, 3).tolist()
        ([-1, -1, 1], [4, 3, 0])
    """
    out = np.full(agent + 1, -1, np.int64) if published is None else published.copy()
    if len(out) <= agent:
        out = np.pad(out, (0, agent + 1 - len(out)), constant_values=-1)
    out[agent] = max(out[agent], phases)
    return out


class AsyncRead:
    """Shared-memory elements an asynchronous-proxy operation (a ``tcgen05.mma``) still reads after its issue.

    The operation completes when its ``tcgen05.commit`` (generation ``generation`` of warp ``warp``'s commits) arrives
    at an mbarrier; a thread may overwrite the elements only once it has seen that phase complete (``observed``, one
    flag per thread of the CTA), or after a CTA barrier that follows such an observation by any thread.

    Example:
        >>> read = AsyncRead(np.array([3, 4]), "tcgen05.mma issued by thread 0", warp=0, generation=0, threads=64)
        >>> bool(read.observed.any())
        False
    """

    def __init__(
        self,
        elements: np.ndarray,
        what: str,
        warp: int,
        generation: int,
        threads: int,
        hint: str = "wait on the mbarrier its tcgen05.commit arrives at (mbarrier_wait) before overwriting an MMA "
        "operand",
        issuer: int | None = None,
    ):
        self.elements = np.unique(np.asarray(elements, np.int64))
        self.what = what
        self.hint = hint  # how a kernel orders an overwrite after the read
        self.issuer = issuer  # the thread whose wait (not a commit) ends the read: a TMA store's wait_group
        self.warp = warp
        self.generation = generation
        self.observed = np.zeros(threads, bool)


class AsyncWrite:
    """Shared-memory elements an asynchronous-proxy copy (a TMA load) writes, signalled through complete-tx in phase
    ``phase`` of mbarrier ``bar`` (an ``Mbarrier``: its ``agent`` column of the clocks counts the ``earlier_phases``
    of barriers initialised at its address before it, then its own): a thread may read them (or an MMA it issues
    may), or overwrite them, only once its :class:`SyncClocks` show it has seen that phase complete -- by its own
    wait, through another thread's arrive (or ``tcgen05.commit``) after such a wait, or through a CTA barrier after
    one.

    Example:
        >>> from types import SimpleNamespace
        >>> clocks = SyncClocks(threads=2, base=0)
        >>> bar = SimpleNamespace(name="bars[0]", agent=clocks.add_agent(), earlier_phases=0)
        >>> write = AsyncWrite(np.array([0, 1]), "TMA load issued by thread 0", bar=bar, phase=0)
        >>> write.seen_by(clocks, np.array([0, 1])).tolist()
        [False, False]
        >>> clocks.acquire(1, stamp(None, bar.agent, 1))   # thread 1 sees phase 0 of bars[0] complete
        >>> write.seen_by(clocks, np.array([0, 1])).tolist()
        [False, True]
    """

    def __init__(self, elements: np.ndarray, what: str, bar, phase: int):
        self.elements = np.unique(np.asarray(elements, np.int64))
        self.what = what
        self.bar = bar
        self.phase = phase

    def seen_by(self, sync: SyncClocks, threads) -> np.ndarray:
        """Whether each local thread of ``threads`` has seen the write complete."""
        return sync.seen_phase(threads, self.bar.agent) > self.bar.earlier_phases + self.phase


class InFlightWrite:
    """Shared elements an asynchronous copy of one thread (a ``cp.async``) writes at some moment before the
    ``cp.async.wait_group`` that retires its group: until then no thread may read or overwrite them (the copy's
    write lands whenever it does, and a read may see the old data or the new).

    Example:
        >>> pending = InFlightWrite(np.array([4, 5]), "cp.async issued by thread 3", "wait for it first")
        >>> pending.elements.tolist(), pending.what
        ([4, 5], 'cp.async issued by thread 3')
    """

    def __init__(self, elements: np.ndarray, what: str, hint: str):
        self.elements = np.unique(np.asarray(elements, np.int64))
        self.what = what
        self.hint = hint


class Memory:
    """One buffer's storage (flat numpy array) with access tracking.

    Threads are identified CTA-wide as ``block * threads_per_block + thread``; ``interval`` numbers barrier
    intervals over the whole run, so an access from an older interval of the same CTA is ordered by a barrier.

    Example:
        >>> mem = Memory("S", np.zeros(4, np.float32), "shared")
        >>> mem.store(np.array([0, 1]), np.array([1.0, 2.0], np.float32), np.array([0, 1]), block=0, interval=0)
        >>> mem.load(np.array([1]), np.array([1]), block=0, interval=0)
        array([2.], dtype=float32)
    """

    def __init__(self, name: str, data: np.ndarray, scope: str):
        self.name = name
        self.scope = scope
        self.data = data
        size = data.shape[0]
        self.writes = np.zeros(size, np.int64)
        self._writer = np.full(size, NO_THREAD, np.int64)
        self._writer_block = np.full(size, NO_THREAD, np.int64)
        self._writer_interval = np.full(size, NO_THREAD, np.int64)
        self._reader = np.full(size, NO_THREAD, np.int64)
        self._reader_block = np.full(size, NO_THREAD, np.int64)
        self._reader_interval = np.full(size, NO_THREAD, np.int64)
        self._writer_clock = np.zeros(size, np.int64)  # the writer's SyncClocks epoch
        self._reader_clock = np.zeros(size, np.int64)
        # elements read by several threads (MANY_THREADS) in their readers' interval: address -> {thread: its latest
        # read's clock}, so that a later store is checked against each of them
        self._readers: dict[int, dict[int, int]] = {}
        # whether the last generic-proxy write of each element has since been fenced (fence.proxy.async) by its writer
        self.proxy_fenced = np.ones(size, bool)
        self.async_reads: list[AsyncRead] = []  # in-flight asynchronous reads of this (shared) memory
        self.async_writes: list[AsyncWrite] = []  # asynchronous writes (TMA loads) not yet seen complete by all
        # atomic read-modify-writes: counted apart from stores, and the last atomic access of each element (several
        # threads' atomics in one barrier interval are MANY_THREADS): atomics never race with each other, but an
        # unordered plain access and an atomic do
        self.atomics = np.zeros(size, np.int64)
        self._atomic_used = False
        self._atomic = np.full(size, NO_THREAD, np.int64)
        self._atomic_block = np.full(size, NO_THREAD, np.int64)
        self._atomic_interval = np.full(size, NO_THREAD, np.int64)
        self._atomic_clock = np.zeros(size, np.int64)
        # cp.async writes whose group no wait_group has retired: per element the key of the one in flight (-1 none)
        self._in_flight = np.full(size, -1, np.int64)
        self._in_flight_writes: dict[int, InFlightWrite] = {}

    def _check_bounds(self, addresses: np.ndarray, threads: np.ndarray, what: str) -> None:
        bad = (addresses < 0) | (addresses >= self.data.shape[0])
        if bad.any():
            i = int(np.argmax(bad))
            raise OutOfBounds(
                f"out-of-bounds {what} {self.name}[{int(addresses[i])}] (size {self.data.shape[0]}, {self.scope}) "
                f"by thread {int(threads[i])}"
            )

    def _unordered(self, who, who_block, who_interval, addresses, threads, block, interval, who_clock, sync):
        """Which of ``addresses`` an earlier access (``who``...) by another thread leaves unordered."""
        other = (who[addresses] != NO_THREAD) & (who[addresses] != threads)
        unordered = other & ((who_block[addresses] != block) | (who_interval[addresses] == interval))
        if sync is not None and unordered.any():  # the clocks cover the CTA or its cluster; others read as unordered
            unordered &= ~sync.ordered(threads, who[addresses], who_clock[addresses])
        return unordered

    def _race(self, kind: str, mask: np.ndarray, addresses, threads, who) -> None:
        i = int(np.argmax(mask))
        earlier = int(who[addresses[i]])
        earlier_text = "several threads" if earlier == MANY_THREADS else f"thread {earlier}"
        raise DataRace(
            f"data race on {self.scope} {self.name}[{int(addresses[i])}]: {kind} by thread {int(threads[i])} and "
            f"{earlier_text} with no barrier between them"
        )

    def store(self, addresses, values, threads, block: int, interval: int, sync: SyncClocks | None = None) -> None:
        """Write ``values`` at ``addresses`` for the CTA-wide thread ids ``threads`` (one entry per access);
        ``sync`` orders accesses through mbarriers too."""
        addresses = np.asarray(addresses, np.int64).ravel()
        threads = np.broadcast_to(np.asarray(threads, np.int64), addresses.shape).ravel()
        self._check_bounds(addresses, threads, "store to")
        order = np.argsort(addresses, kind="stable")
        a, t = addresses[order], threads[order]
        same = (a[1:] == a[:-1]) & (t[1:] != t[:-1])
        if same.any():
            i = int(np.argmax(same))
            raise DataRace(
                f"data race on {self.scope} {self.name}[{int(a[i])}]: threads {int(t[i])} and {int(t[i + 1])} "
                "store to it in the same instruction"
            )
        clash = self._unordered(
            self._writer,
            self._writer_block,
            self._writer_interval,
            addresses,
            threads,
            block,
            interval,
            self._writer_clock,
            sync,
        )
        if clash.any():
            self._race("two stores", clash, addresses, threads, self._writer)
        clash = self._unordered(
            self._reader,
            self._reader_block,
            self._reader_interval,
            addresses,
            threads,
            block,
            interval,
            self._reader_clock,
            sync,
        )
        if clash.any() and sync is not None:
            clash &= ~self._after_every_reader(addresses, threads, sync)
        if clash.any():
            self._race("a store after a load", clash, addresses, threads, self._reader)
        self._check_after_atomic("a store", addresses, threads, block, interval, sync)
        self._check_in_flight(addresses, threads, "a store")
        self._check_async_reads(addresses, threads, block)
        self.check_async_writes(addresses, threads, "a store", sync)
        self._supersede_async_writes(addresses)
        self.data[addresses] = np.broadcast_to(np.asarray(values), addresses.shape).astype(self.data.dtype)
        np.add.at(self.writes, addresses, 1)
        self._writer[addresses] = threads
        self._writer_block[addresses] = block
        self._writer_interval[addresses] = interval
        self._writer_clock[addresses] = 0 if sync is None else sync.now(threads)
        self._reader[addresses] = NO_THREAD
        self._forget_readers(addresses)
        self.proxy_fenced[addresses] = False

    def _after_every_reader(self, addresses, threads, sync: SyncClocks) -> np.ndarray:
        """For each access: whether its element was read by several threads, each of whose latest reads (other
        than the accessing thread's own) is ordered before it by the clocks."""
        ordered = np.zeros(addresses.shape, bool)
        for i in np.flatnonzero(self._reader[addresses] == MANY_THREADS):
            readers = self._readers.get(int(addresses[i]))
            if not readers:
                continue
            others = [(r, c) for r, c in readers.items() if r != int(threads[i])]
            earlier = np.array([r for r, _ in others], np.int64)
            clocks = np.array([c for _, c in others], np.int64)
            ordered[i] = bool(sync.ordered(np.full(earlier.shape, threads[i]), earlier, clocks).all())
        return ordered

    def _forget_readers(self, addresses) -> None:
        if self._readers:
            for a in np.unique(addresses).tolist():
                self._readers.pop(a, None)

    def _note_readers(self, addresses, threads, clocks, previous, previous_clock, fresh) -> None:
        """Record each reader's latest clock for the elements now read by several threads (see ``_readers``)."""
        many = self._reader[addresses] == MANY_THREADS
        for a in np.unique(addresses[many]).tolist():
            here = np.flatnonzero(addresses == a)
            first = here[0]
            if fresh[first]:  # no earlier read in this interval
                readers = {}
            elif previous[first] == MANY_THREADS:
                readers = self._readers.get(a, {})
            else:  # until now one thread read it in this interval
                readers = {int(previous[first]): int(previous_clock[first])}
            for i in here.tolist():
                readers[int(threads[i])] = max(readers.get(int(threads[i]), -1), int(clocks[i]))
            self._readers[a] = readers

    def _check_in_flight(self, addresses, threads, kind: str) -> None:
        keys = self._in_flight[addresses]
        hit = keys >= 0
        if hit.any():
            i = int(np.argmax(hit))
            write = self._in_flight_writes[int(keys[i])]
            raise DataRace(
                f"data race on {self.scope} {self.name}[{int(addresses[i])}]: {kind} by thread "
                f"{int(threads[i])} while the {write.what} may still write it; {write.hint}"
            )

    def begin_in_flight(self, write: InFlightWrite, thread: int) -> None:
        """``write`` (a ``cp.async`` by CTA-wide ``thread``) is in flight until :meth:`end_in_flight`: any access
        of its elements until then is a :class:`DataRace`, another in-flight copy of them included."""
        self._check_in_flight(write.elements, np.full(write.elements.shape, thread), "a cp.async")
        key = id(write)
        self._in_flight_writes[key] = write
        self._in_flight[write.elements] = key

    def end_in_flight(self, write: InFlightWrite) -> None:
        """``write`` has landed (its group retired)."""
        self._in_flight[write.elements] = -1
        del self._in_flight_writes[id(write)]

    def _check_async_reads(self, addresses, threads, block: int) -> None:
        for read in self.async_reads:
            hit = np.isin(addresses, read.elements)
            if not hit.any():
                continue
            local = threads[hit] - block * read.observed.size
            blind = ~read.observed[local]
            if blind.any():
                i = int(np.argmax(blind))
                raise DataRace(
                    f"data race on {self.scope} {self.name}[{int(addresses[hit][i])}]: a store by thread "
                    f"{int(threads[hit][i])} while the {read.what} still reads it; {read.hint}"
                )

    def _supersede_async_writes(self, addresses) -> None:
        # a store ordered after every asynchronous write of its elements replaces them: a later access is checked
        # against the store alone (and through it, transitively, against the writes it was ordered after)
        kept = []
        for write in self.async_writes:
            write.elements = write.elements[~np.isin(write.elements, addresses)]
            if write.elements.size:
                kept.append(write)
        self.async_writes = kept

    def check_async_writes(self, addresses, threads, what: str, sync: SyncClocks | None) -> None:
        """A ``what`` (a load, a store, an MMA's read) of ``addresses`` by CTA-wide ``threads``: each thread must
        have seen the mbarrier phase of every asynchronous write to them complete (``sync``: the CTA's clocks, which
        exist once a TMA load was issued)."""
        addresses = np.asarray(addresses, np.int64).ravel()
        threads = np.broadcast_to(np.asarray(threads, np.int64), addresses.shape)
        for write in self.async_writes:
            hit = np.isin(addresses, write.elements)
            if not hit.any():
                continue
            blind = ~write.seen_by(sync, threads[hit] - sync.base)
            if blind.any():
                i = int(np.argmax(blind))
                raise DataRace(
                    f"data race on {self.scope} {self.name}[{int(addresses[hit][i])}]: {what} (thread "
                    f"{int(threads[hit][i])}) before it has seen the {write.what} complete; wait on {write.bar.name} "
                    f"for phase {write.phase} (T.mbarrier_wait(..., {write.phase % 2})) first, or on a phase that "
                    "a thread which waited there arrives at afterwards (an arrive, or the tcgen05.commit of an MMA "
                    "it issued after the wait: a ring's empty barrier)"
                )

    def mark_async_proxy_write(self, addresses) -> None:
        """The last write of ``addresses`` came through the async proxy (a TMA load): visible to the async proxy
        without a fence, and ordered for readers by its mbarrier phase (an :class:`AsyncWrite`), not by a thread."""
        addresses = np.asarray(addresses, np.int64)
        self.proxy_fenced[addresses] = True
        self._writer[addresses] = NO_THREAD

    def fence_proxy(self, threads) -> None:
        """``fence.proxy.async`` by CTA-wide ``threads``: their earlier generic writes become visible to the async
        proxy (PTX ISA, "Proxies" and fence.proxy.async)."""
        self.proxy_fenced |= np.isin(self._writer, np.asarray(threads, np.int64))

    def check_async_read(
        self, addresses, thread: int, block: int, interval: int, what: str, sync: SyncClocks | None = None
    ) -> None:
        """An async-proxy read (``what``) by ``thread`` of ``addresses``: each element's last generic write must be
        fenced by its writer (``fence.proxy.async``) and, if another thread wrote it, ordered before the read by a
        barrier (or an mbarrier phase ``sync`` knows of)."""
        addresses = np.asarray(addresses, np.int64).ravel()
        self._check_bounds(addresses, np.full(addresses.shape, thread), "async read of")
        self.check_async_writes(addresses, np.full(addresses.shape, thread), f"the {what}", sync)
        writer = self._writer[addresses]
        written = writer != NO_THREAD
        unfenced = written & ~self.proxy_fenced[addresses]
        if unfenced.any():
            i = int(np.argmax(unfenced))
            raise DataRace(
                f"data race on {self.scope} {self.name}[{int(addresses[i])}]: the {what} reads it through the async "
                f"proxy, but thread {int(writer[i])} wrote it with no fence.proxy.async after the store"
            )
        unordered = written & (writer != thread) & (self._writer_block[addresses] == block)
        unordered &= self._writer_interval[addresses] == interval
        if sync is not None and unordered.any():
            issuer = np.full(addresses.shape, thread)
            unordered &= ~sync.ordered(issuer, writer, self._writer_clock[addresses])
        if unordered.any():
            i = int(np.argmax(unordered))
            raise DataRace(
                f"data race on {self.scope} {self.name}[{int(addresses[i])}]: the {what} reads what thread "
                f"{int(writer[i])} wrote, with no barrier (or mbarrier phase) between the write's "
                "fence.proxy.async and the MMA"
            )

    def load(self, addresses, threads, block: int, interval: int, sync: SyncClocks | None = None) -> np.ndarray:
        """Read ``addresses`` for ``threads`` (one entry per access); the values, in the same shape. ``sync``
        orders accesses through mbarriers too."""
        addresses = np.asarray(addresses, np.int64)
        shape = addresses.shape
        addresses = addresses.ravel()
        threads = np.broadcast_to(np.asarray(threads, np.int64), shape).ravel()
        self._check_bounds(addresses, threads, "load from")
        clash = self._unordered(
            self._writer,
            self._writer_block,
            self._writer_interval,
            addresses,
            threads,
            block,
            interval,
            self._writer_clock,
            sync,
        )
        if clash.any():
            self._race("a load after a store", clash, addresses, threads, self._writer)
        self._check_after_atomic("a load", addresses, threads, block, interval, sync)
        self._check_in_flight(addresses, threads, "a load")
        self.check_async_writes(addresses, threads, "a load", sync)
        previous = self._reader[addresses]
        previous_clock = self._reader_clock[addresses]
        fresh = (previous == NO_THREAD) | (self._reader_interval[addresses] != interval)
        self._reader[addresses] = np.where(fresh | (previous == threads), threads, MANY_THREADS)
        order = np.argsort(addresses, kind="stable")
        a, t = addresses[order], threads[order]
        shared = a[1:][(a[1:] == a[:-1]) & (t[1:] != t[:-1])]
        self._reader[shared] = MANY_THREADS  # read by several threads in this one instruction
        self._reader_block[addresses] = block
        self._reader_interval[addresses] = interval
        clocks = np.zeros(addresses.shape, np.int64) if sync is None else sync.now(threads)
        self._reader_clock[addresses] = clocks
        if sync is not None:
            self._note_readers(addresses, threads, clocks, previous, previous_clock, fresh)
        return self.data[addresses].reshape(shape)

    def _check_after_atomic(self, what: str, addresses, threads, block: int, interval: int, sync) -> None:
        if not self._atomic_used:  # (most memories never see an atomic: skip the check's cost)
            return
        clash = self._unordered(
            self._atomic,
            self._atomic_block,
            self._atomic_interval,
            addresses,
            threads,
            block,
            interval,
            self._atomic_clock,
            sync,
        )
        if clash.any():
            self._race(f"{what} after an atomic", clash, addresses, threads, self._atomic)

    def atomic(self, addresses, update, operands, threads, block: int, interval: int, sync=None) -> np.ndarray:
        """Atomic read-modify-writes of ``addresses`` by the CTA-wide ``threads`` (one entry per access):
        ``update(old, *operand values)`` gives each new value; several threads on one element apply one after the
        other in thread order (the hardware serialises them in some order). Returns the old value each access saw.
        An atomic races with an unordered plain store or load by another thread, never with another atomic.

        Example:
            >>> mem = Memory("C", np.zeros(2, np.int32), "global")
            >>> old = mem.atomic(np.array([0, 0, 1]), np.add, [np.array([5, 7, 1], np.int32)], np.array([0, 1, 2]),
            ...                  block=0, interval=0)
            >>> old.tolist(), mem.data.tolist(), mem.atomics.tolist(), mem.writes.tolist()
            ([0, 5, 0], [12, 1], [2, 1], [0, 0])
        """
        addresses = np.asarray(addresses, np.int64).ravel()
        threads = np.broadcast_to(np.asarray(threads, np.int64), addresses.shape).ravel()
        operands = [np.broadcast_to(np.asarray(o), addresses.shape).ravel() for o in operands]
        self._check_bounds(addresses, threads, "atomic on")
        for who, who_block, who_interval, who_clock, kind in (
            (self._writer, self._writer_block, self._writer_interval, self._writer_clock, "an atomic after a store"),
            (self._reader, self._reader_block, self._reader_interval, self._reader_clock, "an atomic after a load"),
        ):
            clash = self._unordered(who, who_block, who_interval, addresses, threads, block, interval, who_clock, sync)
            if clash.any():
                self._race(kind, clash, addresses, threads, who)
        self._check_async_reads(addresses, threads, block)
        self.check_async_writes(addresses, threads, "an atomic", sync)
        order = np.lexsort((threads, addresses))
        rank = np.empty(addresses.size, np.int64)  # how many accesses of the same element come before this one
        sorted_addresses = addresses[order]
        starts = np.r_[0, np.nonzero(sorted_addresses[1:] != sorted_addresses[:-1])[0] + 1]
        rank[order] = np.arange(addresses.size) - np.repeat(starts, np.diff(np.r_[starts, addresses.size]))
        old = np.empty(addresses.size, self.data.dtype)
        for r in range(int(rank.max(initial=-1)) + 1):
            turn = rank == r  # distinct elements: one vectorised step
            old[turn] = self.data[addresses[turn]]
            self.data[addresses[turn]] = np.asarray(update(old[turn], *[o[turn] for o in operands])).astype(
                self.data.dtype
            )
        np.add.at(self.atomics, addresses, 1)
        self._atomic_used = True
        previous = self._atomic[addresses]
        fresh = (previous == NO_THREAD) | (self._atomic_interval[addresses] != interval)
        fresh |= self._atomic_block[addresses] != block
        self._atomic[addresses] = np.where(fresh | (previous == threads), threads, MANY_THREADS)
        same, sorted_threads = sorted_addresses[1:] == sorted_addresses[:-1], threads[order]
        several = same & (sorted_threads[1:] != sorted_threads[:-1])  # several threads in this one instruction
        self._atomic[sorted_addresses[1:][several]] = MANY_THREADS
        self._atomic_block[addresses] = block
        self._atomic_interval[addresses] = interval
        self._atomic_clock[addresses] = 0 if sync is None else sync.now(threads)
        self.proxy_fenced[addresses] = False
        return old
