"""``T.tile_mma`` and ``T.tile_mma_wait``: the tensor-core MMA over tiles and the wait for its asynchronous form.

``T.tile_mma(D, A, B, accumulate=False, *, barrier=None, scale_a=None, scale_b=None, scope="cta", wait=True)``
computes ``D[m, n] (+)= sum_k A[m, k] * B[n, k]`` (``D = A @ B.T``): D is ``(M, N)``, A ``(M, K)``, B ``(N, K)``;
majorness is a property of an operand's layout, never of its shape. It lowers, by the target, to

* ``tcgen05`` (sm_100a and its family, ``ops/mma/tcgen05.py``): D in tensor memory in an accumulator layout, A in
  shared or tensor memory, B in shared memory; the kind from the dtypes (fp16/bf16 ``f16``, fp32 ``tf32``, fp8
  ``f8f6f4``, or ``mxf8f6f4`` with ``scale_a``/``scale_b`` in TMEM, int8 ``i8``); without ``barrier`` the op waits
  for its result, with ``barrier=bars[i]`` it commits there and the kernel waits (``T.mbarrier_wait``);
* ``wgmma`` (sm_90a, ``ops/mma/wgmma.py``): D a register fragment in the wgmma accumulator layout (64 rows per
  warpgroup), A in shared memory or a register fragment in the wgmma A layout, B in shared memory; no barrier, no
  scale factors; ``wait=False`` leaves the group in flight until ``T.tile_mma_wait(pending)``;
* ``mmasync`` (every target from sm_80, ``ops/mma/mmasync.py``; on sm_90a/sm_100a when D, A and B are all register
  fragments): D, A and B register fragments in the ``mma.sync`` layouts (``hw/mma_sync.py``), whose atoms decide
  the instructions: each warp issues ``mma.sync.m16n8k*`` on the blocks it holds, K steps outermost;
* ``mmasync_block_scale`` (sm_120a and its family, ``ops/mma/mmasync_scaled.py``): the same with ``scale_a`` /
  ``scale_b`` register fragments ``(M, C)`` / ``(N, C)`` in ``mma_sync_scale_layout`` (C chunks of K): the
  block-scaled ``mma.sync`` whose kind and ``scale_vec`` follow from the dtypes and K / C (e4m3/e5m2 with ue8m0 per
  32: ``mxf8f6f4``; e2m1 packed two a byte in ``uint8``, K then counted in bytes: ``mxf4`` with ue8m0 per 32,
  ``mxf4nvf4`` with ue4m3 (``float8_e4m3fn``) per 16), the scale registers and selectors read off their layouts.

Every rule of the op is stated here, once, in :meth:`TileMma.resolve`; it returns a :class:`Tcgen05Mma` or
:class:`WgmmaMma` record that VerifyLayouts reports from and the lowering consumes. The rules that read an operand's
layout (descriptors, majorness, TMEM addresses) apply once that layout is decided (always after inference).
Inference: a shared A or B without a layout may take only a canonical layout the MMA reads (:class:`OneOf`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from tvm import tirx

from ...hw.constructors import mma_shared_layout, wgmma_accumulator_check, wgmma_operand_a_check
from ...hw.memory import swizzle_repeat_bytes
from ...hw.mma_sync import MmaSyncInstruction, WarpProgram, best_k, mma_sync_atoms, warp_program
from ...hw.mma_sync_scaled import (
    TARGET_FAMILY as BLOCK_SCALE_FAMILY,
)
from ...hw.mma_sync_scaled import (
    BlockScaledMmaSync,
    ScaleSelect,
    block_scaled_instruction,
    mma_sync_scale_atoms,
    scale_program,
)
from ...hw.smem_descriptor import shared_matrix_descriptor
from ...hw.targets import targets_with
from ...hw.tcgen05 import TMEM_SCOPE
from ...hw.tcgen05_mma import SCALE_DTYPE, MmaInstruction, instruction_descriptor, mma_kind
from ...hw.threads import WARPGROUP_THREADS, thread_unit
from ...hw.tmem_addressing import (
    accumulator_taddr_offset,
    pair_accumulator_taddr_offset,
    scale_factor_taddr,
    tmem_operand_offset,
)
from ...hw.wgmma import WGMMA_M, WgmmaInstruction
from ...ir.rewrite import walk
from ...ir.threads import cluster_launch
from ...layout.placement import axes_used
from ..operands import FragmentOperand, TmemOperand, operand
from ..spec import (
    ConditionField,
    CountField,
    FlagField,
    MbarrierField,
    OneOf,
    OpCall,
    OpSpec,
    Reach,
    Record,
    RegionField,
    ScopeField,
    find,
)
from .shared_operands import SharedOperand, shared_operand, warpgroup_rows

#: Who reaches a tile MMA: every thread of the CTA, one warpgroup (wgmma), one warp or one thread (tcgen05: one
#: elected thread issues).
MMA_SCOPES = ("cta", "warpgroup", "warp", "thread")
#: The most groups ``T.tile_mma_wait`` may leave pending: our bound (``wgmma.wait_group`` takes an integer
#: constant), well above the stages a shared-memory ring keeps in flight.
MAX_PENDING_GROUPS = 7
SHARED_SCOPES = ("shared", "shared.dyn")
#: Where each operand of a tcgen05 MMA lives.
_TCGEN05_PLACES = {
    "D": (TMEM_SCOPE,),
    "A": (*SHARED_SCOPES, TMEM_SCOPE),
    "B": SHARED_SCOPES,
    "scale_a": (TMEM_SCOPE,),
    "scale_b": (TMEM_SCOPE,),
}
#: The storage of packed e2m1 operands of a block-scaled mma.sync: a byte holds two, the lower K element in the low
#: nibble (the ISA's "eight to a register, the lowest in the low bits"); T.tile_mma's K is then in bytes.
PACKED_FP4 = "uint8"
#: Swizzle modes tried for an open MMA operand, in preference order (the wider swizzle wins a tie).
MMA_OPERAND_MODES = ("128B", "64B", "32B", "none")
_OPERAND_REQUIREMENT = (
    f"a canonical K-major MMA layout ({', '.join(MMA_OPERAND_MODES)}) needs the last two dimensions (rows, K) to be "
    "whole atoms of 8 rows by the swizzle width (16 bytes with no swizzle), K a whole number of instruction K "
    "steps (32 bytes)"
)


# ---- records ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TmemColumn:
    """A TMEM address relative to ``buffer``'s allocation: ``lane`` and ``column`` (32-bit columns; an ``int32``
    expression where a loop variable picks a stage)."""

    buffer: object
    lane: int
    column: object


@dataclass(frozen=True)
class ScaleStep:
    """Where one block-scaled K step reads its scale factors: a TMEM column of each scale operand and the byte
    (SF id) of its 32-bit cells."""

    a: TmemColumn
    a_id: int
    b: TmemColumn
    b_id: int


@dataclass(frozen=True)
class Tcgen05Mma(Record):
    """A ``T.tile_mma`` for ``tcgen05.mma``: the operands, M/N/K, the kind and the instruction (its majorness read
    off the shared operands' layouts), the form (``"sync"``: the op waits for its result; ``"barrier"``: it commits
    to ``call.barrier``), and, once the layouts are decided, where each operand is: D's (and a TMEM A's) TMEM
    address, each shared operand's descriptor, the scale factors of every K step. ``steps`` is K over the
    instruction's K."""

    d: object
    a: object
    b: object
    m: int
    n: int
    k: int
    kind: str
    instruction: MmaInstruction
    form: str
    d_address: TmemColumn | None = None
    a_address: TmemColumn | None = None
    a_shared: SharedOperand | None = None
    b_shared: SharedOperand | None = None
    scales: tuple[ScaleStep, ...] | None = None

    @property
    def steps(self) -> int:
        return self.k // self.instruction.k

    @property
    def descriptor(self) -> int:
        """The instruction descriptor (of K step 0 for a block-scaled MMA, whose steps differ in their SF ids)."""
        return instruction_descriptor(self.instruction)

    def step_descriptor(self, step: int) -> int:
        """The instruction descriptor of K step ``step`` (a block-scaled step names its scale factors' bytes)."""
        if self.scales is None:
            return self.descriptor
        scale = self.scales[step]
        return instruction_descriptor(
            dataclasses.replace(self.instruction, scale_a_id=scale.a_id, scale_b_id=scale.b_id)
        )


