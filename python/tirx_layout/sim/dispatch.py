"""How the simulator finds the code of a device helper: one :class:`HelperTable` per helper family (its executor),
mapping the helper's ``what`` (its name after ``tirx_layout_<family>_``, as ``ir/device_calls`` splits it) to a
handler.

A table holds the exact names first and then a short, ordered list of name patterns for the parameterised names
(``ld_32x32b_x4``, ``cp_128x256b``, ``mma_f16_ss``): a pattern's named groups reach its handler as keyword
arguments, so a handler reads the shape or the kind from its parameters and never parses a name again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from ..ir.device_calls import HELPER_FAMILIES, helper_name
from .memory import SimulationError

__all__ = ["HelperTable"]


class HelperTable:
    """The helpers of ``family`` an executor runs: ``exact`` maps a ``what`` to ``handler(interp, args)``;
    ``patterns`` are ``(regular expression, handler)`` pairs, tried in order on the whole ``what``, a match calling
    ``handler(interp, args, **its named groups)``. Calling the table runs the helper and returns the handler's value
    (``None`` for a statement, an array of per-thread values for an expression).

    Example:
        >>> table = HelperTable("sync", {"elect": lambda interp, args: "elected"},
        ...                     [(r"fence_(?P<scope>\\w+)", lambda interp, args, scope: scope)])
        >>> table(None, "elect", []), table(None, "fence_cta", []), table.knows("wait")
        ('elected', 'cta', False)
    """

    def __init__(
        self,
        family: str,
        exact: Mapping[str, Callable],
        patterns: Sequence[tuple[str, Callable]] = (),
    ):
        if family not in HELPER_FAMILIES:
            raise ValueError(f"unknown helper family {family!r}; expected one of {list(HELPER_FAMILIES)}")
        self.family = family
        self.exact = dict(exact)
        self.patterns = tuple((re.compile(pattern), handler) for pattern, handler in patterns)

    def find(self, what: str) -> tuple[Callable, dict]:
        """The handler of helper ``what`` and the keyword arguments its name gives it; :class:`SimulationError`
        naming the helper when the table has none."""
        handler = self.exact.get(what)
        if handler is not None:
            return handler, {}
        for pattern, handler in self.patterns:
            match = pattern.fullmatch(what)
            if match is not None:
                return handler, match.groupdict()
        raise SimulationError(
            f"the simulator does not implement the {self.family} helper {what} ({helper_name(self.family, what)})"
        )

    def knows(self, what: str) -> bool:
        """Whether the table has a handler for helper ``what``."""
        try:
            self.find(what)
        except SimulationError:
            return False
        return True

    def __call__(self, interp, what: str, args):
        handler, named = self.find(what)
        return handler(interp, args, **named)
