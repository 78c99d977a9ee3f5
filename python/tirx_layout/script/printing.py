"""TVMScript printing of tirx_layout layouts and tile ops.

Layouts print as ``T.layout("<text>")`` with the text ``repr`` gives (a TileLayout as its bare ``S[...]`` spec), and an
allocation that carries one prints its layout as the ``layout=`` argument, the way it was written. ``T.layout`` parses
the text back with :func:`tirx_layout.parse_layout`, so printed kernels re-parse to structurally equal
functions. A tile op's named arguments (``ir/op_calls.py``) print as keywords: ``T.tile_copy(B[0:8], A[0:8],
scope="warp")``. The rules go into TVM's printer table through the core's ``PrinterRule*`` functions (see
``src/ffi/printer_hook.cc`` for why that table is reached the way it is).

That table is private to TVM, so touching it is lazy and never fatal: importing the package changes nothing; the
first TVMScript print from Python (``func.script()``, ``str(func)``, ``print(mod)``) installs the rules, and only
when TVM is exactly ``PRINTER_TABLE_TVM``, the C++ side finds the table's every field as expected (reading it in
a way that cannot fault) and a probe kernel then prints its layout as ``T.layout(...)``. On any doubt the table is
left as it was, one ``PrinterHookWarning`` says why, and layouts print as TVM prints unknown objects.
"""

from __future__ import annotations

import atexit
import ctypes
import warnings

import tvm
import tvm_ffi
from tvm.runtime import script_printer
from tvm.script.printer import doc

from ..core import ffi
from ..ir.annotations import LAYOUT_KEY
from ..ir.op_calls import read_op_call
from ..layout import LAYOUT_TYPES, TileLayout
from ..ops import REGISTRY

#: The apache-tvm release whose printer table ``src/ffi/printer_hook.cc`` was written against.
PRINTER_TABLE_TVM = "0.27.0.post1"
#: The exported accessor of the table: ``tvm::script::printer::IRDocsifier::vtable()``.
VTABLE_SYMBOL = "_ZN3tvm6script7printer11IRDocsifier6vtableEv"
#: A kernel whose printed form shows whether the rules work: it must print the lines of ``PROBE_EXPECTED``.
PROBE_SOURCE = """
@T.prim_func
def probe(A: T.Buffer((8,), "float32")):
    s = T.alloc_shared((8,), "float32", layout=T.layout("S[8:1]"))
    T.tile_copy(s, A, "warp")
"""
PROBE_EXPECTED = ("s = T.alloc_shared((8,), layout=T.layout('S[8:1]'))", 'T.tile_copy(s[0:8], A[0:8], scope="warp")')


class PrinterHookWarning(UserWarning):
    """Layouts print as TVM prints unknown objects, because the printer rules could not be installed safely."""


def printer_table_address() -> int:
    """The address of TVM's TVMScript printer table, from the compiler library TVM itself loaded.

    Example:
        >>> printer_table_address() > 0
        True
    """
    library = getattr(tvm.base, "_LOADED_LIBS", {}).get("tvm_compiler")
    if library is None:
        raise LookupError("TVM has not loaded its compiler library (tvm_compiler)")
    try:
        accessor = library[VTABLE_SYMBOL]
    except AttributeError:
        raise LookupError("TVM's compiler library does not export the TVMScript printer table") from None
    accessor.restype = ctypes.c_void_p
    accessor.argtypes = []
    return int(accessor() or 0)


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


