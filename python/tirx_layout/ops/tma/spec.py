"""``T.tile_copy_async`` and ``T.tma_store_wait``: the Tensor Memory Accelerator's tiled copy and the wait for its
stores (a load without a barrier is the ``cp.async`` form: ``ops/cp_async``).

``T.tile_copy_async(dst, src, barrier=None, *, expect_tx=True, scope="cta", transposed=False, multicast=None,
    issuer=None)`` copies a box
between global and shared memory:

* a load (``src`` global, ``dst`` shared, ``barrier=bars[i]``): one thread of the scope issues the copy, which
  performs complete-tx of the box's bytes on ``bars[i]`` when the data has landed; with ``expect_tx=True`` that
  thread first announces those bytes (``mbarrier.arrive.expect_tx``), so the barrier counts one arrival per copy
  that signals it; consumers ``T.mbarrier_wait`` on it;
* a store (``src`` shared, ``dst`` global, no barrier): every thread of the scope makes its shared writes visible to
  the TMA, the scope synchronises, one thread issues the store and commits it to its bulk async-group;
  ``T.tma_store_wait()`` waits for it before the shared tile is reused or the kernel ends.

The tensor map comes from the global buffer's shape and the shared buffer's layout (``hw.tma.tensor_map_for``); the
box is the region's shape; elements of a load box outside the global tensor are filled with zeros. ``transposed``
(loads): the shared region is the global one with its last two dimensions swapped -- an MN-major MMA operand
``(rows, K)`` filled from a global tensor stored ``(K, rows)``; a tile of several swizzle-atom columns is one box per
column, all completing on ``barrier``. ``multicast=mask`` (loads, in a kernel with a cluster): every CTA of the
cluster reaches the op; each CTA whose rank is a bit of ``mask`` expects the box's bytes on its own ``barrier``
(one arrival per copy), and one of them (``issuer=``, by default the lowest rank of a constant mask) issues a
single ``.multicast::cluster`` copy that lands in each one's shared memory at the tile's offset and performs
complete-tx on each one's ``barrier`` -- the transaction counts follow from the mask. Every rule is in
:meth:`TileCopyAsync.rules`; the lowering (``ops/tma/lower.py``) encodes the maps on the host and emits the copies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import tvm

from ...hw.clusters import MAX_CTA_MASK, MAX_PORTABLE_CLUSTER
from ...hw.memory import dtype_bytes
from ...hw.tma import TensorMap, box_row_elements, tensor_map_for
from ...ir.rewrite import AllocBuffer, walk
from ...ir.threads import cluster_launch
from ...layout import ComposeLayout, TileLayout
from ..cp_async.spec import cp_async_rules
from ..operands import MemoryOperand, operand
from ..spec import FlagField, MbarrierField, OpCall, OpSpec, Record, RegionField, ScopeField, Uint32Field

#: Who reaches a TMA op: thread 0 of the CTA, lane 0 of a warp, or the thread (as for ``T.tile_mma``).
TMA_SCOPES = ("cta", "warp", "thread")
_MEMORY_SCOPES = ("global", "shared", "shared.dyn")


@dataclass(frozen=True)
class TmaBox:
    """One ``cp.async.bulk.tensor`` of a copy: the global and shared pieces it moves, its tensor map, and where the
    shared piece starts in elements of the shared buffer's storage: ``offset`` plus each ``(index, step)`` term's
    index times step (a symbolic stage)."""

    glob: MemoryOperand
    shared: MemoryOperand
    tensor_map: TensorMap
    offset: int
    terms: tuple


@dataclass(frozen=True)
class TmaCopy(Record):
    """A ``T.tile_copy_async`` checked: whether it loads, its global and shared operands, and the boxes it moves
    (one, or one per swizzle-atom column of a transposed load)."""

    load: bool = True
    #: a multicast load whose constant mask names every CTA of the cluster
    everyone: bool = False
    glob: MemoryOperand | None = None
    shared: MemoryOperand | None = None
    boxes: tuple[TmaBox, ...] = ()

    @property
    def transaction_bytes(self) -> int:
        """The bytes every box of the copy writes, which the load's mbarrier expects."""
        return sum(box.tensor_map.transaction_bytes for box in self.boxes)


def _tile(layout):
    return layout.tile_layout if isinstance(layout, ComposeLayout) else layout


