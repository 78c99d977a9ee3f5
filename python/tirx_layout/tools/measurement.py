"""Measurements of compiled kernels: what their memory instructions do, and what the assembler makes of them.

For every load or store instruction on shared or global memory (:func:`kernel_accesses`): its vector width, how
often warps executed it and, for shared memory, the wavefronts each warp execution needed against the fewest the same
words could need (the bank model, ``analysis.bank_conflicts.shared_wavefronts``). Measuring on the actual addresses
makes the answer exact for the kernel as compiled, whatever the layouts and the lowering did.

For the code itself (:func:`measure_kernel`, :func:`measure_cuda`): registers per thread (``ptxas -v``), shared
memory (static from ``ptxas``, dynamic from the launch the host code makes), the instructions of the kernel in PTX
and, where ``nvdisasm`` is installed, in SASS, the tcgen05 instructions by kind, and the instructions of the MMA
issue sequence. Counts are static (instructions in the code, not executions).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import tvm
import tvm_ffi
from tvm.tirx.build import codegen_build, split_host_device_mods

from .. import sim
from ..analysis.bank_conflicts import shared_wavefronts
from ..hw.threads import running_warps
from .kernel_report import find_nvcc


@dataclass
class AccessReport:
    """One memory instruction of a kernel."""

    text: str
    buffer: str
    scope: str
    kind: str
    vector_bytes: int
    warp_executions: int = 0
    wavefronts: int = 0
    minimum_wavefronts: int = 0
    worst: tuple = field(default=(0, 0))  # (wavefronts, minimum) of the worst warp execution

    @property
    def conflict_free(self) -> bool:
        """Whether every warp execution needed only the minimum number of wavefronts."""
        return self.wavefronts == self.minimum_wavefronts

    def row(self) -> str:
        waves = (
            f"{self.wavefronts / self.warp_executions:5.1f} / {self.minimum_wavefronts / self.warp_executions:4.1f}"
            if self.scope == "shared"
            else "    -"
        )
        return (
            f"{self.kind:5} {self.scope:6} {self.buffer:10} {self.vector_bytes:3}B  x{self.warp_executions:<5} {waves}"
        )


def kernel_accesses(kernel, inputs=(), arch: str = "sm_100a") -> list[AccessReport]:
    """Run ``kernel`` in the simulator and report every shared/global memory instruction, in first-execution order.

    Example:
        >>> import numpy as np, tvm
        >>> kernel = tvm.script.from_source('''
        ... @T.prim_func
        ... def k(A: T.Buffer((32, 32), "float32")):
        ...     T.device_entry()
        ...     tx = T.thread_id([32])
        ...     S = T.alloc_shared((32, 32), "float32")
        ...     for i in range(32):
        ...         S[tx, i] = A[i, tx]
        ... ''')
        >>> load, store = kernel_accesses(kernel)  # A[i, tx] is read, S[tx, i] written: a column of S per warp
        >>> (load.kind, load.scope, load.vector_bytes), (store.kind, store.scope, store.vector_bytes)
        (('load', 'global', 4), ('store', 'shared', 4))
        >>> store.wavefronts // store.warp_executions, store.minimum_wavefronts // store.warp_executions
        (32, 1)
    """
    reports: dict[int, AccessReport] = {}

    def observe(node, kind, memory, addresses, active):
        key = node.__chandle__()
        lanes = addresses.shape[1] if addresses.ndim == 2 else 1
        element_bytes = memory.data.dtype.itemsize
        report = reports.get(key)
        if report is None:
            text = str(node).splitlines()[0]
            report = reports[key] = AccessReport(text, memory.name, memory.scope, kind, lanes * element_bytes)
        threads = addresses.shape[0]
        executed = running_warps(active)
        report.warp_executions += int(executed.sum())
        if memory.scope != "shared":
            return
        per_thread = addresses.reshape(threads, -1) * element_bytes
        waves, minimum = shared_wavefronts(per_thread, active, lanes * element_bytes, element_bytes)
        for actual, least in zip(waves.sum(axis=1)[executed], minimum[executed], strict=True):
            report.wavefronts += int(actual)
            report.minimum_wavefronts += int(least)
            if actual - least > report.worst[0] - report.worst[1]:
                report.worst = (int(actual), int(least))

    sim.run(kernel, inputs, arch, observer=observe)
    return list(reports.values())


@dataclass
class AccessSummary:
    """All instructions of one kind (load/store) on one scope (global/shared), added up."""

    instructions: int
    warp_executions: int
    vector_bytes: tuple
    wavefronts: int
    minimum_wavefronts: int

    @property
    def conflict_free(self) -> bool:
        return self.wavefronts == self.minimum_wavefronts


def summarize(reports: list[AccessReport]) -> dict[tuple[str, str], AccessSummary]:
    """``{(kind, scope): AccessSummary}`` over the instructions of :func:`kernel_accesses`.

    Example:
        >>> summarize([AccessReport("x", "S", "shared", "load", 16, 2, 8, 8)])[("load", "shared")].vector_bytes
        (16,)
    """
    out: dict = {}
    for r in reports:
        old = out.get((r.kind, r.scope), AccessSummary(0, 0, (), 0, 0))
        out[(r.kind, r.scope)] = AccessSummary(
            old.instructions + 1,
            old.warp_executions + r.warp_executions,
            tuple(sorted(set(old.vector_bytes) | {r.vector_bytes})),
            old.wavefronts + r.wavefronts,
            old.minimum_wavefronts + r.minimum_wavefronts,
        )
    return out


def access_table(kernel, inputs=(), arch: str = "sm_100a") -> str:
    """:func:`kernel_accesses` as a table: kind, scope, buffer, vector width, warp executions and, for shared
    memory, wavefronts per warp execution against the minimum.

    Example (the kernel of :func:`kernel_accesses`): ``print(access_table(kernel))`` prints a header, then
    ``load  global A            4B  x1     -`` and ``store shared S            4B  x1     32.0 /  1.0``.
    """
    header = "kind  scope  buffer     vec  warps   wavefronts/warp (actual / minimum)"
    return "\n".join([header, *(r.row() for r in kernel_accesses(kernel, inputs, arch))])


# ---- the code of a compiled kernel ----

# A label in front of a PTX statement (``$L__BB0_1:``); directives and inline-asm braces are dropped separately.
_PTX_LABEL = re.compile(r"^[\w$]+:")
# One SASS instruction line of nvdisasm: ``/*0080*/   @!P0 LOP3.LUT P1, RZ, R0, ... ;``.
_SASS_LINE = re.compile(r"/\*[0-9a-f]+\*/\s+(.*?)\s*;")
_PREDICATE = re.compile(r"^@!?%?\w+\s+")
# (MMA, commit, CTA barrier) opcodes in each language: the marks of the MMA issue sequence. In SASS tcgen05.mma is
# UTC*MMA (UTCHMMA for kind f16, other letters for the other kinds) and tcgen05.commit is UTCBAR.
_ISSUE_MARKS = {
    "SASS": (re.compile(r"UTC\w*MMA\b"), re.compile(r"UTCBAR\b"), re.compile(r"BAR\.")),
    "PTX": (
        re.compile(r"tcgen05\.mma\b"),
        re.compile(r"tcgen05\.commit\b"),
        re.compile(r"(bar|barrier)(\.cta)?\.sync\b"),
    ),
}
TCGEN05_KINDS = (
    "mma",
    "commit",
    "ld",
    "st",
    "cp",
    "shift",
    "alloc",
    "dealloc",
    "relinquish_alloc_permit",
    "fence",
    "wait",
)


def ptx_instructions(ptx: str) -> list[str]:
    """The instructions of the kernel bodies in PTX text, one string each (predicate guard kept), in order; inline
    assembly (``{ .reg .pred p; setp.ne.b32 p, %r1, 0; tcgen05.mma... p; }``) counts one per statement.

    Example:
        >>> ptx_instructions(".visible .entry k()\\n{\\n.reg .b32 %r<2>;\\n$L1:\\n@%p1 bra $L1; // loop\\nret;\\n}")
        ['@%p1 bra $L1', 'ret']
    """
    if ".entry" not in ptx:
        return []
    found = []
    for line in ptx[ptx.index(".entry") :].splitlines():
        for statement in line.split("//", 1)[0].split(";"):
            statement = _PTX_LABEL.sub("", statement.strip().strip("{}").strip()).strip()
            if statement and not statement.startswith((".", "(", ")")) and statement not in ("{", "}"):
                found.append(statement)
    return found


def ptx_loop_around(ptx: str, mnemonic: str) -> list[str]:
    """The instructions of the smallest PTX loop (a label and a later branch back to it) that holds an instruction
    whose mnemonic starts with ``mnemonic``: a kernel's main loop (one iteration, or as many as the assembler
    unrolled into it), as :func:`ptx_instructions` lists them, the backward branch included. ``[]`` when no loop
    holds one.

    Example:
        >>> ptx = ".entry k()\\n{\\n$L1:\\nadd.s32 %r1, %r1, 1;\\n$L2:\\nmul.lo.s32 %r2, %r2, 3;\\n"
        >>> ptx += "@%p1 bra $L2;\\n@%p2 bra $L1;\\nret;\\n}"
        >>> ptx_loop_around(ptx, "mul"), len(ptx_loop_around(ptx, "add"))
        (['mul.lo.s32 %r2, %r2, 3', '@%p1 bra $L2'], 4)
    """
    if ".entry" not in ptx:
        return []
    items = []  # (label or None, instruction or None) in order
    for line in ptx[ptx.index(".entry") :].splitlines():
        for statement in line.split("//", 1)[0].split(";"):
            statement = statement.strip().strip("{}").strip()
            label = _PTX_LABEL.match(statement)
            if label:
                items.append((label.group(0)[:-1], None))
                statement = statement[label.end() :].strip()
            if statement and not statement.startswith((".", "(", ")")):
                items.append((None, statement))
    labels = {name: i for i, (name, _) in enumerate(items) if name}
    loops = []
    for i, (_, instruction) in enumerate(items):
        target = instruction and opcode(instruction).startswith("bra") and instruction.split()[-1]
        if target in labels and labels[target] < i:
            loops.append((labels[target], i))
    marked = [i for i, (_, ins) in enumerate(items) if ins and opcode(ins).startswith(mnemonic)]
    holding = [(end - start, start, end) for start, end in loops if any(start < i < end for i in marked)]
    if not holding:
        return []
    _, start, end = min(holding)
    return [ins for _, ins in items[start : end + 1] if ins]


def sass_instructions(listing: str) -> list[str]:
    """The instructions of an ``nvdisasm`` listing, one string each (predicate guard kept), in address order.

    Example:
        >>> sass_instructions("  /*0000*/   LDC R1, c[0x0][0x37c] ;\\n.L_x_0:\\n  /*0010*/  @P0 EXIT ;")
        ['LDC R1, c[0x0][0x37c]', '@P0 EXIT']
    """
    return [match.group(1) for match in _SASS_LINE.finditer(listing)]


# A label line of an nvdisasm listing (``.L_x_12:``) and a branch's target (``BRA `(.L_x_12)``).
_SASS_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_SASS_TARGET = re.compile(r"\(\s*(\.L_x_\d+)\s*\)")


def sass_loops(listing: str) -> tuple[list[tuple[str | None, str | None]], list[tuple[int, int]]]:
    """An ``nvdisasm`` listing as ``(label, None)`` and ``(None, instruction)`` items in order, and its loops: the
    ``(start, end)`` item spans from a label to a later branch back to it. Not loops: ptxas's per-instruction
    election loops (``BRA.U.ANY``) and a wait's retry path, which ptxas places after the kernel's ``EXIT`` and which
    branches back into the body (a span holding an ``EXIT`` or ``RET``).

    Example:
        >>> listing = ".L_x_1:\\n /*0000*/ IADD3 R1, R1, 1 ;\\n /*0010*/ @P1 BRA `(.L_x_1) ;\\n /*0020*/ EXIT ;"
        >>> sass_loops(listing)
        ([('.L_x_1', None), (None, 'IADD3 R1, R1, 1'), (None, '@P1 BRA `(.L_x_1)'), (None, 'EXIT')], [(0, 2)])
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
    loops = []
    for i, (_, instruction) in enumerate(items):
        name = instruction and opcode(instruction)
        target = name and name.startswith("BRA") and name != "BRA.U.ANY" and _SASS_TARGET.search(instruction)
        if target and target.group(1) in labels and labels[target.group(1)] < i:
            loops.append((labels[target.group(1)], i))
    exits = [i for i, (_, ins) in enumerate(items) if ins and opcode(ins) in ("EXIT", "RET")]
    return items, [(start, end) for start, end in loops if not any(start < i < end for i in exits)]