@dataclass(frozen=True)
class WgmmaMma(Record):
    """A ``T.tile_mma`` for Hopper's ``wgmma``: D (a register fragment of ``warpgroups`` x 64 rows), A (shared, or a
    register fragment for the RS form), B (shared), M/N/K, the instruction, whether the op waits (``call.wait``),
    and, once the layouts are decided, each shared operand's descriptor (A's start moving by a fixed offset per
    warpgroup: ``a_rows_offset`` elements)."""

    d: object
    a: object
    b: object
    m: int
    n: int
    k: int
    warpgroups: int
    instruction: WgmmaInstruction | None = None
    a_shared: SharedOperand | None = None
    a_rows_offset: int = 0
    b_shared: SharedOperand | None = None

    @property
    def a_in_registers(self) -> bool:
        return self.a.buffer.scope() == "local"

    def check_reached_by(self, warpgroups: set[int]) -> None:
        """A warpgroup-scope tile_mma whose accumulator lives on given warpgroups (its layout has a ``wgid`` place,
        as ``first_warpgroup=`` gives) must be reached by exactly those: another warpgroup would multiply into
        registers that hold nothing of D, and the owner would never get its result."""
        if self.call.scope != "warpgroup" or "wgid" not in axes_used(self.d.layout):
            return  # held by every warpgroup alike
        owners = accumulator_owners(self.d)
        if warpgroups != owners:
            raise ValueError(
                f"T.tile_mma's D ({self.d.buffer.name}) lives on warpgroup(s) {sorted(owners)} of the CTA, but the "
                f"warpgroup-scope tile_mma is reached by warpgroup(s) {sorted(warpgroups)}: only D's own warpgroup "
                "can issue its wgmma (put the op under `if tx // 128 == <its warpgroup>`, or build D's layout with "
                "that first_warpgroup)"
            )


@dataclass(frozen=True)
class MmaSyncMma(Record):
    """A ``T.tile_mma`` for the warp-level ``mma.sync``: D, A, B register fragments, M/N/K and, once the layouts are
    decided, the :class:`~tirx_layout.hw.mma_sync.WarpProgram` every warp holding D issues."""

    d: object
    a: object
    b: object
    m: int
    n: int
    k: int
    program: WarpProgram | None = None


@dataclass(frozen=True)
class MmaSyncScaledMma(Record):
    """A block-scaled ``T.tile_mma`` for the warp-level ``mma.sync`` of sm_120a: D, A, B and the scale fragments
    (``sfa`` ``(M, C)``, ``sfb`` ``(N, C)``, C chunks of K), M/N/K, the instruction and, once the layouts are decided,
    the :class:`~tirx_layout.hw.mma_sync.WarpProgram` (the dense fp8 program of the same fragments) and per
    instruction where it reads its scales (:class:`~tirx_layout.hw.mma_sync_scaled.ScaleSelect`)."""

    d: object
    a: object
    b: object
    sfa: object
    sfb: object
    m: int
    n: int
    k: int
    instruction: BlockScaledMmaSync
    program: WarpProgram | None = None
    selects: tuple[ScaleSelect, ...] | None = None


@dataclass(frozen=True)
class MmaWait(Record):
    """A ``T.tile_mma_wait``: the groups it may leave pending and the accumulators of the function's asynchronous
    tile MMAs, whose registers are final once their group retired."""

    pending: int
    accumulators: tuple