def _op_rule(upstream):
    """TVM's rule for ``Evaluate``, with a tile op's named arguments (its ``"name", value`` pairs) printed as keywords,
    a constant flag as Python's ``True``/``False`` (``Field.literal``)."""

    def rule(stmt, path, docsifier):
        printed = upstream(stmt, path, docsifier)
        found = read_op_call(stmt)
        spec = REGISTRY.get(found.name) if found is not None else None
        call = getattr(printed, "expr", None)
        if spec is None or not isinstance(call, doc.CallDoc):
            return printed
        required = sum(f.required for f in spec.fields)
        try:
            _, named = found.split(required)
        except ValueError:
            return printed  # not the encoding ops write: print it as it is
        fields = {f.name: f for f in spec.fields}
        kwargs = {}
        for (name, value), value_doc in zip(named.items(), list(call.args)[required + 1 :: 2], strict=True):
            literal = fields[name].literal(value) if name in fields else None
            kwargs[name] = value_doc if literal is None else doc.LiteralDoc(literal)
        return doc.ExprStmtDoc(doc.CallDoc(call.callee, *list(call.args)[:required], **kwargs))

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
    interpreter, and a rule implemented in Python must not be destroyed after Python has shut down. ``active`` is
    ``None`` until the first attempt, then whether layouts print as ``T.layout``."""

    def __init__(self):
        self.replaced: list[tuple[int, object]] = []
        self.table = 0
        self.active: bool | None = None

    def install(self, type_index: int, rule) -> object:
        previous = ffi.PrinterRuleInstall(self.table, "", type_index, tvm_ffi.convert(rule))
        self.replaced.append((type_index, previous))
        return previous

    def restore(self) -> None:
        while self.replaced:
            type_index, previous = self.replaced.pop()
            ffi.PrinterRuleInstall(self.table, "", type_index, previous)


def _probe_prints_layouts() -> bool:
    from tvm.script import tirx as T

    probe = tvm.script.from_source(PROBE_SOURCE, extra_vars={"T": T})
    printed = _upstream_script(probe, None)
    return all(line in printed for line in PROBE_EXPECTED)


def _install(table_address: int) -> None:
    """Install the rules into the table at ``table_address``; ``ValueError``/``LookupError`` saying why not."""
    if tvm.__version__ != PRINTER_TABLE_TVM:
        raise LookupError(f"the printer hook is written for apache-tvm {PRINTER_TABLE_TVM}, this is {tvm.__version__}")
    problem = ffi.PrinterTableProblem(table_address)
    if problem:
        raise LookupError(f"TVM's printer table is not as expected ({problem})")
    _RULES.table = table_address
    alloc_index = _type_index(tvm.tirx.AllocBuffer)
    evaluate_index = _type_index(tvm.tirx.Evaluate)
    upstream = ffi.PrinterRuleLookup(table_address, "", alloc_index)
    evaluate = ffi.PrinterRuleLookup(table_address, "", evaluate_index)
    if upstream is None or evaluate is None:
        raise LookupError("TVM's printer has no rule for AllocBuffer or Evaluate")
    for cls in LAYOUT_TYPES:
        _RULES.install(_type_index(cls), _layout_rule)
    _RULES.install(alloc_index, _alloc_rule(upstream))
    _RULES.install(evaluate_index, _op_rule(evaluate))
    atexit.register(_RULES.restore)
    if not _probe_prints_layouts():
        _RULES.restore()
        raise LookupError("a probe kernel did not print its layout as T.layout(...) and its op's keywords")


def install_printer_rules(table_address: int | None = None) -> bool:
    """Make layouts and layout-carrying allocations print as re-parsable TVMScript, in the printer table at
    ``table_address`` (default: TVM's own); returns whether they do. Only the first call acts (the first TVMScript
    print calls it): on any doubt it leaves the table as it was and warns once with ``PrinterHookWarning``.

    Example:
        >>> install_printer_rules()
        True
        >>> len(_RULES.replaced)  # the three layout classes, AllocBuffer and Evaluate
        5
    """
    if _RULES.active is not None:
        return _RULES.active
    _RULES.active = False
    script_printer._script = _upstream_script
    try:
        _install(printer_table_address() if table_address is None else table_address)
        _RULES.active = True
    except Exception as err:  # printing is a convenience: whatever went wrong, the program goes on without it
        if _RULES.replaced:
            _RULES.restore()
        warnings.warn(
            f"tirx_layout: layouts print as TVM prints unknown objects, not as T.layout(...): {err}",
            PrinterHookWarning,
            stacklevel=2,
        )
    return _RULES.active


def _script_installing_rules(obj, config):
    install_printer_rules()
    return _upstream_script(obj, config)


def print_layouts_lazily() -> None:
    """Install the printer rules at the first TVMScript print rather than now (done on import; idempotent): every
    print from Python goes through ``tvm.runtime.script_printer._script``, which this wraps until then.

    Example:
        >>> print_layouts_lazily()  # done on import; once the rules are decided, TVM's own function is back
        >>> _ = install_printer_rules()
        >>> script_printer._script is _upstream_script
        True
    """
    if _RULES.active is None:
        script_printer._script = _script_installing_rules


_upstream_script = script_printer._script
_RULES = _PrinterRules()
