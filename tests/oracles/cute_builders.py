"""CuTe's own descriptor and tensor-map builders as an oracle (issue 34, point 7): ``cute_oracle.cu`` beside this
file, compiled on the host by nvcc against the CUTLASS headers of the pinned ``nvidia-cutlass`` package, prints what
``UMMA::make_umma_desc``, ``SM90::GMMA::make_gmma_desc``, ``UMMA::make_instr_desc`` and ``make_tma_copy``'s
``cuTensorMapEncodeTiled`` arguments are for its cases; :func:`cute_results` builds it (once: the binary is cached
by the hash of its source, the headers, the compiler and the flags) and parses its lines.

A test that needs it skips, saying why, where nvcc or the headers are missing; a program that fails to build is an
error, never a skip. Imports nothing of ``tirx_layout``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

from .optional import PYCUTE_INSTALL

SOURCE = Path(__file__).with_name("cute_oracle.cu")
FLAGS = ("-std=c++17", "--expt-relaxed-constexpr", "-w", "-O0")
#: The sweep (every case of the project's own oracles) compiles for minutes on two cores: it runs where this
#: variable is set (CI's nightly job, or by hand), the sample in every run.
SWEEP_VARIABLE = "TIRX_LAYOUT_CUTE_SWEEP"


@dataclass
class CuteResults:
    """What the program printed, by kind. ``layouts[(bits, major, mode, rows, cols)]`` is the byte offset of every
    element (row-major), ``umma``/``gmma[(bits, major, mode, rows, cols)]`` the descriptor of each K block,
    ``idesc[(a, b, d, m, n, a_major, b_major)]`` the instruction descriptor (``idesc_pair``: of a 2x1SM atom, the
    pair's M and N), ``pair[(m, n, k)]`` the rows ``(a_rows, b_rows)`` of A and of B one CTA of the pair holds,
    ``tma[case]`` the driver arguments (``case`` = ``(dtype, major, mode, rows, cols, rows_total, cols_total)``,
    CuTe's type name for ``dtype``)."""

    layouts: dict = field(default_factory=dict)
    umma: dict = field(default_factory=dict)
    gmma: dict = field(default_factory=dict)
    idesc: dict = field(default_factory=dict)
    idesc_pair: dict = field(default_factory=dict)
    pair: dict = field(default_factory=dict)
    tma: dict = field(default_factory=dict)


def _skip_without_toolchain() -> tuple[str, Path]:
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    if nvcc is None:
        pytest.skip("nvcc is not installed: the CuTe oracle is a C++ program compiled against the CUTLASS headers")
    try:
        import cutlass_library
    except ImportError:
        pytest.skip(f"the CUTLASS headers (nvidia-cutlass) are not installed: {PYCUTE_INSTALL}")
    include = Path(cutlass_library.__file__).parent / "source" / "include"
    if not (include / "cute" / "tensor.hpp").exists():
        pytest.skip(f"nvidia-cutlass at {include.parent.parent} ships no CuTe headers under source/include")
    return nvcc, include


def _digest(nvcc: str, include: Path, flags: tuple[str, ...]) -> str:
    """The hash the binary is cached by: its source, every CUTLASS header, the compiler's version, the flags."""
    h = hashlib.sha256(SOURCE.read_bytes())
    for path in sorted(p for p in include.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(include)).encode())
        h.update(path.read_bytes())
    h.update(subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout.encode())
    h.update(" ".join(flags).encode())
    return h.hexdigest()[:20]


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tirx_layout" / "cute_oracle"


def _binary(sweep: bool) -> Path:
    nvcc, include = _skip_without_toolchain()
    flags = (*FLAGS, "-DCUTE_ORACLE_SWEEP=1") if sweep else FLAGS
    target = _cache_root() / _digest(nvcc, include, flags) / ("sweep" if sweep else "sample")
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.partial")
    polite = ["nice"] if shutil.which("nice") else []  # the build is long: leave the machine to the others first
    built = subprocess.run(
        [*polite, nvcc, *flags, f"-I{include}", "-o", str(partial), str(SOURCE)], capture_output=True, text=True
    )
    if built.returncode:
        raise RuntimeError(f"the CuTe oracle did not build ({' '.join(built.args)}):\n{built.stderr[-4000:]}")
    partial.replace(target)  # atomic: a concurrent run sees no half-written binary
    return target


def _parse(text: str) -> CuteResults:
    results = CuteResults()
    for line in text.splitlines():
        kind, *values = line.split("\t")
        if kind == "LAYOUT":
            bits, major, mode, rows, cols, offsets = values
            key = (int(bits), major, mode, int(rows), int(cols))
            results.layouts[key] = [int(v) for v in offsets.split()]
        elif kind in ("UMMA", "GMMA"):
            bits, major, mode, rows, cols, block, desc = values
            key = (int(bits), major, mode, int(rows), int(cols))
            getattr(results, kind.lower()).setdefault(key, []).append(int(desc, 16))
            assert len(getattr(results, kind.lower())[key]) == int(block) + 1, line
        elif kind in ("IDESC", "IDESC2"):
            a, b, d, m, n, a_major, b_major, desc = values
            found = results.idesc if kind == "IDESC" else results.idesc_pair
            found[(a, b, d, int(m), int(n), a_major, b_major)] = int(desc, 16)
        elif kind == "PAIR":
            m, n, k, a_rows, b_rows = (int(v) for v in values)
            results.pair[(m, n, k)] = (a_rows, b_rows)
        elif kind == "TMA":
            name, *numbers = values
            dtype, major, mode, *extents = name.split(":")
            data_type, rank, *rest = (int(v) for v in numbers)
            dims, strides = tuple(rest[:rank]), tuple(rest[rank : 2 * rank - 1])
            box, steps = tuple(rest[2 * rank - 1 : 3 * rank - 1]), tuple(rest[3 * rank - 1 : 4 * rank - 1])
            interleave, swizzle, l2, oob = rest[4 * rank - 1 :]
            results.tma[(dtype, major, mode, *(int(e) for e in extents))] = {
                "data_type": data_type,
                "rank": rank,
                "global_dim": dims,
                "global_strides": strides,
                "box_dim": box,
                "element_strides": steps,
                "interleave": interleave,
                "swizzle": swizzle,
                "l2_promotion": l2,
                "oob_fill": oob,
            }
        # anything else is CuTe's own chatter (on the host cast_smem_ptr_to_uint prints an ERROR line and gives 0)
    return results


@cache
def cute_results(sweep: bool = False) -> CuteResults:
    """CuTe's results for the suite's sample (``sweep=False``) or for every case (``sweep=True``, minutes to build
    once; skipped unless ``TIRX_LAYOUT_CUTE_SWEEP`` is set)."""
    if sweep and not os.environ.get(SWEEP_VARIABLE):
        pytest.skip(f"the full CuTe sweep builds for minutes on two cores: set {SWEEP_VARIABLE}=1 to run it")
    ran = subprocess.run([str(_binary(sweep))], capture_output=True, text=True, check=True)
    return _parse(ran.stdout)
