"""Helpers for ``tests/gpu``: which example kernels run on a real GPU, their inputs and expected outputs, a sentinel
for "never written", a TMA-load kernel for every swizzle mode, and a build that counts the stores to each output
element (``count_stores``).

Nothing here builds a kernel at import: the tables are looked up lazily, so collecting ``tests/gpu`` on a machine
without a GPU builds nothing.
"""

from __future__ import annotations

import numpy as np
import pytest
import tvm
import tvm_ffi

from tirx_layout.ir.rewrite import walk
from tirx_layout.sim import numpy_dtype
from tirx_layout.tools.device import cuda_available
from tirx_layout.tools.kernel_report import Expected
from tirx_layout.transform import tirx_layout_pipeline

from kernels import example_module, parse

#: Mark for tests that need a CUDA device: ``gpu``, skipped (with the reason) where TVM sees none.
requires_gpu = [
    pytest.mark.gpu,
    pytest.mark.skipif(not cuda_available(), reason="no CUDA device: tvm.cuda(0).exist is False"),
]

#: Example modules whose kernels need nothing newer than sm_80 (plain loads and stores through swizzled shared
#: memory and register fragments): every one of their kernels runs on the GPU.
COPY_MODULES = (
    "swizzled_staging",
    "warp_fragment",
    "tile_copies",
    "inferred_layouts",
    "symbolic_extents",
    "narrow_dtypes",
)
#: Example modules of sm_90a GEMMs (wgmma), with the tables their kernels are in.
GEMM_MODULES = {"hopper_gemm": ("KERNELS",), "hopper_pipelined_gemm": ("KERNELS",)}


def example_entries(stems, tables=("KERNELS",)) -> list[tuple[str, str]]:
    """``(module, kernel)`` for every kernel of the example modules ``stems``, in ``tables`` (names of their
    ``KernelTable``s); listing builds none."""
    entries = []
    for stem in stems:
        module = example_module(stem)
        for table in tables:
            entries += [(stem, name) for name in getattr(module, table)]
    return entries


def example_entry(stem: str, name: str, tables=("KERNELS",)) -> tuple:
    """The table entry ``(kernel, expected[, sizes])`` of example ``name`` in module ``stem``."""
    module = example_module(stem)
    for table in tables:
        found = getattr(module, table, {})
        if name in found:
            return found[name]
    raise KeyError(f"{name} is in no table of examples/{stem}.py")


def sentinel(dtype: str):
    """A value no example writes (inputs are small integers): NaN for floats, an extreme for integers."""
    np_dtype = np.dtype(numpy_dtype(dtype))
    if np_dtype.kind == "f" or dtype.startswith("float") or dtype.startswith("bfloat"):
        return np.nan
    return np.iinfo(np_dtype).min + 7 if np_dtype.kind == "i" else np.iinfo(np_dtype).max - 7


def _extent(extent, sizes: dict) -> int:
    if isinstance(extent, tvm.tirx.IntImm):
        return int(extent)
    if isinstance(extent, tvm.tirx.Var) and extent.name in sizes:
        return int(sizes[extent.name])
    raise ValueError(f"cannot size extent {extent} from {sizes}")


def device_case(entry) -> tuple:
    """For a table entry: ``(kernel, arrays, wanted, check)``: every buffer parameter's starting array by name
    (inputs from :func:`sample_input`, the rest filled with :func:`sentinel`), the expected outputs by name, and
    the comparison (an :class:`Expected`)."""
    kernel, expected = entry[0], entry[1]
    sizes = dict(entry[2]) if len(entry) > 2 else {}
    check = expected if isinstance(expected, Expected) else Expected(expected)
    inputs = check.input_arrays(kernel, sizes)
    arrays = {kernel.params[i].name: inputs[i] for i in range(check.inputs)}
    for param in kernel.params[check.inputs :]:
        if getattr(param, "shape", None) is not None:
            shape = tuple(_extent(e, sizes) for e in param.shape)
            arrays[param.name] = np.full(shape, sentinel(str(param.dtype)), numpy_dtype(param.dtype))
    wanted = check(*inputs)
    if not isinstance(wanted, dict):
        wanted = {kernel.params[check.inputs].name: wanted}
    return kernel, arrays, wanted, check


def tma_load_kernel(dtype: str, mode: str, rows: int = 64):
    """One TMA load of a ``(rows, span)`` box (``span``: one swizzle row, or 32 elements without a swizzle) from row
    64 of a ``(256, span)`` global tensor into a ``mode``-swizzled shared tile (row-major for ``"none"``), then a
    thread copy of the tile to ``B``: ``B == A[64 : 64 + rows]``."""
    size = np.dtype(numpy_dtype(dtype)).itemsize
    cols = {"32B": 32, "64B": 64, "128B": 128}.get(mode, 64) // size if mode != "none" else 32
    # without a swizzle the box lands row-major (the MMA's "none" layout interleaves 8x16-byte cores: not a box)
    layout = f'mma_shared_layout("{dtype}", "{mode}", ({rows}, {cols}))' if mode != "none" else "None"
    return parse(f"""
@T.prim_func
def tma_load(A: T.Buffer((256, {cols}), "{dtype}"), B: T.Buffer(({rows}, {cols}), "{dtype}")):
    T.device_entry()
    tx = T.thread_id([128])
    tile = T.alloc_shared(({rows}, {cols}), "{dtype}", layout={layout}, align=1024)
    bars = T.alloc_shared((1,), "uint64")
    T.mbarrier_init(bars[0], 1)
    T.tile_copy_async(tile, A[64 : 64 + {rows}, 0:{cols}], bars[0])
    T.mbarrier_wait(bars[0], 0)
    T.tile_copy(B, tile)
""")


