"""Measurements of the Blackwell attention forward (``examples/attention.py``) from the code the assembler makes, for
``bench_attention.py``: :func:`measure` returns one row of numbers per case (seq 8192, head dim 128, bfloat16,
causal and not, by default).

* registers per thread and spilled bytes (``ptxas -v``). The kernel is one function and sets no per-role register
  budget (no ``setmaxnreg``), so every role runs with the same registers; ptxas caps them at 128 (14 warps over the
  four SM sub-partitions: four warps of 32 threads on one, 64 K registers / 4 / 128). That cap is why ``block_n`` is
  64: a 128-column S is 128 registers per softmax thread before anything else (ptxas refuses its ``tcgen05.ld
  .32x32b.x128`` at 128).
* SASS per K/V tile of each role (``tools.measurement.sass_loop_around``: the smallest loop holding an instruction
  only that role issues, over the K/V tiles ptxas unrolled into it): the producer's loop (``UTMALDG``: 2 x head_dim
  / 64 boxes per tile), the MMA warp's (``UTCHMMA``: one iteration per K/V tile, both Q tiles), a softmax
  warpgroup's (``MUFU.EX2``: one iteration per K/V tile of its Q tile) and the correction warpgroup's (the smallest loop
  with ``STTM`` and no ``MUFU.EX2``: one iteration per K/V tile, both Q tiles; the epilogue follows the loop).
  Counts are static: both sides of a branch (the masked and unmasked softmax, the rescale and the epilogue) count;
  the correction's row "no warp rescaling" counts the path of a warp whose vote skips both Q tiles' O round trips
  (:func:`skipping_path`).
* ``MUFU.EX2`` (and software exp2: none, ``ex2.approx`` is one MUFU) per score element: the softmax loop's MUFU.EX2
  over the ``block_n`` scores a thread computes per K/V tile (``block_n`` for P, one for the row's rescale factor);
  and without the predicated ones (the factor's ``ex2`` runs only where the row's maximum moved).
* ``tcgen05.mma`` per K/V tile (PTX, the MMA loop): per Q tile ``head_dim / 16`` for S and ``block_n / 16`` for P V.
* shared bytes per CTA (static plus dynamic) and TMEM columns (used by the layouts, and allocated: a power of two).
* per K/V tile and Q tile, for a roofline: tensor-core FLOP (``4 * 128 * block_n * head_dim``), exponentials
  (``128 * block_n``), and the TMA bytes of the K and V tiles (shared by the CTA's Q tiles).

Usage: ``from _attention_blackwell import measure; measure()`` (needs nvcc; nvdisasm for the SASS rows).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from tirx_layout.tools.kernel_report import find_nvcc, load_example_module
from tirx_layout.tools.measurement import (
    device_source,
    launch_values,
    lower,
    measure_cuda,
    opcode,
    ptx_loop_around,
    sass_loop_around,
)

EXAMPLE = load_example_module(Path(__file__).resolve().parents[1] / "examples" / "attention.py")


def _ptx(cuda: str, arch: str = "sm_100a") -> str:
    """The PTX nvcc makes of ``cuda``."""
    with tempfile.TemporaryDirectory() as tmp:
        source, out = Path(tmp) / "kernel.cu", Path(tmp) / "kernel.ptx"
        source.write_text(cuda)
        subprocess.run([find_nvcc(), f"-arch={arch}", "-ptx", "-o", str(out), str(source)], check=True, timeout=600)
        return out.read_text()


_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_TARGET = re.compile(r"\(\s*(\.L_x_\d+)\s*\)")
_INSTRUCTION = re.compile(r"/\*[0-9a-f]+\*/\s+(.*?)\s*;")


def loop_without(listing: str, pattern: str, absent: str) -> list[str]:
    """The smallest SASS loop holding an instruction matching ``pattern`` and none matching ``absent`` (the
    correction's loop: tensor-memory loads and stores, no ``MUFU.EX2``, which the softmax's loop has), as
    ``sass_loop_around`` finds loops (a label and a later branch back to it; no ``EXIT`` inside).

    Example:
        >>> text = ".L_x_1:\\n /*0000*/ LDTM R4 ;\\n /*0010*/ MUFU.EX2 R4, R4 ;\\n /*0020*/ @P0 BRA `(.L_x_1) ;\\n"
        >>> text += ".L_x_2:\\n /*0030*/ LDTM R4 ;\\n /*0040*/ @P1 BRA `(.L_x_2) ;\\n"
        >>> loop_without(text, "LDTM", "MUFU")
        ['LDTM R4', '@P1 BRA `(.L_x_2)']
    """
    return [ins for _, ins in _loop_items_without(listing, pattern, absent) if ins]


def _loop_items_without(listing: str, pattern: str, absent: str) -> list[tuple]:
    """:func:`loop_without`'s loop as ``(label, None)`` and ``(None, instruction)`` items, labels kept."""
    items = []
    for line in listing.splitlines():
        label = _LABEL.match(line)
        found = _INSTRUCTION.search(line)
        if label:
            items.append((label.group(1), None))
        elif found:
            items.append((None, found.group(1)))
    labels = {name: i for i, (name, _) in enumerate(items) if name}
    best, best_count = [], None
    for end, (_, instruction) in enumerate(items):
        target = instruction and opcode(instruction).startswith("BRA") and _TARGET.search(instruction)
        if not target or opcode(instruction) == "BRA.U.ANY" or labels.get(target.group(1), end) >= end:
            continue
        span = items[labels[target.group(1)] : end + 1]
        body = [ins for _, ins in span if ins]
        holds = any(re.search(pattern, i) for i in body) and not any(re.search(absent, i) for i in body)
        if (
            holds
            and not any(opcode(i) in ("EXIT", "RET") for i in body)
            and (best_count is None or len(body) < best_count)
        ):
            best, best_count = span, len(body)
    return best


