"""The main job: compile the example kernels in ``examples/`` for sm_100a and show what was generated, then the
layout guide's worked examples as the library computes them.

Run ``tirx-layout demo [EXAMPLES_DIR]`` (or ``python -m tirx_layout.tools.demo``, or ``./dev.sh demo``); the examples
installed with the package are the default; ``--layouts-only`` skips the kernels.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import tvm

from ..analysis import bank_conflicts, column
from ..hw.constructors import tcgen05_atom_layout, tmem_datapath_layout
from ..hw.memory import bank_of
from ..layout import ComposeLayout, R, S, TileLayout
from ..layout.axis import TCol, TLane, laneid, warpid
from .kernel_report import assemble_report, examples_directory, load_examples, load_full_size, report


def _grid(title: str, values: np.ndarray) -> str:
    width = max(len(str(v)) for v in values.flat)
    rows = [" ".join(str(v).rjust(width) for v in row) for row in values]
    return f"{title}\n" + "\n".join("    " + r for r in rows)


def warp_fragment() -> str:
    """The register fragment over lanes and warps, with one replica and an offset."""
    frag = TileLayout(S[(8, 2, 4, 2) : (4 @ laneid, 1 @ warpid, 1 @ laneid, 1)] + R[2 : 4 @ warpid] + 5 @ warpid)
    i, j = np.meshgrid(np.arange(8), np.arange(16), indexing="ij")
    base = frag.apply(i, j, shape=[8, 16])
    places = frag.apply_all(1, 3, shape=[8, 16])
    return "\n".join(
        [
            f"layout        {frag!r}",
            f"apply(1, 3, shape=[8, 16]) = {frag.apply(1, 3, shape=[8, 16])}",
            f"all places of (1, 3): warps {[p['warpid'] for p in places]}",
            f"size {frag.size()}, span(m) {frag.span()}, scope {tuple(map(str, frag.get_scope()))}",
            _grid("laneid of each (i, j) of the 8x16 tile:", base["laneid"]),
            _grid("warpid:", base["warpid"]),
            _grid("m (register slot):", base["m"]),
        ]
    )


def tmem_accumulator() -> str:
    """Two 128x112 accumulator stages side by side in tensor memory."""
    acc = TileLayout(S[(2, 128, 112) : (112 @ TCol, 1 @ TLane, 1 @ TCol)])
    a, lane, c = np.meshgrid(np.arange(2), np.arange(128), np.arange(112), indexing="ij")
    places = acc.apply(a, lane, c)
    return "\n".join(
        [
            f"layout        {acc!r}",
            f"apply(1, 5, 7) = {acc.apply(1, 5, 7)}",
            f"TLane covers [{places['TLane'].min()}, {places['TLane'].max() + 1}), "
            f"TCol covers [{places['TCol'].min()}, {places['TCol'].max() + 1}), span(TCol) = {acc.span('TCol')}",
        ]
    )


def scale_factor_atom(sf_per_mma: int = 4) -> str:
    """A 32-row scale-factor atom replicated into every warp's 32-lane window of tensor memory."""
    scale = TileLayout(S[(32, sf_per_mma) : (1 @ TLane, 1 @ TCol)] + R[4 : 32 @ TLane])
    lines = [f"layout        {scale!r}"]
    for r in (0, 5, 31):
        lanes = [p["TLane"] for p in scale.apply_all(r, 2, shape=[32, sf_per_mma])]
        lines.append(f"row {r:2d}, scale 2 -> lanes {lanes}, TCol {scale.apply(r, 2, shape=[32, sf_per_mma])['TCol']}")
    return "\n".join(lines)


