"""Helpers for tests that build kernels: parse TVMScript text with tirx_layout's names, load the examples."""

from __future__ import annotations

from pathlib import Path

import tvm

import tirx_layout
from tirx_layout.kernel_report import load_examples

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def parse(text: str):
    """A PrimFunc from TVMScript ``text``; ``tirx_layout`` names (``TileLayout``, ``S``, axes...) are in scope."""
    names = {"T": tvm.script.tirx, "tvm": tvm, "tirx_layout": tirx_layout}
    names.update({n: getattr(tirx_layout, n) for n in tirx_layout.__all__})
    return tvm.script.from_source(text, extra_vars=names)


_EXAMPLE_KERNELS = load_examples(EXAMPLES)


def example_kernels() -> dict:
    """Every ``KERNELS`` entry of every module in ``examples/``: name -> (PrimFunc, expected(inputs) -> output)."""
    return _EXAMPLE_KERNELS
