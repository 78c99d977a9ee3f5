"""The Hopper half of LowerTileMma: on a target with ``wgmma`` (sm_90a), ``T.tile_mma`` becomes a K loop of
``wgmma.mma_async`` instructions issued by whole warpgroups, and ``T.tile_mma_wait`` a ``wgmma.wait_group``.

``T.tile_mma(D, A, B, accumulate)`` computes ``D[m, n] (+)= sum_k A[m, k] * B[n, k]`` as on Blackwell; here

* ``D`` is a register fragment ``(64 w, N)`` in the ISA's accumulator layout (``wgmma_accumulator_layout(N,
  dtype, w)``, checked element by element): warpgroup ``g`` holds rows ``64 g .. 64 g + 63`` and issues its own
  ``m64nNkK`` instructions on them;
* ``A`` is in shared memory (the ``_ss`` form: a matrix descriptor) or a register fragment in the ISA's A layout
  (``wgmma_operand_a_layout``; the ``_rs`` form, K-major), ``B`` in shared memory. Each shared operand's descriptor
  comes from its layout through the one derivation (``hw.smem_descriptor.shared_matrix_descriptor``, via
  ``transform/mma_operands``); warpgroup ``g``'s A is the 64-row slice ``64 g ..`` of A, whose start moves by a
  fixed offset per warpgroup. MN-major ("transposed") shared operands only for 16-bit types (the ISA's
  imm-trans-a/b), every other kind K-major;
* the kind from the dtypes: f16/bf16 (D f32, or f16 for f16), tf32 (float32 storage), e4m3/e5m2 (D f32 or f16),
  s8/u8 (D s32); K = 32 bytes per instruction.

What is emitted (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate": wgmma.fence orders the
warpgroup's register and shared-memory accesses before the wgmma; wgmma reads shared memory through the async
proxy; commit_group closes a group; wait_group n waits until at most n groups are pending):

* ``scope="cta"``: every thread ``fence.proxy.async.shared::cta`` (its generic shared writes become visible to the
  async proxy), then a CTA barrier that orders every thread's writes before any warpgroup's wgmma.
  ``scope="warpgroup"``: nothing; the shared operands must already be published to the async proxy and ordered
  before the op: a TMA load (an async-proxy write) and an mbarrier wait, or writer threads'
  ``T.mbarrier_arrive`` (which emits the proxy fence) and the wait. A proxy fence here would only cover the
  warpgroup's own writes, yet costs a full memory barrier per group in a pipeline's K loop (the simulator reports
  an operand some thread wrote without its fence as a DataRace);
* a compiler fence on D's (and A's) registers, ``wgmma.fence``, the K loop (step 0's scale-d is ``accumulate``,
  later steps 1), ``wgmma.commit_group``;
* the synchronous form (default) then ``wgmma.wait_group 0`` and a compiler fence on D's registers: D is readable
  after the op. ``wait=False`` stops after the commit; ``T.tile_mma_wait(pending)`` emits ``wgmma.wait_group
  pending`` and the compiler fences on every accumulator an asynchronous tile_mma of the function writes.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ..hw.constructors import wgmma_accumulator_check, wgmma_operand_a_check
from ..hw.threads import WARPGROUP_THREADS
from ..hw.wgmma import WGMMA_M, WgmmaInstruction
from ..ir.device_calls import cta_barrier
from ..ir.mma_ops import TileMma, as_mma
from ..ir.rewrite import sequence, walk
from ..ir.tile_ops import full_region
from ..ops.helpers import sync, wgmma
from .copy_plan import FragmentOperand, MemoryOperand, TmemOperand, operand
from .mma_operands import as_u32, operand_pointer, shared_operand


def _register_fence(side: FragmentOperand):
    """A compiler fence on every 32-bit register of fragment ``side``."""
    registers = side.extent * side.element_bytes // 4
    return wgmma.keep(registers, side.dtype == "float32", _registers(side, 0))


def _registers(side: FragmentOperand, slot: int):
    return tvm.tirx.address_of(tvm.tirx.BufferLoad(side.view, [tirx.IntImm("int32", slot)]))


def _whole(side, name: str) -> None:
    if any(b != 0 for b in side.begins) or tuple(side.extents) != side.shape:
        raise ValueError(
            f"{name} of a wgmma tile_mma is a whole register fragment: {side.buffer.name} has shape {side.shape}, "
            f"the operand is {side.region}"
        )


class WgmmaLowering:
    """Lowers the tile MMAs and waits of one function for a ``wgmma`` target (see the module docstring);
    ``LowerTileMma`` uses it when the function's target has ``wgmma``.

    Example (64 x 64 x 32 float16 from 64B-swizzled tiles: two K steps of 16 in one group, then the wait):
        >>> import re, tvm, tirx_layout
        >>> from tirx_layout.transform import lower_tile_mma
        >>> func = tvm.script.from_source('''
        ... @T.prim_func
        ... def k():
        ...     T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_90a"})})
        ...     T.device_entry()
        ...     tx = T.thread_id([128])
        ...     A = T.alloc_shared((64, 32), "float16", layout=mma_shared_layout("float16", "64B", (64, 32)),
        ...                        align=1024)
        ...     B = T.alloc_shared((64, 32), "float16", layout=mma_shared_layout("float16", "64B", (64, 32)),
        ...                        align=1024)
        ...     acc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator_layout(64))
        ...     T.tile_mma(acc, A, B)
        ... ''', extra_vars={"T": tvm.script.tirx, "mma_shared_layout": mma_shared_layout,
        ...                 "wgmma_accumulator_layout": wgmma_accumulator_layout})
        >>> re.findall(r'func_call\\("tirx_layout_(\\w+)"', lower_tile_mma(func).script())
        ... # doctest: +NORMALIZE_WHITESPACE
        ['sync_fence_proxy_async', 'wgmma_keep_f32_x32', 'wgmma_fence', 'wgmma_mma_m64n64k16_f32_f16_f16_ss_t00',
         'wgmma_mma_m64n64k16_f32_f16_f16_ss_t00', 'wgmma_commit_group', 'wgmma_wait_group_0', 'wgmma_keep_f32_x32']
    """

    def __init__(self, func, layouts: dict, threads):
        self.func = func
        self.layouts = layouts
        self._threads = threads  # a callable: the kernel's CTA threads, looked up when first needed
        self.async_accumulators = []
        walk(func.body, [(tirx.Evaluate, self._note_async)])

    def _note_async(self, stmt) -> None:
        mma = as_mma(stmt)
        if mma is not None and not mma.wait and all(not b.same_as(mma.d.source) for b in self.async_accumulators):
            self.async_accumulators.append(mma.d.source)

    def lower(self, mma: TileMma):
        if mma.barrier is not None:
            raise ValueError(
                "tile_mma(barrier=...) is a tcgen05 feature; on sm_90a (wgmma) write tile_mma(..., wait=False) and "
                "T.tile_mma_wait(pending) (then T.mbarrier_arrive to release a stage)"
            )
        if mma.scale_a is not None or mma.scale_b is not None:
            raise ValueError("tile_mma with scale factors (block-scaled) needs tcgen05; wgmma (sm_90a) has none")
        if mma.scope not in ("cta", "warpgroup"):
            raise ValueError(
                f"tile_mma scope {mma.scope!r} on sm_90a: wgmma is issued by whole warpgroups (.sync.aligned over "
                "128 threads), so the scope is 'cta' (every warpgroup its own 64 rows) or 'warpgroup'"
            )
        d = operand(mma.d, self.layouts, "D")
        a = operand(mma.a, self.layouts, "A")
        b = operand(mma.b, self.layouts, "B")
        if not isinstance(d, FragmentOperand):
            raise ValueError(
                f"D of a wgmma tile_mma must be a register fragment (T.alloc_local with layout="
                f"wgmma_accumulator_layout(N)); {d.buffer.name} is {d.buffer.scope()}"
                + (" without a thread layout" if d.buffer.scope() == "local" else "")
            )
        if not isinstance(b, MemoryOperand) or b.buffer.scope() not in ("shared", "shared.dyn"):
            raise ValueError(f"B of a wgmma tile_mma must be in shared memory, {b.buffer.name} is {b.buffer.scope()}")
        if isinstance(a, TmemOperand):
            raise ValueError(f"A of a wgmma tile_mma is in shared memory or registers; {a.buffer.name} is in TMEM")
        _whole(d, "D")
        shapes = {"D": d.tile_shape, "A": a.tile_shape, "B": b.tile_shape}
        if any(len(s) != 2 for s in shapes.values()):
            raise ValueError(f"tile_mma takes 2-D tiles D (M, N), A (M, K), B (N, K), got {shapes}")
        (m, n), (m_a, k), (n_b, k_b) = shapes["D"], shapes["A"], shapes["B"]
        if m_a != m or n_b != n or k_b != k:
            raise ValueError(f"tile_mma: D is (M, N), A (M, K), B (N, K) (D = A @ B.T), got shapes {shapes}")
        warpgroups = self._warpgroups(mma, m)
        try:
            wgmma_accumulator_check(d.layout, (m, n), d.dtype)
        except ValueError as err:
            raise ValueError(f"D ({d.buffer.name}) is not a wgmma accumulator: {err}") from None
        b_desc, b_start, b_steps = _shared(b, n, k, "B")
        in_registers = isinstance(a, FragmentOperand)
        if in_registers:
            _whole(a, "A")
            try:
                wgmma_operand_a_check(a.layout, (m, k), a.dtype)
            except ValueError as err:
                raise ValueError(f"A ({a.buffer.name}) is not a wgmma register operand: {err}") from None
            a_major = "K"
        else:
            a_desc, a_start, a_steps = self._a_rows(a, warpgroups, k)
            a_major = a_desc.major
        instruction = WgmmaInstruction(a.dtype, b.dtype, d.dtype, n, a_major, b_desc.major, in_registers)
        kstep = instruction.k
        if k % kstep:
            raise ValueError(f"tile_mma's K ({k}) must be whole wgmma steps of {kstep} {a.dtype} elements")
        d_regs = _registers(d, 0)
        b_bits = b_desc.encode(family="wgmma")
        fences = [_register_fence(d)] + ([_register_fence(a)] if in_registers else [])
        loop = []
        for s in range(k // kstep):
            scale_d = as_u32(mma.accumulate) if s == 0 else tirx.const(1, "uint32")
            b_ptr = operand_pointer(b.view, b_start + b_steps[s] * 16 // b.element_bytes)
            if in_registers:  # step s reads the fragment's slots s * a_elements .. (wgmma_operand_a_layout)
                a_regs = _registers(a, s * instruction.a_elements)
                loop.append(wgmma.mma_rs(instruction, d_regs, a_regs, b_ptr, b_bits, scale_d))
            else:
                a_ptr = operand_pointer(a.view, a_start + a_steps[s] * 16 // a.element_bytes)
                a_bits = a_desc.encode(family="wgmma")
                loop.append(wgmma.mma_ss(instruction, d_regs, a_ptr, a_bits, b_ptr, b_bits, scale_d))
        before = [sync.fence_proxy_async(), cta_barrier()] if mma.scope == "cta" else []
        after = [wgmma.wait_group(0, d_regs), _register_fence(d)] if mma.wait else []
        declarations = [d.declaration(), a.declaration(), b.declaration()]
        body = [*before, *fences, wgmma.fence(), *loop, wgmma.commit_group(), *after]
        return sequence([*declarations, *body])

    def _warpgroups(self, mma: TileMma, m: int) -> int:
        """How many warpgroups issue: M / 64, which for scope "cta" must be the CTA's warpgroups."""
        if m % WGMMA_M or m < WGMMA_M:
            raise ValueError(f"D of a wgmma tile_mma has M = 64 rows per warpgroup; got M = {m}")
        warpgroups = m // WGMMA_M
        if mma.scope == "warpgroup" and warpgroups != 1:
            raise ValueError(f"a warpgroup-scope tile_mma computes 64 rows (one warpgroup's wgmma); D has M = {m}")
        if mma.scope == "cta":
            threads = self._threads().count
            if threads != warpgroups * WARPGROUP_THREADS:
                raise ValueError(
                    f"a cta-scope wgmma tile_mma has every warpgroup issue its own 64 rows: D has M = {m} "
                    f"({warpgroups} warpgroup(s)), the CTA has {threads} threads (needs {warpgroups * 128}); "
                    "use scope='warpgroup' under a condition on the warpgroup for fewer"
                )
        return warpgroups

    def _a_rows(self, a: MemoryOperand, warpgroups: int, k: int):
        """A's descriptor (the same for every warpgroup), the start of the executing warpgroup's 64 rows, and each
        K step's offset: warpgroup ``g`` reads rows ``64 g .. 64 g + 63`` of A's region."""
        if warpgroups == 1:
            return _shared(a, WGMMA_M, k, "A")
        row_dim = self._row_dimension(a)
        found = []
        for g in range(warpgroups):
            region = list(a.region.region)
            row = region[row_dim]
            narrowed = [
                slice(r.min, r.min + r.extent) if d != row_dim else slice(row.min + 64 * g, row.min + 64 * g + 64)
                for d, r in enumerate(region)
            ]
            rows = operand(a.buffer[tuple(narrowed)], self.layouts, "A")
            found.append(_shared(rows, WGMMA_M, k, "A"))
        first = found[0]
        delta = _difference(found[1][1], first[1])
        for g, (desc, start, steps) in enumerate(found):
            if desc != first[0] or steps != first[2] or _difference(start, first[1]) != g * delta:
                raise ValueError(
                    f"A ({a.buffer.name}): the 64-row slices the warpgroups read are not one descriptor moved by a "
                    f"fixed offset (warpgroup {g}); lay A out so that every 64 rows repeat the same pattern"
                )
        wg = tvm.tirx.floordiv(self._threads().index, WARPGROUP_THREADS)
        return first[0], first[1] + wg * delta, first[2]

    @staticmethod
    def _row_dimension(a: MemoryOperand) -> int:
        rows = [d for d, e in enumerate(a.extents) if e != 1]
        return rows[0]

    def lower_wait(self, pending: int):
        """``T.tile_mma_wait(pending)``: ``wgmma.wait_group pending``, then the compiler fences on the accumulators
        of the function's asynchronous tile_mmas (their registers are final once their group retired)."""
        if not self.async_accumulators:
            raise ValueError(
                "T.tile_mma_wait waits for asynchronous tile MMAs, but no T.tile_mma(..., wait=False) in this "
                "function issues one"
            )
        accumulators = [operand(full_region(b), self.layouts, "D") for b in self.async_accumulators]
        for side in accumulators:
            if not isinstance(side, FragmentOperand):
                raise ValueError(f"D of a wgmma tile_mma must be a register fragment, {side.buffer.name} is not")
        wait = wgmma.wait_group(pending, _registers(accumulators[0], 0))
        return sequence([*(s.declaration() for s in accumulators), wait, *(_register_fence(s) for s in accumulators)])


def _shared(side: MemoryOperand, rows: int, k: int, name: str):
    """A shared operand's wgmma descriptor (start field zero), the element offset of its first K step (an expression
    where a stage index moves it) and each K step's offset in 16-byte units."""
    descriptor, start, stage_units, steps = shared_operand(side, rows, k, name, family="wgmma")
    if stage_units is not None:  # whole swizzle repeats: whole 16-byte units, whole elements
        start = tvm.sym.Analyzer().simplify(start + stage_units * (16 // side.element_bytes))
    return descriptor, start, steps


def _difference(a, b) -> int:
    """``a - b`` of two element offsets (ints or expressions of the same stage variables) as an int."""
    diff = tvm.sym.Analyzer().simplify(a - b) if not (isinstance(a, int) and isinstance(b, int)) else a - b
    if isinstance(diff, tirx.IntImm):
        diff = int(diff.value)
    if not isinstance(diff, int):
        raise ValueError(f"A's warpgroup slices start at {a} and {b}, which differ by a non-constant {diff}")
    return diff


__all__ = ["WgmmaLowering"]
