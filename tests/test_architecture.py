"""The package's import structure, read from the source: layers import only downward (the order is the one
``docs/architecture.md`` states), no circles but the two operator pairs, no pass imports another, the simulator reads
IR conventions only, the device helpers import ``ir``, ``hw`` and below only, and no module takes a ``_private`` name
from another.

The passes are not listed here: they are the ``tirx_layout.*`` passes of the pipeline ``tirx_layout_pipeline()``
builds, each found in the module whose source registers it (``prim_func_pass(..., name="tirx_layout.X")`` and the
like). A pass is that module, or the largest package around it that registers no other pass (``infer_layouts/``
counts with its submodules)."""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "tirx_layout"
ARCHITECTURE = ROOT / "docs" / "architecture.md"

#: The only circles allowed: ``value @ axis`` needs the spec from the axis, and CuTe composition with a swizzle
#: needs the algebra from the swizzle (each edge back is a function-local import at call time).
ALLOWED_CIRCLES = [
    {"tirx_layout.layout.axis", "tirx_layout.layout.spec"},
    {"tirx_layout.cute.algebra", "tirx_layout.cute.swizzle"},
]
#: The TVM functions that register a pass; the pass's name is their ``name`` argument (the third positional one).
PASS_REGISTRARS = ("prim_func_pass", "module_pass", "function_pass")
PASS_NAME_POSITION = 2
#: Every pass the package registers is named so (how the pipeline's passes are told from TVM's own).
PASS_PREFIX = "tirx_layout."
#: Passes the package registers that the ``"tirx_layout"`` pipeline does not run, and why.
OUTSIDE_THE_PIPELINE = {
    "tirx_layout.RequireLayoutPipeline": "the guard ``pipeline.register`` puts in front of TVM's other TIR pipelines",
}
#: A module named like a pass (``lower_*``, ``*_pass``) that is no pass misleads its reader; the ones allowed, and why.
NAMED_LIKE_A_PASS: dict[str, str] = {}
#: What the simulator may import from the package: IR conventions (and itself). Its hardware models are its own.
SIMULATOR_MAY_IMPORT = ("ir", "sim")
#: What the device helpers (``ops/helpers``) may import: the IR naming, the hardware facts and what lies below them.
HELPERS_MAY_IMPORT = ("core", "layout", "hw", "cute", "ir")


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module
    names: tuple[str, ...]  # names taken from it ("from target import names"); empty for "import target"
    local: bool  # inside a function


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(source: str, is_package: bool, level: int, target: str | None) -> str:
    base = source.split(".") if is_package else source.split(".")[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, *([target] if target else [])])


