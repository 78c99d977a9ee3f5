"""LowerTma: ``T.tile_copy_async`` becomes one ``cp.async.bulk.tensor`` issued by one thread, with its tensor map
encoded on the host; ``T.tma_store_wait`` becomes ``cp.async.bulk.wait_group``.

Every number comes from the operands (facts: ``docs/notes/tma-facts.md``):

* the tensor map from ``hw.tma.tensor_map_for(global shape, dtype, box, shared layout)``: the box is the global
  region's shape, the swizzle the shared buffer's layout (sliced to the region), the global extents the buffer's
  shape (symbolic ones stay host expressions);
* the coordinates from the global region's start, innermost first (``int32``); the shared address from the shared
  region's first element (a symbolic stage index must move the region by whole swizzle repeats);
* the mbarrier's transaction bytes from the box (``TensorMap.transaction_bytes``).

A ``transposed=True`` load fills an MN-major operand ``(rows, K)`` from a global tensor stored ``(K, rows)``: the
shared region is the global one with its last two dimensions swapped, the map is ``tensor_map_for(...,
transposed=True)`` of a ``(K, atom)`` box (``atom`` = the swizzle span in elements, ``hw.tma.box_row_elements``),
and a tile of several atom columns is one such box per column, every box from the one map and the one
``expect_tx`` counting all their bytes.

The host side: each distinct map gets a 128-byte slot on the host function's stack (``tvm_stack_alloca
("tensormap", 1)``) filled by ``tensormap_encode_tiled`` before the kernel's ``T.device_entry`` region; the kernel
uses ``&map``, which TVM's host/device split turns into a ``const __grid_constant__ CUtensorMap`` kernel parameter.
The user writes no descriptor.

The device side, by ``scope`` (who reaches the op: ``"cta"`` -- the lane ``elect.sync`` elects in warp 0 issues;
``"warp"`` -- the lane it elects in that warp; ``"thread"`` -- the thread, as for ``T.tile_mma``):

* load: the issuing thread does ``mbarrier.arrive.expect_tx`` of the box's bytes (``expect_tx=True``), then the
  copy, which performs complete-tx on the mbarrier when the box has landed;
* store: every thread of the scope ``fence.proxy.async.shared::cta`` (its generic shared writes become visible to
  the TMA), a barrier of the scope, then the issuing thread issues the store and ``cp.async.bulk.commit_group``;
  ``T.tma_store_wait`` makes the issuing thread ``cp.async.bulk.wait_group 0``, then the scope synchronises.

The helpers carry, after the PTX operands, the global tensor's address: the compiled helper ignores it (the
hardware reads it from the map); the simulator copies from that buffer, with the map's fields as the host encodes
them (``sim.run`` reads the ``tensormap_encode_tiled`` call the host passes the kernel).
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import tirx

from ..hw.memory import dtype_bytes
from ..hw.threads import WARP_THREADS
from ..hw.tma import TensorMap, box_row_elements, driver_data_type, tensor_map_for
from ..ir.annotations import buffer_layouts
from ..ir.device_calls import cta_barrier, warp_barrier
from ..ir.rewrite import map_function, sequence, walk
from ..ir.spans import located_errors
from ..ir.threads import cta_threads
from ..ir.tma_ops import TmaCopy, as_tma_copy, as_tma_store_wait
from ..layout import ComposeLayout, S, TileLayout
from ..ops.helpers import mbarrier, sync, tma
from .copy_plan import MemoryOperand, operand

DEVICE_ENTRY = "tirx.device_entry"


def _stage_offset(tile: TileLayout, shape: list[int], begins: list, extents: list[int], name: str):
    """The element offset (before the swizzle) of the region's first element: static begins through the layout,
    each symbolic begin (a dimension the region takes one index of) times that dimension's fixed step."""
    static = [b if isinstance(b, int) else 0 for b in begins]

    def at(coords):
        return int(np.asarray(tile.apply(*coords, shape=shape)["m"]))

    offset, terms = at(static), []
    for d, begin in enumerate(begins):
        if isinstance(begin, int):
            continue
        if extents[d] != 1:
            raise ValueError(
                f"{name}: the region starts at {begin} on dimension {d}, which it takes {extents[d]} indices of; "
                "only a dimension the region takes one index of (a stage) may start at a symbolic index"
            )
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
    return offset, terms, static