def sass_loop_around(listing: str, pattern: str) -> list[str]:
    """The instructions of the smallest SASS loop of an ``nvdisasm`` listing (:func:`sass_loops`) that holds an
    instruction matching the regular expression ``pattern``, as :func:`sass_instructions` lists them; ``[]`` when
    no loop holds one.

    Example:
        >>> listing = ".L_x_1:\\n /*0000*/ IADD3 R1, R1, 1 ;\\n.L_x_2:\\n /*0010*/ UTCHMMA gdesc[UR4] ;\\n"
        >>> listing += " /*0020*/ @P0 BRA.U.ANY `(.L_x_2) ;\\n /*0030*/ @P1 BRA `(.L_x_1) ;\\n /*0040*/ EXIT ;"
        >>> sass_loop_around(listing, r"UTC\\w*MMA")
        ['IADD3 R1, R1, 1', 'UTCHMMA gdesc[UR4]', '@P0 BRA.U.ANY `(.L_x_2)', '@P1 BRA `(.L_x_1)']
    """
    items, loops = sass_loops(listing)
    matcher = re.compile(pattern)
    holding = [
        (end - start, start, end)
        for start, end in loops
        if any(ins and matcher.search(ins) for _, ins in items[start + 1 : end])
    ]
    if not holding:
        return []
    _, start, end = min(holding)
    return [ins for _, ins in items[start : end + 1] if ins]


