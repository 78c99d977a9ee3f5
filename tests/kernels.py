"""Helpers for tests that build kernels: parse TVMScript text with tirx_layout's names, load the examples."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import tvm

import tirx_layout

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def parse(text: str):
    """A PrimFunc from TVMScript ``text``; ``tirx_layout`` names (``TileLayout``, ``S``, axes...) are in scope."""
    names = {"T": tvm.script.tirx, "tvm": tvm, "tirx_layout": tirx_layout}
    names.update({n: getattr(tirx_layout, n) for n in tirx_layout.__all__})
    return tvm.script.from_source(text, extra_vars=names)


def example_kernels() -> dict:
    """Every ``KERNELS`` entry of every module in ``examples/``: name -> (PrimFunc, expected(inputs) -> output)."""
    kernels = {}
    for path in sorted(EXAMPLES.glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"examples.{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        kernels.update(getattr(module, "KERNELS", {}))
    return kernels


def nvcc_assembles(cuda_source: str, tmp_path: Path, arch: str = "sm_100a") -> subprocess.CompletedProcess | None:
    """Run ``nvcc -arch=<arch> -cubin`` on the source; ``None`` where nvcc is not installed."""
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    if nvcc is None:
        return None
    source = tmp_path / "kernel.cu"
    source.write_text(cuda_source)
    return subprocess.run([nvcc, f"-arch={arch}", "-cubin", "-o", str(tmp_path / "kernel.cubin"), str(source)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