def skipping_path(listing: str, pattern: str, absent: str, skipped: str) -> list[str]:
    """The instructions of :func:`loop_without`'s loop one iteration runs when every conditional forward branch on
    a float comparison (``FSETP`` just before it: the warp's vote against 1) over an instruction matching
    ``skipped`` is taken, and no other branch is (the correction with no warp rescaling: each Q tile's branch on the
    vote jumps over its ``LDTM``/``FMUL``/``STTM``; a causal Q tile's own ``j < nt`` branch is not taken).

    Example:
        >>> text = ".L_x_1:\\n /*0000*/ FSETP.GEU.AND P0, PT, R4, 1, PT ;\\n /*0010*/ @P0 BRA `(.L_x_2) ;\\n"
        >>> text += " /*0020*/ LDTM R4 ;\\n"
        >>> text += " /*0030*/ STTM R4 ;\\n.L_x_2:\\n /*0040*/ SYNCS.ARRIVE ;\\n /*0050*/ @P1 BRA `(.L_x_1) ;\\n"
        >>> skipping_path(text, "STTM", "MUFU", "LDTM")
        ['FSETP.GEU.AND P0, PT, R4, 1, PT', '@P0 BRA `(.L_x_2)', 'SYNCS.ARRIVE', '@P1 BRA `(.L_x_1)']
    """
    items = _loop_items_without(listing, pattern, absent)
    where = {name: i for i, (name, _) in enumerate(items) if name}
    path, i = [], 0
    while i < len(items):
        instruction = items[i][1]
        if instruction:
            path.append(instruction)
            on_vote = len(path) > 1 and opcode(path[-2]).startswith("FSETP")
            target = on_vote and instruction.lstrip().startswith("@") and _TARGET.search(instruction)
            jump = where.get(target.group(1), -1) if target else -1
            if jump > i and any(ins and re.search(skipped, ins) for _, ins in items[i:jump]):
                i = jump
                continue
        i += 1
    return path


