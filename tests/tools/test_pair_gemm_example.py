"""The CTA-pair GEMM (``examples/pair_gemm.py``, sm_100a, clusters of 2 x 1): random small-integer inputs simulate
equal to numpy with the cluster's CTAs running together; dropping the peer's arrivals on the issuer's ``full``
mbarrier, or the peer's wait on its own ``done`` mbarrier (where the pair's commit arrives), is a DataRace; a pair
MMA in a kernel launched without clusters is refused before it is built. (The example table's entries are also
built, assembled and simulated on the sample inputs by ``test_examples.py``.)"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.sim import DataRace
from tirx_layout.transform import LayoutVerificationError, build

from kernels import example_module

EXAMPLE = example_module("pair_gemm")


def inputs(m, n, k, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (m, k)).astype(dtype)
    b = rng.integers(-3, 4, (n, k)).astype(dtype)
    return a, b, a.astype(np.float64) @ b.astype(np.float64).T


@pytest.mark.parametrize(
    ("n", "k", "dtype", "pairs"),
    [(128, 128, ml_dtypes.bfloat16, 2), (256, 64, ml_dtypes.bfloat16, 1), (32, 256, ml_dtypes.float8_e4m3fn, 1)],
)
def test_the_pair_gemm_simulates_to_a_times_b_transposed(n, k, dtype, pairs):
    name = np.dtype(dtype).name
    a, b, want = inputs(256 * pairs, n, k, dtype, n + k)
    got = sim.run(EXAMPLE.pair_gemm(n, k, name, pairs), {"A": a, "B": b})["D"]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("m", "n"), [(256, 64), (128, 128)])
def test_the_synchronous_pair_gemm_simulates_to_a_times_b_transposed(m, n):
    # m = 128: each CTA's 64 rows of D in datapath Layout B, read back by one 32x32b load per warp
    a, b, want = inputs(m, n, 192, ml_dtypes.bfloat16, 5)
    np.testing.assert_array_equal(sim.run(EXAMPLE.pair_gemm_sync(n, 192, m=m), {"A": a, "B": b})["D"], want)


@pytest.mark.parametrize(
    ("dropped", "race"),
    [
        # the even CTA's MMA reads the odd CTA's half of A before the odd CTA's write is published to it
        ({"peer_arrive": False}, r"A_s\[\d+\]: the tcgen05.mma.cta_group::2.kind::f16 issued by thread 0 of CTA 0"),
        # the odd CTA overwrites its share for the next K tile while the pair's MMA may still read the last one
        ({"peer_wait": False}, r"tcgen05.mma.cta_group::2.kind::f16 issued by thread 0 of CTA 0 reads what thread"),
    ],
)
def test_dropping_a_peer_arrive_or_a_peer_wait_is_a_data_race(dropped, race):
    a, b, _ = inputs(512, 128, 128, ml_dtypes.bfloat16, 1)
    with pytest.raises(DataRace, match=race):
        sim.run(EXAMPLE.pair_gemm(**dropped), {"A": a, "B": b})


def test_a_peer_reading_its_tmem_without_waiting_for_the_pairs_commit_is_a_data_race():
    # one K tile: the odd CTA reads its 128 rows of D out of its TMEM before the even CTA's MMA has written them
    a, b, _ = inputs(256, 64, 64, ml_dtypes.bfloat16, 2)
    with pytest.raises(DataRace, match=r"data race on tmem TMEM cell .* an MMA's write after a load by warp"):
        sim.run(EXAMPLE.pair_gemm(64, 64, pairs=1, peer_wait=False), {"A": a, "B": b})


def test_the_issuer_is_the_even_cta_and_the_commit_reaches_both():
    cuda = build(EXAMPLE.pair_gemm()).imports[0].inspect_source()
    body = cuda[cuda.index('extern "C" __global__') :]
    # the K loop's body: 4 MMAs of K = 16 per 64-wide bf16 K tile (128 bytes)
    assert len(re.findall(r"tirx_layout_tcgen05_mma_f16_ss_cg2\(", body)) == 4
    assert "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64" in cuda
    assert "if ((cta_rank & (uint)1) == (uint)0) {" in body


def test_a_pair_mma_without_clusters_is_refused():
    func = EXAMPLE.pair_gemm_sync()
    text = func.script().replace("cx = T.cta_id_in_cluster([2])\n", "cx = bx % 2\n")
    from kernels import parse

    with pytest.raises(LayoutVerificationError, match=r"runs on a CTA pair.* it declares no cluster"):
        build(parse(text))
