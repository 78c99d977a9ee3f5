"""The layout-inference table of the closing note: for each example round trip (examples/tile_copies.py) with some
layouts left out, the layouts the io-aware and the register-count cost models choose, and the bytes, memory
instructions and shared wavefronts of the kernel each choice compiles to, measured in the simulator.

    .venv/bin/python benchmarks/infer_table.py > table.md
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "examples")]

import tile_copies as tc  # noqa: E402

from tirx_layout import layout_of  # noqa: E402
from tirx_layout.transform import infer_layouts  # noqa: E402

from kernels import staged as ik  # noqa: E402

SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}


def short(layout) -> str:
    """A layout in one cell: a swizzled one as ``Sw(b, m, s) o S[...]``."""
    if layout is None:
        return "-"
    if hasattr(layout, "swizzle"):
        sw = layout.swizzle
        return f"Sw({sw.per_element}, {sw.swizzle_len}, {sw.atom_len}) o {layout.tile_layout}"
    return str(layout)


def rows():
    for fragment in ("wg_local", "warp", "tcgen05_16x64b"):
        rows_, threads, make = tc.FRAGMENTS[fragment]
        for dtype in ("float16", "bfloat16", "float32"):
            frag = make(dtype, tc.COLS)
            yield (
                f"{fragment} {SHORT[dtype]}: tile open",
                "tile",
                ik.round_trip(dtype, rows_, threads, frag_layout=frag),
            )
            if fragment == "tcgen05_16x64b":
                continue  # its fragment is forced by tcgen05.ld (issue 7's strict rule), not a free choice
            for swizzle in ("128B", "matched"):
                tile = tc.staging_layout(dtype, swizzle, fragment)
                yield (
                    f"{fragment} {SHORT[dtype]} {swizzle}: frag open",
                    "frag",
                    ik.round_trip(dtype, rows_, threads, shared_layout=tile),
                )
            yield f"{fragment} {SHORT[dtype]}: both open", "tile+frag", ik.round_trip(dtype, rows_, threads)
    for width in (192, 229, 257):
        yield f"tail ({width},) fp32 / 128 threads", "frag", ik.fragment_only((width,), "float32", 128)


def main():
    print("| example | open | model | choice | bytes | instr | wavefronts (min) |")
    print("|---|---|---|---|---|---|---|")
    for name, open_, kernel in rows():
        for model in ("io-aware", "register-count"):
            chosen = infer_layouts(kernel, model)
            choice = "; ".join(f"{b}={short(layout_of(b, chosen))}" for b in open_.split("+"))
            cost = ik.measured(chosen)
            nbytes, instr, waves, minimum = cost.bytes, cost.instructions, cost.wavefronts, cost.minimum_wavefronts
            print(f"| {name} | {open_} | {model} | `{choice}` | {nbytes} | {instr} | {waves} ({minimum}) |", flush=True)


if __name__ == "__main__":
    main()
