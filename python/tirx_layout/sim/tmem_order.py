"""When two tcgen05 accesses to one TMEM cell are ordered: the PTX ISA's tcgen05 memory-consistency rules (9.7.16.6),
checked per warp with vector clocks.

What the rules say, and how they are modelled:

* ``tcgen05.ld``/``st``/``cp`` are *asynchronous*: a thread's own ones are ordered only through completion
  (``tcgen05.wait::ld``/``wait::st``; ``tcgen05.commit`` and an mbarrier for ``cp``). Here each warp keeps the cells
  of its uncompleted loads, stores and copies; a later access of the same warp that conflicts with them is an error.
* Across threads, an async access before a barrier is ordered before an async access after it only when the first
  has completed and its thread then ran ``tcgen05.fence::before_thread_sync`` (``tcgen05.commit`` does that for the
  copies it commits), and the second thread ran ``tcgen05.fence::after_thread_sync`` after the barrier (9.7.16.6.3,
  the patterns of 9.7.16.6.4.4). Here ``fence::before`` ends a warp's *release window* (its completed accesses get
  published at the next barrier or commit-completed mbarrier phase), and ``fence::after`` takes in what the sync
  points since the warp's last fence published. Access ``X`` by warp ``A`` in A's window ``s`` is ordered before an
  access by warp ``B`` iff ``s < known[B, A]``.
* ``tcgen05.mma`` is asynchronous too (kind ``mma``): it writes D and reads A (in TMEM) and scale factors. Its
  completion is observed only through ``tcgen05.commit`` and a wait on the mbarrier the commit arrives at. The
  ISA's *pipelined pairs* (9.7.16.6.2) need no completion in between: an MMA after an earlier MMA or copy of the
  same thread. Here each warp's commits are numbered (``generation``); a copy or MMA belongs to the warp's next
  commit. A wait that sees a phase covering generation ``g`` of warp ``A`` completes A's copies and MMAs up to ``g``
  for A itself and lets the waiting warp *acquire* them (``acquired``); a CTA barrier and an arrive pass on what
  the threads before them acquired; ``fence::after`` takes it in (``known_done``). Another warp's access to cells a
  copy or MMA writes, or a write over cells one reads, is ordered only so: by the generation, never by a CTA
  barrier alone. An arrive on an mbarrier (a commit's included) also publishes the arriving warp's released windows
  and what it knows, for the ld/st rules above.
* ``tcgen05.alloc``/``dealloc``/``relinquish_alloc_permit`` are *synchronous* and touch no cells; ``dealloc`` needs
  every warp's accesses completed, and each other warp's last access before a barrier.

Example:
    >>> order = TmemOrder(warps=2, cells=4)
    >>> order.access(0, np.array([1]), write=True, kind="st"); order.complete(0, "st"); order.fence_before(0)
    >>> order.barrier(); order.fence_after(1)
    >>> order.access(1, np.array([1]), write=False, kind="ld")   # ordered: no error
"""

from __future__ import annotations

import numpy as np

from .memory import DataRace, SimulationError

NOBODY = -1
_WAIT = {
    "ld": "tcgen05.wait::ld",
    "st": "tcgen05.wait::st",
    "cp": "tcgen05.commit and an mbarrier wait",
    "mma": "tcgen05.commit and an mbarrier wait",
}
#: Which earlier uncompleted access of the same warp a later one of each kind must wait for (9.7.16.6.4.2): a store
#: waits for every earlier access of its cells, a load for earlier writes. An MMA after the same thread's MMA or
#: copy is a pipelined pair (9.7.16.6.2) and waits for nothing of theirs.
_CLASHES = {
    ("ld", False): ("st", "cp", "mma"),
    ("st", True): ("ld", "st", "cp", "mma"),
    ("cp", True): ("ld", "st", "cp", "mma"),
    ("mma", True): ("ld", "st"),
    ("mma", False): ("st",),
}
_HOW = (
    "tcgen05 accesses of different warps are ordered only by completion, tcgen05.fence::before_thread_sync, "
    "a barrier, then tcgen05.fence::after_thread_sync (PTX ISA 9.7.16.6.4.4)"
)


