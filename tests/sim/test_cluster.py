"""The simulator's clusters (``sim/cluster.py``): the CTAs of a cluster run together and see their coordinates; the
cluster barrier completes only when every thread of every CTA has arrived (a CTA that never arrives hangs the
others, a wait without an arrive and a second arrive without a wait are errors); a peer's write and a read of it are
ordered only through a cluster barrier or a peer's mbarrier; a multicast load lands in the CTAs of its mask only.
Expected values are computed here from the kernels' definitions."""

import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.sim import DataRace, SimulationError

from kernels import parse

ARCH = "sm_90a"


def test_each_cta_sees_its_coordinates_in_a_two_by_two_cluster():
    kernel = parse("""
@T.prim_func
def k(B: T.Buffer((4, 4, 32), "int32")):
    T.device_entry()
    bx, by = T.cta_id([4, 4])
    cx, cy = T.cta_id_in_cluster([2, 2])
    tx = T.thread_id([32])
    B[bx, by, tx] = cx + 10 * cy + 100 * tx
""")
    out = sim.run(kernel, {}, arch=ARCH)["B"]
    x, y, t = np.meshgrid(np.arange(4), np.arange(4), np.arange(32), indexing="ij")
    np.testing.assert_array_equal(out, x % 2 + 10 * (y % 2) + 100 * t)


BARRIER = """
@T.prim_func
def k(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    T.device_entry()
    bx = T.cta_id([4])
    cx = T.cta_id_in_cluster([2])
    tx = T.thread_id([32])
    xs = T.alloc_shared((32,), "float32")
    ys = T.alloc_shared((32,), "float32")
    START
    xs[tx] = A[bx * 32 + tx]
    MIDDLE
    T.dsmem_load(ys[tx], xs[tx], 1 - cx)
    T.cluster_sync()
    B[bx * 32 + tx] = ys[tx]
"""


def barrier_kernel(start="T.cluster_sync()", middle="T.cluster_sync()"):
    return parse(BARRIER.replace("START", start).replace("MIDDLE", middle))


def test_a_peer_block_read_after_a_cluster_barrier_is_the_peers():
    a = np.arange(128, dtype=np.float32)
    out = sim.run(barrier_kernel(), {"A": a}, arch=ARCH)["B"]
    np.testing.assert_array_equal(out, a.reshape(2, 2, 32)[:, ::-1].reshape(128))


def test_an_arrive_and_a_wait_with_work_between_are_a_cluster_barrier():
    a = np.arange(128, dtype=np.float32)
    kernel = barrier_kernel(middle="T.cluster_arrive()\n    ys[tx] = T.float32(0)\n    T.cluster_wait()")
    np.testing.assert_array_equal(sim.run(kernel, {"A": a}, arch=ARCH)["B"], a.reshape(2, 2, 32)[:, ::-1].ravel())


def test_a_peer_read_of_an_unordered_write_is_a_data_race_even_when_both_ctas_have_started():
    # CTA 1 reads CTA 0's xs before CTA 0 writes it (CTA 0 resumes after the first barrier later): the write races
    with pytest.raises(DataRace, match=r"xs\[\d+\]: a store after a load by thread \d+ and thread \d+"):
        sim.run(barrier_kernel(middle=""), {"A": np.arange(128, dtype=np.float32)}, arch=ARCH)


def test_a_cluster_barrier_one_cta_never_reaches_hangs_the_others():
    kernel = parse("""
@T.prim_func
def k(B: T.Buffer((128,), "float32")):
    T.device_entry()
    bx = T.cta_id([4])
    cx = T.cta_id_in_cluster([2])
    tx = T.thread_id([32])
    if cx == 0:
        T.cluster_sync()
    B[bx * 32 + tx] = T.float32(1)
""")
    with pytest.raises(SimulationError, match=r"cluster barrier wait .* never returns: threads of CTA\(s\) \[1\]"):
        sim.run(kernel, {}, arch=ARCH)


def test_barrier_phases_count_arrivals_not_call_sites():
    # CTA 1 skips the first barrier; its arrival at the last one completes CTA 0's first phase (PTX ISA: the
    # barrier counts arrivals per phase), and CTA 0 then reads CTA 1 after it has exited
    kernel = barrier_kernel(start="if cx == 0:\n        T.cluster_sync()", middle="")
    with pytest.raises(SimulationError, match=r"shared memory of CTA 1 of the cluster after it exited"):
        sim.run(kernel, {"A": np.zeros(128, np.float32)}, arch=ARCH)


