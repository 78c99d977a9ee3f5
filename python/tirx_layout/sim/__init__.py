"""A CPU simulator for lowered kernels: run the device code of a kernel on numpy memories and get its outputs.

:func:`simulate` interprets a lowered device function it is given, for every CTA of its launch, every thread at once
(see ``interpreter.py``); tensor memory and the ``tcgen05`` instructions are modelled from the PTX ISA
(``tmem.py``, ``tmem_order.py``), and so is Hopper's ``wgmma`` (``wgmma.py``), never from the lowering; so are the
math functions as TVM's fast-math build computes them (``math_functions.py``), conversions with their rounding and
saturation (``conversions.py``), ``shfl.sync`` with its member mask (``shuffles.py``), atomics (``atomics.py``,
counted in ``SimResult.atomics`` apart from ``writes``) and the ``math`` helpers (``packed_math.py``). :func:`run`
is the convenience most callers want: it lowers a kernel through a TIR pipeline registered with TVM
(``"tirx_layout"`` by default: the simulator asks TVM's pipeline registry for it and imports none of the passes),
finds which kernel parameter each device argument is, and simulates. Out-of-bounds accesses raise
:class:`OutOfBounds`, unsynchronised conflicting accesses to shared or global memory raise :class:`DataRace`.

Example:
    >>> import numpy as np, tvm
    >>> from tvm.script import tirx as T
    >>> kernel = tvm.script.from_source('''
    ... @T.prim_func
    ... def double(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    ...     T.device_entry()
    ...     bx = T.cta_id([2])
    ...     tx = T.thread_id([32])
    ...     B[bx * 32 + tx] = A[bx * 32 + tx] * T.float32(2)
    ... ''')
    >>> result = run(kernel, {"A": np.arange(64, dtype=np.float32)})
    >>> result["B"][:4], int(result.writes["B"].max())
    (array([0., 2., 4., 6.], dtype=float32), 1)
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import tvm
from tvm.tirx.build import split_host_device_mods

from ..ir.host import launch_argument_expressions, launch_arguments
from ..ir.rewrite import walk
from .cluster import ClusterRun
from .interpreter import CtaInterpreter, Launch, numpy_dtype
from .memory import DataRace, Memory, OutOfBounds, SimulationError
from .tma_exec import finish as finish_tma
from .tma_exec import host_tensor_map_fields, is_tensor_map_param
from .tmem import finish as finish_tmem
from .wgmma import finish as finish_wgmma

__all__ = [
    "DataRace",
    "OutOfBounds",
    "SimResult",
    "SimulationError",
    "device_functions",
    "lower",
    "numpy_dtype",
    "run",
    "simulate",
]

#: The TIR pipeline :func:`run` lowers with unless told otherwise.
DEFAULT_PIPELINE = "tirx_layout"


@dataclass
class SimResult:
    """Every buffer parameter after the run (``result["B"]``, in its declared shape), how many times each of its
    elements was stored to (``result.writes["B"]``: plain stores) and how many atomics updated it
    (``result.atomics["B"]``)."""

    outputs: dict
    writes: dict
    #: each CTA's tensor memory (128 x 512 uint32 cells) as the CTA left it, ``None`` for a CTA that used none
    tmem: list = None
    #: per buffer parameter, how many atomic read-modify-writes each element took (apart from ``writes``)
    atomics: dict = None

    def __getitem__(self, name: str) -> np.ndarray:
        return self.outputs[name]


def lower(kernel, arch: str = "sm_100a", pipeline: str = DEFAULT_PIPELINE) -> tuple[tvm.IRModule, list]:
    """The host module and the device ``PrimFunc``s that TIR pipeline ``pipeline`` (registered with TVM) makes of
    ``kernel`` for CUDA ``arch``, as code generation receives them.

    Example:
        ``lower(kernel)[1][0].script()`` shows the device code the simulator runs.
    """
    mod = kernel if isinstance(kernel, tvm.IRModule) else tvm.IRModule({"main": kernel})
    target = tvm.target.Target({"kind": "cuda", "arch": arch})
    passes, _, _ = tvm.tirx.get_tir_pipeline(pipeline)
    mod = passes(tvm.tirx.transform.BindTarget(target.with_host("llvm"))(mod))
    host, device_mods = split_host_device_mods(mod)
    return host, [f for dev in device_mods.values() for f in dev.functions.values()]


def device_functions(kernel, arch: str = "sm_100a", pipeline: str = DEFAULT_PIPELINE) -> list:
    """The device ``PrimFunc``s of ``kernel`` (see :func:`lower`).

    Example:
        ``device_functions(kernel)[0].script()`` shows the device code the simulator runs.
    """
    return lower(kernel, arch, pipeline)[1]


def _launch_extents(func, scalars: dict) -> tuple[dict, dict, dict]:
    """The grid's (in CTAs), the cluster's and the CTA's extents per thread tag, each a constant or computed from
    the number parameters ``scalars`` (``T.cta_id([M // 128])`` with ``M`` a kernel parameter)."""
    blocks, clusters, threads = {}, {}, {}

    def on_attr(stmt):
        if stmt.attr_key == "thread_extent":
            tag = stmt.node.thread_tag
            free = tvm.tirx.analysis.undefined_vars(stmt.value)
            missing = [v.name for v in free if v not in scalars]
            if missing:
                raise SimulationError(f"launch extent of {tag} is {stmt.value}, and no argument gives {missing}")
            extent = _evaluate(stmt.value, {v: scalars[v] for v in free})
            if extent < 1:
                raise SimulationError(f"launch extent of {tag} is {stmt.value} = {extent}; a launch needs at least 1")
            if tag.startswith("threadIdx"):
                threads[tag] = extent
            elif tag.startswith("clusterCtaIdx"):
                clusters[tag] = extent
            elif tag.startswith("blockIdx"):
                blocks[tag] = extent
            else:
                raise SimulationError(f"the simulator does not model the launch parameter {tag}")

    walk(func.body, [(tvm.tirx.AttrStmt, on_attr)])
    return blocks, clusters, threads


_AXES = ("x", "y", "z")
#: How far apart the barrier intervals of two CTAs of one cluster are numbered (an interval is compared only for
#: equality, within one CTA: the CTAs of a cluster run interleaved and must never share a number).
_INTERVAL_STRIDE = 1 << 40


def _clusters(blocks: dict, clusters: dict):
    """The CTAs of the launch grouped by cluster: per cluster, per rank (x fastest), the CTA's ``blockIdx`` per
    tag and its coordinates in the cluster per ``clusterCtaIdx`` tag."""
    grid = [blocks.get(f"blockIdx.{a}", 1) for a in _AXES]
    shape = [clusters.get(f"clusterCtaIdx.{a}", 1) for a in _AXES]
    for axis, (g, c) in enumerate(zip(grid, shape, strict=True)):
        if g % c:
            raise SimulationError(
                f"the grid's dimension {_AXES[axis]} has {g} CTAs, not a multiple of the cluster's {c}; a cluster "
                "launch fails"
            )
    counts = [g // c for g, c in zip(grid, shape, strict=True)]
    for cz, cy, cx in itertools.product(*(range(n) for n in counts[::-1])):
        members = []
        for z, y, x in itertools.product(*(range(n) for n in shape[::-1])):
            coords = (cx * shape[0] + x, cy * shape[1] + y, cz * shape[2] + z)
            index = {f"blockIdx.{a}": coords[i] for i, a in enumerate(_AXES) if f"blockIdx.{a}" in blocks}
            local = {f"clusterCtaIdx.{a}": (x, y, z)[i] for i, a in enumerate(_AXES)}
            members.append((index, local))
        yield tuple(shape), members


def simulate(device, arguments: Sequence[Memory], observer=None) -> list:
    """Run the lowered device function ``device`` for every CTA of its launch; ``arguments[i]`` is the global
    :class:`~tirx_layout.sim.memory.Memory` its ``i``-th (pointer) parameter points at, updated in place, or the
    value of a number parameter (a scalar, a symbolic extent). Returns
    each CTA's tensor memory as it left it (``None`` where a CTA used none). ``observer``, if given, sees every
    shared and global access (see ``Launch.observer``).

    Example:
        ``simulate(device_functions(kernel)[0], [Memory("A", a, "global"), Memory("B", b, "global")])``
    """
    if len(arguments) != len(device.params):
        raise SimulationError(f"the device function takes {len(device.params)} arguments, {len(arguments)} given")
    by_pointer = {p: a for p, a in zip(device.params, arguments, strict=True) if isinstance(a, Memory)}
    scalars = {p: a for p, a in zip(device.params, arguments, strict=True) if not isinstance(a, Memory)}
    blocks, clusters, threads = _launch_extents(device, scalars)
    if clusters:
        return _simulate_clusters(device, blocks, clusters, threads, scalars, by_pointer, observer)
    tags = sorted(blocks)
    interval, tmem = 0, []
    for block, coords in enumerate(itertools.product(*(range(blocks[t]) for t in tags))):
        launch = Launch(block, dict(zip(tags, coords, strict=True)), threads, by_pointer, interval, observer=observer)
        interpreter = CtaInterpreter(launch)
        interpreter.env.update(scalars)
        interpreter.run(device.body)
        finish_tma(interpreter)
        finish_tmem(interpreter)
        finish_wgmma(interpreter)
        tmem.append(None if interpreter.tmem is None else interpreter.tmem.cells)
        interval = launch.interval + 1
    return tmem


def _finish(interpreter) -> None:
    finish_tma(interpreter)
    finish_tmem(interpreter)
    finish_wgmma(interpreter)


def _simulate_clusters(device, blocks, clusters, threads, scalars, by_pointer, observer) -> list:
    """:func:`simulate` for a launch with clusters: the CTAs of each cluster run together (``sim/cluster.py``),
    interleaved -- each runs until all its threads wait, then the next -- sharing the cluster's clocks; a round in
    which no CTA moves is a hang."""
    count = int(np.prod(list(threads.values()) or [1]))
    block, interval, tmem = 0, 0, []
    for shape, members in _clusters(blocks, clusters):
        run = ClusterRun(shape, count, block)
        interpreters = []
        for rank, (index, local) in enumerate(members):
            launch = Launch(
                block + rank,
                index,
                threads,
                by_pointer,
                interval + rank * _INTERVAL_STRIDE,
                observer=observer,
                cluster=run,
                rank=rank,
                cluster_index=local,
            )
            interpreter = CtaInterpreter(launch)
            interpreter.env.update(scalars)
            interpreter.sync = run.clocks
            interpreters.append(interpreter)
        run.interpreters = interpreters
        steps = [interpreter.steps(device.body) for interpreter in interpreters]
        waiting, live = [None] * len(members), list(range(len(members)))
        while live:
            moved = False
            for rank in list(live):
                interpreter = interpreters[rank]
                before = interpreter.progress
                if waiting[rank] is not None:
                    interpreter.mask = waiting[rank].mask
                try:
                    waiting[rank] = next(steps[rank])
                except StopIteration:
                    live.remove(rank)
                    run.finished[rank] = True
                    _finish(interpreter)
                    moved = True
                    continue
                moved |= interpreter.progress != before
            if live and not moved:
                stuck = "; ".join(f"CTA {rank} of the cluster: {waiting[rank].message}" for rank in live)
                raise SimulationError(f"{stuck}; no thread of the cluster that can still run completes that phase")
        tmem += [None if i.tmem is None else i.tmem.cells for i in interpreters]
        block += len(members)
        interval = max(i.launch.interval for i in interpreters) + 1
    return tmem


def _named_inputs(kernel, inputs) -> dict:
    names = [p.name for p in kernel.params]
    if isinstance(inputs, Mapping):
        unknown = set(inputs) - set(names)
        if unknown:
            raise ValueError(f"{sorted(unknown)} are not parameters of the kernel (it has {names})")
        return dict(inputs)
    if len(inputs) > len(names):
        raise ValueError(f"{len(inputs)} arrays for a kernel with {len(names)} parameters {names}")
    return dict(zip(names, inputs, strict=False))


def _buffer_shape(param):
    """A buffer parameter's declared shape; ``None`` for a scalar parameter."""
    return getattr(param, "shape", None)


def _bind_sizes(kernel, given: dict) -> dict:
    """Values of the variables in the buffer parameters' shapes (``M`` of ``T.match_buffer(a, (M, 64))``), read
    off the arrays given for them; ``ValueError`` when two arrays disagree on one."""
    sizes: dict = {}
    for param in kernel.params:
        declared = _buffer_shape(param)
        if declared is None or param.name not in given:
            continue
        shape = np.shape(given[param.name])
        if len(shape) != len(declared):
            raise ValueError(f"input {param.name} has shape {shape}, the kernel declares {list(declared)}")
        for extent, size in zip(declared, shape, strict=True):
            if isinstance(extent, tvm.tirx.Var) and sizes.setdefault(extent.name, size) != size:
                raise ValueError(
                    f"input {param.name} gives {extent.name} = {size}, an earlier input gave {sizes[extent.name]}"
                )
    return sizes


def _static_shape(param, sizes: dict) -> tuple:
    """A buffer parameter's shape with its variables replaced by ``sizes``; ``ValueError`` naming a variable no
    input array gave."""
    shape = []
    for extent in _buffer_shape(param):
        free = tvm.tirx.analysis.undefined_vars(extent) if not isinstance(extent, int) else []
        missing = [v.name for v in free if v.name not in sizes]
        if missing:
            raise ValueError(
                f"the shape {list(_buffer_shape(param))} of {param.name} uses {missing[0]}, which no input array "
                "gives; pass an array for a buffer of that shape"
            )
        shape.append(_evaluate(extent, {v: sizes[v.name] for v in free}))
    return tuple(shape)


def _host_number(expr, scalars: dict, param):
    """The value of a number the host passes its kernel (``scale``, ``M``, ``M * 64``), from the named sizes and
    scalars."""
    if isinstance(expr, tvm.tirx.Var) and expr.name in scalars:
        return scalars[expr.name]
    free = tvm.tirx.analysis.undefined_vars(expr)
    missing = [v.name for v in free if v.name not in scalars]
    if missing:
        raise SimulationError(f"device parameter {param.name} = {expr} needs {missing}, which no input gives")
    return _evaluate(expr, {v: int(scalars[v.name]) for v in free})


def _evaluate(expr, values: dict) -> int:
    """The integer ``expr`` is with each variable of ``values`` set."""
    if isinstance(expr, int):
        return expr
    analyzer = tvm.sym.Analyzer()
    for var, value in values.items():
        analyzer.bind(var, tvm.tirx.const(int(value), var.ty.dtype))
    result = analyzer.simplify(expr)
    if not isinstance(result, tvm.tirx.IntImm):
        raise SimulationError(f"{expr} is not a number the simulator can compute (left with {result})")
    return int(result.value)


def _as_pointed_to(memory: Memory, param) -> Memory:
    """``memory`` as the device parameter ``param`` points at it. Where the target has no type for the kernel's
    elements, TVM stores them as bytes of another (float8 on sm_80: a ``uint8`` pointer, every access of the device
    code a ``uint8`` one); the device code then moves the same bytes, so the simulator views the memory's bytes as
    that type (a numeric conversion would turn float8 -2.0 into uint8 garbage). Viewed back when the run ends."""
    element = np.dtype(numpy_dtype(str(param.ty.element_type.dtype)))
    if element != memory.data.dtype and element.itemsize == memory.data.dtype.itemsize:
        memory.data = memory.data.view(element)
    return memory


def run(
    kernel,
    inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray] = (),
    arch: str = "sm_100a",
    observer=None,
    pipeline: str = DEFAULT_PIPELINE,
) -> SimResult:
    """Lower ``kernel`` (see :func:`lower`) and run its device code on the CPU. ``inputs`` gives initial contents of
    buffer parameters, by name or in order; parameters not given start as zeros. A symbolic
    extent (``M`` of ``T.match_buffer(a, (M, 64))``) takes its value from the array given for its buffer; a scalar
    parameter (``n: T.int32``) takes the number given under its name. Returns every buffer parameter after the run.
    ``observer``, if given, sees every shared and global access (see ``Launch.observer``).

    Raises :class:`OutOfBounds` or :class:`DataRace` (both :class:`SimulationError`) when the kernel misbehaves.
    Example: see the module docstring.
    """
    if isinstance(kernel, tvm.IRModule):
        kernel = kernel["main"]
    given = _named_inputs(kernel, inputs)
    sizes = _bind_sizes(kernel, given)
    memories, scalars = [], dict(sizes)
    for param in kernel.params:
        if _buffer_shape(param) is None:  # a scalar parameter
            if param.name not in given:
                raise ValueError(f"scalar parameter {param.name} needs a value: run(kernel, {{{param.name!r}: ...}})")
            scalars[param.name] = given[param.name]
            memories.append(None)
            continue
        shape = _static_shape(param, sizes)
        dtype = numpy_dtype(param.dtype)
        array = np.zeros(shape, dtype) if param.name not in given else np.asarray(given[param.name])
        if array.shape != shape:
            raise ValueError(f"input {param.name} has shape {array.shape}, the kernel declares {shape}")
        memories.append(Memory(param.name, array.astype(dtype).ravel().copy(), "global"))
    host, functions = lower(kernel, arch, pipeline)
    if len(functions) != 1:
        raise SimulationError(f"the simulator runs kernels with one device function; this one has {len(functions)}")
    (device,) = functions
    symbol = str(device.attrs["global_symbol"])
    carried = launch_arguments(host, symbol)[: len(device.params)]
    expressions = launch_argument_expressions(host, symbol)
    arguments = []
    for param, index, expr in zip(device.params, carried, expressions, strict=False):
        number_type = getattr(param.ty, "dtype", None)  # a pointer parameter's type has none
        if is_tensor_map_param(param):  # the fields the host encodes into it (its global address: see tma_exec)
            arguments.append(host_tensor_map_fields(host, expr, lambda e, p=param: _host_number(e, scalars, p)))
        elif number_type is not None:  # a number: a scalar parameter, a symbolic extent, or arithmetic on them
            arguments.append(np.asarray(_host_number(expr, scalars, param), numpy_dtype(number_type))[()])
        elif index is None or memories[index] is None:
            raise SimulationError(f"device parameter {param.name} carries no buffer parameter of the kernel")
        else:
            arguments.append(_as_pointed_to(memories[index], param))
    tmem = simulate(device, arguments, observer)
    shapes = {p.name: _static_shape(p, sizes) for p in kernel.params if _buffer_shape(p) is not None}
    dtypes = {p.name: numpy_dtype(p.dtype) for p in kernel.params if _buffer_shape(p) is not None}
    outputs = {m.name: m.data.view(dtypes[m.name]).reshape(shapes[m.name]) for m in memories if m is not None}
    writes = {m.name: m.writes.reshape(shapes[m.name]) for m in memories if m is not None}
    atomics = {m.name: m.atomics.reshape(shapes[m.name]) for m in memories if m is not None}
    return SimResult(outputs, writes, tmem, atomics)
