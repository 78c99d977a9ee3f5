"""The pipelined, warp-specialised GEMM of ``examples/pipelined_gemm.py`` at the issue's shapes, measured from the
code the assembler makes, and a roofline estimate of whether its pipeline is compute-bound.

For each case: registers per thread and shared bytes per CTA (``ptxas -v``), instructions of the kernel, and the
PTX instructions of the MMA issuer's K loop and of the producer's per K tile (``tools.measurement.ptx_loop_around``:
the smallest loop around a ``tcgen05.mma`` / ``cp.async.bulk.tensor`` or shared store, divided by the K tiles the
assembler unrolled into it), tcgen05 instructions by kind; where nvdisasm is installed (``pip install
nvidia-cuda-nvdisasm``) also SASS: the kernel's instructions and the MMA issuer's and the TMA producer's loops per K
tile (``tools.measurement.sass_loop_around``).

Upstream: TVM 0.27's own pipelined tcgen05 GEMM is a benchmark script of its source tree
(``apache/tvm:tests/python/tirx/benchmarks/bench_cuda_tcgen05_bf16_gemm.py``: a TMA warp, an MMA warp, an S-stage
ring, one accumulator, one CTA per tile, M and N multiples of the tile); the wheel does not ship it, so
``_upstream_pipelined_gemm.py`` writes that structure with upstream's API alone and is built in a child process
(without tirx_layout, as ``bench_mma.py`` does). Its 4096^3 bf16 kernel (128 x 256 x 64 tiles, 4 stages) is compared
with ours at the same tile and stages: each cell ``ours/upstream (ratio)``.

Roofline (per output tile, per ring stage; the device numbers are NVIDIA's published B200 figures, named below): the
tensor cores take ``2 * tile_m * tile_n * tile_k / (peak / SMs)`` seconds per stage; the TMA must bring the stage's
bytes in that time. Per stage the intensity is ``2 mnk / bytes`` FLOP/byte; the whole problem, with every operand
tile read from DRAM once (L2 reuse across the CTAs sharing a row or column of tiles), has ``2 MNK / (2 (MK + NK) +
4 MN)``. Compute-bound against DRAM when that exceeds the machine balance ``peak / DRAM bandwidth``; the stage
stream itself is served from L2, whose bandwidth NVIDIA does not publish, so the script prints what it needs.

Hopper (``examples/hopper_pipelined_gemm.py``, sm_90a, 4096^3 bf16 128 x 256 x 64 and fp8 128 x 256 x 128, four
stages, 132 persistent CTAs): registers, spilled bytes, the dynamic shared bytes its launch asks for, PTX instructions
per K tile of a consumer warpgroup's loop (around ``wgmma.mma_async``) and of the producer's (around
``cp.async.bulk.tensor``), and with nvdisasm the SASS instructions, the HGMMA/QGMMA count and both loops per K tile
in SASS; the same roofline for
NVIDIA's published H100 SXM and H200 SXM figures. Upstream's wheel (TVM 0.27) has wgmma PTX intrinsics and
descriptor helpers but no Hopper GEMM kernel nor a wgmma dispatch of its tile GEMM: nothing of upstream's to compare.

CUTLASS (issue 34): the same run compiles, from the headers of the pinned ``nvidia-cutlass`` package, CUTLASS's
sm100 1-SM warp-specialised GEMM (``cutlass_sm100_gemm.cu``) and its sm90 warp-specialised cooperative GEMM
(``cutlass_sm90_gemm.cu``) at the bf16 128 x 256 x 64, 4-stage configuration of ours (release build, ``-DNDEBUG``),
and prints ours / CUTLASS: registers, spilled bytes, shared bytes (its launch's ``SharedStorageSize``, read from the
PTX), SASS instructions, SASS per K tile of the MMA issuer's (the consumer's) and of the TMA producer's loop by the
same loop rule, and the roofline's L2 demand. Each build is cached by the hash of its source, the headers, nvcc's
version and the flags (``cutlass_build``), so only the first run pays the half minute each takes.

The CTA pair (``pipelined_gemm(..., cta_group=2)``, 4096^3 bf16, 256 x 256 x 64 tiles on 74 pairs of the 148 SMs,
four stages) against CUTLASS's sm100 2-SM warp-specialised GEMM at the same tile, cluster 2 x 1 and stages
(``cutlass_sm100_2sm_gemm.cu``, ``KernelTmaWarpSpecialized2SmSm100``): the same numbers, plus the SASS per K tile of
our odd CTA's relay loop (its MMA warp's wait on its stage and arrive on the even CTA's ``full``, around the remote
arrive), which CUTLASS does not have (its odd CTA's TMA completes on the leader's mbarrier). The roofline is per SM:
each SM of the pair loads half the tile's A rows and half its B rows for half its FLOPs.

Usage: python benchmarks/bench_gemm.py        (needs nvcc)
"""

