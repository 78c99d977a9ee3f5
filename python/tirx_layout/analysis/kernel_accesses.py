"""What a lowered kernel's memory instructions do, measured by running it in the simulator.

For every load or store instruction on shared or global memory: its vector width, how often warps executed it and,
for shared memory, the wavefronts each warp execution needed against the fewest the same words could need
(``bank_conflicts.warp_wavefronts``). Measuring on the actual addresses makes the answer exact for the kernel as
compiled, whatever the layouts and the lowering did.
"""

from __future__ import annotations

from dataclasses import dataclass, field


from .. import sim
from .bank_conflicts import warp_wavefronts

WARP = 32


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
        waves = (f"{self.wavefronts / self.warp_executions:5.1f} / {self.minimum_wavefronts / self.warp_executions:4.1f}"
                 if self.scope == "shared" else "    -")  # fmt: skip
        return f"{self.kind:5} {self.scope:6} {self.buffer:10} {self.vector_bytes:3}B  x{self.warp_executions:<5} {waves}"


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
        >>> [(r.kind, r.scope, r.vector_bytes, r.wavefronts // r.warp_executions) for r in kernel_accesses(kernel)]
        [('load', 'global', 4, 0), ('store', 'shared', 4, 32)]
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
        per_thread = addresses.reshape(addresses.shape[0], -1) * element_bytes
        for warp in range(0, addresses.shape[0], WARP):
            running = active[warp : warp + WARP]
            if not running.any():
                continue
            report.warp_executions += 1
            if memory.scope != "shared":
                continue
            lane_bytes = [per_thread[warp + l] if running[l] else [] for l in range(len(running))]
            phases, minimum = warp_wavefronts(lane_bytes, lanes * element_bytes, element_bytes)
            report.wavefronts += sum(phases)
            report.minimum_wavefronts += minimum
            if sum(phases) - minimum > report.worst[0] - report.worst[1]:
                report.worst = (sum(phases), minimum)

    sim.run(kernel, inputs, arch, observer=observe)
    return list(reports.values())


def access_table(kernel, inputs=(), arch: str = "sm_100a") -> str:
    """:func:`kernel_accesses` as a table: kind, scope, buffer, vector width, warp executions and, for shared
    memory, wavefronts per warp execution against the minimum.

    Example:
        >>> access_table.__name__
        'access_table'
    """
    header = "kind  scope  buffer     vec  warps   wavefronts/warp (actual / minimum)"
    return "\n".join([header, *(r.row() for r in kernel_accesses(kernel, inputs, arch))])


__all__ = ["AccessReport", "access_table", "kernel_accesses"]
