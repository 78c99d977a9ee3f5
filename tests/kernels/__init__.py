"""Helpers for tests that build kernels: parse TVMScript text with tirx_layout's names, and the example kernels
(looked up lazily: listing them builds none, so collecting the tests runs no example)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import tvm

import tirx_layout
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