class _TmaLowering:
    def __init__(self, func):
        self.layouts = buffer_layouts(func)
        self.func = func
        self._threads = None
        self.maps: dict = {}  # (global buffer, map text) -> (map variable, TensorMap)
        self.host: list = []  # the host statements encoding the maps

    @property
    def threads(self):
        if self._threads is None:
            self._threads = cta_threads(self.func)
        return self._threads

    def guard_issue(self, scope: str, issue):
        """``issue`` run by the one issuing thread, chosen as ``T.tile_mma`` chooses it: for "cta" the lane
        ``elect.sync`` elects in warp 0, for "warp" the lane it elects in the warp reaching the op, for "thread" the
        thread itself. (``elect.sync`` elects the lowest active lane, so a store and its wait are issued by the same
        thread.)"""
        if scope == "thread":
            return issue
        elected = tirx.IfThenElse(sync.elect() != tirx.const(0, "uint32"), issue, None)
        if scope == "warp":
            return elected
        return tirx.IfThenElse(self.threads.index < WARP_THREADS, elected, None)

    def tensor_map(self, glob: MemoryOperand, box: list[int], shared: MemoryOperand, name: str, transposed: bool):
        """The map variable and :class:`TensorMap` of a copy between ``glob`` and ``shared`` with ``box`` (held
        with its last two dimensions swapped in shared memory when ``transposed``)."""
        layout = shared.layout if shared.layout is not None else TileLayout(S[tuple(shared.shape)])
        _, _, static = _stage_offset(_tile(layout), list(shared.shape), shared.begins, shared.extents, name)
        sliced = layout.slice(list(shared.shape), [(b, b + e) for b, e in zip(static, shared.extents, strict=True)])
        if sliced is None:
            raise ValueError(f"{name}: the region {shared.region} is not an affine sub-box of its layout {layout}")
        try:
            tmap = tensor_map_for(
                list(glob.buffer.shape), glob.dtype, box, _from_its_start(sliced), transposed=transposed
            )
        except ValueError as err:
            raise ValueError(f"{name} ({glob.buffer.name} <-> {shared.buffer.name}): {err}") from None
        key = (glob.buffer, str(tmap))
        if key not in self.maps:
            var = tirx.Var(f"{glob.buffer.name}_tensormap_{len(self.maps)}", ty=_tensormap_type())
            fields = tmap.driver_fields()
            encode = tvm.tirx.tensormap_encode_tiled(
                var,
                glob.buffer.data,
                *fields["global_dim"],
                *fields["global_strides"],
                *fields["box_dim"],
                *fields["element_strides"],
                descriptor_dtype=driver_data_type(glob.dtype),
                rank=fields["rank"],
                interleave=fields["interleave"],
                swizzle=fields["swizzle"],
                l2_promotion=fields["l2_promotion"],
                oob_fill=fields["oob_fill"],
            )
            self.host += [tirx.Bind(var, tvm.tirx.tvm_stack_alloca("tensormap", 1)), tirx.Evaluate(encode)]
            self.maps[key] = (var, tmap)
        return self.maps[key]

    def shared_address(self, shared: MemoryOperand, tmap: TensorMap, name: str, view):
        """``&view[first element of the region]``: ``view`` is the flat view the copy declares (one for every box
        of a copy cut into atom-wide boxes)."""
        layout = shared.layout if shared.layout is not None else TileLayout(S[tuple(shared.shape)])
        offset, terms, _ = _stage_offset(_tile(layout), list(shared.shape), shared.begins, shared.extents, name)
        size = dtype_bytes(shared.dtype)
        alignment = tmap.shared_alignment
        if int(shared.buffer.data_alignment) < alignment:
            raise ValueError(
                f"{name}: {shared.buffer.name} must start at a multiple of {alignment} bytes for a {tmap.swizzle} "
                f"TMA box (the hardware swizzles absolute shared addresses); declare it with align={alignment} "
                f"(it has {int(shared.buffer.data_alignment)})"
            )
        # the first stage's start and every stage step keep the box on the swizzle repeat
        for what, elements in (("starts at", offset), *((f"moves by ({begin})", step) for begin, step in terms)):
            try:
                tmap.check_shared_address(elements * size)
            except ValueError as err:
                raise ValueError(f"{name}: the region {shared.region} {what} {elements * size} bytes: {err}") from None
        for begin, step in terms:
            offset = offset + begin * step
        index = tirx.IntImm("int32", offset) if isinstance(offset, int) else offset
        return tvm.tirx.address_of(tvm.tirx.BufferLoad(view, [index]))

    def lower(self, copy: TmaCopy):
        dst = operand(copy.dst, self.layouts, "destination")
        src = operand(copy.src, self.layouts, "source")
        for side in (dst, src):
            if not isinstance(side, MemoryOperand) or side.buffer.scope() not in ("global", "shared", "shared.dyn"):
                raise ValueError(
                    f"tile_copy_async copies between global and shared memory; {side.buffer.name} is "
                    f"{side.buffer.scope()}"
                )
        load = dst.buffer.scope() != "global"
        glob, shared = (src, dst) if load else (dst, src)
        what = "tile_copy_async load" if load else "tile_copy_async store"
        if glob.buffer.scope() != "global" or shared.buffer.scope() == "global":
            raise ValueError(
                f"tile_copy_async copies global -> shared (a load) or shared -> global (a store), not "
                f"{src.buffer.name} ({src.buffer.scope()}) -> {dst.buffer.name} ({dst.buffer.scope()})"
            )
        if glob.layout is not None:
            raise ValueError(f"{what}: the global buffer {glob.buffer.name} must be row-major (it has {glob.layout})")
        if glob.dtype != shared.dtype:
            raise ValueError(
                f"{what}: {glob.buffer.name} is {glob.dtype} but {shared.buffer.name} is {shared.dtype}; TMA "
                "copies bytes without converting"
            )
        if load and copy.barrier is None:
            raise ValueError(f"{what} into {shared.buffer.name} needs barrier=bars[i], the mbarrier it completes on")
        if not load and copy.barrier is not None:
            raise ValueError(
                f"{what} from {shared.buffer.name} takes no barrier: it completes through the bulk async-group "
                "(T.tma_store_wait())"
            )
        box = list(glob.extents)
        self.check_shapes(copy, glob, shared, box, what)
        if not load and any(isinstance(b, int) and b < 0 for b in glob.begins):
            raise ValueError(f"{what}: a store's coordinates must be non-negative, {glob.region} starts below 0")
        copies = []  # (map variable, TensorMap, shared address, coordinates innermost first, global operand)
        for glob_piece, shared_piece in self.atom_boxes(copy, glob, shared, box):
            var, tmap = self.tensor_map(glob_piece, list(glob_piece.extents), shared_piece, what, copy.transposed)
            address = self.shared_address(shared_piece, tmap, what, shared.view)
            copies.append((var, tmap, address, [_int32(b) for b in glob_piece.begins][::-1], glob_piece))
        if load:
            issue = []
            if copy.expect_tx:  # one arrival for the whole copy: the bytes of all its boxes
                bar = tvm.tirx.address_of(copy.barrier)
                issue.append(mbarrier.arrive_expect_tx(bar, sum(c[1].transaction_bytes for c in copies)))
            for var, tmap, address, coords, piece in copies:
                issue.append(
                    tma.load(
                        tmap.rank,
                        tvm.tirx.address_of(var),
                        address,
                        tvm.tirx.address_of(copy.barrier),
                        coords,
                        piece.buffer.data,
                    )
                )
            before = []
        else:
            ((var, tmap, address, coords, piece),) = copies
            map_address, rank, data = tvm.tirx.address_of(var), tmap.rank, piece.buffer.data
            issue = [tma.store(rank, map_address, address, coords, data)]
            before = [sync.fence_proxy_async(), *self.scope_barrier(copy.scope)]
        return sequence([*before, self.guard_issue(copy.scope, sequence([shared.declaration(), *issue]))])

    def check_shapes(self, copy: TmaCopy, glob: MemoryOperand, shared: MemoryOperand, box: list, what: str):
        """The shared region must have the global region's shape (its last two dimensions swapped when
        ``transposed``), dimensions of one index aside."""
        if not copy.transposed:
            if tuple(e for e in box if e != 1) != shared.tile_shape:
                raise ValueError(
                    f"{what}: the global region {glob.region} ({tuple(box)}) and the shared region {shared.region} "
                    f"({tuple(shared.extents)}) differ in shape"
                )
            return
        if copy.barrier is None:
            raise ValueError(
                f"{what}: transposed=True is for loads (a global (K, rows) box into an MN-major shared tile); "
                f"store {shared.buffer.name} without it"
            )
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

    def atom_boxes(self, copy: TmaCopy, glob: MemoryOperand, shared: MemoryOperand, box: list):
        """The (global, shared) operand pairs the copy moves, one TMA box each: the copy itself, or for a transposed
        copy wider than its swizzle atom (an MN-major tile of several atom columns) one box per atom column -- the
        global region's innermost dimension and the shared region's next-to-last cut into atom-wide pieces."""
        if not copy.transposed:
            return [(glob, shared)]
        layout = shared.layout if shared.layout is not None else TileLayout(S[tuple(shared.shape)])
        try:
            width = box_row_elements(layout, shared.dtype)
        except (TypeError, ValueError):
            width = None  # a layout no TMA mode takes: tensor_map_for refuses it below, naming the copy
        if width is None or box[-1] <= width or box[-1] % width:
            return [(glob, shared)]  # (a row the swizzle cannot take is refused by tensor_map_for, naming why)
        pieces = []
        for j in range(box[-1] // width):
            glob_region = _region_moved(glob, -1, j * width, width)
            shared_region = _region_moved(shared, -2, j * width, width)
            pieces.append(
                (operand(glob_region, self.layouts, "source"), operand(shared_region, self.layouts, "destination"))
            )
        return pieces

    def scope_barrier(self, scope: str) -> list:
        if scope == "cta":
            return [cta_barrier()]
        if scope == "warp":
            return [warp_barrier()]
        return []

    def lower_store_wait(self, scope: str):
        wait = tma.store_wait()
        return sequence([self.guard_issue(scope, wait), *self.scope_barrier(scope)])


def _check_visible_to_host(body, maps: dict) -> None:
    """Refuse a map of a global buffer allocated in the function (inside the kernel): the host, which encodes the
    map before the launch, has no address for it."""
    inside = []  # (the region's buffer object differs from the allocation's: compare as the printer names them)
    walk(body, [(tirx.AllocBuffer, lambda stmt: inside.append((stmt.buffer.name, stmt.buffer.scope())))])
    for glob, _ in maps:
        if (glob.name, glob.scope()) in inside:
            raise ValueError(
                f"tile_copy_async: the global buffer {glob.name} is allocated inside the kernel, but its tensor map "
                "is encoded by the host before the launch; copy from a buffer the kernel receives as a parameter"
            )


def _region_moved(side: MemoryOperand, dim: int, shift: int, extent: int):
    """``side``'s region with dimension ``dim`` starting ``shift`` further and ``extent`` long."""
    begins = list(side.begins)
    extents = list(side.extents)
    begins[dim] = begins[dim] + shift
    extents[dim] = extent
    return side.buffer[tuple(slice(b, b + e) for b, e in zip(begins, extents, strict=True))]


def _int32(value):
    """A coordinate as the ``.s32`` operand: an int as a constant, an expression cast unless it is ``int32``."""
    if isinstance(value, int):
        return tirx.IntImm("int32", value)
    return value if str(value.ty) == "int32" else tirx.Cast("int32", value)


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


def _tile(layout):
    return layout.tile_layout if isinstance(layout, ComposeLayout) else layout


def _tensormap_type():
    from tvm.script import tirx as T

    return T.handle("tensormap").ty


def lower_tma(func):
    """``func`` with every ``T.tile_copy_async`` and ``T.tma_store_wait`` lowered (see the module docstring).

    Example (a 128x64 bf16 box into a 128B-swizzled tile: an elected lane expects 16384 bytes, issues the copy):
        >>> import re, tvm, tirx_layout
        >>> func = tvm.script.from_source('''
        ... @T.prim_func
        ... def k(A: T.Buffer((256, 64), "bfloat16")):
        ...     T.device_entry()
        ...     tx = T.thread_id([128])
        ...     As = T.alloc_shared((128, 64), "bfloat16", layout=mma_shared_layout("bfloat16", "128B", (128, 64)),
        ...                         align=1024)
        ...     bars = T.alloc_shared((1,), "uint64")
        ...     T.tile_copy_async(As, A[128:256, 0:64], bars[0])
        ... ''', extra_vars={"T": tvm.script.tirx, "mma_shared_layout": tirx_layout.mma_shared_layout})
        >>> text = lower_tma(func).script()
        >>> re.findall(r'func_call\\("tirx_layout_(\\w+)"', text)
        ['sync_elect', 'mbarrier_arrive_expect_tx', 'tma_load_2d']
        >>> "T.tensormap_encode_tiled" in text
        True
    """
    lowering = _TmaLowering(func)

    def lower_one(stmt):
        copy = as_tma_copy(stmt)
        if copy is not None:
            return lowering.lower(copy)
        scope = as_tma_store_wait(stmt)
        return stmt if scope is None else lowering.lower_store_wait(scope)

    def on_evaluate(stmt):
        return located_errors(lower_one, stmt)

    lowered = map_function(func, [(tirx.Evaluate, on_evaluate)])
    if not lowering.host:
        return lowered
    _check_visible_to_host(func.body, lowering.maps)
    placed = []

    def before_device_entry(stmt):
        if stmt.attr_key != DEVICE_ENTRY or placed:
            return stmt
        placed.append(True)
        return tirx.SeqStmt([*lowering.host, stmt])

    result = map_function(lowered, [(tirx.AttrStmt, before_device_entry)])
    if not placed:
        raise ValueError("tile_copy_async: the kernel has no T.device_entry() region to encode its tensor maps before")
    return result


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tirx_layout.LowerTma")
class LowerTma:
    """The registered pass: :func:`lower_tma` on every PrimFunc of a module.

    Example: ``LowerTma()(mod)`` is ``mod`` with :func:`lower_tma` applied to each of its functions.
    """

    def transform_function(self, func, mod, ctx):
        return lower_tma(func)


__all__ = ["LowerTma", "lower_tma"]
