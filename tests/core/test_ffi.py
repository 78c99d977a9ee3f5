"""The core library: loaded the way tvm-ffi recommends, and its type stubs current with its registrations."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tirx_layout.core import ffi

STUBS = Path(__file__).parents[2] / "python" / "tirx_layout" / "core" / "ffi.pyi"


def test_the_core_is_found_through_the_installed_distribution():
    # tvm_ffi.libinfo reads the wheel's file record, so the library that runs is the one pip installed with us.
    assert Path(ffi._library._name).resolve() == Path(ffi.__file__).with_name("libtirx_layout.so").resolve()


def test_every_declared_function_is_callable():
    # init_ffi_api exposes each "tirx_layout.X" global function as ffi.X; the stubs declare the same names.
    declared = re.findall(r"^\s+def (\w+)\(", STUBS.read_text(), flags=re.MULTILINE)
    assert len(declared) > 50
    assert [name for name in declared if not callable(getattr(ffi, name, None))] == []


def test_type_stubs_match_the_registered_functions():
    checked = subprocess.run(
        [sys.executable, "-m", "tvm_ffi.stub.cli", "--check", str(STUBS), "--dlls", ffi._library._name],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, (
        f"{STUBS} is out of date; regenerate it with: python -m tvm_ffi.stub.cli {STUBS} --dlls <libtirx_layout.so>\n"
        + checked.stdout
        + checked.stderr
    )