def opcode(instruction: str) -> str:
    """The mnemonic of a PTX or SASS instruction, without its predicate guard.

    Example:
        >>> opcode("@!P0 UTCHMMA gdesc[UR4], gdesc[UR6], tmem[UR26]"), opcode("@%p1 tcgen05.commit.cta_group::1.b64")
        ('UTCHMMA', 'tcgen05.commit.cta_group::1.b64')
    """
    return _PREDICATE.sub("", instruction.strip()).split(None, 1)[0] if instruction.strip() else ""


def opcode_counts(instructions: list[str]) -> Counter:
    """How many times each mnemonic (:func:`opcode`) occurs among ``instructions``.

    Example:
        >>> opcode_counts(["UIADD3 UR4", "@P0 UIADD3 UR5", "UTCHMMA gdesc[UR4]"])
        Counter({'UIADD3': 2, 'UTCHMMA': 1})
    """
    return Counter(opcode(i) for i in instructions)


def opcode_difference(ours: list[str], theirs: list[str]) -> dict[str, int]:
    """``{mnemonic: count in ours - count in theirs}`` for every mnemonic whose counts differ, largest excess first:
    what one instruction sequence spends that the other does not.

    Example:
        >>> opcode_difference(["ELECT P0", "UTCHMMA a", "BRA.U.ANY x"], ["UTCHMMA a", "R2UR UR4"])
        {'BRA.U.ANY': 1, 'ELECT': 1, 'R2UR': -1}
    """
    a, b = opcode_counts(ours), opcode_counts(theirs)
    diff = {name: a[name] - b[name] for name in sorted(set(a) | set(b)) if a[name] != b[name]}
    return dict(sorted(diff.items(), key=lambda item: -item[1]))


