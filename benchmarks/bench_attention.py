"""The attention forwards at the issue's production size (seq 8192, head_dim 128, bf16, causal and not), measured
from the code the assembler makes, and a roofline per K/V tile naming the unit that bounds each kernel.

The kernels are rows of :data:`KERNELS`, one table per architecture: each entry names its example module, the
function building it from an ``attention_common.AttentionProblem``, how many consumer (softmax) roles it has and
the SASS that marks each role's K/V loop. The Hopper forward (``examples/hopper_attention.py``) is the one here; the
Blackwell forward (``examples/attention.py``) is added as a row of the ``sm_100a`` table with its device.

Measured, per kernel (``ptxas -v`` and ``nvdisasm``; ``tools.measurement``): registers per thread and spilled
bytes (one figure for the kernel: ptxas allocates registers per kernel, every role gets the same), the dynamic
shared bytes of the launch, SASS instructions of the whole kernel; per role the SASS of its K/V loop (the smallest
loop around the role's marking instruction: HGMMA for a consumer, UTMALDG for the producer, as
``sass_loop_around`` finds it) divided by the K/V tiles ptxas unrolled into it; in the consumer loop the
``MUFU.EX2`` per score element (a thread's share of a tile: ``tile_q * tile_kv / consumer threads``), the row
rescale's ``MUFU.EX2`` apart, any software exp2 (a polynomial: FFMA chains with no MUFU.EX2 would show as a lower
MUFU count; the listing has none when the count matches), and tensor-core instructions (``HGMMA``) per tile.

Roofline per K/V tile of one CTA (its 128 Q rows against tile_kv keys), from published figures:

* tensor cores: ``2 GEMMs x 2 x 128 x tile_kv x head_dim`` FLOP at the SM's dense bf16 rate, 4096 FLOP per clock
  (NVIDIA H100 datasheet: 989.4 dense TFLOPS bf16 -- 1,979 with 2:4 sparsity -- over 132 SMs; the clock this
  implies, 1.83 GHz, is the one every per-clock figure here is taken at);
* exp: one ``MUFU.EX2`` per score (``128 x tile_kv``) plus the rescale's per row and thread, at 16 per clock per SM
  (CUDA C++ Programming Guide, "Arithmetic Instructions", throughput of exp2f / __expf-class functions for compute
  capability 9.0: 16 results per clock per multiprocessor; FlashAttention-3, Shah et al. 2024, section 3: "989
  TFLOPS of FP16 matmul but only 3.9 TFLOPS of special functions", 3.9e12 / 132 / 1.83e9 = 16);
* issue: the consumers' SASS per tile, one warp-instruction per clock on each of the SM's four schedulers (CUDA
  C++ Programming Guide, compute capability 9.0: four warp schedulers per SM);
* TMA: the K and V bytes of a tile (``2 x tile_kv x head_dim x 2``) against the time the tensor cores take for it:
  the bandwidth from L2 every SM then needs (NVIDIA does not publish L2 bandwidth; the DRAM traffic, each K/V head
  read once per (batch, query head) and then served from L2 to the seq_q / 128 CTAs sharing it, is set against
  H100 SXM's 3.35 TB/s and H200 SXM's 4.8 TB/s HBM).

The tensor cores and the exp unit overlap (the ping-pong runs one warpgroup's softmax under the other's wgmma), so
the kernel's bound is the largest of the per-tile times, and the printout names it. Two caveats the counts carry:
a consumer loop's SASS is its static length, the masking branch included (a causal kernel runs it on the diagonal
tiles only, so the steady state issues the non-causal count); and the L2 bandwidth the TMA needs is set against no
published figure -- at 128 FLOP per byte of K/V (two GEMMs of 128 rows per ``4 x tile_kv x head_dim`` bytes,
whatever tile_kv is) the tensor cores' peak draws 7.7 TB/s from L2 over the 132 SMs, where FlashAttention-3's 740
TFLOPS, at the same 128 rows per CTA, drew 5.8.

Usage: python benchmarks/bench_attention.py        (needs nvcc; SASS needs nvdisasm)
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from tirx_layout.tools.kernel_report import find_nvcc, load_example_module
from tirx_layout.tools.measurement import device_source, launch_values, lower, measure_cuda, opcode

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
COMMON = load_example_module(EXAMPLES / "attention_common.py")


@dataclass(frozen=True)
class Device:
    """A GPU's published figures: dense bf16 FLOP/s, SMs, exp (MUFU.EX2) results per clock per SM, HBM bytes/s."""

    name: str
    dense_bf16_flops: float
    sms: int
    ex2_per_clock: int
    dram_bytes_per_s: float
    flops_per_clock: int = 4096  # dense bf16 FLOP per clock per SM (H100: 2x A100's 1024 FMA)

    @property
    def clock_hz(self) -> float:
        """The clock the dense peak is quoted at."""
        return self.dense_bf16_flops / (self.sms * self.flops_per_clock)


