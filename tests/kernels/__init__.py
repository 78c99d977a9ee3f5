"""Helpers for tests that build kernels: parse TVMScript text with tirx_layout's names, and the example kernels
(looked up lazily: listing them builds none, so collecting the tests runs no example)."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import tvm

import tirx_layout
from tirx_layout import sim
from tirx_layout.tools.kernel_report import load_example_module, load_examples

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def parse(text: str):
    """A PrimFunc from TVMScript ``text``; ``tirx_layout`` names (``TileLayout``, ``S``, axes...) are in scope."""
    names = {"T": tvm.script.tirx, "tvm": tvm, "tirx_layout": tirx_layout}
    names.update({n: getattr(tirx_layout, n) for n in tirx_layout.__all__})
    return tvm.script.from_source(text, extra_vars=names)


@cache
def example_kernels():
    """Every ``KERNELS`` entry of every module in ``examples/``: name -> (PrimFunc, expected(inputs) -> output),
    each kernel built the first time it is looked up."""
    return load_examples(EXAMPLES)


@cache
def example_module(stem: str):
    """The module ``examples/<stem>.py`` (its helpers and layouts; kernels are built only when looked up)."""
    return load_example_module(EXAMPLES / f"{stem}.py")


#: The attention examples' whole problem matrices (seq x head_dim x causal, minutes of simulation each) run only when
#: this environment variable asks for them; CI simulates each example's table (tests/tools/test_examples.py).
ATTENTION_MATRIX_VARIABLE = "TIRX_LAYOUT_ATTENTION_MATRIX"
attention_matrix = pytest.mark.skipif(
    not os.environ.get(ATTENTION_MATRIX_VARIABLE),
    reason=f"an attention example's whole problem matrix runs with {ATTENTION_MATRIX_VARIABLE}=1",
)


def simulate_attention(kernel, problem, common, arch: str) -> None:
    """Simulate an attention ``kernel`` of ``problem`` on ``arch`` and compare O and LSE with ``common``'s
    (``examples/attention_common.py``) reference, each within its tolerance, each element written once."""
    expected = common.attention_expected(problem)
    inputs = dict(expected.given)
    result = sim.run(kernel, inputs, arch)
    want = expected(inputs["Q"], inputs["K"], inputs["V"])
    for name in ("O", "LSE"):
        np.testing.assert_allclose(
            result[name].astype(np.float32), want[name].astype(np.float32), rtol=expected.rtol, atol=expected.atol
        )
        assert (result.writes[name] == 1).all(), f"{name}: an element written other than once"
