"""What a kernel fuzz case runs: ``run_kernel`` parses the case's TVMScript, builds it for its architecture (the
``"tirx_layout"`` pipeline: a refusal is a ``ValueError`` the worker classifies, clean or unclear), assembles the
CUDA source with nvcc when asked (and nvcc is installed), simulates it against numpy on exact integer-valued inputs
and raises :class:`~fuzz.checks.WrongAnswer` when an output differs or an output element is written other than
once. Everything a case needs is in its source, so ``(seed, index)`` replays it.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np

from fuzz.checks import ReportedError, WrongAnswer
from tirx_layout import sim
from tirx_layout.script import buffer_layouts
from tirx_layout.sim import SimulationError, numpy_dtype
from tirx_layout.tools.kernel_report import nvcc_assembles
from tirx_layout.transform import build, infer_layouts

from kernels import parse


class HarnessFault(Exception):
    """The fuzzer's own fault (a kernel text TVMScript cannot parse, an input it cannot make): never the library's."""


#: The layout constructors generated kernels call: their refusals surface while TVMScript parses the kernel.
CONSTRUCTORS = ("mma_shared_layout", "wg_local_layout", "tcgen05_atom_layout", "wgmma_", "tmem_datapath_layout")
#: Integer-valued inputs every dtype holds exactly (e5m2 has 2 mantissa bits: -4..4 are exact).
VALUE_RANGE = {"float8_e4m3fn": 4, "float8_e5m2": 4, "int8": 8, "uint8": 8}


def make_input(dtype: str, shape, seed: int) -> np.ndarray:
    """Deterministic integer values that ``dtype`` holds exactly, as a ``dtype`` array."""
    if dtype == "float8_e8m0fnu":  # a block scale: a power of two, 2^-2 .. 2^2 (biased exponents 125..129)
        exponents = np.random.default_rng(seed).integers(125, 130, size=tuple(shape)).astype(np.uint8)
        return exponents.view(ml_dtypes.float8_e8m0fnu)
    bound = VALUE_RANGE.get(dtype, 8)
    low = 0 if dtype.startswith("uint") else -bound
    values = np.random.default_rng(seed).integers(low, bound + 1, size=tuple(shape))
    try:
        return values.astype(numpy_dtype(dtype))
    except Exception as err:
        raise HarnessFault(f"no numpy dtype for {dtype}: {err}") from err


def _exact(array) -> np.ndarray:
    """The values of ``array`` as int64 (integer dtypes) or float64 (every float, ml_dtypes' included)."""
    a = np.asarray(array)
    return a.astype(np.int64) if np.issubdtype(a.dtype, np.integer) else a.astype(np.float64)


#: A buffer the kernel leaves to inference: allocated with no ``layout=`` (an mbarrier array has none to infer).
OPEN_BUFFER = re.compile(r'^\s*(\w+) = T\.alloc_(?:shared|local)\((?![^\n]*(?:layout=|"uint64"))', re.MULTILINE)


def check_inference_agrees(text: str, kernel, refusal: ValueError) -> None:
    """A refusal that names a buffer inference gave its layout (inference itself succeeded) is inference proposing
    what the rules refuse: a wrong answer, not a clean refusal (issue 33, finding 2)."""
    open_buffers = OPEN_BUFFER.findall(text)
    named = [b for b in open_buffers if re.search(rf"\b{b}\b", str(refusal))]
    if not named:
        return
    try:
        chosen = buffer_layouts(infer_layouts(kernel))
    except ValueError:
        return  # inference refused the kernel itself: a clean refusal
    layouts = {b.name: str(layout) for b, layout in chosen.items() if b.name in named}
    raise WrongAnswer(f"inference gave {layouts}, which the rules then refuse: {type(refusal).__name__}: {refusal}")


def run_kernel(text: str, arch: str, inputs: dict, expected: dict, seed: int = 0, assemble: bool = False):
    """Build, (assemble,) simulate ``text`` for ``arch``; ``inputs`` maps a parameter to ``(dtype, shape)``,
    ``expected`` an output parameter to a numpy expression over the inputs (by name, as float64/int64 arrays) that
    the output must equal exactly, every element written exactly once. Returns ``None`` when it does."""
    try:
        kernel = parse(text)
    except Exception as err:
        message = str(err)
        if any(name in message for name in CONSTRUCTORS):  # a layout constructor refused its arguments: a refusal
            raise ReportedError(message.splitlines()[0]) from None
        raise HarnessFault(f"the generated kernel does not parse: {type(err).__name__}: {err}") from err
    arrays = {name: make_input(dtype, shape, seed + i) for i, (name, (dtype, shape)) in enumerate(inputs.items())}
    # Build first: a refusal (ValueError and kin) propagates to the worker, which classifies its message.
    try:
        cuda = build(kernel, arch).imports[0].inspect_source()
    except ValueError as err:
        check_inference_agrees(text, kernel, err)
        raise
    if assemble:
        assembled = nvcc_assembles(cuda, arch)
        if assembled is not None and not assembled[0]:
            raise WrongAnswer(f"built for {arch} but nvcc refuses it: {assembled[1][-400:]}")
    try:
        result = sim.run(kernel, arrays, arch)
    except SimulationError as err:
        raise WrongAnswer(f"built, then misbehaved in the simulator: {type(err).__name__}: {err}") from None
    scope = {"np": np, **{name: _exact(a) for name, a in arrays.items()}}
    for name, expression in expected.items():
        want = np.asarray(eval(expression, scope))
        got = _exact(result[name])
        writes = np.asarray(result.writes[name])
        if (writes != 1).any():
            bad = np.argwhere(writes != 1)
            first = tuple(int(c) for c in bad[0])
            raise WrongAnswer(
                f"{name}: {len(bad)} of {writes.size} elements written other than once (first {first}: "
                f"{int(writes[first])} times)"
            )
        want = np.broadcast_to(want, got.shape)
        if not np.array_equal(got, want):
            bad = np.argwhere(got != want)
            first = tuple(int(c) for c in bad[0])
            raise WrongAnswer(
                f"{name}: {len(bad)} of {got.size} elements differ from numpy (first {first}: {got[first]} vs "
                f"{want[first]})"
            )
    return None