#: NVIDIA H100 SXM5 and H200 SXM (datasheets; the same GH100 compute, different HBM).
HOPPER_DEVICES = (
    Device("H100 SXM", 989.4e12, 132, 16, 3.35e12),
    Device("H200 SXM", 989.4e12, 132, 16, 4.8e12),
)


@dataclass(frozen=True)
class KernelEntry:
    """One attention kernel to measure: its example module (a file in ``examples/``), the builder's name (called as
    ``builder(problem)``), the consumer roles whose K/V loops hold the tensor-core instruction ``mma`` (in program
    order), the producer's loop instruction ``load``, and rows and K/V columns per CTA tile."""

    name: str
    module: str
    builder: str
    consumers: tuple[str, ...]
    mma: str
    load: str
    tile_q: int
    consumer_threads: int


#: The kernels per architecture, with the devices their roofline is drawn for.
KERNELS = {
    "sm_90a": (
        HOPPER_DEVICES,
        [
            KernelEntry(
                "hopper_attention",
                "hopper_attention.py",
                "hopper_attention",
                ("consumer 0", "consumer 1"),
                r"HGMMA",
                r"UTMALDG",
                128,
                256,
            )
        ],
    ),
}

#: The issue's production problem: one batch, 16 query heads over 8 K/V heads, seq 8192, head_dim 128, bf16.
PROBLEM = {"batch": 1, "heads": 16, "kv_heads": 8, "seq_q": 8192, "seq_kv": 8192, "head_dim": 128, "dtype": "bfloat16"}

_SASS_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_SASS_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")
_SASS_TARGET = re.compile(r"\(\s*(\.L_x_\d+)\s*\)")


def innermost_loops(listing: str, pattern: str) -> list[list[str]]:
    """Every SASS loop of ``listing`` (a label and a later branch back to it, ptxas's election loops
    ``BRA.U.ANY`` aside) that holds an instruction matching ``pattern`` and no smaller such loop, in address order:
    one per role that runs its own copy of the loop (each consumer warpgroup here).

    Example:
        >>> listing = ".L_x_1:\\n /*0000*/ HGMMA.64x64x16 R0 ;\\n /*0010*/ @P0 BRA `(.L_x_1) ;\\n"
        >>> listing += ".L_x_2:\\n /*0020*/ HGMMA.64x64x16 R0 ;\\n /*0030*/ IADD3 R1, R1, 1 ;\\n"
        >>> listing += " /*0040*/ @P1 BRA `(.L_x_2) ;"
        >>> [len(loop) for loop in innermost_loops(listing, r"HGMMA")]
        [2, 3]
    """
    items = []
    for line in listing.splitlines():
        label = _SASS_LABEL.match(line)
        if label:
            items.append((label.group(1), None))
            continue
        found = _SASS_LINE.search(line)
        if found:
            items.append((None, found.group(1)))
    labels = {name: i for i, (name, _) in enumerate(items) if name}
    matcher = re.compile(pattern)
    loops = []
    for i, (_, instruction) in enumerate(items):
        name = instruction and opcode(instruction)
        target = name and name.startswith("BRA") and name != "BRA.U.ANY" and _SASS_TARGET.search(instruction)
        if target and target.group(1) in labels and labels[target.group(1)] < i:
            start = labels[target.group(1)]
            if any(ins and matcher.search(ins) for _, ins in items[start:i]):
                loops.append((start, i))
    # (a wait's retry path, which ptxas places after the kernel's EXIT and which branches back into the body, is no
    # loop: a span holding an EXIT is dropped)
    exits = [i for i, (_, ins) in enumerate(items) if ins and opcode(ins) in ("EXIT", "RET")]
    loops = [(s, e) for s, e in loops if not any(s < i < e for i in exits)]
    inner = [(s, e) for s, e in loops if not any((s2, e2) != (s, e) and s <= s2 and e2 <= e for s2, e2 in loops)]
    return [[ins for _, ins in items[s : e + 1] if ins] for s, e in sorted(inner)]


def _count(loop: list[str], pattern: str) -> int:
    return sum(bool(re.match(pattern, opcode(i))) for i in loop)


