"""End to end on the simulator's wgmma model: every kernel of examples/hopper_gemm.py, lowered for sm_90a by our
pipeline, simulated (``sim/wgmma.py``, written from the ISA) equal to numpy with every output written once; and
the asynchronous K loop's waits are each needed (without one, the simulator reports the race it leaves)."""

import re

import pytest

from tirx_layout import sim
from tirx_layout.tools.kernel_report import load_example_module, report

from kernels import EXAMPLES, example_module

HOPPER = example_module("hopper_gemm")


@pytest.mark.parametrize("name", sorted(HOPPER.ASSEMBLED))
def test_hopper_example_simulates_equal_to_numpy(name):
    found = report(name, *HOPPER.ASSEMBLED[name], arch=HOPPER.ARCH)
    assert found.matches
    assert found.written_once


@pytest.mark.parametrize(
    ("wait", "race"),
    [
        # without the wait for all but the newest group, the next iteration refills the stage a group still reads
        ("T.tile_mma_wait(1)", r"store by thread \d+ while the wgmma\.mma_async.*still reads it"),
        # without the final wait, the epilogue reads the accumulator while the last group is pending
        ("T.tile_mma_wait(0)", r"ordinary code reads them while the wgmma\.mma_async.*holds them as its accumulator"),
    ],
)
def test_each_wait_of_the_async_k_loop_is_needed(tmp_path, wait, race):
    source = (EXAMPLES / "hopper_gemm.py").read_text()
    statement = re.compile(r"^(\s+)" + re.escape(wait), re.MULTILINE)  # the statement, not the docstring's mention
    assert len(statement.findall(source)) == 1
    without = tmp_path / "hopper_gemm.py"
    without.write_text(statement.sub(r"\1T.evaluate(0)", source))
    kernel, expected = load_example_module(without).ASSEMBLED["wgmma_k_loop_async"]
    with pytest.raises(sim.DataRace, match=race):
        report("without one", kernel, expected, arch=HOPPER.ARCH)
