"""TVMScript text of device-helper calls, for tests that write lowered kernels by hand and run them in the simulator:
``call("mma_f16_ss", ...)`` is the ``tirx.cuda.func_call`` the lowering would emit for helper
``tirx_layout_<family>_<name>``."""

from __future__ import annotations


def call(name: str, *args: str, family: str = "tcgen05") -> str:
    """The statement calling helper ``tirx_layout_<family>_<name>`` with the TVMScript expressions ``args``."""
    operands = ", ".join([f'"tirx_layout_{family}_{name}"', *args, '""'])
    return f'T.evaluate(T.call_intrin("void", "tirx.cuda.func_call", {operands}))'


def u32(v: int) -> str:
    """A 32-bit unsigned constant."""
    return f"T.uint32({v})"


def u64(v: int) -> str:
    """A 64-bit constant as TVMScript builds it (its parser takes no literal above 2^63 - 1): two 32-bit halves."""
    return f"(T.Cast('uint64', T.uint32({v >> 32})) << T.uint64(32) | T.Cast('uint64', T.uint32({v & 0xFFFFFFFF})))"