def measure(entry: KernelEntry, arch: str, causal: bool) -> dict:
    """The numbers of the module docstring for ``entry`` built for ``arch`` at :data:`PROBLEM`."""
    module = load_example_module(EXAMPLES / entry.module)
    problem = COMMON.AttentionProblem(**PROBLEM, causal=causal)
    tile_kv = module.default_tile_kv(problem.head_dim)
    kernel = getattr(module, entry.builder)(problem)
    lowered = lower(kernel, "tirx_layout", arch)
    cuda = device_source(lowered, "tirx_layout")
    code = measure_cuda(cuda, arch, launch_values(lowered).get("tirx.use_dyn_shared_memory", 0))
    found = {
        "tile_kv": tile_kv,
        "registers": code.registers,
        "spilled bytes": code.spill_bytes,
        "shared bytes": code.shared_bytes,
        "PTX instructions": len(code.ptx),
    }
    if code.sass_listing is None:
        return found
    names = [opcode(i) for i in code.sass]
    found["SASS instructions"] = len(names)
    scores = entry.tile_q * tile_kv // entry.consumer_threads  # a consumer thread's scores per tile
    mma_per_tile = problem.head_dim // 16 + tile_kv // 16  # S: head_dim / 16 wgmmas (K = 16); P V: tile_kv / 16
    consumer_loops = innermost_loops(code.sass_listing, entry.mma)
    for role, loop in zip(entry.consumers, consumer_loops, strict=False):
        tiles = max(1, _count(loop, r"HGMMA") // mma_per_tile)
        ex2 = _count(loop, r"MUFU\.EX2") / tiles
        found[f"{role}: SASS per K/V tile"] = round(len(loop) / tiles)
        found[f"{role}: HGMMA per tile"] = _count(loop, r"HGMMA") // tiles
        found[f"{role}: MUFU.EX2 per tile"] = ex2
        found[f"{role}: MUFU.EX2 per score"] = round(ex2 / scores, 3)
        found[f"{role}: other MUFU per tile"] = _count(loop, r"MUFU\.(?!EX2)") / tiles
    producer = innermost_loops(code.sass_listing, entry.load)
    if producer:
        loop = producer[-1]  # (the consumers hold no TMA load)
        boxes = 2 * problem.head_dim // 64  # K and V: a box per 64-element (128-byte) swizzle atom column each
        tiles = max(1, _count(loop, entry.load) // boxes)
        found["producer: SASS per K/V tile"] = round(len(loop) / tiles)
        found["producer: UTMALDG per tile"] = _count(loop, entry.load) // tiles
    found["score elements per consumer thread per tile"] = scores
    return found


def roofline(device: Device, entry: KernelEntry, found: dict, causal: bool) -> dict:
    """Per K/V tile of one CTA, in clocks of ``device``: tensor cores, exp unit and instruction issue; the L2 and
    DRAM bandwidth the TMA then needs; the unit that bounds."""
    problem = COMMON.AttentionProblem(**PROBLEM, causal=causal)
    tile_kv, d = found["tile_kv"], problem.head_dim
    flops = 2 * 2 * entry.tile_q * tile_kv * d
    tensor = flops / device.flops_per_clock
    rows_per_thread = 2  # a wgmma accumulator row lives on a quad: each thread holds 2 of its warpgroup's rows
    exps = entry.tile_q * tile_kv + rows_per_thread * entry.consumer_threads
    exp = exps / device.ex2_per_clock
    issue = None
    per_role = [found.get(f"{role}: SASS per K/V tile") for role in entry.consumers]
    if all(per_role):  # warps of the consumers, each its role's loop, over four schedulers
        issue = sum(n * 4 for n in per_role) / 4
    tile_bytes = 2 * tile_kv * d * 2
    seconds = tensor / device.clock_hz
    l2 = tile_bytes / seconds * device.sms
    q_tiles = problem.seq_q // entry.tile_q
    dram_per_tile = tile_bytes / q_tiles  # each K/V tile read from DRAM once per (batch, head), shared via L2
    times = {"tensor": tensor, "exp": exp} | ({"issue": issue} if issue else {})
    return {
        "tensor clk": tensor,
        "exp clk": exp,
        "issue clk": issue,
        "TMA bytes": tile_bytes,
        "L2->SM TB/s": l2 / 1e12,
        "DRAM TB/s": dram_per_tile / seconds * device.sms / 1e12,
        "bound": max(times, key=times.get),
    }


def main() -> None:
    if find_nvcc() is None:
        sys.exit("bench_attention needs nvcc")
    for arch, (devices, entries) in KERNELS.items():
        for entry in entries:
            for causal in (False, True):
                found = measure(entry, arch, causal)
                label = ", ".join(f"{k}={v}" for k, v in PROBLEM.items())
                print(f"{arch} {entry.name} ({label}, causal={causal})")
                for key, value in found.items():
                    print(f"  {key}: {value}")
                for device in devices:
                    est = roofline(device, entry, found, causal)
                    issue = f", issue {est['issue clk']:.0f}" if est["issue clk"] else ""
                    print(
                        f"  roofline {device.name} per K/V tile (clocks at {device.clock_hz / 1e9:.2f} GHz): tensor "
                        f"{est['tensor clk']:.0f}, exp {est['exp clk']:.0f}{issue}; TMA {est['TMA bytes']} bytes: "
                        f"{est['L2->SM TB/s']:.1f} TB/s from L2 over all SMs, {est['DRAM TB/s']:.2f} TB/s from DRAM "
                        f"(of {device.dram_bytes_per_s / 1e12:.2f}) -> bound by {est['bound']}"
                    )
                sys.stdout.flush()


if __name__ == "__main__":
    main()
