"""The fused epilogues of ``examples/epilogues.py`` (bias, ReLU / SiLU / GELU, cast to bfloat16) against the same
epilogues written with upstream TVM 0.27's tile primitives (``_upstream_epilogue.py``: ``Tx.add``, ``Tx.maximum``,
``Tx.silu``, ``Tx.fma``, ``Tx.exp``, ``Tx.fdiv``, ``Tx.cast`` on register fragments, built in a child process as the
other benchmarks build upstream's kernels), and the pipelined GEMM's main loop with and without its fused epilogue.

For each kernel and activation, what the assembler makes of each side: SASS instructions per output element (the
kernel's static SASS count over the output elements each thread computes: the code is straight-line, every thread
runs it once; PTX where ``nvdisasm`` is missing), registers per thread, spilled bytes and the stack frame
(``ptxas -v``). Both sides do the same work around the element-wise part: the accumulator filled from ``Acc``
(``tcgen05.st`` for TMEM), drained (``tcgen05.ld.32x32b.x32``, 32 columns at a time), and written out (a 64B-swizzled
shared tile and one TMA store per warp; for the Hopper fragment 4-byte global stores). Where ours needs more
instructions the table is followed by the opcodes that make the difference (``opcode_difference``: ours minus
upstream's).

* ``tmem``: ``tmem_epilogue`` (sm_100a), a 128 x 64 float32 accumulator in tensor memory.
* ``wgmma``: ``wgmma_epilogue`` (sm_90a), the 64 x 64 register accumulator of ``wgmma.m64n64``.
* Numerics: upstream's packed sm_100 ``f32x2`` ops flush subnormals (``.ftz``) and its packed ``Tx.fma`` rounds
  toward zero (``fma.rz``, with no way to ask for ``.rn``); its adds and multiplies are asked for ``.rn``.
* GELU: upstream has no ``tanh``; its GELU is the same function through ``0.5 (1 + tanh u) = 1 / (1 + exp(-2u))``.
  The row ``gelu`` compares our example (``tanhf``) with that; the row ``gelu-exp`` builds ours with the exp form
  too (:func:`gelu_through_exp`), so that both lower the same arithmetic.

The pipelined GEMM (``examples/pipelined_gemm.py`` at 4096^3 bf16, 128 x 256 x 64 tiles, 4 stages, 148 CTAs): its
main loops, as ``bench_gemm.py`` counts them (SASS of the MMA issuer's loop and of the TMA producer's loop, per K
tile), registers and spills, without a fused epilogue and with each activation's; the loops must not change.

Usage: python benchmarks/bench_epilogue.py        (needs nvcc; nvdisasm for SASS: pip install nvidia-cuda-nvdisasm)
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import bench_gemm
from _upstream_child import run_upstream_script
from tvm.script import tirx as T

from tirx_layout.tools.kernel_report import find_nvcc, load_example_module
from tirx_layout.tools.measurement import (
    KernelCode,
    device_source,
    lower,
    measure_cuda,
    opcode_difference,
    sass_loop_around,
)

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = Path(__file__).resolve().parent / "_upstream_epilogue.py"
EPILOGUES = load_example_module(ROOT / "examples" / "epilogues.py")
RING = load_example_module(ROOT / "examples" / "gemm_ring.py")
ARCH = {"tmem": "sm_100a", "wgmma": "sm_90a"}
#: Output rows of each kernel's accumulator; both run on one warpgroup of 128 threads.
ROWS = {"tmem": 128, "wgmma": 64}
THREADS = 128
COLUMNS = 64
#: The rows of the table: (kernel, our activation, upstream's activation).
CASES = [
    (kernel, ours, "gelu" if ours == "gelu-exp" else ours)
    for kernel in ("tmem", "wgmma")
    for ours in (*EPILOGUES.ACTIVATIONS, "gelu-exp")
]
#: The pipelined GEMM of the main-loop check: (M, N, K, dtype, tile, stages, CTAs) as bench_gemm's first case.
GEMM = (4096, 4096, 4096, "bfloat16", (128, 256, 64), 4, 148)
#: The SASS loops of its roles: the MMA issuer's (around ``UTC*MMA``) and the TMA producer's (around ``UTMALDG``).
MAIN_LOOPS = {"MMA loop": r"UTC\w*MMA", "producer loop": r"UTMALDG"}


@dataclass(frozen=True)
class Measured:
    """One side of one row: the assembler's numbers and the instructions they come from."""

    code: KernelCode
    stack_bytes: int
    elements_per_thread: int

    @property
    def per_element(self) -> float:
        """Static instructions (SASS, else PTX) per output element a thread computes."""
        return len(self.code.instructions) / self.elements_per_thread


