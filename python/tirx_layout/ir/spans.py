"""Where a statement came from: the TVMScript parser records a ``span`` (source name, line, column) on each
statement it builds, and error messages quote it so that the user finds the line."""

from __future__ import annotations


def source_location(node) -> str:
    """``" (line N of FILE)"`` for a statement parsed from TVMScript source (``FILE`` is the kernel's Python file,
    or ``<str>`` for ``tvm.script.from_source``), else ``""``.

    Example:
        >>> import tvm
        >>> func = tvm.script.from_source('''
        ... @T.prim_func
        ... def k(A: T.Buffer((4,), "float32")):
        ...     A[0] = T.float32(1)
        ... ''')
        >>> source_location(func.body), source_location(tvm.tirx.Evaluate(0))
        (' (line 4 of <str>)', '')
    """
    span = getattr(node, "span", None)
    spans = getattr(span, "spans", None)  # a statement a T.macro expanded: the macro's line, then the call's
    if spans is not None:
        return "".join(source_location(_Located(s)) for s in spans)
    if span is None or int(span.line) <= 0:
        return ""
    name = span.source_name.name if span.source_name is not None else ""
    return f" (line {int(span.line)} of {name})" if name else f" (line {int(span.line)})"


def located_errors(lower, stmt):
    """``lower(stmt)``, a ``ValueError`` it raises re-raised with the same type and ``stmt``'s TVMScript line
    appended (when it has one and the message does not already carry it): how every lowering names the user's line.

    Example:
        >>> import tvm
        >>> def refuse(stmt):
        ...     raise ValueError("bad copy")
        >>> located_errors(refuse, tvm.tirx.Evaluate(0))
        Traceback (most recent call last):
        ...
        ValueError: bad copy
    """
    try:
        return lower(stmt)
    except ValueError as err:
        where = source_location(stmt)
        if not where or where in str(err):
            raise
        raise type(err)(f"{err}{where}") from err


class _Located:
    """A stand-in node carrying one span (the parts of a ``SequentialSpan``)."""

    def __init__(self, span):
        self.span = span
