"""Warp shuffles, from the PTX ISA's ``shfl.sync`` (and the CUDA ``__shfl*_sync`` functions that compile to it).

``shfl.sync.mode.b32 d, a, b, c, membermask``: lane ``i`` reads ``a`` from lane ``j``, where (``c`` packs the clamp
value in bits 0-4 and the segment mask in bits 8-12)::

    maxLane = (lane & segmask) | (clamp & ~segmask);  minLane = lane & segmask
    up:   j = lane - b;  valid = j >= maxLane        down: j = lane + b;  valid = j <= maxLane
    bfly: j = lane ^ b;  valid = j <= maxLane        idx:  j = minLane | (b & ~segmask);  valid = j <= maxLane
    if not valid: j = lane   (the lane keeps its own value)

CUDA's ``__shfl_sync(mask, v, b, width)`` is ``idx`` with ``c = ((32 - width) << 8) | 31``, ``__shfl_down_sync`` and
``__shfl_xor_sync`` are ``down`` / ``bfly`` with the same ``c``, ``__shfl_up_sync`` is ``up`` with
``c = (32 - width) << 8``; ``width`` is a power of two from 1 to 32. TVM prints ``tvm_warp_shuffle[_up|_down|_xor]``
(``mask, value, b, width, warp size``) and ``cuda.__shfl*_sync`` (``mask, value, b, width``) as those functions.

The member mask: every thread that executes the instruction must be in it ("the behavior of shfl.sync is undefined
if the executing thread is not in the membermask"), every lane of it must execute the same instruction with the same
mask (a lane of the mask that does not -- it diverged, a divergent participant -- makes the others wait forever or
read an undefined value), and a lane reading from a lane outside the mask reads an unpredictable value. Each is a
:class:`~tirx_layout.sim.memory.SimulationError` naming the warp, the lane and the mask. Lanes the CTA does not have
(a CTA of 48 threads has 16 in its second warp) count as exited, as the ISA counts them.

Example:
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> warp = SimpleNamespace(count=32, mask=np.ones(32, bool))
    >>> shuffle(warp, "bfly", 0xFFFFFFFF, np.arange(32), 1, 32)[:4].tolist()
    [1, 0, 3, 2]
    >>> shuffle(warp, "up", 0xFFFFFFFF, np.arange(32), 1, 16)[14:18].tolist()  # lane 16 starts a segment
    [13, 14, 16, 16]
"""

from __future__ import annotations

import numpy as np
from tvm.ir import TensorLoad

from .memory import SimulationError

__all__ = ["MODES", "ptx_shuffle", "shuffle", "shuffle_call", "shuffle_sync"]

_WARP = 32
#: The ISA's shuffle modes by the name of the TIR intrinsic (or CUDA function) that issues them.
MODES = {
    "tvm_warp_shuffle": "idx",
    "tvm_warp_shuffle_up": "up",
    "tvm_warp_shuffle_down": "down",
    "tvm_warp_shuffle_xor": "bfly",
    "cuda.__shfl_sync": "idx",
    "cuda.__shfl_up_sync": "up",
    "cuda.__shfl_down_sync": "down",
    "cuda.__shfl_xor_sync": "bfly",
}


def _first_disagreement(values: np.ndarray, executing: np.ndarray, what: str) -> np.ndarray:
    """The value each warp's first executing lane gives (``values`` and ``executing`` are ``(warps, 32)``), checked
    to be every executing lane's."""
    chosen = values[np.arange(values.shape[0]), executing.argmax(axis=1)]
    differ = executing & (values != chosen[:, None])
    if differ.any():
        warp, lane = (int(i) for i in np.argwhere(differ)[0])
        raise SimulationError(
            f"shfl.sync: the lanes of warp {warp} execute it with different {what}s ({int(chosen[warp]):#x} and "
            f"{int(values[warp, lane]):#x} at lane {lane}); all lanes of the member mask must give the same"
        )
    return chosen


