"""Time to build each example kernel to CUDA with the "tirx_layout" pipeline, against the same kernel written with
TVM's own layouts (or, for the register fragment, a plain local array) built by TVM's `pipeline="tirx"`.

Upstream's kernels (``_upstream_compile.py``) are built and timed in a child process that loads no tirx_layout
(``_upstream_child.py``): in this process the pipeline guard refuses them. Both sides are timed with
``_timing.best_time``; the ratio is ours / upstream (below 1: ours builds faster).

Usage: python benchmarks/bench_compile.py [--repeats N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import tvm
from _timing import best_time
from _upstream_child import run_upstream_script

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import swizzled_staging
import warp_fragment

import tirx_layout
from tirx_layout import swizzle_mode

SM100A = tvm.target.Target({"kind": "cuda", "arch": "sm_100a"})
UPSTREAM = Path(__file__).resolve().parent / "_upstream_compile.py"
DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}


def upstream_spec(name: str) -> str:
    """The child's spec of the upstream twin of example kernel ``name``; a staging kernel's carries the swizzle
    of our shared layout, so both kernels stage through the same addresses."""
    if not name.startswith("staging_"):
        return "fragment"
    _, short, mode = name.split("_")
    dtype = DTYPES[short]
    ours = tirx_layout.mma_shared_layout(dtype, mode, (swizzled_staging.ROWS, swizzled_staging.COLS))
    assert swizzle_mode(ours, dtype) == mode
    sw = ours.swizzle
    return f"staging:{dtype}:{sw.per_element}:{sw.swizzle_len}:{sw.atom_len}"


def upstream_build_times(specs: list[str], repeats: int) -> list[float]:
    """Best build time in seconds of each spec's upstream kernel, measured in one child process."""
    out = run_upstream_script(UPSTREAM, repeats, *specs, what="upstream build timing")
    times = [float(line) for line in out.split()]
    if len(times) != len(specs):
        raise RuntimeError(f"upstream build timing: {len(times)} times for {len(specs)} kernels")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description="Build time of the example kernels, ours against upstream's.")
    parser.add_argument("--repeats", type=int, default=5)
    repeats = parser.parse_args().repeats
    kernels = {name: ours for name, (ours, _) in swizzled_staging.KERNELS.items()}
    kernels.update({name: ours for name, (ours, _) in warp_fragment.KERNELS.items()})
    theirs = upstream_build_times([upstream_spec(name) for name in kernels], repeats)
    print(f"{'kernel':24} {'tirx_layout (ms)':>17} {'upstream tirx (ms)':>19} {'ratio':>7}")
    for (name, ours), t_theirs in zip(kernels.items(), theirs, strict=True):
        t_ours = best_time(lambda ours=ours: tvm.tirx.build(ours, target=SM100A, pipeline="tirx_layout"), repeats)
        print(f"{name:24} {t_ours * 1e3:17.1f} {t_theirs * 1e3:19.1f} {t_ours / t_theirs:7.2f}")


if __name__ == "__main__":
    main()
