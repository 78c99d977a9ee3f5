"""What the assembler makes of our TMEM round trips, against the same kernels written with upstream TVM's
``Tx.wg.copy_async`` (its tcgen05.ld/st dispatch), in one table: registers per thread (``ptxas -v``), PTX
instructions in the kernel, and tcgen05 PTX instructions (all, the ld/st among them, the fences among them).

Upstream's kernels (``_upstream_round_trip.py``, which explains their ``allocated_addr=0``) are built in a child
process that loads no tirx_layout (``_upstream_child.py``). Each cell is ``ours/upstream``; the last column is the
ratio of the PTX instruction counts.

Usage: python benchmarks/bench_codegen.py        (needs nvcc; about two seconds per kernel)
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from _upstream_child import run_upstream_script

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import tmem_round_trips

from tirx_layout.tools.kernel_report import find_nvcc
from tirx_layout.transform import build

UPSTREAM = Path(__file__).resolve().parent / "_upstream_round_trip.py"


def upstream_round_trip_cuda(shape: str, dtype: str, datapath: str, cols: int = tmem_round_trips.COLS) -> str:
    """CUDA source of upstream's round trip (``_upstream_round_trip.py``), built in a child process without
    tirx_layout; ``RuntimeError`` with the child's last error line when the build fails."""
    return run_upstream_script(UPSTREAM, shape, dtype, datapath, cols, what=f"upstream {shape} {dtype} {datapath}")


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
    header = f"{'kernel (ours/upstream)':34}" + "".join(f"{k:>14}" for k in keys) + f"{'instr. ratio':>14}"
    print(header)
    print("-" * len(header))
    within = {"registers": 0, "tcgen05": 0}
    compared = 0
    for shape, dtype, datapath in tmem_round_trips.combinations():
        name = f"tmem_{shape}_{dtype}_{datapath}"
        ours = assemble(build(tmem_round_trips.round_trip_kernel(shape, dtype, datapath)).imports[0].inspect_source())
        try:
            theirs = assemble(upstream_round_trip_cuda(shape, dtype, datapath))
        except RuntimeError as err:
            theirs = {"error": str(err)[:150]}
        if "error" in theirs or "error" in ours:
            print(f"{name:34} ours {ours}  upstream: {theirs.get('error', theirs)}")
            continue
        ratio = ours["instructions"] / theirs["instructions"]
        print(f"{name:34}" + "".join(f"{f'{ours[k]}/{theirs[k]}':>14}" for k in keys) + f"{ratio:>14.2f}")
        compared += 1
        for key in within:
            within[key] += ours[key] <= theirs[key]
    print(
        f"target (never more than upstream): tcgen05 instructions in {within['tcgen05']}/{compared} kernels, "
        f"registers in {within['registers']}/{compared}"
    )


if __name__ == "__main__":
    main()
