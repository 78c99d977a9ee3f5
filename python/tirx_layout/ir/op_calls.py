"""How a call of one of our tile ops rides in TIR: an ``Evaluate`` of a ``tvm.ir.Call`` whose op is registered as
``tirx_layout.<name>`` (opaque to TVM's passes, printed as ``T.<name>``), with named arguments.

A TIR call has positional arguments only, so the names travel in the arguments themselves: the op's required
arguments come first, in order, then each other argument that was given as a pair ``"name", value``. An argument
left at its default is not written at all, so a call reads as it was written::

    T.tile_copy(B[0:4, 0:8], A[0:4, 0:8], "scope", "warp")

The TVMScript printer shows the pairs as keywords (``script/printing.py``), ``scope="warp"``; either spelling parses
back to the same call. The values stay ordinary TIR expressions, so every TVM pass that rewrites expressions
(substituting a loop variable, simplifying) reaches them; a ``StringImm`` name is left alone by all of them.

What each op's arguments mean is its spec's business (``tirx_layout.ops``); this module only knows the encoding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import tvm
import tvm_ffi
from tvm import tirx

#: Every op of ours is registered with TVM under this prefix.
OP_PREFIX = "tirx_layout."


def register_op(name: str, description: str) -> tvm.ir.Op:
    """Register our TIR op ``tirx_layout.<name>`` once (opaque to TVM's passes, printed as ``T.<name>``) and return
    it.

    Example:
        >>> register_op("tile_copy", "copy a tile between two buffer regions").name
        'tirx_layout.tile_copy'
    """
    full = OP_PREFIX + name
    if full not in tvm_ffi.get_global_func("ir.ListOpNames")():
        tvm_ffi.get_global_func("ir.RegisterOp")(full, description)
        tvm.ir.register_op_attr(full, "TCallEffectKind", int(tvm.tirx.CallEffectKind.Opaque.value))
        tvm.ir.register_op_attr(full, "TScriptPrinterName", name)
    return tvm.ir.Op.get(full)


def full_region(buffer):
    """``buffer[0:e0, 0:e1, ...]`` as a region.

    Example:
        >>> import tvm
        >>> full_region(tvm.tirx.decl_buffer((4, 8), "float32", "A"))
        A[0:4, 0:8]
    """
    return buffer[tuple(slice(0, extent) for extent in buffer.shape)]


def op_call(op: tvm.ir.Op, required: Sequence, named: Mapping[str, object]) -> tvm.ir.Call:
    """The call of ``op`` with its ``required`` arguments and the ``named`` ones (already TIR values), each written as
    a ``"name", value`` pair after them, in the order given.

    Example:
        >>> import tvm
        >>> A = tvm.tirx.decl_buffer((4, 8), "float32", "A")
        >>> op_call(register_op("tile_copy", ""), [A[0:4, 0:8], A[0:4, 0:8]], {"scope": tvm.ir.StringImm("warp")})
        T.tile_copy(A[0:4, 0:8], A[0:4, 0:8], "scope", "warp")
    """
    args = list(required)
    for name, value in named.items():
        args += [tvm.ir.StringImm(name), value]
    return tvm.ir.Call(op, args, ret_ty="void")


@dataclass(frozen=True)
class OpArguments:
    """What a call of one of our ops carries: the op's name without the prefix (``"tile_copy"``), its leading
    arguments (the required ones; the caller knows how many) and the rest as pairs, by name."""

    name: str
    args: tuple
    call: tvm.ir.Call

    def split(self, required: int) -> tuple[tuple, dict]:
        """The ``required`` leading arguments and the named ones after them (``name -> value``); ``ValueError`` when
        what follows is not a sequence of ``"name", value`` pairs.

        Example:
            >>> import tvm
            >>> A = tvm.tirx.decl_buffer((4,), "float32", "A")
            >>> call = op_call(register_op("tile_copy", ""), [A[0:4], A[0:4]], {"scope": tvm.ir.StringImm("warp")})
            >>> read_op_call(call).split(2)
            ((A[0:4], A[0:4]), {'scope': "warp"})
        """
        if len(self.args) < required:
            raise ValueError(f"T.{self.name} has {len(self.args)} arguments, fewer than its {required} required ones")
        rest = self.args[required:]
        names = rest[0::2]
        if len(rest) % 2 or not all(isinstance(n, tvm.ir.StringImm) for n in names):
            raise ValueError(
                f'T.{self.name}: after its {required} required arguments come "name", value pairs; got {list(rest)}'
            )
        named = {str(n.value): v for n, v in zip(names, rest[1::2], strict=True)}
        if len(named) != len(names):
            raise ValueError(f"T.{self.name} names an argument twice: {[str(n.value) for n in names]}")
        return tuple(self.args[:required]), named


def read_op_call(node) -> OpArguments | None:
    """The arguments of a call of one of our ops (an ``Evaluate`` of it, or the call itself), else ``None``.

    Example:
        >>> import tvm
        >>> read_op_call(tvm.tirx.Evaluate(0)) is None
        True
    """
    value = node.value if isinstance(node, tirx.Evaluate) else node
    if not isinstance(value, tvm.ir.Call):
        return None
    name = getattr(value.op, "name", "")
    if not name.startswith(OP_PREFIX):
        return None
    return OpArguments(name[len(OP_PREFIX) :], tuple(value.args), value)
