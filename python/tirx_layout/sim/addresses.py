"""How the device helpers' pointer arguments reach simulated memory.

Two views of a shared buffer element, ``address_of(buffer[i])``:

* buffer-relative (:func:`shared_address`): the buffer's :class:`~tirx_layout.sim.memory.Memory` and the element
  index per thread -- what mbarriers and register pointers use;
* a register pointer (:func:`register_address`): ``address_of(fragment[i])`` of a thread's local buffer, which
  instructions that read or write a thread's registers (``tcgen05.ld/st``, ``wgmma``) take;
* the CTA's shared address space (:class:`SharedSpace`, :func:`shared_byte_address`): each shared buffer has a base
  address, given when it is allocated, at its declared alignment, in allocation order. Matrix descriptors carry
  such addresses (``smem_descriptor``), and a descriptor's start address maps back to (buffer, byte offset); the
  swizzle modes act on these absolute addresses, as the hardware's do.
"""

from __future__ import annotations

import numpy as np
from tvm.ir import Call

from .memory import OutOfBounds, SimulationError

__all__ = [
    "SharedSpace",
    "register_address",
    "register_slots",
    "shared_address",
    "shared_byte_address",
    "smem_descriptor",
]


class SharedSpace:
    """The shared address space of one CTA: buffers placed one after another, each at its alignment.

    Example:
        >>> import numpy as np
        >>> from tirx_layout.sim.memory import Memory
        >>> space = SharedSpace()
        >>> bar, tile = Memory("bar", np.zeros(1, np.uint64), "shared"), Memory("A", np.zeros(256, np.uint32), "shared")
        >>> space.place(bar, 8), space.place(tile, 1024)
        (0, 1024)
        >>> memory, offset = space.find(1024 + 40, 16, "A's descriptor")
        >>> memory.name, offset
        ('A', 40)
    """

    def __init__(self):
        self.bases: dict = {}  # id(Memory) -> base byte address
        self.memories: list = []  # (base, Memory) in allocation order
        self.top = 0

    def place(self, memory, alignment: int) -> int:
        """Give ``memory`` its base address (the first ``alignment``-aligned byte after the buffers placed so far)."""
        alignment = max(int(alignment), memory.data.dtype.itemsize, 1)
        base = -(-self.top // alignment) * alignment
        self.bases[id(memory)] = base
        self.memories.append((base, memory))
        self.top = base + memory.data.nbytes
        return base

    def reserve(self, memory, alignment: int) -> int:
        """Place ``memory`` like :meth:`place` as a region that holds other buffers (the dynamic shared pool, whose
        windows are then placed with :meth:`place_at`); :meth:`find` answers with the windows, never the region."""
        base = self.place(memory, alignment)
        self.memories.pop()
        return base

    def place_at(self, memory, address: int) -> int:
        """Give ``memory`` the base ``address`` another placement chose (a window of the dynamic shared pool)."""
        self.bases[id(memory)] = int(address)
        self.memories.append((int(address), memory))
        return int(address)

    def base(self, memory) -> int:
        """The base address of a placed shared ``memory``."""
        if id(memory) not in self.bases:
            raise SimulationError(f"shared buffer {memory.name} has no address (it was not allocated in this CTA)")
        return self.bases[id(memory)]

    def find(self, address: int, size: int, what: str):
        """The buffer holding bytes ``address .. address + size - 1`` and the offset of ``address`` in it; bytes in
        no buffer (or spilling out of the one ``address`` is in) raise, naming ``what``."""
        for base, memory in self.memories:
            if base <= address < base + memory.data.nbytes:
                if address + size > base + memory.data.nbytes:
                    raise OutOfBounds(
                        f"{what}: bytes {address}..{address + size - 1} run past the end of {memory.name} "
                        f"(shared bytes {base}..{base + memory.data.nbytes - 1})"
                    )
                return memory, address - base
        placed = ", ".join(f"{m.name} at {b}..{b + m.data.nbytes - 1}" for b, m in self.memories) or "none"
        raise SimulationError(f"{what}: shared address {address} is in no shared buffer (buffers: {placed})")


def _element(interp, expr, what: str):
    if not (isinstance(expr, Call) and expr.op.name.endswith("address_of")):
        raise SimulationError(f"{what} needs the address of a shared-memory element, got {expr}")
    load = expr.args[0]
    memory = interp._memory(load.source)
    if memory.scope != "shared":
        raise SimulationError(f"{what} takes a shared-memory address; {load.source.name} is {memory.scope}")
    index = np.asarray(interp.element_index(load.source, load.indices), np.int64)
    return memory, np.broadcast_to(index, (interp.count,))


def shared_address(interp, expr, what: str) -> tuple[object, np.ndarray]:
    """The shared :class:`~tirx_layout.sim.memory.Memory` an ``address_of(buffer[i])`` argument points into, and
    the element index ``i`` per thread of ``interp`` (a ``CtaInterpreter``), shape ``(threads,)``.

    Example: ``memory, index = shared_address(interp, args[0], "mbarrier_wait")``; anything but the address of a
    shared buffer element raises ``SimulationError`` naming ``what``.
    """
    return _element(interp, expr, what)


def shared_byte_address(interp, expr, what: str) -> np.ndarray:
    """The shared-space byte address (:class:`SharedSpace`) of an ``address_of(buffer[i])`` argument, per thread.

    Example: ``shared_byte_address(interp, args[0], "smem_descriptor")`` is ``base(buffer) + i * element size``.
    """
    memory, index = _element(interp, expr, what)
    return interp.launch.shared_space.base(memory) + index * memory.data.dtype.itemsize


def register_address(interp, expr, what: str):
    """The register buffer an ``address_of(buffer[i])`` argument points at: its var, its ``(threads, slots)``
    array in ``interp`` (a ``CtaInterpreter``; aliases of one buffer share the array) and the slot ``i`` per thread,
    shape ``(threads,)``.

    Example: ``var, regs, slot = register_address(interp, args[0], "wgmma D")``; anything but the address of a
    local (register) buffer element raises ``SimulationError`` naming ``what``.
    """
    if not (isinstance(expr, Call) and expr.op.name.endswith("address_of")):
        raise SimulationError(f"{what}: registers must be passed as address_of(buffer[i]), got {expr}")
    load = expr.args[0]
    if load.source not in interp.registers:
        raise SimulationError(f"{what}: {load.source.name} is not a register (local) buffer")
    index = np.broadcast_to(np.asarray(interp.eval(load.indices[-1]), np.int64), (interp.count,))
    return load.source, interp.registers[load.source], index


def register_slots(interp, expr, threads, count: int, dtype: np.dtype, what: str):
    """A register operand of an instruction that reads ``count`` consecutive slots of each thread's fragment from
    ``address_of(fragment[i])``: the register array, the slots ``(len(threads), count)`` of ``threads``, and the
    buffer's name; its element type is checked to be ``dtype`` and the slots to lie in the fragment.

    Example: ``regs, slots, name = register_slots(interp, args[0], np.arange(32), 4, np.dtype(np.float32),
    "mma.sync D")`` gives slots ``i .. i + 3`` of each of the warp's threads.
    """
    var, regs, index = register_address(interp, expr, what)
    if regs.dtype != dtype:
        raise SimulationError(f"{what}: {var.name} holds {regs.dtype} elements; this operand is {dtype.name}")
    slots = index[threads][:, None] + np.arange(count)[None, :]
    if (slots < 0).any() or (slots >= regs.shape[1]).any():
        raise OutOfBounds(
            f"{what} needs {count} registers from {var.name}[{int(index[threads[0]])}]; each thread holds "
            f"{regs.shape[1]}"
        )
    return regs, slots, var.name


def smem_descriptor(interp, args):
    """The ``smem_descriptor`` helper of either MMA family (``tcgen05``, ``wgmma``; the start field is the same
    bits in both): the descriptor's other fields (``args[1]``) ORed with (the shared address of ``args[0]`` &
    0x3FFFF) >> 4, per thread. No tensor memory, no register is involved.

    Example: ``smem_descriptor(interp, [address_of(A[64]), bits])`` is ``bits | ((base(A) + 64 * size) >> 4)``.
    """
    address = shared_byte_address(interp, args[0], "smem_descriptor")
    bits = np.asarray(interp.eval(args[1])).astype(np.uint64)
    return bits | ((address.astype(np.uint64) & np.uint64(0x3FFFF)) >> np.uint64(4))