from __future__ import annotations

import hashlib
import json
import os
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
    find_nvdisasm,
    launch_values,
    lower,
    measure_cuda,
    opcode,
    ptx_instructions,
    ptx_loop_around,
    sass_instructions,
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


def ptx_of(cuda: str, arch: str = "sm_100a") -> str:
    """The PTX nvcc makes of ``cuda`` for ``arch``."""
    with tempfile.TemporaryDirectory() as tmp:
        source, out = Path(tmp) / "k.cu", Path(tmp) / "k.ptx"
        source.write_text(cuda)
        subprocess.run(["nvcc", f"-arch={arch}", "-ptx", "-o", str(out), str(source)], check=True, capture_output=True)
        return out.read_text()


def dynamic_shared_bytes(lowered) -> int:
    """The dynamic shared memory a lowered kernel's launch asks for (every shared buffer is in one dynamic pool)."""
    return launch_values(lowered).get("tirx.use_dyn_shared_memory", 0)


def roofline(
    m: int,
    n: int,
    k: int,
    dtype: str,
    tile: tuple[int, int, int],
    peak_flops: dict[str, float] = PEAK_FLOPS,
    sms: int = SMS,
    dram_bytes_per_s: float = DRAM_BYTES_PER_S,
    ctas_per_tile: int = 1,
) -> dict[str, float]:
    """The estimate of the module docstring, in the units printed, for a device of ``peak_flops`` (dense, per
    dtype), ``sms`` SMs and ``dram_bytes_per_s`` (the B200 by default). ``ctas_per_tile=2``: a CTA pair computes
    each tile (``cta_group::2``), each SM loading half the tile's rows of A and of B for half its FLOPs; the stage
    figures are one SM's.

    Example (the 1-CTA 128 x 256 tile and the pair's 256 x 256 draw the same FLOPs per SM per stage, from 48 KB
    and from 32 KB):
        >>> one = roofline(4096, 4096, 4096, "bfloat16", (128, 256, 64))
        >>> pair = roofline(4096, 4096, 4096, "bfloat16", (256, 256, 64), ctas_per_tile=2)
        >>> one["stage bytes"], pair["stage bytes"], one["stage MMA ns"] == pair["stage MMA ns"]
        (49152, 32768, True)
        >>> round(one["L2->SMs TB/s needed"], 1), round(pair["L2->SMs TB/s needed"], 1)
        (26.4, 17.6)
    """
    tm, tn, tk = tile
    size = OPERAND_BYTES[dtype]
    per_sm = peak_flops[dtype] / sms
    stage_flops = 2 * tm * tn * tk // ctas_per_tile
    stage_bytes = (tm + tn) * tk * size // ctas_per_tile
    stage_seconds = stage_flops / per_sm
    problem_flops = 2 * m * n * k
    dram_bytes = (m * k + n * k) * size + 4 * m * n
    return {
        "stage MMA ns": stage_seconds * 1e9,
        "stage bytes": stage_bytes,
        "stage FLOP/B": stage_flops / stage_bytes,
        "L2->SMs TB/s needed": stage_bytes / stage_seconds * sms / 1e12,
        "DRAM FLOP/B": problem_flops / dram_bytes,
        "balance FLOP/B": peak_flops[dtype] / dram_bytes_per_s,
        "compute us": problem_flops / peak_flops[dtype] * 1e6,
        "DRAM us": dram_bytes / dram_bytes_per_s * 1e6,
    }


