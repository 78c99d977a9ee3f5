"""Register fragments seen from the threads that hold them: where a CTA thread sits on each thread axis, how many
threads a fragment needs, which runs of its slots are vectors, and which logical elements a warp touches per slot.
"""

from __future__ import annotations

import numpy as np

from .inverse import PlaceInverse, unflatten

#: thread axis -> (place of CTA thread ``t``, number of places for a CTA of ``n`` threads)
_THREAD_AXES = {
    "laneid": (lambda t: t % 32, lambda n: min(n, 32)),
    "warpid": (lambda t: t // 32, lambda n: max(n // 32, 1)),
    "tx": (lambda t: t, lambda n: n),
    "tid_in_wg": (lambda t: t % 128, lambda n: min(n, 128)),
    "wid_in_wg": (lambda t: t // 32 % 4, lambda n: min(max(n // 32, 1), 4)),
    "wgid": (lambda t: t // 128, lambda n: max(n // 128, 1)),
}


def thread_axis_place(axis: str, tid, count: int):
    """The place on thread axis ``axis`` of CTA thread ``tid`` (an int or a PrimExpr), and how many places the axis
    has in a CTA of ``count`` threads.

    Example:
        >>> thread_axis_place("wid_in_wg", 200, 256)
        (2, 4)
    """
    if axis not in _THREAD_AXES:
        raise ValueError(f"a register fragment cannot be laid out on axis {axis!r} (per-thread axes: "
                         f"{sorted(_THREAD_AXES)})")  # fmt: skip
    place, extent = _THREAD_AXES[axis]
    # The same formulas serve ints and PrimExprs: TVM's % and // on expressions are floormod and floordiv.
    return place(tid), extent(count)


def fragment_threads(layout) -> int:
    """The smallest CTA (a multiple of 32 threads) whose thread axes reach every place the fragment uses.

    Example:
        >>> from tirx_layout import TileLayout, S, laneid, warpid
        >>> fragment_threads(TileLayout(S[(8, 2, 4, 2):(4 @ laneid, 1 @ warpid, 1 @ laneid, 1)]))
        64
    """
    inverse = PlaceInverse(layout)
    count = 32
    while any(axis != "m" and inverse.reach(axis) > thread_axis_place(axis, 0, count)[1] for axis in inverse.axes):
        count *= 2
        if count > 1024:
            raise ValueError(f"fragment {layout} needs more than 1024 threads")
    return count


def fragment_vector_ok(layout, shape, v: int) -> bool:
    """Whether each aligned run of ``v`` logical elements along the last dimension sits in ``v`` consecutive,
    aligned register slots of one thread.

    Example:
        >>> from tirx_layout import TileLayout, S, laneid
        >>> fragment_vector_ok(TileLayout(S[(32, 8):(1 @ laneid, 1)]), (32, 8), 8)
        True
    """
    shape = tuple(int(e) for e in shape)
    if shape[-1] % v:
        return False
    grids = np.meshgrid(*[np.arange(e) for e in shape], indexing="ij")
    places = layout.apply(*grids, shape=shape)
    for axis, table in places.items():
        runs = np.asarray(table).reshape((*shape[:-1], shape[-1] // v, v))
        step = np.arange(v) if axis == "m" else 0
        if (runs - runs[..., :1] != step).any() or (axis == "m" and (runs[..., 0] % v).any()):
            return False
    return True


def fragment_vector_width(layout, shape, element_bytes: int) -> int:
    """Elements per register-slot vector: the widest of 16/8/4 bytes the fragment's slots allow, else 1.

    Example:
        >>> from tirx_layout import wg_local_layout
        >>> fragment_vector_width(wg_local_layout(64), (128, 64), 2)
        8
    """
    for nbytes in (16, 8, 4):
        v = nbytes // element_bytes
        if v > 1 and nbytes % element_bytes == 0 and fragment_vector_ok(layout, shape, v):
            return v
    return 1


def warp_slot_elements(layout, shape, warp: int, first_slot: int, count: int) -> list[list[tuple]]:
    """For each lane of ``warp``, the logical coordinates of its slots ``first_slot .. first_slot + count - 1``
    (empty for a lane that holds nothing there).

    Example:
        >>> from tirx_layout import TileLayout, S, laneid
        >>> warp_slot_elements(TileLayout(S[(32, 8):(1 @ laneid, 1)]), (32, 8), 0, 2, 2)[3]
        [(3, 2), (3, 3)]
    """
    inverse = PlaceInverse(layout)
    threads = fragment_threads(layout)
    lanes = []
    for lane in range(32):
        tid = warp * 32 + lane
        places = {axis: thread_axis_place(axis, tid, threads)[0] for axis in inverse.axes if axis != "m"}
        elements = []
        for slot in range(first_slot, first_slot + count):
            places["m"] = slot
            if inverse.holds(places):
                elements.append(tuple(unflatten(inverse.flat_index(places), shape)))
        lanes.append(elements)
    return lanes
