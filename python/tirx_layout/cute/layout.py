"""The CuTe ``Layout``: a hierarchical ``(shape : stride)`` over named axes, a thin veneer over the C++ core.

Shapes are nested tuples of positive ints. A stride is an int (on the memory axis ``m``) or ``value @ axis``, so
one layout can place its modes on several named axes. The domain is column-major: an integer index splits over
the flattened modes first-fastest, the last mode taking whatever is left (as CuTe does).
"""

from __future__ import annotations

import numpy as np
import tvm_ffi
from tvm_ffi import Object, from_dlpack

from ..core import ffi
from ..core.values import INT64_MAX, INT64_MIN, int64_array, static_int
from ..layout.axis import Axis
from ..layout.spec import OnAxis

#: The name a plain integer stride is on.
PLAIN_AXIS = "m"


def _shape_tree(shape):
    """``shape`` as nested tuples of ints (``ValueError``/``TypeError`` naming a bad entry)."""
    if isinstance(shape, tuple | list):
        if not shape:
            raise ValueError("a CuTe shape tuple must not be empty")
        return tuple(_shape_tree(s) for s in shape)
    extent = static_int(shape, "a CuTe shape entry")
    if extent < 1:
        raise ValueError(f"a CuTe shape entry must be >= 1, got {extent}")
    return extent


def _stride_leaf(stride) -> tuple[int, str]:
    if isinstance(stride, OnAxis):
        return static_int(stride.value, "a CuTe stride"), stride.axis.name
    if isinstance(stride, Axis):
        return 1, stride.name
    return static_int(stride, "a CuTe stride"), ""


def _flat_strides(shape, stride, values: list, axes: list) -> None:
    """Append the leaves of ``stride`` to ``values``/``axes``, checking that it is congruent to ``shape``."""
    if isinstance(shape, tuple):
        if not isinstance(stride, tuple | list) or len(stride) != len(shape):
            raise ValueError(f"stride {stride!r} is not congruent to shape {shape!r}")
        for s, d in zip(shape, stride, strict=True):
            _flat_strides(s, d, values, axes)
        return
    if isinstance(stride, tuple | list):
        raise ValueError(f"stride {stride!r} is not congruent to the extent {shape!r}")
    value, axis = _stride_leaf(stride)
    values.append(value)
    axes.append(axis)


def compact_strides(shape):
    """The column-major compact strides of ``shape`` (first mode fastest), congruent to it.

    Example:
        >>> compact_strides(((2, 4), 3))
        ((1, 2), 8)
    """
    running = 1

    def walk(s):
        nonlocal running
        if isinstance(s, tuple):
            return tuple(walk(x) for x in s)
        stride, running = running, running * s
        return stride

    return walk(_shape_tree(shape))


def flat_leaves(shape, stride) -> list[tuple]:
    """The ``(extent, stride)`` leaves of congruent ``shape`` and ``stride`` trees, fastest first.

    Example:
        >>> flat_leaves(((2, 4), 3), ((1, 2), 8))
        [(2, 1), (4, 2), (3, 8)]
    """
    if isinstance(shape, tuple):
        return [leaf for s, d in zip(shape, stride, strict=True) for leaf in flat_leaves(s, d)]
    return [(shape, stride)]


def _evaluate(codes: list, num_axes: int, index: int) -> list[int] | None:
    """The place of ``index >= 0`` on each axis, ``None`` past int64, walking the leaves of the encoded layout
    ``codes`` (see :func:`_decode`; the last leaf ends the list). The same walk as the core's ``Evaluate``, kept here
    for single ints because one FFI round trip costs more than the walk (arrays go to the core)."""
    values = [0] * num_axes
    pos, last = 2, len(codes) - 3
    while pos <= last:
        extent = codes[pos]
        if extent < 0:  # a tuple marker
            pos += 1
            continue
        if pos == last:
            digit = index
        else:
            index, digit = divmod(index, extent)
        axis = codes[pos + 2]
        if axis >= 0:
            values[axis] += digit * codes[pos + 1]
        pos += 3
    for value in values:
        if not INT64_MIN <= value <= INT64_MAX:
            return None
    return values


