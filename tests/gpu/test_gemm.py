"""The sm_90a GEMMs on a real Hopper GPU: every kernel of ``examples/hopper_gemm.py`` (dtypes, swizzle modes, K- and
MN-major operands, A from registers, two warpgroups, N = 200 and 256, the asynchronous K loop) and of the pipelined
Hopper GEMM (``examples/hopper_pipelined_gemm.py``, with its tail shapes) once it exists, compared with numpy
(exactly for the small-integer inputs; float16 accumulators within the example's tolerance)."""

import pytest

from tirx_layout.hw.targets import parse_arch
from tirx_layout.tools.device import device_arch, launch, matches

from kernels.device import GEMM_MODULES, device_case, example_entries, example_entry, requires_gpu

pytestmark = requires_gpu

GEMMS = [entry for stem, tables in GEMM_MODULES.items() for entry in example_entries([stem], tables)]


@pytest.mark.parametrize(("stem", "name"), GEMMS, ids=[name for _, name in GEMMS])
def test_the_gemm_on_the_device_equals_numpy(stem, name):
    arch = device_arch()
    if not parse_arch(arch).has("wgmma"):
        pytest.skip(f"{arch} has no wgmma (sm_90a only)")
    kernel, arrays, wanted, check = device_case(example_entry(stem, name))
    outputs = launch(kernel, arrays, arch)
    for output, value in wanted.items():
        assert matches(outputs[output], value, check.rtol, check.atol), (output, outputs[output], value)
