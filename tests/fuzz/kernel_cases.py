"""Kernel fuzz cases: random kernels of every tile op, each a :class:`~fuzz.cases.Case` whose source builds the
kernel for its architecture, assembles it (a sample of cases: nvcc takes seconds), simulates it against numpy on
exact integer-valued inputs and checks every output element was written exactly once (``kernel_checks.run_kernel``).

``case(seed, index)`` is a pure function of its arguments, like the algebra fuzzer's, so the supervisor names and
anyone replays a case from ``(seed, index)``. Generators are rows of :data:`GENERATORS` (name, function, weight):
a new op is one generator added there, returning a :class:`Kernel`.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

from fuzz.cases import Case

#: Share of cases assembled with nvcc (each takes ~1-5 s on a busy core); the rest are built and simulated only.
ASSEMBLE_SHARE = 0.1
COPY_DTYPES = ["float32", "float16", "bfloat16", "int8", "float8_e4m3fn", "int32", "uint8"]
MODES = ["none", "32B", "64B", "128B"]
SIZE = {"float32": 4, "int32": 4, "float16": 2, "bfloat16": 2, "int8": 1, "uint8": 1, "float8_e4m3fn": 1}
SIZE["float8_e5m2"] = 1
UNIT_THREADS = {"warp": 32, "warpgroup": 128}


@dataclass
class Kernel:
    """A generated kernel: TVMScript ``text`` (``tirx_layout`` names in scope), its ``arch``, its inputs
    (name -> (dtype, shape)) and expected outputs (name -> numpy expression over the inputs)."""

    text: str
    arch: str
    inputs: dict
    expected: dict


def _layout_arg(layout: str | None, align: int | None = None) -> str:
    out = "" if layout is None else f", layout={layout}"
    return out + ("" if align is None else f", align={align}")


def _shared_layout(rng, dtype: str, shape: tuple) -> tuple[str | None, int | None]:
    """A shared tile's layout: left to inference, row-major, an MMA operand layout that fits the tile (a swizzle
    whose width divides its rows, aligned to 1024), or one in a random mode, majorness and alignment."""
    roll = rng.random()
    if roll < 0.3:
        return None, None
    if roll < 0.4:
        return f"T.layout('S[{shape}]')", None
    if roll < 0.8:
        row_bytes = shape[-1] * SIZE[dtype]
        mode = rng.choice([m for m in MODES if m == "none" or row_bytes % int(m[:-1]) == 0])
        return f'mma_shared_layout("{dtype}", "{mode}", {shape})', 1024
    mode = rng.choice(MODES)
    major = rng.choice(["K", "K", "MN"])
    align = rng.choice([1024, 1024, 512, 256, None])
    return f'mma_shared_layout("{dtype}", "{mode}", {shape}, major="{major}")', align


def _fragment_layout(rng, rows: int, cols: int, threads: int, scope: str) -> str | None:
    """A register fragment of ``(rows, cols)``: inferred, or a random family (some leave the scope's units: refused)."""
    family = rng.choice(["inferred", "inferred", "lanes", "warps", "wg_warps", "rows", "replica", "padded"])
    n = rows * cols
    v = rng.choice([v for v in (1, 2, 4, 8) if cols % v == 0])
    warps = max(threads // 32, 1)
    if family == "inferred":
        return None
    if family == "lanes":
        return f"T.layout('S[({-(-n // (32 * v))}, 32, {v}):({v}, 1@laneid, 1)]')"
    if family == "warps":
        return f"T.layout('S[({-(-n // (32 * v * warps))}, {warps}, 32, {v}):({v}, 1@warpid, 1@laneid, 1)]')"
    if family == "wg_warps":
        w = min(warps, 4)
        return f"T.layout('S[({-(-n // (32 * v * w))}, {w}, 32, {v}):({v}, 1@wid_in_wg, 1@laneid, 1)]')"
    if family == "rows" and rows <= 128:
        return f"wg_local_layout({cols}, {rows})"
    if family == "replica":
        return f"T.layout('S[({-(-n // (16 * v))}, 16, {v}):({v}, 1@laneid, 1)] + R[2:16@laneid]')"
    return f"T.layout('S[({-(-n // (32 * v)) + 1}, 32, {v}):({v}, 1@laneid, 1)]')"  # padded: a predicated tail


def _units(rng, threads: int) -> tuple[str, int, str]:
    """A copy scope the kernel has the threads for, how many units of it, and the unit's index expression."""
    scopes = ["cta"] + [s for s, t in UNIT_THREADS.items() if t <= threads]
    scope = rng.choice(scopes)
    if scope == "cta":
        return scope, 1, "0"
    return scope, threads // UNIT_THREADS[scope], f"tx // {UNIT_THREADS[scope]}"


def _header(params: str, threads: int) -> str:
    return f"""
@T.prim_func
def k({params}):
    T.device_entry()
    tx = T.thread_id([{threads}])
"""


def copy_fragment(rng) -> Kernel:
    """Global -> (shared ->) fragment -> global, each unit of a random scope its own rows (the issue-33 kernels)."""
    dtype = rng.choice(COPY_DTYPES)
    threads = rng.choice([32, 64, 128, 256])
    scope, units, unit = _units(rng, threads)
    rows = rng.choice([4, 8, 16, 32, 64, 128])
    cols = rng.choice([4, 8, 16, 32, 64, 96])
    frag = _fragment_layout(rng, rows, cols, threads, scope)
    region = f"{unit} * {rows} : {unit} * {rows} + {rows}, 0:{cols}"
    body = _header(
        f'A: T.Buffer(({units * rows}, {cols}), "{dtype}"), B: T.Buffer(({units * rows}, {cols}), "{dtype}")', threads
    )
    body += f'    frag = T.alloc_local(({rows}, {cols}), "{dtype}"{_layout_arg(frag)})\n'
    if rng.random() < 0.4 and scope == "cta":
        layout, align = _shared_layout(rng, dtype, (rows, cols))
        body += f'    smem = T.alloc_shared(({rows}, {cols}), "{dtype}"{_layout_arg(layout, align)})\n'
        body += f'    T.tile_copy(smem, A[{region}], "{scope}")\n    T.cuda.cta_sync()\n'
        body += f'    T.tile_copy(frag, smem, "{scope}")\n'
    else:
        body += f'    T.tile_copy(frag, A[{region}], "{scope}")\n'
    body += f'    T.tile_copy(B[{region}], frag, "{scope}")\n'
    return Kernel(body, "sm_100a", {"A": (dtype, (units * rows, cols))}, {"B": "A"})


def copy_shared(rng) -> Kernel:
    """Global -> shared (a random swizzle, or inferred) -> global, at a random scope."""
    dtype = rng.choice(COPY_DTYPES)
    threads = rng.choice([32, 64, 128, 256])
    scope, units, unit = _units(rng, threads)
    rows = rng.choice([8, 16, 32, 64])
    cols = rng.choice([8, 16, 32, 64, 128])
    layout, align = _shared_layout(rng, dtype, (units, rows, cols) if units > 1 else (rows, cols))
    shape = (units, rows, cols) if units > 1 else (rows, cols)
    tile = f"smem[{unit}]" if units > 1 else "smem"
    region = f"{unit} * {rows} : {unit} * {rows} + {rows}, 0:{cols}"
    body = _header(
        f'A: T.Buffer(({units * rows}, {cols}), "{dtype}"), B: T.Buffer(({units * rows}, {cols}), "{dtype}")', threads
    )
    body += f'    smem = T.alloc_shared({shape}, "{dtype}"{_layout_arg(layout, align)})\n'
    body += f'    T.tile_copy({tile}, A[{region}], "{scope}")\n'
    body += "    T.cuda.cta_sync()\n"
    body += f'    T.tile_copy(B[{region}], {tile}, "{scope}")\n'
    return Kernel(body, "sm_100a", {"A": (dtype, (units * rows, cols))}, {"B": "A"})


def fill(rng) -> Kernel:
    """``T.tile_fill`` of a global, shared or fragment tile, then copied out."""
    dtype = rng.choice(COPY_DTYPES)
    threads = rng.choice([32, 128, 256])
    rows, cols = rng.choice([8, 16, 32, 64]), rng.choice([8, 16, 32, 64])
    value = rng.choice([0, 1, -3, 7]) if not dtype.startswith("uint") else rng.choice([0, 1, 7])
    where = rng.choice(["global", "shared", "local"])
    body = _header(f'B: T.Buffer(({rows}, {cols}), "{dtype}")', threads)
    if where == "global":
        body += f"    T.tile_fill(B, {value})\n"
    elif where == "shared":
        layout, align = _shared_layout(rng, dtype, (rows, cols))
        layout = layout or f"T.layout('S[({rows}, {cols})]')"
        body += f'    smem = T.alloc_shared(({rows}, {cols}), "{dtype}"{_layout_arg(layout, align)})\n'
        body += f"    T.tile_fill(smem, {value})\n    T.cuda.cta_sync()\n    T.tile_copy(B, smem)\n"
    else:
        frag = _fragment_layout(rng, rows, cols, threads, "cta") or f"T.layout('S[({rows}, {cols})]')"
        if "@" not in frag and "wg_local" not in frag:
            frag = f"T.layout('S[({-(-rows * cols // 32)}, 32):(1, 1@laneid)]')"
        body += f'    frag = T.alloc_local(({rows}, {cols}), "{dtype}", layout={frag})\n'
        body += f"    T.tile_fill(frag, {value})\n    T.tile_copy(B, frag)\n"
    return Kernel(body, "sm_100a", {}, {"B": f"np.full(({rows}, {cols}), {value})"})


def tmem_round_trip(rng) -> Kernel:
    """Global -> fragment -> TMEM (tcgen05.st) -> fragment (tcgen05.ld) -> global, fragments inferred or given."""
    dtype = rng.choice(["float32", "float16", "bfloat16", "int32"])
    datapath = rng.choice(["D", "F"])
    rows = 128 if datapath == "D" else 64
    cols = rng.choice([8, 16, 32, 64])
    body = _header(f'A: T.Buffer(({rows}, {cols}), "{dtype}"), B: T.Buffer(({rows}, {cols}), "{dtype}")', 128)
    shape = rng.choice(["32x32b", "16x64b", "16x128b", "16x256b"]) if rng.random() < 0.3 else None
    given = "" if shape is None else f', layout=tcgen05_atom_layout("{shape}", ({rows}, {cols}), "{dtype}")'
    body += f'    t = T.alloc_tmem(({rows}, {cols}), "{dtype}", layout=tmem_datapath_layout("{datapath}", {rows}, {cols}))\n'
    body += f'    regs_in = T.alloc_local(({rows}, {cols}), "{dtype}"{given})\n'
    body += f'    regs = T.alloc_local(({rows}, {cols}), "{dtype}")\n'
    body += '    T.tile_copy(regs_in, A, "warpgroup")\n    T.tile_copy(t, regs_in, "warpgroup")\n'
    body += '    T.tile_copy(regs, t, "warpgroup")\n    T.tile_copy(B, regs, "warpgroup")\n'
    return Kernel(body, "sm_100a", {"A": (dtype, (rows, cols))}, {"B": "A"})


def tcgen05_cp(rng) -> Kernel:
    """Global -> shared (inferred or given; a stage of a ring or whole) -> TMEM (tcgen05.cp) -> fragment -> global."""
    dtype = rng.choice(["float32", "float16", "bfloat16"])
    cols = rng.choice([8, 16, 32, 64]) * (4 // SIZE[dtype])
    stages = rng.choice([1, 1, 2, 3])
    stage = rng.randrange(stages)
    shape = (128, cols) if stages == 1 else (stages, 128, cols)
    layout, align = _shared_layout(rng, dtype, shape)
    region = "sm" if stages == 1 else f"sm[{stage}, 0:128, 0:{cols}]"
    body = _header(f'A: T.Buffer((128, {cols}), "{dtype}"), B: T.Buffer((128, {cols}), "{dtype}")', 128)
    body += f'    sm = T.alloc_shared({shape}, "{dtype}"{_layout_arg(layout, align)})\n'
    body += f'    t = T.alloc_tmem((128, {cols}), "{dtype}", layout=tmem_datapath_layout("D", 128, {cols}))\n'
    body += f'    regs = T.alloc_local((128, {cols}), "{dtype}")\n'
    body += f"    T.tile_copy({region}, A)\n    T.cuda.cta_sync()\n    T.tile_copy(t, {region})\n"
    body += '    T.tile_copy(regs, t, "warpgroup")\n    T.tile_copy(B, regs, "warpgroup")\n'
    return Kernel(body, "sm_100a", {"A": (dtype, (128, cols))}, {"B": "A"})


#: MMA kinds by operand dtype: (accumulator dtype, K elements per 32 bytes).
MMA_KINDS = {
    "float16": "float32",
    "bfloat16": "float32",
    "float32": "float32",
    "float8_e4m3fn": "float32",
    "float8_e5m2": "float32",
    "int8": "int32",
}
GEMM = "A @ B.T"


def _operand(rng, name: str, dtype: str, shape: tuple, stages: int) -> tuple[str, str]:
    """A shared MMA operand's allocation and the region the MMA reads (a stage of a ring, or the whole tile)."""
    full = shape if stages == 1 else (stages, *shape)
    layout, align = _shared_layout(rng, dtype, full)
    stage = rng.randrange(stages)
    region = name if stages == 1 else f"{name}[{stage}, 0:{shape[0]}, 0:{shape[1]}]"
    return f'    {name} = T.alloc_shared({full}, "{dtype}"{_layout_arg(layout, align)})\n', region


def mma_tcgen05(rng) -> Kernel:
    """``T.tile_mma`` on sm_100a: every kind, M 64/128, random N, K, swizzles, majorness, stages, A in shared memory
    or TMEM (tcgen05.st or tcgen05.cp)."""
    dtype = rng.choice(list(MMA_KINDS))
    acc = MMA_KINDS[dtype]
    m = rng.choice([64, 128])
    n = rng.choice([16, 32, 48, 64, 96, 112, 128]) if m == 128 else rng.choice([8, 24, 64, 112, 200])
    k = rng.choice([1, 2, 4]) * 32 // SIZE[dtype]
    stages = rng.choice([1, 1, 2])
    form = rng.choice(["ss", "ss", "ss", "ts_st", "ts_cp"]) if m == 128 and SIZE[dtype] == 2 else "ss"
    body = _header(
        f'A: T.Buffer(({m}, {k}), "{dtype}"), B: T.Buffer(({n}, {k}), "{dtype}"), D: T.Buffer(({m}, {n}), "{acc}")',
        128,
    )
    alloc_b, b = _operand(rng, "b_tile", dtype, (n, k), stages)
    body += alloc_b
    datapath = "D" if m == 128 else "F"
    body += f'    acc = T.alloc_tmem(({m}, {n}), "{acc}", layout=tmem_datapath_layout("{datapath}", {m}, {n}))\n'
    body += f'    regs = T.alloc_local(({m}, {n}), "{acc}")\n'
    if form == "ss":
        alloc_a, a = _operand(rng, "a_tile", dtype, (m, k), stages)
        body += alloc_a + f"    T.tile_copy({a}, A)\n"
    else:
        a = "a_tmem"
        body += f'    a_tmem = T.alloc_tmem(({m}, {k}), "{dtype}", layout=tmem_datapath_layout("D", {m}, {k}))\n'
        if form == "ts_st":
            body += f'    a_regs = T.alloc_local(({m}, {k}), "{dtype}")\n'
            body += '    T.tile_copy(a_regs, A, "warpgroup")\n    T.tile_copy(a_tmem, a_regs, "warpgroup")\n'
        else:
            body += f'    a_tile = T.alloc_shared(({m}, {k}), "{dtype}", align=1024)\n'
            body += "    T.tile_copy(a_tile, A)\n    T.cuda.cta_sync()\n    T.tile_copy(a_tmem, a_tile)\n"
    body += f"    T.tile_copy({b}, B)\n    T.cuda.cta_sync()\n"
    body += f"    T.tile_mma(acc, {a}, {b})\n"
    body += '    T.tile_copy(regs, acc, "warpgroup")\n    T.tile_copy(D, regs, "warpgroup")\n'
    return Kernel(body, "sm_100a", {"A": (dtype, (m, k)), "B": (dtype, (n, k))}, {"D": GEMM})


def mma_wgmma(rng) -> Kernel:
    """``T.tile_mma`` on sm_90a (wgmma): every kind, M 64 (or 128 over two warpgroups), random N, K, swizzles,
    majorness, stages, A in shared memory or registers."""
    dtype = rng.choice(list(MMA_KINDS))
    acc = MMA_KINDS[dtype]
    warpgroups = rng.choice([1, 1, 2])
    m = 64 * warpgroups
    n = rng.choice([8, 16, 24, 64, 128, 200, 256])
    k = rng.choice([1, 2, 4]) * 32 // SIZE[dtype]
    stages = rng.choice([1, 1, 2])
    threads = 128 * warpgroups
    body = _header(
        f'A: T.Buffer(({m}, {k}), "{dtype}"), B: T.Buffer(({n}, {k}), "{dtype}"), D: T.Buffer(({m}, {n}), "{acc}")',
        threads,
    )
    alloc_b, b = _operand(rng, "b_tile", dtype, (n, k), stages)
    body += alloc_b
    body += (
        f'    acc = T.alloc_local(({m}, {n}), "{acc}", layout=wgmma_accumulator_layout({n}, "{acc}", {warpgroups}))\n'
    )
    if rng.random() < 0.25:
        body += f'    a_regs = T.alloc_local(({m}, {k}), "{dtype}", layout=wgmma_operand_a_layout({k}, "{dtype}", {warpgroups}))\n'
        body += "    T.tile_copy(a_regs, A)\n"
        a = "a_regs"
    else:
        alloc_a, a = _operand(rng, "a_tile", dtype, (m, k), stages)
        body += alloc_a + f"    T.tile_copy({a}, A)\n"
    body += f"    T.tile_copy({b}, B)\n    T.cuda.cta_sync()\n"
    body += f"    T.tile_mma(acc, {a}, {b})\n    T.tile_copy(D, acc)\n"
    return Kernel(body, "sm_90a", {"A": (dtype, (m, k)), "B": (dtype, (n, k))}, {"D": GEMM})


def _tma_tile(rng, dtypes: list, aligns: list | None) -> tuple:
    """A TMA's shared tile: ``(dtype, rows, cols, arch, the kernel's text up to its allocation)``, one swizzle atom
    of columns (32 bytes for none), aligned to a random one of ``aligns`` (1024 when ``None``)."""
    dtype = rng.choice(dtypes)
    mode = rng.choice(MODES)
    cols = max({"none": 32, "32B": 32, "64B": 64, "128B": 128}[mode] // SIZE[dtype], 8)
    rows = rng.choice([8, 64, 128])
    layout = "None" if mode == "none" else f'mma_shared_layout("{dtype}", "{mode}", ({rows}, {cols}))'
    align = 1024 if aligns is None else rng.choice(aligns)
    arch = rng.choice(["sm_90a", "sm_100a"])
    body = _header(f'A: T.Buffer(({rows}, {cols}), "{dtype}"), B: T.Buffer(({rows}, {cols}), "{dtype}")', 128)
    body += f'    As = T.alloc_shared(({rows}, {cols}), "{dtype}", layout={layout}, align={align})\n'
    return dtype, rows, cols, arch, body


def tma(rng) -> Kernel:
    """``T.tile_copy_async`` (a TMA load into a shared tile, swizzled or not, completing on an mbarrier) then the
    threads copy the tile out; on sm_90a or sm_100a."""
    dtype, rows, cols, arch, body = _tma_tile(
        rng, ["float32", "float16", "bfloat16", "float8_e4m3fn"], [1024, 1024, 128]
    )
    body += '    bars = T.alloc_shared((1,), "uint64")\n    T.mbarrier_init(bars[0], 1)\n'
    body += "    T.tile_copy_async(As, A, bars[0])\n    T.mbarrier_wait(bars[0], 0)\n    T.tile_copy(B, As)\n"
    return Kernel(body, arch, {"A": (dtype, (rows, cols))}, {"B": "A"})


def mma_k_loop(rng) -> Kernel:
    """A K loop over two-stage shared rings, the asynchronous forms: on sm_100a each ``T.tile_mma`` commits to the
    stage's mbarrier (``barrier=``) and a stage is refilled after its phase; on sm_90a ``wait=False`` then
    ``T.tile_mma_wait(1)``, and ``T.tile_mma_wait(0)`` before the epilogue."""
    arch = rng.choice(["sm_100a", "sm_90a"])
    dtype = rng.choice(["float16", "bfloat16", "float32", "float8_e4m3fn", "int8"])
    acc = MMA_KINDS[dtype]
    kw = rng.choice([1, 2]) * 32 // SIZE[dtype]
    tiles = rng.choice([2, 3, 4])
    m = 128 if arch == "sm_100a" else 64
    n = rng.choice([16, 32, 64]) if arch == "sm_100a" else rng.choice([8, 32, 64, 128])
    k = kw * tiles
    body = _header(
        f'A: T.Buffer(({m}, {k}), "{dtype}"), B: T.Buffer(({n}, {k}), "{dtype}"), D: T.Buffer(({m}, {n}), "{acc}")',
        128,
    )
    for name, rows in (("a_tile", m), ("b_tile", n)):
        layout, align = _shared_layout(rng, dtype, (2, rows, kw))
        body += f'    {name} = T.alloc_shared((2, {rows}, {kw}), "{dtype}"{_layout_arg(layout, align)})\n'
    copies = (
        f"        T.tile_copy(a_tile[kt % 2], A[0:{m}, kt * {kw} : kt * {kw} + {kw}])\n"
        f"        T.tile_copy(b_tile[kt % 2], B[0:{n}, kt * {kw} : kt * {kw} + {kw}])\n"
    )
    if arch == "sm_100a":
        last = tiles - 1
        body += '    bars = T.alloc_shared((2,), "uint64")\n'
        body += f'    acc = T.alloc_tmem(({m}, {n}), "{acc}", layout=tmem_datapath_layout("D", {m}, {n}))\n'
        body += f'    regs = T.alloc_local(({m}, {n}), "{acc}")\n'
        body += "    T.mbarrier_init(bars[0], 1)\n    T.mbarrier_init(bars[1], 1)\n"
        body += f"    for kt in T.serial({tiles}):\n        if kt >= 2:\n"
        body += "            T.mbarrier_wait(bars[kt % 2], (kt // 2 - 1) % 2)\n" + copies
        body += "        T.tile_mma(acc, a_tile[kt % 2], b_tile[kt % 2], accumulate=kt > 0, barrier=bars[kt % 2])\n"
        body += f"    T.mbarrier_wait(bars[{last % 2}], {last // 2 % 2})\n"
        body += '    T.tile_copy(regs, acc, "warpgroup")\n    T.tile_copy(D, regs, "warpgroup")\n'
    else:
        body += f'    acc = T.alloc_local(({m}, {n}), "{acc}", layout=wgmma_accumulator_layout({n}, "{acc}"))\n'
        body += f"    for kt in T.serial({tiles}):\n" + copies
        body += "        T.tile_mma(acc, a_tile[kt % 2], b_tile[kt % 2], accumulate=kt > 0, wait=False)\n"
        body += "        T.tile_mma_wait(1)\n    T.tile_mma_wait(0)\n    T.tile_copy(D, acc)\n"
    return Kernel(body, arch, {"A": (dtype, (m, k)), "B": (dtype, (n, k))}, {"D": GEMM})


def tma_store(rng) -> Kernel:
    """The threads fill a shared tile (swizzled or not), a TMA store (``T.tile_copy_async(global, shared)``) writes
    it out, ``T.tma_store_wait()`` before the kernel ends."""
    dtype, rows, cols, arch, body = _tma_tile(rng, ["float32", "float16", "bfloat16", "int8"], None)
    body += "    T.tile_copy(As, A)\n    T.cuda.cta_sync()\n"
    body += "    T.tile_copy_async(B, As)\n    T.tma_store_wait()\n"
    return Kernel(body, arch, {"A": (dtype, (rows, cols))}, {"B": "A"})


def fill_tmem(rng) -> Kernel:
    """``T.tile_fill`` of a TMEM tile (a filled fragment stored with tcgen05.st), read back through registers."""
    dtype = rng.choice(["float32", "float16", "bfloat16", "int32"])
    datapath = rng.choice(["D", "F"])
    rows = 128 if datapath == "D" else 64
    cols = rng.choice([8, 16, 32, 64])
    value = rng.choice([0, 1, -3, 7])
    body = _header(f'B: T.Buffer(({rows}, {cols}), "{dtype}")', 128)
    body += f'    t = T.alloc_tmem(({rows}, {cols}), "{dtype}", layout=tmem_datapath_layout("{datapath}", {rows}, {cols}))\n'
    body += f'    regs = T.alloc_local(({rows}, {cols}), "{dtype}")\n'
    body += f'    T.tile_fill(t, {value}, "warpgroup")\n'
    body += '    T.tile_copy(regs, t, "warpgroup")\n    T.tile_copy(B, regs, "warpgroup")\n'
    return Kernel(body, "sm_100a", {}, {"B": f"np.full(({rows}, {cols}), {value})"})


def mma_block_scaled(rng) -> Kernel:
    """A block-scaled ``T.tile_mma`` (kind mxf8f6f4 on sm_100a): A and B float8 in shared memory, one float8_e8m0fnu
    scale per 32 K elements of each row copied into TMEM with tcgen05.cp, the scale-factor layouts inside the
    accumulator's allocation."""
    a, b = rng.choice(["float8_e4m3fn", "float8_e5m2"]), rng.choice(["float8_e4m3fn", "float8_e5m2"])
    k = rng.choice([128, 256])
    kb, n = k // 32, rng.choice([112, 128])
    sfb_column = n + 4 * (k // 128)
    body = _header(
        f'A: T.Buffer((128, {k}), "{a}"), B: T.Buffer(({n}, {k}), "{b}"), SA: T.Buffer((128, {kb}), '
        f'"float8_e8m0fnu"), SB: T.Buffer((128, {kb}), "float8_e8m0fnu"), D: T.Buffer((128, {n}), "float32")',
        128,
    )
    for name, dtype, rows in (("As", a, 128), ("Bs", b, n)):
        layout, align = _shared_layout(rng, dtype, (rows, k))
        body += f'    {name} = T.alloc_shared(({rows}, {k}), "{dtype}"{_layout_arg(layout, align)})\n'
    body += f'    sas = T.alloc_shared((128, {kb}), "float8_e8m0fnu")\n'
    body += f'    sbs = T.alloc_shared((128, {kb}), "float8_e8m0fnu")\n'
    body += f'    acc = T.alloc_tmem((128, {n}), "float32", layout=tmem_datapath_layout("D", 128, {n}))\n'
    body += (
        f'    sfa = T.alloc_tmem((128, {kb}), "float8_e8m0fnu", layout=mma_scale_factor_layout(128, {kb}, '
        f"column={n}), within=acc)\n"
    )
    body += (
        f'    sfb = T.alloc_tmem((128, {kb}), "float8_e8m0fnu", layout=mma_scale_factor_layout(128, {kb}, '
        f"column={sfb_column}), within=acc)\n"
    )
    body += f'    regs = T.alloc_local((128, {n}), "float32")\n'
    body += "    T.tile_copy(As, A)\n    T.tile_copy(Bs, B)\n    T.tile_copy(sas, SA)\n    T.tile_copy(sbs, SB)\n"
    body += "    T.cuda.cta_sync()\n    T.tile_copy(sfa, sas)\n    T.tile_copy(sfb, sbs)\n"
    body += f"    T.tile_mma(acc, As, Bs, scale_a=sfa, scale_b=sfb[0:{n}, 0:{kb}])\n"
    body += '    T.tile_copy(regs, acc, "warpgroup")\n    T.tile_copy(D, regs, "warpgroup")\n'
    expected = f"(A * np.repeat(SA, 32, axis=1)) @ (B * np.repeat(SB[:{n}], 32, axis=1)).T"
    inputs = {"A": (a, (128, k)), "B": (b, (n, k)), "SA": ("float8_e8m0fnu", (128, kb))}
    inputs["SB"] = ("float8_e8m0fnu", (128, kb))
    return Kernel(body, "sm_100a", inputs, {"D": expected})


# -- Generators of the ops issues 29-32 added: element-wise loops, reductions, casting copies, fragment exchanges,
# -- mma.sync on register fragments, cp.async. Inputs are integers in [-8, 8] (0..8 unsigned), so every expected
# -- value below is exact in the dtypes chosen.

#: Fragment dtypes element-wise loops and exchanges run on (integers and floats, each holding the results exactly).
PARALLEL_DTYPES = ["float32", "float16", "bfloat16", "int32", "int8"]
#: The element-wise bodies: (TIR of ``x`` = the element at ``[i, j]``, numpy of ``X`` and the index grids ``I, J``).
#: Each result stays within [-64, 64]: exact in every dtype of :data:`PARALLEL_DTYPES`.
ELEMENTWISE = [
    ("{x} + {x}", "2 * {X}"),
    ("T.max({x}, T.Cast('{d}', 0))", "np.maximum({X}, 0)"),
    ("T.if_then_else(j <= i, {x}, T.Cast('{d}', 0))", "np.where(J <= I, {X}, 0)"),
    ("{x} * T.Cast('{d}', 3) - T.Cast('{d}', (i + j) % 5)", "3 * {X} - (I + J) % 5"),
]


def _elementwise(rng, dtype: str, rows: int, cols: int, x: str) -> tuple[str, str]:
    """A random element-wise body over ``x`` and its numpy twin over ``A`` (a lambda of the index grids)."""
    tir, reference = rng.choice(ELEMENTWISE)
    expected = (
        f"(lambda I, J: {reference.format(X='A')})(*np.meshgrid(np.arange({rows}), np.arange({cols}), indexing='ij'))"
    )
    return tir.format(x=x, d=dtype), expected


def parallel(rng) -> Kernel:
    """``T.tile_parallel`` over a fragment (random family, the result fragment inferred or the same one), a shared
    tile or a global one (round-robin over the scope's threads), at a random scope with each unit its own rows."""
    dtype = rng.choice(PARALLEL_DTYPES)
    threads = rng.choice([32, 64, 128, 256])
    where = rng.choice(["fragment", "fragment", "shared", "global"])
    scope, units, unit = _units(rng, threads) if where == "fragment" else ("cta", 1, "0")
    rows = rng.choice([4, 8, 16, 32, 64, 128])
    cols = rng.choice([4, 8, 16, 32, 64])
    region = f"{unit} * {rows} : {unit} * {rows} + {rows}, 0:{cols}"
    body = _header(
        f'A: T.Buffer(({units * rows}, {cols}), "{dtype}"), B: T.Buffer(({units * rows}, {cols}), "{dtype}")', threads
    )
    loops = f'    for i in T.tile_parallel({rows}, scope="{scope}"):\n        for j in T.tile_parallel({cols}):\n'
    if where == "fragment":
        frag = _fragment_layout(rng, rows, cols, threads, scope)
        body += f'    frag = T.alloc_local(({rows}, {cols}), "{dtype}"{_layout_arg(frag)})\n'
        res = rng.choice(["frag", "res"])  # not "out": the inference check looks for the name in messages
        if res == "res":
            body += f'    res = T.alloc_local(({rows}, {cols}), "{dtype}")\n'
        expr, expected = _elementwise(rng, dtype, rows, cols, "frag[i, j]")
        body += f'    T.tile_copy(frag, A[{region}], "{scope}")\n'
        body += loops + f"            {res}[i, j] = {expr}\n"
        body += f'    T.tile_copy(B[{region}], {res}, "{scope}")\n'
    elif where == "shared":
        layout, align = _shared_layout(rng, dtype, (rows, cols))
        body += f'    smem = T.alloc_shared(({rows}, {cols}), "{dtype}"{_layout_arg(layout, align)})\n'
        expr, expected = _elementwise(rng, dtype, rows, cols, "A[i, j]")
        body += loops + f"            smem[i, j] = {expr}\n"
        body += "    T.cuda.cta_sync()\n    T.tile_copy(B, smem)\n"
    else:
        expr, expected = _elementwise(rng, dtype, rows, cols, "A[i, j]")
        body += loops + f"            B[i, j] = {expr}\n"
    if units > 1:  # each unit ran the same body on its own rows: the index grids restart per unit
        expected = expected.replace(f"np.arange({rows})", f"np.arange({units * rows}) % {rows}")
    return Kernel(body, "sm_100a", {"A": (dtype, (units * rows, cols))}, {"B": expected})


#: Reductions by dtype: sums only where every partial sum is exact (at most 8 * 8192 in float32 and int32).
REDUCE_DTYPES = {"float32": ("sum", "max", "min"), "int32": ("sum", "max", "min"), "float16": ("max", "min")}
REDUCE_DTYPES["bfloat16"] = ("max", "min")
REDUCE_DTYPES["int8"] = ("max", "min")


def reduce(rng) -> Kernel:
    """``T.tile_reduce`` of a fragment (random family) along axis 0, 1 or both, into an open fragment (derived, then
    copied out) or straight into global memory, at a random scope with each unit its own rows."""
    dtype = rng.choice(list(REDUCE_DTYPES))
    op = rng.choice(REDUCE_DTYPES[dtype])
    threads = rng.choice([32, 64, 128, 256])
    scope, units, unit = _units(rng, threads)
    rows = rng.choice([4, 8, 16, 32, 64, 128])
    cols = rng.choice([4, 8, 16, 32, 64])
    axis = rng.choice([1, 1, 0, -1, (0, 1)])
    frag = _fragment_layout(rng, rows, cols, threads, scope)
    while frag is None and rows * cols % (UNIT_THREADS.get(scope, threads) * 16 // SIZE[dtype]):
        # inference lays out a tile that is not whole 16-byte vectors on every thread of the scope tail-padded,
        # which the reduction refuses: a known item (tests/ops/test_reduce.py's xfail), kept out of the sweep
        frag = _fragment_layout(rng, rows, cols, threads, scope)
    kept = {1: rows, -1: rows, 0: cols, (0, 1): 1}[axis]
    axis_arg = f"axis={axis!r}"
    body = _header(
        f'A: T.Buffer(({units * rows}, {cols}), "{dtype}"), R: T.Buffer(({units * kept},), "{dtype}")', threads
    )
    body += f'    frag = T.alloc_local(({rows}, {cols}), "{dtype}"{_layout_arg(frag)})\n'
    body += f'    T.tile_copy(frag, A[{unit} * {rows} : {unit} * {rows} + {rows}, 0:{cols}], "{scope}")\n'
    out = f"R[{unit} * {kept} : {unit} * {kept} + {kept}]"
    if rng.random() < 0.6:
        body += f'    red = T.alloc_local(({kept},), "{dtype}")\n'
        body += f'    T.tile_reduce(red, frag, "{op}", {axis_arg}, scope="{scope}")\n'
        body += f'    T.tile_copy({out}, red, "{scope}")\n'
    else:
        body += f'    T.tile_reduce({out}, frag, "{op}", {axis_arg}, scope="{scope}")\n'
    numpy_axis = {1: 2, -1: 2, 0: 1, (0, 1): (1, 2)}[axis]
    expected = f"A.reshape({units}, {rows}, {cols}).{op}(axis={numpy_axis!r}).reshape(-1)"
    return Kernel(body, "sm_100a", {"A": (dtype, (units * rows, cols))}, {"R": expected})


#: The dtypes a casting copy converts between, every pair but a float to an integer (refused by the op, tested in
#: tests/ops; drawn here its refusal names the open fragments, which the harness reads as inference's fault).
FLOATS = ["float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]
CAST_DTYPES = [*FLOATS, "int32", "int8", "uint8"]


def _cast_expected(src: str, dst: str) -> str:
    """The numpy of a cast of ``A`` (small integers: :data:`~fuzz.kernel_checks.VALUE_RANGE`): exact, an unsigned destination keeping
    the low bits of a negative value."""
    return "A % 256" if dst == "uint8" and not src.startswith("uint") else "A"


def casting_copy(rng) -> Kernel:
    """A ``T.tile_copy`` between dtypes: global to global, a fragment stored to global, a fragment converted into
    another fragment (the same layout, another family, or inferred) or into a shared tile, then copied out."""
    src = rng.choice(CAST_DTYPES)
    dst = rng.choice([d for d in CAST_DTYPES if src not in FLOATS or d in FLOATS])  # a float to an int: refused
    threads = rng.choice([32, 128, 256])
    rows = rng.choice([8, 16, 32, 64])
    cols = rng.choice([8, 16, 32, 64])
    path = rng.choice(["global", "store", "registers", "registers", "shared"])
    body = _header(f'A: T.Buffer(({rows}, {cols}), "{src}"), B: T.Buffer(({rows}, {cols}), "{dst}")', threads)
    if path == "global":
        body += "    T.tile_copy(B, A)\n"
    else:
        frag = _fragment_layout(rng, rows, cols, threads, "cta")
        body += f'    f = T.alloc_local(({rows}, {cols}), "{src}"{_layout_arg(frag)})\n    T.tile_copy(f, A)\n'
        if path == "store":
            body += "    T.tile_copy(B, f)\n"
        elif path == "registers":
            other = rng.choice([frag, None, _fragment_layout(rng, rows, cols, threads, "cta")])
            body += f'    g = T.alloc_local(({rows}, {cols}), "{dst}"{_layout_arg(other)})\n'
            body += "    T.tile_copy(g, f)\n    T.tile_copy(B, g)\n"
        else:
            layout, align = _shared_layout(rng, dst, (rows, cols))
            body += f'    s = T.alloc_shared(({rows}, {cols}), "{dst}"{_layout_arg(layout, align)})\n'
            body += "    T.tile_copy(s, f)\n    T.cuda.cta_sync()\n    T.tile_copy(B, s)\n"
    return Kernel(body, "sm_100a", {"A": (src, (rows, cols))}, {"B": _cast_expected(src, dst)})


def _exchange_layout(rng, rows: int, cols: int, dtype: str) -> str | None:
    """A ``(rows, cols)`` fragment over 128 threads: a tensor-core one (wgmma's accumulator, mma.sync's C over a
    random grid of warps, one row per thread) or a random family of :func:`_fragment_layout`."""
    family = rng.choice(["wgmma", "mma_sync", "rows", "random", "random"])
    if family == "wgmma" and rows == 64 and cols % 8 == 0 and dtype in ("float32", "int32", "float16"):
        return f'wgmma_accumulator_layout({cols}, "{dtype}")'
    if family == "mma_sync" and dtype in ("float32", "int32", "float16"):
        warps = rng.choice([(1, 1), (2, 2), (4, 1), (1, 4)])
        if rows % (16 * warps[0]) == 0 and cols % (8 * warps[1]) == 0:
            return f'mma_sync_c_layout(({rows}, {cols}), "{dtype}", {warps})'
    if family == "rows":
        return f"wg_local_layout({cols}, {rows})"
    return _fragment_layout(rng, rows, cols, 128, "cta")


def exchange(rng) -> Kernel:
    """A fragment copied into a fragment of another placement (warp shuffles or a shared scratch), sometimes
    converting, sometimes inside a loop (the scratch reused); 128 threads."""
    src = rng.choice(["float32", "int32", "float16", "bfloat16", "int8"])
    dst = rng.choice([src, src, src, "float32" if src in ("float16", "bfloat16") else src])
    rows, cols = rng.choice([16, 32, 64, 128]), rng.choice([8, 16, 32, 64])
    held, wanted = _exchange_layout(rng, rows, cols, src), _exchange_layout(rng, rows, cols, dst)
    turns = rng.choice([1, 1, 2])
    body = _header(
        f'A: T.Buffer(({turns * rows}, {cols}), "{src}"), B: T.Buffer(({turns * rows}, {cols}), "{dst}")', 128
    )
    body += f'    f = T.alloc_local(({rows}, {cols}), "{src}"{_layout_arg(held)})\n'
    body += f'    g = T.alloc_local(({rows}, {cols}), "{dst}"{_layout_arg(wanted)})\n'
    body += f"    for t in T.serial({turns}):\n"
    region = f"t * {rows} : t * {rows} + {rows}, 0:{cols}"
    body += f"        T.tile_copy(f, A[{region}])\n        T.tile_copy(g, f)\n        T.tile_copy(B[{region}], g)\n"
    return Kernel(body, "sm_100a", {"A": (src, (turns * rows, cols))}, {"B": "A"})


#: mma.sync operand dtypes -> (accumulator dtypes, the architectures that have the kind).
MMA_SYNC_KINDS = {
    "float16": (("float32", "float16"), ("sm_80", "sm_90a", "sm_120")),
    "bfloat16": (("float32",), ("sm_80", "sm_120")),
    "float32": (("float32",), ("sm_80",)),
    "int8": (("int32",), ("sm_80", "sm_89")),
    "float8_e4m3fn": (("float32",), ("sm_89", "sm_120")),
}


def mma_sync(rng) -> Kernel:
    """``T.tile_mma`` on register fragments (``mma.sync``): A, B and the accumulator in their ``mma_sync_*_layout``
    fragments over a random grid of warps, A and B loaded from global memory or through a shared tile (``ldmatrix``
    for 16-bit types), accumulating onto a loaded C or not."""
    dtype = rng.choice(list(MMA_SYNC_KINDS))
    accs, arches = MMA_SYNC_KINDS[dtype]
    acc, arch = rng.choice(accs), rng.choice(arches)
    b_dtype = rng.choice(["int8", "uint8"]) if dtype == "int8" else dtype
    warps = rng.choice([(1, 1), (2, 2), (2, 1), (1, 2), (4, 1)])
    m = 16 * warps[0] * rng.choice([1, 2])
    n = 8 * warps[1] * rng.choice([1, 2, 4])
    k = 32 // SIZE[dtype] * rng.choice([1, 2] if acc == "float16" else [1, 2, 4])  # float16 sums stay exact
    threads = 32 * warps[0] * warps[1]
    body = _header(
        f'A: T.Buffer(({m}, {k}), "{dtype}"), B: T.Buffer(({n}, {k}), "{b_dtype}"), C: T.Buffer(({m}, {n}), "{acc}"), '
        f'D: T.Buffer(({m}, {n}), "{acc}")',
        threads,
    )
    body += f'    a = T.alloc_local(({m}, {k}), "{dtype}", layout=mma_sync_a_layout(({m}, {k}), "{dtype}", {warps}))\n'
    body += (
        f'    b = T.alloc_local(({n}, {k}), "{b_dtype}", layout=mma_sync_b_layout(({n}, {k}), "{b_dtype}", {warps}))\n'
    )
    body += f'    acc = T.alloc_local(({m}, {n}), "{acc}", layout=mma_sync_c_layout(({m}, {n}), "{acc}", {warps}))\n'
    if rng.random() < 0.5:
        for name, rows, dt, src in (("As", m, dtype, "A"), ("Bs", n, b_dtype, "B")):
            layout, align = _shared_layout(rng, dt, (rows, k))
            body += f'    {name} = T.alloc_shared(({rows}, {k}), "{dt}"{_layout_arg(layout, align)})\n'
            body += f"    T.tile_copy({name}, {src})\n"
        body += "    T.cuda.cta_sync()\n    T.tile_copy(a, As)\n    T.tile_copy(b, Bs)\n"
    else:
        body += "    T.tile_copy(a, A)\n    T.tile_copy(b, B)\n"
    accumulate = rng.random() < 0.4
    if accumulate:
        body += "    T.tile_copy(acc, C)\n"
    body += f"    T.tile_mma(acc, a, b, accumulate={accumulate})\n    T.tile_copy(D, acc)\n"
    inputs = {"A": (dtype, (m, k)), "B": (b_dtype, (n, k)), "C": (acc, (m, n))}
    return Kernel(body, arch, inputs, {"D": GEMM + (" + C" if accumulate else "")})


def cp_async(rng) -> Kernel:
    """``T.tile_copy_async`` without a barrier (``cp.async``) into one to three stages of a shared tile (random
    layout) at a random scope, each unit of it its own tiles; stage ``s`` is read after ``T.tile_copy_async_wait``
    (of the CTA, or of the warp at warp scope) leaves only the later stages' groups pending."""
    dtype = rng.choice(COPY_DTYPES)
    arch = rng.choice(["sm_80", "sm_90a", "sm_100a"])
    threads = rng.choice([32, 128, 256])
    scope = rng.choice(["cta", "warp"])  # the scopes cp.async runs at
    units, unit = (1, "0") if scope == "cta" else (threads // 32, "tx // 32")
    stages = rng.choice([1, 2, 3])
    rows, cols = rng.choice([8, 16, 32, 64]), rng.choice([8, 16, 32, 64, 128])
    tiles = stages * units
    while tiles * rows * cols * SIZE[dtype] > 64 * 1024 and rows > 8:  # within every arch's shared memory
        rows //= 2
    shape = (tiles, rows, cols) if tiles > 1 else (rows, cols)
    layout, align = _shared_layout(rng, dtype, shape)
    body = _header(
        f'A: T.Buffer(({tiles * rows}, {cols}), "{dtype}"), B: T.Buffer(({tiles * rows}, {cols}), "{dtype}")',
        threads,
    )
    body += f'    sm = T.alloc_shared({shape}, "{dtype}"{_layout_arg(layout, align)})\n'

    def tile(s: int) -> tuple[str, str]:
        index = f"{s * units} + {unit}"
        region = f"({index}) * {rows} : ({index}) * {rows} + {rows}, 0:{cols}"
        return (f"sm[{index}]" if tiles > 1 else "sm"), region

    for s in range(stages):
        body += f'    T.tile_copy_async({tile(s)[0]}, A[{tile(s)[1]}], scope="{scope}")\n'
    wait_scope = rng.choice(["cta", "warp"]) if scope == "warp" else "cta"
    for s in range(stages):
        body += f'    T.tile_copy_async_wait({stages - 1 - s}, scope="{wait_scope}")\n'
        body += f'    T.tile_copy(B[{tile(s)[1]}], {tile(s)[0]}, "{scope}")\n'
    return Kernel(body, arch, {"A": (dtype, (tiles * rows, cols))}, {"B": "A"})


#: Every generator with its weight in a sweep. A new op is one row (a function returning a :class:`Kernel`).
GENERATORS = [
    ("copy_fragment", copy_fragment, 20),
    ("copy_shared", copy_shared, 12),
    ("fill", fill, 8),
    ("tmem_round_trip", tmem_round_trip, 8),
    ("tcgen05_cp", tcgen05_cp, 8),
    ("mma_tcgen05", mma_tcgen05, 18),
    ("mma_wgmma", mma_wgmma, 16),
    ("tma", tma, 8),
    ("mma_k_loop", mma_k_loop, 10),
    ("tma_store", tma_store, 5),
    ("fill_tmem", fill_tmem, 4),
    ("mma_block_scaled", mma_block_scaled, 5),
    ("parallel", parallel, 8),
    ("reduce", reduce, 8),
    ("casting_copy", casting_copy, 8),
    ("exchange", exchange, 6),
    ("mma_sync", mma_sync, 8),
    ("cp_async", cp_async, 6),
]
#: ``TIRX_LAYOUT_KERNEL_FUZZ_GENERATORS=a,b`` restricts a sweep to those generators (a sweep of new ops); the cases
#: are then a function of ``(seed, index)`` and that list, which a replay must set alike.
ONLY = [n for n in os.environ.get("TIRX_LAYOUT_KERNEL_FUZZ_GENERATORS", "").split(",") if n]


def generators() -> list:
    """The generators a sweep draws from: :data:`GENERATORS`, or the ones ``TIRX_LAYOUT_KERNEL_FUZZ_GENERATORS``
    names (a name no generator has is refused)."""
    names = {name for name, _, _ in GENERATORS}
    unknown = [n for n in ONLY if n not in names]
    if unknown:
        raise ValueError(f"TIRX_LAYOUT_KERNEL_FUZZ_GENERATORS names {unknown}; the generators are {sorted(names)}")
    return [row for row in GENERATORS if not ONLY or row[0] in ONLY]


def case(seed: int, index: int) -> Case:
    """Kernel case ``index`` of the sweep with ``seed``: the same pair always gives the same case."""
    rng = random.Random(f"tirx_layout-kernel-fuzz:{seed}:{index}")
    table = generators()
    name, generate, _ = rng.choices(table, weights=[w for _, _, w in table])[0]
    kernel = generate(rng)
    assemble = rng.random() < ASSEMBLE_SHARE
    source = (
        f"result = run_kernel({kernel.text!r}, {kernel.arch!r}, {kernel.inputs!r}, {kernel.expected!r}, "
        f"seed={index}, assemble={assemble})"
    )
    return Case(name, source)
