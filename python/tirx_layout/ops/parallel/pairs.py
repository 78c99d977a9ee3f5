"""Two slots at a time: a ``T.tile_parallel`` body written for slots ``2p`` and ``2p + 1`` together, its float32
additions, multiplications and multiply-adds on the pair as one packed ``f32x2`` instruction (``add``/``mul``/
``fma.rn.f32x2``, sm_100 and later: ``ops/helpers/math.py``).

The two lanes' bodies are the scalar body with the slot variable set to ``2p`` and ``2p + 1``; they differ only in
indices and in values that depend on the slot, so they are walked side by side. Each float32 ``+``, ``*``, ``a * b +
c`` and ``a - b`` whose operands are float32 becomes one packed instruction on the pair of operands (an operand that
is the same in both lanes is broadcast); any other node keeps one scalar per lane, reading the lanes of packed
children (so does a negation, which the instruction reading it applies for free). The packed instructions round as
nvcc's code for the scalar body does: to nearest even, once for a multiply-add (nvcc contracts ``a * b + c`` into
one ``fma``); ``a - b`` is ``fma(b, -1, a)``, whose product is exact. Statements of other shapes in the two lanes
(a guard that differs) are left as two scalar statements.

Example (``(x + 1) * 2`` on the slots of a pair: one ``fma``-free add and one multiply, both packed):
    >>> import tvm
    >>> slot = tvm.tirx.Var("slot", "int32")
    >>> frag = tvm.tirx.decl_buffer((4,), "float32", "frag", scope="local")
    >>> body = tvm.tirx.BufferStore(frag, (frag[slot] + tvm.tirx.const(1.0, "float32")) * 2.0, [slot])
    >>> pair = tvm.tirx.Var("pair", "int32")
    >>> text = str(paired_body(body, slot, pair))
    >>> "tirx_layout_math_mul_f32x2" in text and "tirx_layout_math_add_f32x2" in text
    True
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ...ir.rewrite import sequence, substitute
from ..helpers import math as packed

_FLOAT = "float32"


class _Pair:
    """A value of both lanes: ``packed`` (a float32x2 expression) or the two scalars ``lanes``."""

    def __init__(self, lanes=None, packed_value=None):
        self.lanes = lanes
        self.packed = packed_value

    def lane(self, i: int):
        if self.lanes is not None:
            return self.lanes[i]
        return tirx.Shuffle([self.packed], [tirx.const(i, "int32")])

    def vector(self):
        if self.packed is not None:
            return self.packed
        a, b = self.lanes
        if tvm_ffi.structural_equal(a, b):
            return tirx.Broadcast(a, 2)
        return tirx.Shuffle([a, b], [tirx.const(0, "int32"), tirx.const(1, "int32")])


def _is_float(expr) -> bool:
    return str(expr.ty.dtype) == _FLOAT if hasattr(expr, "ty") else False


def _pair(a, b) -> _Pair:
    """The two lanes' expressions ``a`` and ``b`` (the same structure) as a :class:`_Pair`."""
    if type(a) is not type(b) or tvm_ffi.structural_equal(a, b):  # (the same in both lanes: computed once)
        return _Pair((a, b))
    if isinstance(a, tirx.Add | tirx.Sub | tirx.Mul) and _is_float(a) and not _negation(a):
        return _arithmetic(a, b)
    # any other node: its children paired and read back lane by lane
    children = _children(a)
    if not children:
        return _Pair((a, b))
    pairs = [_pair(x, y) for x, y in zip(children, _children(b), strict=True)]
    return _Pair(tuple(_rebuild(node, [p.lane(i) for p in pairs]) for i, node in enumerate((a, b))))


def _negation(expr) -> bool:
    """``-x`` (``x * -1`` or ``0 - x``): free as an operand modifier of whatever reads it, nothing to pack."""
    if isinstance(expr, tirx.Mul):
        return any(isinstance(e, tirx.FloatImm) and e.value == -1.0 for e in (expr.a, expr.b))
    return isinstance(expr, tirx.Sub) and isinstance(expr.a, tirx.FloatImm) and expr.a.value == 0.0


