"""What the assembler makes of the sm_80 GEMM of ``examples/ampere_gemm.py`` (3-stage ``cp.async`` ring,
``ldmatrix``, ``mma.sync``; a 64 x 64 CTA tile of D over 4 warps, K tiles of 128 bytes): registers per thread
(``ptxas -v``), spill bytes, shared bytes per CTA, and the instructions of one K tile -- the smallest loop around the
``mma.sync`` (SASS ``HMMA``/``IMMA`` where ``nvdisasm`` is installed, else PTX; the header says which) -- with the
counts of its MMAs, ``ldmatrix`` and ``cp.async`` (and of the barriers, which the ring's waits and the ``ldmatrix``
ordering bring).

Then the float16 -> float32 kernel against the issue's two others, at the same shape (M = N = 64, K = 4 tiles of
64) and tiling (2 x 2 warps of 32 x 32, ``mma.sync.m16n8k16``, 3 stages), in SASS:

* upstream TVM 0.27's ``Tx`` GEMM (``_upstream_mma_sync_gemm.py``: its ``mma.m16n8k*`` gemm dispatch, ``ldstmatrix``
  copies and ``ldgsts`` async copies), built in a child process without tirx_layout;
* CUTLASS's sm80 GEMM (``cutlass_sm80_gemm.cu``: ``cutlass::gemm::device::Gemm`` with the Sm80 tensor-op
  configuration at this tiling), compiled to a cubin with nvcc against the pinned ``nvidia-cutlass`` headers.

The SASS of one K tile is the smallest loop around the ``HMMA`` divided by the K tiles in it (32 ``HMMA`` per warp
per tile); where ptxas unrolled the whole K loop (a compile-time trip count) there is no loop, and a K tile is what
the kernel grows by per added K tile (built at 4 and at 8 tiles). CUTLASS reads K at run time and keeps its loop;
its shared memory is dynamic, sized by the host at launch, so the cubin does not say it. A side that cannot be
built is printed with the reason.

Usage: python benchmarks/bench_mma_sync.py        (needs nvcc; nvdisasm for SASS: pip install nvidia-cuda-nvdisasm)
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from _upstream_child import run_upstream_script

from tirx_layout.tools.kernel_report import find_nvcc, load_example_module
from tirx_layout.tools.measurement import (
    KernelCode,
    find_nvdisasm,
    measure_cuda,
    measure_kernel,
    opcode_counts,
    ptx_loop_around,
    sass_loop_around,
)

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "examples" / "ampere_gemm.py"
UPSTREAM = HERE / "_upstream_mma_sync_gemm.py"
CUTLASS = HERE / "cutlass_sm80_gemm.cu"
#: (kernel of the example, what its MMA is called in SASS and in PTX)
CASES = [
    ("ampere_gemm_float16_float32", r"HMMA", "mma"),
    ("ampere_gemm_bfloat16_float32", r"HMMA", "mma"),
    ("ampere_gemm_int8_int32", r"IMMA", "mma"),
    ("ampere_gemm_float32_float32", r"HMMA", "mma"),
]
COLUMNS = ("registers", "spills", "shared bytes", "K-tile instructions", "mma", "ldmatrix", "cp.async", "barriers")

#: The compared kernel: the example's float16 -> float32 GEMM at its shape.
ARCH, TILES = "sm_80", 4
#: HMMA per warp per K tile: a 32 x 32 x 64 warp tile in m16n8k16 steps.
MMAS_PER_TILE = (32 // 16) * (32 // 8) * (64 // 16)
#: The SASS opcodes counted per K tile (a regular expression on the mnemonic each).
KINDS = {"HMMA": r"HMMA", "LDSM": r"LDSM", "LDGSTS": r"LDGSTS", "BAR": r"BAR"}


def k_tile(code, sass_mma: str, ptx_mma: str) -> list[str]:
    """The instructions of one K tile: the smallest loop holding the MMA."""
    if code.sass_listing is not None:
        return sass_loop_around(code.sass_listing, sass_mma)
    return ptx_loop_around("\n".join(code.ptx), ptx_mma)


def count(instructions: list[str], pattern: str) -> int:
    """How many of ``instructions`` match ``pattern`` (a regular expression on the mnemonic)."""
    return sum(n for op, n in opcode_counts(instructions).items() if re.match(pattern, op, re.IGNORECASE))


def measure(name: str, sass_mma: str, ptx_mma: str) -> dict:
    """The row of kernel ``name``."""
    kernel, _, _, arch = load_example_module(EXAMPLE).KERNELS[name]
    code = measure_kernel(kernel, arch=arch)
    loop = k_tile(code, sass_mma, ptx_mma)
    sass = code.sass_listing is not None
    return {
        "registers": code.registers,
        "spills": code.spill_bytes,
        "shared bytes": code.shared_bytes,
        "K-tile instructions": len(loop),
        "mma": count(loop, sass_mma if sass else r"mma"),
        "ldmatrix": count(loop, r"LDSM" if sass else r"ldmatrix"),
        "cp.async": count(loop, r"LDGSTS" if sass else r"cp\.async\.c"),
        "barriers": count(loop, r"BAR" if sass else r"(bar|barrier)"),
        "language": "SASS" if sass else "PTX",
    }


# ---- ours against upstream's Tx GEMM and CUTLASS's ---------------------------------------------------------------


def measure_ours(tiles: int = TILES) -> KernelCode:
    """The example's float16 -> float32 GEMM over ``tiles`` K tiles, assembled for sm_80."""
    return measure_kernel(load_example_module(EXAMPLE).pipelined_gemm("float16", "float32", tiles), arch=ARCH)


