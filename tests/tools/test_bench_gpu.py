"""benchmarks/bench_gpu.py: without a GPU it says so and exits 0; its kernels are right (simulated at small sizes)
and fit for sm_90a; its table of published peaks answers by device name."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.tools.device import cuda_available
from tirx_layout.tools.kernel_report import load_example_module, nvcc_assembles
from tirx_layout.transform import build

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_gpu.py"
bench = load_example_module(BENCH)


@pytest.mark.skipif(cuda_available(), reason="a CUDA device is present: the benchmark would measure it")
def test_without_a_gpu_it_says_so_and_exits_cleanly():
    done = subprocess.run([sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "bench_gpu: no CUDA device (tvm.cuda(0).exist is False); nothing measured"


def test_the_plain_copy_copies_with_16_byte_vectors():
    kernel = bench.plain_copy(4096)
    a = np.arange(4096, dtype=np.float32)
    result = sim.run(kernel, {"A": a}, "sm_90a")
    assert np.array_equal(result["B"], a) and (result.writes["B"] == 1).all()
    assert "float4" in build(kernel, "sm_90a").imports[0].inspect_source()


@pytest.mark.parametrize("mode", ["128B", "64B", "32B"])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_the_swizzled_copies_copy_and_assemble_for_sm_90a(dtype, mode):
    kernel = bench.swizzled_copy(256, dtype, mode)
    a = (np.arange(256 * 128 // np.dtype(dtype).itemsize) % 61).astype(dtype).reshape(256, -1)
    result = sim.run(kernel, {"A": a}, "sm_90a")
    assert np.array_equal(result["B"], a) and (result.writes["B"] == 1).all()
    assembled = nvcc_assembles(build(kernel, "sm_90a").imports[0].inspect_source(), "sm_90a")
    assert assembled is None or assembled[0], assembled


def test_published_peaks_by_device_name():
    assert bench.peak_tflops("NVIDIA H200") == 989.0
    assert bench.peak_tflops("NVIDIA H200 NVL") == 835.0
    assert bench.peak_tflops("NVIDIA H100 80GB HBM3") == 989.0
    assert bench.peak_tflops("NVIDIA GeForce RTX 4090") is None


def test_the_hopper_gemm_it_times_exists_and_takes_the_persistent_cta_count():
    example = load_example_module(BENCH.parents[1] / "examples" / "hopper_pipelined_gemm.py")
    kernel = example.hopper_pipelined_gemm(4096, 4096, 4096, "bfloat16", ctas=132)  # H200: 132 SMs
    assert [p.name for p in kernel.params] == ["A", "B", "D"]


def test_the_hopper_attention_it_times_exists_at_the_issues_size():
    example = load_example_module(BENCH.parents[1] / "examples" / "hopper_attention.py")
    problem = example.COMMON.AttentionProblem(1, 16, 8, 8192, 8192, 128, "bfloat16", True)
    assert [p.name for p in example.hopper_attention(problem).params] == ["Q", "K", "V", "O", "LSE"]
    assert bench.attention_rows(8192, "sm_100a", 1) == []  # no wgmma: nothing timed
