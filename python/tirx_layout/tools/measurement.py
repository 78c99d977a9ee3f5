"""What a compiled kernel's memory instructions do, measured by compiling it and running it in the simulator.

For every load or store instruction on shared or global memory: its vector width, how often warps executed it and,
for shared memory, the wavefronts each warp execution needed against the fewest the same words could need (the bank
model, ``analysis.bank_conflicts.shared_wavefronts``). Measuring on the actual addresses makes the answer exact for
the kernel as compiled, whatever the layouts and the lowering did.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import sim
from ..analysis.bank_conflicts import shared_wavefronts
from ..hw.threads import running_warps


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


__all__ = ["AccessReport", "AccessSummary", "access_table", "kernel_accesses", "summarize"]
