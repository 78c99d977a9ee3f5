"""What the assembler makes of our TMEM round trips, against the same kernels written with upstream TVM's
``Tx.wg.copy_async`` (its tcgen05.ld/st dispatch), in one table: registers per thread (``ptxas -v``), PTX
instructions in the kernel, and tcgen05 PTX instructions (all, the ld/st among them, the fences among them).

The upstream kernels declare their TMEM buffer with ``allocated_addr=0`` (the address a CTA's only allocation gets):
upstream 0.27 does not build ``allocated_addr=<shared slot>[0]`` in a ``T.device_entry()`` kernel (MakePackedAPI
reports the slot as an unbound host variable), so the upstream column reads no address from shared memory.
Both kernels allocate and free TMEM the same way otherwise.

Usage: python benchmarks/bench_codegen.py        (needs nvcc; about two seconds per kernel)
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import tvm
from tvm.script import tirx as T
from tvm.script.tirx import tile as Tx
from tvm.tirx import layout as upstream

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import tmem_round_trips

from tirx_layout.tools.kernel_report import find_nvcc
from tirx_layout.transform import build

SM100A = tvm.target.Target({"kind": "cuda", "arch": "sm_100a"})


def upstream_round_trip(shape: str, dtype: str, datapath: str, cols: int = tmem_round_trips.COLS):
    """The round trip of ``tmem_round_trips.round_trip_kernel`` with upstream's layouts and ``Tx.wg`` copies."""
    rows = 128 if datapath == "D" else 64
    fragment = upstream.tcgen05_atom_layout(shape, (rows, cols), dtype)
    tmem_layout = upstream.tmem_datapath_layout(datapath, rows, cols)
    ncols = 32

    @T.prim_func
    def round_trip(A: T.Buffer((rows, cols), dtype), B: T.Buffer((rows, cols), dtype)):
        T.device_entry()
        warp = T.warp_id([4])
        wg = T.warpgroup_id([1])
        tx = T.thread_id([128])
        slot = T.alloc_shared([1], "uint32")
        if warp == 0:
            T.ptx.tcgen05.alloc.cta_group__1.sync.aligned.shared__cta.b32(T.address_of(slot[0]), T.uint32(ncols))
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
            T.ptx.tcgen05.dealloc.cta_group__1.sync.aligned.b32(slot[0], T.uint32(ncols))

    return round_trip


def assemble(cuda: str) -> dict:
    """Registers (ptxas -v), PTX instructions and tcgen05 PTX instructions of the kernel in ``cuda``."""
    nvcc = find_nvcc()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "k.cu"
        source.write_text(cuda)
        done = subprocess.run(
            [nvcc, "-arch=sm_100a", "-cubin", "-Xptxas", "-v", "-o", f"{tmp}/k.cubin", str(source)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode:
            return {"error": done.stderr.strip().splitlines()[-1]}
        subprocess.run(
            [nvcc, "-arch=sm_100a", "-ptx", "-o", f"{tmp}/k.ptx", str(source)],
            check=True,
            capture_output=True,
            timeout=600,
        )
        ptx = Path(f"{tmp}/k.ptx").read_text()
    registers = int(re.search(r"Used (\d+) registers", done.stderr).group(1))
    body = ptx[ptx.index(".entry") :]
    lines = [line.strip() for line in body.splitlines()]
    instructions = [line for line in lines if line.endswith(";") and not line.startswith((".", "//", "{", "}"))]
    tcgen05 = [line for line in instructions if "tcgen05." in line]
    moves = [line for line in tcgen05 if line.startswith(("tcgen05.ld", "tcgen05.st"))]
    fences = [line for line in tcgen05 if line.startswith("tcgen05.fence")]
    return {
        "registers": registers,
        "instructions": len(instructions),
        "tcgen05": len(tcgen05),
        "ld/st": len(moves),
        "fences": len(fences),
    }


def main() -> None:
    if find_nvcc() is None:
        print("bench_codegen: nvcc not found; nothing to measure")
        return
    keys = ("registers", "instructions", "tcgen05", "ld/st", "fences")
    header = f"{'kernel (ours/upstream)':34}" + "".join(f"{k:>14}" for k in keys)
    print(header)
    print("-" * len(header))
    within = {"registers": 0, "tcgen05": 0}
    compared = 0
    for shape, dtype, datapath in tmem_round_trips.combinations():
        name = f"tmem_{shape}_{dtype}_{datapath}"
        ours = assemble(build(tmem_round_trips.round_trip_kernel(shape, dtype, datapath)).imports[0].inspect_source())
        try:
            theirs_cuda = (
                tvm.tirx.build(upstream_round_trip(shape, dtype, datapath), target=SM100A, pipeline="tirx")
                .imports[0]
                .inspect_source()
            )
            theirs = assemble(theirs_cuda)
        except Exception as err:
            theirs = {"error": str(err).strip().splitlines()[-1][:60]}
        if "error" in theirs or "error" in ours:
            print(f"{name:34} ours {ours}  upstream: {theirs.get('error', theirs)}")
            continue
        print(f"{name:34}" + "".join(f"{f'{ours[k]}/{theirs[k]}':>14}" for k in keys))
        compared += 1
        for key in within:
            within[key] += ours[key] <= theirs[key]
    print(
        f"target (never more than upstream): tcgen05 instructions in {within['tcgen05']}/{compared} kernels, "
        f"registers in {within['registers']}/{compared}"
    )


if __name__ == "__main__":
    main()
