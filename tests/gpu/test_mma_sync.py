"""The sm_80-class GEMMs on a real GPU: every kernel of ``examples/ampere_gemm.py`` (3-stage ``cp.async`` ring,
``ldmatrix``, ``mma.sync``) the device's architecture can run -- built for the device (an H100/H200 runs the sm_80
and sm_89 kernels as sm_90a code: ``mma.sync``, ``ldmatrix`` and ``cp.async`` exist on every later target) --
compared with numpy (exactly, for the small-integer inputs)."""

import pytest

from tirx_layout.hw.targets import parse_arch
from tirx_layout.tools.device import device_arch, launch, matches

from kernels.device import device_case, example_entries, example_entry, requires_gpu

pytestmark = requires_gpu

GEMMS = example_entries(["ampere_gemm"])


@pytest.mark.parametrize(("stem", "name"), GEMMS, ids=[name for _, name in GEMMS])
def test_the_ampere_gemm_on_the_device_equals_numpy(stem, name):
    arch = device_arch()
    kernel, expected, _, built_for = example_entry(stem, name)
    device, wanted_sm = parse_arch(arch).sm, parse_arch(built_for).sm
    if device < wanted_sm or (wanted_sm >= 120 and device < 120):
        pytest.skip(f"{name} is for {built_for}; the device is {arch}")
    kernel, arrays, wanted, check = device_case((kernel, expected))
    outputs = launch(kernel, arrays, arch)
    for output, value in wanted.items():
        assert matches(outputs[output], value, check.rtol, check.atol), (output, outputs[output], value)
