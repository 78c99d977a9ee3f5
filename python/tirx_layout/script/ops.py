"""The tile ops in TVMScript: ``T.<name>`` for every op spec of the registry (``tirx_layout.ops``), taking the op's
fields by position or by name as its signature says, and also the ``"name", value`` pairs a kernel printed without
the printer rules spells (``ir/op_calls.py``). Each function carries its spec's docstring and signature, so
``help(T.tile_copy)`` documents the op.

Example:
    >>> from tirx_layout.ops import REGISTRY
    >>> tile_copy = script_function(REGISTRY["tile_copy"])
    >>> import inspect
    >>> str(inspect.signature(tile_copy))
    "(dst, src, scope='cta')"
"""

from __future__ import annotations

from collections.abc import Callable

from tvm.tirx.script.builder.ir import register_script_namespace

from ..ops import REGISTRY, OpSpec


def script_function(spec: OpSpec) -> Callable:
    """``T.<spec.name>``: builds the op's call (:meth:`OpSpec.script`), documented as the spec is.

    Example: ``script_function(REGISTRY["tile_mma"])(acc, As, Bs, accumulate=k > 0)`` is the call
    ``T.tile_mma(acc, As, Bs, accumulate=k > 0)`` makes inside a ``@T.prim_func``.
    """

    def build(*args, **kwargs):
        return spec.script(*args, **kwargs)

    build.__name__ = build.__qualname__ = spec.name
    build.__doc__ = type(spec).__doc__
    build.__signature__ = spec.signature
    build.spec = spec
    return build


def install() -> None:
    """Register ``T.<name>`` for every op of the registry (idempotent; done on import).

    Example:
        >>> install()
        >>> from tvm.script import tirx as T
        >>> T.tile_mma_wait.spec is REGISTRY["tile_mma_wait"]
        True
    """
    for spec in REGISTRY.values():
        register_script_namespace(spec.name, script_function(spec))
