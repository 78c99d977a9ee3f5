"""Run kernels on a real CUDA GPU through the TVM runtime: which architecture to build for, the launch, the timing.

Used by ``tests/gpu`` and ``benchmarks/bench_gpu.py``. Everything here asks TVM whether a device exists
(``tvm.cuda(0).exist``) and never fails to import without one.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping, Sequence

import numpy as np
import tvm

from ..hw.targets import ARCH_SPECIFIC_SM, parse_arch
from ..sim import numpy_dtype
from ..transform import build
from .kernel_report import find_nvcc


def cuda_available() -> bool:
    """Whether TVM sees a CUDA device (``tvm.cuda(0).exist``); ``False`` on a machine without CUDA.

    Example:
        >>> isinstance(cuda_available(), bool)
        True
    """
    try:
        return bool(tvm.cuda(0).exist)
    except Exception:  # a runtime built without CUDA, or no driver: no device either way
        return False


def arch_for(compute_version: str) -> str:
    """The architecture to build for on a device of ``compute_version`` (``"9.0"``): ``sm_XY``, with the ``a``
    suffix where the PTX ISA has one (the features of that exact chip: ``wgmma`` on sm_90a, ``tcgen05`` on sm_100a).

    Example:
        >>> arch_for("9.0"), arch_for("10.0"), arch_for("8.6")
        ('sm_90a', 'sm_100a', 'sm_86')
    """
    major, minor = (int(part) for part in str(compute_version).split("."))
    sm = major * 10 + minor
    return str(parse_arch(f"sm_{sm}{'a' if sm in ARCH_SPECIFIC_SM else ''}"))


def cuda_compiler() -> str:
    """Which compiler TVM's CUDA runtime will use to turn a built module's CUDA source into a cubin when it is loaded
    (``tvm_callback_cuda_compile``, read from ``TVM_CUDA_COMPILE_MODE``): a mode set by the user is kept; otherwise
    ``"nvcc"`` where nvcc is installed (the toolchain the tests already assemble with), else ``"nvrtc"`` where the
    ``cuda-bindings`` package TVM's NVRTC path imports is installed (``pip install "apache-tvm[cuda]"``). The choice
    is written to ``TVM_CUDA_COMPILE_MODE``; ``RuntimeError`` naming both ways when neither is there.

    Example (a mode the user set is kept):
        >>> import os, unittest.mock
        >>> with unittest.mock.patch.dict(os.environ, {"TVM_CUDA_COMPILE_MODE": "NVRTC"}):
        ...     cuda_compiler()
        'nvrtc'
    """
    chosen = os.environ.get("TVM_CUDA_COMPILE_MODE")
    if chosen:
        return chosen.lower()
    if find_nvcc() is not None:
        chosen = "nvcc"
    elif importlib.util.find_spec("cuda") is not None and importlib.util.find_spec("cuda.bindings") is not None:
        chosen = "nvrtc"
    else:
        raise RuntimeError(
            "TVM compiles a kernel's CUDA source when it is loaded, with nvcc (not on PATH or in /usr/local/cuda) "
            'or NVRTC (the cuda-bindings package: pip install "apache-tvm[cuda]"); neither is installed'
        )
    os.environ["TVM_CUDA_COMPILE_MODE"] = chosen
    return chosen


def device_arch() -> str:
    """The architecture of CUDA device 0 (:func:`arch_for` its compute version); ``RuntimeError`` without one.

    Example: ``device_arch()`` is ``"sm_90a"`` on an H100 or H200.
    """
    if not cuda_available():
        raise RuntimeError("no CUDA device: tvm.cuda(0).exist is False")
    cuda_compiler()
    return arch_for(tvm.cuda(0).compute_version)


def device_name() -> str:
    """The name of CUDA device 0 (``"NVIDIA H200"``), ``""`` without one.

    Example:
        >>> isinstance(device_name(), str)
        True
    """
    return str(tvm.cuda(0).device_name) if cuda_available() else ""


def _shape(param, given: Mapping[str, np.ndarray]) -> tuple:
    shape = []
    for extent in param.shape:
        if not isinstance(extent, tvm.tirx.IntImm):
            raise ValueError(
                f"{param.name} has the symbolic extent {extent}; give an array for it (its shape sets the extent)"
            )
        shape.append(int(extent))
    return tuple(shape)


def launch(
    kernel,
    inputs: Mapping[str, np.ndarray],
    arch: str | None = None,
    fill=0,
    module=None,
) -> dict[str, np.ndarray]:
    """Build ``kernel`` for ``arch`` (the device's by default), run it once on CUDA device 0 and return every buffer
    parameter after the run, by name. ``inputs`` gives arrays (and scalar parameters) by name; a buffer parameter
    not given starts filled with ``fill`` (a sentinel: an element the kernel never writes keeps it). ``module`` is
    an already built ``kernel`` (its build is reused).

    Example: ``launch(kernel, {"A": a})["B"]`` is the kernel's output ``B`` computed on the GPU.
    """
    arch = arch or device_arch()
    cuda_compiler()
    module = module if module is not None else build(kernel, arch)
    dev = tvm.cuda(0)
    args, tensors = [], {}
    for param in kernel.params:
        name = param.name
        if getattr(param, "shape", None) is None:  # a scalar parameter
            if name not in inputs:
                raise ValueError(f"scalar parameter {name} has no value; give it in inputs")
            args.append(inputs[name])
            continue
        dtype = numpy_dtype(param.dtype)
        if name in inputs:
            array = np.asarray(inputs[name]).astype(dtype)
        else:
            array = np.full(_shape(param, inputs), fill, dtype)
        tensors[name] = tvm.runtime.tensor(np.ascontiguousarray(array), dev)
        args.append(tensors[name])
    module[_entry(kernel)](*args)
    dev.sync()
    return {name: tensor.numpy() for name, tensor in tensors.items()}


def _entry(kernel) -> str:
    attrs = kernel.attrs
    return str(attrs["global_symbol"]) if attrs is not None and "global_symbol" in attrs else "main"


def time_launch(
    kernel, inputs: Mapping[str, np.ndarray], arch: str | None = None, repeat: int = 20, module=None
) -> float:
    """The median time of one run of ``kernel`` on CUDA device 0 in seconds (TVM's ``time_evaluator``: ``repeat``
    measurements, each the mean of enough runs to fill 50 ms, after one warm-up run); ``module``: ``kernel``
    already built.

    Example: ``2 * a.nbytes / time_launch(copy, {"A": a})`` is a copy kernel's achieved bandwidth in bytes/s.
    """
    arch = arch or device_arch()
    cuda_compiler()
    module = module if module is not None else build(kernel, arch)
    dev = tvm.cuda(0)
    args = []
    for param in kernel.params:
        if getattr(param, "shape", None) is None:
            args.append(inputs[param.name])
            continue
        dtype = numpy_dtype(param.dtype)
        array = inputs[param.name] if param.name in inputs else np.zeros(_shape(param, inputs), dtype)
        args.append(tvm.runtime.tensor(np.ascontiguousarray(np.asarray(array).astype(dtype)), dev))
    timer = module.time_evaluator(_entry(kernel), dev, number=1, repeat=repeat, min_repeat_ms=50)
    return float(np.median(timer(*args).results))


def matches(got: np.ndarray, wanted, rtol: float = 0.0, atol: float = 0.0) -> bool:
    """Whether ``got`` equals ``wanted`` (exactly when both tolerances are 0), compared in float64.

    Example:
        >>> matches(np.array([1.0, 2.0]), [1, 2]), matches(np.array([1.0]), [1.5], atol=0.25)
        (True, False)
    """
    got, wanted = np.asarray(got).astype(np.float64), np.asarray(wanted).astype(np.float64)
    if got.shape != wanted.shape:
        return False
    return bool(np.array_equal(got, wanted) if rtol == 0 and atol == 0 else np.allclose(got, wanted, rtol, atol))


__all__: Sequence[str] = [
    "arch_for",
    "cuda_available",
    "cuda_compiler",
    "device_arch",
    "device_name",
    "launch",
    "matches",
    "time_launch",
]
