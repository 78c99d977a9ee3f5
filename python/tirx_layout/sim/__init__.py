"""A CPU simulator for lowered kernels: run the device code of a kernel on numpy memories and get its outputs.

The kernel goes through the same ``"tirx_layout"`` pipeline that ``tvm.tirx.build`` runs; the device function that
comes out is executed for every CTA of its grid, every thread at once (see ``interpreter.py``). Out-of-bounds
accesses raise :class:`OutOfBounds`, unsynchronised conflicting accesses to shared or global memory raise
:class:`DataRace`.

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

from ..transform._rewrite import walk
from ..transform.pipeline import tirx_layout_pipeline
from .interpreter import CtaInterpreter, Launch, numpy_dtype
from .tmem import finish as finish_tmem
from .memory import DataRace, Memory, OutOfBounds, SimulationError

__all__ = ["DataRace", "OutOfBounds", "SimResult", "SimulationError", "device_functions", "run"]


@dataclass
class SimResult:
    """Every buffer parameter after the run (``result["B"]``, in its declared shape) and how many times each of its
    elements was stored to (``result.writes["B"]``)."""

    outputs: dict
    writes: dict
    #: each CTA's tensor memory (128 x 512 uint32 cells) as the CTA left it, ``None`` for a CTA that used none
    tmem: list = None

    def __getitem__(self, name: str) -> np.ndarray:
        return self.outputs[name]


def device_functions(kernel, arch: str = "sm_100a") -> list:
    """The device ``PrimFunc``s the ``"tirx_layout"`` pipeline makes of ``kernel`` for CUDA ``arch``, as CUDA code
    generation receives them.

    Example:
        ``device_functions(kernel)[0].script()`` shows the device code the simulator runs.
    """
    mod = kernel if isinstance(kernel, tvm.IRModule) else tvm.IRModule({"main": kernel})
    target = tvm.target.Target({"kind": "cuda", "arch": arch})
    passes, _, _ = tirx_layout_pipeline()
    mod = passes(tvm.tirx.transform.BindTarget(target.with_host("llvm"))(mod))
    _, device_mods = split_host_device_mods(mod)
    return [f for dev in device_mods.values() for f in dev.functions.values()]


def _launch_extents(func) -> tuple[dict, dict]:
    blocks, threads = {}, {}

    def on_attr(stmt):
        if stmt.attr_key == "thread_extent":
            tag = stmt.node.thread_tag
            if not isinstance(stmt.value, tvm.tirx.IntImm):
                raise SimulationError(f"launch extent of {tag} is not a constant: {stmt.value}")
            (threads if tag.startswith("threadIdx") else blocks)[tag] = int(stmt.value.value)

    walk(func.body, [(tvm.tirx.AttrStmt, on_attr)])
    return blocks, threads


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


def run(kernel, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray] = (), arch: str = "sm_100a",
        observer=None) -> SimResult:  # fmt: skip
    """Lower ``kernel`` and run its device code on the CPU. ``inputs`` gives initial contents of buffer parameters,
    by name or in order; parameters not given start as zeros. Returns every buffer parameter after the run.
    ``observer``, if given, sees every shared and global access (see ``Launch.observer``).

    Raises :class:`OutOfBounds` or :class:`DataRace` (both :class:`SimulationError`) when the kernel misbehaves.
    Example: see the module docstring.
    """
    if isinstance(kernel, tvm.IRModule):
        kernel = kernel["main"]
    given = _named_inputs(kernel, inputs)
    memories = {}
    for param in kernel.params:
        shape = tuple(int(e) for e in param.shape)
        dtype = numpy_dtype(param.dtype)
        array = np.zeros(shape, dtype) if param.name not in given else np.asarray(given[param.name])
        if array.shape != shape:
            raise ValueError(f"input {param.name} has shape {array.shape}, the kernel declares {shape}")
        memories[param.name] = Memory(param.name, array.astype(dtype).ravel().copy(), "global")
    functions = device_functions(kernel, arch)
    if len(functions) != 1:
        raise SimulationError(f"the simulator runs kernels with one device function; this one has {len(functions)}")
    (device,) = functions
    by_pointer = {}
    for p in device.params:
        name = p.name[: -len("_ptr")] if p.name.endswith("_ptr") else p.name
        if name not in memories:
            raise SimulationError(f"device parameter {p.name} matches no buffer parameter of the kernel")
        by_pointer[p] = memories[name]
    blocks, threads = _launch_extents(device)
    tags = sorted(blocks)
    interval, tmem = 0, []
    for block, coords in enumerate(itertools.product(*(range(blocks[t]) for t in tags))):
        launch = Launch(block, dict(zip(tags, coords, strict=True)), threads, by_pointer, interval, observer=observer)
        interpreter = CtaInterpreter(launch)
        interpreter.run(device.body)
        finish_tmem(interpreter)
        tmem.append(None if interpreter.tmem is None else interpreter.tmem.cells)
        interval = launch.interval + 1
    outputs = {p.name: memories[p.name].data.reshape(tuple(int(e) for e in p.shape)) for p in kernel.params}
    writes = {p.name: memories[p.name].writes.reshape(tuple(int(e) for e in p.shape)) for p in kernel.params}
    return SimResult(outputs, writes, tmem)
