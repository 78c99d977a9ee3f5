"""Issue 30, item 3: a shared tile left open (no ``layout=``) that an ``ldmatrix`` copies into an ``mma.sync``
fragment gets, by inference, a swizzle under which the 8 row addresses of each 8 x 8 matrix hit distinct banks --
one wavefront per matrix in the simulator's bank model -- for one tile and for a 3-stage ``cp.async`` ring (the
Ampere GEMM with its shared layouts left to inference); both simulate equal to numpy."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest
import tvm

from tirx_layout import layout_of, sim
from tirx_layout.layout.swizzle import ComposeLayout
from tirx_layout.tools.kernel_report import load_example_module
from tirx_layout.tools.measurement import kernel_accesses
from tirx_layout.transform import build, infer_layouts

from kernels import EXAMPLES, parse

OPEN_TILE = """
@T.prim_func
def k(A: T.Buffer((ROWS, COLS), "float16"), B: T.Buffer((ROWS, COLS), "float16")):
    T.device_entry()
    tx = T.thread_id([THREADS])
    As = T.alloc_shared((ROWS, COLS), "float16", align=1024)
    frag = T.alloc_local((ROWS, COLS), "float16", layout=FRAGMENT)
    T.tile_copy(As, A)
    T.cuda.cta_sync()
    T.tile_copy(frag, As)
    T.tile_copy(B, frag)
"""


def _matrix_loads(func, inputs) -> list:
    """The shared loads of ``func``'s ldmatrix copies (16-byte rows), as the simulator's bank model measures them."""
    return [r for r in kernel_accesses(func, inputs, "sm_80") if r.kind == "load" and r.scope == "shared"]


@pytest.mark.parametrize(
    ("rows", "cols", "fragment", "threads", "matrices"),
    [
        (32, 64, 'mma_sync_a_layout((32, 64), "float16", (2, 2))', 128, 4),
        (64, 32, 'mma_sync_b_layout((64, 32), "float16", (2, 2))', 128, 4),
        (16, 64, 'mma_sync_b_layout((16, 64), "float16", (1, 2))', 64, 4),
        (16, 16, 'mma_sync_a_layout((16, 16), "float16")', 32, 4),
    ],
    ids=["A-32x64", "B-64x32", "B-16x64", "A-16x16"],
)
def test_an_open_tile_read_by_ldmatrix_gets_one_wavefront_per_matrix(rows, cols, fragment, threads, matrices):
    names = {"ROWS": rows, "COLS": cols, "FRAGMENT": fragment, "THREADS": threads}
    func = parse(re.sub("|".join(names), lambda m: str(names[m.group()]), OPEN_TILE))
    assert "ldmatrix.sync.aligned.m8n8.x4" in build(func, "sm_80").imports[0].inspect_source()
    a = (np.arange(rows * cols) % 251).reshape(rows, cols).astype(np.float16)
    np.testing.assert_array_equal(sim.run(func, {"A": a}, "sm_80")["B"], a)
    loads = _matrix_loads(func, {"A": a})
    assert loads and all(r.vector_bytes == 16 for r in loads)
    # an .x4 is four 8 x 8 matrices: one wavefront each, the fewest its 512 bytes need
    assert all(r.wavefronts == r.minimum_wavefronts == matrices * r.warp_executions for r in loads), [
        r.row() for r in loads
    ]


def test_an_open_ring_read_by_ldmatrix_gets_a_conflict_free_swizzle(tmp_path):
    source = (EXAMPLES / "ampere_gemm.py").read_text()
    opened = re.sub(r", layout=[ab]_shared", "", source)
    assert opened.count("T.alloc_shared") == 2 and "layout=a_shared" not in opened
    path = tmp_path / "ampere_gemm_open.py"
    path.write_text(opened)
    kernel = load_example_module(path).pipelined_gemm("float16", "float32", tiles=2)
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_80"})
    inferred = infer_layouts(tvm.tirx.transform.BindTarget(target)(tvm.IRModule({"main": kernel}))["main"])
    layouts = {name: layout_of(name, inferred) for name in ("As", "Bs")}
    assert all(isinstance(lay, ComposeLayout) for lay in layouts.values()), layouts  # swizzled: row-major conflicts
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, (64, 128)).astype(np.float16)
    b = rng.integers(-3, 4, (64, 128)).astype(np.float16)
    out = sim.run(kernel, {"A": a, "B": b}, "sm_80")["D"]
    np.testing.assert_array_equal(out, a.astype(np.float64) @ b.astype(np.float64).T)
    waves = Counter()
    for r in _matrix_loads(kernel, {"A": a, "B": b}):
        assert r.vector_bytes == 16
        waves[r.buffer] += r.wavefronts
        assert r.wavefronts == r.minimum_wavefronts == 4 * r.warp_executions, r.row()
    assert set(waves) == {"As", "Bs"}
