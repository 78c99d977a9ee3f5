"""What a lowered host function hands to its device kernel: for each argument of the kernel launch
(``call_ffi_kernel``), which parameter of the original kernel it is, found by following the host code's own data
flow (buffer declarations and bindings) back to the packed argument it was read from.

Example: TVM orders the device kernel's parameters its own way (``add_kernel`` takes ``A, B, C``, ``add`` takes
``C, A, B``); the host function says which parameter of ``add`` each pointer is. The two numbers after them are the
launch extents: 2 CTAs of 128 threads.

    >>> import tvm
    >>> from tirx_layout.sim import lower
    >>> kernel = tvm.script.from_source('''
    ... @T.prim_func
    ... def add(C: T.Buffer((256,), "float32"), A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    ...     T.device_entry()
    ...     bx = T.cta_id([2])
    ...     tx = T.thread_id([128])
    ...     C[bx * 128 + tx] = A[bx * 128 + tx] + B[bx * 128 + tx]
    ... ''')
    >>> host, (device,) = lower(kernel)
    >>> [param.name for param in device.params]
    ['A_ptr', 'B_ptr', 'C_ptr']
    >>> launch_arguments(host, "add_kernel")
    [1, 2, 0, None, None]
    >>> launch_argument_expressions(host, "add_kernel")
    [A.data, B.data, C.data, 2, 128]
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from .rewrite import walk


def _op_name(call) -> str:
    return getattr(call.op, "name", "").partition(".")[2]


def _launches(func, kernel_symbol: str) -> list:
    found = []

    def on_call(call):
        if _op_name(call) == "call_ffi_kernel" and str(call.args[0].value) == kernel_symbol:
            found.append(call)

    walk(func.body, [(tvm.ir.Call, on_call)])
    return found


def launch_argument_expressions(host, kernel_symbol: str) -> list:
    """The arguments of the launch of ``kernel_symbol`` with the host's arithmetic bindings substituted (a number
    the host computed, ``cse_v1 = M * 64``, becomes ``M * 64``), down to the variables the host read from its
    parameters (``M``, read from a tensor's shape): what a number argument is, in terms a caller who knows the
    parameters' sizes can evaluate.

    Example: for a kernel over ``A = T.match_buffer(a, (M, 64))`` whose flat view the host sizes as ``M * 64``, the
    launch ``call_ffi_kernel("k_kernel", A.data, M, cse_v1, 4, 128)`` gives ``[A.data, M, M * 64, 4, 128]``.
    """
    host_func, launch = _launch_of(host, kernel_symbol)
    arithmetic: dict = {}

    def on_bind(stmt):
        calls = []
        tvm_ffi.structural_walk(stmt.value, [(tvm.ir.Call, calls.append)])
        if not calls:
            arithmetic[stmt.var] = stmt.value

    walk(host_func.body, [(tirx.Bind, on_bind)])
    analyzer = tvm.sym.Analyzer()
    for var, value in arithmetic.items():  # program order: a binding sees the earlier ones already inlined
        analyzer.bind(var, analyzer.simplify(value))
    return [analyzer.simplify(arg) if _is_integer(arg) else arg for arg in launch.args[1:]]


def _is_integer(expr) -> bool:
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return str(dtype).startswith(("int", "uint"))


def _launch_of(host, kernel_symbol: str):
    """The host function that launches ``kernel_symbol`` and its one launch call."""
    functions = list(host.functions.values()) if isinstance(host, tvm.IRModule) else [host]
    launching = [f for f in functions if isinstance(f, tirx.PrimFunc) and _launches(f, kernel_symbol)]
    if len(launching) != 1:
        raise ValueError(f"{len(launching)} host functions launch {kernel_symbol}; expected one")
    launches = _launches(launching[0], kernel_symbol)
    if len(launches) != 1:
        raise ValueError(f"the host function launches {kernel_symbol} {len(launches)} times; expected once")
    return launching[0], launches[0]


def launch_arguments(host, kernel_symbol: str) -> list[int | None]:
    """For each argument of the launch of ``kernel_symbol`` in ``host`` (a lowered host ``PrimFunc`` with the packed
    calling convention, or a module of them), the index of the kernel parameter whose data pointer it carries, or
    ``None`` for a number (a launch extent, a constant, a symbolic extent: see :func:`launch_argument_expressions`).

    Example: for ``double(A, B)`` lowered by ``tvm.tirx.build``, the launch ``call_ffi_kernel("double_kernel",
    A.data, B.data, 2, 32)`` gives ``[0, 1, None, None]``.
    """
    host_func, launch = _launch_of(host, kernel_symbol)
    if len(host_func.params) < 2:
        raise ValueError("the host function does not take packed arguments (self, args, num_args, ...)")
    packed = host_func.params[1]
    bound: dict = {}  # var -> the expression it is bound to
    declared: dict = {}  # buffer -> the data expression of its declaration

    def on_bind(stmt):
        bound[stmt.var] = stmt.value

    def on_decl(stmt):
        declared[stmt.buffer] = stmt.data

    walk(host_func.body, [(tirx.Bind, on_bind), (tirx.DeclBuffer, on_decl)])

    def sources(expr, seen) -> set[int]:
        """The packed-argument indices ``expr`` reads (``tvm_struct_get(args, i, ...)``), through bindings."""
        found: set[int] = set()

        def on_var(var):
            # Integer variables are sizes (a view's extent, ``M``), not the pointer's data flow.
            if var in bound and not _is_integer(var) and not any(var.same_as(s) for s in seen):
                found.update(sources(bound[var], (*seen, var)))

        def on_get(call):
            if _op_name(call) == "tvm_struct_get" and call.args[0].same_as(packed):
                found.add(int(call.args[1]))
            elif _op_name(call) == "buffer_data" and call.args[0] in declared:
                found.update(sources(declared[call.args[0]], seen))

        tvm_ffi.structural_walk(expr, [(tirx.Var, on_var), (tvm.ir.Call, on_get)])
        return found

    out = []
    for arg in launch.args[1:]:
        if _is_integer(arg):
            out.append(None)
            continue
        found = sources(arg, ())
        if len(found) > 1:
            raise ValueError(f"launch argument {arg} of {kernel_symbol} reads several parameters {sorted(found)}")
        out.append(found.pop() if found else None)
    return out