def tcgen05_counts(ptx: list[str]) -> dict[str, int]:
    """How many tcgen05 instructions of each kind (``TCGEN05_KINDS``: mma, commit, ld, st, cp, alloc, ...) the PTX
    instructions hold; every kind is a key, absent ones count 0.

    Example:
        >>> counts = tcgen05_counts(["tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r2, p",
        ...                          "@%p1 tcgen05.commit.cta_group::1.mbarrier::arrive::one.b64 [%r3]", "add.s32 %r1"])
        >>> counts["mma"], counts["commit"], counts["ld"]
        (1, 1, 0)
    """
    kinds = Counter()
    for instruction in ptx:
        name = opcode(instruction)
        if name.startswith("tcgen05."):
            kind = re.split(r"[.:]", name[len("tcgen05.") :], maxsplit=1)[0]
            kinds[kind] += 1
    unknown = sorted(set(kinds) - set(TCGEN05_KINDS))
    if unknown:
        raise ValueError(f"tcgen05 instruction kind(s) {unknown} not among {TCGEN05_KINDS}")
    return {kind: kinds[kind] for kind in TCGEN05_KINDS}


def mma_issue_sequence(instructions: list[str], sass: bool = True) -> list[str]:
    """The instructions the MMA-issuing thread runs for one sweep over K: from after the last CTA barrier before the
    first MMA through the commit after the last MMA (descriptor arithmetic, the thread election, the MMAs, the
    commit). ``[]`` when there is no MMA; up to the end when there is no commit. ``sass`` says which language
    ``instructions`` are in (SASS: ``UTC*MMA``, ``UTCBAR``, ``BAR.*``; PTX: ``tcgen05.mma``, ``tcgen05.commit``,
    ``bar.sync``/``barrier.sync``).

    Example:
        >>> mma_issue_sequence(["LDS R1", "BAR.SYNC 0x0", "ELECT P0", "UTCHMMA a", "UTCHMMA b", "UTCBAR [UR8]", "LDTM"])
        ['ELECT P0', 'UTCHMMA a', 'UTCHMMA b', 'UTCBAR [UR8]']
    """
    names = [opcode(i) for i in instructions]
    mma, commit, barrier = _ISSUE_MARKS["SASS" if sass else "PTX"]
    is_mma, is_commit, is_barrier = (lambda n, r=r: bool(r.match(n)) for r in (mma, commit, barrier))
    mmas = [i for i, n in enumerate(names) if is_mma(n)]
    if not mmas:
        return []
    start = max((i + 1 for i, n in enumerate(names[: mmas[0]]) if is_barrier(n)), default=0)
    end = next((i + 1 for i in range(mmas[-1] + 1, len(names)) if is_commit(names[i])), len(names))
    return instructions[start:end]


