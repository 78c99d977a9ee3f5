"""Named barriers (``bar.sync a, b`` / ``bar.arrive a, b``, the ``sync`` helpers ``named_barrier_sync`` /
``named_barrier_arrive``) in the simulator, checked against the PTX ISA's ``bar`` section: the barrier completes
when ``b`` threads have arrived, counting both kinds; ``bar.sync`` waits for that (the other roles run meanwhile),
``bar.arrive`` does not; the arrivers' earlier accesses are ordered before the waiters' later ones. The kernels are
two warps in two roles, as a ping-pong schedule uses them."""

import numpy as np
import pytest
import tvm

import tirx_layout
from tirx_layout import sim
from tirx_layout.ops.helpers.sync import named_barrier_arrive, named_barrier_sync
from tirx_layout.sim import DataRace, SimulationError
from tirx_layout.sim.sync import NamedBarrier


def _parse(text: str):
    names = {"T": tvm.script.tirx, "sync": named_barrier_sync, "arrive": named_barrier_arrive}
    names.update({n: getattr(tirx_layout, n) for n in tirx_layout.__all__})
    return tvm.script.from_source(text, extra_vars=names)


def _handoff(writer_signal: str, reader_wait: str, count: int = 64, first: str = "reader") -> str:
    """Warp 0 writes X to shared memory and signals; warp 1 waits and copies it out. ``first`` says which role's
    branch comes first in program order (the reader's wait must let the writer run)."""
    reader = f"""
        if tx // 32 == 1:
            {reader_wait}
            B[tx - 32] = X[tx - 32]"""
    writer = f"""
        if tx // 32 == 0:
            X[tx] = A[tx]
            {writer_signal}"""
    branches = reader + writer if first == "reader" else writer + reader
    return f"""
@T.prim_func
def k(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
    T.device_entry()
    tx = T.thread_id([64])
    X = T.alloc_shared((32,), "float32")
    if tx < 64:{branches}
""".replace("{count}", str(count))


ARRIVE = "T.evaluate(arrive(3, 64))"
SYNC = "T.evaluate(sync(3, 64))"


@pytest.mark.parametrize("first", ["reader", "writer"])
@pytest.mark.parametrize("signal", [ARRIVE, SYNC])
def test_an_arrive_or_sync_orders_the_writers_stores_before_the_waiting_readers_loads(first, signal):
    a = np.arange(32, dtype=np.float32)
    result = sim.run(_parse(_handoff(signal, SYNC, first=first)), {"A": a})
    np.testing.assert_array_equal(result["B"], a)


def test_without_the_barrier_the_reader_races_the_writer():
    with pytest.raises(DataRace, match=r"X\[0\]"):
        sim.run(_parse(_handoff("T.evaluate(0)", "T.evaluate(0)", first="writer")), {"A": np.ones(32, np.float32)})


def test_a_sync_that_too_few_threads_reach_would_hang():
    # 64 expected, but only the reader's 32 arrive: nothing can complete the phase
    text = _handoff("T.evaluate(0)", SYNC)
    with pytest.raises(SimulationError, match=r"bar.sync 3, 64: 32 of 64 threads have arrived in phase 0"):
        sim.run(_parse(text), {"A": np.ones(32, np.float32)})


def test_more_arrivals_than_the_count_or_two_counts_in_one_phase_are_refused():
    bar = NamedBarrier(3)
    assert bar.arrive([0, 1], 2, None, []) and bar.phase == 1  # phase 0 complete: the next starts empty
    with pytest.raises(SimulationError, match=r"3 threads arrive in phase 1, more than the 2 that complete it"):
        bar.arrive([4, 5, 6], 2, None, [])
    other = NamedBarrier(4)
    other.arrive([2], 4, None, [])
    with pytest.raises(SimulationError, match=r"named barrier 4: arrivals of one phase name 4 and 2 threads"):
        other.arrive([3], 2, None, [])


def test_the_helpers_refuse_a_barrier_or_count_the_hardware_has_not():
    with pytest.raises(ValueError, match=r"barrier 16 is not one of the CTA's named barriers 0..15"):
        named_barrier_arrive(16, 64)
    with pytest.raises(ValueError, match=r"threads must be a positive multiple of 32 \(whole warps\), got 48"):
        named_barrier_sync(3, 48)