def measure_upstream(tiles: int = TILES) -> KernelCode:
    """Upstream's ``Tx`` GEMM (``_upstream_mma_sync_gemm.py``) over ``tiles`` K tiles, built in a child process;
    ``RuntimeError`` with the child's last error line when upstream cannot build it."""
    fields = json.loads(run_upstream_script(UPSTREAM, tiles, what="upstream's Tx mma.sync GEMM"))
    fields.pop("cuda")
    return KernelCode(**fields)


def measure_cutlass(tiles: int = TILES) -> KernelCode:
    """CUTLASS's sm80 GEMM (``cutlass_sm80_gemm.cu``; K is a run-time argument, so ``tiles`` changes nothing),
    compiled against the ``nvidia-cutlass`` headers; ``RuntimeError`` saying why when they are missing."""
    try:
        import cutlass_library
    except ImportError as err:
        raise RuntimeError(f"the CUTLASS headers are not installed (pip install nvidia-cutlass): {err}") from err
    include = Path(cutlass_library.__file__).parent / "source" / "include"
    if not (include / "cutlass" / "gemm" / "device" / "gemm.h").exists():
        raise RuntimeError(f"nvidia-cutlass at {include.parent.parent} ships no cutlass/gemm/device/gemm.h")
    return measure_cuda(CUTLASS.read_text(), ARCH, flags=(f"-I{include}", "-std=c++17", "-w"))


@dataclass
class KTile:
    """One side's measurement: registers, spilled bytes, shared bytes (``None`` where the launch sizes it), the
    SASS opcodes of one K tile (a count each, fractional where a loop holds a part-tile) and how they were found."""

    registers: int
    spills: int
    shared_bytes: int | None
    opcodes: dict[str, float]
    method: str

    @property
    def instructions(self) -> float:
        """SASS instructions per K tile."""
        return sum(self.opcodes.values())

    def kind(self, pattern: str) -> float:
        """Opcodes per K tile whose mnemonic starts with ``pattern`` (a regular expression)."""
        return sum(n for op, n in self.opcodes.items() if re.match(pattern, op))


def per_k_tile(build, tiles: int = TILES, dynamic_shared: bool = False) -> KTile:
    """The :class:`KTile` of the kernel ``build(tiles)`` makes: the smallest SASS loop around its ``HMMA`` per K
    tile, or where ptxas unrolled the K loop, the opcodes the kernel gains per K tile from ``tiles`` to
    ``2 * tiles``. ``ValueError`` without nvdisasm (SASS is what is compared)."""
    code = build(tiles)
    if code.sass_listing is None:
        raise ValueError("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm): the comparison is in SASS")
    loop = sass_loop_around(code.sass_listing, r"HMMA")
    larger = None
    if not loop:  # unrolled at this K: ptxas may keep the loop at twice the K tiles
        larger = build(2 * tiles)
        loop = sass_loop_around(larger.sass_listing, r"HMMA")
        if loop:
            code = larger
    if loop:
        in_loop = count(loop, r"HMMA") / MMAS_PER_TILE
        opcodes = {op: n / in_loop for op, n in opcode_counts(loop).items()}
        built = tiles if larger is None else 2 * tiles
        method = f"SASS loop around HMMA at {built} K tiles, {in_loop:g} K tile(s) in it"
    else:
        small, large = opcode_counts(code.sass), opcode_counts(larger.sass)
        opcodes = {op: (large[op] - small[op]) / tiles for op in large | small if large[op] != small[op]}
        method = f"K loop unrolled by ptxas: growth per K tile from {tiles} to {2 * tiles} tiles"
    shared = None if dynamic_shared else code.shared_bytes
    return KTile(code.registers, code.spill_bytes, shared, opcodes, method)