@dataclass
class KernelCode:
    """What the assembler makes of one kernel: registers, shared memory, and its instructions in PTX and SASS."""

    registers: int
    static_shared_bytes: int
    dynamic_shared_bytes: int
    ptx: list[str]
    sass: list[str] | None  # None where nvdisasm is not installed
    spill_bytes: int = 0  # bytes of spill stores ptxas reports (registers that did not fit, kept in local memory)
    sass_listing: str | None = None  # nvdisasm's listing, labels included (for sass_loop_around)

    @property
    def shared_bytes(self) -> int:
        """Shared memory per CTA: the static arrays plus what the launch asks for dynamically."""
        return self.static_shared_bytes + self.dynamic_shared_bytes

    @property
    def instructions(self) -> list[str]:
        """The kernel's SASS instructions where nvdisasm was found, else its PTX instructions."""
        return self.sass if self.sass is not None else self.ptx

    @property
    def language(self) -> str:
        """``"SASS"`` or ``"PTX"``: what :attr:`instructions` are."""
        return "SASS" if self.sass is not None else "PTX"

    @property
    def issue_sequence(self) -> list[str]:
        """:func:`mma_issue_sequence` of :attr:`instructions`."""
        return mma_issue_sequence(self.instructions, sass=self.sass is not None)

    @property
    def tcgen05(self) -> dict[str, int]:
        """:func:`tcgen05_counts` of the PTX."""
        return tcgen05_counts(self.ptx)

    def numbers(self) -> dict[str, int]:
        """The measurements as one flat ``{name: count}``: registers, shared bytes, instructions, issue sequence, and
        tcgen05 instructions (all, then by kind, alloc/dealloc/relinquish together)."""
        tc = self.tcgen05
        return {
            "registers": self.registers,
            "shared bytes": self.shared_bytes,
            "instructions": len(self.instructions),
            "MMA issue": len(self.issue_sequence),
            "tcgen05": sum(tc.values()),
            "mma": tc["mma"],
            "commit": tc["commit"],
            "ld": tc["ld"],
            "cp": tc["cp"],
            "alloc": tc["alloc"] + tc["dealloc"] + tc["relinquish_alloc_permit"],
            "fence": tc["fence"],
        }


