"""The Hopper attention forward (``examples/hopper_attention.py``) on a real sm_90a GPU: every kernel of its example
table and a few shapes beyond it (seq_q != seq_kv with tails, fp16, GQA over several K/V heads, batch 2, seq 2048),
O and the log-sum-exp compared with the float32 numpy reference within the tolerance ``attention_common.py``
derives from the dtypes. Skipped without a GPU, and on a GPU without wgmma."""

import numpy as np
import pytest

from tirx_layout.hw.targets import parse_arch
from tirx_layout.tools.device import device_arch, launch, matches

from kernels import example_module
from kernels.device import device_case, example_entries, example_entry, requires_gpu

pytestmark = requires_gpu

ENTRIES = example_entries(["hopper_attention"])


def _require_wgmma() -> str:
    arch = device_arch()
    if not parse_arch(arch).has("wgmma"):
        pytest.skip(f"{arch} has no wgmma (sm_90a only)")
    return arch


@pytest.mark.parametrize(("stem", "name"), ENTRIES, ids=[name for _, name in ENTRIES])
def test_the_example_attention_on_the_device_equals_numpy(stem, name):
    arch = _require_wgmma()
    kernel, arrays, wanted, check = device_case(example_entry(stem, name))
    outputs = launch(kernel, arrays, arch)
    for output, value in wanted.items():
        assert matches(outputs[output], value, check.rtol, check.atol), output


#: (batch, heads, kv_heads, seq_q, seq_kv, head_dim, dtype, causal) beyond the example table.
SHAPES = [
    (1, 2, 1, 200, 330, 64, "bfloat16", True),  # tails in both, bottom-right causal
    (2, 4, 2, 1000, 1500, 128, "bfloat16", False),
    (1, 4, 4, 384, 384, 128, "float16", True),
    (1, 8, 2, 2048, 2048, 128, "bfloat16", True),
    (1, 8, 2, 2048, 2048, 128, "bfloat16", False),
]


@pytest.mark.parametrize(("batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim", "dtype", "causal"), SHAPES)
def test_the_hopper_attention_on_the_device_equals_numpy(
    batch, heads, kv_heads, seq_q, seq_kv, head_dim, dtype, causal
):
    arch = _require_wgmma()
    example = example_module("hopper_attention")
    problem = example.COMMON.AttentionProblem(batch, heads, kv_heads, seq_q, seq_kv, head_dim, dtype, causal)
    check = example.COMMON.attention_expected(problem)
    inputs = dict(check.given)
    outputs = launch(example.hopper_attention(problem), inputs, arch, fill=np.nan)
    wanted = check(inputs["Q"], inputs["K"], inputs["V"])
    for output in ("O", "LSE"):
        assert matches(outputs[output], wanted[output], check.rtol, check.atol), output