@contextlib.contextmanager
def gelu_through_exp():
    """For as long as the block runs, ``EPILOGUES.activate`` also knows ``"gelu-exp"``: tanh-GELU written as
    ``x / (1 + exp(-2c (x + 0.044715 x^3)))`` with the operations, in the order, of upstream's GELU in
    ``_upstream_epilogue.activate`` (``x * x``, an FMA, ``* x``, ``exp``, ``+ 1``, a division). The example's
    kernels look ``activate`` up when they are built, so they are built inside the block.

    Example:
        >>> x = T.float32(2)
        >>> with gelu_through_exp():
        ...     print(EPILOGUES.activate(x, "gelu-exp"))
        T.float32(2.0) / (T.exp(T.float32(-3.7623767852783203)) + T.float32(1.0))
        >>> EPILOGUES.activate(x, "gelu-exp")
        Traceback (most recent call last):
        ...
        ValueError: activation 'gelu-exp'; expected one of ('relu', 'silu', 'gelu')
    """
    original = EPILOGUES.activate
    k = -2.0 * 0.7978845608028654  # -2 sqrt(2 / pi)

    def activate(x, activation: str):
        if activation != "gelu-exp":
            return original(x, activation)
        return x / (T.exp((x * x * T.float32(k * 0.044715) + T.float32(k)) * x) + T.float32(1))

    EPILOGUES.activate = activate
    try:
        yield
    finally:
        EPILOGUES.activate = original


def our_kernel(kernel: str, activation: str, columns: int = COLUMNS):
    """The example's kernel ``kernel`` (``"tmem"`` or ``"wgmma"``) for ``activation`` (or ``"gelu-exp"``); the TMEM
    one with its chunk loop unrolled (``gemm_ring.unrolled``), as its TMEM regions need.

    Example:
        >>> [p.name for p in our_kernel("wgmma", "relu").params]
        ['Acc', 'bias', 'D']
    """
    with gelu_through_exp():
        if kernel == "tmem":
            return RING.unrolled(EPILOGUES.tmem_epilogue(activation, columns))
        if kernel == "wgmma":
            return EPILOGUES.wgmma_epilogue(activation, columns)
    raise ValueError(f"kernel {kernel!r}; expected one of {sorted(ARCH)}")