def _arithmetic(a, b) -> _Pair:
    if isinstance(a, tirx.Add) and isinstance(a.a, tirx.Mul) and isinstance(b.a, tirx.Mul):
        return _fma(_pair(a.a.a, b.a.a), _pair(a.a.b, b.a.b), _pair(a.b, b.b))
    if isinstance(a, tirx.Add) and isinstance(a.b, tirx.Mul) and isinstance(b.b, tirx.Mul):
        return _fma(_pair(a.b.a, b.b.a), _pair(a.b.b, b.b.b), _pair(a.a, b.a))
    x, y = _pair(a.a, b.a), _pair(a.b, b.b)
    if isinstance(a, tirx.Add):
        return _Pair(packed_value=packed.add_f32x2(x.vector(), y.vector()))
    if isinstance(a, tirx.Mul):
        return _Pair(packed_value=packed.mul_f32x2(x.vector(), y.vector()))
    minus_one = tirx.Broadcast(tirx.const(-1.0, _FLOAT), 2)
    return _Pair(packed_value=packed.fma_f32x2(y.vector(), minus_one, x.vector()))  # a - b, exactly rounded once


def _fma(x: _Pair, y: _Pair, z: _Pair) -> _Pair:
    return _Pair(packed_value=packed.fma_f32x2(x.vector(), y.vector(), z.vector()))


def _children(node) -> list:
    if isinstance(node, tirx.Cast):
        return [node.value]
    if isinstance(node, tirx.Select):
        return [node.condition, node.true_value, node.false_value]
    if isinstance(node, tvm.ir.Call):
        return list(node.args)
    if isinstance(node, tirx.Not):
        return [node.a]
    if hasattr(node, "a") and hasattr(node, "b") and not isinstance(node, tirx.Var):
        return [node.a, node.b]
    return []


def _rebuild(node, children: list):
    if isinstance(node, tirx.Cast):
        return tirx.Cast(str(node.ty.dtype), children[0])
    if isinstance(node, tirx.Select):
        return tirx.Select(*children)
    if isinstance(node, tvm.ir.Call):
        return tvm.ir.Call(node.op, children, ret_ty=node.ty)
    if isinstance(node, tirx.Not):
        return tirx.Not(children[0])
    return type(node)(children[0], children[1])


def _statement(s0, s1):
    """The two lanes' statements as one: stores of paired values, or both as they were."""
    if isinstance(s0, tirx.SeqStmt) and isinstance(s1, tirx.SeqStmt) and len(s0.seq) == len(s1.seq):
        return sequence([_statement(a, b) for a, b in zip(s0.seq, s1.seq, strict=True)])
    if isinstance(s0, tirx.BufferStore) and isinstance(s1, tirx.BufferStore) and s0.buffer.same_as(s1.buffer):
        value = _pair(s0.value, s1.value)
        if value.packed is None:
            return sequence([tirx.BufferStore(s.buffer, value.lanes[i], s.indices) for i, s in enumerate((s0, s1))])
        # the pair computed once, its lanes stored
        both = tirx.Var("pair_value", "float32x2")
        stores = [
            tirx.BufferStore(s.buffer, _Pair(packed_value=both).lane(i), s.indices) for i, s in enumerate((s0, s1))
        ]
        return sequence([tirx.Bind(both, value.packed), *stores])
    if (
        isinstance(s0, tirx.IfThenElse)
        and isinstance(s1, tirx.IfThenElse)
        and tvm_ffi.structural_equal(s0.condition, s1.condition)
        and (s0.else_case is None) == (s1.else_case is None)
    ):
        else_case = None if s0.else_case is None else _statement(s0.else_case, s1.else_case)
        return tirx.IfThenElse(s0.condition, _statement(s0.then_case, s1.then_case), else_case)
    return sequence([s0, s1])


def paired_body(body, slot, pair):
    """``body`` (written for one ``slot``) for the slots ``2 * pair`` and ``2 * pair + 1`` together, their float32
    arithmetic packed (see the module docstring).

    Example: see the module docstring.
    """
    # A one-pair loop's ``pair`` is the constant 0 (``copy.lower.loop_var``): the slots are then constants too.
    first = tirx.const(2 * pair, "int32") if isinstance(pair, int) else pair * 2
    lanes = [substitute(body, {slot: first + i}) for i in range(2)]
    return _statement(*lanes)


__all__ = ["paired_body"]
