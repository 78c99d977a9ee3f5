"""The attention forwards at the issue's production size (seq 8192, head_dim 128, bf16, causal and not), measured
from the code the assembler makes, and a roofline per K/V tile naming the unit that bounds each kernel.

The kernels are rows of :data:`KERNELS`, one table per architecture, each with the devices its roofline is drawn
for: the Blackwell forward (``examples/attention.py``, sm_100a, B200), the Hopper forward
(``examples/hopper_attention.py``, sm_90a, H100 and H200 SXM) and FlashAttention-2 (``examples/ampere_attention.py``,
sm_80, A100 SXM). An entry names its example module, the function building it from an
``attention_common.AttentionProblem``, its roles (with their warps) and the SASS that marks each role's K/V loop.

Measured, per kernel (``ptxas -v`` and ``nvdisasm``; ``tools.measurement``): registers per thread and spilled
bytes (one figure for every role: the kernels set no per-role budget, no ``setmaxnreg``), the shared bytes, SASS
instructions of the whole kernel; per role the SASS of its K/V loop per K/V tile (the innermost loop around the
role's marking instruction -- HGMMA / HMMA for a consumer, UTMALDG for the producer -- over the tiles ptxas unrolled
into it); in the softmax loop the ``MUFU.EX2`` per score element (a thread's share of a tile: ``tile_q * tile_kv /
consumer threads``; the row rescales' ``MUFU.EX2`` are in it) and the software exp2 per score (the scores whose
exp2 is no unpredicated ``MUFU.EX2``: FlashAttention-4's polynomial on the FMA units would show here), the
tensor-core instructions per tile. The Blackwell kernel is measured by ``_attention_blackwell.measure_case`` (its
loops need TMEM loads/stores and the PTX ``tcgen05.mma``); its rows are renamed into the same keys here, and its
TMEM columns are added.

Roofline per K/V tile of one CTA (its ``tile_q`` query rows against ``tile_kv`` keys), from published figures (each
device's source is cited where it is defined, :data:`HOPPER_DEVICES`, :data:`BLACKWELL_DEVICES`,
:data:`AMPERE_DEVICES`):

* tensor cores: ``2 GEMMs x 2 x tile_q x tile_kv x head_dim`` FLOP at the SM's dense bf16 rate per clock; the
  clock is the one the dense peak implies (peak / SMs / FLOP per clock), and every per-clock figure is taken at it;
* exp: one ``MUFU.EX2`` per score plus the row rescales (``rows_per_thread`` per consumer thread), at the SM's
  exp2 rate per clock (16 on every one of these GPUs);
* issue: every role's SASS per tile times its warps, one warp-instruction per clock on each of the SM's four
  schedulers (the SM of compute capability 8.0, 9.0 and 10.0 has four);
* TMA (or cp.async): the K and V bytes of a tile (``2 x tile_kv x head_dim x 2``) against the time the tensor cores
  take for it: the bandwidth from L2 every SM then needs (NVIDIA does not publish L2 bandwidth; the DRAM traffic,
  each K/V head read once per (batch, query head) and then served from L2 to the ``seq_q / tile_q`` CTAs sharing
  it, is set against the device's HBM bandwidth).

The tensor cores, the exp unit and the issue overlap (warp specialisation, ping-pong, or FA2's many CTAs per SM), so
the kernel's bound is the largest of the per-tile times, and the printout names it with a one-line verdict. Two
caveats the counts carry: a loop's SASS is its static length, the masking branch included (a causal kernel runs it
on the diagonal tiles only, so the steady state issues about the non-causal count); and the L2 bandwidth the loads
need is set against no published figure -- at ``tile_q`` FLOP per byte of K/V (``4 tile_q tile_kv d`` FLOP per
``4 tile_kv d`` bytes) the tensor cores' peak draws (Hopper, tile_q
128) 7.7 TB/s from L2 over the 132 SMs, where FlashAttention-3's 740 TFLOPS drew 5.8.

Usage: python benchmarks/bench_attention.py        (needs nvcc; SASS needs nvdisasm)
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tirx_layout.tools.kernel_report import find_nvcc, load_example_module
from tirx_layout.tools.measurement import device_source, launch_values, lower, measure_cuda, opcode, sass_loops

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
COMMON = load_example_module(EXAMPLES / "attention_common.py")


@dataclass(frozen=True)
class Device:
    """A GPU's published figures: dense bf16 FLOP/s, SMs, exp (MUFU.EX2) results per clock per SM, HBM bytes/s, and
    dense bf16 FLOP per clock per SM."""

    name: str
    dense_bf16_flops: float
    sms: int
    ex2_per_clock: int
    dram_bytes_per_s: float
    flops_per_clock: int = 4096

    @property
    def clock_hz(self) -> float:
        """The clock the dense peak is quoted at."""
        return self.dense_bf16_flops / (self.sms * self.flops_per_clock)


# exp2 per clock per SM, every device below: CUDA C++ Programming Guide, "Arithmetic Instructions", throughput table,
# row "32-bit floating-point reciprocal, reciprocal square root, base-2 logarithm (__log2f), base 2 exponential
# (exp2f), sine (__sinf), cosine (__cosf)": 16 results per clock per multiprocessor for compute capability 8.0 and
# 9.0. FlashAttention-3 (Shah et al. 2024, section 3): H100 SXM5 has "989 TFLOPS of FP16 matmul but only 3.9 TFLOPS
# of special functions" (3.9e12 / 132 SMs / 1.83 GHz = 16). FlashAttention-4 (Zadouri et al. 2026, arXiv 2603.05451,
# section 1): from H100 to B200 "BF16 tensor core throughput increases from 1 to 2.25 PFLOPs, while both the SFU
# count and shared memory bandwidth remains unchanged" -- 16 per clock per SM on B200 too.
EX2_PER_CLOCK = 16

#: NVIDIA H100 SXM5 and H200 SXM (datasheets: 989.4 dense bf16 TFLOPS -- 1,979 with 2:4 sparsity --, 3.35 / 4.8 TB/s
#: HBM; the same GH100 compute, 132 SMs in the H100 whitepaper's SXM5 table). 4096 dense bf16 FLOP per clock per SM
#: (the whitepaper: an H100 SM does twice an A100 SM's 1024 dense FP16 FMA per clock) puts the peak at 1.83 GHz.
HOPPER_DEVICES = (
    Device("H100 SXM", 989.4e12, 132, EX2_PER_CLOCK, 3.35e12),
    Device("H200 SXM", 989.4e12, 132, EX2_PER_CLOCK, 4.8e12),
)

#: NVIDIA HGX B200 (datasheet, per GPU: FP16/BF16 tensor core 4.5 PFLOPS with 2:4 sparsity, so 2.25 dense; HBM3e
#: 7.7 TB/s). 148 SMs (NVIDIA publishes no SM count in the datasheet; 148 is the count of the GPU databases,
#: TechPowerUp's B200 page, with a 1.86 GHz tensor clock). 8192 dense bf16 FLOP per clock per SM is twice Hopper's
#: and what 2.25e15 / 148 SMs / 1.86 GHz gives (8,174): the peak's clock is then 1.86 GHz.
BLACKWELL_DEVICES = (Device("B200", 2.25e15, 148, EX2_PER_CLOCK, 7.7e12, flops_per_clock=8192),)

#: NVIDIA A100 SXM 80GB (datasheet: 312 dense bf16 TFLOPS, 2,039 GB/s HBM2e; 108 SMs and 1024 dense FP16 FMA per
#: clock per SM in the A100 whitepaper, so 2048 FLOP per clock at 1.41 GHz).
AMPERE_DEVICES = (Device("A100 SXM", 312e12, 108, EX2_PER_CLOCK, 2.039e12, flops_per_clock=2048),)


def _wgmma_per_tile(head_dim: int, tile_kv: int) -> int:
    """wgmma per K/V tile per warpgroup: S in ``head_dim / 16`` steps of K = 16, P V in ``tile_kv / 16``."""
    return head_dim // 16 + tile_kv // 16


def _mma_sync_per_tile(head_dim: int, tile_kv: int) -> int:
    """m16n8k16 per K/V tile per warp (16 rows): S is ``tile_kv / 8`` n-blocks x ``head_dim / 16`` k-steps, P V
    ``head_dim / 8`` x ``tile_kv / 16``."""
    return tile_kv // 8 * (head_dim // 16) + head_dim // 8 * (tile_kv // 16)


@dataclass(frozen=True)
class KernelEntry:
    """One attention kernel to measure: its example module (a file in ``examples/``), the builder's name (called as
    ``builder(problem)``), its roles as (name, warps) -- every role but ``"producer"`` a consumer whose K/V loop
    holds the tensor-core instruction ``mma``, in program order; the producer's loop holds ``load`` --, query rows
    per CTA (``tile_q``, all its Q tiles), the threads computing the softmax and the rows each holds, the
    tensor-core instructions of one consumer per K/V tile (``mma_per_tile(head_dim, tile_kv)``), and ``tile_kv``
    (``None``: the module's ``default_tile_kv(head_dim)``). ``measure``, when given, replaces :func:`measure`
    (called as ``measure(entry, problem)``; it returns the same keys)."""

    name: str
    module: str
    builder: str
    roles: tuple[tuple[str, int], ...]
    mma: str
    load: str | None
    tile_q: int
    consumer_threads: int
    rows_per_thread: int
    mma_per_tile: Callable[[int, int], int]
    tile_kv: int | None = None
    measure: Callable | None = None

    @property
    def consumers(self) -> tuple[str, ...]:
        """The roles whose loops hold the tensor-core instruction, in program order."""
        return tuple(name for name, _ in self.roles if name != "producer")


def measure_blackwell(entry: KernelEntry, problem) -> dict:
    """The Blackwell kernel's rows (``_attention_blackwell.measure_case``) under this module's keys."""
    if str(Path(__file__).resolve().parent) not in sys.path:  # benchmarks/ is no package
        sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _attention_blackwell  # (imported here: it loads examples/attention.py)

    problem = _attention_blackwell.EXAMPLE.AttentionProblem(*problem)
    rows = _attention_blackwell.measure_case(problem, block_n=entry.tile_kv)
    found = {
        "tile_kv": entry.tile_kv,
        "registers per thread, every role": rows["registers"],
        "spilled bytes, every role": rows["spill bytes"],
        "shared bytes": rows["shared bytes"],
        "TMEM columns used / allocated": f"{rows['TMEM columns used']} / {rows['TMEM columns allocated']}",
        "SASS instructions": rows["SASS instructions"],
    }
    for role, key in (
        ("softmax", "softmax"),
        ("correction", "correction"),
        ("MMA", "MMA warp"),
        ("producer", "producer"),
    ):
        found[f"{role}: SASS per K/V tile"] = rows[f"SASS {key} per K/V tile"]
    found["MMA: tcgen05.mma per tile"] = rows["tcgen05.mma per K/V tile"]
    if rows["MUFU.EX2 per score element"] is not None:
        found["softmax: MUFU.EX2 per score"] = round(rows["MUFU.EX2 per score element"], 4)
        unpredicated = rows["MUFU.EX2 unpredicated per score element"]
        found["softmax: software exp2 per score"] = round(max(0.0, 1 - unpredicated), 4)
    found["score elements per consumer thread per tile"] = entry.tile_q * entry.tile_kv // entry.consumer_threads
    return found


#: The kernels per architecture, with the devices their roofline is drawn for.
KERNELS = {
    "sm_100a": (
        BLACKWELL_DEVICES,
        [
            KernelEntry(
                "attention (FA4-style, S/P in TMEM)",
                "attention.py",
                "attention",
                (("softmax", 8), ("correction", 4), ("MMA", 1), ("producer", 1)),
                r"UTC\w*MMA",
                r"UTMALDG",
                tile_q=256,  # two Q tiles of 128 rows against each K/V tile
                consumer_threads=256,  # two softmax warpgroups, a thread per row
                rows_per_thread=1,
                mma_per_tile=lambda d, n: 2 * (d // 16 + n // 16),  # the MMA warp issues both Q tiles' MMAs
                tile_kv=64,
                measure=measure_blackwell,
            )
        ],
    ),
    "sm_90a": (
        HOPPER_DEVICES,
        [
            KernelEntry(
                "hopper_attention (FA3-style ping-pong)",
                "hopper_attention.py",
                "hopper_attention",
                (("consumer 0", 4), ("consumer 1", 4), ("producer", 1)),
                r"HGMMA",
                r"UTMALDG",
                tile_q=128,
                consumer_threads=256,
                rows_per_thread=2,  # a wgmma accumulator row lives on a quad: each thread holds 2 of its rows
                mma_per_tile=_wgmma_per_tile,
            )
        ],
    ),
    "sm_80": (
        AMPERE_DEVICES,
        [
            KernelEntry(
                "ampere_attention (FA2)",
                "ampere_attention.py",
                "flash_attention",
                (("warps 0-3", 4),),
                r"HMMA",
                None,  # every thread issues its cp.async share inside the consumer loop
                tile_q=64,
                consumer_threads=128,
                rows_per_thread=2,  # an mma.sync C row lives on a quad: each thread holds 2 of its warp's 16 rows
                mma_per_tile=_mma_sync_per_tile,
                tile_kv=64,
            )
        ],
    ),
}

#: The issue's production problem: one batch, 16 query heads over 8 K/V heads, seq 8192, head_dim 128, bf16.
PROBLEM = {"batch": 1, "heads": 16, "kv_heads": 8, "seq_q": 8192, "seq_kv": 8192, "head_dim": 128, "dtype": "bfloat16"}


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
    items, loops = sass_loops(listing)
    matcher = re.compile(pattern)
    loops = [(s, e) for s, e in loops if any(ins and matcher.search(ins) for _, ins in items[s + 1 : e])]
    inner = [(s, e) for s, e in loops if not any((s2, e2) != (s, e) and s <= s2 and e2 <= e for s2, e2 in loops)]
    return [[ins for _, ins in items[s : e + 1] if ins] for s, e in sorted(inner)]


def _count(loop: list[str], pattern: str) -> int:
    return sum(bool(re.match(pattern, opcode(i))) for i in loop)


def measure(entry: KernelEntry, arch: str, causal: bool) -> dict:
    """The numbers of the module docstring for ``entry`` built for ``arch`` at :data:`PROBLEM`."""
    problem = COMMON.AttentionProblem(**PROBLEM, causal=causal)
    if entry.measure is not None:
        return entry.measure(entry, problem)
    module = load_example_module(EXAMPLES / entry.module)
    tile_kv = entry.tile_kv or module.default_tile_kv(problem.head_dim)
    kernel = getattr(module, entry.builder)(module.COMMON.AttentionProblem(*problem))
    lowered = lower(kernel, "tirx_layout", arch)
    cuda = device_source(lowered, "tirx_layout")
    code = measure_cuda(cuda, arch, launch_values(lowered).get("tirx.use_dyn_shared_memory", 0))
    found = {
        "tile_kv": tile_kv,
        "registers per thread, every role": code.registers,
        "spilled bytes, every role": code.spill_bytes,
        "shared bytes": code.shared_bytes,
        "PTX instructions": len(code.ptx),
    }
    if code.sass_listing is None:
        return found
    found["SASS instructions"] = len(code.sass)
    scores = entry.tile_q * tile_kv // entry.consumer_threads  # a consumer thread's scores per tile
    mma_per_tile = entry.mma_per_tile(problem.head_dim, tile_kv)
    consumer_loops = innermost_loops(code.sass_listing, entry.mma)
    for role, loop in zip(entry.consumers, consumer_loops, strict=False):
        tiles = max(1, _count(loop, entry.mma) // mma_per_tile)
        ex2 = _count(loop, r"MUFU\.EX2") / tiles
        unpredicated = sum(opcode(i) == "MUFU.EX2" and not i.startswith("@") for i in loop) / tiles
        found[f"{role}: SASS per K/V tile"] = round(len(loop) / tiles)
        found[f"{role}: {opcode(next(i for i in loop if re.match(entry.mma, opcode(i)))).split('.')[0]} per tile"] = (
            _count(loop, entry.mma) // tiles
        )
        found[f"{role}: MUFU.EX2 per tile"] = ex2
        found[f"{role}: MUFU.EX2 per score"] = round(ex2 / scores, 4)
        found[f"{role}: software exp2 per score"] = round(max(0.0, 1 - unpredicated / scores), 4)
        found[f"{role}: other MUFU per tile"] = _count(loop, r"MUFU\.(?!EX2)") / tiles
    producer = innermost_loops(code.sass_listing, entry.load) if entry.load else []
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
    DRAM bandwidth the K/V loads then need; the unit that bounds, and a one-line verdict.

    Example (FA2's 64 x 64 tile at head_dim 128 on an A100: 2 x 2 x 64 x 64 x 128 FLOP at 2048 per clock):
        >>> (entry,) = KERNELS["sm_80"][1]
        >>> est = roofline(AMPERE_DEVICES[0], entry, {"tile_kv": 64, "warps 0-3: SASS per K/V tile": 800}, False)
        >>> est["tensor clk"], est["exp clk"], est["issue clk"], est["bound"]
        (1024.0, 272.0, 800.0, 'tensor')
    """
    problem = COMMON.AttentionProblem(**PROBLEM, causal=causal)
    tile_kv, d = found["tile_kv"], problem.head_dim
    flops = 2 * 2 * entry.tile_q * tile_kv * d
    tensor = flops / device.flops_per_clock
    exps = entry.tile_q * tile_kv + entry.rows_per_thread * entry.consumer_threads
    exp = exps / device.ex2_per_clock
    per_role = [(found.get(f"{role}: SASS per K/V tile"), warps) for role, warps in entry.roles]
    issue = sum(n * warps for n, warps in per_role) / 4 if all(n for n, _ in per_role) else None
    tile_bytes = 2 * tile_kv * d * 2
    seconds = tensor / device.clock_hz
    l2 = tile_bytes / seconds * device.sms
    q_tiles = problem.seq_q // entry.tile_q
    dram_per_tile = tile_bytes / q_tiles  # each K/V tile read from DRAM once per (batch, head), shared via L2
    times = {"tensor": tensor, "exp": exp} | ({"issue": issue} if issue else {})
    bound = max(times, key=times.get)
    others = ", ".join(f"{unit} {times[unit] / times[bound]:.0%}" for unit in times if unit != bound)
    return {
        "tensor clk": tensor,
        "exp clk": exp,
        "issue clk": issue,
        "TMA bytes": tile_bytes,
        "L2->SM TB/s": l2 / 1e12,
        "DRAM TB/s": dram_per_tile / seconds * device.sms / 1e12,
        "bound": bound,
        "verdict": f"bound by the {UNITS[bound]} ({times[bound]:.0f} clk per K/V tile; {others} of it)",
    }


#: The units :func:`roofline` compares, as its verdict names them.
UNITS = {"tensor": "tensor cores", "exp": "exp unit (MUFU.EX2)", "issue": "instruction issue"}


def main() -> None:
    if find_nvcc() is None:
        sys.exit("bench_attention needs nvcc")
    only = sys.argv[1:]  # architectures to measure (all by default)
    for arch, (devices, entries) in KERNELS.items():
        if only and arch not in only:
            continue
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
                        f"{est['tensor clk']:.0f}, exp {est['exp clk']:.0f}{issue}; loads {est['TMA bytes']} bytes: "
                        f"{est['L2->SM TB/s']:.1f} TB/s from L2 over all SMs, {est['DRAM TB/s']:.2f} TB/s from DRAM "
                        f"(of {device.dram_bytes_per_s / 1e12:.2f})"
                    )
                    print(f"  verdict {device.name}: {est['verdict']}")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
