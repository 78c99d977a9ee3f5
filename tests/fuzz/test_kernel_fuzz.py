"""The kernel fuzzer in CI: a bounded, deterministic sample of random kernels (``TIRX_LAYOUT_KERNEL_FUZZ_SAMPLE``
cases, 100 by default: about 30 s on two busy cores), each built, sometimes assembled, simulated against
numpy, with no wrong answer, crash, hang, unclear error or fault of the fuzzer; the big sweep, marked slow, runs
when ``TIRX_LAYOUT_KERNEL_FUZZ_CASES=N`` asks for it (2,000 cases: about 10 minutes on two busy cores). The
classification itself is tested on planted kernels: a silently wrong one, one that writes an element twice, one the
build refuses."""

from __future__ import annotations

import os

import pytest

from fuzz import kernel_cases, kernel_checks, supervisor, worker
from fuzz.checks import WrongAnswer
from fuzz.kernel_checks import HarnessFault, run_kernel

SAMPLE = int(os.environ.get("TIRX_LAYOUT_KERNEL_FUZZ_SAMPLE", "100"))
SWEEP = int(os.environ.get("TIRX_LAYOUT_KERNEL_FUZZ_CASES", "0"))
SEED = int(os.environ.get("TIRX_LAYOUT_FUZZ_SEED", "0"))


def _sweep(count: int) -> None:
    records = supervisor.sweep(SEED, count, workers=min(2, os.cpu_count() or 1), suite="kernel")
    print(f"\nkernel fuzz sweep, seed {SEED}, {count} cases\n{supervisor.table(records)}")
    assert len(records) == count
    bad = supervisor.bad(records)
    assert not bad, supervisor.table(records) + "\n" + supervisor.problems(bad, SEED, suite="kernel")


def test_a_sample_of_random_kernels_has_no_wrong_answer_crash_hang_or_unclear_error():
    _sweep(SAMPLE)


@pytest.mark.slow
@pytest.mark.skipif(not SWEEP, reason="the big kernel sweep runs with TIRX_LAYOUT_KERNEL_FUZZ_CASES=N (2000: ~10 min)")
def test_the_sweep_has_no_wrong_answer_crash_hang_or_unclear_error():
    _sweep(SWEEP)


def test_kernel_cases_are_a_function_of_seed_and_index_and_every_generator_runs():
    assert kernel_cases.case(3, 17) == kernel_cases.case(3, 17)
    assert kernel_cases.case(0, 5) != kernel_cases.case(1, 5)
    families = {kernel_cases.case(0, i).family for i in range(400)}
    assert families == {name for name, _, _ in kernel_cases.GENERATORS}


def test_a_sweep_of_some_generators_draws_only_from_them(monkeypatch):
    monkeypatch.setattr(kernel_cases, "ONLY", ["reduce", "cp_async"])
    assert {kernel_cases.case(0, i).family for i in range(60)} == {"reduce", "cp_async"}
    monkeypatch.setattr(kernel_cases, "ONLY", ["reduce", "no_such_op"])
    with pytest.raises(ValueError, match=r"TIRX_LAYOUT_KERNEL_FUZZ_GENERATORS names \['no_such_op'\]; the generators"):
        kernel_cases.case(0, 0)


COPY = """
@T.prim_func
def k(A: T.Buffer((32, 4), "float32"), B: T.Buffer((32, 4), "float32")):
    T.device_entry()
    tx = T.thread_id([32])
    BODY
"""
INPUT = {"A": ("float32", (32, 4))}


def test_a_right_kernel_passes():
    assert run_kernel(COPY.replace("BODY", "T.tile_copy(B, A)"), "sm_100a", INPUT, {"B": "A"}) is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("T.tile_copy(B[0:16, 0:4], A[0:16, 0:4])", r"B: 64 of 128 elements written other than once"),
        ("T.tile_copy(B, A)\n    T.tile_copy(B, A)", r"B: 128 of 128 elements written other than once"),
        ("T.tile_copy(B[0:16, 0:4], A[16:32, 0:4])\n    T.tile_copy(B[16:32, 0:4], A[0:16, 0:4])", r"differ"),
    ],
)
def test_a_wrong_kernel_is_a_wrong_answer(body, message):
    with pytest.raises(WrongAnswer, match=message) as wrong:
        run_kernel(COPY.replace("BODY", body), "sm_100a", INPUT, {"B": "A"})
    assert worker.classify(wrong.value) == "wrong"


def test_a_refused_kernel_is_a_clean_refusal_and_a_broken_one_the_fuzzers_fault():
    body = 'T.tile_copy(B, A, "warpgroup")'  # 32 threads: no warpgroup
    with pytest.raises(ValueError, match=r"needs 128 threads; the kernel has 32") as refused:
        run_kernel(COPY.replace("BODY", body), "sm_100a", INPUT, {"B": "A"})
    assert worker.classify(refused.value) == "clean"
    with pytest.raises(HarnessFault) as broken:
        run_kernel(COPY.replace("BODY", "T.tile_copy(B, A"), "sm_100a", INPUT, {"B": "A"})
    assert worker.classify(broken.value) == "harness"


def test_a_refusal_of_a_layout_inference_chose_is_a_wrong_answer(monkeypatch):
    # Inference proposing what the rules refuse (issue 33) is no clean refusal: plant a rule that refuses the
    # inferred tile by name, as the MMA's alignment rule refused an inferred 64B operand.
    body = 'tile = T.alloc_shared((32, 4), "float32")\n    T.tile_copy(tile, A)\n    T.cuda.cta_sync()\n'
    text = COPY.replace("BODY", body + "    T.tile_copy(B, tile)")

    def refuse(*args, **kwargs):
        raise ValueError("tile is laid out in a way the rule refuses")

    monkeypatch.setattr(kernel_checks, "build", refuse)
    with pytest.raises(WrongAnswer, match=r"inference gave \{'tile': 'S\[\(32, 4\):\(4, 1\)\]'\}, which the rules"):
        run_kernel(text, "sm_100a", INPUT, {"B": "A"})
