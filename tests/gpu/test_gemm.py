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


#: Shapes of the pipelined Hopper GEMM beyond its example table: a grid, tails in M and N, the 4096^3 problem on
#: persistent CTAs (``ctas``: None = one per tile, "sms" = the device's SM count), bf16 and fp16.
PIPELINED_SHAPES = [
    (1024, 1024, 512, "bfloat16", None),
    (1000, 700, 320, "bfloat16", None),
    (777, 1300, 256, "float16", "sms"),
    (4096, 4096, 4096, "bfloat16", "sms"),
]


@pytest.mark.parametrize(("m", "n", "k", "dtype", "ctas"), PIPELINED_SHAPES)
def test_the_pipelined_hopper_gemm_on_the_device_equals_numpy(m, n, k, dtype, ctas):
    import tvm

    from kernels import example_module

    arch = device_arch()
    if not parse_arch(arch).has("wgmma"):
        pytest.skip(f"{arch} has no wgmma (sm_90a only)")
    example = example_module("hopper_pipelined_gemm")
    tiles = -(-m // 128) * -(-n // 256)  # the default 128 x 256 output tiles
    ctas = min(int(tvm.cuda(0).multi_processor_count), tiles) if ctas == "sms" else ctas
    kernel = example.hopper_pipelined_gemm(m, n, k, dtype, ctas=ctas)
    entry = (kernel, example_module("gemm_ring").gemm_reference())
    kernel, arrays, wanted, check = device_case(entry)
    outputs = launch(kernel, arrays, arch)
    assert matches(outputs["D"], wanted["D"], check.rtol, check.atol)