def accumulator_owners(d: FragmentOperand) -> set[int]:
    """The warpgroups of the CTA that hold some element of accumulator fragment ``d``."""
    shape = [int(e) for e in d.buffer.shape]
    places = d.layout.apply(*np.meshgrid(*[np.arange(e) for e in shape], indexing="ij"), shape=shape)
    thread = sum(np.asarray(v) * thread_unit(a) for a, v in places.items() if a != "m")
    return {int(g) for g in np.unique(np.asarray(thread) // WARPGROUP_THREADS)}


# ---- the rules --------------------------------------------------------------------------------------------------


def mma_tiles(call: OpCall, cta_group: int = 1) -> tuple[int, int, int]:
    """M, N, K of a tile MMA: D, A and B are 2-D tiles once their leading dimensions are indexed down to one, with
    the shapes ``D = A @ B.T`` needs (D ``(M, N)``, A ``(M, K)``, B ``(N, K)``). With ``cta_group=2`` each CTA
    names its own halves (``hw.tcgen05_mma.PairMma``): D ``(M/2, N)``, A ``(M/2, K)``, B ``(N/2, K)``, and M, N, K
    are the pair's.

    Example: ``T.tile_mma(acc[0:128, 0:64], As[s, 0:128, 0:32], Bs[s, 0:64, 0:32])`` is ``(128, 64, 32)``; with
    ``cta_group=2`` and B ``Bs[s, 0:32, 0:32]``, ``(256, 64, 32)``.
    """
    shapes = {}
    for name, region in (("D", call.d), ("A", call.a), ("B", call.b)):
        extents = [int(r.extent) if isinstance(r.extent, tirx.IntImm) else None for r in region.region]
        if None in extents:
            raise ValueError(f"T.tile_mma's {name} region {region} has a symbolic extent")
        shapes[name] = tuple(e for e in extents if e != 1)
    if any(len(shape) != 2 for shape in shapes.values()):
        raise ValueError(
            "T.tile_mma takes 2-D tiles D (M, N), A (M, K), B (N, K) (leading dimensions indexed down to one), got "
            + ", ".join(f"{n} {s}" for n, s in shapes.items())
        )
    (m, n), (m_a, k), (n_b, k_b) = shapes["D"], shapes["A"], shapes["B"]
    if cta_group == 2:
        if (m_a, 2 * n_b, k_b) != (m, n, k):
            raise ValueError(
                "T.tile_mma(cta_group=2) computes the pair's D = A @ B.T from each CTA's halves: D is (M/2, N), A "
                f"(M/2, K), B (N/2, K); got D {shapes['D']}, A {shapes['A']}, B {shapes['B']}"
            )
        return 2 * m, n, k
    if (m_a, n_b, k_b) != (m, n, k):
        raise ValueError(
            f"T.tile_mma computes D = A @ B.T: D is (M, N), A (M, K), B (N, K); got D {shapes['D']}, A "
            f"{shapes['A']}, B {shapes['B']}"
        )
    return m, n, k


def _leading_indexed(side, name: str) -> None:
    """A TMEM operand takes one index of every dimension but its last two."""
    if any(e != 1 for e in side.extents[:-2]):
        raise ValueError(
            f"T.tile_mma's {name}: the TMEM region {side.region} must take one index of every dimension but the "
            f"last two (M and {'N' if name == 'D' else 'K'})"
        )


def _scale_steps(call: OpCall, ctx, m: int, n: int, steps: int) -> tuple[ScaleStep, ...]:
    """Per K step of a block-scaled MMA, where it reads each scale operand: a ``(rows, K / 32)`` region (rows = M
    for ``scale_a``, N for ``scale_b``) of a ``float8_e8m0fnu`` TMEM buffer laid out as the MMA reads it
    (``hw.tmem_addressing.scale_factor_taddr``; ``mma_scale_factor_layout`` makes one); a leading (stage) index may
    be an expression when each stage moves the scales by whole columns."""
    per_operand = []
    for name, region, rows in (("scale_a", call.scale_a, m), ("scale_b", call.scale_b, n)):
        side = operand(region, ctx.layouts, name)
        *leading, got_rows, got_blocks = side.extents
        if any(e != 1 for e in leading) or (got_rows, got_blocks) != (rows, steps):
            raise ValueError(
                f"T.tile_mma's {name} is a ({rows}, K/32) = ({rows}, {steps}) region (one scale per "
                f"{'row of A' if name == 'scale_a' else 'row of B'} per 32 K elements); {side.buffer.name}'s region "
                f"has extents {tuple(side.extents)}"
            )
        per_operand.append([_scale_column(side, rows, s, name) for s in range(steps)])
    return tuple(ScaleStep(a, a_id, b, b_id) for (a, a_id), (b, b_id) in zip(*per_operand, strict=True))


def _scale_column(side, rows: int, k_block: int, name: str) -> tuple[TmemColumn, int]:
    """(TMEM column, SF id) of K-block ``k_block`` of a scale operand; a symbolic leading index ``i`` must move the
    scales by a fixed number of whole columns per step (a stage), the SF id staying."""
    symbolic = [d for d, b in enumerate(side.begins) if not isinstance(b, int)]
    if any(d >= len(side.begins) - 2 for d in symbolic) or len(symbolic) > 1:
        raise ValueError(
            f"T.tile_mma's {name}: only one leading (stage) index may be an expression, got region start {side.begins}"
        )
    if not symbolic:
        column, sf_id = scale_factor_taddr(side.layout, side.shape, side.begins, rows, k_block, name)
        return TmemColumn(side.buffer, 0, column), sf_id
    (dim,) = symbolic
    at = [
        scale_factor_taddr(
            side.layout, side.shape, [v if d == dim else b for d, b in enumerate(side.begins)], rows, k_block, name
        )
        for v in range(int(side.shape[dim]))
    ]
    step = at[1][0] - at[0][0] if len(at) > 1 else 0
    if any(column != at[0][0] + v * step or sf_id != at[0][1] for v, (column, sf_id) in enumerate(at)):
        raise ValueError(
            f"T.tile_mma's {name}: stage {side.begins[dim]} of {side.buffer.name} does not move the scale factors "
            f"by one fixed number of columns with the same SF id (per stage: {at}); index it with a constant"
        )
    return TmemColumn(side.buffer, 0, tirx.const(at[0][0], "int32") + side.begins[dim] * step), at[0][1]


def mma_operand_layouts(buffer, dtype: str | None = None) -> tuple:
    """``((mode, layout, alignment), ...)``: the canonical K-major layouts of ``MMA_OPERAND_MODES`` that fit
    ``buffer``'s shape (``(..., rows, K)``: leading stage dimensions stack whole operands) and whose descriptor
    derives, each with the byte alignment its storage needs (:func:`swizzle_repeat_bytes`). K-major because it is
    the one majorness every MMA kind reads (the ISA reads only some types MN-major) and the one a row-major global
    tile fills with whole 16-byte vectors along its contiguous K.

    Example:
        >>> import tvm
        >>> tile = tvm.tirx.decl_buffer((128, 32), "float16", "tile", scope="shared")
        >>> [mode for mode, _, _ in mma_operand_layouts(tile)]  # K = 64 bytes: no whole 128-byte swizzle row
        ['64B', '32B', 'none']
    """
    dtype = str(dtype or buffer.dtype)
    shape = tuple(int(e) for e in buffer.shape)
    found = []
    for mode in MMA_OPERAND_MODES:
        try:
            layout = mma_shared_layout(dtype, mode, shape)
            shared_matrix_descriptor(mma_shared_layout(dtype, mode, shape[-2:]), shape[-2:], dtype)
        except ValueError:
            continue  # this mode cannot hold the shape (or the descriptor cannot read it): not a candidate
        found.append((mode, layout, swizzle_repeat_bytes(mode)))
    return tuple(found)


def _check_pair(call: OpCall, m: int, scaled: bool, func) -> None:
    """What ``T.tile_mma(cta_group=2)`` lowers: a kernel launched in clusters of pairs (ranks 2p and 2p + 1), A and
    B in shared memory, dense; the scope and form the pair's synchronisation needs.
    ``ValueError`` naming what is not."""
    _, cluster = cluster_launch(func)
    size = None if cluster is None or None in cluster else int(np.prod(cluster))
    if size is None or size % 2:
        declared = "declares no cluster" if cluster is None else f"declares clusters of shape {cluster}"
        raise ValueError(
            "T.tile_mma(cta_group=2) runs on a CTA pair, the CTAs of cluster ranks 2p and 2p + 1: launch the kernel "
            f"in clusters of an even number of CTAs (cx = T.cta_id_in_cluster([2])); it {declared}"
        )
    if scaled:
        raise ValueError("T.tile_mma(cta_group=2) with scale factors (block-scaled) is not lowered")
    if call.a.source.scope() == TMEM_SCOPE:
        raise ValueError("T.tile_mma(cta_group=2) with A in tensor memory is not lowered; put A in shared memory")
    if call.scope != "cta" and call.barrier is None:
        raise ValueError(
            f'T.tile_mma(cta_group=2) with scope "{call.scope}" needs barrier=bars[i]: the synchronous form waits '
            'at a cluster barrier every thread of both CTAs reaches (scope "cta")'
        )


def _check_mmasync_issue(call: OpCall, arch, tcgen05_only: tuple[str, ...]) -> None:
    """``ValueError`` for what ``mma.sync`` (dense or block-scaled) cannot take: a ``tcgen05_only`` argument, the
    asynchronous form, a scope narrower than a warp."""
    for name in tcgen05_only:
        if getattr(call, name) is not None:
            raise ValueError(f"T.tile_mma({name}=...) is a tcgen05 feature; mma.sync on {arch} has none")
    if not call.wait:
        raise ValueError(f"T.tile_mma(..., wait=False) is wgmma's asynchronous form; mma.sync on {arch} is synchronous")
    if call.scope not in ("cta", "warp"):
        raise ValueError(
            f"T.tile_mma scope {call.scope!r} with mma.sync: the instruction is issued by whole warps; write "
            "scope='cta' (every warp of the CTA its blocks of D) or scope='warp'"
        )


class TileMma(OpSpec):
    """``T.tile_mma(D, A, B, accumulate=False, *, barrier=None, scale_a=None, scale_b=None, scope="cta",
    wait=True, cta_group=1)``: ``D[m, n] (+)= sum_k A[m, k] * B[n, k]`` on the tensor cores (``D = A @ B.T``).

    ``D`` is an ``(M, N)`` region of a TMEM buffer in an MMA accumulator layout (``tmem_datapath_layout("D", 128,
    N)``, or ``"F"`` for M = 64); ``A`` an ``(M, K)`` region in shared memory (or TMEM), ``B`` an ``(N, K)`` region
    in shared memory, each in a layout the MMA reads (``mma_shared_layout``). ``accumulate`` (a bool or an
    expression such as ``k > 0``) adds to D instead of overwriting it. Without ``barrier`` the op waits for its
    result; with ``barrier=bars[i]`` it commits to that mbarrier and the kernel waits with ``T.mbarrier_wait``.
    ``scale_a``/``scale_b`` (both or neither) make it block-scaled. ``scope`` says who reaches the op: every thread
    of the CTA, one warp, or one thread.

    On a Hopper target (sm_90a) the op is ``wgmma``: ``D`` is a register fragment in
    ``wgmma_accumulator_layout(N)`` (M = 64 per warpgroup), ``A`` in shared memory or a register fragment in
    ``wgmma_operand_a_layout(K, dtype)``, ``B`` in shared memory; ``scope`` is ``"cta"`` (every warpgroup issues its
    own 64 rows) or ``"warpgroup"``, whose shared operands must already be published to the async proxy wgmma reads
    through (a TMA load then ``T.mbarrier_wait``, or writers that ``T.mbarrier_arrive``). ``wait=False`` issues
    without waiting: D is readable, and the shared operands may be overwritten, after ``T.tile_mma_wait(pending)``
    has left at most ``pending`` newer groups in flight.

    ``cta_group=2`` (tcgen05 only) is the CTA pair's MMA (``tcgen05.mma.cta_group::2``, the kernel launched in
    clusters whose ranks 2p and 2p + 1 are pair p): every CTA of the pair names its own halves, D ``(M/2, N)`` in
    its TMEM, A ``(M/2, K)`` and B ``(N/2, K)`` in its shared memory, at the same places in both CTAs; the pair's M
    is 256 (D in ``tmem_datapath_layout("A", 128, N)``) or 128 (``tmem_datapath_layout("B", 64, N)``), N 16..256 in
    steps of 16 (32 for 8-bit integers). One
    thread of the even CTA issues; the commit arrives on the mbarrier of both CTAs. Scope ``"cta"`` (every thread
    of both CTAs meets at a cluster barrier before the issue, then waits, or commits to ``barrier``), or
    ``"warp"``/``"thread"`` with ``barrier`` (the warp-specialised issuer, whose operands reach it through
    mbarriers). Its TMEM is allocated with ``cta_group::2`` in both CTAs.

    Example:
        >>> import tvm
        >>> D = tvm.tirx.decl_buffer((128, 64), "float32", "D", scope="tmem")
        >>> A = tvm.tirx.decl_buffer((128, 16), "float16", "A", scope="shared")
        >>> B = tvm.tirx.decl_buffer((64, 16), "float16", "B", scope="shared")
        >>> TILE_MMA(D, A, B, True, scope="warp")
        T.tile_mma(D[0:128, 0:64], A[0:128, 0:16], B[0:64, 0:16], "accumulate", T.bool(True), "scope", "warp")
    """

    name = "tile_mma"
    description = "a tensor-core MMA over buffer regions"
    fields = (
        RegionField("d", writes=True, label="D"),
        RegionField("a", label="A"),
        RegionField("b", label="B"),
        ConditionField("accumulate", default=False),
        MbarrierField("barrier", default=None, keyword=True),
        RegionField("scale_a", default=None, keyword=True),
        RegionField("scale_b", default=None, keyword=True),
        ScopeField(MMA_SCOPES, keyword=True),
        FlagField("wait", default=True, keyword=True),
        CountField("cta_group", 1, 2, default=1, keyword=True),
    )
    families = ("tcgen05", "wgmma", "mmasync", BLOCK_SCALE_FAMILY)

    def no_family(self, ctx) -> str:
        return f"target {ctx.arch} has no tensor-core MMA T.tile_mma lowers to: " + "; ".join(
            f"{family} exists on {', '.join(targets_with(family))}" for family in self.families
        )

    def check(self, call: OpCall) -> None:
        if (call.scale_a is None) != (call.scale_b is None):
            given, missing = ("scale_a", "scale_b") if call.scale_a is not None else ("scale_b", "scale_a")
            raise ValueError(
                f"T.tile_mma has {given} but no {missing}: a block-scaled MMA takes both scale-factor buffers, a "
                "dense one neither"
            )

    def relations(self, call: OpCall) -> tuple:
        legal = []
        for role, region in (("A", call.a), ("B", call.b)):
            buffer = region.source
            if buffer.scope() == "shared" and len(buffer.shape) >= 2:
                why = f"{role} of T.tile_mma{call.where}"
                legal.append(OneOf(buffer, why, mma_operand_layouts(buffer), _OPERAND_REQUIREMENT))
        return tuple(legal)

    def rules(self, call: OpCall, ctx) -> Record:
        in_registers = all(region.source.scope() == "local" for region in (call.d, call.a, call.b))
        family = "mmasync" if in_registers and ctx.arch.has("mmasync") else self.family(ctx)
        if call.cta_group == 2 and family != "tcgen05":
            raise ValueError(
                f"T.tile_mma(cta_group=2) is tcgen05.mma.cta_group::2, the CTA pair's MMA; target {ctx.arch} "
                f"lowers T.tile_mma to {family}, which has no CTA pair (tcgen05 exists on "
                f"{', '.join(targets_with('tcgen05'))})"
            )
        if family == "mmasync" and call.scale_a is not None:
            return self._mmasync_scaled(call, ctx)
        if family == "mmasync":
            return self._mmasync(call, ctx)
        reach = None
        if call.scope == "cta":
            reach = Reach(
                "cta",
                "a cta-scope T.tile_mma has a CTA barrier that every thread must reach, but it sits under "
                '`if {guard}`; write scope="warp" (one warp reaches it) or scope="thread"',
            )
        if family == "wgmma":
            return self._wgmma(call, ctx, reach)
        return self._tcgen05(call, ctx, reach)

    # -- tcgen05 --------------------------------------------------------------------------------------------------

    def _tcgen05(self, call: OpCall, ctx, reach) -> Tcgen05Mma:
        if call.scope == "warpgroup":
            raise ValueError(
                'T.tile_mma scope "warpgroup" is for wgmma (sm_90a); tcgen05 takes "cta", "warp", "thread"'
            )
        if not call.wait:
            raise ValueError(
                "T.tile_mma(..., wait=False) is the asynchronous form of wgmma (sm_90a); with tcgen05 pass "
                "barrier=bars[i] and wait with T.mbarrier_wait"
            )
        regions = {"D": call.d, "A": call.a, "B": call.b}
        if call.scale_a is not None:
            regions.update(scale_a=call.scale_a, scale_b=call.scale_b)
        for name, region in regions.items():
            buffer = region.source
            if buffer.scope() not in _TCGEN05_PLACES[name]:
                where = " or ".join(
                    {"shared": "shared memory", TMEM_SCOPE: "tensor memory"}[p]
                    for p in dict.fromkeys(p.split(".")[0] for p in _TCGEN05_PLACES[name])
                )
                raise ValueError(f"T.tile_mma's {name} must be in {where}; {buffer.name} is in {buffer.scope()!r}")
            if name.startswith("scale") and str(buffer.dtype) != SCALE_DTYPE:
                raise ValueError(f"T.tile_mma's {name} ({buffer.name}) must be {SCALE_DTYPE}, got {buffer.dtype}")
        group = call.cta_group
        m, n, k = mma_tiles(call, group)
        d_dtype, a_dtype, b_dtype = (str(call.d.source.dtype), str(call.a.source.dtype), str(call.b.source.dtype))
        scaled = call.scale_a is not None
        prefix = "T.tile_mma with scale factors (block-scaled)" if scaled else "T.tile_mma"
        if group == 2:
            prefix = "T.tile_mma(cta_group=2)"
            _check_pair(call, m, scaled, ctx.func)
        try:
            kind = mma_kind(a_dtype, b_dtype, block_scaled=scaled)
            instruction = MmaInstruction(kind, a_dtype, b_dtype, d_dtype, m, n, cta_group=group)
        except ValueError as err:
            raise ValueError(f"{prefix}: {err}") from None
        if k % instruction.k:
            raise ValueError(
                f"T.tile_mma's K ({k}) must be whole instruction steps: kind {kind} takes K = {instruction.k} "
                f"{a_dtype} elements per instruction"
            )
        form = "sync" if call.barrier is None else "barrier"
        buffers = [region.source for region in regions.values()]
        if not all(ctx.decided(b) for b in buffers):  # the layouts are read once inference has decided them
            return Tcgen05Mma(call, "tcgen05", None, None, None, m, n, k, kind, instruction, form, reach=reach)
        d, a, b = (operand(regions[name], ctx.layouts, name) for name in ("D", "A", "B"))
        # each CTA's descriptors describe its own halves; the pair's MMA reads the peer's at the same offsets
        m_cta, n_b = m // group, n // group
        b_shared = shared_operand(b, n_b, k, "B")
        a_shared = a_address = None
        if isinstance(a, TmemOperand):
            a_major = "K"
        else:
            a_shared = shared_operand(a, m_cta, k, "A")
            a_major = a_shared.descriptor.major
        try:
            instruction = dataclasses.replace(instruction, a_major=a_major, b_major=b_shared.descriptor.major)
        except ValueError as err:
            raise ValueError(f"{prefix}: {err}") from None
        _leading_indexed(d, "D")
        if group == 2:  # each CTA's half: Layout A (the pair's M = 256) or Layout B (M = 128)
            lane, column = pair_accumulator_taddr_offset(d.layout, d.begins, (m_cta, n), d.dtype, d.shape)
        else:
            lane, column = accumulator_taddr_offset(d.layout, d.begins, (m, n), d.dtype, d.shape)
        if isinstance(a, TmemOperand):
            _leading_indexed(a, "A")
            a_lane, a_column = tmem_operand_offset(a.layout, a.begins, (m, k), a.dtype, a.shape)
            if a_lane != lane:
                raise ValueError(
                    f"T.tile_mma's A in TMEM starts at lane offset {a_lane} and D at {lane}; the ISA reads A on D's "
                    "lanes"
                )
            a_address = TmemColumn(a.buffer, a_lane, a_column)
        scales = _scale_steps(call, ctx, m, n, k // instruction.k) if scaled else None
        return Tcgen05Mma(
            call,
            "tcgen05",
            d,
            a,
            b,
            m,
            n,
            k,
            kind,
            instruction,
            form,
            d_address=TmemColumn(d.buffer, lane, column),
            a_address=a_address,
            a_shared=a_shared,
            b_shared=b_shared,
            scales=scales,
            reach=reach,
        )

    # -- wgmma ----------------------------------------------------------------------------------------------------

    def _wgmma(self, call: OpCall, ctx, reach) -> WgmmaMma:
        arch = ctx.arch
        if call.barrier is not None:
            raise ValueError(
                "T.tile_mma(barrier=...) is a tcgen05 feature; on sm_90a (wgmma) write tile_mma(..., wait=False) and "
                "T.tile_mma_wait(pending) (then T.mbarrier_arrive to release a stage)"
            )
        if call.scale_a is not None:
            raise ValueError(f"T.tile_mma with scale factors (block-scaled) needs tcgen05; {arch} (wgmma) has none")
        if call.scope not in ("cta", "warpgroup"):
            raise ValueError(
                f"T.tile_mma scope {call.scope!r} on {arch}: wgmma is issued by whole warpgroups (.sync.aligned "
                "over 128 threads); write scope='cta' (every warpgroup its own 64 rows) or scope='warpgroup'"
            )
        d_buffer, a_buffer, b_buffer = call.d.source, call.a.source, call.b.source
        d_layout = ctx.layouts.get(d_buffer)
        if d_buffer.scope() != "local" or d_layout is None:
            raise ValueError(
                f"T.tile_mma's D ({d_buffer.name}, {d_buffer.scope()!r}) must be a register fragment on {arch}: "
                f'T.alloc_local((M, N), "{d_buffer.dtype}", layout=wgmma_accumulator_layout(N))'
                + (f", not {d_buffer.scope()} memory" if d_buffer.scope() != "local" else "; it has no layout")
            )
        if a_buffer.scope() not in (*SHARED_SCOPES, "local"):
            raise ValueError(
                f"T.tile_mma's A ({a_buffer.name}) must be in shared memory or registers; it is in {a_buffer.scope()!r}"
            )
        if b_buffer.scope() not in SHARED_SCOPES:
            raise ValueError(
                f"T.tile_mma's B ({b_buffer.name}) must be in shared memory; it is in {b_buffer.scope()!r}"
            )
        m, n, k = mma_tiles(call)
        warpgroups = m // WGMMA_M
        if m % WGMMA_M or warpgroups < 1:
            raise ValueError(f"T.tile_mma's D has M = {m}; wgmma computes 64 rows per warpgroup (M = 64 w)")
        if call.scope == "warpgroup" and warpgroups != 1:
            raise ValueError(f"a warpgroup-scope T.tile_mma computes one warpgroup's 64 rows; D has M = {m}")
        if call.scope == "cta" and ctx.threads.count != warpgroups * WARPGROUP_THREADS:
            raise ValueError(
                f"a cta-scope T.tile_mma on {arch} has every warpgroup of the CTA issue its own 64 rows: D has "
                f"M = {m} ({warpgroups} warpgroup(s), {warpgroups * WARPGROUP_THREADS} threads), the CTA has "
                f"{ctx.threads.count} threads; use scope='warpgroup' under a condition on the warpgroup for fewer"
            )
        _whole_fragment(call.d, "D")
        try:
            wgmma_accumulator_check(d_layout, (m, n), str(d_buffer.dtype))
        except ValueError as err:
            raise ValueError(
                f"T.tile_mma's D ({d_buffer.name}) is not in the wgmma accumulator layout: {err}"
            ) from None
        d = operand(call.d, ctx.layouts, "D")
        in_registers = a_buffer.scope() == "local"
        if in_registers:
            _whole_fragment(call.a, "A")
            a_layout = ctx.layouts.get(a_buffer)
            if a_layout is None:
                raise ValueError(
                    f"T.tile_mma's A ({a_buffer.name}) in registers needs layout=wgmma_operand_a_layout(K, dtype)"
                )
            try:
                wgmma_operand_a_check(a_layout, (m, k), str(a_buffer.dtype))
            except ValueError as err:
                raise ValueError(
                    f"T.tile_mma's A ({a_buffer.name}) is not in the wgmma register layout of A: {err}"
                ) from None
        try:
            instruction = WgmmaInstruction(str(a_buffer.dtype), str(b_buffer.dtype), str(d_buffer.dtype), n)
        except ValueError as err:
            raise ValueError(f"T.tile_mma: {err}") from None
        if k % instruction.k:
            raise ValueError(
                f"T.tile_mma's K ({k}) must be whole wgmma steps of {instruction.k} {a_buffer.dtype} elements "
                "(32 bytes)"
            )
        if call.scope == "warpgroup":
            reach = Reach("warpgroup", _warpgroup_refusal("T.tile_mma", arch))
        if not (ctx.decided(a_buffer) and ctx.decided(b_buffer)):
            return WgmmaMma(call, "wgmma", d, None, None, m, n, k, warpgroups, reach=reach)
        a = operand(call.a, ctx.layouts, "A")
        b = operand(call.b, ctx.layouts, "B")
        b_shared = shared_operand(b, n, k, "B", family="wgmma")
        a_shared, a_rows_offset, a_major = None, 0, "K"
        if not in_registers:
            a_shared, a_rows_offset = warpgroup_rows(a, warpgroups, k, ctx.layouts)
            a_major = a_shared.descriptor.major
        try:
            instruction = WgmmaInstruction(
                a.dtype, b.dtype, d.dtype, n, a_major, b_shared.descriptor.major, in_registers
            )
        except ValueError as err:
            raise ValueError(f"T.tile_mma: {err}") from None
        return WgmmaMma(
            call,
            "wgmma",
            d,
            a,
            b,
            m,
            n,
            k,
            warpgroups,
            instruction,
            a_shared,
            a_rows_offset,
            b_shared,
            reach=reach,
        )

    # -- mma.sync -------------------------------------------------------------------------------------------------

    def _mmasync(self, call: OpCall, ctx) -> MmaSyncMma:
        arch = ctx.arch
        _check_mmasync_issue(call, arch, ("barrier", "scale_a", "scale_b"))
        regions = {"D": call.d, "A": call.a, "B": call.b}
        for name, region in regions.items():
            buffer = region.source
            if buffer.scope() != "local" or ctx.layouts.get(buffer) is None:
                raise ValueError(
                    f"T.tile_mma's {name} ({buffer.name}, {buffer.scope()!r}) must be a register fragment on {arch} "
                    f"(mma.sync): T.alloc_local(shape, dtype, layout=mma_sync_{'c' if name == 'D' else name.lower()}"
                    "_layout(shape, dtype, warps))"
                )
        m, n, k = mma_tiles(call)
        d_buffer, a_buffer, b_buffer = (region.source for region in regions.values())
        try:
            instruction = MmaSyncInstruction(
                str(a_buffer.dtype),
                str(b_buffer.dtype),
                str(d_buffer.dtype),
                best_k(a_buffer.dtype, b_buffer.dtype, k, str(arch)),
            )
            instruction.check_arch(str(arch))
        except ValueError as err:
            raise ValueError(f"T.tile_mma: {err}") from None
        reach = Reach("warp", f"T.tile_mma on {arch} is mma.sync, .sync.aligned over whole warps, but ")
        if not all(ctx.decided(b) for b in (d_buffer, a_buffer, b_buffer)):
            return MmaSyncMma(call, "mmasync", None, None, None, m, n, k, reach=reach)
        try:  # a region of a fragment is one when each thread holds it in a run of its slots (K chunks of A, B)
            d, a, b = (operand(region, ctx.layouts, name, fragment_regions=True) for name, region in regions.items())
        except ValueError as err:
            raise ValueError(f"T.tile_mma on {arch} (mma.sync): {err}") from None
        atoms = []
        for name, side, shape in (("C", d, (m, n)), ("A", a, (m, k)), ("B", b, (n, k))):
            try:
                atoms.append(mma_sync_atoms(side.layout, name, shape, side.dtype))
            except ValueError as err:
                label = "D" if name == "C" else name
                what = f"T.tile_mma's {label} ({side.buffer.name})"
                raise ValueError(f"{what} is not an mma.sync fragment: {err}") from None
        try:
            program = warp_program(instruction, *atoms)
        except ValueError as err:
            raise ValueError(f"T.tile_mma's fragments do not make mma.sync instructions: {err}") from None
        warps = ctx.threads.count // 32
        if call.scope == "cta" and program.warps != tuple(range(warps)):
            raise ValueError(
                f"a cta-scope T.tile_mma on {arch} has every warp of the CTA issue its blocks of D: D "
                f"({d_buffer.name}) lives on warps {list(program.warps)}, the CTA has {warps}; use scope='warp' under "
                "a condition on the warp for fewer"
            )
        return MmaSyncMma(call, "mmasync", d, a, b, m, n, k, program, reach=reach)

    # -- block-scaled mma.sync (sm_120a) ---------------------------------------------------------------------------

    def _mmasync_scaled(self, call: OpCall, ctx) -> MmaSyncScaledMma:
        arch = ctx.arch
        if not arch.has(BLOCK_SCALE_FAMILY):
            raise ValueError(
                f"T.tile_mma with scale factors on register fragments is mma.sync's block_scale form, which needs "
                f"{', '.join(targets_with(BLOCK_SCALE_FAMILY))}; the target is {arch} (tcgen05's block scaling, on "
                "sm_100a, takes D in tensor memory)"
            )
        _check_mmasync_issue(call, arch, ("barrier",))
        regions = {"D": call.d, "A": call.a, "B": call.b, "scale_a": call.scale_a, "scale_b": call.scale_b}
        constructor = {"D": "mma_sync_c_layout", "A": "mma_sync_a_layout", "B": "mma_sync_b_layout"}
        for name, region in regions.items():
            buffer = region.source
            if buffer.scope() != "local" or ctx.layouts.get(buffer) is None:
                how = (
                    f"{constructor[name]}(shape, dtype, warps)"
                    if name in constructor
                    else f"mma_sync_scale_layout('{name[-1].upper()}', shape, warps)"
                )
                raise ValueError(
                    f"T.tile_mma's {name} ({buffer.name}, {buffer.scope()!r}) must be a register fragment for the "
                    f"block-scaled mma.sync on {arch}: T.alloc_local(shape, dtype, layout={how})"
                )
            _whole_fragment(region, name, "mma.sync")
        m, n, k = mma_tiles(call)
        d_buffer, a_buffer, b_buffer, sfa_buffer, sfb_buffer = (region.source for region in regions.values())
        scale_shapes = {}
        for name, buffer, rows in (("scale_a", sfa_buffer, m), ("scale_b", sfb_buffer, n)):
            shape = tuple(int(e) for e in buffer.shape)
            if len(shape) != 2 or shape[0] != rows:
                raise ValueError(
                    f"T.tile_mma's {name} ({buffer.name}) is ({rows}, K chunks): one scale per "
                    f"{'row of A' if name == 'scale_a' else 'row of B'} per chunk of K; it has shape {shape}"
                )
            scale_shapes[name] = shape
        chunks = scale_shapes["scale_a"][1]
        if scale_shapes["scale_b"][1] != chunks:
            raise ValueError(
                f"T.tile_mma's scale_a has {chunks} K chunks and scale_b {scale_shapes['scale_b'][1]}; one "
                "instruction scales A and B over the same chunks"
            )
        if str(sfb_buffer.dtype) != str(sfa_buffer.dtype):
            raise ValueError(
                f"T.tile_mma's scale_a is {sfa_buffer.dtype} and scale_b {sfb_buffer.dtype}; the instruction has "
                "one scale type"
            )
        operand_dtypes = (str(a_buffer.dtype), str(b_buffer.dtype))
        packed = operand_dtypes == (PACKED_FP4, PACKED_FP4)  # bytes of two e2m1 each: K counts e2m1 elements
        for name, buffer in (("A", a_buffer), ("B", b_buffer)):
            if str(buffer.dtype) not in ("float8_e4m3fn", "float8_e5m2") and not packed:
                raise ValueError(
                    f"T.tile_mma's {name} ({buffer.name}) is {buffer.dtype}: the block-scaled mma.sync lowers for "
                    f"float8_e4m3fn and float8_e5m2 operands, and for e2m1 pairs packed in {PACKED_FP4} bytes (A "
                    f"and B both {PACKED_FP4}; fp6 and unpacked fp4 have no register layout, which addresses whole "
                    "bytes)"
                )
        elements = 2 * k if packed else k
        dtypes = ["float4_e2m1fn"] * 2 if packed else list(operand_dtypes)
        try:
            instruction = block_scaled_instruction(
                *dtypes, str(d_buffer.dtype), str(sfa_buffer.dtype), elements, chunks
            )
            instruction.check_arch(str(arch))
        except ValueError as err:
            raise ValueError(f"T.tile_mma with scale factors (block-scaled mma.sync): {err}") from None
        reach = Reach("warp", f"T.tile_mma on {arch} is mma.sync, .sync.aligned over whole warps, but ")
        buffers = (d_buffer, a_buffer, b_buffer, sfa_buffer, sfb_buffer)
        if not all(ctx.decided(b) for b in buffers):
            return MmaSyncScaledMma(
                call, BLOCK_SCALE_FAMILY, None, None, None, None, None, m, n, k, instruction, reach=reach
            )
        # the program of 32-byte K steps over 8-bit register fragments: an fp8 m16n8k32's, packed fp4's m16n8k64
        dense = MmaSyncInstruction("float8_e4m3fn", "float8_e4m3fn", "float32", 32)
        atoms = []
        for name, buffer, shape in (("C", d_buffer, (m, n)), ("A", a_buffer, (m, k)), ("B", b_buffer, (n, k))):
            try:
                atoms.append(mma_sync_atoms(ctx.layouts[buffer], name, shape, str(buffer.dtype)))
            except ValueError as err:
                label = "D" if name == "C" else name
                raise ValueError(f"T.tile_mma's {label} ({buffer.name}) is not an mma.sync fragment: {err}") from None
        scales = []
        for name, buffer, rows in (("A", sfa_buffer, m), ("B", sfb_buffer, n)):
            try:
                scales.append(mma_sync_scale_atoms(ctx.layouts[buffer], name, (rows, chunks), instruction.scale_vec))
            except ValueError as err:
                raise ValueError(
                    f"T.tile_mma's scale_{name.lower()} ({buffer.name}) is not a block-scaled mma.sync scale "
                    f"fragment: {err}"
                ) from None
        try:
            program = warp_program(dense, *atoms)
            selects = scale_program(instruction, program, atoms[0], *scales)
        except ValueError as err:
            raise ValueError(f"T.tile_mma's fragments do not make block-scaled mma.sync instructions: {err}") from None
        warps = ctx.threads.count // 32
        if call.scope == "cta" and program.warps != tuple(range(warps)):
            raise ValueError(
                f"a cta-scope T.tile_mma on {arch} has every warp of the CTA issue its blocks of D: D "
                f"({d_buffer.name}) lives on warps {list(program.warps)}, the CTA has {warps}; use scope='warp' under "
                "a condition on the warp for fewer"
            )
        d, a, b, sfa, sfb = (operand(region, ctx.layouts, name) for name, region in regions.items())
        return MmaSyncScaledMma(
            call, BLOCK_SCALE_FAMILY, d, a, b, sfa, sfb, m, n, k, instruction, program, selects, reach=reach
        )


def _whole_fragment(region, name: str, instruction: str = "wgmma") -> None:
    buffer = region.source
    if any(
        not (isinstance(r.min, tirx.IntImm) and int(r.min) == 0 and int(r.extent) == int(e))
        for r, e in zip(region.region, buffer.shape, strict=True)
    ):
        raise ValueError(
            f"T.tile_mma's {name} on {instruction} is a whole register fragment: {buffer.name} has shape "
            f"{tuple(int(e) for e in buffer.shape)}, the operand is {region}"
        )


def _warpgroup_refusal(what: str, arch) -> str:
    return f"{what} on {arch} runs on whole warpgroups (wgmma is .sync.aligned over 128 threads), but "


def async_accumulators(ctx) -> tuple:
    """The accumulator buffers of the function's asynchronous tile MMAs (``T.tile_mma(..., wait=False)``), in
    program order, each once.

    Example: for a kernel whose K loop issues ``T.tile_mma(acc, As, Bs, wait=False)``, ``(acc,)``.
    """

    def scan() -> tuple:
        found = []

        def on_evaluate(stmt):
            call = find(stmt)
            asynchronous = call is not None and call.spec is TILE_MMA and not call.wait
            if asynchronous and all(not b.same_as(call.d.source) for b in found):
                found.append(call.d.source)

        walk(ctx.func.body, [(tirx.Evaluate, on_evaluate)])
        return tuple(found)

    return ctx.cached("async accumulators", scan)


class TileMmaWait(OpSpec):
    """``T.tile_mma_wait(pending=0)``: every thread of the warpgroup waits until at most ``pending`` of its
    asynchronous tile MMAs (``T.tile_mma(..., wait=False)``) are still in flight (``wgmma.wait_group``); after
    ``T.tile_mma_wait(0)`` every accumulator is readable and every shared operand may be overwritten.

    Example:
        >>> TILE_MMA_WAIT(1)
        T.tile_mma_wait("pending", 1)
    """

    name = "tile_mma_wait"
    description = "wait for the asynchronous tile MMAs of the warpgroup"
    fields = (CountField("pending", 0, MAX_PENDING_GROUPS, default=0),)
    families = ("wgmma",)

    def no_family(self, ctx) -> str:
        return (
            f"T.tile_mma_wait waits for wgmma groups ({', '.join(targets_with('wgmma'))}); on {ctx.arch} an "
            "asynchronous tile_mma commits to barrier=bars[i] and T.mbarrier_wait waits for it"
        )

    def rules(self, call: OpCall, ctx) -> MmaWait:
        family = self.family(ctx)
        buffers = async_accumulators(ctx)
        if not buffers:
            raise ValueError(
                "T.tile_mma_wait waits for asynchronous tile MMAs, but no T.tile_mma(..., wait=False) in this "
                "function issues one"
            )
        accumulators = []
        for buffer in buffers:
            side = operand(buffer[tuple(slice(0, e) for e in buffer.shape)], ctx.layouts, "D")
            if not isinstance(side, FragmentOperand):
                raise ValueError(f"T.tile_mma's D must be a register fragment, {buffer.name} is not")
            accumulators.append(side)
        reach = Reach("warpgroup", _warpgroup_refusal("T.tile_mma_wait", ctx.arch))
        return MmaWait(call, family, call.pending, tuple(accumulators), reach=reach)


TILE_MMA = TileMma()
TILE_MMA_WAIT = TileMmaWait()
