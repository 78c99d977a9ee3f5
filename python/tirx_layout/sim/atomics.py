"""Atomic read-modify-writes on shared and global memory, from the PTX ISA (``atom``, ``red``) and the CUDA functions
TVM prints for them: ``T.cuda.atomic_add(address_of(X[i]), v)`` (``atomicAdd``: ``atom.add``, returns the old value),
``T.cuda.atomic_cas(address_of(X[i]), compare, v)`` (``atomicCAS``: ``atom.cas``: stores ``v`` where the old value
equals ``compare``, returns the old value), and the instructions themselves: ``T.ptx.atom.<op>.<type>(d,
address_of(X[i]), b[, c])`` (``.op`` one of add, min, max, exch, and, or, xor, inc, dec, cas; the old value goes to
``d``) and ``T.ptx.red.<op>.<type>(address_of(X[i]), b)`` (no old value). ``inc``: ``old >= b ? 0 : old + 1``;
``dec``: ``old == 0 || old > b ? b : old - 1``; ``min``/``max`` compare as ``.type`` says (signed, unsigned or
float).

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
from tvm.ir import Call, StringImm, TensorLoad

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


def _apply(interp, call, pointer, operands, update) -> np.ndarray:
    """Run ``update`` atomically on the element ``pointer`` names for the executing threads, with the evaluated
    ``operands``; each thread's old value (0 where it does not execute)."""
    buffer, index = _element(interp, pointer)
    if buffer in interp.registers:
        raise SimulationError(
            f"{call.op.name} on {buffer.name}, a local (register) buffer: atomics need shared or global memory"
        )
    memory = interp._memory(buffer)
    index = interp._per_thread(np.asarray(index, np.int64))
    values = [interp._per_thread(interp.eval(a)) for a in operands]
    active = interp.mask
    old = np.zeros(interp.count, memory.data.dtype)
    old[active] = memory.atomic(
        index[active],
        update,
        [v[active] for v in values],
        interp.global_ids[active],
        interp.launch.block,
        interp.launch.interval,
        interp.sync,
    )
    return old


def _cuda(update, operand_count: int):
    def run(interp, call):
        if len(call.args) != operand_count + 1:
            raise SimulationError(f"{call.op.name} takes {operand_count + 1} arguments, {len(call.args)} given")
        return _apply(interp, call, call.args[0], call.args[1:], update)

    return run


#: The ``.type`` of a ``T.ptx.atom`` / ``red`` as numpy: what the element's bits are read as.
_PTX_TYPES = {
    "s32": np.int32,
    "u32": np.uint32,
    "b32": np.uint32,
    "s64": np.int64,
    "u64": np.uint64,
    "b64": np.uint64,
    "f32": np.float32,
    "f64": np.float64,
    "f16": np.float16,
}


def _ptx_update(op: str, type_name: str):
    """The PTX ISA's ``atom`` operation ``op`` on elements read as ``type_name``."""
    if type_name not in _PTX_TYPES:
        raise SimulationError(f"the simulator does not run atom/red on .{type_name} elements")
    kind = np.dtype(_PTX_TYPES[type_name])
    floating = kind.kind == "f"
    operations = {
        "add": (lambda a, b: add(a, b)) if kind == np.float32 else (lambda a, b: a + b),
        "min": np.fmin if floating else np.minimum,
        "max": np.fmax if floating else np.maximum,
        "exch": lambda a, b: b,
        "and": np.bitwise_and,
        "or": np.bitwise_or,
        "xor": np.bitwise_xor,
        "inc": lambda a, b: np.where(a >= b, 0, a + 1).astype(kind),
        "dec": lambda a, b: np.where((a == 0) | (a > b), b, a - 1).astype(kind),
        "cas": lambda a, b, c: np.where(a == b, c, a),
    }
    if op not in operations:
        raise SimulationError(f"the simulator does not run atom/red .{op}")

    def update(old, *operands):
        if old.dtype.itemsize != kind.itemsize:
            raise SimulationError(f"atom.{op}.{type_name} on {old.dtype} elements: the sizes differ")
        with np.errstate(over="ignore"):
            new = operations[op](old.view(kind), *(np.asarray(o).astype(kind) for o in operands))
        return np.asarray(new).astype(kind).view(old.dtype)

    return update


def _ptx_modifiers(call) -> tuple[str, str, list]:
    """The ``.op`` and ``.type`` of a ``T.ptx.atom``/``red`` call and its non-string arguments."""
    strings = [str(a.value) for a in call.args if isinstance(a, StringImm)]
    values = [a for a in call.args if not isinstance(a, StringImm)]
    op = next((m for m in strings if m in ("add", "min", "max", "exch", "and", "or", "xor", "inc", "dec", "cas")), None)
    type_name = next((m for m in strings if m in _PTX_TYPES), None)
    if op is None or type_name is None:
        raise SimulationError(f"{call.op.name} with modifiers {strings}: the simulator finds no .op and .type")
    return op, type_name, values


def _ptx_atom(interp, call):
    # atom{.sem}{.scope}{.space}.op.type d, [a], b{, c}: d receives the old value (PTX ISA, atom)
    op, type_name, (destination, pointer, *operands) = _ptx_modifiers(call)
    old = _apply(interp, call, pointer, operands, _ptx_update(op, type_name))
    if not isinstance(destination, TensorLoad):
        raise SimulationError(f"{call.op.name} writes the old value to a buffer element, not to {destination}")
    interp._store(destination.source, interp.element_index(destination.source, destination.indices), old)
    return np.int32(0)


def _ptx_red(interp, call):
    # red{.sem}{.scope}{.space}.op.type [a], b: atom without the old value (PTX ISA, red)
    op, type_name, (pointer, *operands) = _ptx_modifiers(call)
    _apply(interp, call, pointer, operands, _ptx_update(op, type_name))
    return np.int32(0)


#: The atomic intrinsics by name (without the ``tirx.`` prefix): ``handler(interpreter, call)`` -> old values.
INTRINSICS = {
    "cuda.atomic_add": _cuda(add, 1),
    "cuda.atomic_cas": _cuda(compare_and_swap, 2),
    "ptx.atom": _ptx_atom,
    "ptx.atom_cas": _ptx_atom,
    "ptx.red": _ptx_red,
}
