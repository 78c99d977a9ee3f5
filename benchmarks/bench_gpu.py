"""Measured on a real GPU (runs only where TVM sees a CUDA device; elsewhere it says so and exits 0):

* **copy bandwidth**: a plain copy kernel (16-byte vector loads and stores, one per thread: what ``cudaMemcpy`` does
  device to device) and the swizzled copies (global -> a ``mma_shared_layout`` tile in each swizzle mode -> global,
  with ``T.tile_copy``, one 128-row tile per CTA), each over the same number of bytes, timed with TVM's
  ``time_evaluator`` in the same run. Bandwidth counts bytes read + written; each swizzled copy is reported as a
  fraction of the plain copy's (issue 22's target: >= 90 %).
* **GEMM TFLOPS**: the pipelined Hopper GEMM (``examples/hopper_pipelined_gemm.py``) at 4096^3 bf16 on a device with
  wgmma (sm_90a), as a fraction of the device's published dense bf16 peak (``PEAK_DENSE_BF16_TFLOPS``; target >= 70 %).
  Its result is checked against numpy before it is timed.
* **attention TFLOPS**: the Hopper attention forward (``examples/hopper_attention.py``) at seq 8192, head_dim 128,
  bf16, 16 query heads over 8 K/V heads, causal and not, against the same dense peak (issue 32's target: >= 60 %).
  FLOPs are the two GEMMs' over the scores each row sees (``4 * head_dim`` per visible score; causal: about half).
  Two heads' O and log-sum-exp are checked against numpy before it is timed.

``python benchmarks/bench_gpu.py [--quick]`` (``--quick``: 1/16 of the copy bytes, GEMM 2048^3, attention seq 2048).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers the pipeline and the TVMScript names)
from tirx_layout import mma_shared_layout
from tirx_layout.sim import numpy_dtype
from tirx_layout.tools.device import cuda_available, device_arch, device_name, launch, time_launch
from tirx_layout.tools.kernel_report import load_example_module
from tirx_layout.transform import build

#: Dense (non-sparse) bf16 tensor-core peak in TFLOP/s by device name, most specific name first. Sources: NVIDIA
#: H200 datasheet (H200 SXM 989 TFLOPS, H200 NVL 835: the "with sparsity" figures 1,979 / 1,671 halved), NVIDIA
#: H100 datasheet (SXM 989, PCIe 756, NVL 835), NVIDIA A100 datasheet (312), NVIDIA DGX B200 / HGX B200 (B200 2,250
#: dense, as docs/decisions.md "Issue 21: the pipelined GEMM" uses).
PEAK_DENSE_BF16_TFLOPS = (
    ("H200 NVL", 835.0),
    ("H200", 989.0),
    ("H100 PCIe", 756.0),
    ("H100 NVL", 835.0),
    ("H100", 989.0),
    ("B200", 2250.0),
    ("A100", 312.0),
)

#: Bytes each copy moves one way (A -> B) in a full run: 256 MiB, far beyond any L2.
COPY_BYTES = 256 << 20
TILE_ROWS = 128
COPY_THREADS = 256


def peak_tflops(name: str) -> float | None:
    """The published dense bf16 peak of the device called ``name``, ``None`` for one not in the table.

    Example:
        >>> peak_tflops("NVIDIA H200"), peak_tflops("NVIDIA H100 PCIe"), peak_tflops("Tesla T4")
        (989.0, 756.0, None)
    """
    return next((tflops for key, tflops in PEAK_DENSE_BF16_TFLOPS if key in name), None)


def plain_copy(n: int):
    """``B = A`` for ``n`` float32 elements: each thread moves one 16-byte vector."""
    per_cta = COPY_THREADS * 4
    blocks = n // per_cta

    @T.prim_func
    def copy(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32")):
        T.device_entry()
        bx = T.cta_id([blocks])
        tx = T.thread_id([COPY_THREADS])
        B[T.Ramp(bx * per_cta + tx * 4, 1, 4)] = A[T.Ramp(bx * per_cta + tx * 4, 1, 4)]

    return copy


def swizzled_copy(rows: int, dtype: str, mode: str):
    """``B = A`` for a ``(rows, cols)`` tensor (``cols``: one 128-byte row), each CTA moving one 128-row tile
    through a shared tile in the ``mode``-swizzled MMA layout with ``T.tile_copy``."""
    cols = 128 // np.dtype(np.float32 if dtype == "float32" else np.float16).itemsize
    layout = mma_shared_layout(dtype, mode, (TILE_ROWS, cols))

    @T.prim_func
    def copy(A: T.Buffer((rows, cols), dtype), B: T.Buffer((rows, cols), dtype)):
        T.device_entry()
        bx = T.cta_id([rows // TILE_ROWS])
        tx = T.thread_id([128])
        tile = T.alloc_shared((TILE_ROWS, cols), dtype, layout=layout)
        T.tile_copy(tile, A[bx * TILE_ROWS : bx * TILE_ROWS + TILE_ROWS, 0:cols])
        T.cuda.cta_sync()
        T.tile_copy(B[bx * TILE_ROWS : bx * TILE_ROWS + TILE_ROWS, 0:cols], tile)

    return copy


def copy_rows(total: int, arch: str, repeat: int) -> list[tuple[str, float, float]]:
    """``(kernel, GB/s, fraction of the plain copy)`` for the plain copy and every swizzled copy of ``total``
    bytes."""
    a = np.arange(total // 4, dtype=np.int32).astype(np.float32)
    copy = plain_copy(total // 4)
    module = build(copy, arch)
    if not np.array_equal(launch(copy, {"A": a}, arch, module=module)["B"], a):
        raise SystemExit("bench_gpu: the plain copy computed a wrong result")
    plain = 2 * total / time_launch(copy, {"A": a}, arch, repeat, module) / 1e9
    rows = [("plain copy (16-byte vectors)", plain, 1.0)]
    for dtype in ("float16", "float32"):
        size = 2 if dtype == "float16" else 4
        data = (np.arange(total // size, dtype=np.int32) % 61).astype(numpy_dtype(dtype)).reshape(-1, 128 // size)
        for mode in ("128B", "64B", "32B"):
            kernel = swizzled_copy(data.shape[0], dtype, mode)
            module = build(kernel, arch)
            if not np.array_equal(launch(kernel, {"A": data}, arch, module=module)["B"], data):
                raise SystemExit(f"bench_gpu: the {dtype} {mode} swizzled copy computed a wrong result")
            gbs = 2 * total / time_launch(kernel, {"A": data}, arch, repeat, module) / 1e9
            rows.append((f"swizzled copy {dtype} {mode}", gbs, gbs / plain))
    return rows


def gemm_row(size: int, arch: str, repeat: int, sms: int) -> tuple[str, float] | None:
    """``(kernel, TFLOP/s)`` of the pipelined Hopper GEMM at ``size``^3 bf16 (persistent on ``sms`` CTAs), after
    checking its result; ``None`` where the example or wgmma is missing."""
    path = Path(__file__).resolve().parents[1] / "examples" / "hopper_pipelined_gemm.py"
    if not path.is_file() or arch != "sm_90a":
        return None
    example = load_example_module(path)
    tiles = (size // 128) * (size // 256)  # the example's default 128 x 256 output tiles
    kernel = example.hopper_pipelined_gemm(size, size, size, "bfloat16", ctas=min(sms, tiles))
    module = build(kernel, arch)
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 5, (size, size)).astype(numpy_dtype("bfloat16"))
    b = rng.integers(-4, 5, (size, size)).astype(numpy_dtype("bfloat16"))
    d = launch(kernel, {"A": a, "B": b}, arch, module=module)["D"]
    if not np.array_equal(d, a.astype(np.float32) @ b.astype(np.float32).T):  # exact: |sums| <= 16 K < 2^24
        raise SystemExit("bench_gpu: the Hopper pipelined GEMM computed a wrong result")
    seconds = time_launch(kernel, {"A": a, "B": b}, arch, repeat, module)
    return f"Hopper pipelined GEMM {size}^3 bf16, {min(sms, tiles)} CTAs", 2 * size**3 / seconds / 1e12


def attention_rows(seq: int, arch: str, repeat: int) -> list[tuple[str, float]]:
    """``(kernel, TFLOP/s)`` of the Hopper attention forward at ``seq`` (head_dim 128, bf16, 16 query heads over 8
    K/V heads), causal and not, each after checking two heads against numpy; ``[]`` where the example or wgmma is
    missing."""
    path = Path(__file__).resolve().parents[1] / "examples" / "hopper_attention.py"
    if not path.is_file() or arch != "sm_90a":
        return []
    example = load_example_module(path)
    common = example.COMMON
    rows = []
    for causal in (False, True):
        problem = common.AttentionProblem(1, 16, 8, seq, seq, 128, "bfloat16", causal)
        inputs = common.attention_inputs(problem)
        kernel = example.hopper_attention(problem)
        module = build(kernel, arch)
        out = launch(kernel, inputs, arch, module=module)
        u = common.UNIT_ROUNDOFF["bfloat16"]  # attention_common's tolerance: 2u relative, 2u max|V| absolute
        rtol, atol = 2 * u, 2 * u * float(np.abs(inputs["V"].astype(np.float32)).max())
        for h in (0, problem.heads - 1):  # one head's problem: query head h and its K/V head
            kv = h // problem.group
            one = common.attention_reference(
                common.AttentionProblem(1, 1, 1, seq, seq, 128, "bfloat16", causal),
                inputs["Q"][:, h : h + 1],
                inputs["K"][:, kv : kv + 1],
                inputs["V"][:, kv : kv + 1],
            )
            for name in ("O", "LSE"):
                got = out[name][:, h : h + 1].astype(np.float32)
                if not np.allclose(got, one[name].astype(np.float32), rtol, atol):
                    raise SystemExit(f"bench_gpu: the Hopper attention computed a wrong {name} (head {h})")
        seconds = time_launch(kernel, inputs, arch, repeat, module)
        visible = sum(problem.visible_keys(q) for q in range(seq))  # scores each row sees, summed
        flops = 4 * 128 * visible * problem.heads * problem.batch
        rows.append((f"Hopper attention seq {seq} d128 bf16{' causal' if causal else ''}", flops / seconds / 1e12))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1/16 of the copy bytes, GEMM 2048^3")
    parser.add_argument("--repeat", type=int, default=10, help="timed repetitions per kernel (median)")
    args = parser.parse_args(argv)
    if not cuda_available():
        print("bench_gpu: no CUDA device (tvm.cuda(0).exist is False); nothing measured")
        return 0
    import tvm

    arch, name = device_arch(), device_name()
    sms = int(tvm.cuda(0).multi_processor_count)
    print(f"bench_gpu: {name} ({arch}, {sms} SMs)")
    total = COPY_BYTES // (16 if args.quick else 1)
    print(f"\ncopies of {total >> 20} MiB (bandwidth: bytes read + written per second; target >= 90 % of plain)")
    for kernel, gbs, fraction in copy_rows(total, arch, args.repeat):
        print(f"  {kernel:<34} {gbs:8.1f} GB/s  {100 * fraction:6.1f} % of the plain copy")
    gemm = gemm_row(2048 if args.quick else 4096, arch, args.repeat, sms)
    if gemm is None:
        print(f"\nGEMM: not measured (needs sm_90a and examples/hopper_pipelined_gemm.py; device is {arch})")
        return 0
    kernel, tflops = gemm
    peak = peak_tflops(name)
    share = f"{100 * tflops / peak:6.1f} % of the dense peak {peak:.0f} (target >= 70 %)" if peak else "(no peak known)"
    print(f"\n  {kernel:<34} {tflops:8.1f} TFLOP/s  {share}")
    for kernel, tflops in attention_rows(2048 if args.quick else 8192, arch, args.repeat):
        share = f"{100 * tflops / peak:6.1f} % of the dense peak {peak:.0f} (target >= 60 %)" if peak else ""
        print(f"  {kernel:<34} {tflops:8.1f} TFLOP/s  {share}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