def imports(known: dict[str, Path]) -> list[Import]:
    """Every import of a package module into another (module-level and function-local)."""
    found = []
    for name, path in known.items():
        tree = ast.parse(path.read_text())
        is_package = path.name == "__init__.py"
        local = {
            id(n)
            for f in ast.walk(tree)
            if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
            for n in ast.walk(f)
            if isinstance(n, ast.Import | ast.ImportFrom)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("tirx_layout"):
                        found.append(Import(name, alias.name, (), id(node) in local))
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(name, is_package, node.level, node.module) if node.level else node.module or ""
                if not target.startswith("tirx_layout"):
                    continue
                for alias in node.names:
                    # "from package import submodule" imports the submodule, not a name of the package.
                    submodule = f"{target}.{alias.name}"
                    if submodule in known:
                        found.append(Import(name, submodule, (), id(node) in local))
                    else:
                        found.append(Import(name, target, (alias.name,), id(node) in local))
    return [i for i in found if i.target in known and i.target != i.source]


def layer_order() -> list[str]:
    """The layers, lowest first, as ``docs/architecture.md`` states them (a line ``core < layout < ...``)."""
    match = re.search(r"`((?:\w+ < )+\w+)`", ARCHITECTURE.read_text())
    assert match, "docs/architecture.md states the layer order as `core < layout < ...`"
    return match.group(1).split(" < ")


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "facade"


def circles(edges: list[Import]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.source, set()).add(e.target)
        graph.setdefault(e.target, set())
    index, low, stack, on_stack, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _called(func: ast.expr) -> str | None:
    """The name a call or decorator calls: ``prim_func_pass`` of ``tvm.tirx.transform.prim_func_pass``."""
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def registrations(known: dict[str, Path]) -> list[tuple[str, str | None]]:
    """``(module, pass name)`` for every pass registration in the package's source: a call of one of
    ``PASS_REGISTRARS`` (decorator or not). The name is ``None`` where it is not a string literal, or not given
    (TVM then names the pass after the function): a pass this test cannot name is one it cannot check."""
    found = []
    for module, path in known.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and _called(node.func) in PASS_REGISTRARS:
                name = next((k.value for k in node.keywords if k.arg == "name"), None)
                if name is None and len(node.args) > PASS_NAME_POSITION:
                    name = node.args[PASS_NAME_POSITION]
                literal = isinstance(name, ast.Constant) and isinstance(name.value, str)
                found.append((module, name.value if literal else None))
            elif isinstance(node, ast.FunctionDef | ast.ClassDef):  # a bare ``@prim_func_pass``: no name given
                found += [(module, None) for d in node.decorator_list if _called(d) in PASS_REGISTRARS]
    return found


@functools.cache
def pipeline_passes() -> tuple[str, ...]:
    """Our passes in the ``"tirx_layout"`` pipeline, in order (nested ``Sequential``s read through)."""
    import tvm

    from tirx_layout.transform.pipeline import tirx_layout_pipeline

    def leaves(p):
        return [n for q in p.passes for n in leaves(q)] if isinstance(p, tvm.transform.Sequential) else [p.info.name]

    passes, _, _ = tirx_layout_pipeline()
    return tuple(n for n in leaves(passes) if n.startswith(PASS_PREFIX))


def within(module: str, unit: str) -> bool:
    return module == unit or module.startswith(unit + ".")


def pass_units(registered: list[tuple[str, str | None]], pipeline: tuple[str, ...]) -> dict[str, str]:
    """Each pass of ``pipeline`` -> the module that registers it, or the largest package around that module (below
    its layer's folder) that registers no other pass. (A pass registered nowhere has none: a test says so.)"""
    units = {}
    for name in pipeline:
        registering = [m for m, n in registered if n == name]
        if not registering:
            continue
        unit = registering[0]
        while (parent := unit.rpartition(".")[0]).count(".") >= 2 and {
            n for m, n in registered if within(m, parent)
        } == {name}:
            unit = parent
        units[name] = unit
    return units


KNOWN = modules()
EDGES = imports(KNOWN)
REGISTERED = registrations(KNOWN)


def test_the_graph_is_read():
    assert len(KNOWN) > 60 and len(EDGES) > 150
    assert (
        Import("tirx_layout.transform.lower_tile_ops", "tirx_layout.ops.context", ("LoweringContext",), False) in EDGES
    )


def test_layers_import_only_downward():
    order = layer_order()
    assert order[0] == "core" and "transform" in order and "sim" in order
    assert {layer(m) for m in KNOWN} - {"facade"} == set(order), "every package folder is a layer of the doc's order"

    def rank(module):  # the facade (tirx_layout/__init__) sits above every layer
        return len(order) if layer(module) == "facade" else order.index(layer(module))

    upward = [f"{e.source} -> {e.target}" for e in EDGES if rank(e.target) > rank(e.source)]
    assert upward == []


def test_no_circles_but_the_operator_pairs():
    assert [c for c in circles(EDGES) if c not in ALLOWED_CIRCLES] == []


def test_every_pass_the_package_registers_is_named_tirx_layout():
    unnamed = [f"{m}: {n!r}" for m, n in REGISTERED if n is None or not n.startswith(PASS_PREFIX)]
    assert unnamed == [], f'register each pass with a literal name="{PASS_PREFIX}<Pass>"'


def test_each_pass_of_the_pipeline_is_registered_in_one_module_of_its_own():
    pipeline = pipeline_passes()
    assert len(pipeline) > 1, "the pipeline's passes are read"
    where = {name: [m for m, n in REGISTERED if n == name] for name in pipeline}
    assert {name: modules for name, modules in where.items() if len(modules) != 1} == {}
    units = pass_units(REGISTERED, pipeline)
    shared = {u: [n for n in units if units[n] == u] for u in units.values() if list(units.values()).count(u) > 1}
    assert shared == {}, "one pass per module"


def test_every_pass_the_package_registers_runs_in_the_pipeline_or_says_why_not():
    registered = {n for _, n in REGISTERED if n is not None}
    absent = registered - set(pipeline_passes())
    assert absent - set(OUTSIDE_THE_PIPELINE) == set(), "add each to the pipeline, or to OUTSIDE_THE_PIPELINE"
    assert set(OUTSIDE_THE_PIPELINE) - absent == set(), "not registered, or in the pipeline: not an exception"


def test_no_pass_imports_another():
    units = set(pass_units(REGISTERED, pipeline_passes()).values())

    def pass_of(module):
        return next((u for u in units if within(module, u)), None)

    crossing = [
        f"{e.source} -> {e.target}"
        for e in EDGES
        if pass_of(e.source) and pass_of(e.target) and pass_of(e.source) != pass_of(e.target)
    ]
    assert crossing == [], "what two passes share belongs in a module both import (as copy_plan and tmem/ are)"


def test_only_passes_are_named_like_one():
    units = pass_units(REGISTERED, pipeline_passes()).values()
    named = {m for m in KNOWN if re.fullmatch(r"lower_\w+|\w+_pass(es)?", m.rpartition(".")[2])}
    misleading = {m for m in named if not any(within(m, u) for u in units)}
    assert misleading - set(NAMED_LIKE_A_PASS) == set(), "rename them, or add them to NAMED_LIKE_A_PASS with the reason"
    assert set(NAMED_LIKE_A_PASS) - misleading == set(), "no longer named like a pass, or a pass now: not an exception"


def test_the_simulator_reads_ir_conventions_only():
    reached = {layer(e.target) for e in EDGES if layer(e.source) == "sim"}
    assert reached <= set(SIMULATOR_MAY_IMPORT), reached


def test_the_device_helpers_import_ir_hw_and_below_only():
    helpers = "tirx_layout.ops.helpers"
    sources = {e.source for e in EDGES if e.source.startswith(helpers)}
    assert {f"{helpers}.{family}" for family in ("mbarrier", "tma", "sync", "tcgen05", "wgmma")} <= sources
    reached = {
        e.target
        for e in EDGES
        if e.source.startswith(helpers)
        and not e.target.startswith(helpers)
        and layer(e.target) not in HELPERS_MAY_IMPORT
    }
    assert reached == set()


def test_no_module_takes_a_private_name_from_another():
    private = [f"{e.source} imports {n} from {e.target}" for e in EDGES for n in e.names if n.startswith("_")]
    assert private == []


@pytest.mark.parametrize("circle", ALLOWED_CIRCLES, ids=lambda c: " <-> ".join(sorted(c)))
def test_the_allowed_circles_close_only_at_call_time(circle):
    back = [e for e in EDGES if e.source in circle and e.target in circle and e.local]
    assert len(back) == 1, "one edge of each allowed circle is a function-local import"
