"""Compile example kernels for sm_100a (or the architecture an example module names) and report on them: the CUDA
lines worth reading, whether nvcc assembles the source, and whether the simulator's output equals numpy's. The main
job (``./dev.sh demo``) prints this report for every kernel in ``examples/``.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tvm

from .. import sim
from ..sim import numpy_dtype
from ..transform import build

# Lines of a kernel that show what the layouts turned into: shared-memory declarations and accesses, barriers,
# inline PTX and vector accesses.
_INTERESTING = re.compile(r"__shared__|\^|asm|tcgen05|wgmma|cta_sync|__syncthreads|uint4|float4|uint2|_ptr\[\d+\];")


class KernelTable(Mapping):
    """Kernels by name, each entry ``(PrimFunc, expected(input) -> output)`` (with a third item, the ``sizes`` of
    its symbolic extents, for a kernel that has some) made the first time it is looked up: listing an example
    module's kernels (what a test collection does) builds none of them.

    Example:
        >>> table = KernelTable()
        >>> table.add("twice", lambda a: 2 * a, str, 42)  # built by str(42) when first asked for
        >>> list(table), table["twice"][0]
        (['twice'], '42')
    """

    def __init__(self):
        self._makers: dict[str, Callable[[], tuple]] = {}
        self._made: dict[str, tuple] = {}

    def add(self, name: str, expected: Callable, build: Callable, *args, **kwargs) -> None:
        """Add kernel ``name``, built as ``build(*args, **kwargs)`` and checked against ``expected``."""
        self.add_entry(name, lambda: (build(*args, **kwargs), expected))

    def add_entry(self, name: str, make: Callable[[], tuple]) -> None:
        """Add kernel ``name`` whose whole entry ``make()`` returns."""
        if name in self._makers:
            raise ValueError(f"kernel {name!r} is in the table twice")
        self._makers[name] = make

    def __getitem__(self, name: str) -> tuple:
        if name not in self._made:
            self._made[name] = self._makers[name]()
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)


def load_example_module(path: str | Path):
    """The Python module at ``path`` (an example file), imported under ``tirx_layout_examples.<stem>``.

    Example: ``load_example_module("examples/tile_copies.py").FRAGMENTS`` are that example's fragment layouts.
    """
    path = Path(path)
    spec = importlib.util.spec_from_file_location(f"tirx_layout_examples.{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def examples_directory() -> Path:
    """Where the example kernels are: the copy installed with the package (``tirx_layout/examples``, which the wheel
    ships so that ``tirx-layout demo`` runs anywhere), else the checkout's ``examples/`` (a checkout used without
    installing, ``PYTHONPATH=python``), else ``examples/`` under the working directory.

    Example:
        >>> (examples_directory() / "tile_copies.py").is_file()
        True
    """
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "examples", package.parents[1] / "examples"):
        if candidate.is_dir():
            return candidate
    return Path("examples")


@dataclass(frozen=True)
class ExampleModule:
    """One example file as the main job reads it: its ``KERNELS`` (each entry extended by :func:`with_arch` to the
    module's ``ARCH``), the names its ``SHOWCASE`` lists (all of them when it has no such list), its ``FULL_SIZE``
    kernels (name -> a function making the kernel) and its architecture (``ARCH``, else sm_100a).

    Example:
        >>> module = load_example_modules(examples_directory())["hopper_gemm"]
        >>> module.arch, len(module.kernels) > 0, module.full_size
        ('sm_90a', True, {})
    """

    name: str
    kernels: KernelTable
    showcase: tuple[str, ...]
    full_size: Mapping[str, Callable]
    arch: str = "sm_100a"


def load_example_modules(directory: str | Path) -> dict[str, ExampleModule]:
    """The example modules of ``directory`` by file stem, in file-name order; no kernel is built until its entry is
    looked up.

    Example:
        >>> load_example_modules("/nonexistent")
        {}
    """
    modules = {}
    for path in sorted(Path(directory).glob("*.py")):
        module = load_example_module(path)
        found = getattr(module, "KERNELS", {})
        arch = getattr(module, "ARCH", None)
        kernels = KernelTable()
        for name in found:
            kernels.add_entry(name, lambda found=found, name=name, arch=arch: with_arch(found[name], arch))
        modules[path.stem] = ExampleModule(
            path.stem,
            kernels,
            tuple(getattr(module, "SHOWCASE", list(found))),
            dict(getattr(module, "FULL_SIZE", {})),
            arch or "sm_100a",
        )
    return modules


def load_examples(directory: str | Path, showcase_only: bool = False) -> KernelTable:
    """Every ``KERNELS`` entry of the modules in ``directory``: name -> (PrimFunc, expected(input) -> output), each
    built when first looked up. With ``showcase_only``, only those a module lists in ``SHOWCASE`` (all of them when
    it has no such list). A module that names its architecture (``ARCH = "sm_90a"``; else sm_100a) has its entries
    extended to ``(PrimFunc, expected, sizes, arch)``, what :func:`report` takes after the name.

    Example:
        >>> len(load_examples("/nonexistent"))
        0
    """
    kernels = KernelTable()
    for module in load_example_modules(directory).values():
        for name in module.showcase if showcase_only else module.kernels:
            kernels.add_entry(name, lambda table=module.kernels, name=name: table[name])
    return kernels


def with_arch(entry: tuple, arch: str | None) -> tuple:
    """A kernel table ``entry`` (``(kernel, expected)`` or ``(kernel, expected, sizes)``) extended to ``(kernel,
    expected, sizes, arch)`` for an ``arch``; unchanged for ``None`` (the default architecture).

    Example:
        >>> with_arch(("k", "e"), "sm_90a"), with_arch(("k", "e", {"M": 4}), None)
        (('k', 'e', None, 'sm_90a'), ('k', 'e', {'M': 4}))
    """
    if arch is None:
        return entry
    return (*entry, None, arch) if len(entry) == 2 else (*entry, arch)


def load_full_size(directory: str | Path) -> dict[str, tuple[Callable, str]]:
    """Every ``FULL_SIZE`` entry of the modules in ``directory``: name -> (a function making the kernel, the
    architecture its module names, ``ARCH``, else sm_100a). These are kernels at production sizes, built and
    assembled by the main job (``assemble_report(name, *entry)``) but too large to simulate (the same kernel
    families are simulated at small sizes through ``KERNELS``).

    Example:
        >>> load_full_size("/nonexistent")
        {}
    """
    return {
        name: (make, module.arch)
        for module in load_example_modules(directory).values()
        for name, make in module.full_size.items()
    }


def assemble_report(name: str, make: Callable, arch: str = "sm_100a") -> tuple[bool, str]:
    """Make kernel ``name``, build it for ``arch`` and assemble it with nvcc: ``(ok, one line)`` with the times
    of each step (``ok`` when nvcc assembles it; nvcc missing: ``(True, ...)`` with "not assembled").

    Example:
        >>> import tvm
        >>> from tvm.script import tirx as T
        >>> @T.prim_func
        ... def k(A: T.Buffer((32,), "float32")):
        ...     T.device_entry()
        ...     tx = T.thread_id([32])
        ...     A[tx] = A[tx] + 1.0
        >>> ok, line = assemble_report("k", lambda: k)
        >>> ok, line.startswith("k")
        (True, True)
    """
    start = time.perf_counter()
    cuda = build(make(), arch).imports[0].inspect_source()
    built = time.perf_counter() - start
    assembled = nvcc_assembles(cuda, arch)
    total = time.perf_counter() - start
    if assembled is None:
        return True, f"{name:40} built in {built:.1f} s; not assembled (no nvcc)"
    verdict = "assembled" if assembled[0] else f"NOT ASSEMBLED: {assembled[1][-300:]}"
    return assembled[0], f"{name:40} built in {built:.1f} s, {verdict} for {arch} ({total:.1f} s in all)"


def kernel_source(cuda: str) -> str:
    """The ``__global__`` function definition(s) of generated CUDA, without the header TVM prepends.

    Example:
        >>> kernel_source('#include <x>\\nextern "C" __global__ void k();\\nextern "C" __global__ void k() {}')
        'extern "C" __global__ void k() {}'
    """
    return cuda[cuda.rindex('extern "C" __global__') :].strip()


def interesting_lines(cuda: str) -> list[str]:
    """The kernel lines that show the layouts at work (shared declarations and accesses, barriers, PTX).

    Example:
        >>> interesting_lines('extern "C" __global__ void k() {\\n  __shared__ float S[4];\\n  int x = 1;\\n}')
        ['__shared__ float S[4];']
    """
    return [line.strip() for line in kernel_source(cuda).splitlines()[1:] if _INTERESTING.search(line)]


def find_nvcc() -> str | None:
    """Path of nvcc, or ``None``.

    Example:
        >>> find_nvcc() is None or find_nvcc().endswith("nvcc")
        True
    """
    return shutil.which("nvcc") or next((p for p in ("/usr/local/cuda/bin/nvcc",) if Path(p).exists()), None)


def nvcc_assembles(cuda: str, arch: str = "sm_100a") -> tuple[bool, str] | None:
    """``(ok, messages)`` from ``nvcc -arch=<arch> -cubin -Xptxas -v`` on the source (the messages hold ptxas's
    resource lines: :func:`local_memory` reads them); ``None`` where nvcc is not installed.

    Example:
        >>> assembled = nvcc_assembles('extern "C" __global__ void k() {}')
        >>> assembled is None or assembled[0]  # (the messages may hold nvcc's warnings)
        True
    """
    nvcc = find_nvcc()
    if nvcc is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "kernel.cu"
        source.write_text(cuda)
        done = subprocess.run(
            [nvcc, f"-arch={arch}", "-cubin", "-Xptxas", "-v", "-o", str(Path(tmp) / "k.cubin"), str(source)],
            capture_output=True,
            text=True,
            timeout=600,
        )
    return done.returncode == 0, done.stderr.strip()


def local_memory(messages: str) -> dict[str, int]:
    """What ``ptxas -v`` says a kernel keeps in local memory (the sum over the kernel's functions): its stack frame and
    its spill stores and loads, in bytes. A fragment that stays in registers needs none of them.

    Example:
        >>> local_memory("ptxas info    : Used 40 registers, 16 bytes stack frame, 8 bytes spill stores, "
        ...              "8 bytes spill loads")
        {'stack frame': 16, 'spill stores': 8, 'spill loads': 8}
    """
    found = {}
    for what in ("stack frame", "spill stores", "spill loads"):
        found[what] = sum(int(n) for n in re.findall(rf"(\d+) bytes {what}", messages))
    return found


def sample_input(kernel, sizes: Mapping[str, int] | None = None, index: int = 0) -> np.ndarray:
    """A deterministic input for a kernel's parameter number ``index`` (the first by default), exactly representable
    in the 16- and 32-bit float types (narrower ones round it, once, when it is made): small integers in [-30, 30],
    a different sequence for each parameter; for ``float8_e8m0fnu`` (block-scaling factors) powers of two 2^-3..2^3.
    ``sizes`` gives the symbolic extents of its shape (``{"M": 100}`` for ``T.match_buffer(a, (M, 64))``).

    Example:
        ``sample_input(kernel)`` for a kernel whose first parameter is ``T.Buffer((2, 3), "float16")`` is
        ``[[-30, -23, -16], [-9, -2, 5]]`` in float16; ``sample_input(kernel, index=1)`` for a second parameter of
        that shape is ``[[-17, -10, -3], [4, 11, 18]]``.
    """
    param = kernel.params[index]
    sizes = dict(sizes or {})
    shape = []
    for e in param.shape:
        if isinstance(e, tvm.tirx.Var) and e.name not in sizes:
            raise ValueError(f"{param.name} has the symbolic extent {e.name}; give its size: sizes={{'{e.name}': ...}}")
        shape.append(sizes[e.name] if isinstance(e, tvm.tirx.Var) else int(e))
    values = ((np.arange(int(np.prod(shape))) * 7 + 13 * index) % 61 - 30).reshape(shape)
    if str(param.dtype) == "float8_e8m0fnu":  # a power-of-two scale (no sign, no zero): 2^-3 .. 2^3
        return np.exp2(values % 7 - 3).astype(numpy_dtype(param.dtype))
    return values.astype(numpy_dtype(param.dtype))


@dataclass(frozen=True)
class Expected:
    """What a kernel computes when one input and exact equality do not say it: ``compute(*inputs)`` from the
    kernel's first ``inputs`` parameters (each a :func:`sample_input`), its result compared within ``rtol`` and
    ``atol`` (``numpy.allclose``; both 0: exactly). ``given`` names inputs that are not samples (a scale of 2^-9,
    which a sample's small integer cannot stand for): ``{parameter name: array}``; ``accumulated`` names outputs that
    atomics add into from zero. A table entry may hold one in place of the plain function.

    Example:
        >>> gemm = Expected(lambda a, b: a @ b.T, inputs=2)
        >>> gemm(np.eye(2), np.ones((3, 2))).shape, gemm.exact
        ((2, 3), True)
    """

    compute: Callable
    inputs: int = 1
    rtol: float = 0.0
    atol: float = 0.0
    given: Mapping[str, np.ndarray] | None = None
    #: outputs made by atomic read-modify-writes from zero (a reduction across CTAs): each element must take at
    #: least one atomic and no plain store, instead of exactly one store
    accumulated: tuple[str, ...] = ()

    def __call__(self, *inputs):
        return self.compute(*inputs)

    def input_arrays(self, kernel, sizes: Mapping[str, int] | None = None) -> list[np.ndarray]:
        """The kernel's first :attr:`inputs` parameters' values: :attr:`given` ones, else :func:`sample_input`.

        Example:
            >>> import tvm
            >>> A, s = tvm.tirx.decl_buffer((2,), "float32", "A"), tvm.tirx.decl_buffer((1,), "float32", "s")
            >>> check = Expected(lambda a, s: a * s, inputs=2, given={"s": np.array([0.5], np.float32)})
            >>> [x.tolist() for x in check.input_arrays(tvm.tirx.PrimFunc([A, s], tvm.tirx.Evaluate(0)))]
            [[-30.0, -23.0], [0.5]]
        """
        given = dict(self.given or {})
        return [
            given.get(kernel.params[i].name) if kernel.params[i].name in given else sample_input(kernel, sizes, i)
            for i in range(self.inputs)
        ]

    @property
    def exact(self) -> bool:
        """Whether the result must equal numpy's exactly."""
        return self.rtol == 0 and self.atol == 0


@dataclass
class KernelReport:
    """What :func:`report` found for one kernel."""

    name: str
    cuda: str
    assembled: tuple[bool, str] | None
    matches: bool
    written_once: bool
    arch: str = "sm_100a"

    @property
    def local_memory(self) -> dict[str, int] | None:
        """What ptxas keeps in local memory (:func:`local_memory`); ``None`` where nvcc is not installed."""
        return None if self.assembled is None else local_memory(self.assembled[1])

    @property
    def in_registers(self) -> bool:
        """Whether ptxas kept the kernel's fragments in registers: no stack frame, no spills (``True`` without
        nvcc, which cannot tell)."""
        return self.local_memory is None or not any(self.local_memory.values())

    @property
    def ok(self) -> bool:
        """Whether nvcc (where installed) and the simulator are both satisfied: the kernel is correct. What ptxas
        keeps in local memory is in the verdict, and the tests require none (``tests/tools/test_examples.py``)."""
        return self.matches and self.written_once and (self.assembled is None or self.assembled[0])

    def verdict(self) -> str:
        """nvcc's and the simulator's verdicts, in one line."""
        nvcc = (
            "nvcc not installed"
            if self.assembled is None
            else (f"nvcc -arch={self.arch}: ok" if self.assembled[0] else f"nvcc FAILED: {self.assembled[1]}")
        )
        verdict = "output equals numpy" if self.matches else "OUTPUT DIFFERS from numpy"
        once = "every output element written once" if self.written_once else "SOME ELEMENTS WRITTEN 0 OR 2+ TIMES"
        if not self.in_registers:
            local = ", ".join(f"{n} bytes {what}" for what, n in self.local_memory.items() if n)
            nvcc += f" (LOCAL MEMORY: {local})"
        return f"{nvcc}; simulator: {verdict}, {once}"

    def __str__(self) -> str:
        lines = "\n".join("    " + line for line in interesting_lines(self.cuda))
        return f"== {self.name} ==\n{lines}\n  {self.verdict()}"


def _close(got: np.ndarray, wanted, check: Expected) -> bool:
    got, wanted = got.astype(np.float64), np.asarray(wanted).astype(np.float64)
    if check.exact:
        return np.array_equal(got, wanted)
    return got.shape == wanted.shape and bool(np.allclose(got, wanted, rtol=check.rtol, atol=check.atol))


def _written_once(result, name: str, accumulated: bool) -> bool:
    """Every element of output ``name`` stored exactly once, or (``accumulated``) updated by atomics only."""
    if accumulated:
        return bool(((result.writes[name] == 0) & (result.atomics[name] >= 1)).all())
    return bool((result.writes[name] == 1).all())


def report(name: str, kernel, expected, sizes: Mapping[str, int] | None = None, arch: str = "sm_100a") -> KernelReport:
    """Build ``kernel`` for ``arch``, assemble it, simulate it on :func:`sample_input` (``sizes``: its symbolic
    extents) and compare with ``expected`` (the second parameter's value, or ``{output name: value}`` for several
    outputs; an :class:`Expected` for several inputs or a tolerance). A table entry is ``(kernel, expected)`` or,
    for a kernel with symbolic extents, ``(kernel, expected, sizes)``: ``report(name, *entry)``.

    Example:
        ``print(report("staging", kernel, lambda a: a.T))`` prints the kernel's shared-memory lines and the verdicts.
    """
    cuda = build(kernel, arch).imports[0].inspect_source()
    check = expected if isinstance(expected, Expected) else Expected(expected)
    inputs = check.input_arrays(kernel, sizes)
    result = sim.run(kernel, inputs, arch)
    wanted = check(*inputs)
    if not isinstance(wanted, dict):  # one output: the parameter after the inputs
        wanted = {kernel.params[check.inputs].name: wanted}
    matches = all(_close(result[n], w, check) for n, w in wanted.items())
    written_once = all(_written_once(result, n, n in check.accumulated) for n in wanted)
    return KernelReport(name, cuda, nvcc_assembles(cuda, arch), matches, written_once, arch)