class TmemOrder:
    """The ordering state of one CTA's TMEM accesses: ``warps`` warps over ``cells`` 32-bit cells."""

    def __init__(self, warps: int, cells: int):
        self.warps = warps
        self.window = np.zeros(warps, np.int64)  # each warp's current release window
        self.known = np.zeros((warps, warps), np.int64)  # known[B, A]: A's windows below this are ordered for B
        self.offered = np.zeros((warps, warps), np.int64)  # what B's next fence::after takes in
        self.writer = np.full(cells, NOBODY, np.int64)
        self.writer_window = np.zeros(cells, np.int64)
        self.writer_kind = np.zeros(cells, np.int8)  # index into _KINDS of the last write's instruction
        self.read_window = np.full((warps, cells), NOBODY, np.int64)  # per warp: window of its last read, or -1
        self.pending = {kind: np.zeros((warps, cells), bool) for kind in _WAIT}
        self.since_barrier: set[int] = set()  # warps that touched TMEM since the last CTA barrier
        self.commits = np.zeros(warps, np.int64)  # how many tcgen05.commit each warp has issued
        self.generation = np.zeros((warps, cells), np.int64)  # the commit that covers a pending copy or MMA
        self.mma_thread = np.full(cells, NOBODY, np.int64)  # the thread of the last pending MMA on each cell
        self.observed = np.full(warps, -1, np.int64)  # per warp: its last commit some warp has seen complete
        # Completion of copies and MMAs travels by commit generations, not windows: acquired[B, A] is the last of
        # A's commits B has seen complete (an mbarrier wait, or a barrier after another warp saw it); known_done[B,
        # A] what B's fence::after took in. A CTA barrier alone never completes anything.
        self.acquired = np.full((warps, warps), -1, np.int64)
        self.known_done = np.full((warps, warps), -1, np.int64)
        self.async_read = np.zeros((warps, cells), bool)  # cells a copy or MMA of each warp reads

    # ---- accesses -----------------------------------------------------------------------------------------------

    def access(self, warp: int, cells: np.ndarray, write: bool, kind: str, thread: int | None = None) -> None:
        """Warp ``warp``'s ``kind`` (``ld``/``st``/``cp``/``mma``; an MMA names its issuing ``thread``) reads or
        writes ``cells``; raise if it is unordered with an earlier access."""
        cells = np.unique(np.asarray(cells, np.int64).ravel())
        self._same_warp(warp, cells, write, kind)
        if kind == "mma":
            self._same_issuer(warp, cells, thread)
        unordered = self._unordered(warp, cells)
        if unordered.any():
            cell = cells[unordered][0]
            self._race(cell, warp, int(self.writer[cell]), f"after a {_WORDS[self.writer_kind[cell]]} by", kind)
        if write:
            for other in range(self.warps):
                seen = self.read_window[other, cells]
                late = (other != warp) & (seen != NOBODY) & (seen >= self.known[warp, other])
                if late.any():
                    after = "an MMA's write after a load by" if kind == "mma" else "a store after a load by"
                    self._race(cells[late][0], warp, other, after, kind)
                running = (other != warp) & self.async_read[other, cells]
                running &= self.generation[other, cells] > self.known_done[warp, other]
                if running.any():
                    self._race(cells[running][0], warp, other, "a write over what reads", kind)
            self.writer[cells], self.writer_window[cells] = warp, self.window[warp]
            self.writer_kind[cells] = _KINDS.index(kind)
            self.read_window[:, cells] = NOBODY
            self.async_read[:, cells] = False
        elif kind in ("cp", "mma"):
            self.async_read[warp, cells] = True
        else:
            self.read_window[warp, cells] = self.window[warp]
        self.pending[kind][warp, cells] = True
        if kind in ("cp", "mma"):
            self.generation[warp, cells] = self.commits[warp]
        if kind == "mma":
            self.mma_thread[cells] = thread
        self.since_barrier.add(warp)

    def _same_warp(self, warp, cells, write, kind):
        # One warp's async accesses are ordered only through completion (9.7.16.6.4.2): a store after any
        # uncompleted access of the same cells, or a load after an uncompleted store or copy, is unordered.
        clashes = _CLASHES.get((kind, write), ("ld", "st", "cp", "mma") if write else ("st", "cp", "mma"))
        for earlier in clashes:
            hit = self.pending[earlier][warp, cells]
            if hit.any():
                # an MMA still running is another unit racing the warp (a DataRace); the rest are misuse of one warp
                cell = cells[hit][0]
                wait = _WAIT[earlier]
                if earlier in ("cp", "mma") and self.generation[warp, cell] < self.commits[warp]:
                    wait = "an mbarrier wait that sees the phase its tcgen05.commit arrives at"  # committed already
                error = DataRace if earlier == "mma" else SimulationError
                raise error(
                    f"tcgen05.{kind} by warp {warp} touches TMEM cell {_cell(cell)} that "
                    f"its own tcgen05.{earlier} has not finished with: put {wait} "
                    "between them (PTX ISA 9.7.16.6.4.2)"
                )

    def _same_issuer(self, warp, cells, thread):
        # The pipelined MMA -> MMA pair is one thread's (9.7.16.6.2); another thread's MMA is not ordered after it.
        busy = self.pending["mma"][warp, cells] & (self.mma_thread[cells] != thread)
        if busy.any():
            cell = cells[busy][0]
            raise DataRace(
                f"data race on TMEM cell {_cell(cell)}: tcgen05.mma issued by thread {thread} and by thread "
                f"{int(self.mma_thread[cell])} touch it with nothing ordering them; one thread issues an MMA "
                "(guard the issue), or the second waits for the first's tcgen05.commit on an mbarrier"
            )

    def _unordered(self, warp, cells):
        who = self.writer[cells]
        other = np.where(who == NOBODY, 0, who)
        asynchronous = np.isin(self.writer_kind[cells], [_KINDS.index("cp"), _KINDS.index("mma")])
        late = np.where(
            asynchronous,
            self.generation[other, cells] > self.known_done[warp, other],
            self.writer_window[cells] >= self.known[warp, other],
        )
        return (who != NOBODY) & (who != warp) & late

    def _race(self, cell, warp, other, what, kind="access"):
        writer_kind = _KINDS[self.writer_kind[cell]]
        running = what.startswith("a write over")
        if running or (what.startswith("after") and writer_kind in ("cp", "mma")):
            # name the step that is missing: the commit, the wait on its mbarrier, or the fence after it
            generation = self.generation[other, cell]
            if generation >= self.commits[other]:
                missing = f"a tcgen05.commit by warp {other} and an mbarrier wait that sees it"
            elif generation <= self.acquired[warp, other]:
                missing = "tcgen05.fence::after_thread_sync after the mbarrier wait"
            else:
                missing = "an mbarrier wait (mbarrier_wait) that sees the phase its tcgen05.commit arrives at"
            does = "reads" if running else "writes"
            raise DataRace(
                f"data race on TMEM cell {_cell(cell)}: a tcgen05.{kind} by warp {warp} of a cell a tcgen05."
                f"{writer_kind if not running else 'mma or cp'} issued by warp {other} {does}, before its "
                f"completion was observed; missing: {missing} (PTX ISA 9.7.16.6.4.4)"
            )
        raise DataRace(
            f"data race on tmem TMEM cell {_cell(cell)}: an access by warp {warp} {what} warp {other}, "
            f"not ordered; {_HOW}"
        )

    # ---- completion, fences and sync points -------------------------------------------------------------------

    def complete(self, warp: int, kind: str) -> None:
        """``tcgen05.wait::ld/st`` (kind ``ld``/``st``), or the commit of copies (``cp``), by ``warp``."""
        self.pending[kind][warp] = False

    def fence_before(self, warp: int) -> None:
        """``tcgen05.fence::before_thread_sync``: the warp's completed accesses are released; uncompleted ones move
        to the next window (a fence does not complete them)."""
        self._release(warp, ("ld", "st", "cp", "mma"))

    def commit(self, warp: int) -> tuple[np.ndarray, int]:
        """``tcgen05.commit`` by ``warp``: the mbarrier it arrives at when its copies and MMAs complete publishes
        them (the commit's implicit ``fence::before_thread_sync``). Returns what a wait on that mbarrier takes in,
        and the commit's generation (the warp's pending copies and MMAs so far). They stay uncompleted for the warp
        itself until it sees the phase complete (:meth:`mbarrier_wait`)."""
        self._release(warp, ("ld", "st"))
        self.commits[warp] += 1
        return self.publish(warp), int(self.commits[warp]) - 1

    def publish(self, warp: int) -> np.ndarray:
        """What an arrive of ``warp`` on an mbarrier publishes: its released windows and what it has taken in."""
        published = self.known[warp].copy()
        published[warp] = max(published[warp], self.window[warp])
        return published

    def _release(self, warp: int, unfinished: tuple) -> None:
        self.window[warp] += 1
        busy = np.zeros(self.writer.shape, bool)
        for kind in unfinished:
            busy |= self.pending[kind][warp]
        mine = busy & (self.writer == warp)
        self.writer_window[mine] = self.window[warp]
        reads = busy & (self.read_window[warp] != NOBODY)
        self.read_window[warp, reads] = self.window[warp]

    def barrier(self) -> None:
        """A CTA barrier: every warp's released windows, and the completions any warp has seen, are offered to
        every warp's next ``fence::after``."""
        np.maximum(self.offered, self.window[None, :], out=self.offered)
        np.maximum(self.acquired, self.acquired.max(axis=0)[None, :], out=self.acquired)
        self.since_barrier.clear()

    def seen_done(self, warp: int) -> np.ndarray:
        """The commit generation of each warp that ``warp`` has seen complete (what an arrive of it passes on)."""
        return self.acquired[warp].copy()

    def mbarrier_wait(self, warp: int, published: np.ndarray, generations: np.ndarray) -> None:
        """``warp`` saw an mbarrier phase complete whose arrivals published ``published`` and whose commits cover
        each warp's copies and MMAs up to generation ``generations[w]`` (-1: none)."""
        np.maximum(self.offered[warp], published, out=self.offered[warp])
        np.maximum(self.observed, generations, out=self.observed)
        np.maximum(self.acquired[warp], generations, out=self.acquired[warp])
        done = self.generation[warp] <= generations[warp]
        for kind in ("cp", "mma"):
            self.pending[kind][warp] &= ~done

    def fence_after(self, warp: int) -> None:
        """``tcgen05.fence::after_thread_sync``: later accesses of ``warp`` are ordered after what it was offered."""
        np.maximum(self.known[warp], self.offered[warp], out=self.known[warp])
        np.maximum(self.known_done[warp], self.acquired[warp], out=self.known_done[warp])
        # its own copies and MMAs that another warp saw complete, passed on by a barrier: complete for it too
        done = self.generation[warp] <= self.known_done[warp, warp]
        for kind in ("cp", "mma"):
            self.pending[kind][warp] &= ~done

    # ---- deallocation -------------------------------------------------------------------------------------------

    def check_dealloc(self, warp: int) -> None:
        """``tcgen05.dealloc`` by ``warp`` (synchronous): every access of the CTA must have completed (a copy or MMA
        once any warp has seen its commit's mbarrier phase), and each other warp's last access must come before a
        barrier."""
        for kind, cells in self.pending.items():
            if kind in ("cp", "mma"):  # complete once any warp saw their commit's phase (then a barrier: below)
                cells = cells & (self.generation > self.observed[:, None])
            busy = np.argwhere(cells)
            if busy.size:
                other, cell = (int(v) for v in busy[0])
                raise SimulationError(
                    f"tcgen05.dealloc while warp {other}'s tcgen05.{kind} of TMEM cell "
                    f"{_cell(cell)} has not completed ({_WAIT[kind]} first)"
                )
        others = sorted(self.since_barrier - {warp})
        if others:
            raise SimulationError(
                f"tcgen05.dealloc by warp {warp} with no barrier after warp {others[0]}'s last TMEM access"
            )


_KINDS = ("st", "ld", "cp", "mma")
_WORDS = ("store", "load", "copy", "MMA")


def _cell(index) -> str:
    lane, column = divmod(int(index), 512)
    return f"(lane {lane}, column {column})"


__all__ = ["TmemOrder"]
