"""The inverse of a layout's forward map: which logical element (and which replica) a place holds.

A TileLayout places logical element ``x`` (its shard coordinates ``c_i``) at ``sum c_i * s_i + offset`` on each
axis. The map can be undone digit by digit when, on every axis, the iters sorted by stride nest like the digits of a
mixed-radix number: each stride is a multiple of the previous one and at least the previous stride times its extent.
Then ``c_k = (place - offset) // s_k % e_k``. Anything else (stride 0, negative strides, interleaved strides) is not
invertible this way and raises ``ValueError`` naming the iters.

Places that no element reaches (holes: a slot span larger than the slots used, or more threads than the layout
covers) are told apart by :meth:`PlaceInverse.holds`, an exact test of the same digit structure.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .indexing import all_of, flatten, floordiv
from .swizzle import ComposeLayout
from .tile import TileLayout


@dataclass(frozen=True)
class _Digit:
    """One iter seen from its axis: which iter it is, its extent and stride."""

    replica: bool
    index: int  # position in the shard (or replica) list
    extent: int
    stride: int


class PlaceInverse:
    """The inverse of a TileLayout's forward map. Built once per layout; expressions are made per use.

    Example:
        >>> from tirx_layout import TileLayout, S, R, laneid, warpid
        >>> inv = PlaceInverse(TileLayout(S[(8, 4, 2):(4 @ laneid, 1 @ laneid, 1)] + R[2:1 @ warpid]))
        >>> inv.shard_digits({"laneid": 13, "m": 1, "warpid": 1})
        [3, 1, 1]
        >>> inv.replica_digits({"laneid": 13, "m": 1, "warpid": 1})
        [1]
        >>> inv.flat_index({"laneid": 13, "m": 1, "warpid": 0})
        27
    """

    def __init__(self, layout):
        if isinstance(layout, ComposeLayout):
            raise ValueError(f"{layout!r} is swizzled; invert its tile layout and unswizzle the address first")
        if not isinstance(layout, TileLayout):
            raise TypeError(f"PlaceInverse needs a TileLayout, got {type(layout).__name__}")
        self.layout = layout
        self.shard_extents = [int(it.extent) for it in layout.shard]
        self.replica_extents = [int(it.extent) for it in layout.replica]
        self.offset = {axis.name: value for axis, value in layout.offset.items()}
        for name, value in self.offset.items():
            if not isinstance(value, int):
                raise ValueError(f"{layout} has a symbolic offset on {name}; it cannot be inverted statically")
        self.axes: dict[str, list[_Digit]] = {}
        for replica, iters in ((False, layout.shard), (True, layout.replica)):
            for index, it in enumerate(iters):
                if it.extent == 1:
                    continue
                if it.stride <= 0:
                    raise ValueError(
                        f"{layout} is not invertible by place: iter {index} ({it.extent}:{it.stride}@{it.axis.name}) "
                        "has a stride that is not positive, so several elements or replicas share places"
                    )
                self.axes.setdefault(it.axis.name, []).append(_Digit(replica, index, int(it.extent), int(it.stride)))
        for name, digits in self.axes.items():
            digits.sort(key=lambda d: d.stride)
            for lower, upper in itertools.pairwise(digits):
                if upper.stride % lower.stride or upper.stride < lower.stride * lower.extent:
                    raise ValueError(
                        f"{layout} is not invertible by place on axis {name}: strides {lower.stride} (extent "
                        f"{lower.extent}) and {upper.stride} overlap or interleave"
                    )

    # ---- one set of formulas for ints, numpy arrays and PrimExprs ------------------------------------------------

    def _digits(self, places, replica: bool) -> list:
        count = len(self.replica_extents if replica else self.shard_extents)
        out = [0] * count
        for name, digits in self.axes.items():
            relative = places[name] - self.offset.get(name, 0)
            for k, d in enumerate(digits):
                if d.replica != replica:
                    continue
                value = floordiv(relative, d.stride)
                # modulo the gap to the next digit, not the extent: with a gap (extent 12, next stride 16) place 16
                # is digit 0 of the next, not 16 % 12 (a place in the gap is a hole, which holds() tells apart)
                out[d.index] = value if k == len(digits) - 1 else value % (digits[k + 1].stride // d.stride)
        return out

    def shard_digits(self, places: dict) -> list:
        """The shard coordinates of the element at ``places`` (``{axis name: int or PrimExpr}``)."""
        return self._digits(places, replica=False)

    def replica_digits(self, places: dict) -> list:
        """Which replica (one coordinate per replica iter) the place ``places`` holds."""
        return self._digits(places, replica=True)

    def flat_index(self, places: dict):
        """The row-major logical index (over the shard iters) of the element at ``places``."""
        return flatten(self.shard_digits(places), self.shard_extents)

    def holds(self, places: dict):
        """Whether ``places`` is the place of some element (a bool, a boolean array or a boolean PrimExpr)."""
        conditions = []
        for name, digits in self.axes.items():
            relative = places[name] - self.offset.get(name, 0)
            conditions.append(relative >= 0)
            if digits[0].stride > 1:
                conditions.append(relative % digits[0].stride == 0)
            for lower, upper in itertools.pairwise(digits):
                ratio = upper.stride // lower.stride
                if ratio > lower.extent:
                    conditions.append(floordiv(relative, lower.stride) % ratio < lower.extent)
            conditions.append(floordiv(relative, digits[-1].stride) < digits[-1].extent)
        for name, value in self.offset.items():
            if name not in self.axes and name in places:
                conditions.append(places[name] == value)
        return all_of(conditions)

    # ---- what a range of places covers --------------------------------------------------------------------------

    def covered(self, axis: str, extent: int) -> np.ndarray:
        """For each place ``0 <= p < extent`` on ``axis``, whether some element (or replica) lies there.

        Example:
            >>> from tirx_layout import TileLayout, S
            >>> PlaceInverse(TileLayout(S[(2, 2):(4, 1)])).covered("m", 6).tolist()
            [True, True, False, False, True, True]
        """
        reached = np.zeros(extent, bool)
        places = np.array([self.offset.get(axis, 0)], np.int64)
        for d in self.axes.get(axis, []):
            places = (places[:, None] + d.stride * np.arange(d.extent)[None, :]).ravel()
        inside = places[(places >= 0) & (places < extent)]
        reached[inside] = True
        return reached

    def reach(self, axis: str) -> int:
        """One past the largest place on ``axis`` (the extent that axis must have)."""
        top = self.offset.get(axis, 0) + sum((d.extent - 1) * d.stride for d in self.axes.get(axis, []))
        return top + 1
