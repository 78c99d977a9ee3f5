"""The example kernels of ``bench_compile.py`` written with upstream TVM alone, and the time TVM's ``"tirx"``
pipeline takes to build each of them to CUDA.

* ``staging DTYPE PER_ELEMENT SWIZZLE_LEN ATOM_LEN``: ``examples/swizzled_staging.py``'s kernel with upstream's
  ``ComposeLayout`` (a swizzle over a row-major tile) on the shared tile; the caller passes the swizzle of ours, so
  both kernels stage through the same addresses.
* ``fragment``: ``examples/warp_fragment.py``'s kernel with a plain per-thread array of two registers.

Run as a script (``python _upstream_compile.py REPEATS SPEC...``, each SPEC one kernel's words joined by ``:``) it
prints, for each SPEC in order, the best build time in seconds over REPEATS rounds (``_timing.best_time``, the
protocol ``bench_compile.py`` times ours with). Start it through ``_upstream_child.run_upstream_script`` (which sets
``TVM_DEVICE_BACKEND_AUTOLOAD=0``); tirx_layout is never imported here.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tvm
from _timing import best_time
from tvm.backend.loader import load

load("cuda")  # with TVM_DEVICE_BACKEND_AUTOLOAD=0, nothing loads the CUDA backend's TVMScript names but this

from tvm.script import tirx as T  # noqa: E402
from tvm.tirx import layout as upstream  # noqa: E402

SM100A = tvm.target.Target({"kind": "cuda", "arch": "sm_100a"})
ROWS = COLS = 64  # examples/swizzled_staging.py's tile
THREADS = 128


def upstream_staging(dtype: str, per_element: int, swizzle_len: int, atom_len: int):
    """The staging kernel with upstream's ``ComposeLayout`` on the shared tile."""
    tile_layout = upstream.TileLayout(upstream.S[ROWS, COLS])
    swizzled = upstream.ComposeLayout(per_element, swizzle_len, atom_len, tile_layout)
    steps = ROWS * COLS // THREADS

    @T.prim_func
    def staging(A: T.Buffer((ROWS, COLS), dtype), B: T.Buffer((ROWS, COLS), dtype)):
        T.device_entry()
        bx = T.cta_id([1])
        tx = T.thread_id([THREADS])
        tile = T.alloc_buffer((ROWS, COLS), dtype, scope="shared", layout=swizzled)
        for i in T.serial(steps):
            tile[i * 2 + tx // COLS, tx % COLS] = A[i * 2 + tx // COLS, tx % COLS]
        T.cuda.cta_sync()
        for i in T.serial(steps):
            B[i * 2 + tx // COLS, tx % COLS] = tile[tx % COLS, i * 2 + tx // COLS]

    return staging


def upstream_fragment():
    """The fragment kernel with a plain per-thread array of two registers."""

    @T.prim_func
    def fragment(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
        T.device_entry()
        bx = T.cta_id([1])
        warp = T.warp_id([2])
        lane = T.lane_id([32])
        mine = T.alloc_buffer((2,), "float32", scope="local")
        for slot in T.serial(2):
            mine[slot] = A[2 * (lane // 4) + warp, 2 * (lane % 4) + slot] * T.float32(3)
        for slot in T.serial(2):
            B[2 * (lane // 4) + warp, 2 * (lane % 4) + slot] = mine[slot]

    return fragment


def kernel_of(spec: str):
    """The kernel a SPEC names (``staging:DTYPE:PER_ELEMENT:SWIZZLE_LEN:ATOM_LEN`` or ``fragment``)."""
    kind, *words = spec.split(":")
    if kind == "staging" and len(words) == 4:
        return upstream_staging(words[0], *map(int, words[1:]))
    if kind == "fragment" and not words:
        return upstream_fragment()
    raise ValueError(f"unknown kernel spec {spec!r}")


def main(argv: list[str]) -> None:
    repeats = int(argv[0])
    for spec in argv[1:]:
        kernel = kernel_of(spec)
        seconds = best_time(lambda kernel=kernel: tvm.tirx.build(kernel, target=SM100A, pipeline="tirx"), repeats)
        print(f"{seconds:.9f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
