"""The same one-CTA GEMM ``D = A @ B.T`` built with tirx_layout's ``T.tile_mma`` and with upstream TVM's
``Tx.gemm_async(..., dispatch="tcgen05")``, and what the assembler makes of each, side by side: registers per thread
(``ptxas -v``), shared-memory bytes per CTA (static + dynamic), the instructions of the kernel and of its MMA issue
sequence (from the CTA barrier before the first MMA through the commit: descriptor arithmetic, election, MMAs,
commit) in SASS where ``nvdisasm`` is installed (else PTX; the header says which), and tcgen05 PTX instructions
(all, then mma / commit / ld / cp / alloc+dealloc+relinquish / fence). Each cell is ``ours/upstream``; the last
column lists the measurements where ours is above upstream.

Both kernels: 128 threads; A (M, K) and B (N, K) K-major 128B-swizzled in shared memory, filled by every thread;
one thread issues the MMAs over the whole K and commits to an mbarrier; every thread waits, then the warpgroup
reads the float32 accumulator out of tensor memory (``tcgen05.ld``, 128 columns at a time) into D in global memory.
Upstream's kernel is built in a child process (``_upstream_gemm.py``) that loads no tirx_layout until upstream has
built it. Counts are static (instructions in the code).

Usage: python benchmarks/bench_mma.py        (needs nvcc; nvdisasm for SASS: pip install nvidia-cuda-nvdisasm)
"""

from __future__ import annotations

import json
from pathlib import Path

from _upstream_child import run_upstream_script
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (T.tile_mma, T.alloc_tmem, layout=..., the pipeline)
from tirx_layout import mma_shared_layout, tcgen05_atom_layout, tmem_datapath_layout
from tirx_layout.tools.kernel_report import find_nvcc
from tirx_layout.tools.measurement import KernelCode, measure_kernel, opcode_difference

UPSTREAM = Path(__file__).resolve().parent / "_upstream_gemm.py"
EPILOGUE_COLUMNS = 128  # the accumulator is read 128 columns (128 registers per thread) at a time, as upstream's
# (M, N, K) x dtype: the issue's 128x128x64, a wide N and deeper K, and M = 64 (TMEM datapath layout F)
CASES = [
    (128, 128, 64, "float16"),
    (128, 128, 64, "bfloat16"),
    (128, 256, 128, "float16"),
    (128, 256, 128, "bfloat16"),
    (64, 128, 64, "float16"),
    (64, 256, 128, "bfloat16"),
]
COLUMNS = (
    "registers",
    "shared bytes",
    "instructions",
    "MMA issue",
    "tcgen05",
    "mma",
    "commit",
    "ld",
    "cp",
    "alloc",
    "fence",
)


