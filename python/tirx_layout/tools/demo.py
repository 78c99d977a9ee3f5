"""The main job: the layout guide's worked examples as the library computes them, then every kernel in ``examples/``
built for its architecture, assembled by nvcc and simulated against numpy -- one line per example module and the
verdict last (``--listings`` adds the CUDA lines of each module's showcase kernels).

Run ``tirx-layout demo [EXAMPLES_DIR]`` (or ``python -m tirx_layout.tools.demo``, or ``./dev.sh demo``); the examples
installed with the package are the default; ``--layouts-only`` skips the kernels.
"""

from __future__ import annotations

import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tvm

from ..analysis import bank_conflicts, column
from ..hw.constructors import tcgen05_atom_layout, tmem_datapath_layout
from ..hw.memory import bank_of
from ..layout import ComposeLayout, R, S, TileLayout
from ..layout.axis import TCol, TLane, laneid, warpid
from .kernel_report import (
    ExampleModule,
    KernelReport,
    KernelTable,
    assemble_report,
    examples_directory,
    find_nvcc,
    load_example_modules,
    report,
)


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


@dataclass
class Tally:
    """What the kernel report found so far: kernels checked (simulated, and production-size), and each kernel that
    failed with what went wrong, ``(name, why)``."""

    kernels: int = 0
    full_size: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    #: correct kernels ptxas gives local memory (a stack frame, spills), ``(name, what)``
    local_memory: list[tuple[str, str]] = field(default_factory=list)


def _raised(err: Exception) -> str:
    """An exception in one line (its trace goes to stderr, for whoever debugs it)."""
    traceback.print_exc()
    return f"{type(err).__name__}: {(str(err).strip().splitlines() or [''])[0]}"


def _checked(name: str, table: KernelTable, tally: Tally) -> KernelReport | None:
    """Report on one kernel of ``table``, counting it; an exception (making, building or simulating it) is a failure."""
    tally.kernels += 1
    try:
        found = report(name, *table[name])
    except Exception as err:
        tally.failed.append((name, _raised(err)))
        return None
    if not found.ok:
        tally.failed.append((name, found.verdict()))
    elif not found.in_registers:
        spilled = ", ".join(f"{n} bytes {what}" for what, n in found.local_memory.items() if n)
        tally.local_memory.append((name, f"correct, but ptxas keeps {spilled} in local memory"))
    return found


def module_report(module: ExampleModule, tally: Tally, listings: bool = False) -> str:
    """Build, assemble and simulate every kernel of an example module: its one-line summary (with the lines of the
    kernels that failed), after the CUDA lines of its showcase kernels and a verdict per kernel under ``listings``."""
    start, failed_before, local_before = time.perf_counter(), len(tally.failed), len(tally.local_memory)
    archs = {}  # the architectures the module's kernels were built for, in order (an entry may name its own)
    for name in module.kernels:
        found = _checked(name, module.kernels, tally)
        if found is not None:
            archs.setdefault(found.arch)
        if listings and found is not None:
            print(f"{found}\n" if name in module.showcase else f"{name:32} {found.verdict()}", flush=True)
    count = len(module.kernels)
    failures = tally.failed[failed_before:]
    verdict = "all correct" if not failures else f"{len(failures)} FAILED"
    if not count:
        verdict = "no kernels (helpers the others load)"
    arch = ",".join(archs) or module.arch
    lines = [f"{module.name:24} {count:4} kernel{'s' if count != 1 else ' '}  {arch:8} {verdict}"]
    if count:
        lines[0] += f" ({time.perf_counter() - start:.0f} s)"
    notes = [*failures, *tally.local_memory[local_before:]]
    return "\n".join([*lines, *(f"    {name}: {why}" for name, why in notes)])


def full_size_report(modules: dict[str, ExampleModule], tally: Tally) -> list[str]:
    """Build and assemble every ``FULL_SIZE`` kernel (too large to simulate): one line each."""
    lines = []
    for module in modules.values():
        for name, make in module.full_size.items():
            tally.full_size += 1
            try:
                ok, line = assemble_report(name, make, module.arch)
            except Exception as err:
                ok, line = False, f"{name:40} FAILED: {_raised(err)}"
            if not ok:
                tally.failed.append((name, line.removeprefix(name).strip()))
            lines.append(line)
    return lines


