"""Element-wise code on tiles with ``T.tile_parallel``: the epilogues a GEMM ends with and the masks attention applies,
written over logical coordinates -- no per-thread code, no slot numbers worked out by hand.

* ``tmem_epilogue``: a 128 x 64 float32 accumulator in tensor memory (as ``tcgen05.mma`` leaves it) drained 32
  columns at a time into registers (``tcgen05.ld``), biased, activated (ReLU, SiLU or tanh-GELU), cast to bfloat16
  in registers, staged through a 64B-swizzled shared tile and stored by TMA, one box per warp. The bias chunk is
  loaded once into a fragment the loop reads (``bias_chunk[j]``): its layout, left out, is derived from the loop's
  (the accumulator chunk's columns, replicated over the rows' threads), so each thread loads its 32 columns with
  16-byte loads.
* ``wgmma_epilogue`` (sm_90a): the same on Hopper's register accumulator (``wgmma_accumulator_layout``), whose
  threads hold pairs of adjacent columns: the bfloat16 fragment is left to inference (it takes the accumulator's
  placement) and copied out with 4-byte stores.
* ``causal_mask``: a 128 x 128 score tile, one row per thread, its elements above the diagonal set to -inf from
  their logical indices.

Every kernel is built, assembled and simulated against numpy by the main job; the inputs are small integers, so the
float32 arithmetic is exact and only the activation (``exp``/``tanh``) and the bfloat16 rounding are compared within
a tolerance.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers T.tile_parallel, T.tile_copy, layout=..., the pipeline)
from tirx_layout import mma_shared_layout, tmem_datapath_layout, wg_local_layout, wgmma_accumulator_layout
from tirx_layout.tools.kernel_report import Expected, KernelTable

#: The activations an epilogue applies, as TIR of a float32 value and as numpy of a float64 array.
ACTIVATIONS = ("relu", "silu", "gelu")
_GELU_C = 0.7978845608028654  # sqrt(2 / pi)


def activate(x, activation: str):
    """``activation`` of the float32 TIR value ``x``: ReLU, SiLU (``x / (1 + e^-x)``) or GELU's tanh form.

    Example:
        >>> str(activate(T.float32(1), "relu"))
        'T.max(T.float32(1.0), T.float32(0.0))'
    """
    if activation == "relu":
        return T.max(x, T.float32(0))
    if activation == "silu":
        return x / (T.float32(1) + T.exp(-x))
    if activation == "gelu":
        inner = T.float32(_GELU_C) * (x + T.float32(0.044715) * x * x * x)
        return T.float32(0.5) * x * (T.float32(1) + T.tanh(inner))
    raise ValueError(f"activation {activation!r}; expected one of {ACTIVATIONS}")


def activate_reference(x: np.ndarray, activation: str) -> np.ndarray:
    """numpy's float64 twin of :func:`activate`.

    Example:
        >>> activate_reference(np.array([-1.0, 2.0]), "relu").tolist()
        [0.0, 2.0]
    """
    if activation == "relu":
        return np.maximum(x, 0)
    if activation == "silu":
        return x / (1 + np.exp(-x))
    return 0.5 * x * (1 + np.tanh(_GELU_C * (x + 0.044715 * x**3)))


def epilogue_reference(activation: str) -> Expected:
    """``bf16(act(acc + bias))``: exact for ReLU (the sums are small integers), within one bfloat16 rounding (2^-8
    relative) plus the float32 ``exp``/``tanh`` error for the others."""

    def reference(acc, bias):
        result = activate_reference(acc.astype(np.float64) + bias.astype(np.float64), activation)
        return result.astype(np.float32).astype(ml_dtypes.bfloat16)

    exact = activation == "relu"
    return Expected(reference, inputs=2, rtol=0.0 if exact else 2.0**-7, atol=0.0 if exact else 2.0**-7)


def tmem_epilogue(activation: str = "relu", cols: int = 64):
    """A ``(128, cols)`` float32 TMEM accumulator (filled from ``Acc`` with ``tcgen05.st``, standing for an MMA's
    result) drained 32 columns at a time: ``D = bf16(act(acc + bias))`` staged in shared memory, stored by TMA.

    Example:
        >>> [p.name for p in tmem_epilogue().params]
        ['Acc', 'bias', 'D']
    """
    chunk = 32
    staging_layout = mma_shared_layout("bfloat16", "64B", (128, chunk))
    box_layout = mma_shared_layout("bfloat16", "64B", (4, 32, chunk))

    @T.prim_func
    def epilogue(
        Acc: T.Buffer((128, cols), "float32"), bias: T.Buffer((cols,), "float32"), D: T.Buffer((128, cols), "bfloat16")
    ):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_tmem((128, cols), "float32", layout=tmem_datapath_layout("D", 128, cols))
        staged = T.alloc_local((128, cols), "float32")
        T.tile_copy(staged, Acc, "warpgroup")
        T.tile_copy(acc, staged, "warpgroup")
        out = T.alloc_local((128, chunk), "float32")  # each chunk as tcgen05.ld leaves it: inferred
        result = T.alloc_local((128, chunk), "bfloat16")  # inferred: the placement of out
        bias_chunk = T.alloc_local((chunk,), "float32")  # derived: out's columns, on every thread
        staging = T.alloc_shared((128, chunk), "bfloat16", layout=staging_layout, align=512)
        # the same storage as four 32-row boxes, one per warp (a TMA box starts at a constant or a stage index)
        boxes = T.decl_buffer((4, 32, chunk), "bfloat16", data=staging.data, layout=box_layout, align=512)
        warp = T.meta_var(tx // 32)
        for c in T.unroll(cols // chunk):
            T.tile_copy(out, acc[0:128, c * chunk : c * chunk + chunk], "warpgroup")
            T.tile_copy(bias_chunk, bias[c * chunk : c * chunk + chunk], "warpgroup")  # 16-byte loads
            for i in T.tile_parallel(128, scope="warpgroup"):
                for j in T.tile_parallel(chunk):
                    result[i, j] = T.Cast("bfloat16", activate(out[i, j] + bias_chunk[j], activation))
            T.tile_copy(staging, result, "warpgroup")
            rows = T.meta_var(slice(warp * 32, warp * 32 + 32))
            T.tile_copy_async(D[rows, c * chunk : c * chunk + chunk], boxes[warp, 0:32, 0:chunk], scope="warp")
            T.tma_store_wait("warp")

    return epilogue


def wgmma_epilogue(activation: str = "relu", n: int = 64):
    """Hopper's register accumulator of ``wgmma.m64nN`` (filled from ``Acc``): ``D = bf16(act(acc + bias))``.

    Example:
        >>> [p.name for p in wgmma_epilogue().params]
        ['Acc', 'bias', 'D']
    """

    @T.prim_func
    def epilogue(Acc: T.Buffer((64, n), "float32"), bias: T.Buffer((n,), "float32"), D: T.Buffer((64, n), "bfloat16")):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_local((64, n), "float32", layout=wgmma_accumulator_layout(n))
        result = T.alloc_local((64, n), "bfloat16")  # inferred: the accumulator's placement
        columns = T.alloc_local((n,), "float32")  # derived: the accumulator's columns, replicated over its rows
        T.tile_copy(acc, Acc)
        T.tile_copy(columns, bias)  # each thread's columns: pairs of adjacent floats, 8-byte loads
        for i in T.tile_parallel(64):
            for j in T.tile_parallel(n):
                result[i, j] = T.Cast("bfloat16", activate(acc[i, j] + columns[j], activation))
        T.tile_copy(D, result)

    return epilogue


def causal_mask(size: int = 128):
    """A ``(size, size)`` score tile, one row per thread: elements above the diagonal become -inf.

    Example:
        >>> [p.name for p in causal_mask().params]
        ['S', 'P']
    """

    @T.prim_func
    def mask(S: T.Buffer((size, size), "float32"), P: T.Buffer((size, size), "float32")):
        T.device_entry()
        tx = T.thread_id([size])
        scores = T.alloc_local((size, size), "float32", layout=wg_local_layout(size, size))
        T.tile_copy(scores, S)
        for i in T.tile_parallel(size):
            for j in T.tile_parallel(size):
                scores[i, j] = T.if_then_else(j > i, T.float32(-np.inf), scores[i, j])
        T.tile_copy(P, scores)

    return mask


def causal_reference(s: np.ndarray) -> np.ndarray:
    rows, cols = np.indices(s.shape)
    return np.where(cols > rows, np.float32(-np.inf), s)


KERNELS = KernelTable()  # each kernel built when first looked up
for _activation in ACTIVATIONS:
    KERNELS.add(f"tmem_epilogue_{_activation}", epilogue_reference(_activation), tmem_epilogue, _activation)
    KERNELS.add_entry(
        f"wgmma_epilogue_{_activation}",
        lambda a=_activation: (wgmma_epilogue(a), epilogue_reference(a), None, "sm_90a"),
    )
KERNELS.add("causal_mask", causal_reference, causal_mask)
