"""No formatter opt-outs: every line of the repository's Python is as ``ruff format`` writes it (the lint check sees to
that), with no ``fmt: skip`` or ``fmt: off`` comment taking a line out of its reach. A table that reads badly once
formatted is restructured (one entry per line, rows of related entries, a compact data string), not exempted.
(``core/ffi.pyi``, a stub that tvm-ffi's generator writes with its own markers, is no ``.py`` file.)"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Folders of the checkout that hold no source of ours: build trees and environments.
NOT_SOURCE = {"build", "node_modules", "__pycache__"}
#: A comment that turns the formatter off for a line or a region (black's and ruff's spelling, spaces optional).
OPT_OUT = re.compile(r"#\s*fmt:\s*(skip|off)\b")


def python_files() -> list[Path]:
    """Every ``.py`` file of the checkout outside hidden folders (``.git``, ``.venv``) and ``NOT_SOURCE``."""
    return sorted(
        path
        for path in ROOT.rglob("*.py")
        if not any(part.startswith(".") or part in NOT_SOURCE for part in path.relative_to(ROOT).parts[:-1])
    )


def test_the_python_files_are_found():
    folders = {path.relative_to(ROOT).parts[0] for path in python_files()}
    assert {"python", "tests", "examples", "benchmarks"} <= folders


def test_no_line_opts_out_of_the_formatter():
    opted_out = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in python_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if OPT_OUT.search(line)
    ]
    assert opted_out == [], "format these lines (restructure a table that reads badly) instead of opting out"
