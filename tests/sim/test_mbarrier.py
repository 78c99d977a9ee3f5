"""The simulator's mbarrier model (``sim/mbarrier.py``) against the PTX ISA's mbarrier rules: phases complete when
pending arrivals and the tx-count are both zero; try_wait.parity succeeds once the phase of that parity completed."""

import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.sim.mbarrier import Mbarrier
from tirx_layout.sim.memory import AsyncWrite, SyncClocks

from kernels import parse
from kernels.helper_calls import call, u32


def test_a_phase_completes_when_arrivals_and_tx_count_both_reach_zero():
    bar = Mbarrier(count=2, warps=1, name="full")
    bar.expect_tx(64)
    bar.arrive()
    bar.arrive()
    assert (bar.completed, bar.pending, bar.tx) == (0, 0, 64)  # arrivals done, 64 bytes still expected
    bar.complete_tx(48)
    assert bar.completed == 0
    bar.complete_tx(16)
    assert (bar.completed, bar.pending, bar.tx) == (1, 2, 0)  # phase 0 done, phase 1 expects 2 arrivals again
    assert bar.wait_returns(0) and not bar.wait_returns(1)


def test_try_wait_parity_on_a_fresh_barrier_returns_for_the_phase_before_phase_0():
    bar = Mbarrier(count=1, warps=1)
    assert bar.wait_returns(1) and not bar.wait_returns(0)
    with pytest.raises(sim.SimulationError, match="parity 2; it must be 0 or 1"):
        bar.wait_returns(2)


def test_mbarrier_counts_and_tx_counts_outside_the_isa_ranges_are_errors():
    with pytest.raises(sim.SimulationError, match=r"count 0: the count must be in \[1, 2\^20 - 1\]"):
        Mbarrier(count=0, warps=1)
    with pytest.raises(sim.SimulationError, match=r"tx-count to 1048576"):
        Mbarrier(count=1, warps=1).expect_tx(1 << 20)


def _hand_off(consumer_waits=True):
    wait = call("mbarrier", "wait", "T.address_of(bars[0])", u32(0))
    arrive = call("mbarrier", "arrive", "T.address_of(bars[0])")
    init = call("mbarrier", "init", "T.address_of(bars[0])", u32(32))
    return parse(f"""
@T.prim_func
def k(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
    T.device_entry()
    tx = T.thread_id([64])
    bars = T.alloc_shared((1,), "uint64")
    buf = T.alloc_shared((32,), "float32")
    if tx == 0:
        {init}
    T.cuda.cta_sync()
    if tx < 32:
        {wait if consumer_waits else "T.evaluate(0)"}
        B[tx] = buf[31 - tx]
    else:
        buf[tx - 32] = A[tx - 32]
        {arrive}
""")


def test_generic_shared_memory_handed_over_through_an_mbarrier_phase_is_ordered():
    # the consumer warp comes first in the program: it waits until the producer warp has stored and arrived
    a = np.arange(32, dtype=np.float32)
    np.testing.assert_array_equal(sim.run(_hand_off(), [a])["B"], a[::-1])
    with pytest.raises(sim.DataRace, match=r"data race on shared buf\[\d+\]: a store after a load"):
        sim.run(_hand_off(consumer_waits=False), [a])


def test_mbarrier_helpers_run_without_tensor_memory():
    # an mbarrier touches no TMEM: the CTA of a kernel of mbarriers and shared memory ends with none made
    assert sim.run(_hand_off(), [np.arange(32, dtype=np.float32)]).tmem == [None]


def test_a_completed_phase_publishes_its_own_count_next_to_the_arrivals_clocks():
    # PTX ISA: arrive releases, the complete-tx of a TMA copy releases the copy's writes, a successful wait
    # acquires. Thread 0 arrives (its epoch 0); the phase completes only when the 64 bytes arrive.
    clocks = SyncClocks(threads=2, base=0)
    bar = Mbarrier(count=1, warps=1, name="full", agent=clocks.add_agent())
    bar.expect_tx(64)
    bar.arrive(clocks=clocks.release(0))
    assert bar.done_clocks is None  # nothing completed yet: a wait would acquire nothing
    bar.complete_tx(64)
    assert bar.done_clocks.tolist() == [0, -1, 1]  # thread 0's epoch 0, nothing of thread 1, one phase of full
    clocks.acquire(1, bar.done_clocks)
    assert clocks.seen_phase(np.array([0, 1]), bar.agent).tolist() == [0, 1]


def test_a_commit_carries_what_its_thread_acquired_to_the_next_barriers_waiters():
    # The refill chain: the TMA write completes phase 0 of full; thread 1 (the MMA issuer) waits on it, issues the
    # MMA and commits to empty; thread 0 (the producer) waits on empty and so is ordered after the TMA write.
    clocks = SyncClocks(threads=2, base=0)
    full = Mbarrier(count=1, warps=1, name="full", agent=clocks.add_agent())
    empty = Mbarrier(count=1, warps=1, name="empty", agent=clocks.add_agent())
    full.arrive(clocks=clocks.release(0))  # the producer's arrive.expect_tx (bytes already counted)
    clocks.acquire(1, full.done_clocks)
    empty.arrive(warp=0, generation=0, clocks=clocks.view(1))  # tcgen05.commit by thread 1
    assert clocks.seen_phase(np.array([0]), full.agent).tolist() == [0]  # not before its wait on empty
    clocks.acquire(0, empty.done_clocks)
    assert clocks.seen_phase(np.array([0]), full.agent).tolist() == [1]
    # the commit carries no epoch of thread 1 itself: its own generic writes are not released by it
    assert empty.done_clocks[1] == -1


def test_a_barrier_initialised_again_counts_on_so_an_old_phase_does_not_pass_for_a_new_one():
    clocks = SyncClocks(threads=1, base=0)
    old = Mbarrier(count=1, warps=1, name="bars[0]", agent=clocks.add_agent())
    old.arrive(clocks=clocks.release(0))
    clocks.acquire(0, old.done_clocks)  # thread 0 saw phase 0 of the first barrier complete
    new = Mbarrier(count=1, warps=1, name="bars[0]", agent=old.agent, earlier_phases=old.completed)
    write = AsyncWrite(np.array([0]), "TMA load", bar=new, phase=0)
    assert not write.seen_by(clocks, np.array([0]))[0]  # the new barrier's phase 0 is not the old one's
    new.arrive(clocks=clocks.release(0))
    clocks.acquire(0, new.done_clocks)
    assert write.seen_by(clocks, np.array([0]))[0]
