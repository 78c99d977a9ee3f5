"""Atomic read-modify-writes on shared and global memory, from the PTX ISA (``atom``) and the CUDA functions TVM
prints for them: ``T.cuda.atomic_add(address_of(X[i]), v)`` (``atomicAdd``: ``atom.add``, returns the old value)
and ``T.cuda.atomic_cas(address_of(X[i]), compare, v)`` (``atomicCAS``: ``atom.cas``: stores ``v`` where the old
value equals ``compare``, returns the old value).

``atom.add.f32`` rounds to nearest even and flushes subnormal inputs and results to sign-preserving zero (the ISA
names the variant that does not, ``.noftz``); integer adds wrap. Threads of one instruction on one element apply one
after the other in thread order. Each atomic is counted in the memory's ``atomics`` (``SimResult.atomics``), apart
from plain stores (``writes``); atomics never race with each other, but an atomic and an unordered plain access of
the same element by another thread (or CTA) do (:class:`~tirx_layout.sim.memory.DataRace`).

Example:
    >>> import numpy as np
    >>> add(np.float32([1.0, 1e-40]), np.float32([2.0, 0.0])).tolist()  # the subnormal is flushed
    [3.0, 0.0]
"""

from __future__ import annotations

import numpy as np
from tvm.ir import Call, TensorLoad

from .math_functions import flush_subnormals
from .memory import SimulationError

__all__ = ["INTRINSICS", "add", "compare_and_swap"]


def add(old: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``atom.add``: the new value; float32 flushes subnormals (``atom.add.f32``), integers wrap.

    Example:
        >>> add(np.int32([2**31 - 1]), np.int32([1])).tolist()
        [-2147483648]
    """
    if old.dtype == np.float32:
        return flush_subnormals(flush_subnormals(old) + flush_subnormals(value.astype(np.float32)))
    with np.errstate(over="ignore"):
        return old + value.astype(old.dtype)


def compare_and_swap(old: np.ndarray, compare: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``atom.cas``: ``value`` where ``old`` equals ``compare``, else ``old``.

    Example:
        >>> compare_and_swap(np.int32([0, 3]), np.int32([0, 0]), np.int32([5, 5])).tolist()
        [5, 3]
    """
    return np.where(old == compare.astype(old.dtype), value.astype(old.dtype), old)


def _element(interp, pointer):
    """The buffer and per-thread element an ``address_of(X[i])`` operand names."""
    if isinstance(pointer, Call) and getattr(pointer.op, "name", "").endswith("address_of"):
        load = pointer.args[0]
        if isinstance(load, TensorLoad):
            return load.source, interp.element_index(load.source, load.indices)
    raise SimulationError(f"the simulator runs atomics on address_of(an element), not on {pointer}")


def _atomic(update, operand_count: int):
    def run(interp, call):
        if len(call.args) != operand_count + 1:
            raise SimulationError(f"{call.op.name} takes {operand_count + 1} arguments, {len(call.args)} given")
        buffer, index = _element(interp, call.args[0])
        if buffer in interp.registers:
            raise SimulationError(
                f"an atomic on {buffer.name}, a local (register) buffer: atomics need shared or global memory"
            )
        memory = interp._memory(buffer)
        index = interp._per_thread(np.asarray(index, np.int64))
        operands = [interp._per_thread(interp.eval(a)) for a in call.args[1:]]
        active = interp.mask
        old = np.zeros(interp.count, memory.data.dtype)
        old[active] = memory.atomic(
            index[active],
            update,
            [o[active] for o in operands],
            interp.global_ids[active],
            interp.launch.block,
            interp.launch.interval,
            interp.sync,
        )
        return old

    return run


#: The atomic intrinsics by name (without the ``tirx.`` prefix): ``handler(interpreter, call)`` -> old values.
INTRINSICS = {"cuda.atomic_add": _atomic(add, 1), "cuda.atomic_cas": _atomic(compare_and_swap, 2)}