def stage_offset(side: MemoryOperand, name: str) -> tuple[int, tuple]:
    """The element offset (before the swizzle) of the first element of a shared region: ``(offset of the static
    begins, ((symbolic begin, its dimension's fixed step), ...))``; a symbolic begin must be on a dimension the
    region takes one index of (``MemoryOperand.stage_begins``), which moves the region by one fixed step.

    Example: for ``As[s, 0:128, 0:64]`` of a ``(4, 128, 64)`` buffer, ``(0, ((s, 8192),))``.
    """
    tile, shape = _tile(side.laid_out), list(side.shape)
    static = side.stage_begins(name)

    def at(coords):
        return int(np.asarray(tile.apply(*coords, shape=shape)["m"]))

    offset, terms = at(static), []
    for d, begin in enumerate(side.begins):
        if isinstance(begin, int):
            continue
        base = [0] * len(shape)
        steps = []
        for v in range(shape[d]):
            base[d] = v
            steps.append(at(base) - at([0] * len(shape)))
        step = steps[1] if len(steps) > 1 else 0
        if any(s != v * step for v, s in enumerate(steps)):
            raise ValueError(
                f"{name}: dimension {d} does not move the region by one fixed step; index it with a constant"
            )
        terms.append((begin, step))
    return offset, tuple(terms)


def _from_its_start(sliced):
    """A sliced region's layout without the constant memory offset of its first element: the copy addresses the
    region from its start (checked to lie on the swizzle repeat, where the swizzle of ``start + x`` is ``start +
    swizzle(x)``), so the map sees the region as a box of its own."""
    tile = _tile(sliced)
    offset = {str(getattr(axis, "name", axis)): value for axis, value in dict(tile.offset).items()}
    if set(offset) - {"m"} or not isinstance(offset.get("m", 0), int):
        return sliced  # tensor_map_for names what it cannot take
    base = TileLayout.from_iters(list(tile.shard), list(tile.replica), None)
    return ComposeLayout(sliced.swizzle, base) if isinstance(sliced, ComposeLayout) else base


def _region_moved(side: MemoryOperand, dim: int, shift: int, extent: int):
    """``side``'s region with dimension ``dim`` starting ``shift`` further and ``extent`` long."""
    begins, extents = list(side.begins), list(side.extents)
    begins[dim] = begins[dim] + shift
    extents[dim] = extent
    return side.buffer[tuple(slice(b, b + e) for b, e in zip(begins, extents, strict=True))]


