"""CuTe's ``Swizzle<B, M, S>`` functor and ``ComposedLayout``: an outer function after an offset after a layout.

Swizzles are XOR permutations of integer offsets, not strided layouts, so they compose with a layout rather than
being one: ``ComposedLayout(Swizzle(3, 3, 3), 0, L)`` maps ``x`` to ``swizzle(0 + L(x))``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import tvm_ffi
from tvm_ffi import Object, from_dlpack

from ..core import ffi
from ..core.values import int64_array, static_int
from ..layout.axis import Axis
from .layout import PLAIN_AXIS, Layout


@tvm_ffi.register_object("tirx_layout.cute.Swizzle")
class Swizzle(Object):
    """``Swizzle<bits, base, shift>``: keep the ``base`` low bits, XOR the ``bits`` bits found ``shift`` above
    them into them (a negative shift XORs the low field into the high one). A bijection of every period of
    ``2^(bits + base + |shift|)``.

    Example:
        >>> sw = Swizzle(3, 3, 3)
        >>> [sw(64 * i) for i in range(4)]
        [0, 72, 144, 216]
    """

    bits: int
    base: int
    shift: int

    def __init__(self, bits: int, base: int, shift: int) -> None:
        self.__init_handle_by_constructor__(
            ffi.CuteSwizzle,
            static_int(bits, "Swizzle bits"),
            static_int(base, "Swizzle base"),
            static_int(shift, "Swizzle shift"),
        )

    def __call__(self, offset):
        """The swizzled offset of an int, or of every entry of an integer array.

        Example:
            >>> Swizzle(2, 0, -3)(np.array([1, 2, 3])).tolist()
            [9, 18, 27]
        """
        if isinstance(offset, np.ndarray):
            out = np.array(int64_array(offset), dtype=np.int64, order="C")
            ffi.CuteSwizzleApplyArray(self, from_dlpack(out))
            return out
        return ffi.CuteSwizzleApply(self, static_int(offset, "a swizzled offset"))

    def size(self) -> int:
        """The period ``2^(bits + base + |shift|)`` (``Swizzle(3, 3, 3).size() == 512``)."""
        return 1 << (self.bits + self.base + abs(self.shift))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Swizzle) and (self.bits, self.base, self.shift) == (
            other.bits,
            other.base,
            other.shift,
        )

    def __hash__(self) -> int:
        return hash((self.bits, self.base, self.shift))

    @ffi.shown_when_unconstructed
    def __str__(self) -> str:
        return f"Sw<{self.bits},{self.base},{self.shift}>"

    @ffi.shown_when_unconstructed
    def __repr__(self) -> str:
        return f"Swizzle({self.bits}, {self.base}, {self.shift})"

    def __reduce__(self):
        return (Swizzle, (self.bits, self.base, self.shift))


def _offset_terms(offset) -> dict[str, int]:
    if isinstance(offset, Mapping):
        terms = {Axis.get(a).name: static_int(v, "an offset") for a, v in offset.items()}
    else:
        terms = {PLAIN_AXIS: static_int(offset, "an offset")}
    return {a: v for a, v in terms.items() if v}


class ComposedLayout:
    """``outer(offset + inner(x))``: ``outer`` is a :class:`Swizzle` or ``None`` (the identity), ``offset`` an int
    or ``{axis: int}``, ``inner`` a CuTe :class:`Layout`. A swizzle acts on the plain (``m``) place only.

    Example:
        >>> C = ComposedLayout(Swizzle(3, 3, 3), 0, Layout.parse("(8,64):(64,1)"))
        >>> print(C)
        Sw<3,3,3> o 0 o (8,64):(64,1)
        >>> [C(i, 0) for i in range(4)]
        [0, 72, 144, 216]
    """

    __slots__ = ("inner", "offset", "outer")

    def __init__(self, outer: Swizzle | None, offset, inner: Layout) -> None:
        if outer is not None and not isinstance(outer, Swizzle):
            raise TypeError(f"the outer function of a ComposedLayout is a Swizzle or None, got {outer!r}")
        if not isinstance(inner, Layout):
            raise TypeError(f"the inner layout of a ComposedLayout is a CuTe Layout, got {inner!r}")
        self.outer, self.inner, self.offset = outer, inner, _offset_terms(offset)
        if outer is not None and (set(self.offset) | set(inner.axes())) - {PLAIN_AXIS}:
            raise ValueError(f"a swizzle acts on plain offsets only, but {inner} or the offset uses named axes")

    def __call__(self, *coord):
        """``outer(offset + inner(coord))`` for an index or a coordinate of the inner layout.

        Example:
            >>> ComposedLayout(Swizzle(1, 0, 1), 1, Layout(4))(1)
            3
        """
        return self._finish(self.inner(*coord))

    def apply_array(self, indices):
        """Evaluate at every index of an integer array (see :meth:`Layout.apply_array`).

        Example:
            >>> ComposedLayout(None, 3, Layout(4)).apply_array(np.arange(4)).tolist()
            [3, 4, 5, 6]
        """
        return self._finish(self.inner.apply_array(indices))

    def _finish(self, place):
        """Add the offset to the inner layout's place (an int, an array or ``{axis: value}``), then swizzle."""
        if not isinstance(place, dict) and set(self.offset) <= {PLAIN_AXIS}:
            place = place + self.offset.get(PLAIN_AXIS, 0)
            return self.outer(place) if self.outer is not None else place
        place = dict(place) if isinstance(place, dict) else {PLAIN_AXIS: place}
        for axis, value in self.offset.items():
            place[axis] = place.get(axis, 0) + value
        return place

    def compose(self, tiler) -> ComposedLayout:
        """``outer o offset o (inner o tiler)``: composition acts on the inner layout.

        Example:
            >>> print(ComposedLayout(Swizzle(1, 0, 1), 0, Layout(8)).compose(Layout(4, 2)))
            Sw<1,0,1> o 0 o 4:2
        """
        from .algebra import composition

        return ComposedLayout(self.outer, self.offset, composition(self.inner, tiler))

    def size(self) -> int:
        """The size of the inner layout's domain.

        Example:
            >>> ComposedLayout(None, 0, Layout((4, 8))).size()
            32
        """
        return self.inner.size()

    def _key(self):
        return (self.outer, tuple(sorted(self.offset.items())), self.inner)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposedLayout) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _offset_str(self) -> str:
        terms = [str(v) if a == PLAIN_AXIS else f"{v}@{a}" for a, v in self.offset.items()]
        return "+".join(terms) or "0"

    def __str__(self) -> str:
        outer = "id" if self.outer is None else str(self.outer)
        return f"{outer} o {self._offset_str()} o {self.inner}"

    def __repr__(self) -> str:
        return f"ComposedLayout({self.outer!r}, {self.offset!r}, {self.inner!r})"