def roofline_line(est: dict[str, float]) -> str:
    """One :func:`roofline` estimate in words."""
    return (
        f"a stage is {est['stage bytes']} bytes for {est['stage MMA ns']:.0f} ns of MMA per SM "
        f"({est['stage FLOP/B']:.1f} FLOP/B; at peak the SMs draw {est['L2->SMs TB/s needed']:.1f} TB/s from L2); "
        f"the problem {est['DRAM FLOP/B']:.0f} FLOP/B against a balance of {est['balance FLOP/B']:.0f}: "
        f"compute {est['compute us']:.1f} us vs DRAM {est['DRAM us']:.1f} us "
        f"(ratio {est['compute us'] / est['DRAM us']:.2f}: "
        f"{'compute' if est['compute us'] > est['DRAM us'] else 'memory'}-bound against DRAM)"
    )


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
        found["SASS instructions"] = len(code.sass)
        found["SASS MMA loop per K tile"] = sass_per_tile(code.sass_listing, r"UTC\w*MMA", 4)
        if fill.startswith("cp.async"):  # the TMA producer: two UTMALDG per K tile
            found["SASS producer loop per K tile"] = sass_per_tile(code.sass_listing, r"UTMALDG", 2)
    return found


def sass_per_tile(listing: str, pattern: str, per_tile: int) -> int:
    """SASS instructions of the smallest loop around an instruction matching ``pattern`` (``sass_loop_around``),
    per K tile: the loop's length over the K tiles ptxas unrolled into it (``per_tile`` matches each)."""
    loop = sass_loop_around(listing, pattern)
    tiles = max(1, sum(bool(re.match(pattern, opcode(i))) for i in loop) // per_tile)
    return round(len(loop) / tiles)


def cell(a: int, b: int) -> str:
    """``a/b (a / b)``; a loop count of 0 means no PTX loop holds the instruction (unrolled or peeled): ``n/a``."""
    if not a or not b:
        return f"{a or 'n/a'}/{b or 'n/a'}"
    return f"{a}/{b} ({a / b:.2f})"


# ---- CUTLASS: the same configurations from the pinned headers ----------------------------------------------------

HERE = Path(__file__).resolve().parent
#: CUTLASS's sm100 1-SM warp-specialised GEMM and sm90 warp-specialised cooperative GEMM at our 4096^3 bf16
#: configurations (128 x 256 x 64, 4 stages, cluster 1 x 1, float32 D, no C): each source file says what it builds.
CUTLASS_SOURCES = {
    "sm_100a": HERE / "cutlass_sm100_gemm.cu",
    "sm_100a 2sm": HERE / "cutlass_sm100_2sm_gemm.cu",  # the 2-SM kernel: 256 x 256 x 64 on a CTA pair
    "sm_90a": HERE / "cutlass_sm90_gemm.cu",
}
#: A release build: ``-DNDEBUG`` compiles CUTLASS's device asserts out (with them, a ``BPT.TRAP`` branch sits in
#: the sm100 producer's loop: 40 SASS instructions per K tile instead of 30).
CUTLASS_FLAGS = ("-std=c++17", "-w", "-DNDEBUG")
#: What both CUTLASS kernels' loops hold per K tile of 128 x 256 x 64 bf16: four MMA instructions (tcgen05.mma N=256
#: K=16; per consumer warpgroup, wgmma m64n256k16) and two TMA loads (A's 128 rows, B's 256).
CUTLASS_MMAS_PER_TILE, CUTLASS_COPIES_PER_TILE = 4, 2


def cutlass_include() -> Path:
    """The CUTLASS headers of the pinned ``nvidia-cutlass`` package; ``RuntimeError`` saying why when absent."""
    try:
        import cutlass_library
    except ImportError as err:
        raise RuntimeError(f"the CUTLASS headers are not installed (pip install nvidia-cutlass): {err}") from err
    include = Path(cutlass_library.__file__).parent / "source" / "include"
    if not (include / "cutlass" / "gemm" / "collective" / "collective_builder.hpp").exists():
        raise RuntimeError(f"nvidia-cutlass at {include.parent.parent} ships no CUTLASS 3 collective builders")
    return include


def cutlass_build(arch: str) -> Path:
    """The directory holding CUTLASS's kernel for ``arch`` (a key of :data:`CUTLASS_SOURCES`: the architecture,
    then the variant, ``"sm_100a 2sm"``) built (``kernel.ptx``, ``kernel.cubin``, ``ptxas.txt``: the
    ``ptxas -v`` report), cached under ``~/.cache/tirx_layout/cutlass_gemm/<hash>`` by the hash of the source, every
    CUTLASS header, ``nvcc --version``, the architecture and the flags (a build takes about half a minute of one core;
    written atomically, so a concurrent run never reads half a build)."""
    source, include, nvcc = CUTLASS_SOURCES[arch], cutlass_include(), find_nvcc()
    machine = arch.split()[0]  # the architecture of the variant
    digest = hashlib.sha256(source.read_bytes())
    for path in sorted(p for p in include.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(include)).encode())
        digest.update(path.read_bytes())
    digest.update(subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout.encode())
    digest.update(" ".join((machine, *CUTLASS_FLAGS)).encode())
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tirx_layout" / "cutlass_gemm"
    target = cache / f"{source.stem}-{digest.hexdigest()[:20]}"
    if target.exists():
        return target
    partial = cache / f"{target.name}.{os.getpid()}.partial"
    partial.mkdir(parents=True, exist_ok=True)
    ptx, cubin = partial / "kernel.ptx", partial / "kernel.cubin"
    ptxas = str(Path(nvcc).resolve().parent / "ptxas")
    steps = [
        [nvcc, f"-arch={machine}", *CUTLASS_FLAGS, f"-I{include}", "-ptx", "-o", str(ptx), str(source)],
        [ptxas, f"-arch={machine}", "-v", "-o", str(cubin), str(ptx)],  # nvcc -cubin's assembly, with its report
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"CUTLASS's {arch} GEMM did not build ({' '.join(step[:2])}):\n{done.stderr[-3000:]}")
    (partial / "ptxas.txt").write_text(done.stderr)
    partial.replace(target)
    return target


