"""README.md's Python blocks run as written, and the numbers it states are the tools'.

Every fenced ```` ```python ```` block of README.md is one of three kinds, told apart by the block itself:

* **a session**: the block starts with ``>>>``. It runs as a doctest (what it shows after each prompt must be what
  the line prints; ``...`` stands for any text, and line breaks count as spaces), in a namespace of its own.
* **a fragment**: the line before the fence is ``<!-- fragment: PATH NAME... -->``, a piece of a bigger program that
  PATH (a file of the repository) holds complete; the test checks that PATH exists and contains each NAME (the
  kernel or function the piece comes from).
* **a program**: anything else. It is written to a file (TVMScript reads a kernel's source) and run in a fresh
  namespace; it must end without an exception, and its ``assert`` lines are its checks. A program shows what it
  computes with an ``assert``, not with a comment (a comment is not checked).

A new README section is covered without touching this file; a block that is none of these fails, and the message
says how to mark it.
"""

from __future__ import annotations

import doctest
import re
import runpy
from dataclasses import dataclass
from pathlib import Path

import pytest

from tirx_layout.tools.kernel_report import load_example_modules

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
EXAMPLES = ROOT / "examples"

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
FRAGMENT = re.compile(r"^<!--\s*fragment:\s*(\S+)((?:\s+[\w.]+)*)\s*-->\s*$")
PYTHON = ("python", "py", "python3", "pycon")


@dataclass(frozen=True)
class Block:
    """One fenced Python block: its first line number in README.md, its source, and the marker line before it."""

    line: int
    source: str
    before: str

    @property
    def kind(self) -> str:
        """``session``, ``fragment`` or ``program``."""
        if FRAGMENT.match(self.before):
            return "fragment"
        return "session" if self.source.lstrip().startswith(">>>") else "program"


def python_blocks(text: str) -> list[Block]:
    """The fenced Python blocks of a markdown text, with the line before each fence.

    Example: a session and a fragment.
        >>> [b.kind for b in python_blocks("```python\\n>>> 1\\n1\\n```\\n<!-- fragment: x.py k -->\\n```py\\nk()\\n```\\n")]
        ['session', 'fragment']
    """
    blocks = []
    for match in FENCE.finditer(text):
        if match.group(1).lower() not in PYTHON:
            continue
        line = text.count("\n", 0, match.start()) + 1
        previous = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        blocks.append(Block(line, match.group(2), previous.strip()))
    return blocks


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


def _ids(kind: str) -> list:
    return [pytest.param(b, id=f"line-{b.line}") for b in BLOCKS if b.kind == kind]


@pytest.mark.parametrize("block", _ids("program"))
def test_program_runs_as_written(block, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # whatever a block writes stays out of the checkout
    path = tmp_path / f"readme_line_{block.line}.py"
    path.write_text(block.source, encoding="utf-8")
    try:
        runpy.run_path(str(path), run_name="__main__")
    except Exception as err:
        pytest.fail(
            f"README.md line {block.line}: the block stops at {type(err).__name__}: {err}\n"
            "Make it complete (imports, inputs), make it a >>> session, or mark it as a piece of a bigger program "
            "with `<!-- fragment: PATH NAME -->` on the line before the fence (PATH holding it complete).",
            pytrace=False,
        )


@pytest.mark.parametrize("block", _ids("session"))
def test_session_prints_what_it_shows(block, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    test = doctest.DocTestParser().get_doctest(
        block.source, {}, f"README.md line {block.line}", str(README), block.line
    )
    output: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    result = runner.run(test, out=output.append)
    assert result.failed == 0, "".join(output)


@pytest.mark.parametrize("block", _ids("fragment"))
def test_fragment_is_shown_complete_where_it_says(block):
    path, names = FRAGMENT.match(block.before).groups()
    source = ROOT / path
    assert source.is_file(), f"README.md line {block.line}: the fragment's complete program {path} does not exist"
    text = source.read_text(encoding="utf-8")
    missing = [name for name in names.split() if name not in text]
    assert not missing, f"README.md line {block.line}: {path} does not contain {missing}"


def test_every_block_is_covered():
    # Every Python block is one of the three kinds (a mistyped marker would make a fragment a program, which then
    # fails on its own), and the README has blocks of each kind, so none of the three tests above is empty.
    assert {b.kind for b in BLOCKS} == {"session", "fragment", "program"}
    markers = [line for line in README.read_text(encoding="utf-8").splitlines() if "fragment:" in line]
    assert all(FRAGMENT.match(line.strip()) for line in markers), markers


def test_the_kernel_counts_it_states_are_the_examples():
    # "The 33 kernels of `examples/hopper_gemm.py`": each such count is the module's KERNELS (listing builds none).
    modules = load_example_modules(EXAMPLES)
    text = README.read_text(encoding="utf-8")
    stated = re.findall(r"(\d+) kernels of `examples/(\w+)\.py`", text)
    assert stated, "the README states no kernel count; drop this test if that is on purpose"
    assert {name: int(n) for n, name in stated} == {name: len(modules[name].kernels) for _, name in stated}
