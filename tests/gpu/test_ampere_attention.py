"""The sm_80 FlashAttention-2 forward (``examples/ampere_attention.py``: ``cp.async`` ring, ``ldmatrix``,
``mma.sync``, the online softmax on the accumulator fragment) on a real GPU: every kernel of its example table the
device's architecture can run -- built for the device (an H100/H200 runs the sm_80 kernels as sm_90a code:
``mma.sync``, ``ldmatrix`` and ``cp.async`` exist on every later target) -- and a few shapes beyond it (GQA over
several K/V heads, batch 2, tails on both sides, seq 1024), O and the log-sum-exp compared with the float32 numpy
reference within the tolerance ``attention_common.py`` derives from the dtypes. Skipped without a GPU."""

import numpy as np
import pytest

from tirx_layout.hw.targets import parse_arch
from tirx_layout.tools.device import device_arch, launch, matches

from kernels import example_module
from kernels.device import device_case, example_entries, example_entry, requires_gpu

pytestmark = requires_gpu

ENTRIES = example_entries(["ampere_attention"])


def _runs_on(arch: str, built_for: str) -> bool:
    """Whether a kernel written for ``built_for`` runs on a device of ``arch`` (sm_120's kernels only on sm_120+)."""
    device, wanted = parse_arch(arch).sm, parse_arch(built_for).sm
    return device >= wanted and (wanted < 120 or device >= 120)


@pytest.mark.parametrize(("stem", "name"), ENTRIES, ids=[name for _, name in ENTRIES])
def test_the_example_fa2_on_the_device_equals_numpy(stem, name):
    arch = device_arch()
    kernel, expected, _, built_for = example_entry(stem, name)
    if not _runs_on(arch, built_for):
        pytest.skip(f"{name} is for {built_for}; the device is {arch}")
    kernel, arrays, wanted, check = device_case((kernel, expected))
    outputs = launch(kernel, arrays, arch)
    for output, value in wanted.items():
        assert matches(outputs[output], value, check.rtol, check.atol), output


#: (batch, heads, kv_heads, seq_q, seq_kv, head_dim, dtype, causal) beyond the example table.
SHAPES = [
    (2, 4, 2, 500, 700, 128, "bfloat16", True),  # tails in both, bottom-right causal, GQA, batch 2
    (1, 8, 2, 1024, 1024, 64, "float16", False),
    (1, 4, 1, 1024, 1024, 128, "bfloat16", True),
]


@pytest.mark.parametrize(("batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim", "dtype", "causal"), SHAPES)
def test_the_fa2_on_the_device_equals_numpy(batch, heads, kv_heads, seq_q, seq_kv, head_dim, dtype, causal):
    arch = device_arch()
    if not _runs_on(arch, "sm_80"):
        pytest.skip(f"the FA2 kernel needs sm_80's mma.sync; the device is {arch}")
    example = example_module("ampere_attention")
    problem = example.COMMON.AttentionProblem(batch, heads, kv_heads, seq_q, seq_kv, head_dim, dtype, causal)
    check = example.COMMON.attention_expected(problem)
    inputs = dict(check.given)
    outputs = launch(example.flash_attention(problem), inputs, arch, fill=np.nan)
    wanted = check(inputs["Q"], inputs["K"], inputs["V"])
    for output in ("O", "LSE"):
        assert matches(outputs[output], wanted[output], check.rtol, check.atol), output
