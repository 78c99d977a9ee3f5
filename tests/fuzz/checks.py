"""The checks fuzz cases name: each compares a result with its definition (``oracles/reference.py``, SPEC §2-3, or
pycute) and returns ``None`` when it agrees, else a sentence saying what differs."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pycute
import tvm

from tirx_layout import TileLayout
from tirx_layout.cute import Layout, to_tile_layout

from oracles import reference

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
DTYPE_RANGE = {"int32": (-(2**31), 2**31 - 1), "int64": (INT64_MIN, INT64_MAX)}
MEMORY_AXES = {"m", "TLane", "TCol", "P", "F", "Bank"}
REPO = Path(__file__).resolve().parents[2]


def _nonzero(place: dict) -> dict:
    return {a: v for a, v in place.items() if v != 0}


def _fits(places) -> bool:
    return all(INT64_MIN <= v <= INT64_MAX for p in places for v in p.values())


def _expected(data, coords, shape, with_replicas):
    return reference.forward(*data, coords, shape, with_replicas)


def check_apply(result, data, coords, shape, with_replicas):
    want = _expected(data, coords, shape, with_replicas)
    if not _fits(want):
        return f"apply{tuple(coords)} should not fit int64 ({want}) but gave {result}"
    got = result if with_replicas else [result]
    if [_nonzero(p) for p in got] != [_nonzero(p) for p in want]:
        return f"apply{tuple(coords)} (shape={shape}) gave {result}, the definition gives {want}"
    return None


def check_apply_many(results, data, coords, shape, with_replicas):
    for result, c in zip(results, coords, strict=True):
        problem = check_apply(result, data, c, shape, with_replicas)
        if problem:
            return problem
    return None


def check_apply_array(result, data, coords, shape, with_replicas):
    for k, c in enumerate(coords):
        want = _expected(data, c, shape, with_replicas)
        if not _fits(want):
            return f"apply{tuple(c)} should not fit int64 ({want})"
        got = [{a: int(v[r][k] if with_replicas else v[k]) for a, v in result.items()} for r in range(len(want))]
        if [_nonzero(p) for p in got] != [_nonzero(p) for p in want]:
            return f"array apply at {c} (shape={shape}) gave {got}, the definition gives {want}"
    return None


def _in_domain(data, coords, shape) -> bool:
    extents = [e for e, _, _ in data[0]]
    if shape is not None:
        return all(0 <= c < s for c, s in zip(coords, shape, strict=True))
    if len(coords) == 1 and len(extents) != 1:
        return 0 <= coords[0] < math.prod(extents)
    return all(0 <= c < e for c, e in zip(coords, extents, strict=True))


def check_apply_symbolic(result, data, names, coords, shape, with_replicas):
    """Symbolic apply evaluated at sample points inside the domain (a variable of any dtype can hold those) equals
    the definition, and its dtype holds the place."""
    rows = result if with_replicas else [result]
    for c in coords:
        if not _in_domain(data, c, shape):
            continue
        want = _expected(data, c, shape, with_replicas)
        env = dict(zip(names, c, strict=True))
        for row, place in zip(rows, want, strict=True):
            for axis, expr in row.items():
                value = reference.evaluate(expr, env) if not isinstance(expr, int) else expr
                dtype = str(expr.ty.dtype) if not isinstance(expr, int) else "int64"
                low, high = DTYPE_RANGE.get(dtype, (INT64_MIN, INT64_MAX))
                if not low <= place.get(axis, 0) <= high:
                    return f"symbolic apply gives {dtype} for axis {axis}, but place {place[axis]} at {c} needs more"
                if value != place.get(axis, 0):
                    return f"symbolic apply at {c} gives {axis}={value}, the definition gives {place}"
    return None


def check_offset_sum(result, terms, axis, flat):
    true = sum(terms)
    if not INT64_MIN <= true <= INT64_MAX:
        return f"offsets {terms} on {axis} sum to {true} outside int64, yet the layout applied to {result}"
    want = {axis: true} if axis != "m" else {}
    want["m"] = flat + (true if axis == "m" else 0)
    if _nonzero(result) != _nonzero(want):
        return f"offsets {terms} on {axis}: apply({flat}) gave {result}, the definition gives {want}"
    return None


def _places(layout, flat):
    return sorted(tuple(sorted(_nonzero(p).items())) for p in layout.apply_all(flat))


def check_same_map(result, layout, flats):
    """``result`` and ``layout`` place every sampled element at the same places (replicas included)."""
    for f in flats:
        if _places(result, f) != _places(layout, f):
            return f"{result} and {layout} differ at {f}: {_places(result, f)} vs {_places(layout, f)}"
    if result.size() != layout.size():
        return f"size {result.size()} != {layout.size()}"
    return None


def _data_of(layout):
    shard = [(it.extent, it.stride, it.axis.name) for it in layout.shard]
    replica = [(it.extent, it.stride, it.axis.name) for it in layout.replica]
    return shard, replica, {a.name: v for a, v in layout.offset.items()}


def _split_dims(coord, inner_shape):
    return [c // s for c, s in zip(coord, inner_shape, strict=True)], [
        c % s for c, s in zip(coord, inner_shape, strict=True)
    ]


def _coords_of(shape, count=6):
    total = math.prod(shape)
    picks = sorted({0, total - 1, *(int(x) for x in np.linspace(0, total - 1, count))})
    return [reference.split(p, shape) for p in picks]


def _add(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def check_tile(result, inner, outer, outer_shape, inner_shape):
    """SPEC §2 tile: outer strides on axes the inner shard uses scale by the inner's span there; places add."""
    used = {a for e, _, a in inner[0] if e > 1}  # a unit iter occupies nothing (docs/decisions.md, group)
    scaled = [(e, s * reference.span(*inner, MEMORY_AXES, a) if a in used else s, a) for e, s, a in outer[0]]
    shape = [o * i for o, i in zip(outer_shape, inner_shape, strict=True)]
    for coord in _coords_of(shape):
        o, i = _split_dims(coord, inner_shape)
        want = _add(
            reference.forward(scaled, [], outer[2], o, outer_shape)[0], reference.forward(*inner, i, inner_shape)[0]
        )
        got = result.apply(*coord, shape=shape)
        if _nonzero(got) != _nonzero(want):
            return f"tile at {coord}: got {got}, the definition gives {want}"
    if result.num_replicas() != math.prod(e for e, _, _ in inner[1] + outer[1]):
        return f"tile has {result.num_replicas()} replicas"
    return None


