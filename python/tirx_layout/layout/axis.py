"""Named axes: the hardware and storage coordinates that layouts map onto.

Thread axes (``laneid``, ``warpid``, ``tid_in_wg``, ...) index one execution level within another; memory axes
(``m``, ``TLane``, ``TCol``, ...) are storage coordinates. Axes are interned by name in the C++ registry, and
``value @ axis`` binds a stride or an offset to one.
"""

from __future__ import annotations

from typing import ClassVar

import tvm_ffi
from tvm_ffi import Object

from ..core import ffi
from ..core.values import static_int

#: Execution levels, outermost first (the position is the scope rank).
EXEC_LEVELS = ("kernel", "cluster", "cta", "warpgroup", "warp", "thread")


class ExecScope(str):
    """An execution level (one of :data:`EXEC_LEVELS`) as the scope queries return it: ``.name`` gives the level,
    as on upstream's ``ExecScope``, and since it is also the level's string, code comparing scopes with
    ``"warp"`` or using them as dict keys keeps working.

    Example:
        >>> scope = ExecScope("warp")
        >>> scope.name, scope == "warp", scope == ExecScope("warp"), EXEC_LEVELS.index(scope)
        ('warp', True, True, 4)
    """

    __slots__ = ()

    def __new__(cls, name: str) -> ExecScope:
        if name not in EXEC_LEVELS:
            raise ValueError(f"unknown execution level {name!r}; the levels are {', '.join(EXEC_LEVELS)}")
        return super().__new__(cls, name)

    @property
    def name(self) -> str:
        """The level's name (``ExecScope("cta").name == "cta"``)."""
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"ExecScope({str.__repr__(self)})"


def _scope(level: str | None) -> ExecScope | None:
    return None if level is None else ExecScope(level)


class _AxisMeta(type(Object)):
    """Lets every registered axis be read as a class attribute: ``Axis.laneid is Axis.get("laneid")``."""

    def __getattr__(cls, name: str):
        if not name.startswith("_"):
            try:
                return cls.get(name)
            except KeyError:
                pass
        raise AttributeError(f"type object 'Axis' has no attribute {name!r} (and no axis of that name is registered)")


