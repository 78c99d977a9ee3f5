"""TVMScript printing of tirx_layout layouts.

Layouts print as ``T.layout("<text>")`` with the text ``repr`` gives (a TileLayout as its bare ``S[...]`` spec), and an
allocation that carries one prints its layout as the ``layout=`` argument, the way it was written. ``T.layout`` parses
the text back with :func:`tirx_layout.parse_layout`, so printed kernels re-parse to structurally equal
functions. The rules go into TVM's printer table through the core's ``PrinterRule*`` functions (see
``src/ffi/printer_hook.cc`` for why that table is reached the way it is).
"""

from __future__ import annotations

import atexit

import tvm
import tvm_ffi
from tvm.script.printer import doc

from ..core import ffi
from ..ir.annotations import LAYOUT_KEY
from ..layout import LAYOUT_TYPES, TileLayout


def _compiler_library() -> int:
    """The handle of the TVM compiler library that TVM itself loaded (the printer table lives there)."""
    loaded = getattr(tvm.base, "_LOADED_LIBS", {}).get("tvm_compiler")
    if loaded is None:
        raise RuntimeError("TVM has not loaded its compiler library (tvm_compiler); tirx_layout cannot print layouts")
    return int(loaded._handle)


def layout_source(layout) -> str:
    """The TVMScript expression a layout prints as.

    Example:
        >>> from tirx_layout import TileLayout, S, laneid
        >>> layout_source(TileLayout(S[(32, 4):(1 @ laneid, 1)]))
        "T.layout('S[(32, 4):(1@laneid, 1)]')"
    """
    text = str(layout) if isinstance(layout, TileLayout) else repr(layout)
    return f"T.layout({text!r})"


def _layout_rule(layout, path, docsifier):
    return doc.IdDoc(layout_source(layout))


def _alloc_rule(upstream):
    """TVM's rule for ``AllocBuffer``, with our annotation moved out to a ``layout=`` argument."""

    def rule(stmt, path, docsifier):
        printed = upstream(stmt, path, docsifier)
        if LAYOUT_KEY not in stmt.annotations:
            return printed
        call = getattr(printed, "rhs", None)
        if not isinstance(call, doc.CallDoc) or "annotations" not in list(call.kwargs_keys):
            # TVM prints one-element allocations in scalar forms (`T.local_scalar(...)`) that drop annotations.
            return doc.AssignDoc(doc.IdDoc(stmt.buffer.name), doc.IdDoc(_plain_allocation(stmt)), None)
        keys, values = [], []
        for key, value in zip(call.kwargs_keys, call.kwargs_values, strict=True):
            if key == "annotations":
                kept = [(k, v) for k, v in zip(value.keys, value.values, strict=True) if k.value != LAYOUT_KEY]
                if not kept:
                    continue
                value = doc.DictDoc(dict(kept))
            keys.append(key)
            values.append(value)
        kwargs = dict(zip(keys, values, strict=True))
        kwargs["layout"] = doc.IdDoc(layout_source(stmt.annotations[LAYOUT_KEY]))
        return doc.AssignDoc(printed.lhs, doc.CallDoc(call.callee, *call.args, **kwargs), printed.annotation)

    return rule


def _plain_allocation(stmt) -> str:
    buffer = stmt.buffer
    shape = ", ".join(str(int(e)) for e in buffer.shape)
    return (
        f'T.alloc_buffer(({shape},), "{buffer.dtype}", scope="{buffer.scope()}", '
        f"layout={layout_source(stmt.annotations[LAYOUT_KEY])})"
    )


def _type_index(cls) -> int:
    return cls.__tvm_ffi_type_info__.type_index


class _PrinterRules:
    """Our entries in the printer table, and the ones they replaced, restored at exit: the table outlives the
    interpreter, and a rule implemented in Python must not be destroyed after Python has shut down."""

    def __init__(self):
        self.replaced: list[tuple[int, object]] = []

    def install(self, type_index: int, rule) -> object:
        previous = ffi.PrinterRuleInstall(_compiler_library(), "", type_index, tvm_ffi.convert(rule))
        self.replaced.append((type_index, previous))
        return previous

    def restore(self) -> None:
        while self.replaced:
            type_index, previous = self.replaced.pop()
            ffi.PrinterRuleInstall(_compiler_library(), "", type_index, previous)


def install_printer_rules() -> None:
    """Make layouts and layout-carrying allocations print as re-parsable TVMScript (idempotent).

    Example:
        >>> install_printer_rules()  # done by ``import tirx_layout.script``; a second call changes nothing
        >>> len(_RULES.replaced)  # the three layout classes and AllocBuffer
        4
    """
    if _RULES.replaced:
        return
    for cls in LAYOUT_TYPES:
        _RULES.install(_type_index(cls), _layout_rule)
    alloc_index = _type_index(tvm.tirx.AllocBuffer)
    upstream = ffi.PrinterRuleLookup(_compiler_library(), "", alloc_index)
    if upstream is None:
        raise RuntimeError("TVM's printer has no rule for AllocBuffer; tirx_layout cannot print layout buffers")
    _RULES.install(alloc_index, _alloc_rule(upstream))
    atexit.register(_RULES.restore)


_RULES = _PrinterRules()