def cutlass_numbers(arch: str) -> dict[str, int]:
    """CUTLASS's kernel for ``arch`` measured as ours: registers, spilled bytes, shared bytes (its launch's dynamic
    shared memory, ``SharedStorageSize``), SASS instructions, and per K tile the SASS of its MMA loop (the consumer's
    on sm_90a) and of its TMA producer's loop, by the same rule as ours (:func:`sass_per_tile`)."""
    built = cutlass_build(arch)
    report = (built / "ptxas.txt").read_text()
    shared = re.search(r"cutlass_shared_storage_bytes = (\d+);", (built / "kernel.ptx").read_text())
    nvdisasm = find_nvdisasm()
    if nvdisasm is None:
        raise RuntimeError(
            "nvdisasm is not installed (pip install nvidia-cuda-nvdisasm): the loops are counted in SASS"
        )
    listing = subprocess.run([nvdisasm, "-c", str(built / "kernel.cubin")], capture_output=True, text=True, check=True)
    mma = r"UTC\w*MMA" if arch.startswith("sm_100a") else r"[HQ]GMMA"
    spills = re.search(r"(\d+) bytes spill stores", report)
    return {
        "registers": int(re.search(r"Used (\d+) registers", report).group(1)),
        "spilled bytes": int(spills.group(1)) if spills else 0,
        "shared bytes": int(shared.group(1)),
        "SASS instructions": len(sass_instructions(listing.stdout)),
        "SASS MMA loop per K tile": sass_per_tile(listing.stdout, mma, CUTLASS_MMAS_PER_TILE),
        "SASS producer loop per K tile": sass_per_tile(listing.stdout, r"UTMALDG", CUTLASS_COPIES_PER_TILE),
    }


def cutlass_line(ours: dict[str, int], arch: str, l2_demand: float, renamed: dict[str, str] | None = None) -> str:
    """``vs CUTLASS (ours/CUTLASS): ...``: each of CUTLASS's numbers against ours (``renamed``: our key for one of
    its keys), with the roofline's L2 demand of both (the same tile and stages: the same figure), or why CUTLASS's
    kernel could not be measured."""
    try:
        theirs = cutlass_numbers(arch)
    except (RuntimeError, FileNotFoundError, subprocess.CalledProcessError) as err:
        return f"  CUTLASS: {err}"
    renamed = renamed or {}
    cells = [
        f"{key} {ours[key]}/{value}" if key == "spilled bytes" else f"{key} {cell(ours[renamed.get(key, key)], value)}"
        for key, value in theirs.items()
    ]
    cells.append(f"L2->SMs TB/s needed {l2_demand:.1f}/{l2_demand:.1f} (1.00)")
    return "  vs CUTLASS (ours/CUTLASS): " + ", ".join(cells)