@tvm_ffi.register_object("tirx_layout.Axis")
class Axis(Object, metaclass=_AxisMeta):
    """An interned named axis; every registered axis is also a class attribute (``Axis.laneid``).

    Example:
        >>> from tirx_layout import Axis
        >>> Axis.laneid.get_scope(), Axis.laneid.get_subscope()
        (ExecScope('warp'), ExecScope('thread'))
        >>> Axis.get("laneid") is Axis.laneid
        True
    """

    name: str
    kind: str
    scope: str | None
    subscope: str | None

    _interned: ClassVar[dict[str, Axis]] = {}

    def __init__(self, *args, **kwargs) -> None:
        raise TypeError("axes are interned: use Axis.get(name), or Axis.register(...) for a new one")

    @staticmethod
    def get(name: str | Axis) -> Axis:
        """The axis called ``name``; ``KeyError`` listing the known axes if there is none.

        Example:
            >>> Axis.get("TCol").is_memory()
            True
        """
        if isinstance(name, Axis):
            return name
        if not isinstance(name, str):
            raise TypeError(f"an axis name must be a str, got {name!r}")
        axis = Axis._interned.get(name)
        if axis is None:
            axis = Axis._interned[name] = ffi.AxisGet(name)
        return axis

    @staticmethod
    def register(name: str, kind: str, scope: str | None = None, subscope: str | None = None) -> Axis:
        """Register a user axis. Re-registering with the same attributes returns the existing axis.

        ``kind`` is ``"thread"`` (then ``scope`` and ``subscope`` are levels from :data:`EXEC_LEVELS`, scope outside
        subscope) or ``"memory"`` (no scopes).

        Example:
            >>> sm = Axis.register("smid", "thread", scope="cluster", subscope="cta")
            >>> sm.is_thread(), sm.get_scope().name
            (True, 'cluster')
        """
        for what, value in (("name", name), ("kind", kind)):
            if not isinstance(value, str):
                raise TypeError(f"axis {what} must be a str, got {value!r}")
        for what, value in (("scope", scope), ("subscope", subscope)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"axis {what} must be a level name or None, got {value!r}")
        axis = ffi.AxisRegister(name, kind, scope, subscope)
        return Axis._interned.setdefault(name, axis)

    @staticmethod
    def known() -> list[str]:
        """Names of every registered axis, built-in ones first.

        Example:
            >>> "laneid" in Axis.known()
            True
        """
        return list(ffi.AxisKnownNames())

    def is_thread(self) -> bool:
        """Whether this axis indexes threads, warps, CTAs... (``Axis.get("laneid").is_thread() is True``)."""
        return self.kind == "thread"

    def is_memory(self) -> bool:
        """Whether this axis is a storage coordinate (``Axis.get("m").is_memory() is True``)."""
        return self.kind == "memory"

    def get_scope(self) -> ExecScope | None:
        """The level a thread axis indexes within (``ExecScope("warp")`` for ``laneid``); ``None`` for memory
        axes."""
        return _scope(self.scope)

    def get_subscope(self) -> ExecScope | None:
        """The level one step of a thread axis is (``ExecScope("thread")`` for ``laneid``); ``None`` for memory
        axes."""
        return _scope(self.subscope)

    def __rmatmul__(self, value):
        from .spec import OnAxis  # spec builds on axis; the reverse edge is only needed at call time

        return OnAxis(value, self)

    def __matmul__(self, other):
        # Python asks the left operand only when both are axes: say what `@` binds instead of its generic message.
        raise TypeError(f"`value @ axis` binds an int or expression to an axis, got the axis {self.name} @ {other!r}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Axis) and self.same_as(other)

    def __hash__(self) -> int:
        return hash(("tirx_layout.Axis", self.name))

    @ffi.shown_when_unconstructed
    def __repr__(self) -> str:
        return f"Axis.get({self.name!r})"

    def __reduce__(self):
        return (Axis.get, (self.name,))


#: The built-in axes, importable by name: ``from tirx_layout import laneid, TCol``.
BUILTIN_AXES = (
    "bx",
    "by",
    "bz",
    "cbx",
    "cby",
    "cbz",
    "tx",
    "warpid",
    "laneid",
    "wgid",
    "tid_in_wg",
    "wid_in_wg",
    "m",
    "TLane",
    "TCol",
    "P",
    "F",
    "Bank",
)

bx, by, bz, cbx, cby, cbz, tx, warpid, laneid, wgid, tid_in_wg, wid_in_wg, m, TLane, TCol, P, F, Bank = (
    Axis.get(name) for name in BUILTIN_AXES
)


@tvm_ffi.register_object("tirx_layout.Iter")
class Iter(Object):
    """One ``(extent, stride, axis)`` triple of a shard or replica list.

    Example:
        >>> it = Iter(8, 4, "laneid")
        >>> it.extent, it.stride, it.axis.name
        (8, 4, 'laneid')
    """

    extent: int
    stride: int
    axis: Axis

    def __init__(self, extent: int, stride: int, axis: Axis | str = "m") -> None:
        self.__init_handle_by_constructor__(
            ffi.Iter, static_int(extent, "an iter extent"), static_int(stride, "an iter stride"), Axis.get(axis)
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Iter) and tvm_ffi.structural_equal(self, other)

    def __hash__(self) -> int:
        return tvm_ffi.structural_hash(self)

    @ffi.shown_when_unconstructed
    def __repr__(self) -> str:
        return f"Iter({self.extent}, {self.stride}, {self.axis.name!r})"

    def __reduce__(self):
        return (Iter, (self.extent, self.stride, self.axis.name))
