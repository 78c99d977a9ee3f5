"""The package's import structure, read from the source: layers import only downward (the order is the one
``docs/architecture.md`` states), no circles but the two operator pairs, no pass imports another, the simulator reads
IR conventions only, the device helpers import ``ir``, ``hw`` and below only, and no module takes a ``_private`` name
from another."""

from __future__ import annotations

import ast
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
#: The passes: no one of them imports another (``pipeline`` chains them; shared code lives in modules they import).
PASSES = ("transform.infer_layouts", "transform.lower_tile_ops", "transform.lower_layout_access")
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


KNOWN = modules()
EDGES = imports(KNOWN)


def test_the_graph_is_read():
    assert len(KNOWN) > 60 and len(EDGES) > 150
    assert (
        Import("tirx_layout.transform.lower_tile_ops", "tirx_layout.transform.copy_plan", ("LayoutTables",), False)
        in EDGES
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


def test_no_pass_imports_another():
    def pass_of(module):
        rest = module.removeprefix("tirx_layout.")
        return next((p for p in PASSES if rest == p or rest.startswith(p + ".")), None)

    crossing = [
        f"{e.source} -> {e.target}"
        for e in EDGES
        if pass_of(e.source) and pass_of(e.target) and pass_of(e.source) != pass_of(e.target)
    ]
    assert crossing == []


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
