"""The simulator's execution of the TMA helpers ``ops/tma`` emits, on the copy model of ``sim/tma.py``.

* The map: a kernel parameter of type tensormap carries the fields the host function encodes into it (``sim.run``
  reads its ``tensormap_encode_tiled`` call: :func:`host_tensor_map_fields`); the helper's last argument is the
  global tensor's address.
* ``load_<r>d(&map, &dst, &bar, c0.., global)``: the issuing thread writes the box into shared memory (as a
  store of that thread, so earlier unordered accesses of the destination race with it), the write is an
  asynchronous-proxy write (readable by the MMA without a proxy fence), recorded as an :class:`AsyncWrite` of the
  mbarrier's current phase, and complete-tx of the box's bytes is performed on the mbarrier. Any thread that reads
  or overwrites the elements before it has seen that phase complete is a :class:`DataRace`. Seeing it is the
  mbarrier's clock (``memory.SyncClocks``): the thread's own ``mbarrier_wait``, or a wait on a phase that a thread
  which had seen it arrived at (an arrive, or the ``tcgen05.commit`` of MMAs it issued after its wait: how a
  producer refilling a ring stage is ordered after the stage's previous load), or a CTA barrier after one.
* ``load_<r>d_multicast(&map, &dst, &bar, c0.., mask, global)``: the same load landing in every CTA of the
  cluster whose rank is a bit of ``mask``, at ``dst``'s offset in its shared memory, with complete-tx on the
  mbarrier at ``bar``'s offset there (``sim/cluster.py`` maps the offsets as ``mapa`` does); the peer's barrier
  must have been initialised (and the peer have started: a cluster barrier after the inits) before the issue.
* ``store_<r>d(&map, &src, c0.., global)``: an asynchronous-proxy read of the shared box by the issuing thread
  (its writers must have fenced the proxy and be ordered before it), then the clipped write of global memory.
  The global write happens at issue; the read of the tile stays in flight (an ``AsyncRead``) until the issuing
  thread's ``store_wait``: overwriting the tile before it (or before a barrier after it) is a DataRace, and so
  is a kernel that ends with a store not waited for (:func:`finish`).
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm.ir import Call

from ..ir.rewrite import walk
from . import cluster, mbarrier
from .addresses import shared_address
from .dispatch import HelperTable
from .memory import AsyncRead, AsyncWrite, SimulationError
from .tma import load_box, store_box

_ENCODE = "tirx.tensormap_encode_tiled"
#: A TMA store's read of shared memory is ordered by the issuing thread's wait_group, never by a tcgen05.commit.
_NEVER_COMMITTED = np.iinfo(np.int64).max
_STORE_HINT = "T.tma_store_wait() (cp.async.bulk.wait_group) before overwriting the tile a TMA store reads"
#: ``CUtensorMapDataType`` codes of the element types the encoder names (cuda.h; docs/notes/tma-facts.md §1).
_DRIVER_DATA_TYPES = {
    "uint8": 0,
    "uint16": 1,
    "uint32": 2,
    "int32": 3,
    "uint64": 4,
    "int64": 5,
    "float16": 6,
    "float32": 7,
    "float64": 8,
    "bfloat16": 9,
}

__all__ = ["HELPERS", "finish", "host_tensor_map_fields", "is_tensor_map_param"]


def is_tensor_map_param(param) -> bool:
    """Whether device parameter ``param`` is a tensor map (``const __grid_constant__ CUtensorMap``).

    Example:
        >>> from tvm.script import tirx as T
        >>> is_tensor_map_param(tvm.tirx.Var("m", T.handle("tensormap").ty)), is_tensor_map_param(tvm.tirx.Var("n"))
        (True, False)
    """
    element = getattr(getattr(param, "ty", None), "element_type", None)
    return isinstance(element, tvm.tirx.TensorMapType)


def host_tensor_map_fields(host, var, number) -> dict:
    """The driver fields (``hw.tma.TensorMap.driver_fields()`` keys) the host function ``host`` (a module or a
    ``PrimFunc``) encodes into tensor map ``var`` with ``tensormap_encode_tiled``; ``number(expr)`` evaluates a
    host expression (a symbolic extent) to an int.

    Example: for ``T.tensormap_encode_tiled(m, A.data, 64, M, 128, 64, 128, 1, 1, rank=2, swizzle=3, ...)`` with
    ``M = 200`` the fields are ``global_dim (64, 200)``, ``global_strides (128,)``, ``box_dim (64, 128)``,
    ``element_strides (1, 1)``, ``swizzle 3``.
    """
    found = []

    def visit(call):
        if getattr(call.op, "name", "") == _ENCODE and call.args[0].same_as(var):
            found.append(call)

    functions = list(host.functions.values()) if isinstance(host, tvm.IRModule) else [host]
    for func in functions:
        if isinstance(func, tvm.tirx.PrimFunc):
            walk(func.body, [(Call, visit)])
    if len(found) != 1:
        raise SimulationError(f"the host encodes tensor map {var} {len(found)} times; expected once")
    call = found[0]
    attrs = call.attrs
    rank = int(attrs.rank)
    values = [number(a) for a in call.args[2:]]
    force = int(attrs.force_cu_dtype)
    dtype = str(attrs.descriptor_dtype)
    if force < 0 and dtype not in _DRIVER_DATA_TYPES:
        raise SimulationError(f"tensor map {var} is encoded for {dtype}, which names no CUtensorMapDataType")
    return {
        "data_type": force if force >= 0 else _DRIVER_DATA_TYPES[dtype],
        "rank": rank,
        "global_dim": tuple(values[:rank]),
        "global_strides": tuple(values[rank : 2 * rank - 1]),
        "box_dim": tuple(values[2 * rank - 1 : 3 * rank - 1]),
        "element_strides": tuple(values[3 * rank - 1 :]),
        "interleave": int(attrs.interleave),
        "swizzle": int(attrs.swizzle),
        "l2_promotion": int(attrs.l2_promotion),
        "oob_fill": int(attrs.oob_fill),
    }


def _fields(interp, arg, what: str) -> dict:
    if not (isinstance(arg, Call) and arg.op.name.endswith("address_of")):
        raise SimulationError(f"{what} needs the address of a tensor map parameter, got {arg}")
    fields = interp.env.get(arg.args[0])
    if not isinstance(fields, dict):
        raise SimulationError(f"{what}: {arg.args[0]} is not a tensor map the host encoded")
    return fields


def _global(interp, arg, what: str):
    if isinstance(arg, Call) and arg.op.name.endswith("buffer_data"):  # A.data: the buffer's storage
        arg = arg.args[0]
    memory = interp.memories.get(arg)
    if memory is None or memory.scope != "global":
        raise SimulationError(f"{what} needs a global tensor's address as its last argument, got {arg}")
    return memory


def _bytes(memory) -> np.ndarray:
    return memory.data.view(np.uint8)


def _shared_box(fields, coords, shared_size: int, place: int, element: int, global_size: int) -> np.ndarray:
    """The shared element indices a box at shared byte ``place`` covers (what a load writes, fill included)."""
    marker = np.ones(shared_size, np.uint8)
    load_box(fields, np.full(global_size, 0xFF, np.uint8), coords, marker, place)
    return np.unique(np.nonzero(marker != 1)[0] // element)


def _global_box(fields, coords, global_size: int, place: int, element: int, shared_size: int) -> np.ndarray:
    """The global element indices a store of the box at ``coords`` writes (inside the tensor only)."""
    marker = np.ones(global_size, np.uint8)
    store_box(fields, marker, coords, np.full(shared_size, 0xFF, np.uint8), place)
    return np.unique(np.nonzero(marker != 1)[0] // element)


def _store_wait(interp, args) -> None:
    """``cp.async.bulk.wait_group.read 0``: the issuing threads' committed stores have read their tiles."""
    for read in interp.async_reads:
        if read.issuer is not None and interp.mask[read.issuer]:
            read.observed[read.issuer] = True
    mbarrier.drop_async_reads(interp, lambda read: read.observed.all())