def stack_frame_bytes(cuda: str, arch: str) -> int:
    """The largest stack frame ``ptxas -v`` reports for the functions of ``cuda`` (0: everything in registers)."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "kernel.cu"
        source.write_text(cuda)
        command = [
            find_nvcc(),
            f"-arch={arch}",
            "-cubin",
            "-Xptxas",
            "-v",
            "-o",
            str(Path(tmp) / "k.cubin"),
            str(source),
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=True)
    return max((int(n) for n in re.findall(r"(\d+) bytes stack frame", done.stderr)), default=0)


def measure_ours(kernel: str, activation: str, columns: int = COLUMNS) -> Measured:
    """Our kernel built with the tirx_layout pipeline and measured."""
    arch = ARCH[kernel]
    lowered = lower(our_kernel(kernel, activation, columns), "tirx_layout", arch)
    cuda = device_source(lowered, "tirx_layout")
    code = measure_cuda(cuda, arch, bench_gemm.dynamic_shared_bytes(lowered))
    return Measured(code, stack_frame_bytes(cuda, arch), ROWS[kernel] * columns // THREADS)


def measure_upstream(kernel: str, activation: str, columns: int = COLUMNS) -> Measured:
    """Upstream's kernel (``_upstream_epilogue.py``) built and measured in a child process; ``RuntimeError`` with
    the child's last error line when it fails."""
    fields = json.loads(run_upstream_script(UPSTREAM, kernel, activation, columns, what=f"upstream {kernel} epilogue"))
    cuda = fields.pop("cuda")
    return Measured(KernelCode(**fields), stack_frame_bytes(cuda, ARCH[kernel]), ROWS[kernel] * columns // THREADS)


def row(kernel: str, activation: str, ours: Measured, theirs: Measured) -> str:
    """One line of the table: per-element instructions, registers, spilled and stack bytes as ours/upstream."""
    ratio = ours.per_element / theirs.per_element
    verdict = "ok" if ratio <= 1 else "OURS MORE"
    return (
        f"{kernel:6} {activation:9} {ours.per_element:7.2f} {theirs.per_element:7.2f} {ratio:6.3f}   "
        f"{ours.code.registers:4}/{theirs.code.registers:<4} {ours.code.spill_bytes:4}/{theirs.code.spill_bytes:<4} "
        f"{ours.stack_bytes:4}/{theirs.stack_bytes:<4} {verdict}"
    )


def where_ours_is_above(ours: Measured, theirs: Measured, top: int = 8) -> str:
    """The opcodes ours spends more (+) or fewer (-) of than upstream, the largest differences first."""
    diff = opcode_difference(ours.code.instructions, theirs.code.instructions)
    ranked = sorted(diff.items(), key=lambda item: -abs(item[1]))[:top]
    return ", ".join(f"{name} {count:+d}" for name, count in ranked)


# ---- the pipelined GEMM's main loop, with and without the fused epilogue ----


def gemm_main_loops(epilogue: str | None, gemm: tuple = GEMM) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Of the pipelined GEMM ``gemm`` (M, N, K, dtype, tile, stages, CTAs) fused with ``epilogue`` (None: float32
    out, no epilogue): ``bench_gemm``'s numbers (registers, PTX and, where nvdisasm is installed, SASS instructions
    per K tile of the MMA issuer's and the producer's loops) with the spilled bytes; and the SASS loops themselves
    (:data:`MAIN_LOOPS`), empty without nvdisasm."""
    m, n, k, dtype, tile, stages, ctas = gemm
    kernel = bench_gemm.EXAMPLE.pipelined_gemm(m, n, k, dtype, tile, stages, ctas=ctas, epilogue=epilogue)
    lowered = lower(kernel, "tirx_layout")
    cuda = device_source(lowered, "tirx_layout")
    code = measure_cuda(cuda, dynamic_shared_bytes=bench_gemm.dynamic_shared_bytes(lowered))
    found = {**bench_gemm.numbers(code, cuda, "cp.async.bulk.tensor"), "spilled bytes": code.spill_bytes}
    if code.sass_listing is None:
        return found, {}
    return found, {name: sass_loop_around(code.sass_listing, pattern) for name, pattern in MAIN_LOOPS.items()}


def loop_change(plain: list[str], fused: list[str]) -> str:
    """How a main loop of the fused kernel differs from the plain kernel's, in words.

    Example:
        >>> loop_change(["UTCHMMA a", "IADD3 R1"], ["UTCHMMA a", "IADD3 R1", "ULOP3.LUT UR5"])
        "2 -> 3 instructions: {'ULOP3.LUT': 1}"
    """
    diff = opcode_difference(fused, plain)
    if not diff:
        return f"unchanged: {len(plain)} instructions, the same opcodes"
    if len(plain) == len(fused):
        return f"the same length, {len(plain)} instructions; other opcodes: {diff}"
    return f"{len(plain)} -> {len(fused)} instructions: {diff}"


def gemm_main() -> None:
    """The main-loop numbers for no epilogue and each activation, and what changed in the loops."""
    m, n, k, dtype, tile, stages, ctas = GEMM
    print(f"\npipelined GEMM {m}x{n}x{k} {dtype} tile {'x'.join(map(str, tile))} S={stages} ctas={ctas}: main loops")
    plain, plain_loops = gemm_main_loops(None)
    print("  no epilogue: " + ", ".join(f"{key} {value}" for key, value in plain.items()))
    for activation in EPILOGUES.ACTIVATIONS:
        fused, loops = gemm_main_loops(activation)
        print(f"  fused {activation}: " + ", ".join(f"{key} {value}" for key, value in fused.items()))
        for name, loop in loops.items():
            print(f"    SASS {name}: {loop_change(plain_loops[name], loop)}")


def main() -> None:
    if find_nvcc() is None:
        print("bench_epilogue: nvcc not found; nothing to measure")
        return
    header = "kernel activation  ours/el   up/el  ratio   regs      spills    stack"
    print("fused epilogues: static SASS (PTX without nvdisasm) per output element, ours vs upstream's tile ops")
    print(header)
    notes = []
    for kernel, activation, theirs_activation in CASES:
        ours = measure_ours(kernel, activation)
        try:
            theirs = measure_upstream(kernel, theirs_activation)
        except RuntimeError as err:
            print(f"{kernel:6} {activation:9} {ours.per_element:7.2f}  upstream: {err}")
            continue
        print(row(kernel, activation, ours, theirs), flush=True)
        if ours.per_element > theirs.per_element:
            notes.append(f"  {kernel} {activation}: {where_ours_is_above(ours, theirs)}")
    if notes:
        print("where ours spends more (ours - upstream, by opcode):")
        print("\n".join(notes))
    print("gelu: ours tanhf, upstream x / (1 + exp(-2u)) (upstream has no tanh); gelu-exp: both the exp form")
    print("numerics: upstream's sm_100 packed f32x2 ops are .ftz, and its packed FMA (gelu) rounds toward zero")
    gemm_main()


if __name__ == "__main__":
    main()
