"""Softmax, norms and column sums: reductions (``T.tile_reduce``) and element-wise loops (``T.tile_parallel``) over
register fragments, with no per-thread code.

* ``softmax_rows``: a 128 x 64 score tile, one row per thread (``wg_local_layout``): the row maximum and sum are each
  thread's own (no shuffle), ``P = exp2((S - max) * log2(e)) / sum``.
* ``softmax_quads`` (sm_90a): the same on Hopper's ``wgmma`` accumulator, where a row lives in a quad of lanes: the
  reductions' butterflies use lane masks 1 and 2, read off the layout; the row vectors are replicated over the quad.
* ``rms_norm`` / ``layer_norm``: 128 rows of 4096 bfloat16, one row per warp (4 per CTA, 32 CTAs): 16-byte loads into
  a fragment, the sums over 32 lanes by a 5-step butterfly, the weight (and bias) loaded once per CTA into a fragment
  replicated over the warps, the result cast back to bfloat16 in registers and stored with 16-byte vectors.
* ``column_sums``: a 4096 x 256 float32 matrix summed over its rows by 64 CTAs: each reduces its 64-row block in
  registers (one column per thread) and adds the 256 partial sums into the result with ``atomicAdd``.

Tolerances: the float32 results are compared within 2^-20 relative (``exp2``'s and the reduction order's rounding);
the bfloat16 ones within one bfloat16 rounding (2^-8); the column sums of small integers are exact.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers T.tile_reduce, T.tile_parallel, layout=..., the pipeline)
from tirx_layout import R, S, TileLayout, laneid, warpid, wg_local_layout, wgmma_accumulator_layout
from tirx_layout.tools.kernel_report import Expected, KernelTable

LOG2E = 1.4426950408889634
#: Rows of the norms, and their length; two warps per row, four rows per 256-thread CTA.
NORM_ROWS, NORM_COLS, ROWS_PER_CTA = 128, 4096, 4
#: A block of rows as the CTA holds it: row r on warps 2r and 2r + 1 (one half each), in each half 8 chunks of 8
#: elements (16 bytes of bfloat16) per lane -- a row's sums cross two warps, so they meet in shared memory.
NORM_LAYOUT = TileLayout(S[(ROWS_PER_CTA, 2, 8, 32, 8) : (2 @ warpid, 1 @ warpid, 8, 1 @ laneid, 1)])
#: The weight (and bias) vector: a row's placement, replicated over the four rows' warps.
NORM_VECTOR_LAYOUT = TileLayout(S[(2, 8, 32, 8) : (1 @ warpid, 8, 1 @ laneid, 1)] + R[ROWS_PER_CTA : 2 @ warpid])
EPSILON = 1e-6


def softmax_rows(rows: int = 128, cols: int = 64):
    """Softmax over each row of a ``(rows, cols)`` tile held one row per thread.

    Example:
        >>> [p.name for p in softmax_rows().params]
        ['S', 'P']
    """

    @T.prim_func
    def softmax(S: T.Buffer((rows, cols), "float32"), P: T.Buffer((rows, cols), "float32")):
        T.device_entry()
        tx = T.thread_id([rows])
        scores = T.alloc_local((rows, cols), "float32", layout=wg_local_layout(cols, rows))
        row_max = T.alloc_local((rows,), "float32")  # derived: one value per thread
        row_sum = T.alloc_local((rows,), "float32")
        T.tile_copy(scores, S)
        T.tile_reduce(row_max, scores, "max", axis=1)
        for i in T.tile_parallel(rows):
            for j in T.tile_parallel(cols):
                scores[i, j] = T.exp2((scores[i, j] - row_max[i]) * T.float32(LOG2E))
        T.tile_reduce(row_sum, scores, "sum", axis=1)
        for i in T.tile_parallel(rows):
            for j in T.tile_parallel(cols):
                scores[i, j] = scores[i, j] / row_sum[i]
        T.tile_copy(P, scores)

    return softmax


def softmax_quads(n: int = 64):
    """Softmax over each row of Hopper's ``(64, n)`` accumulator fragment, a row spread over a quad of lanes.

    Example:
        >>> [p.name for p in softmax_quads().params]
        ['S', 'P']
    """

    @T.prim_func
    def softmax(S: T.Buffer((64, n), "float32"), P: T.Buffer((64, n), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        scores = T.alloc_local((64, n), "float32", layout=wgmma_accumulator_layout(n))
        row_max = T.alloc_local((64,), "float32")  # derived: replicated over the quad
        row_sum = T.alloc_local((64,), "float32")
        T.tile_copy(scores, S)
        T.tile_reduce(row_max, scores, "max", axis=1, scope="warpgroup")
        for i in T.tile_parallel(64, scope="warpgroup"):
            for j in T.tile_parallel(n):
                scores[i, j] = T.exp2((scores[i, j] - row_max[i]) * T.float32(LOG2E))
        T.tile_reduce(row_sum, scores, "sum", axis=1, scope="warpgroup")
        for i in T.tile_parallel(64, scope="warpgroup"):
            for j in T.tile_parallel(n):
                scores[i, j] = scores[i, j] / row_sum[i]
        T.tile_copy(P, scores)

    return softmax


def softmax_reference(s: np.ndarray) -> np.ndarray:
    s = s.astype(np.float64)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def norm(kind: str):
    """RMSNorm (``kind="rms"``: ``y = x / sqrt(mean(x^2) + eps) * w``) or LayerNorm (``"layer"``: ``y = (x - mean) /
    sqrt(var + eps) * w + b``) of ``NORM_ROWS`` bfloat16 rows of ``NORM_COLS``, in float32, rounded to bfloat16.

    Example:
        >>> [p.name for p in norm("rms").params]
        ['X', 'W', 'Bias', 'Y']
    """
    rows, cols, per_cta = NORM_ROWS, NORM_COLS, ROWS_PER_CTA
    inverse_cols = 1.0 / cols
    layer = kind == "layer"

    @T.prim_func
    def normalize(
        X: T.Buffer((rows, cols), "bfloat16"),
        W: T.Buffer((cols,), "bfloat16"),
        Bias: T.Buffer((cols,), "bfloat16"),
        Y: T.Buffer((rows, cols), "bfloat16"),
    ):
        T.device_entry()
        cta = T.cta_id([rows // per_cta])
        tx = T.thread_id([256])
        x = T.alloc_local((per_cta, cols), "bfloat16", layout=NORM_LAYOUT)
        w = T.alloc_local((cols,), "bfloat16", layout=NORM_VECTOR_LAYOUT)
        b = T.alloc_local((cols,), "bfloat16", layout=NORM_VECTOR_LAYOUT)
        values = T.alloc_local((per_cta, cols), "float32")  # inferred: x's placement
        squares = T.alloc_local((per_cta, cols), "float32")
        y = T.alloc_local((per_cta, cols), "bfloat16")
        total = T.alloc_local((per_cta,), "float32")  # derived: replicated over the row's lanes and warps
        block = T.meta_var(X[cta * per_cta : cta * per_cta + per_cta, 0:cols])
        T.tile_copy(x, block)
        T.tile_copy(w, W)
        T.tile_copy(values, x)  # bfloat16 -> float32, exactly
        if layer:
            T.tile_copy(b, Bias)
            T.tile_reduce(total, values, "sum", axis=1)
            for i in T.tile_parallel(per_cta):
                for j in T.tile_parallel(cols):
                    values[i, j] = values[i, j] - total[i] * T.float32(inverse_cols)
        for i in T.tile_parallel(per_cta):
            for j in T.tile_parallel(cols):
                squares[i, j] = values[i, j] * values[i, j]
        T.tile_reduce(total, squares, "sum", axis=1)
        for i in T.tile_parallel(per_cta):
            for j in T.tile_parallel(cols):
                scale = T.meta_var(T.rsqrt(total[i] * T.float32(inverse_cols) + T.float32(EPSILON)))
                shift = T.meta_var(T.Cast("float32", b[j]) if layer else T.float32(0))
                y[i, j] = T.Cast("bfloat16", values[i, j] * scale * T.Cast("float32", w[j]) + shift)
        T.tile_copy(Y[cta * per_cta : cta * per_cta + per_cta, 0:cols], y)

    return normalize


def norm_reference(kind: str) -> Expected:
    def reference(x, w, b):
        x = x.astype(np.float64)
        if kind == "layer":
            x = x - x.mean(axis=1, keepdims=True)
        y = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + EPSILON) * w.astype(np.float64)
        if kind == "layer":
            y = y + b.astype(np.float64)
        return y.astype(np.float32).astype(ml_dtypes.bfloat16)

    return Expected(reference, inputs=3, rtol=2.0**-7, atol=2.0**-7)


def column_sums(rows: int = 4096, cols: int = 256, block: int = 64):
    """``colsum[j] = sum_i A[i, j]`` over ``rows // block`` CTAs, each adding its block's sums with ``atomicAdd``.

    Example:
        >>> [p.name for p in column_sums().params]
        ['A', 'colsum']
    """
    layout = TileLayout(S[(block, cols // 32, 32) : (1, 1 @ warpid, 1 @ laneid)])  # column j on thread j

    @T.prim_func
    def sums(A: T.Buffer((rows, cols), "float32"), colsum: T.Buffer((cols,), "float32")):
        T.device_entry()
        cta = T.cta_id([rows // block])
        tx = T.thread_id([cols])
        tile = T.alloc_local((block, cols), "float32", layout=layout)
        T.tile_copy(tile, A[cta * block : cta * block + block, 0:cols])
        T.tile_reduce(colsum, tile, "sum", axis=0, accumulate=True)  # each CTA adds its partial sums

    return sums


def _rows_reference(rtol: float):
    return Expected(softmax_reference, rtol=rtol, atol=2.0**-24)


KERNELS = KernelTable()  # each kernel built when first looked up
KERNELS.add("softmax_rows", _rows_reference(2.0**-20), softmax_rows)
KERNELS.add_entry("softmax_quads", lambda: (softmax_quads(), _rows_reference(2.0**-20), None, "sm_90a"))
KERNELS.add("rms_norm", norm_reference("rms"), norm, "rms")
KERNELS.add("layer_norm", norm_reference("layer"), norm, "layer")
KERNELS.add("column_sums", Expected(lambda a: a.sum(axis=0), accumulated=("colsum",)), column_sums)