def our_gemm(m: int, n: int, k: int, dtype: str = "float16"):
    """``D = A @ B.T`` for one (m, n, k) tile with ``T.tile_mma`` (synchronous form, CTA scope); m is 128 (the
    accumulator in TMEM datapath layout D, read with ``tcgen05.ld.32x32b``) or 64 (layout F, ``16x256b``)."""
    datapath, shape = ("D", "32x32b") if m == 128 else ("F", "16x256b")
    chunk = min(n, EPILOGUE_COLUMNS)
    if n not in (chunk, 2 * chunk):
        raise ValueError(f"our_gemm reads the accumulator in one or two {EPILOGUE_COLUMNS}-column pieces; N = {n}")
    fragment = tcgen05_atom_layout(shape, (m, chunk), "float32")

    @T.prim_func
    def gemm(A: T.Buffer((m, k), dtype), B: T.Buffer((n, k), dtype), D: T.Buffer((m, n), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        As = T.alloc_shared((m, k), dtype, layout=mma_shared_layout(dtype, "128B", (m, k)), align=1024)
        Bs = T.alloc_shared((n, k), dtype, layout=mma_shared_layout(dtype, "128B", (n, k)), align=1024)
        acc = T.alloc_tmem((m, n), "float32", layout=tmem_datapath_layout(datapath, m, n))
        out = T.alloc_local((m, chunk), "float32", layout=fragment)
        T.tile_copy(As, A)
        T.tile_copy(Bs, B)
        T.tile_mma(acc, As, Bs, accumulate=False)
        T.tile_copy(out, acc[0:m, 0:chunk], "warpgroup")
        T.tile_copy(D[0:m, 0:chunk], out, "warpgroup")
        if n > chunk:  # a Python condition: the second half exists in the kernel or not
            T.tile_copy(out, acc[0:m, chunk:n], "warpgroup")
            T.tile_copy(D[0:m, chunk:n], out, "warpgroup")

    return gemm


def measure_ours(m: int, n: int, k: int, dtype: str) -> KernelCode:
    """:func:`our_gemm` built with the ``"tirx_layout"`` pipeline, measured."""
    return measure_kernel(our_gemm(m, n, k, dtype), "tirx_layout")


def measure_upstream(m: int, n: int, k: int, dtype: str) -> KernelCode:
    """Upstream's kernel (``_upstream_gemm.py``), built and measured in a child process without tirx_layout's
    TVMScript names; ``RuntimeError`` with the child's last error line when it fails."""
    stdout = run_upstream_script(UPSTREAM, m, n, k, dtype, what=f"upstream build of {m}x{n}x{k} {dtype}")
    return KernelCode(**json.loads(stdout))


def compare(ours: KernelCode, theirs: KernelCode) -> tuple[dict[str, tuple[int, int]], list[str]]:
    """``{measurement: (ours, upstream)}`` over ``COLUMNS``, and the measurements where ours is above upstream."""
    mine, other = ours.numbers(), theirs.numbers()
    pairs = {key: (mine[key], other[key]) for key in COLUMNS}
    return pairs, [key for key, (a, b) in pairs.items() if a > b]


def ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else ("1.00" if a == 0 else "inf")


def main() -> None:
    if find_nvcc() is None:
        print("bench_mma: nvcc not found; nothing to measure")
        return
    rows, above, issue = [], {}, {}
    language = None
    for m, n, k, dtype in CASES:
        name = f"{m}x{n}x{k} {dtype}"
        try:
            ours = measure_ours(m, n, k, dtype)
        except Exception as err:  # a case our lowering refuses is a row that says so, not the end of the table
            print(f"{name:24} ours: {type(err).__name__}: {str(err).strip().splitlines()[-1][:150]}")
            continue
        try:
            theirs = measure_upstream(m, n, k, dtype)
        except RuntimeError as err:
            print(f"{name:24} upstream: {err}")
            continue
        language = ours.language if ours.language == theirs.language else "mixed SASS/PTX"
        pairs, worse = compare(ours, theirs)
        rows.append((name, pairs))
        above[name] = worse
        issue[name] = (ours, theirs)
    if not rows:
        return
    print(f"instructions and MMA issue counted in {language}; each cell ours/upstream (ratio)")
    header = f"{'case':24}" + "".join(f"{key:>20}" for key in COLUMNS)
    print(header)
    print("-" * len(header))
    for name, pairs in rows:
        cells = "".join(f"{f'{a}/{b} ({ratio(a, b)})':>20}" for a, b in pairs.values())
        print(f"{name:24}{cells}")
    print()
    for name, worse in above.items():
        print(f"{name:24} above upstream in: {', '.join(worse) if worse else 'nothing'}")
    print(f"\nwhere the MMA issue sequences differ ({language} mnemonics, ours - upstream):")
    for name, (ours, theirs) in issue.items():
        diff = opcode_difference(ours.issue_sequence, theirs.issue_sequence)
        print(f"{name:24} " + ", ".join(f"{op} {count:+d}" for op, count in diff.items()))


if __name__ == "__main__":
    main()
