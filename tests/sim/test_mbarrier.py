"""The simulator's mbarrier model (``sim/mbarrier.py``) against the PTX ISA's mbarrier rules: phases complete when
pending arrivals and the tx-count are both zero; try_wait.parity succeeds once the phase of that parity completed."""

import pytest

from tirx_layout import sim
from tirx_layout.sim.mbarrier import Mbarrier


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
