"""Stages import only downward, and no module imports itself back through others.

Read from the source with ``ast`` (nothing is imported), counting imports inside functions too:
a lazy import hides a cycle from Python, not from a reader. ``if TYPE_CHECKING:`` blocks are
left out (they never run). Importing a module also runs its packages' ``__init__``; that is not
counted as an edge, or every package would cycle through its own ``__init__``.
"""
from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "tracejit"

# Lowest first. A unit (a subpackage of tracejit, or one of its top-level modules) imports only
# units of lower layers and itself; units of one layer do not import each other.
LAYERS = [
    {"config"},
    {"ir"},
    {"tracer", "codegen"},     # tracing and code generation know nothing of each other
    {"driver"},                # jit: cache key, passes, backend choice, tiers
    {"autodiff", "debugging", "lax", "scipy", "random"},   # random: JAX's PRNG on the tracer
    {"batching"},              # vmap: built on autodiff's Transformed (jit on arrays)
    {"nn", "optim"},
    {"amp"},                   # mixed precision: may use nn and optim
    {"__init__"},              # the public API: tracejit/__init__.py
    {"demo"},                  # an application (imports tracejit itself)
]

# Cycles allowed, as frozensets of module names, each with the reason. None today.
ALLOWED_CYCLES: dict[frozenset, str] = {}


def _modules() -> dict[str, tuple[pathlib.Path, bool]]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_package)
    return out


def _runtime_nodes(tree: ast.AST):
    """Every node, less the bodies of ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                stack.extend(child.orelse)
            else:
                stack.append(child)


def _imports(name: str, path: pathlib.Path, is_package: bool, modules) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found = set()
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:       # ``from pkg import module`` imports the module
                sub = f"{target}.{a.name}"
                found.add(sub if sub in modules else target)
    return {m for m in found if m in modules and m != name}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, pkg, modules) for name, (path, pkg) in modules.items()}


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_is_read(graph):
    # a check of the parser itself: known edges, a function-level one among them
    assert "tracejit.ir.graph" in graph["tracejit.ir.printer"]
    assert "tracejit.driver.backend" in graph["tracejit.driver.jit"]
    assert "tracejit.codegen" in graph["tracejit.driver.pipeline"]


def test_no_import_cycles(graph):
    cycles = [c for c in _cycles(graph) if frozenset(c) not in ALLOWED_CYCLES]
    assert not cycles, "import cycles (function-level imports count):\n" + "\n".join(
        " <-> ".join(c) for c in cycles)


def test_every_unit_has_a_layer(graph):
    known = set().union(*LAYERS)
    missing = sorted({_unit(m) for m in graph} - known)
    assert not missing, f"place these in LAYERS: {missing}"


def test_stages_import_only_downward(graph):
    layer = {unit: i for i, units in enumerate(LAYERS) for unit in units}
    bad = []
    for module, targets in sorted(graph.items()):
        u = _unit(module)
        for t in sorted(targets):
            v = _unit(t)
            if v != u and layer.get(v, -1) >= layer.get(u, len(LAYERS)):
                bad.append(f"{module} -> {t}")
    assert not bad, "imports against the layering (" + " < ".join(
        "/".join(sorted(units)) for units in LAYERS) + "):\n" + "\n".join(bad)
