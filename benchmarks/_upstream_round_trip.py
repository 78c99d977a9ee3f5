"""The TMEM round trip of ``examples/tmem_round_trips.py`` written with upstream TVM alone: upstream's
``tcgen05_atom_layout`` fragments, its ``tmem_datapath_layout`` and ``Tx.wg.copy_async`` (its tcgen05.ld/st
dispatch).

The TMEM buffer is declared with ``allocated_addr=0`` (the address a CTA's only allocation gets): upstream 0.27 does
not build ``allocated_addr=<shared slot>[0]`` in a ``T.device_entry()`` kernel (MakePackedAPI reports the slot as
an unbound host variable), so this kernel reads no address from shared memory. It allocates and frees TMEM as
ours does otherwise.

Run as a script (``python _upstream_round_trip.py SHAPE DTYPE DATAPATH COLS``) it builds that kernel with TVM's
``"tirx"`` pipeline and prints its CUDA source. Start it through ``_upstream_child.run_upstream_script`` (which sets
``TVM_DEVICE_BACKEND_AUTOLOAD=0``); tirx_layout is never imported here.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _upstream_gemm import upstream_cuda  # loads the CUDA backend's TVMScript names
from tvm.script import tirx as T
from tvm.script.tirx import tile as Tx
from tvm.tirx import layout as upstream

TMEM_COLUMNS = 32  # tcgen05.alloc takes a power of two >= 32; every round trip fits in 32 columns


def upstream_round_trip(shape: str, dtype: str, datapath: str, cols: int):
    """The round trip of ``tmem_round_trips.round_trip_kernel`` with upstream's layouts and ``Tx.wg`` copies."""
    rows = 128 if datapath == "D" else 64
    fragment = upstream.tcgen05_atom_layout(shape, (rows, cols), dtype)
    tmem_layout = upstream.tmem_datapath_layout(datapath, rows, cols)

    @T.prim_func
    def round_trip(A: T.Buffer((rows, cols), dtype), B: T.Buffer((rows, cols), dtype)):
        T.device_entry()
        warp = T.warp_id([4])
        wg = T.warpgroup_id([1])
        tx = T.thread_id([128])
        slot = T.alloc_shared([1], "uint32")
        if warp == 0:
            T.ptx.tcgen05.alloc.cta_group__1.sync.aligned.shared__cta.b32(T.address_of(slot[0]), T.uint32(TMEM_COLUMNS))
            T.ptx.tcgen05.relinquish_alloc_permit.cta_group__1.sync.aligned()
        T.cuda.cta_sync()
        acc = T.decl_buffer((rows, cols), dtype, scope="tmem", allocated_addr=0, layout=tmem_layout)
        into = T.alloc_local((rows, cols), dtype, layout=fragment)
        out = T.alloc_local((rows, cols), dtype, layout=fragment)
        Tx.wg.copy(into[0:rows, 0:cols], A[0:rows, 0:cols])
        Tx.wg.copy_async(acc[0:rows, 0:cols], into[0:rows, 0:cols])
        T.ptx.tcgen05.wait__st.sync.aligned()
        Tx.wg.copy_async(out[0:rows, 0:cols], acc[0:rows, 0:cols])
        T.ptx.tcgen05.wait__ld.sync.aligned()
        Tx.wg.copy(B[0:rows, 0:cols], out[0:rows, 0:cols])
        T.cuda.cta_sync()
        if warp == 0:
            T.ptx.tcgen05.dealloc.cta_group__1.sync.aligned.b32(slot[0], T.uint32(TMEM_COLUMNS))

    return round_trip


def main(argv: list[str]) -> None:
    shape, dtype, datapath, cols = argv[0], argv[1], argv[2], int(argv[3])
    cuda, _lowered = upstream_cuda(upstream_round_trip(shape, dtype, datapath, cols))
    sys.stdout.write(cuda)


if __name__ == "__main__":
    main(sys.argv[1:])