def test_a_wait_without_an_arrive_and_two_arrives_without_a_wait_are_errors():
    with pytest.raises(SimulationError, match="waits at the cluster barrier without arriving first"):
        sim.run(barrier_kernel(start="T.cluster_wait()"), {}, arch=ARCH)
    with pytest.raises(SimulationError, match="arrives at the cluster barrier again before waiting"):
        sim.run(barrier_kernel(start="T.cluster_arrive()\n    T.cluster_arrive()"), {}, arch=ARCH)


def test_a_kernel_without_a_cluster_is_a_cluster_of_one():
    kernel = parse("""
@T.prim_func
def k(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    T.device_entry()
    bx = T.cta_id([2])
    tx = T.thread_id([32])
    xs = T.alloc_shared((32,), "float32")
    ys = T.alloc_shared((32,), "float32")
    xs[tx] = A[bx * 32 + tx]
    T.cluster_sync()
    T.dsmem_load(ys[tx], xs[31 - tx], 0)
    B[bx * 32 + tx] = ys[tx]
""")
    a = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(sim.run(kernel, {"A": a}, arch=ARCH)["B"], a.reshape(2, 32)[:, ::-1].ravel())


def test_a_rank_outside_the_cluster_is_refused():
    kernel = barrier_kernel().with_attr("global_symbol", "k")
    text = kernel.script().replace('T.Cast("uint32", 1 - cx)', "T.uint32(5)")
    with pytest.raises(SimulationError, match=r"names CTA rank 5; the cluster \(2, 1, 1\) has ranks 0\.\.1"):
        sim.run(parse(text), {}, arch=ARCH)


MULTICAST = """
@T.prim_func
def k(A: T.Buffer((32, 32), "float32"), B: T.Buffer((128, 32), "float32")):
    T.device_entry()
    bx = T.cta_id([4])
    cx = T.cta_id_in_cluster([4])
    tx = T.thread_id([128])
    tile = T.alloc_shared((32, 32), "float32", align=128)
    bars = T.alloc_shared((2,), "uint64")
    T.mbarrier_init(bars[0], 1)
    T.cluster_sync()
    T.tile_copy_async(tile, A[0:32, 0:32], bars[0], multicast=MASK, issuer=ISSUER)
    if (MASK >> cx) % 2 == 1:
        T.mbarrier_wait(bars[0], 0)
        T.tile_copy(B[bx * 32 : bx * 32 + 32, 0:32], tile)
    T.cluster_sync()
"""


@pytest.mark.parametrize("mask, issuer", [(0b0101, 0), (0b0101, 2), (0b1110, 3)])
def test_a_multicast_lands_in_the_ctas_of_its_mask_only(mask, issuer):
    kernel = parse(MULTICAST.replace("MASK", str(mask)).replace("ISSUER", str(issuer)))
    a = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    out = sim.run(kernel, {"A": a}, arch=ARCH)
    for rank in range(4):
        want = a if mask >> rank & 1 else np.zeros_like(a)
        np.testing.assert_array_equal(out["B"][rank * 32 : rank * 32 + 32], want)
        assert (out.writes["B"][rank * 32 : rank * 32 + 32] == (mask >> rank & 1)).all()


def test_signalling_a_peers_mbarrier_before_a_cluster_barrier_orders_its_init_is_a_data_race():
    # rank 1 issues: CTA 0 runs first, initialises its barrier and waits on it; CTA 1's multicast then completes
    # bytes on that barrier with nothing ordering CTA 0's init before it (the cluster barrier after the inits is out)
    text = (
        MULTICAST.replace("MASK", "3")
        .replace("ISSUER", "1")
        .replace("    T.cluster_sync()\n    T.tile_copy", "    T.tile_copy")
    )
    with pytest.raises(
        DataRace, match=r"bars\[0\] of CTA 0: tma_load_2d_multicast by thread 0 of CTA 1 into CTA 0 uses"
    ):
        sim.run(parse(text), {"A": np.zeros((32, 32), np.float32)}, arch=ARCH)
