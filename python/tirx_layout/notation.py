"""Read layouts back from their text, without ``eval``.

The text is what ``repr``/``str`` print: ``S[...] + R[...] + offset`` for a TileLayout, ``TileLayout(...)``,
``SwizzleLayout(3, 3, 3)`` and ``ComposeLayout(SwizzleLayout(...), TileLayout(...))``. It is parsed as a Python
expression and then walked by a small evaluator that knows only those names, integer literals and the operators
the notation uses, so text from a printed kernel, a file or a web form can never run code.
"""

from __future__ import annotations

import ast
import operator

from .axis import BUILTIN_AXES, Axis
from .layout import TileLayout
from .spec import LayoutSpec, R, S
from .swizzle import ComposeLayout, SwizzleLayout

_CONSTRUCTORS = {"TileLayout": TileLayout, "SwizzleLayout": SwizzleLayout, "ComposeLayout": ComposeLayout}
_NAMES = {"S": S, "R": R, "True": True, "False": False, **{name: Axis.get(name) for name in BUILTIN_AXES}}
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.MatMult: operator.matmul}

Layout = TileLayout | SwizzleLayout | ComposeLayout


def parse_layout(text: str) -> Layout:
    """The layout ``text`` spells, in the notation ``repr`` prints; a bare spec gives a ``TileLayout``.

    Raises ``ValueError`` naming the part of the text it cannot read.

    Example:
        >>> parse_layout("S[(8, 2):(4@laneid, 1)] + R[2:4@warpid]")
        TileLayout(S[(8, 2):(4@laneid, 1)] + R[2:4@warpid])
        >>> parse_layout("ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 64):(64, 1)]))")
        ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 64):(64, 1)]))
    """
    if not isinstance(text, str):
        raise TypeError(f"layout text must be a str, got {type(text).__name__}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as err:
        raise ValueError(f"cannot read layout text {text!r}: {err.msg} at column {err.offset}") from None
    value = _Evaluator(text).visit(tree.body)
    if isinstance(value, LayoutSpec):
        value = TileLayout(value)
    if not isinstance(value, Layout):
        raise ValueError(f"layout text {text!r} is a {type(value).__name__}, not a layout")
    return value


class _Evaluator(ast.NodeVisitor):
    def __init__(self, text: str):
        self.text = text

    def fail(self, node: ast.AST, why: str):
        fragment = ast.get_source_segment(self.text.strip(), node) or type(node).__name__
        raise ValueError(f"cannot read layout text {self.text!r}: {why} in {fragment!r}")

    def generic_visit(self, node):
        self.fail(node, "unsupported syntax")

    def visit_Constant(self, node: ast.Constant):
        if type(node.value) in (int, bool, str):
            return node.value
        self.fail(node, "only integers and axis names are allowed")

    def visit_Name(self, node: ast.Name):
        if node.id in _NAMES:
            return _NAMES[node.id]
        self.fail(node, f"unknown name {node.id!r}")

    def visit_Tuple(self, node: ast.Tuple):
        return tuple(self.visit(e) for e in node.elts)

    def visit_UnaryOp(self, node: ast.UnaryOp):
        if isinstance(node.op, ast.USub):
            return -self.visit(node.operand)
        self.fail(node, "unsupported operator")

    def visit_BinOp(self, node: ast.BinOp):
        op = _BINARY.get(type(node.op))
        if op is None:
            self.fail(node, "unsupported operator")
        return self.apply(node, op, self.visit(node.left), self.visit(node.right))

    def visit_Subscript(self, node: ast.Subscript):
        if not (isinstance(node.value, ast.Name) and node.value.id in ("S", "R")):
            self.fail(node, "only S[...] and R[...] can be indexed")
        if isinstance(node.slice, ast.Slice):
            if node.slice.lower is None or node.slice.upper is None or node.slice.step is not None:
                self.fail(node, "a spec is written shape:strides")
            key = slice(self.visit(node.slice.lower), self.visit(node.slice.upper))
        else:
            key = self.visit(node.slice)
        return self.apply(node, operator.getitem, self.visit(node.value), key)

    def visit_Call(self, node: ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and (func.value.id, func.attr) == (
            "Axis",
            "get",
        ):
            target = Axis.get
        elif isinstance(func, ast.Name) and func.id in _CONSTRUCTORS:
            target = _CONSTRUCTORS[func.id]
        else:
            self.fail(node, "only TileLayout, SwizzleLayout, ComposeLayout and Axis.get can be called")
        args = [self.visit(a) for a in node.args]
        kwargs = {k.arg: self.visit(k.value) for k in node.keywords if k.arg is not None}
        if len(kwargs) != len(node.keywords):
            self.fail(node, "** arguments are not allowed")
        return self.apply(node, lambda: target(*args, **kwargs))

    def apply(self, node: ast.AST, fn, *args):
        try:
            return fn(*args)
        except (TypeError, ValueError, KeyError) as err:
            self.fail(node, str(err).strip("'\""))