def check_direct_sum(result, right, left, left_shape, right_shape):
    shape = [a * b for a, b in zip(left_shape, right_shape, strict=True)]
    for coord in _coords_of(shape):
        p, q = _split_dims(coord, right_shape)
        want = _add(reference.forward(*left, p, left_shape)[0], reference.forward(*right, q, right_shape)[0])
        got = result.apply(*coord, shape=shape)
        if _nonzero(got) != _nonzero(want):
            return f"direct_sum at {coord}: got {got}, the definition gives {want}"
    return None


def check_recogniser(result, which, known, combined, combined_shape, known_shape):
    """A recogniser's answer must rebuild the combined layout (SPEC: exact inverses)."""
    if result is None:
        return None
    other_shape = [c // k for c, k in zip(combined_shape, known_shape, strict=True)]
    if which == "is_tile_inner":
        rebuilt = known.tile(result, other_shape, known_shape)
    elif which == "is_tile_outer":
        rebuilt = result.tile(known, known_shape, other_shape)
    elif which == "is_direct_sum_right":
        rebuilt = known.direct_sum(result, other_shape, known_shape)
    else:
        rebuilt = result.direct_sum(known, known_shape, other_shape)
    for coord in _coords_of(combined_shape):
        if rebuilt.apply(*coord, shape=combined_shape) != combined.apply(*coord, shape=combined_shape):
            return f"{which} returned {result}, which rebuilds {rebuilt}, not {combined}"
    return None


def check_slice(result, layout, shape, region):
    if result is None:
        return None
    extents = [end - begin for begin, end in region]
    for c in _coords_of(extents):
        want = layout.apply(*[b + x for (b, _), x in zip(region, c, strict=True)], shape=shape)
        got = result.apply(*c, shape=extents)
        if _nonzero(got) != _nonzero(want):
            return f"slice {region} at {c}: got {got}, the layout gives {want}"
    return None


def check_pack(result, layout, n):
    """``pack`` is the exact inverse of ``unpack``: unpacking what it returns gives the layout back."""
    back = result.unpack(n)
    flats = list(range(min(layout.size(), 64)))
    return check_same_map(back, layout, flats)


def check_storage(result, layout, flats):
    """``storage()`` keeps the memory iters: at the memory iters' part of a shard coordinate it places every element
    where the layout does, on the memory axes."""
    extents = [it.extent for it in layout.shard]
    kept = [k for k, it in enumerate(layout.shard) if it.axis.name in MEMORY_AXES]
    if len(kept) != len(result.shard):
        return None  # storage() also dropped or merged memory iters: no coordinate-wise comparison
    for f in flats:
        coords = reference.split(f, extents)
        want = {a: v for a, v in layout.apply(*coords).items() if a in MEMORY_AXES} if len(coords) > 1 else None
        if want is None:
            continue
        got = result.apply(*[coords[k] for k in kept]) if len(kept) > 1 else None
        if got is not None and _nonzero(got) != _nonzero(want):
            return f"storage at {coords}: {got} vs {want}"
    return None


def check_queries(result, data):
    size, span, replicas, _ = result
    shard, replica, offset = data
    want = (reference.size(shard), reference.span(shard, replica, offset, MEMORY_AXES))
    if (size, span) != want:
        return f"size/span {(size, span)}, the definition gives {want}"
    if replicas != math.prod(e for e, _, _ in replica):
        return f"num_replicas {replicas}"
    return None


def check_swizzle(result, params, inner, addresses):
    pe, sl, al = params
    for got, a in zip(result, addresses, strict=True):
        low, q, mask = a % 2**pe, a >> pe, 2**sl - 1
        q2 = q ^ ((q >> al) & mask) if inner else q ^ ((q & mask) << al)
        want = (q2 << pe) | low
        if got != want:
            return f"SwizzleLayout{tuple(params)}.apply({a}) gave {got}, SPEC §3 gives {want}"
    return None


def check_parsed(result, data):
    want = TileLayout.from_iters(
        [reference_iter(i) for i in data[0]], [reference_iter(i) for i in data[1]], dict(data[2])
    )
    return None if result == want else f"parsed {result}, expected {want}"


def reference_iter(it):
    from tirx_layout import Iter

    return Iter(*it)


def check_cute_round_trip(tile, cute, back):
    if cute is None or back is None:
        return None
    size = tile.size()
    for f in range(min(size, 32)):
        if _nonzero(back.apply(f)) != _nonzero(tile.apply(f)):
            return f"to_cute/to_tile_layout of {tile} gives {back}, differing at {f}"
    return None


def _theirs(layout):
    return pycute.Layout(layout.shape, layout.stride)


def _table(layout, n):
    return [layout(i) for i in range(n)]


def check_cute(result, op, a, b):
    """The CuTe algebra against pycute on plain layouts: the same function on the result's domain. The inverses and
    the complement are not unique, so they are checked by their laws instead."""
    if not isinstance(result, Layout) or not a.is_plain() or not b.is_plain():
        return None
    if op.startswith("left_inverse"):
        bad = [i for i in range(a.size()) if result(a(i)) != i]
        return f"{op}: {result} is not a left inverse of {a} at {bad[:3]}" if bad else None
    if op.startswith("right_inverse"):
        bad = [i for i in range(result.size()) if a(result(i)) != i]
        return f"{op}: {result} is not a right inverse of {a} at {bad[:3]}" if bad else None
    if op.startswith("complement"):
        if len({a(i) for i in range(a.size())}) != a.size():
            return None  # the complement law holds for injective layouts only
        # (A, complement) together place every element once: A's image and the complement's steps never collide.
        places = [a(i) + result(j) for j in range(min(result.size(), 64)) for i in range(a.size())]
        return f"{op}: {result} overlaps {a}" if len(set(places)) != len(places) else None
    env = {"A": _theirs(a), "B": _theirs(b), **{n: getattr(pycute, n) for n in dir(pycute) if not n.startswith("_")}}
    try:
        want = eval(op, env)
    except Exception:
        return None
    if not isinstance(want, pycute.Layout):
        return None
    n = min(pycute.size(want), 256)
    if pycute.size(want) != result.size():
        return f"{op}: ours {result}, pycute {want}"
    for i in range(n):
        theirs = want(i)
        try:
            ours = result(i)
        except ValueError:  # an overflow is refused: right exactly when the true value is outside int64
            ours = None
        if ours != (theirs if INT64_MIN <= theirs <= INT64_MAX else None):
            return f"{op}: ours {result} gives {ours} at {i}, pycute {want} gives {theirs}"
    return None


# ---- the command line and the server ------------------------------------------------------------------------------


class ChildCrashed(Exception):
    """A subprocess the case started died of a signal: the supervisor records a crash."""


class ChildHung(Exception):
    """A subprocess the case started ran past its time: the supervisor records a hang."""


CLI_TIMEOUT = 60


def run_cli(args: list[str]):
    with tempfile.TemporaryDirectory() as out:
        args = [a.replace("OUT", out) for a in args]
        try:
            done = subprocess.run(
                [sys.executable, "-m", "tirx_layout.tools.cli", *args],
                capture_output=True,
                text=True,
                timeout=CLI_TIMEOUT,
                cwd=REPO,
                env={**os.environ, "PYTHONFAULTHANDLER": ""},
            )
        except subprocess.TimeoutExpired:
            raise ChildHung(f"tirx-layout {args} ran past {CLI_TIMEOUT} s") from None
    if done.returncode < 0:
        raise ChildCrashed(f"tirx-layout {args} died of signal {-done.returncode}")
    return done


def check_cli(done):
    """Exit 0, or exit 2 (bad input) with one line on stderr; anything else is unclear."""
    stderr = done.stderr.strip()
    if done.returncode == 0:
        return None
    if done.returncode == 2 and "Traceback" not in stderr + done.stdout:
        if stderr and "\n" not in stderr:
            return None  # one line saying what was wrong
        if not stderr and done.stdout.startswith("usage:"):
            return None  # no command at all: the usage, on stdout
    raise UnclearOutcome(f"exit {done.returncode}, stderr: {stderr[-300:]!r}")


def check_server(answer):
    if not isinstance(answer, dict) or "ok" not in answer:
        raise UnclearOutcome(f"the handler answered {answer!r}")
    if not answer["ok"]:
        raise ReportedError(str(answer.get("error")))
    return None


class UnclearOutcome(Exception):
    """A check found an unclear error (not an exception of the case itself): the supervisor records it."""


class ReportedError(Exception):
    """An error the handler answered with (``ok: false``), classified like a raised ValueError."""


class WrongAnswer(Exception):
    """A check that raises rather than returns a difference."""


__all__ = ["to_tile_layout", "tvm"]