def _loop_per_tile(listing: str | None, pattern: str, per_tile: int) -> int | None:
    """SASS instructions of the smallest loop around ``pattern`` per K/V tile (``per_tile`` matches per tile)."""
    if listing is None:
        return None
    loop = sass_loop_around(listing, pattern)
    matches = sum(bool(re.match(pattern, opcode(i))) for i in loop)
    return round(len(loop) / max(1, matches // per_tile)) if loop else None


def measure_case(problem, block_n: int = 64, stages: int = 3, q_tiles: int = 2) -> dict[str, float | int | None]:
    """The numbers of one attention kernel (see the module docstring), as ``{row name: value}``.

    Example: ``measure_case(EXAMPLE.AttentionProblem(1, 2, 1, 8192, 8192, 128))["registers"]`` is 95 or so.
    """
    kernel = EXAMPLE.attention(problem, block_n, stages, q_tiles)
    lowered = lower(kernel, "tirx_layout")
    cuda = device_source(lowered, "tirx_layout")
    code = measure_cuda(cuda, "sm_100a", launch_values(lowered).get("tirx.use_dyn_shared_memory", 0))
    d = problem.head_dim
    atoms = d // 64
    listing = code.sass_listing
    mma_loop = ptx_loop_around(_ptx(cuda), "tcgen05.mma")
    softmax_loop = sass_loop_around(listing, r"MUFU\.EX2") if listing else []
    ex2 = sum(opcode(i) == "MUFU.EX2" for i in softmax_loop)
    always = sum(opcode(i) == "MUFU.EX2" and not i.lstrip().startswith("@") for i in softmax_loop)
    used_columns = EXAMPLE.budget(problem, block_n, stages, q_tiles)[1]
    return {
        "registers": code.registers,
        "spill bytes": code.spill_bytes,
        "SASS instructions": len(code.sass) if code.sass is not None else None,
        "SASS producer per K/V tile": _loop_per_tile(listing, r"UTMALDG", 2 * atoms),
        "SASS MMA warp per K/V tile": _loop_per_tile(listing, r"UTC\w*MMA", q_tiles * (d + block_n) // 16),
        "SASS softmax per K/V tile": len(softmax_loop) or None,
        "SASS correction per K/V tile": len(loop_without(listing, r"STTM", r"MUFU")) if listing else None,
        "SASS correction per K/V tile, no warp rescaling": (
            len(skipping_path(listing, r"STTM", r"MUFU", r"LDTM")) if listing else None
        ),
        "MUFU.EX2 per score element": ex2 / block_n if softmax_loop else None,
        "MUFU.EX2 unpredicated per score element": always / block_n if softmax_loop else None,
        "software exp2 per score element": 0.0,
        "tcgen05.mma per K/V tile": sum(opcode(i).startswith("tcgen05.mma") for i in mma_loop),
        "shared bytes": code.shared_bytes,
        "TMEM columns used": used_columns,
        "TMEM columns allocated": max(32, 1 << (used_columns - 1).bit_length()),
        "tensor FLOP per K/V tile per Q tile": 4 * EXAMPLE.BLOCK_M * block_n * d,
        "exp2 per K/V tile per Q tile": EXAMPLE.BLOCK_M * block_n,
        "TMA bytes per K/V tile": 2 * block_n * d * 2,
    }


def measure(seq: int = 8192, head_dim: int = 128, dtype: str = "bfloat16") -> dict[str, dict]:
    """:func:`measure_case` of the issue's production cases, causal and not, keyed ``"causal"`` / ``"not causal"``
    (batch 4, 16 query and K/V heads: the counts do not depend on them).

    Example: ``measure()["causal"]["MUFU.EX2 per score element"]``.
    """
    rows = {}
    for causal in (False, True):
        problem = EXAMPLE.AttentionProblem(4, 16, 16, seq, seq, head_dim, dtype, causal)
        rows["causal" if causal else "not causal"] = measure_case(problem)
    return rows


if __name__ == "__main__":
    for case, numbers in measure().items():
        print(case)
        for name, value in numbers.items():
            print(f"  {name:40} {value}")
