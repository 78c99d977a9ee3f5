"""The pipelined, warp-specialised GEMM of ``examples/pipelined_gemm.py`` at the issue's shapes, measured from the
code the assembler makes, and a roofline estimate of whether its pipeline is compute-bound.

For each case: registers per thread and shared bytes per CTA (``ptxas -v``), instructions of the kernel, and the
PTX instructions of the MMA issuer's K loop and of the producer's per K tile (``tools.measurement.ptx_loop_around``:
the smallest loop around a ``tcgen05.mma`` / ``cp.async.bulk.tensor`` or shared store, divided by the K tiles the
assembler unrolled into it), tcgen05 instructions by kind; where nvdisasm is installed (``pip install
nvidia-cuda-nvdisasm``) also SASS: the kernel's instructions and the MMA issuer's loop per K tile
(``tools.measurement.sass_loop_around``).

Upstream: TVM 0.27's own pipelined tcgen05 GEMM is a benchmark script of its source tree
(``tests/python/tirx/benchmarks/bench_cuda_tcgen05_bf16_gemm.py``: a TMA warp, an MMA warp, an S-stage ring, one
accumulator, one CTA per tile, M and N multiples of the tile); the wheel does not ship it, so
``_upstream_pipelined_gemm.py`` writes that structure with upstream's API alone and is built in a child process
(without tirx_layout, as ``bench_mma.py`` does). Its 4096^3 bf16 kernel (128 x 256 x 64 tiles, 4 stages) is compared
with ours at the same tile and stages: each cell ``ours/upstream (ratio)``.

Roofline (per output tile, per ring stage; the device numbers are NVIDIA's published B200 figures, named below): the
tensor cores take ``2 * tile_m * tile_n * tile_k / (peak / SMs)`` seconds per stage; the TMA must bring the stage's
bytes in that time. Per stage the intensity is ``2 mnk / bytes`` FLOP/byte; the whole problem, with every operand
tile read from DRAM once (L2 reuse across the CTAs sharing a row or column of tiles), has ``2 MNK / (2 (MK + NK) +
4 MN)``. Compute-bound against DRAM when that exceeds the machine balance ``peak / DRAM bandwidth``; the stage
stream itself is served from L2, whose bandwidth NVIDIA does not publish, so the script prints what it needs.

Usage: python benchmarks/bench_gemm.py        (needs nvcc)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from _upstream_child import run_upstream_script

from tirx_layout.tools.kernel_report import find_nvcc, load_example_module
from tirx_layout.tools.measurement import (
    KernelCode,
    device_source,
    lower,
    measure_cuda,
    opcode,
    ptx_instructions,
    ptx_loop_around,
    sass_loop_around,
)

UPSTREAM = Path(__file__).resolve().parent / "_upstream_pipelined_gemm.py"
EXAMPLE = load_example_module(Path(__file__).resolve().parents[1] / "examples" / "pipelined_gemm.py")

#: NVIDIA B200 (HGX B200 datasheet): dense tensor throughput per GPU in FLOP/s, streaming multiprocessors, HBM3e
#: bandwidth in bytes/s.
PEAK_FLOPS = {"bfloat16": 2.25e15, "float8_e4m3fn": 4.5e15}
SMS = 148
DRAM_BYTES_PER_S = 8e12
OPERAND_BYTES = {"bfloat16": 2, "float8_e4m3fn": 1}

# (M, N, K, dtype, tile, stages, loads, scaled): the 4096 cube (TMA and, for comparison, thread-copy
# loads), fp8, and block-scaled fp8 (tile_n 224: two accumulator stages and four of scale factors in 512 columns)
CASES = [
    (4096, 4096, 4096, "bfloat16", (128, 256, 64), 4, "tma", False),
    (4096, 4096, 4096, "bfloat16", (128, 256, 64), 4, "threads", False),
    (4096, 4096, 4096, "float8_e4m3fn", (128, 256, 128), 4, "tma", False),
    (4096, 4096, 4096, "float8_e4m3fn", (128, 224, 128), 4, "tma", True),
]


def ptx_of(cuda: str) -> str:
    """The PTX nvcc makes of ``cuda`` for sm_100a."""
    with tempfile.TemporaryDirectory() as tmp:
        source, out = Path(tmp) / "k.cu", Path(tmp) / "k.ptx"
        source.write_text(cuda)
        subprocess.run(["nvcc", "-arch=sm_100a", "-ptx", "-o", str(out), str(source)], check=True, capture_output=True)
        return out.read_text()


def roofline(m: int, n: int, k: int, dtype: str, tile: tuple[int, int, int]) -> dict[str, float]:
    """The estimate of the module docstring, in the units printed."""
    tm, tn, tk = tile
    size = OPERAND_BYTES[dtype]
    per_sm = PEAK_FLOPS[dtype] / SMS
    stage_flops = 2 * tm * tn * tk
    stage_bytes = (tm + tn) * tk * size
    stage_seconds = stage_flops / per_sm
    problem_flops = 2 * m * n * k
    dram_bytes = (m * k + n * k) * size + 4 * m * n
    return {
        "stage MMA ns": stage_seconds * 1e9,
        "stage bytes": stage_bytes,
        "stage FLOP/B": stage_flops / stage_bytes,
        "L2->SMs TB/s needed": stage_bytes / stage_seconds * SMS / 1e12,
        "DRAM FLOP/B": problem_flops / dram_bytes,
        "balance FLOP/B": PEAK_FLOPS[dtype] / DRAM_BYTES_PER_S,
        "compute us": problem_flops / PEAK_FLOPS[dtype] * 1e6,
        "DRAM us": dram_bytes / DRAM_BYTES_PER_S * 1e6,
    }


def upstream_measurement(m: int, n: int, k: int, stages: int, block_n: int) -> tuple[KernelCode, str]:
    """Upstream's kernel (``_upstream_pipelined_gemm.py``) measured in a child process, and its CUDA source;
    ``RuntimeError`` with the child's last error line when it fails."""
    fields = json.loads(run_upstream_script(UPSTREAM, m, n, k, stages, block_n))
    cuda = fields.pop("cuda")
    return KernelCode(**fields), cuda