def algebra() -> str:
    """A few algebra results: normal forms, tiling and its inverse, a slice."""
    inner, outer = TileLayout(S[(2, 4) : (1, 2)]), TileLayout(S[(8, 8) : (8, 1)])
    tiled = inner.tile(outer, [8, 8], [2, 4])
    warps = TileLayout(S[(2, 2, 8, 4) : (2 @ warpid, 1 @ warpid, 4 @ laneid, 1 @ laneid)])
    with tvm.target.Target({"kind": "cuda", "arch": "sm_100a"}):
        fused = warps.canonicalize()
    return "\n".join(
        [
            f"canonicalize {TileLayout(S[(8, 8, 8, 4, 2) : (512, 64, 8, 2, 1)])} -> "
            f"{TileLayout(S[(8, 8, 8, 4, 2) : (512, 64, 8, 2, 1)]).canonicalize()}",
            f"under a CUDA target {warps} -> {fused}",
            f"{inner}.tile({outer}, [8, 8], [2, 4]) -> {tiled}",
            f"  is_tile_inner gives back {inner.is_tile_inner(tiled, [16, 32], [2, 4])}, "
            f"is_tile_outer gives back {outer.is_tile_outer(tiled, [16, 32], [8, 8])}",
            f"{outer} on [64], elements 5..8 -> {outer.slice([64], [(5, 8)])}",
            f"{TileLayout(S[30:1])}.group_many([6, 5], [2, 15]) -> {TileLayout(S[30:1]).group_many([6, 5], [2, 15])}",
        ]
    )


def swizzle() -> str:
    """The guide's 128-byte swizzle of an (8, 64) float16 tile and what it does to banks."""
    tile = TileLayout(S[(8, 64) : (64, 1)])
    smem = ComposeLayout(per_element=3, swizzle_len=3, atom_len=3, tile_layout=tile)
    banks = [bank_of(smem.apply(i, 0)["m"] * 2) for i in range(8)]
    plain = [bank_of(tile.apply(i, 0)["m"] * 2) for i in range(8)]
    access = column((8, 64), "float16")
    return "\n".join(
        [
            f"layout        {smem!r}",
            f"column 0 of rows 0..7: banks {banks} (unswizzled: {plain})",
            f"32 lanes reading one element down the columns: {bank_conflicts(smem, 'float16', access).wavefronts} "
            f"wavefront(s) swizzled, {bank_conflicts(tile, 'float16', access).wavefronts} unswizzled",
            f"tcgen05.ld 16x64b fragment for (64, 8) fp32: {tcgen05_atom_layout('16x64b', (64, 8), 'float32')}",
            f"TMEM datapath F, 64 x 32, upper half-slabs: {tmem_datapath_layout('F', 64, 32, sub_slab=1)}",
        ]
    )


def kernels(directory: Path) -> bool:
    """Print the kernel report of every example (the CUDA lines of each module's showcase kernels, a verdict line
    for the rest); whether all of them came out right."""
    examples = load_examples(directory)
    if not examples:
        print(f"no example kernels in {directory}")
        return False
    showcase = load_examples(directory, showcase_only=True)
    all_good = True
    for name, entry in examples.items():
        found = report(name, *entry)
        print(f"{found}\n" if name in showcase else f"{name:32} {found.verdict()}")
        all_good &= found.ok
    print(
        f"\n{len(examples)} kernels: {'all built, assembled and simulated correctly' if all_good else 'SOME FAILED'}\n"
    )
    full_size = load_full_size(directory)
    if full_size:
        print("== Production sizes: built and assembled (too large to simulate) ==")
        for name, entry in full_size.items():
            ok, line = assemble_report(name, *entry)
            print(line)
            all_good &= ok
        print()
    return all_good


def main(argv: list[str] | None = None) -> int:
    """Report on the example kernels, then print every example of the guide with the values the library computes."""
    args = sys.argv[1:] if argv is None else argv
    ok = True
    if "--layouts-only" not in args:
        paths = [a for a in args if not a.startswith("--")]
        ok = kernels(Path(paths[0]) if paths else examples_directory())
    for title, section in (
        ("Register fragment over lanes and warps", warp_fragment),
        ("Tensor-memory accumulator", tmem_accumulator),
        ("Scale-factor atom with replicas", scale_factor_atom),
        ("Layout algebra", algebra),
        ("Shared-memory swizzle and tcgen05 fragments", swizzle),
    ):
        print(f"== {title} ==")
        print(section())
        print()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