def _by_warp(values, count: int, fill) -> np.ndarray:
    """Per-thread ``values`` as a ``(warps, 32)`` array, the lanes the CTA does not have set to ``fill``."""
    values = np.broadcast_to(np.asarray(values), (count,))
    warps = -(-count // _WARP)
    return np.pad(values, (0, warps * _WARP - count), constant_values=fill).reshape(warps, _WARP)


def _raise_at(where: np.ndarray, message) -> None:
    if where.any():
        warp, lane = (int(i) for i in np.argwhere(where)[0])
        raise SimulationError(message(warp, lane))


def shuffle(interp, mode: str, membermask, value, b, width) -> np.ndarray:
    """``shfl.sync`` in ``mode`` (``idx``, ``up``, ``down``, ``bfly``) as CUDA's ``__shfl*_sync(membermask, value,
    b, width)`` issues it, for the threads of ``interp.mask`` (``interp.count`` threads, warps of 32 consecutive
    ones); returns each thread's result (its own ``value`` where it does not execute).

    Example: see the module docstring; a thread outside ``membermask`` raises ``SimulationError``.
    """
    widths = np.broadcast_to(np.asarray(width).astype(np.int64), (interp.count,))
    bad = np.asarray(interp.mask, bool) & ((widths < 1) | (widths > _WARP) | (widths & (widths - 1) != 0))
    if bad.any():
        thread = int(np.argmax(bad))
        raise SimulationError(
            f"shfl.sync in warp {thread // _WARP}: width {int(widths[thread])} is not a power of two from 1 to 32"
        )
    clamp = 0 if mode == "up" else _WARP - 1
    return shuffle_sync(interp, mode, membermask, value, b, ((_WARP - widths) << 8) | clamp)[0]


def shuffle_sync(interp, mode: str, membermask, value, b, c) -> tuple[np.ndarray, np.ndarray]:
    """``shfl.sync.mode.b32 d|p, value, b, c, membermask`` of the PTX ISA for the threads of ``interp.mask``: ``c``
    packs the clamp value (bits 0-4) and the segment mask (bits 8-12). Returns ``(d, p)`` per thread: the value
    read, and whether the source lane was in range (where it was not, ``d`` is the lane's own value).

    Example:
        ``shuffle_sync(interp, "bfly", 0xFFFFFFFF, v, 1, 0x1F)`` is ``__shfl_xor_sync(0xFFFFFFFF, v, 1)``.
    """
    count = interp.count
    executing = _by_warp(np.asarray(interp.mask, bool), count, False)
    exists = _by_warp(True, count, False)
    member = _first_disagreement(
        _by_warp(np.asarray(membermask).astype(np.int64) & 0xFFFFFFFF, count, 0), executing, "member mask"
    )
    packed = _first_disagreement(_by_warp(np.asarray(c).astype(np.int64), count, 0x1F), executing, "c operand")
    running = executing.any(axis=1)
    lanes = np.arange(_WARP)
    in_mask = (member[:, None] >> lanes & 1).astype(bool)
    _raise_at(
        executing & ~in_mask,
        lambda w, lane: (
            f"shfl.sync: lane {lane} of warp {w} executes it with member mask {int(member[w]):#010x}, "
            "which does not include it"
        ),
    )
    _raise_at(
        running[:, None] & exists & in_mask & ~executing,
        lambda w, lane: (
            f"shfl.sync: lane {lane} of warp {w} is in member mask {int(member[w]):#010x} but does not "
            "execute the shuffle (a divergent participant)"
        ),
    )
    segmask, clamp = (packed[:, None] >> 8) & 31, packed[:, None] & 31
    max_lane, min_lane = (lanes & segmask) | (clamp & ~segmask), lanes & segmask
    delta = _by_warp(np.asarray(b).astype(np.int64), count, 0)
    if mode == "up":
        source = lanes - delta
        valid = source >= max_lane
    elif mode == "down":
        source = lanes + delta
        valid = source <= max_lane
    elif mode == "bfly":
        source = lanes ^ (delta & 31)
        valid = source <= max_lane
    elif mode == "idx":
        source = min_lane | (delta & 31 & ~segmask)
        valid = source <= max_lane
    else:
        raise SimulationError(f"unknown shfl.sync mode {mode!r}")
    source = np.where(valid, source, lanes)
    warps = np.arange(member.size)[:, None]
    readable = in_mask[warps, source] & exists[warps, source]
    _raise_at(
        executing & ~readable,
        lambda w, lane: (
            f"shfl.sync: lane {lane} of warp {w} reads lane {int(source[w, lane])}, which is outside "
            f"member mask {int(member[w]):#010x} (its value is unpredictable)"
        ),
    )
    reader = (warps * _WARP + source).ravel()[:count]
    value = np.asarray(value)
    value = np.broadcast_to(value, (count, *value.shape[1:]) if value.ndim else (count,))
    taking = executing.ravel()[:count]
    result = value.copy()
    result[taking] = value[reader[taking]]
    return result, valid.ravel()[:count]


def shuffle_call(interp, name: str, args: list) -> np.ndarray:
    """Execute the shuffle intrinsic ``name`` (a key of :data:`MODES`) with evaluated arguments ``args``
    (``mask, value, b, width[, warp size]``).

    Example:
        ``shuffle_call(interp, "tvm_warp_shuffle_xor", [0xFFFFFFFF, v, 16, 32, 32])`` swaps the warp's halves.
    """
    if len(args) == 5 and int(np.max(args[4])) != _WARP:
        raise SimulationError(f"{name} with warp size {args[4]}: CUDA warps have 32 lanes")
    membermask, value, b, width = args[:4]
    return shuffle(interp, MODES[name], membermask, value, b, width)


def ptx_shuffle(interp, call) -> None:
    """Execute ``T.ptx.shfl_sync(d, a, b, c, membermask, mode, "b32", ...)`` (and ``shfl_sync_p(d, p, a, ...)``):
    the ISA's instruction with its raw ``c`` operand, writing ``d`` (and the predicate ``p``) of each executing
    thread.

    Example:
        ``T.ptx.shfl_sync.bfly.b32(f[0], v, 1, 31, 0xFFFFFFFF)`` stores lane ``i ^ 1``'s ``v`` in ``f[0]``.
    """
    with_predicate = call.op.name.endswith("_p")
    destinations = call.args[: 2 if with_predicate else 1]
    a, b, c, membermask, mode = call.args[len(destinations) : len(destinations) + 5]
    result, valid = shuffle_sync(
        interp, str(mode.value), interp.eval(membermask), interp.eval(a), interp.eval(b), interp.eval(c)
    )
    for target, values in zip(destinations, (result, valid), strict=False):
        if not isinstance(target, TensorLoad):
            raise SimulationError(f"{call.op.name} writes its result to a buffer element, not to {target}")
        interp._store(target.source, interp.element_index(target.source, target.indices), values)
