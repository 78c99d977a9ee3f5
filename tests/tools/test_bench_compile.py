"""benchmarks/bench_compile.py: upstream's twins of the example kernels build and are timed in the child process
(in this process the pipeline guard would refuse them), and a staging twin swizzles as ours does. The expected
swizzles are the PTX ISA's shared-memory swizzle modes: 16-byte units (8 fp16 or 4 fp32 elements, so 2^3 or 2^2),
8 units to a 128-byte row (2^3), XORed with 2^3, 2^2 or 2^1 rows for 128B, 64B and 32B."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_compile


@pytest.mark.parametrize(
    ("name", "spec"),
    [
        ("staging_fp16_128B", "staging:float16:3:3:3"),
        ("staging_bf16_64B", "staging:bfloat16:3:2:3"),
        ("staging_fp32_32B", "staging:float32:2:1:3"),
        ("warp_fragment_fp32", "fragment"),
    ],
)
def test_upstream_spec_carries_the_swizzle_of_the_mode(name, spec):
    assert bench_compile.upstream_spec(name) == spec


def test_upstream_kernels_build_in_the_child_process_with_one_time_each():
    times = bench_compile.upstream_build_times(["staging:float16:3:3:3", "fragment"], repeats=1)
    assert len(times) == 2 and all(0 < t < 10 for t in times)


def test_an_unknown_spec_is_a_runtime_error_with_the_childs_error_line():
    with pytest.raises(RuntimeError, match=r"upstream build timing failed: ValueError: unknown kernel spec 'bogus'"):
        bench_compile.upstream_build_times(["bogus"], repeats=1)
