"""The cluster examples (``examples/clusters.py``) with a barrier or a wait taken out: each omission is reported by
the simulator, which runs the CTAs of a cluster together. (That every example, as written, simulates equal to numpy
and assembles with no local memory is ``tests/tools/test_examples.py``'s; here the one thing each synchronisation is
for.) Inputs are the examples' sample inputs."""

import re

import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.sim import DataRace, SimulationError
from tirx_layout.tools.kernel_report import sample_input

from kernels import example_module, parse

CLUSTERS = example_module("clusters")


def run(kernel, inputs=1):
    return sim.run(kernel, [sample_input(kernel, index=i) for i in range(inputs)], arch=CLUSTERS.ARCH)


def test_the_exchange_with_both_cluster_barriers_is_each_ctas_peer_block_reversed():
    kernel = CLUSTERS.dsmem_exchange()
    a = sample_input(kernel)
    out = sim.run(kernel, [a], arch=CLUSTERS.ARCH)["B"]
    blocks = a.reshape(-1, 2, CLUSTERS.THREADS)
    np.testing.assert_array_equal(out.reshape(-1, 2, CLUSTERS.THREADS)[:, 0], blocks[:, 1, ::-1])
    np.testing.assert_array_equal(out.reshape(-1, 2, CLUSTERS.THREADS)[:, 1], blocks[:, 0, ::-1])


def test_reading_the_peer_without_the_first_cluster_barrier_is_a_data_race():
    with pytest.raises(DataRace, match=r"shared mine of CTA 1: ld\.shared::cluster by CTA 0 before CTA 1 has"):
        run(CLUSTERS.dsmem_exchange(first_barrier=False))


def test_exiting_without_the_last_cluster_barrier_leaves_the_peer_reading_freed_shared_memory():
    with pytest.raises(SimulationError, match=r"shared memory of CTA 1 of the cluster after it exited"):
        run(CLUSTERS.dsmem_exchange(last_barrier=False))


def test_reading_the_pushed_block_without_the_peer_wait_is_a_data_race():
    # CTA 0 reads its inbox before CTA 1's st.shared::cluster into it: only the mbarrier wait orders the two
    with pytest.raises(DataRace, match=r"shared inbox\[0\]: a store after a load by thread 0 and thread 128"):
        run(CLUSTERS.dsmem_push(peer_wait=False))


@pytest.mark.parametrize("cluster", [2, 4])
def test_multicasting_before_the_cluster_barrier_after_the_inits_is_a_data_race(cluster):
    with pytest.raises(DataRace, match=r"tma_load_2d_multicast by thread 0 of CTA 0 into CTA 1 before CTA 1"):
        run(CLUSTERS.multicast_tile(cluster, cluster_barrier=False))


def test_refilling_the_shared_b_tile_without_the_peer_wait_is_a_data_race():
    message = r"b_tile\[\d+\]: a store \(thread 0\) before it has seen the TMA multicast load into b_tile of CTA 1"
    with pytest.raises(DataRace, match=message):
        run(CLUSTERS.multicast_gemm(peer_wait=False), inputs=2)


def test_the_gemm_with_the_peer_wait_is_a_at_b_transposed():
    kernel = CLUSTERS.multicast_gemm(m=128, n=128, k=192)
    a, b = sample_input(kernel, index=0), sample_input(kernel, index=1)
    out = sim.run(kernel, [a, b], arch=CLUSTERS.ARCH)["D"]
    np.testing.assert_array_equal(out, a.astype(np.float64) @ b.astype(np.float64).T)


def test_the_pipelined_hopper_gemm_with_cluster_pairs_needs_the_peer_release_of_each_stage():
    # hopper_pipelined_gemm(cluster=2): each consumer thread also releases the stage on its peer's empty[s], whose
    # producer multicasts A into this CTA's slots. Without those arrivals (and the count that expects them), the
    # producer refills a slot its peer's consumers have not read yet.
    ring = example_module("hopper_pipelined_gemm")
    kernel = ring.hopper_pipelined_gemm(64, 256, 256, tile=(64, 128, 64), stages=2, cluster=2)
    text = kernel.script()
    assert text.count("T.mbarrier_arrive_peer(") >= 2  # per unrolled K step and after the last
    text = "\n".join(line for line in text.splitlines() if "T.mbarrier_arrive_peer(" not in line)
    text, inits = re.subn(r"(T\.mbarrier_init\(empty\[\d\], T\.uint32\()256\)", r"\g<1>128)", text)
    assert inits == 2
    with pytest.raises(DataRace, match=r"a_tile\[\d+\]: a store \(thread 128\) before it has seen the TMA multicast"):
        run(parse(text), inputs=2)


def test_the_persistent_cluster_pair_gemm_is_a_at_b_transposed_over_several_tiles():
    # two CTAs, one cluster, four 64 x 128 output tiles: the pair takes row 0's two tiles, then row 1's, refilling
    # the two stages across tiles
    ring = example_module("hopper_pipelined_gemm")
    kernel = ring.hopper_pipelined_gemm(128, 256, 192, tile=(64, 128, 64), stages=2, ctas=2, cluster=2)
    a, b = sample_input(kernel, index=0), sample_input(kernel, index=1)
    out = sim.run(kernel, [a, b], arch=ring.ARCH)["D"]
    np.testing.assert_array_equal(out, a.astype(np.float64) @ b.astype(np.float64).T)
