"""How the device helpers' pointer arguments reach simulated memory: ``address_of(buffer[i])`` of a shared buffer.

Shared buffers are buffer-relative in the simulator: a pointer is the buffer's :class:`~tirx_layout.sim.memory.Memory`
and an element index per thread (its byte offset is the index times the element size).
"""

from __future__ import annotations

import numpy as np
from tvm.ir import Call

from .memory import SimulationError

__all__ = ["shared_address"]


def shared_address(interp, expr, what: str) -> tuple[object, np.ndarray]:
    """The shared :class:`~tirx_layout.sim.memory.Memory` an ``address_of(buffer[i])`` argument points into, and
    the element index ``i`` per thread of ``interp`` (a ``CtaInterpreter``), shape ``(threads,)``.

    Example: ``memory, index = shared_address(interp, args[0], "mbarrier_wait")``; anything but the address of a
    shared buffer element raises ``SimulationError`` naming ``what``.
    """
    if not (isinstance(expr, Call) and expr.op.name.endswith("address_of")):
        raise SimulationError(f"{what} needs the address of a shared-memory element, got {expr}")
    load = expr.args[0]
    memory = interp._memory(load.source)
    if memory.scope != "shared":
        raise SimulationError(f"{what} takes a shared-memory address; {load.source.name} is {memory.scope}")
    return memory, np.broadcast_to(np.asarray(interp.eval(load.indices[-1]), np.int64), (interp.count,))
