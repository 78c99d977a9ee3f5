"""A TIR expression evaluator for tests: Python integer arithmetic over a TVM ``PrimExpr`` with its variables bound
(TVM's simplifier does not fold every operator, bitwise ones included, once variables become constants)."""

from __future__ import annotations

import operator

from tvm import tirx

_BINARY = {
    tirx.Add: operator.add,
    tirx.Sub: operator.sub,
    tirx.Mul: operator.mul,
    tirx.FloorDiv: operator.floordiv,
    tirx.FloorMod: operator.mod,
    tirx.Min: min,
    tirx.Max: max,
    tirx.EQ: operator.eq,
    tirx.NE: operator.ne,
    tirx.LT: operator.lt,
    tirx.LE: operator.le,
    tirx.GT: operator.gt,
    tirx.GE: operator.ge,
    tirx.And: lambda a, b: bool(a) and bool(b),
    tirx.Or: lambda a, b: bool(a) or bool(b),
    tirx.BitwiseAnd: operator.and_,
    tirx.BitwiseOr: operator.or_,
    tirx.BitwiseXor: operator.xor,
    tirx.LShift: operator.lshift,
    tirx.RShift: operator.rshift,
}


def evaluate(expr, env: dict) -> int:
    """The value of ``expr`` (an int, a bool or an integer ``PrimExpr``) with ``env`` binding its variables."""
    if isinstance(expr, bool | int):
        return int(expr)
    if isinstance(expr, tirx.IntImm):
        return int(expr.value)
    if isinstance(expr, tirx.Var):
        return env[expr]
    if type(expr) in _BINARY:
        return int(_BINARY[type(expr)](evaluate(expr.a, env), evaluate(expr.b, env)))
    if isinstance(expr, tirx.Not):
        return int(not evaluate(expr.a, env))
    if isinstance(expr, tirx.Cast):
        return evaluate(expr.value, env)
    if isinstance(expr, tirx.Select):
        return evaluate(expr.true_value if evaluate(expr.condition, env) else expr.false_value, env)
    raise TypeError(f"the test evaluator has no rule for {type(expr).__name__}: {expr}")