def _evaluate_flat(codes: list, num_axes: int, point) -> list[int] | None:
    """The place of ``point``, one int per leaf of a flat tuple layout (``L(i, j)`` on ``(4,8):(8,1)``), without the
    detour through a linear index; ``None`` for any other layout or coordinate (then the general walk answers)."""
    if type(point) is not tuple or codes[2] != -len(point) or len(codes) != 3 + 3 * len(point):
        return None
    values = [0] * num_axes
    last, pos = len(point) - 1, 3
    for k, c in enumerate(point):
        if type(c) is not int or c < 0 or (c >= codes[pos] and k != last):
            return None
        axis = codes[pos + 2]
        if axis >= 0:
            values[axis] += c * codes[pos + 1]
        pos += 3
    for value in values:
        if not INT64_MIN <= value <= INT64_MAX:
            return None
    return values


def _linear_index(coord, shape, unbounded: bool) -> int:
    """The column-major index of a (hierarchical) coordinate within ``shape``."""
    if type(coord) is tuple and type(shape) is tuple and len(coord) == len(shape):
        # The common case first: a flat coordinate of in-range ints; anything else takes the general walk below.
        index, scale, last = 0, 1, len(shape) - 1
        for k, (c, s) in enumerate(zip(coord, shape, strict=True)):
            if type(c) is not int or type(s) is not int or c < 0 or (c >= s and not (unbounded and k == last)):
                break
            index += c * scale
            scale *= s
        else:
            return index
    if not isinstance(coord, tuple | list):
        index = static_int(coord, "a coordinate")
        size = shape_size(shape)
        if index < 0 or (not unbounded and index >= size):
            raise ValueError(f"coordinate {index} is out of range for a mode of size {size}")
        return index
    if not isinstance(shape, tuple) or len(coord) != len(shape):
        raise ValueError(f"coordinate {tuple(coord)!r} does not match the shape {shape!r}")
    index, scale = 0, 1
    for k, (c, s) in enumerate(zip(coord, shape, strict=True)):
        index += _linear_index(c, s, unbounded and k == len(shape) - 1) * scale
        scale *= shape_size(s)
    return index


def shape_size(shape) -> int:
    """The number of points of a (nested) CuTe shape: the product of its leaves.

    Example:
        >>> shape_size((2, (3, 4)))
        24
    """
    if isinstance(shape, tuple):
        n = 1
        for s in shape:
            n *= shape_size(s)
        return n
    return shape