def main() -> None:
    if find_nvcc() is None:
        print("bench_gemm: nvcc not found; nothing to measure")
        return
    for m, n, k, dtype, tile, stages, loads, scaled in CASES:
        name = f"{m}x{n}x{k} {dtype}{' block-scaled' if scaled else ''} tile {'x'.join(map(str, tile))} S={stages} "
        name += f"loads={loads}"
        kernel = EXAMPLE.pipelined_gemm(m, n, k, dtype, tile, stages, ctas=SMS, loads=loads, scaled=scaled)
        lowered = lower(kernel, "tirx_layout")
        cuda = device_source(lowered, "tirx_layout")
        code = measure_cuda(cuda, dynamic_shared_bytes=dynamic_shared_bytes(lowered))
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
            ours["spilled bytes"] = code.spill_bytes
            print(cutlass_line(ours, "sm_100a", roofline(m, n, k, dtype, tile)["L2->SMs TB/s needed"]))
        print(f"  roofline: {roofline_line(roofline(m, n, k, dtype, tile))}")
    sys.stdout.flush()
    pair_main()
    sys.stdout.flush()
    hopper_main()


# ---- the CTA pair (cta_group=2) ------------------------------------------------------------------------------------

# (M, N, K, dtype, tile, stages): the 4096 cube on 256 x 256 tiles (the 64 K tiles a multiple of the stages)
PAIR_CASES = [(4096, 4096, 4096, "bfloat16", (256, 256, 64), 4)]
#: The remote arrive of the odd CTA's relay (``mbarrier.arrive.release.cluster.shared::cluster``), one per K tile.
RELAY_ARRIVE = r"SYNCS\.ARRIVE\.TRANS64\.RED\.A1T0"


def pair_numbers(m: int, n: int, k: int, dtype: str, tile: tuple[int, int, int], stages: int, ctas: int) -> dict:
    """:func:`numbers` of the pair kernel on ``ctas`` pairs, spilled bytes, and with nvdisasm the SASS per K tile of
    the odd CTA's relay loop (the smallest loop around its remote arrive)."""
    kernel = EXAMPLE.pipelined_gemm(m, n, k, dtype, tile, stages, ctas=ctas, cta_group=2)
    lowered = lower(kernel, "tirx_layout")
    cuda = device_source(lowered, "tirx_layout")
    code = measure_cuda(cuda, dynamic_shared_bytes=dynamic_shared_bytes(lowered))
    found = numbers(code, cuda, "cp.async.bulk.tensor")
    found["spilled bytes"] = code.spill_bytes
    if code.sass_listing is not None:
        found["SASS relay loop per K tile"] = sass_per_tile(code.sass_listing, RELAY_ARRIVE, 1)
    return found


