"""The simulator: it computes what the kernel says, and it reports kernels that fault or race instead of hiding them."""

import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.sim import DataRace, OutOfBounds, SimulationError
from tirx_layout.sim.memory import Memory, SyncClocks, join

from kernels import parse

STAGING = """
@T.prim_func
def k(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    Sm = T.alloc_shared((128,), "float32")
    Sm[tx] = A[tx]
    T.cuda.cta_sync()
    B[tx] = Sm[127 - tx]
"""


def test_barrier_separated_exchange_runs_and_counts_writes():
    a = np.arange(128, dtype=np.float32)
    result = sim.run(parse(STAGING), {"A": a})
    np.testing.assert_array_equal(result["B"], a[::-1])
    assert (result.writes["B"] == 1).all() and (result.writes["A"] == 0).all()


def test_missing_barrier_is_a_shared_memory_race():
    with pytest.raises(
        DataRace, match=r"data race on shared Sm\[127\]: a load after a store by thread 0 and thread 127"
    ):
        sim.run(parse(STAGING.replace("    T.cuda.cta_sync()\n", "")), {"A": np.zeros(128, np.float32)})


def test_out_of_bounds_store_is_reported():
    planted = STAGING.replace("B[tx] = Sm[127 - tx]", "B[tx + 1] = Sm[127 - tx]")
    with pytest.raises(OutOfBounds, match=r"out-of-bounds store to B\[128\] \(size 128, global\) by thread 127"):
        sim.run(parse(planted))


def test_out_of_bounds_shared_load_is_reported():
    planted = STAGING.replace("Sm[127 - tx]", "Sm[128 - tx]")
    with pytest.raises(OutOfBounds, match=r"load from Sm\[128\]"):
        sim.run(parse(planted))


def test_two_threads_storing_one_element_race():
    planted = STAGING.replace("B[tx] = Sm[127 - tx]", "B[tx // 2] = Sm[127 - tx]")
    with pytest.raises(DataRace, match=r"B\[0\]: threads 0 and 1 store to it in the same instruction"):
        sim.run(parse(planted))


def test_ctas_never_synchronise_on_global_memory():
    text = """
@T.prim_func
def k(A: T.Buffer((32,), "float32")):
    T.device_entry()
    bx = T.cta_id([2])
    tx = T.thread_id([32])
    A[tx] = A[tx] + T.float32(1)
"""
    with pytest.raises(DataRace, match=r"global A\[0\]: a load after a store by thread 32 and thread 0"):
        sim.run(parse(text))


def test_divergent_control_flow_and_guards():
    text = """
@T.prim_func
def k(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32")):
    T.device_entry()
    tx = T.thread_id([64])
    if tx % 3 == 0:
        B[tx] = A[tx] * 2
    else:
        B[tx] = T.if_then_else(tx < 63, A[tx + 1], -1)
    for i in range(tx % 4):
        B[tx] = B[tx] + 100
"""
    a = np.arange(64, dtype=np.int32) * 10
    result = sim.run(parse(text), [a])
    expected = np.where(np.arange(64) % 3 == 0, a * 2, np.append(a[1:], -1)) + 100 * (np.arange(64) % 4)
    np.testing.assert_array_equal(result["B"], expected)


def test_integer_semantics_follow_c():
    text = """
@T.prim_func
def k(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
    T.device_entry()
    tx = T.thread_id([8])
    B[tx] = T.truncdiv(A[tx], 3) + T.truncmod(A[tx], 3) * 100 + (A[tx] >> 1) * 10000
"""
    a = np.array([-7, -6, -1, 0, 1, 5, 6, 7], np.int32)
    expected = np.fix(a / 3).astype(np.int32) + np.fmod(a, 3) * 100 + (a >> 1) * 10000
    np.testing.assert_array_equal(sim.run(parse(text), [a])["B"], expected)


def test_inputs_are_checked():
    with pytest.raises(ValueError, match=r"\['C'\] are not parameters"):
        sim.run(parse(STAGING), {"C": np.zeros(4)})
    with pytest.raises(ValueError, match=r"input A has shape \(4,\), the kernel declares \(128,\)"):
        sim.run(parse(STAGING), {"A": np.zeros(4)})


def test_reads_by_many_threads_then_a_write_is_a_race():
    mem = Memory("S", np.zeros(4, np.float32), "shared")
    mem.load(np.array([2, 2]), np.array([0, 1]), block=0, interval=0)
    with pytest.raises(DataRace, match="several threads"):
        mem.store(np.array([2]), np.array([1.0]), np.array([0]), block=0, interval=0)
    mem.store(np.array([2]), np.array([1.0]), np.array([0]), block=0, interval=1)  # after a barrier: fine


def _read_by_three_then_arrive():
    """Threads 1, 2 and 3 read element 2 (1 and 2 in one instruction, then 3), then each arrives on an mbarrier;
    the clocks and what each arrival published."""
    mem, clocks = Memory("S", np.zeros(4, np.float32), "shared"), SyncClocks(threads=4, base=0)
    mem.load(np.array([2, 2]), np.array([1, 2]), block=0, interval=0, sync=clocks)
    mem.load(np.array([2]), np.array([3]), block=0, interval=0, sync=clocks)
    return mem, clocks, {t: clocks.release(t) for t in (1, 2, 3)}


def test_reads_by_many_threads_each_released_to_the_writer_are_ordered_before_its_store():
    # PTX ISA memory model: each read is program-ordered before its thread's release (the arrive), the writer's
    # acquire (the wait) synchronizes with all of them, so every read happens before the store: no race
    mem, clocks, published = _read_by_three_then_arrive()
    clocks.acquire(0, join(join(published[1], published[2]), published[3]))
    mem.store(np.array([2]), np.array([1.0]), np.array([0]), block=0, interval=0, sync=clocks)
    assert mem.data[2] == 1.0


@pytest.mark.parametrize("missing", [1, 2, 3])
def test_reads_by_many_threads_one_of_them_unreleased_to_the_writer_race_with_its_store(missing):
    mem, clocks, published = _read_by_three_then_arrive()
    seen = None
    for thread, clock in published.items():
        seen = seen if thread == missing else join(seen, clock)
    clocks.acquire(0, seen)
    with pytest.raises(DataRace, match=r"S\[2\]: a store after a load by thread 0 and several threads"):
        mem.store(np.array([2]), np.array([1.0]), np.array([0]), block=0, interval=0, sync=clocks)


def test_a_read_after_the_acquire_is_checked_again():
    # the writer acquired the three reads, but thread 1 read again afterwards (a new epoch, not released): a race
    mem, clocks, published = _read_by_three_then_arrive()
    clocks.acquire(0, join(join(published[1], published[2]), published[3]))
    mem.load(np.array([2]), np.array([1]), block=0, interval=0, sync=clocks)
    with pytest.raises(DataRace, match="a store after a load"):
        mem.store(np.array([2]), np.array([1.0]), np.array([0]), block=0, interval=0, sync=clocks)


def test_unsupported_statement_is_an_error_not_a_silent_skip():
    text = """
@T.prim_func
def k(A: T.Buffer((8,), "int32")):
    T.device_entry()
    tx = T.thread_id([8])
    A[tx] = T.popcount(A[tx])
"""
    with pytest.raises(SimulationError, match="does not implement the intrinsic popcount"):
        sim.run(parse(text))