class TileCopyAsync(OpSpec):
    """``T.tile_copy_async(dst, src, barrier=None, *, expect_tx=True, scope="cta", transposed=False, multicast=None,
    issuer=None)``: copy a box
    between global and shared memory with the Tensor Memory Accelerator (see the module docstring).

    Example (inside a ``@T.prim_func``): ``T.tile_copy_async(As, A[m0:m0 + 128, k0:k0 + 64], bars[0])``.

        >>> import tvm
        >>> A = tvm.tirx.decl_buffer((256, 64), "bfloat16", "A")
        >>> As = tvm.tirx.decl_buffer((128, 64), "bfloat16", "As", scope="shared")
        >>> bars = tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")
        >>> TILE_COPY_ASYNC(As, A[128:256, 0:64], bars[0])
        T.tile_copy_async(As[0:128, 0:64], A[128:256, 0:64], "barrier", bars[0])
    """

    name = "tile_copy_async"
    description = "a TMA tiled copy between a global and a shared region"
    fields = (
        # the TMA reads and writes a global box past the tensor's edge (zeros in, nothing out): no bounds rule
        RegionField("dst", writes=True, bounded=False),
        RegionField("src", bounded=False),
        MbarrierField("barrier", default=None),
        FlagField("expect_tx", default=True, keyword=True),
        ScopeField(TMA_SCOPES, keyword=True),
        FlagField("transposed", default=False, keyword=True),
        Uint32Field("multicast", 1, MAX_CTA_MASK, "the multicast CTA mask", default=None, keyword=True),
        Uint32Field("issuer", 0, MAX_PORTABLE_CLUSTER - 1, "the issuing CTA's rank", default=None, keyword=True),
    )
    families = ("tma", "cpasync")

    def rules(self, call: OpCall, ctx) -> TmaCopy:
        load = call.dst.source.scope() != "global"
        if load and call.barrier is None and ctx.arch.has("cpasync"):  # the cp.async form (ops/cp_async)
            return cp_async_rules(call, ctx)
        family = self.family(ctx)
        if family != "tma":
            raise ValueError(
                f"T.tile_copy_async on {ctx.arch} (no TMA) is a cp.async load: global -> shared without a barrier "
                "(T.tile_copy_async(dst, src), then T.tile_copy_async_wait(pending))"
            )
        dst_buffer, src_buffer = call.dst.source, call.src.source
        for buffer in (dst_buffer, src_buffer):
            if buffer.scope() not in _MEMORY_SCOPES:
                raise ValueError(
                    f"T.tile_copy_async copies between global and shared memory; {buffer.name} is {buffer.scope()}"
                )
        glob_buffer, shared_buffer = (src_buffer, dst_buffer) if load else (dst_buffer, src_buffer)
        what = "T.tile_copy_async load" if load else "T.tile_copy_async store"
        if glob_buffer.scope() != "global" or shared_buffer.scope() == "global":
            raise ValueError(
                f"T.tile_copy_async copies global -> shared (a load) or shared -> global (a store), not "
                f"{src_buffer.name} ({src_buffer.scope()}) -> {dst_buffer.name} ({dst_buffer.scope()})"
            )
        if str(glob_buffer.dtype) != str(shared_buffer.dtype):
            raise ValueError(
                f"{what}: {glob_buffer.name} is {glob_buffer.dtype} but {shared_buffer.name} is {shared_buffer.dtype}; "
                "TMA copies bytes without converting; convert with a casting T.tile_copy through registers or "
                f"shared memory of {glob_buffer.dtype} (T.tile_copy converts)"
            )
        if not load and call.barrier is not None:
            raise ValueError(
                f"{what} from {shared_buffer.name} takes no barrier: it completes through the bulk async-group "
                "(T.tma_store_wait())"
            )
        everyone = False
        if call.multicast is not None or call.issuer is not None:
            everyone = self._check_multicast(call, ctx, load, what)
        if call.transposed and not load:
            raise ValueError(
                f"{what}: transposed=True is for loads (a global (K, rows) box into an MN-major shared tile); "
                f"store {shared_buffer.name} without it"
            )
        inside = ctx.cached("allocated buffers", lambda: _allocated(ctx.func))
        if (glob_buffer.name, glob_buffer.scope()) in inside:
            raise ValueError(
                f"T.tile_copy_async: the global buffer {glob_buffer.name} is allocated inside the kernel, but its "
                "tensor map is encoded by the host before the launch; copy from a buffer the kernel receives as a "
                "parameter"
            )
        glob = operand(call.src if load else call.dst, ctx.layouts, "source" if load else "destination")
        if glob.layout is not None:
            raise ValueError(f"{what}: the global buffer {glob.buffer.name} must be row-major (it has {glob.layout})")
        box = list(glob.extents)
        if not load and any(isinstance(b, int) and b < 0 for b in glob.begins):
            raise ValueError(f"{what}: a store's coordinates must be non-negative, {glob.region} starts below 0")
        if not ctx.decided(shared_buffer):
            return TmaCopy(call, family, load=load, glob=glob, everyone=everyone)
        shared = operand(call.dst if load else call.src, ctx.layouts, "destination" if load else "source")
        self._check_shapes(call, glob, shared, box, what)
        boxes = []
        for glob_piece, shared_piece in self._atom_boxes(call, glob, shared, box, ctx.layouts):
            tmap = self._tensor_map(glob_piece, shared_piece, what, call.transposed)
            offset, terms = self._shared_start(shared_piece, tmap, what)
            boxes.append(TmaBox(glob_piece, shared_piece, tmap, offset, terms))
        return TmaCopy(call, family, load=load, glob=glob, shared=shared, boxes=tuple(boxes), everyone=everyone)

    @staticmethod
    def _check_multicast(call: OpCall, ctx, load: bool, what: str) -> bool:
        """A multicast load: into a cluster's CTAs (the mask's bits within it), issued by one of them; whether its
        constant mask names every CTA of the cluster."""
        if not load or call.multicast is None:
            raise ValueError(
                f"{what}: issuer= goes with multicast= (a load to the CTAs of a cluster), and multicast= with a load"
            )
        _, cluster = cluster_launch(ctx.func)
        if cluster is None:
            raise ValueError(
                f"{what}: multicast={call.multicast} needs a cluster: declare it with T.cta_id_in_cluster([...])"
            )
        size = math.prod(c if isinstance(c, int) else 1 for c in cluster)
        mask = _constant(call.multicast)
        if mask is not None and mask >> size:
            raise ValueError(
                f"{what}: multicast mask {mask:#x} names CTA ranks beyond the cluster's {size} (ranks 0..{size - 1})"
            )
        issuer = _constant(call.issuer)
        if issuer is None and call.issuer is None:
            if mask is None:
                raise ValueError(f"{what}: with a mask computed at run time, say which CTA issues the copy (issuer=)")
            issuer = (mask & -mask).bit_length() - 1
        if issuer is not None and (issuer >= size or (mask is not None and not mask >> issuer & 1)):
            raise ValueError(
                f"{what}: the issuing CTA (rank {issuer}) must be one of the CTAs the mask {call.multicast} names, in "
                f"a cluster of {size}"
            )
        return mask == (1 << size) - 1

    @staticmethod
    def _check_shapes(call: OpCall, glob: MemoryOperand, shared: MemoryOperand, box: list, what: str) -> None:
        """The shared region must have the global region's shape (its last two dimensions swapped when
        ``transposed``), dimensions of one index aside."""
        if not call.transposed:
            if tuple(e for e in box if e != 1) != shared.tile_shape:
                raise ValueError(
                    f"{what}: the global region {glob.region} ({tuple(box)}) and the shared region {shared.region} "
                    f"({tuple(shared.extents)}) differ in shape"
                )
            return
        swapped = (*box[:-2], box[-1], box[-2]) if len(box) >= 2 else tuple(box)
        extents = tuple(shared.extents)
        if (
            len(box) < 2
            or len(extents) < 2
            or extents[-2:] != swapped[-2:]
            or tuple(e for e in swapped if e != 1) != shared.tile_shape
        ):
            raise ValueError(
                f"{what}: with transposed=True the shared region {shared.region} ({extents}) must be the global "
                f"region {glob.region} ({tuple(box)}) with its last two dimensions swapped: {tuple(swapped)}"
            )

    @staticmethod
    def _atom_boxes(call: OpCall, glob: MemoryOperand, shared: MemoryOperand, box: list, layouts: dict) -> list:
        """The (global, shared) operand pairs the copy moves, one TMA box each: the copy itself, or for a transposed
        copy wider than its swizzle atom (an MN-major tile of several atom columns) one box per atom column -- the
        global region's innermost dimension and the shared region's next-to-last cut into atom-wide pieces."""
        if not call.transposed:
            return [(glob, shared)]
        try:
            width = box_row_elements(shared.laid_out, shared.dtype)
        except (TypeError, ValueError):
            width = None  # a layout no TMA mode takes: tensor_map_for refuses it, naming the copy
        if width is None or box[-1] <= width or box[-1] % width:
            return [(glob, shared)]  # (a row the swizzle cannot take is refused by tensor_map_for, naming why)
        return [
            (
                operand(_region_moved(glob, -1, j * width, width), layouts, "source"),
                operand(_region_moved(shared, -2, j * width, width), layouts, "destination"),
            )
            for j in range(box[-1] // width)
        ]

    @staticmethod
    def _tensor_map(glob: MemoryOperand, shared: MemoryOperand, what: str, transposed: bool) -> TensorMap:
        """The tensor map of a box between ``glob`` and ``shared`` (held with its last two dimensions swapped in
        shared memory when ``transposed``)."""
        _, sliced = shared.stage_slice(what)
        try:
            return tensor_map_for(
                list(glob.buffer.shape), glob.dtype, list(glob.extents), _from_its_start(sliced), transposed=transposed
            )
        except ValueError as err:
            raise ValueError(f"{what} ({glob.buffer.name} <-> {shared.buffer.name}): {err}") from None

    @staticmethod
    def _shared_start(shared: MemoryOperand, tmap: TensorMap, what: str) -> tuple[int, tuple]:
        """Where a box's shared piece starts, checked to keep the box on its swizzle repeat for every stage."""
        offset, terms = stage_offset(shared, what)
        size = dtype_bytes(shared.dtype)
        alignment = tmap.shared_alignment
        if int(shared.buffer.data_alignment) < alignment:
            raise ValueError(
                f"{what}: {shared.buffer.name} must start at a multiple of {alignment} bytes for a {tmap.swizzle} "
                f"TMA box (the hardware swizzles absolute shared addresses); declare it with align={alignment} "
                f"(it has {int(shared.buffer.data_alignment)})"
            )
        for moved, elements in (("starts at", offset), *((f"moves by ({begin})", step) for begin, step in terms)):
            try:
                tmap.check_shared_address(elements * size)
            except ValueError as err:
                raise ValueError(f"{what}: the region {shared.region} {moved} {elements * size} bytes: {err}") from None
        return offset, terms


def _constant(value) -> int | None:
    """An op field's value as an int when it is a constant (``T.uint32(3)``, a cast of one), else ``None``."""
    while isinstance(value, tvm.tirx.Cast):
        value = value.value
    return int(value.value) if isinstance(value, tvm.tirx.IntImm) else None


def _allocated(func) -> set:
    """``(name, scope)`` of every buffer the function allocates (the copy's region and the allocation are
    different buffer objects of one buffer: compare as the printer names them)."""
    inside = set()
    walk(func.body, [(AllocBuffer, lambda stmt: inside.add((stmt.buffer.name, stmt.buffer.scope())))])
    return inside


class TmaStoreWait(OpSpec):
    """``T.tma_store_wait(scope="cta")``: the thread that issued the scope's TMA stores waits until they have read
    shared memory and written global memory, then the scope synchronises.

    Example:
        >>> TMA_STORE_WAIT(), TMA_STORE_WAIT("warp")
        (T.tma_store_wait(), T.tma_store_wait("scope", "warp"))
    """

    name = "tma_store_wait"
    description = "wait for this thread's TMA stores"
    fields = (ScopeField(TMA_SCOPES),)
    families = ("tma",)


TILE_COPY_ASYNC = TileCopyAsync()
TMA_STORE_WAIT = TmaStoreWait()