def pair_main() -> None:
    for m, n, k, dtype, tile, stages in PAIR_CASES:
        print(f"{m}x{n}x{k} {dtype} CTA pair (cta_group=2) tile {'x'.join(map(str, tile))} S={stages} loads=tma")
        ours = pair_numbers(m, n, k, dtype, tile, stages, SMS // 2)
        print("  " + ", ".join(f"{key} {value}" for key, value in ours.items()))
        estimate = roofline(m, n, k, dtype, tile, ctas_per_tile=2)
        print(cutlass_line(ours, "sm_100a 2sm", estimate["L2->SMs TB/s needed"]))
        print(f"  roofline (per SM of the pair): {roofline_line(estimate)}")


# ---- Hopper (sm_90a): examples/hopper_pipelined_gemm.py ----------------------------------------------------------

HOPPER = load_example_module(Path(__file__).resolve().parents[1] / "examples" / "hopper_pipelined_gemm.py")
#: NVIDIA H100 SXM5 and H200 SXM5 (NVIDIA "H100 Tensor Core GPU" and "H200 Tensor Core GPU" datasheets): dense tensor
#: FLOP/s per dtype (the datasheets print the figures with 2:4 sparsity, 1,979 TFLOPS bf16 and 3,958 fp8: twice
#: these), 132 SMs, HBM bandwidth in bytes/s (HBM3 3.35 TB/s; HBM3e 4.8 TB/s). The two share the GH100 compute.
HOPPER_DEVICES = {
    "H100 SXM": ({"bfloat16": 989.4e12, "float8_e4m3fn": 1978.9e12}, 132, 3.35e12),
    "H200 SXM": ({"bfloat16": 989.4e12, "float8_e4m3fn": 1978.9e12}, 132, 4.8e12),
}
HOPPER_SMS = 132
# (M, N, K, dtype, tile, stages): the 4096 cube in bf16 and fp8 e4m3
HOPPER_CASES = [
    (4096, 4096, 4096, "bfloat16", (128, 256, 64), 4),
    (4096, 4096, 4096, "float8_e4m3fn", (128, 256, 128), 4),
]
#: The wgmma instructions of one K tile (tile_k / (32 bytes / element)): 4 for both cases above.
WGMMA_K_BYTES = 32


def hopper_numbers(
    m: int, n: int, k: int, dtype: str, tile: tuple[int, int, int], stages: int, ctas: int = HOPPER_SMS
) -> dict[str, int]:
    """Of the kernel on ``ctas`` persistent CTAs: registers, spilled bytes, shared bytes, PTX instructions, and PTX
    instructions per K tile of one consumer warpgroup's K loop (around ``wgmma.mma_async``) and of the producer's
    (around ``cp.async.bulk.tensor``), with SASS instructions of the kernel where nvdisasm is installed."""
    kernel = HOPPER.hopper_pipelined_gemm(m, n, k, dtype, tile, stages, ctas=ctas)
    lowered = lower(kernel, "tirx_layout", HOPPER.ARCH)
    cuda = device_source(lowered, "tirx_layout")
    code = measure_cuda(cuda, HOPPER.ARCH, dynamic_shared_bytes(lowered))
    ptx = ptx_of(cuda, HOPPER.ARCH)
    consumer, producer = ptx_loop_around(ptx, "wgmma.mma_async"), ptx_loop_around(ptx, "cp.async.bulk.tensor")
    per_tile = tile[2] * OPERAND_BYTES[dtype] // WGMMA_K_BYTES
    copies = 2  # per K tile one TMA copy of A (every consumer warpgroup's rows in one box), one of B
    consumer_tiles = max(1, sum(opcode(i).startswith("wgmma.mma_async") for i in consumer) // per_tile)
    producer_tiles = max(1, sum(opcode(i).startswith("cp.async.bulk.tensor") for i in producer) // copies)
    found = {
        "registers": code.registers,
        "spilled bytes": code.spill_bytes,
        "shared bytes": code.shared_bytes,
        "PTX instructions": len(code.ptx),
        "consumer loop per K tile": len(consumer) // consumer_tiles,
        "producer loop per K tile": len(producer) // producer_tiles,
    }
    if code.sass_listing is not None:
        names = [opcode(i) for i in code.sass]
        found["SASS instructions"] = len(names)
        found["SASS wgmma (HGMMA/QGMMA)"] = sum(n.startswith(("HGMMA", "QGMMA")) for n in names)
        found["SASS consumer loop per K tile"] = sass_per_tile(code.sass_listing, r"[HQ]GMMA", per_tile)
        found["SASS producer loop per K tile"] = sass_per_tile(code.sass_listing, r"UTMALDG", copies)
    return found


def hopper_main() -> None:
    """The Hopper kernel's numbers and its roofline on the H100 and H200."""
    print(
        "Hopper (sm_90a, hopper_pipelined_gemm; upstream's wheel has wgmma PTX intrinsics but no Hopper GEMM kernel "
        "or wgmma tile dispatch, so there is nothing of upstream's to compare with)"
    )
    for m, n, k, dtype, tile, stages in HOPPER_CASES:
        print(f"{m}x{n}x{k} {dtype} tile {'x'.join(map(str, tile))} S={stages} ctas={HOPPER_SMS}")
        ours = hopper_numbers(m, n, k, dtype, tile, stages)
        print("  " + ", ".join(f"{key} {value}" for key, value in ours.items()))
        if (dtype, tile) == ("bfloat16", (128, 256, 64)):
            l2 = roofline(m, n, k, dtype, tile, *HOPPER_DEVICES["H100 SXM"])["L2->SMs TB/s needed"]
            print(cutlass_line(ours, "sm_90a", l2, {"SASS MMA loop per K tile": "SASS consumer loop per K tile"}))
        for device, (peak, sms, dram) in HOPPER_DEVICES.items():
            print(f"  roofline {device}: {roofline_line(roofline(m, n, k, dtype, tile, peak, sms, dram))}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
