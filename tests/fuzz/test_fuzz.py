"""The fuzzer in CI: a bounded, deterministic sample (``TIRX_LAYOUT_FUZZ_CASES`` cases, 10,000 by default, under
a minute on two busy cores) with no crash, hang, wrong answer, unclear error or fault of the fuzzer itself;
``TIRX_LAYOUT_FUZZ_CASES=100000`` runs the full sweep. The supervisor's own behaviour is tested on planted cases."""

from __future__ import annotations

import os

import pytest

from fuzz import cases, supervisor, worker
from fuzz.checks import ChildCrashed

SAMPLE = int(os.environ.get("TIRX_LAYOUT_FUZZ_CASES", "10000"))
SEED = int(os.environ.get("TIRX_LAYOUT_FUZZ_SEED", "0"))


@pytest.mark.slow
def test_sample_has_no_crash_hang_wrong_answer_or_unclear_error():
    records = supervisor.sweep(SEED, SAMPLE, workers=min(2, os.cpu_count() or 1))
    print(f"\nfuzz sweep, seed {SEED}, {SAMPLE} cases\n{supervisor.table(records)}")
    assert len(records) == SAMPLE
    bad = supervisor.bad(records)
    assert not bad, supervisor.table(records) + "\n" + supervisor.problems(bad, SEED)


def test_cases_are_a_function_of_seed_and_index():
    assert cases.case(3, 17) == cases.case(3, 17)
    assert [cases.case(0, i).source for i in range(50)] != [cases.case(1, i).source for i in range(50)]


def test_every_family_is_generated():
    families = {cases.case(0, i).family for i in range(20_000)}
    assert families == {
        "construct",
        "apply",
        "algebra",
        "pickle",
        "swizzle",
        "text",
        "cute",
        "hw",
        "server",
        "cli",
        "junk",
    }


def test_a_signal_is_recorded_against_its_case_and_the_sweep_goes_on(monkeypatch, tmp_path):
    # The worker regenerates cases itself, so the planted ones go through its module: a file the worker imports.
    plant = tmp_path / "sitecustomize.py"
    plant.write_text(
        "import fuzz.cases as c\n"
        "c.case = lambda seed, index: c.Case('construct', 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)' "
        "if index == 1 else 'result = 1')\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setattr(supervisor, "case", lambda seed, index, suite="algebra": cases.Case("construct", ""))
    records = supervisor.sweep(0, 3, workers=1)
    assert [(r.index, r.outcome) for r in records] == [(0, "ok"), (1, "crash"), (2, "ok")]
    assert records[1].detail == "signal SIGSEGV"


def test_a_hang_is_recorded_and_the_worker_replaced(monkeypatch, tmp_path):
    plant = tmp_path / "sitecustomize.py"
    plant.write_text(
        "import fuzz.cases as c\n"
        "c.case = lambda seed, index: c.Case('construct', 'import time; time.sleep(60)' if index == 0 else "
        "'result = 1')\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setattr(supervisor, "case", lambda seed, index, suite="algebra": cases.Case("construct", ""))
    monkeypatch.setattr(supervisor, "DEFAULT_TIMEOUT", 3.0)
    records = supervisor.sweep(0, 2, workers=1)
    assert [(r.index, r.outcome) for r in records] == [(0, "hang"), (1, "ok")]


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (ValueError("extent must be >= 1, got 0"), "clean"),
        (KeyError("unknown axis 'nope'"), "clean"),
        (RuntimeError("anything"), "unclear"),
        (RecursionError("maximum recursion depth exceeded"), "unclear"),
        (TypeError("'Axis' object is not iterable"), "unclear"),
        (ValueError("Check failed: (x) is false"), "unclear"),
        (ValueError(""), "unclear"),
        (ChildCrashed("signal 11"), "crash"),
    ],
)
def test_outcomes_are_classified(error, outcome):
    assert worker.classify(error) == outcome