def find_nvdisasm() -> str | None:
    """Path of ``nvdisasm`` (CUDA's SASS disassembler): ``$NVDISASM``, else on ``PATH``, else beside ``nvcc``, else
    from the ``nvidia-cuda-nvdisasm`` wheel in this Python environment; ``None`` where there is none.

    Example:
        >>> find_nvdisasm() is None or os.access(find_nvdisasm(), os.X_OK)
        True
    """
    candidates = [os.environ.get("NVDISASM"), shutil.which("nvdisasm")]
    nvcc = find_nvcc()
    if nvcc is not None:
        candidates.append(str(Path(nvcc).resolve().parent / "nvdisasm"))
    candidates += [str(p) for p in sorted(Path(sys.prefix).glob("lib/python*/site-packages/nvidia/cu*/bin/nvdisasm"))]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def _nvcc(args: list[str]) -> subprocess.CompletedProcess:
    nvcc = find_nvcc()
    if nvcc is None:
        raise FileNotFoundError("nvcc not found: install the CUDA toolkit (nvcc) to measure compiled kernels")
    done = subprocess.run([nvcc, *args], capture_output=True, text=True, timeout=600)
    if done.returncode:
        raise ValueError(f"nvcc {' '.join(args[:2])} failed: {done.stderr.strip()[-2000:]}")
    return done


def measure_cuda(
    cuda: str, arch: str = "sm_100a", dynamic_shared_bytes: int = 0, flags: tuple[str, ...] = ()
) -> KernelCode:
    """Assemble the CUDA source of one kernel for ``arch`` and measure it (``dynamic_shared_bytes``: what its launch
    asks for; ``flags``: more nvcc options, such as ``-I`` for a header library's kernel). ``FileNotFoundError``
    without nvcc; ``ValueError`` when nvcc rejects the source.

    Example:
        >>> if find_nvcc():
        ...     code = measure_cuda('extern "C" __global__ void k(float* a) { __shared__ float s[32]; '
        ...                         's[threadIdx.x] = a[threadIdx.x]; __syncthreads(); '
        ...                         'a[threadIdx.x] = s[31 - threadIdx.x]; }')
        ...     print(code.static_shared_bytes, code.tcgen05["mma"], "ret" in [opcode(i) for i in code.ptx],
        ...           code.spill_bytes)
        ... else:
        ...     print(128, 0, True, 0)
        128 0 True 0
    """
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "kernel.cu"
        source.write_text(cuda)
        cubin = Path(tmp) / "kernel.cubin"
        assembled = _nvcc([f"-arch={arch}", *flags, "-cubin", "-Xptxas", "-v", "-o", str(cubin), str(source)])
        _nvcc([f"-arch={arch}", *flags, "-ptx", "-o", str(Path(tmp) / "kernel.ptx"), str(source)])
        ptx = (Path(tmp) / "kernel.ptx").read_text()
        nvdisasm = find_nvdisasm()
        listing = None
        if nvdisasm is not None:
            disassemble = [nvdisasm, "-c", str(cubin)]
            listing = subprocess.run(disassemble, capture_output=True, text=True, timeout=600, check=True)
    registers = re.search(r"Used (\d+) registers", assembled.stderr)
    shared = re.search(r"(\d+) bytes smem", assembled.stderr)
    spills = re.search(r"(\d+) bytes spill stores", assembled.stderr)
    return KernelCode(
        registers=int(registers.group(1)) if registers else 0,
        static_shared_bytes=int(shared.group(1)) if shared else 0,
        dynamic_shared_bytes=int(dynamic_shared_bytes),
        ptx=ptx_instructions(ptx),
        sass=None if listing is None else sass_instructions(listing.stdout),
        spill_bytes=int(spills.group(1)) if spills else 0,
        sass_listing=None if listing is None else listing.stdout,
    )


def cuda_target(arch: str = "sm_100a") -> tvm.target.Target:
    """The CUDA target for ``arch`` with the host target TVM builds for (LLVM where enabled, else C).

    Example:
        >>> cuda_target().attrs["arch"]
        'sm_100a'
    """
    host = "llvm" if tvm.runtime.enabled("llvm") else "c"
    return tvm.target.Target({"kind": "cuda", "arch": arch}).with_host(tvm.target.Target(host))