def _copy(interp, args, direction: str, rank: str) -> None:
    """A rank-``rank`` TMA load (``direction`` ``"load"``) or store by every active thread of ``interp``."""
    what = f"tma_{direction}_{rank}d"
    load = direction == "load"
    fields = _fields(interp, args[0], what)
    first = 3 if load else 2  # the map, the shared address (and the load's mbarrier), then the coordinates
    if len(args) != first + int(rank) + 1:
        raise SimulationError(f"{what} takes {first + int(rank) + 1} arguments, got {len(args)}")
    memory, index = shared_address(interp, args[1], what)
    coord_values = [np.broadcast_to(np.asarray(interp.eval(c), np.int64), (interp.count,)) for c in args[first:-1]]
    glob = _global(interp, args[-1], what)
    block, interval = interp.launch.block, interp.launch.interval
    element = memory.data.dtype.itemsize
    for t in np.nonzero(interp.mask)[0].tolist():
        thread = block * interp.count + t
        coords = [int(c[t]) for c in coord_values]
        place = int(index[t]) * element
        if load:
            bar_memory, bar_index = shared_address(interp, args[2], what)
            bar = mbarrier.find(interp, bar_memory, int(bar_index[t]), what)
            issued = f"TMA load into {memory.name} issued by thread {t}"
            _land(interp, fields, coords, glob, memory, place, thread, bar, issued)
        else:
            gbytes = _bytes(glob)
            shared_size = _bytes(memory).size
            elements = _global_box(fields, coords, gbytes.size, place, glob.data.dtype.itemsize, shared_size)
            box = _shared_box(fields, coords, shared_size, place, element, gbytes.size)
            issued = f"TMA store issued by thread {t}"
            memory.check_async_read(box, thread, block, interval, issued, interp.sync)
            image = gbytes.copy()
            store_box(fields, image, coords, _bytes(memory), place)
            values = image.view(glob.data.dtype)[elements]
            glob.store(elements, values, np.array([thread]), block, interval, interp.sync)
            # the bulk async-group reads the tile until the issuing thread's wait_group; no commit ever covers it
            pending = AsyncRead(box, issued, t // 32, _NEVER_COMMITTED, interp.count, _STORE_HINT, issuer=t)
            memory.async_reads.append(pending)
            interp.async_reads.append(pending)


def _land(interp, fields, coords, glob, memory, place: int, thread: int, bar, issued: str) -> None:
    """A load's box lands in shared ``memory`` at byte ``place`` (a store of the issuing ``thread``, through the async
    proxy, ordered for readers by ``bar``'s current phase), then complete-tx of its bytes on ``bar``."""
    image = _bytes(memory).copy()
    tx = load_box(fields, _bytes(glob), coords, image, place)
    element = memory.data.dtype.itemsize
    elements = _shared_box(fields, coords, image.size, place, element, _bytes(glob).size)
    values = image.view(memory.data.dtype)[elements]
    launch = interp.launch
    memory.store(elements, values, np.array([thread]), launch.block, launch.interval, mbarrier.clocks(interp))
    memory.mark_async_proxy_write(elements)
    memory.async_writes.append(AsyncWrite(elements, issued, bar, bar.completed))
    bar.complete_tx(tx)


def _multicast(interp, args, rank: str) -> None:
    """``cp.async.bulk.tensor...multicast::cluster``: one box per issuing thread into every CTA of the cluster whose
    rank is a set bit of the mask (``args[-2]``), at the destination's offset in each one's shared memory, with
    complete-tx on the mbarrier at the barrier's offset in each one (PTX ISA, cp.async.bulk.tensor: "the mbarrier
    signal is also multicast to the same CTA-relative offset as dstMem")."""
    what = f"tma_load_{rank}d_multicast"
    fields = _fields(interp, args[0], what)
    if len(args) != 3 + int(rank) + 2:
        raise SimulationError(f"{what} takes {3 + int(rank) + 2} arguments, got {len(args)}")
    memory, index = shared_address(interp, args[1], what)
    bar_memory, bar_index = shared_address(interp, args[2], what)
    coord_values = [np.broadcast_to(np.asarray(interp.eval(c), np.int64), (interp.count,)) for c in args[3:-2]]
    masks = np.broadcast_to(np.asarray(interp.eval(args[-2]), np.int64), (interp.count,))
    glob = _global(interp, args[-1], what)
    for t in np.nonzero(interp.mask)[0].tolist():
        thread = interp.launch.block * interp.count + t
        coords = [int(c[t]) for c in coord_values]
        mask = int(masks[t]) & 0xFFFF
        if mask == 0:
            raise SimulationError(f"{what} by thread {t} with an empty CTA mask")
        for peer in [r for r in range(16) if mask >> r & 1]:
            where = f"{what} by thread {t} of CTA {interp.launch.rank} into CTA {peer}"
            target, element = cluster.peer_element(interp, memory, index[t : t + 1], peer, where)
            bar_target, bar_element = cluster.peer_element(interp, bar_memory, bar_index[t : t + 1], peer, where)
            bar = cluster.peer_mbarrier(interp, t, bar_target, int(bar_element[0]), peer, where)
            place = int(element[0]) * target.data.dtype.itemsize
            issued = (
                f"TMA multicast load into {target.name} of CTA {peer} issued by thread {t} of CTA {interp.launch.rank}"
            )
            _land(interp, fields, coords, glob, target, place, thread, bar, issued)


def finish(interp) -> None:
    """At the end of a CTA: every TMA store must have been waited for (the CTA's shared memory is released when it
    exits, while the bulk copy may still read it).

    Example: ``finish(interp)`` after ``interp.run(device.body)`` raises ``SimulationError`` if a store is pending.
    """
    for read in interp.async_reads:
        if read.issuer is not None and not read.observed[read.issuer]:
            raise SimulationError(f"the kernel ends while the {read.what} still reads shared memory; {_STORE_HINT}")


#: The TMA executor: ``store_wait`` by name, the loads and stores of rank 1 to 5 by pattern. E.g.
#: ``HELPERS(interp, "load_2d", [address_of(map), address_of(As[0]), address_of(bars[0]), 0, 128, A])`` copies the
#: box at (0, 128) into ``As`` and performs complete-tx on ``bars[0]``.
HELPERS = HelperTable(
    "tma",
    {"store_wait": _store_wait},
    [(r"load_(?P<rank>[1-5])d_multicast", _multicast), (r"(?P<direction>load|store)_(?P<rank>[1-5])d", _copy)],
)
