"""TVMScript text of device-helper calls, for tests that write lowered kernels by hand and run them in the simulator:
``call("tcgen05", "mma_f16_ss", ...)`` is the ``tirx.cuda.func_call`` the lowering would emit for helper
``tirx_layout_tcgen05_mma_f16_ss`` (the name from ``ir/device_calls.helper_name``)."""

from __future__ import annotations

from tirx_layout.ir.device_calls import helper_name


def call(family: str, what: str, *args: str) -> str:
    """The statement calling helper ``what`` of ``family`` with the TVMScript expressions ``args``."""
    operands = ", ".join([f'"{helper_name(family, what)}"', *args, '""'])
    return f'T.evaluate(T.call_intrin("void", "tirx.cuda.func_call", {operands}))'


def value(family: str, what: str, dtype: str, *args: str) -> str:
    """The expression calling helper ``what`` of ``family`` that returns a ``dtype`` value."""
    operands = ", ".join([f'"{helper_name(family, what)}"', *args, '""'])
    return f'T.call_intrin("{dtype}", "tirx.cuda.func_call", {operands})'


def u32(v: int) -> str:
    """A 32-bit unsigned constant."""
    return f"T.uint32({v})"


def u64(v: int) -> str:
    """A 64-bit constant as TVMScript builds it (its parser takes no literal above 2^63 - 1): two 32-bit halves."""
    return f"(T.Cast('uint64', T.uint32({v >> 32})) << T.uint64(32) | T.Cast('uint64', T.uint32({v & 0xFFFFFFFF})))"