#: A device helper returning the shared-window address (``cvta.to.shared``) of a shared pointer.
ADDRESS_HELPER = (
    "\\n__device__ __forceinline__ unsigned int gpu_test_shared_address(void* p) {\\n"
    "  return (unsigned int)__cvta_generic_to_shared(p);\\n}\\n"
)


def big_copy(floats: int):
    """A through ``floats`` float32s of shared memory (plus a 1024-aligned tile) to B: B == A reversed; C holds the
    tile's shared address (every thread writes the same value)."""
    return parse(f"""
@T.prim_func
def big(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"), C: T.Buffer((1,), "uint32")):
    T.device_entry()
    tx = T.thread_id([256])
    small = T.alloc_shared((3,), "float32")
    tile = T.alloc_shared(({floats},), "float32", align=1024)
    for i in range(4):
        tile[{floats} - 1024 + i * 256 + tx] = A[i * 256 + tx]
    if tx == 0:
        small[0] = T.float32(1)
        C[0] = T.cuda.func_call("gpu_test_shared_address", T.address_of(tile[0]), source_code="{ADDRESS_HELPER}",
                                return_type="uint32")
    T.cuda.cta_sync()
    for i in range(4):
        B[i * 256 + tx] = tile[{floats} - 1 - i * 256 - tx] * small[0]
""")


# ---- counting stores ---------------------------------------------------------------------------------------------

#: Output dtypes whose elements CUDA can atomically add 1 to (atomicAdd on 16-bit floats: sm_70+, bf16: sm_80+).
COUNTABLE = ("float32", "int32", "uint32", "float16", "bfloat16")
COUNT_PIPELINE = "tirx_layout.count-stores"


def _roots(func) -> dict:
    """Buffer var -> the device parameter its storage is (``B_flat`` over ``B`` over ``B_ptr``: ``B_ptr``)."""
    roots: dict = {}
    params = set(func.params)

    def on_decl(stmt):
        data = stmt.data
        if isinstance(data, tvm.ir.Call) and getattr(data.op, "name", "") == "tirx.buffer_data":
            data = roots.get(data.args[0])
        if data is not None and (data in params or data in roots.values()):
            roots[stmt.buffer] = data

    walk(func.body, [(tvm.tirx.DeclBuffer, on_decl)])
    return roots


def _counting(func):
    """The device function with every store to a global parameter turned into ``atomicAdd(&element, 1)``."""
    roots = _roots(func)

    def on_store(store):
        if store.buffer not in roots:
            return store
        index = store.indices[-1]
        lanes = int(index.lanes) if isinstance(index, tvm.tirx.Ramp) else 1
        elements = [index.base + k * index.stride for k in range(lanes)] if lanes > 1 else [index]
        one = tvm.tirx.const(1, str(store.buffer.dtype))
        adds = [
            tvm.tirx.Evaluate(
                tvm.tirx.call_extern(
                    str(store.buffer.dtype),
                    "atomicAdd",
                    tvm.tirx.address_of(tvm.tirx.BufferLoad(store.buffer, [e])),
                    one,
                )
            )
            for e in elements
        ]
        return adds[0] if len(adds) == 1 else tvm.tirx.SeqStmt(adds)

    body = tvm_ffi.structural_map(func.body, [(tvm.tirx.BufferStore, on_store)], order="post")
    return func.with_body(body)


@tvm.transform.module_pass(opt_level=0, name="tests.CountStores")
def _count_stores(mod, ctx):
    updates = {}
    for gvar, func in mod.functions.items():
        if isinstance(func, tvm.tirx.PrimFunc) and func.attrs is not None and "tirx.is_global_func" in func.attrs:
            updates[gvar] = _counting(func)
    for gvar, func in updates.items():
        mod[gvar] = func
    return mod


def _count_pipeline():
    passes, finalize_host, finalize_device = tirx_layout_pipeline()
    return tvm.transform.Sequential([passes, _count_stores], name=COUNT_PIPELINE), finalize_host, finalize_device


tvm.tirx.register_tir_pipeline(COUNT_PIPELINE, _count_pipeline)


def count_stores(kernel, arch: str):
    """``kernel`` built for ``arch`` so that every store to an output element adds 1 to it instead: run on
    zero-filled outputs, each element then holds how many times the kernel wrote it."""
    target = tvm.target.Target({"kind": "cuda", "arch": arch})
    return tvm.tirx.build(kernel, target=target, pipeline=COUNT_PIPELINE)