def verdict(tally: Tally, nvcc: bool = True) -> str:
    """The main job's last line: how many kernels there were and whether every one came out right (``nvcc``: whether
    nvcc was there to assemble them).

    Example:
        >>> print(verdict(Tally(kernels=3, full_size=1)))  # doctest: +NORMALIZE_WHITESPACE
        verdict: 4 kernels, all correct (3 built, assembled, simulated equal to numpy;
        1 production-size: built, assembled)
        >>> verdict(Tally(kernels=3, failed=[("k", "nvcc FAILED: ...")]))
        'verdict: 1 of 3 kernels FAILED: k'
    """
    if tally.failed:
        names = ", ".join(name for name, _ in tally.failed)
        return f"verdict: {len(tally.failed)} of {tally.kernels + tally.full_size} kernels FAILED: {names}"
    assembled = "assembled" if nvcc else "not assembled (no nvcc)"
    line = f"verdict: {tally.kernels + tally.full_size} kernels, all correct ({tally.kernels} built, {assembled}, "
    line += "simulated equal to numpy"
    return line + (f"; {tally.full_size} production-size: built, {assembled})" if tally.full_size else ")")


def kernels(directory: Path, listings: bool = False) -> bool:
    """Build, assemble (where nvcc is installed) and simulate every example kernel; print one line per example
    module, the production-size kernels (built and assembled only), and the verdict last; whether all came out right.
    With ``listings``, each module's showcase kernels are printed with their CUDA lines first."""
    modules = load_example_modules(directory)
    if not any(m.kernels for m in modules.values()):
        print(f"no example kernels in {directory}")
        return False
    tally = Tally()
    print(f"== Example kernels ({directory}): built, assembled by nvcc, simulated against numpy ==", flush=True)
    for module in modules.values():
        print(module_report(module, tally, listings), flush=True)
    full_size = full_size_report(modules, tally)
    if full_size:
        print("== Production sizes: built and assembled (too large to simulate) ==")
        print("\n".join(full_size))
    print(f"\n{verdict(tally, find_nvcc() is not None)}")
    return not tally.failed


LAYOUT_SECTIONS = (
    ("Register fragment over lanes and warps", warp_fragment),
    ("Tensor-memory accumulator", tmem_accumulator),
    ("Scale-factor atom with replicas", scale_factor_atom),
    ("Layout algebra", algebra),
    ("Shared-memory swizzle and tcgen05 fragments", swizzle),
)

USAGE = """usage: python -m tirx_layout.tools.demo [EXAMPLES_DIR] [--listings] [--layouts-only]

The main job: the layout guide's worked examples as the library computes them, then every example kernel built,
assembled by nvcc (where installed) and simulated against numpy; one line per example module, the verdict last.
  EXAMPLES_DIR    a folder of example kernel files (default: the examples installed with the package)
  --listings      also print the CUDA lines of each module's showcase kernels, and a verdict line per kernel
  --layouts-only  only the guide's layouts (no kernels)
Exit status 0 when every kernel came out right, 1 otherwise."""


def main(argv: list[str] | None = None) -> int:
    """Print every example of the guide with the values the library computes, then report on the example kernels;
    the exit status says whether all of them came out right."""
    args = sys.argv[1:] if argv is None else argv
    unknown = [a for a in args if a.startswith("-") and a not in ("--listings", "--layouts-only", "-h", "--help")]
    if unknown or "-h" in args or "--help" in args:
        print(USAGE, file=sys.stderr if unknown else sys.stdout)
        return 2 if unknown else 0
    for title, section in LAYOUT_SECTIONS:
        print(f"== {title} ==")
        print(section())
        print(flush=True)
    if "--layouts-only" in args:
        return 0
    paths = [a for a in args if not a.startswith("-")]
    return 0 if kernels(Path(paths[0]) if paths else examples_directory(), "--listings" in args) else 1


if __name__ == "__main__":
    sys.exit(main())
