"""The CTA's threads as a kernel defines them: ``T.thread_id``, or ``T.warpgroup_id`` / ``T.warp_id`` /
``T.lane_id`` (``ScopeIdDef`` statements), combined into one CTA-wide thread index."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import tvm
from tvm import tirx

from ..hw.threads import CTA_LEVELS, LEVEL_THREADS
from .rewrite import walk


def _scope_pairs() -> dict[int, tuple[str, str]]:
    """``ScopeIdDef.scope`` (an enum value) -> the ``(parent, child)`` levels, asked of TVM's own constructor for
    every pair of levels inside a CTA, so the table cannot drift from the TVM in use."""
    probe = tirx.Var("probe", "int32")
    pairs = {}
    for parent, child in itertools.combinations(CTA_LEVELS, 2):
        definition = tirx.ScopeIdDef([probe], [1], parent, child)
        pairs[int(definition.scope)] = (parent, child)
    return pairs


_SCOPE_PAIRS = _scope_pairs()


@dataclass
class Threads:
    """The CTA-wide thread index (an expression over the kernel's thread id variables) and the thread count."""

    index: object
    count: int
    bounds: dict  # var -> extent, for simplification


def defined_scopes(func) -> dict[tuple[str, str], tuple[object, int, dict]]:
    """Every thread-level definition of ``func`` inside the CTA: ``(parent, child)`` -> (the index it defines, over
    its variables row-major; its extent; each variable's extent).

    Example: a kernel with ``warp = T.warp_id([2])`` and ``lane = T.lane_id([32])`` gives
    ``{("cta", "warp"): (warp, 2, {warp: 2}), ("warp", "thread"): (lane, 32, {lane: 32})}``.
    """
    defined = {}

    def on_def(stmt):
        definition = getattr(stmt, "def")
        pair = _SCOPE_PAIRS.get(int(definition.scope))
        if pair is None:
            return
        index, extent = 0, 1
        for var, e in zip(definition.def_ids, definition.extents, strict=True):
            index = index * int(e) + var
            extent *= int(e)
        defined[pair] = (
            index,
            extent,
            {var: int(e) for var, e in zip(definition.def_ids, definition.extents, strict=True)},
        )

    walk(func.body, [(tirx.ScopeIdDefStmt, on_def)])
    return defined


def cta_threads(func) -> Threads:
    """The CTA-wide thread index and thread count of a kernel, from its ``T.thread_id`` or ``T.warpgroup_id`` /
    ``T.warp_id`` / ``T.lane_id`` definitions (``warp * 32 + lane``, for instance).

    Example:
        >>> import tvm, tirx_layout
        >>> func = tvm.script.from_source('''
        ... @T.prim_func
        ... def k(A: T.Buffer((64,), "float32")):
        ...     T.device_entry()
        ...     warp = T.warp_id([2])
        ...     lane = T.lane_id([32])
        ...     A[warp * 32 + lane] = T.float32(0)
        ... ''')
        >>> threads = cta_threads(func)
        >>> threads.index, threads.count
        (warp * 32 + lane, 64)
    """
    defined = defined_scopes(func)
    bounds = {var: e for _, _, of in defined.values() for var, e in of.items()}
    level, index, count = "cta", None, None
    while level != "thread":
        finer = [child for child in CTA_LEVELS[CTA_LEVELS.index(level) + 1 :] if (level, child) in defined]
        if not finer:
            raise ValueError(
                f"the kernel does not define its threads below the {level} level "
                "(write T.thread_id([n]), or T.warp_id([w]) with T.lane_id([32]))"
            )
        child = finer[-1] if (level, "thread") in defined else finer[0]
        var_index, extent, _ = defined[(level, child)]
        unit = LEVEL_THREADS[child]
        term = var_index * unit if unit > 1 else var_index
        index = term if index is None else index + term
        if count is None:
            count = extent * unit
        level = child
    return Threads(index, count, bounds)


def bind_threads(analyzer: tvm.sym.Analyzer, threads: Threads) -> tvm.sym.Analyzer:
    """``analyzer`` told the range of every thread variable of ``threads`` (so it simplifies thread arithmetic).

    Example: ``bind_threads(tvm.sym.Analyzer(), cta_threads(func))``.
    """
    for var, extent in threads.bounds.items():
        analyzer.bind(var, tvm.ir.Range(0, extent))
    return analyzer


def _scope_enum(parent: str, child: str) -> int:
    probe = tirx.Var("probe", "int32")
    return int(tirx.ScopeIdDef([probe], [1], parent, child).scope)


#: ``ScopeIdDef.scope`` of ``T.cta_id`` (the grid in CTAs) and of ``T.cta_id_in_cluster`` (the cluster's shape).
_GRID_SCOPE, _CLUSTER_SCOPE = _scope_enum("kernel", "cta"), _scope_enum("cluster", "cta")


def cluster_launch(func) -> tuple[tuple | None, tuple | None]:
    """The grid (``T.cta_id([...])``, in CTAs, x first) and the cluster shape (``T.cta_id_in_cluster([...])``) a
    kernel declares, each ``None`` where it declares none; an extent that is not a constant reads as ``None``.

    Example:
        >>> import tvm, tirx_layout
        >>> func = tvm.script.from_source('''
        ... @T.prim_func
        ... def k(A: T.Buffer((64,), "float32")):
        ...     T.device_entry()
        ...     bx = T.cta_id([4])
        ...     cx = T.cta_id_in_cluster([2])
        ...     tx = T.thread_id([16])
        ...     A[bx * 16 + tx] = T.float32(0)
        ... ''')
        >>> cluster_launch(func)
        ((4,), (2,))
    """
    found = {}

    def on_def(stmt):
        definition = getattr(stmt, "def")
        scope = int(definition.scope)
        if scope in (_GRID_SCOPE, _CLUSTER_SCOPE) and definition.extents is not None:
            found[scope] = tuple(int(e) if isinstance(e, tirx.IntImm) else None for e in definition.extents)

    walk(func.body, [(tirx.ScopeIdDefStmt, on_def)])
    return found.get(_GRID_SCOPE), found.get(_CLUSTER_SCOPE)
