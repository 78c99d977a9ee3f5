"""The ``S[...] + R[...] + offset`` notation that builds TileLayouts.

``S[shape : strides]`` lists shard iters, ``R[shape : strides]`` replica iters, and anything added that is not a
spec is an offset. A stride is an int (on ``m``), ``value @ axis``, an axis name (stride 1 on it), an ``Axis``, or a
``(stride, axis)`` pair; omitting the strides gives row-major strides on ``m``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..core.values import offset_sum, offset_value, static_int
from .axis import BUILTIN_AXES, Axis, Iter
from .indexing import row_major_strides


def axis_label(axis: Axis) -> str:
    """How a stride or offset on ``axis`` is spelled after the value: ``"@laneid"``, or ``'@Axis.get("x")'``."""
    return f"@{axis.name}" if axis.name in BUILTIN_AXES else f"@Axis.get({axis.name!r})"


class OnAxis:
    """A value bound to an axis, written ``value @ axis``: a stride inside ``S[...]``/``R[...]``, or an offset.

    Example:
        >>> from tirx_layout import laneid
        >>> 4 @ laneid
        4@laneid
    """

    __slots__ = ("axis", "value")

    def __init__(self, value, axis: Axis):
        self.value = offset_value(value, f"the value bound to axis {axis.name}")
        self.axis = axis

    def __add__(self, other):
        if isinstance(other, LayoutSpec):
            return NotImplemented
        return Offset.of(self) + other

    def __radd__(self, other):
        return Offset.of(other) + self

    def __neg__(self) -> OnAxis:
        return OnAxis(-self.value, self.axis)

    def __repr__(self) -> str:
        value = self.value if isinstance(self.value, int) else f"({self.value})"
        return f"{value}{axis_label(self.axis)}"


class Offset:
    """A sum of per-axis offset terms; a bare int or expression is on ``m``. Terms on one axis add up.

    Example:
        >>> from tirx_layout import warpid
        >>> (5 @ warpid + 3 + 2 @ warpid).terms
        {Axis.get('warpid'): 7, Axis.get('m'): 3}
    """

    __slots__ = ("terms",)

    def __init__(self, terms: dict[Axis, object] | None = None):
        self.terms: dict[Axis, object] = dict(terms or {})

    @staticmethod
    def of(value) -> Offset:
        """Convert an offset-like value (``Offset``, ``OnAxis``, dict, int or expression on ``m``)."""
        if isinstance(value, Offset):
            return value
        if isinstance(value, OnAxis):
            return Offset({value.axis: value.value})
        if isinstance(value, dict):
            out = Offset()
            for axis, v in value.items():
                out = out + OnAxis(v, Axis.get(axis))
            return out
        if isinstance(value, LayoutSpec):
            raise TypeError("a layout spec is not an offset")
        return Offset({Axis.get("m"): offset_value(value, "an offset")})

    def __add__(self, other):
        if isinstance(other, LayoutSpec):
            return NotImplemented
        other = Offset.of(other)
        terms = dict(self.terms)
        for axis, value in other.terms.items():
            terms[axis] = offset_sum(terms[axis], value, f"the offsets on axis {axis.name}") if axis in terms else value
        return Offset(terms)

    def __radd__(self, other):
        return Offset.of(other) + self

    def __repr__(self) -> str:
        return " + ".join(repr(OnAxis(v, a)) if a.name != "m" else repr(v) for a, v in self.terms.items()) or "0"


class LayoutSpec:
    """What ``S[...] + R[...] + offset`` evaluates to; pass it to ``TileLayout``.

    Example:
        >>> from tirx_layout import S, R, warpid
        >>> spec = S[(8, 2):(2, 1)] + R[2:4 @ warpid] + 1 @ warpid
        >>> len(spec.shard), len(spec.replica), spec.offset.terms
        (2, 1, {Axis.get('warpid'): 1})
    """

    __slots__ = ("offset", "replica", "shard")

    def __init__(self, shard: tuple[Iter, ...] | None = None, replica: tuple[Iter, ...] = (), offset=None):
        self.shard = shard
        self.replica = tuple(replica)
        self.offset = Offset.of(offset) if offset is not None else Offset()

    def __add__(self, other) -> LayoutSpec:
        if isinstance(other, LayoutSpec):
            if self.shard is not None and other.shard is not None:
                raise ValueError("a layout has one shard list: S[...] appears twice in the spec")
            return LayoutSpec(
                self.shard if self.shard is not None else other.shard,
                self.replica + other.replica,
                self.offset + other.offset,
            )
        return LayoutSpec(self.shard, self.replica, self.offset + other)

    def __radd__(self, other) -> LayoutSpec:
        return LayoutSpec(self.shard, self.replica, Offset.of(other) + self.offset)

    def __repr__(self) -> str:
        return format_spec(self.shard or (), self.replica, self.offset.terms)


def _as_tuple(value) -> tuple:
    if isinstance(value, tuple):
        return value
    if isinstance(value, list):
        return tuple(value)
    return (value,)


def _stride_iter(extent, stride) -> Iter:
    if isinstance(stride, OnAxis):
        return Iter(extent, stride.value, stride.axis)
    if isinstance(stride, str | Axis):
        return Iter(extent, 1, stride)
    if isinstance(stride, tuple | list):
        if len(stride) != 2:
            raise ValueError(f"a (stride, axis) pair has two entries, got {stride!r}")
        return Iter(extent, stride[0], stride[1])
    return Iter(extent, stride, "m")


def iters_from(shape, strides=None) -> tuple[Iter, ...]:
    """Iters of ``shape`` with ``strides`` (row-major on ``m`` when ``None``), in the forms ``S[...]`` accepts.

    Example:
        >>> iters_from((8, 4))
        (Iter(8, 4, 'm'), Iter(4, 1, 'm'))
    """
    shape = _as_tuple(shape)
    extents = [static_int(e, "an extent") for e in shape]
    if strides is None:
        strides = row_major_strides(extents)
    strides = _as_tuple(strides)
    if len(strides) != len(extents):
        raise ValueError(f"shape {shape!r} has {len(extents)} extents but {len(strides)} strides were given")
    return tuple(_stride_iter(e, s) for e, s in zip(extents, strides, strict=True))


def _format_stride(it: Iter) -> str:
    return str(it.stride) if it.axis.name == "m" else f"{it.stride}{axis_label(it.axis)}"


def _format_iters(kind: str, iters: Sequence[Iter]) -> str:
    if len(iters) == 1:
        return f"{kind}[{iters[0].extent}:{_format_stride(iters[0])}]"
    extents = ", ".join(str(it.extent) for it in iters)
    strides = ", ".join(_format_stride(it) for it in iters)
    return f"{kind}[({extents}):({strides})]" if iters else f"{kind}[()]"


def format_spec(shard: Sequence[Iter], replica: Sequence[Iter], offset: Mapping[Axis, object]) -> str:
    """The ``S[...] + R[...] + offset`` text of a layout, in the notation that builds it back.

    Example:
        >>> format_spec([Iter(8, 4, "laneid"), Iter(2, 1, "m")], [], {})
        'S[(8, 2):(4@laneid, 1)]'
    """
    parts = [_format_iters("S", shard)]
    if replica:
        parts.append(_format_iters("R", replica))
    for axis, value in offset.items():
        parts.append(repr(value) if axis.name == "m" and isinstance(value, int) else repr(OnAxis(value, axis)))
    return " + ".join(parts)


class _SpecBuilder:
    __slots__ = ("_kind",)

    def __init__(self, kind: str):
        self._kind = kind

    def __getitem__(self, key) -> LayoutSpec:
        if isinstance(key, slice):
            # The TVMScript parser fills in step=1 for slices it re-evaluates inside kernels; anything else is an error.
            if key.step is not None and not (type(key.step) is int and key.step == 1):
                raise ValueError(f"{self._kind}[shape:strides] takes no third part, got step {key.step!r}")
            iters = iters_from(key.start, key.stop)
        else:
            iters = iters_from(key)
        return LayoutSpec(shard=iters) if self._kind == "S" else LayoutSpec(replica=iters)

    def __repr__(self) -> str:
        return self._kind


#: Shard spec builder: ``S[(8, 4):(4 @ laneid, 1)]``, ``S[8, 4]`` (row-major on ``m``), ``S[8:2]``.
S = _SpecBuilder("S")
#: Replica spec builder: ``R[4:32 @ TLane]``.
R = _SpecBuilder("R")
