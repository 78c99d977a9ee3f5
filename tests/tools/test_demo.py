"""The main job's report: the guide's layouts, one line per example module, the verdict last; CUDA listings only under
``--listings``; a kernel that comes out wrong, or raises, named under its module and in the verdict (status 1).

Run on small example folders written here (the real examples are built by tests/tools/test_examples.py)."""

from __future__ import annotations

import textwrap

import pytest

from tirx_layout.tools.demo import Tally, main, verdict
from tirx_layout.tools.kernel_report import find_nvcc, load_example_modules

GOOD = """
from tvm.script import tirx as T
import tirx_layout  # noqa: F401
from tirx_layout.tools.kernel_report import KernelTable


def increment():
    @T.prim_func
    def inc(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
        T.device_entry()
        tx = T.thread_id([32])
        B[tx] = A[tx] + 1.0

    return inc


KERNELS = KernelTable()
KERNELS.add("increment", lambda a: a + 1, increment)
KERNELS.add("increment_again", lambda a: a + 1, increment)
SHOWCASE = ["increment"]
"""

BAD = """
from tvm.script import tirx as T
import tirx_layout  # noqa: F401
from tirx_layout.tools.kernel_report import KernelTable
from good import increment


def broken():
    raise ValueError("this kernel cannot be made")


KERNELS = KernelTable()
KERNELS.add("wrong_answer", lambda a: a + 2, increment)
KERNELS.add("raises", lambda a: a, broken)
"""


@pytest.fixture
def examples(tmp_path, monkeypatch):
    folder = tmp_path / "examples"
    folder.mkdir()
    (folder / "good.py").write_text(textwrap.dedent(GOOD))
    (folder / "helpers_only.py").write_text("RING = 4  # no kernels: loaded by the others\n")
    monkeypatch.syspath_prepend(str(folder))
    return folder


def test_a_short_report_with_the_verdict_last(examples, capsys):
    status = main([str(examples)])
    out = capsys.readouterr().out
    lines = out.rstrip("\n").splitlines()
    assert status == 0
    assert "== Register fragment over lanes and warps ==" in out  # the guide's layouts come first
    start = lines.index(next(line for line in lines if line.startswith("== Example kernels")))
    assert lines[start + 1].split()[:5] == ["good", "2", "kernels", "sm_100a", "all"]
    assert lines[start + 2].split()[:3] == ["helpers_only", "0", "kernels"]
    assembled = "assembled" if find_nvcc() else "not assembled (no nvcc)"
    assert lines[-1] == f"verdict: 2 kernels, all correct (2 built, {assembled}, simulated equal to numpy)"
    assert "B_ptr" not in out and "==  increment ==" not in out  # no CUDA without --listings


MIXED = """
from tirx_layout.tools.kernel_report import KernelTable
from good import increment

KERNELS = KernelTable()
KERNELS.add_entry("on_sm_80", lambda: (increment(), lambda a: a + 1, None, "sm_80"))
KERNELS.add_entry("on_sm_90a", lambda: (increment(), lambda a: a + 1, None, "sm_90a"))
"""


def test_a_module_whose_entries_name_their_architectures_lists_them(examples, capsys):
    (examples / "mixed.py").write_text(textwrap.dedent(MIXED))  # as ampere_gemm.py: sm_80, sm_89, sm_120
    assert main([str(examples)]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("mixed "))
    assert line.split()[:5] == ["mixed", "2", "kernels", "sm_80,sm_90a", "all"]


def test_listings_add_the_cuda_of_the_showcase(examples, capsys):
    assert main([str(examples), "--listings"]) == 0
    out = capsys.readouterr().out
    assert "== increment ==" in out and "B_ptr" not in out.split("== increment ==")[0]
    assert "increment_again" in out and "== increment_again ==" not in out  # not in SHOWCASE: one verdict line
    assert out.rstrip("\n").splitlines()[-1].startswith("verdict: 2 kernels, all correct")


def test_a_failing_kernel_is_named_and_the_status_is_1(examples, capsys):
    (examples / "more.py").write_text(textwrap.dedent(BAD))
    assert main([str(examples)]) == 1
    captured = capsys.readouterr()
    lines = captured.out.rstrip("\n").splitlines()
    more = lines.index(next(line for line in lines if line.startswith("more ")))
    assert "2 FAILED" in lines[more]
    assert lines[more + 1].strip().startswith("wrong_answer: ") and "OUTPUT DIFFERS" in lines[more + 1]
    assert lines[more + 2].strip() == "raises: ValueError: this kernel cannot be made"
    assert lines[-1] == "verdict: 2 of 4 kernels FAILED: wrong_answer, raises"
    assert "this kernel cannot be made" in captured.err  # the trace, for whoever debugs it


def test_the_counts_are_the_modules_tables(examples):
    modules = load_example_modules(examples)
    assert {name: len(m.kernels) for name, m in modules.items()} == {"good": 2, "helpers_only": 0}
    assert modules["good"].showcase == ("increment",) and modules["helpers_only"].showcase == ()


def test_verdict_words():
    assert verdict(Tally(kernels=5, full_size=2), nvcc=False) == (
        "verdict: 7 kernels, all correct (5 built, not assembled (no nvcc), simulated equal to numpy; "
        "2 production-size: built, not assembled (no nvcc))"
    )
    assert verdict(Tally(kernels=5, full_size=2, failed=[("big_one", "FAILED: ...")])) == (
        "verdict: 1 of 7 kernels FAILED: big_one"
    )


def test_usage(capsys):
    assert main(["--help"]) == 0
    assert "--listings" in capsys.readouterr().out
    assert main(["--listing"]) == 2
    assert "usage:" in capsys.readouterr().err


def test_production_sizes_are_built_and_assembled_and_count(examples, capsys):
    (examples / "big.py").write_text(
        "from good import increment\n\n\ndef broken():\n    raise ValueError('too big to make')\n\n\n"
        "FULL_SIZE = {'increment_full': increment, 'broken_full': broken}\n"
    )
    assert main([str(examples)]) == 1
    captured = capsys.readouterr()
    lines = captured.out.rstrip("\n").splitlines()
    start = lines.index("== Production sizes: built and assembled (too large to simulate) ==")
    assert lines[start + 1].startswith("increment_full") and "built in" in lines[start + 1]
    assert lines[start + 2].split() == ["broken_full", "FAILED:", "ValueError:", "too", "big", "to", "make"]
    assert lines[-1] == "verdict: 1 of 4 kernels FAILED: broken_full"
    assert "too big to make" in captured.err