@tvm_ffi.register_object("tirx_layout.cute.Layout")
class Layout(Object):
    """A CuTe layout: ``shape`` and ``stride`` are congruent nested tuples; ``stride`` entries are ints (on ``m``)
    or ``value @ axis``. Printing and :meth:`parse` use CuTe's spelling.

    Example:
        >>> from tirx_layout import laneid
        >>> L = Layout(((2, 4), 3), ((1 @ laneid, 2), 8))
        >>> print(L)
        ((2,4),3):((1@laneid,2),8)
        >>> L(5), L((1, 2), 1)
        ({'laneid': 1, 'm': 4}, {'laneid': 1, 'm': 12})
        >>> Layout((4, 8))(9)
        9
    """

    __slots__ = ("_cache", "_text")

    def __init__(self, shape, stride=None) -> None:
        tree = _shape_tree(shape)
        if stride is None:
            stride = compact_strides(tree)
        values: list[int] = []
        axes: list[str] = []
        _flat_strides(tree, stride, values, axes)
        for axis in axes:
            if axis:
                Axis.get(axis)  # an unknown axis is a KeyError listing the known ones
        self.__init_handle_by_constructor__(ffi.CuteLayoutMake, tree, values, axes)

    @staticmethod
    def parse(text: str) -> Layout:
        """The layout spelled ``text`` in CuTe's notation (``s:d``, nested parentheses, ``v@axis`` strides).

        Example:
            >>> Layout.parse("((2,4),3):((1@laneid,2),8)").shape
            ((2, 4), 3)
        """
        if not isinstance(text, str):
            raise TypeError(f"Layout.parse takes a str, got {text!r}")
        layout = ffi.CuteLayoutParse(text)
        for axis in layout.axes():
            Axis.get(axis)
        return layout

    def _cached(self) -> tuple:
        """``(shape, stride, axis names, encoded list, plain?)``, decoded once per object from one flat list the core
        writes."""
        cache = getattr(self, "_cache", None)
        if cache is None:
            codes = memoryview(ffi.CuteLayoutEncoded(self)).cast("q").tolist()
            count, plain = codes[0], codes[1]
            if count == 0 or (count == 1 and plain == 0):  # the common case: no axis, or only plain ints
                names, axes = (PLAIN_AXIS,) * count, (None,) * count
            else:
                raw = tuple(ffi.CuteLayoutAxes(self))
                names = tuple(a or PLAIN_AXIS for a in raw)
                axes = tuple(Axis.get(a) if a else None for a in raw)
            shape, stride, _ = _decode(codes, 2, axes)
            cache = self._cache = (shape, stride, names, codes, names in ((), (PLAIN_AXIS,)))
        return cache

    @property
    def shape(self):
        """The nested shape: an int or a tuple.

        Example:
            >>> Layout.parse("((2,4),3):((1,2),8)").shape
            ((2, 4), 3)
        """
        return self._cached()[0]

    @property
    def stride(self):
        """The nested stride, congruent to the shape: ints and ``value @ axis`` terms.

        Example:
            >>> Layout.parse("((2,4),3):((1@laneid,2),8)").stride
            ((1@laneid, 2), 8)
        """
        return self._cached()[1]

    def axes(self) -> tuple[str, ...]:
        """The axes the strides reach, in order of first appearance (``"m"`` for plain ints).

        Example:
            >>> Layout.parse("(2,4):(1@laneid,2)").axes()
            ('laneid', 'm')
        """
        return self._cached()[2]

    def is_plain(self) -> bool:
        """True when every stride is a plain int (the layout maps into one integer codomain).

        Example:
            >>> Layout.parse("(2,4):(1,2)").is_plain(), Layout.parse("2:1@laneid").is_plain()
            (True, False)
        """
        return self._cached()[4]

    def size(self) -> int:
        """Number of points of the domain: the product of the extents.

        Example:
            >>> Layout((2, 3)).size()
            6
        """
        return ffi.CuteLayoutSize(self)

    def cosize(self, axis: str | Axis | None = None) -> int:
        """``L(size-1) + 1`` on ``axis`` (``m``, the plain ints, by default): the codomain extent when the strides
        there are non-negative.

        Example:
            >>> Layout.parse("(2,4):(1@laneid,2)").cosize(), Layout.parse("(2,4):(1@laneid,2)").cosize("laneid")
            (7, 2)
        """
        name = PLAIN_AXIS if axis is None else Axis.get(axis).name
        return ffi.CuteLayoutCosize(self, "" if name == PLAIN_AXIS else name)

    def rank(self) -> int:
        """Number of top-level modes (1 for a single mode ``s:d``).

        Example:
            >>> Layout.parse("(2,(3,4)):(1,(2,6))").rank(), Layout(4).rank()
            (2, 1)
        """
        return ffi.CuteLayoutRank(self)

    def depth(self) -> int:
        """Nesting depth: 0 for ``s:d``, 1 for a flat tuple, and so on.

        Example:
            >>> Layout(4).depth(), Layout((2, 3)).depth(), Layout((2, (3, 4))).depth()
            (0, 1, 2)
        """
        return ffi.CuteLayoutDepth(self)

    def __len__(self) -> int:
        return self.rank()

    def __getitem__(self, i: int) -> Layout:
        i = static_int(i, "a mode index")
        return ffi.CuteLayoutGet(self, i + self.rank() if i < 0 else i)

    def __iter__(self):
        return (self[i] for i in range(self.rank()))

    def __call__(self, *coord):
        """The place of an index or a (hierarchical) coordinate: an int when the layout is plain, else
        ``{axis: value}``. Indices past the size run on in the last mode, as in CuTe.

        Example:
            >>> L = Layout.parse("(4,8):(8,1)")
            >>> L(9), L((1, 2)), L(1, 2)
            (10, 10, 10)
        """
        shape, _, names, codes, plain = self._cached()
        values = None
        if len(coord) == 1 and type(coord[0]) is int:
            index = coord[0]
        else:
            point = coord[0] if len(coord) == 1 else coord
            values = _evaluate_flat(codes, len(names), point)
            index = _linear_index(point, shape, True) if values is None else 0
        if values is None and index >= 0:
            values = _evaluate(codes, len(names), index)
        if values is None:  # a negative index or an int64 overflow: the core raises the error
            values = ffi.CuteLayoutCall(self, static_int(index, "a CuTe layout index"))
        if plain:
            return values[0] if values else 0
        return dict(zip(names, values, strict=True))

    def apply_array(self, indices) -> np.ndarray | dict:
        """Evaluate at every index of an integer array (in C++): an array of the same shape when the layout is
        plain, else ``{axis: array}``.

        Example:
            >>> Layout.parse("(2,4):(4,1)").apply_array(np.arange(8)).tolist()
            [0, 4, 1, 5, 2, 6, 3, 7]
        """
        flat = np.ascontiguousarray(int64_array(indices)).reshape(-1)
        names = self.axes()
        out = np.zeros((max(len(names), 1), flat.size), dtype=np.int64)
        if names:
            ffi.CuteLayoutCallArray(self, from_dlpack(flat), from_dlpack(out))
        shape = np.shape(indices)
        if self.is_plain():
            return out[0].reshape(shape)
        return {name: out[k].reshape(shape) for k, name in enumerate(names)}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and ffi.CuteLayoutEqual(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(str(self))

    @ffi.shown_when_unconstructed
    def __str__(self) -> str:
        text = getattr(self, "_text", None)
        if text is None:
            text = self._text = ffi.CuteLayoutStr(self)
        return text

    @ffi.shown_when_unconstructed
    def __repr__(self) -> str:
        return f"Layout.parse({str(self)!r})"

    def __reduce__(self):
        return (Layout.parse, (str(self),))


def _decode(codes, pos: int, axes: tuple) -> tuple:
    """The ``(shape, stride, next position)`` of the mode encoded at ``codes[pos]`` (see ``CuteLayoutEncoded``: a
    tuple of k modes is ``-k``, a leaf ``extent, stride, axis index``, after a two-entry header); ``axes`` holds
    ``None`` for plain ints."""
    head = codes[pos]
    if head >= 0:
        stride, axis = codes[pos + 1], codes[pos + 2]
        if axis >= 0 and axes[axis] is not None:
            stride = OnAxis(stride, axes[axis])
        return head, stride, pos + 3
    shapes, strides = [], []
    pos += 1
    for _ in range(-head):
        extent = codes[pos]
        if extent < 0:  # a nested tuple
            shape, stride, pos = _decode(codes, pos, axes)
            shapes.append(shape)
            strides.append(stride)
            continue
        stride, axis = codes[pos + 1], codes[pos + 2]  # a leaf, read in place: most modes are leaves
        if axis >= 0 and axes[axis] is not None:
            stride = OnAxis(stride, axes[axis])
        shapes.append(extent)
        strides.append(stride)
        pos += 3
    return tuple(shapes), tuple(strides), pos


def make_layout(*layouts: Layout) -> Layout:
    """The layout whose modes are ``layouts`` (a tuple of them, even for one).

    Example:
        >>> print(make_layout(Layout(4, 2), Layout((2, 3), (1, 8))))
        (4,(2,3)):(2,(1,8))
    """
    if len(layouts) == 1 and isinstance(layouts[0], list | tuple):
        layouts = tuple(layouts[0])
    for layout in layouts:
        if not isinstance(layout, Layout):
            raise TypeError(f"make_layout takes CuTe Layouts, got {layout!r}")
    return ffi.CuteLayoutTuple(list(layouts))