def opcode_excess(ours: KTile, theirs: KTile) -> dict[str, float]:
    """``{mnemonic: ours - theirs}`` per K tile where they differ, largest excess of ours first."""
    diff = {op: ours.opcodes.get(op, 0) - theirs.opcodes.get(op, 0) for op in set(ours.opcodes) | set(theirs.opcodes)}
    return dict(sorted(((op, d) for op, d in diff.items() if abs(d) > 1e-9), key=lambda item: (-item[1], item[0])))


def compare() -> dict[str, KTile | str]:
    """Each side's :class:`KTile`, or the sentence saying why it could not be built."""
    sides: dict[str, KTile | str] = {}
    for name, build, dynamic in (
        ("ours", measure_ours, False),
        ("upstream", measure_upstream, False),
        ("CUTLASS", measure_cutlass, True),
    ):
        try:
            sides[name] = per_k_tile(build, TILES, dynamic)
        except (RuntimeError, ValueError, FileNotFoundError) as err:
            sides[name] = f"cannot be built: {err}"
    return sides


def ratio(a: float, b: float) -> str:
    """``a / b`` to two places."""
    return f"{a / b:.2f}" if b else "n/a"


def print_comparison(sides: dict[str, KTile | str]) -> None:
    """The table of :func:`compare`, the ratios of ours to each other side, and where ours spends more."""
    print(f"\nfloat16 -> float32, M = N = 64, K = {TILES} x 64, 2 x 2 warps of 32 x 32, m16n8k16, 3 stages (SASS)")
    header = ("registers", "spills", "shared", "K-tile SASS", "HMMA", "LDSM", "LDGSTS", "BAR")
    print(f"{'':10}" + "".join(f"{h:>13}" for h in header))
    built = {name: side for name, side in sides.items() if isinstance(side, KTile)}
    for name, side in sides.items():
        if not isinstance(side, KTile):
            print(f"{name:10}{side}")
            continue
        cells = [side.registers, side.spills, "dynamic" if side.shared_bytes is None else side.shared_bytes]
        cells += [f"{side.instructions:g}", *(f"{side.kind(p):g}" for p in KINDS.values())]
        print(f"{name:10}" + "".join(f"{c:>13}" for c in cells) + f"   ({side.method})")
    ours = built.get("ours")
    for name, theirs in built.items():
        if name == "ours" or ours is None:
            continue
        print(
            f"ours/{name}: registers {ratio(ours.registers, theirs.registers)}, "
            f"K-tile SASS {ratio(ours.instructions, theirs.instructions)}"
        )
        excess = opcode_excess(ours, theirs)
        if excess:
            print(f"  per K tile, ours - {name}: " + ", ".join(f"{op} {d:+g}" for op, d in excess.items()))


def main() -> int:
    if find_nvcc() is None:
        print("nvcc is not installed: nothing to measure")
        return 0
    rows = {name: measure(name, sass, ptx) for name, sass, ptx in CASES}
    language = next(iter(rows.values()))["language"]
    print(f"sm_80 GEMM of examples/ampere_gemm.py, one K tile in {language}")
    print(f"{'kernel':32}" + "".join(f"{c:>21}" for c in COLUMNS))
    for name, row in rows.items():
        print(f"{name:32}" + "".join(f"{row[c]:>21}" for c in COLUMNS))
    if find_nvdisasm() is None:
        print("\nthe comparison with upstream and CUTLASS is in SASS: nvdisasm is not installed")
        return 0
    print_comparison(compare())
    return 0


if __name__ == "__main__":
    sys.exit(main())
