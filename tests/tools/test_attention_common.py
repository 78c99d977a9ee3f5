"""``examples/attention_common.py``, what the attention examples share: its docstring examples run, and the reference
agrees with a row-by-row softmax written from the definition (grouped heads, bottom-right causal mask)."""

import doctest
import math

import numpy as np
import pytest

from kernels import example_module

COMMON = example_module("attention_common")


def test_docstring_examples():
    result = doctest.testmod(COMMON, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("causal", [False, True])
def test_the_reference_is_the_softmax_of_each_row(causal):
    problem = COMMON.AttentionProblem(1, 4, 2, 5, 7, 64, "float16", causal, scale=0.3)
    x = COMMON.attention_inputs(problem, seed=3)
    out = COMMON.attention_reference(problem, x["Q"], x["K"], x["V"])
    for h in range(4):
        for i in range(5):
            keys = range(problem.visible_keys(i))  # with seq_q 5 < seq_kv 7, causal row i sees keys 0..i+2
            q = x["Q"][0, h, i].astype(np.float64)
            s = [0.3 * float(q @ x["K"][0, h // 2, j].astype(np.float64)) for j in keys]
            lse = math.log(sum(math.exp(t) for t in s))
            o = sum(math.exp(t - lse) * x["V"][0, h // 2, j].astype(np.float64) for t, j in zip(s, keys, strict=True))
            assert out["LSE"][0, h, i] == pytest.approx(lse, rel=1e-5)
            np.testing.assert_allclose(out["O"][0, h, i].astype(np.float64), o, rtol=2**-10, atol=2**-10)
    assert problem.visible_keys(0) == (3 if causal else 7)


def test_the_tolerance_follows_the_dtype():
    bf16 = COMMON.attention_expected(COMMON.AttentionProblem(1, 1, 1, 8, 8, 64))
    f16 = COMMON.attention_expected(COMMON.AttentionProblem(1, 1, 1, 8, 8, 64, "float16"))
    assert bf16.rtol == 2**-7 and f16.rtol == 2**-10
    assert bf16.atol == 2**-7 * np.abs(bf16.given["V"].astype(np.float32)).max()