def numbers(code: KernelCode, cuda: str, fill: str) -> dict[str, int]:
    """Registers, shared bytes, PTX instructions, PTX instructions of one iteration of the MMA issuer's and of the
    producer's K loop (the loop around the first ``fill`` instruction), and where nvdisasm is installed the SASS
    instructions of the kernel and of the MMA issuer's loop per K tile."""
    ptx = ptx_of(cuda)
    mma_loop, fill_loop = ptx_loop_around(ptx, "tcgen05.mma"), ptx_loop_around(ptx, fill)
    # the assembler may unroll a K loop: count per K tile (4 MMAs per K tile: K = 16 steps of a 64-wide bf16 tile
    # or K = 32 steps of a 128-wide fp8 one; 2 TMA copies)
    mma_tiles = max(1, sum(opcode(i).startswith("tcgen05.mma") for i in mma_loop) // 4)
    fill_tiles = max(1, sum(opcode(i).startswith("cp.async.bulk.tensor") for i in fill_loop) // 2)
    found = {
        "registers": code.registers,
        "shared bytes": code.shared_bytes,
        "PTX instructions": len(ptx_instructions(ptx)),
        "MMA loop per K tile": len(mma_loop) // mma_tiles,
        "producer loop per K tile": len(fill_loop) // (fill_tiles if fill.startswith("cp.async") else 1),
    }
    if code.sass_listing is not None:
        sass_loop = sass_loop_around(code.sass_listing, r"UTC\w*MMA")
        sass_tiles = max(1, sum(bool(re.match(r"UTC\w*MMA", opcode(i))) for i in sass_loop) // 4)
        found["SASS instructions"] = len(code.sass)
        found["SASS MMA loop per K tile"] = round(len(sass_loop) / sass_tiles)
    return found


def cell(a: int, b: int) -> str:
    """``a/b (a / b)``; a loop count of 0 means no PTX loop holds the instruction (unrolled or peeled): ``n/a``."""
    if not a or not b:
        return f"{a or 'n/a'}/{b or 'n/a'}"
    return f"{a}/{b} ({a / b:.2f})"


def main() -> None:
    if find_nvcc() is None:
        print("bench_gemm: nvcc not found; nothing to measure")
        return
    for m, n, k, dtype, tile, stages, loads, scaled in CASES:
        name = f"{m}x{n}x{k} {dtype}{' block-scaled' if scaled else ''} tile {'x'.join(map(str, tile))} S={stages} "
        name += f"loads={loads}"
        kernel = EXAMPLE.pipelined_gemm(m, n, k, dtype, tile, stages, ctas=SMS, loads=loads, scaled=scaled)
        cuda = device_source(lower(kernel, "tirx_layout"), "tirx_layout")
        code = measure_cuda(cuda)
        fill = "cp.async.bulk.tensor" if loads == "tma" else "st.shared"
        ours = numbers(code, cuda, fill)
        tc = code.tcgen05
        print(name)
        print("  " + ", ".join(f"{key} {value}" for key, value in ours.items()))
        print(f"  tcgen05 in the code: mma {tc['mma']}, commit {tc['commit']}, ld {tc['ld']}, cp {tc['cp']}")
        if (dtype, tile, loads) == ("bfloat16", (128, 256, 64), "tma"):
            try:
                theirs_code, theirs_cuda = upstream_measurement(m, n, k, stages, tile[1])
            except RuntimeError as err:
                print(f"  upstream: {err}")
            else:
                theirs = numbers(theirs_code, theirs_cuda, "cp.async.bulk.tensor")
                print(
                    "  vs upstream (ours/upstream): "
                    + ", ".join(f"{key} {cell(ours[key], theirs[key])}" for key in ours if key in theirs)
                )
        est = roofline(m, n, k, dtype, tile)
        print(
            f"  roofline: a stage is {est['stage bytes']} bytes for {est['stage MMA ns']:.0f} ns of MMA per SM "
            f"({est['stage FLOP/B']:.1f} FLOP/B; at peak the SMs draw {est['L2->SMs TB/s needed']:.1f} TB/s from L2); "
            f"the problem {est['DRAM FLOP/B']:.0f} FLOP/B against a balance of {est['balance FLOP/B']:.0f}: "
            f"compute {est['compute us']:.1f} us vs DRAM {est['DRAM us']:.1f} us "
            f"(ratio {est['compute us'] / est['DRAM us']:.2f}: "
            f"{'compute' if est['compute us'] > est['DRAM us'] else 'memory'}-bound against DRAM)"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