def lower(kernel, pipeline: str, arch: str = "sm_100a") -> tvm.IRModule:
    """``kernel`` (a ``PrimFunc`` or ``IRModule``) through TIR pipeline ``pipeline`` for ``arch``, before host/device
    finalisation: the host function then holds the kernel launch (:func:`launch_values`).

    Example: ``launch_values(lower(kernel, "tirx_layout"))`` is ``{"threadIdx.x": 128}`` for a 128-thread kernel.
    """
    mod = kernel if isinstance(kernel, tvm.IRModule) else tvm.IRModule({"main": kernel})
    mod = tvm.tirx.transform.BindTarget(cuda_target(arch))(mod)
    passes, _finalize_host, _finalize_device = tvm.tirx.get_tir_pipeline(pipeline)
    return passes(mod)


def launch_values(lowered: tvm.IRModule) -> dict[str, int]:
    """The launch parameters the host code of a lowered module passes to its one kernel, by tag (``"threadIdx.x"``,
    ``"blockIdx.x"``, ``"tirx.use_dyn_shared_memory"``: the dynamic shared bytes); ``ValueError`` unless there is
    exactly one launch with constant values.

    Example: ``{"threadIdx.x": 128, "tirx.use_dyn_shared_memory": 33792}`` for upstream's one-CTA GEMM that puts its
    operands in a ``T.SMEMPool``.
    """
    launches = []

    def on_call(call):
        if getattr(call.op, "name", None) == "tirx.call_ffi_kernel":
            launches.append(call)

    for func in lowered.functions.values():
        tvm_ffi.structural_walk(func, [(tvm.ir.Call, on_call)])
    if len(launches) != 1:
        raise ValueError(f"expected one kernel launch in the lowered module, found {len(launches)}")
    (call,) = launches
    tags = list(call.attrs.launch_params)
    values = list(call.args)[len(call.args) - len(tags) :]
    if not all(isinstance(v, tvm.tirx.IntImm) for v in values):
        given = dict(zip(tags, values, strict=True))
        raise ValueError(f"the launch of {call.args[0]} has non-constant parameters {given}")
    return {tag: int(v) for tag, v in zip(tags, values, strict=True)}


def device_source(lowered: tvm.IRModule, pipeline: str) -> str:
    """The CUDA source of a module :func:`lower` returned: device functions finalised by ``pipeline``'s own passes,
    then generated.

    Example: ``device_source(lower(kernel, "tirx_layout"), "tirx_layout")`` equals
    ``build(kernel).imports[0].inspect_source()``.
    """
    _host, devices = split_host_device_mods(lowered)
    _passes, _finalize_host, finalize_device = tvm.tirx.get_tir_pipeline(pipeline)
    if len(devices) != 1:
        raise ValueError(f"expected device code for one target, found {len(devices)}")
    ((target, device),) = devices.items()
    return codegen_build(finalize_device()(device), target).inspect_source()


def measure_kernel(kernel, pipeline: str = "tirx_layout", arch: str = "sm_100a") -> KernelCode:
    """Build ``kernel`` with ``pipeline`` for ``arch`` and measure it (:func:`measure_cuda`, with the dynamic shared
    memory its launch asks for).

    Example: ``measure_kernel(kernel).numbers()`` is ``{"registers": ..., "shared bytes": ..., "tcgen05": ..., ...}``.
    """
    lowered = lower(kernel, pipeline, arch)
    dynamic = launch_values(lowered).get("tirx.use_dyn_shared_memory", 0)
    return measure_cuda(device_source(lowered, pipeline), arch, dynamic)


__all__ = [
    "TCGEN05_KINDS",
    "AccessReport",
    "AccessSummary",
    "KernelCode",
    "access_table",
    "cuda_target",
    "device_source",
    "find_nvdisasm",
    "kernel_accesses",
    "launch_values",
    "lower",
    "measure_cuda",
    "measure_kernel",
    "mma_issue_sequence",
    "opcode",
    "opcode_counts",
    "opcode_difference",
    "ptx_instructions",
    "ptx_loop_around",
    "sass_instructions",
    "sass_loop_around",
    "summarize",
    "tcgen05_counts",
]
