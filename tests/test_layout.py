"""The shape of the library: layers, no import cycles, modules and functions a reader can hold.

The import graph is read from the source with `ast` (imports inside functions
count too: a lazy import that dodges a cycle is still a cycle).
"""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 700, 80
# a lower layer imports nothing from a higher one
LAYERS = {"topopt.ad": ("topopt.ad",),
          "topopt.fem": ("topopt.ad", "topopt.fem", "topopt._validate")}


def _modules() -> dict:
    mods = {}
    for folder, _, files in os.walk(os.path.join(ROOT, "topopt")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                mods[dotted.removesuffix(".__init__")] = path
    return mods


MODULES = _modules()
TREES = {m: ast.parse(open(p).read()) for m, p in MODULES.items()}


def _known(name: str) -> str | None:
    """The topopt module `name` names, or the package holding it."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _targets(module: str, node) -> list:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = module.split(".")
        if not MODULES[module].endswith("__init__.py"):
            base = base[:-1]
        prefix = (".".join(base[:len(base) - node.level + 1] + [node.module or ""]).rstrip(".")
                  if node.level else node.module)
        names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES else prefix
                 for a in node.names]
    return [t for t in map(_known, names) if t and t != module]


def import_graph() -> dict:
    return {m: {t for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for t in _targets(m, node)}
            for m, tree in TREES.items()}


def cycles(graph: dict) -> list:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, found = {}, {}, [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(part) > 1:
                found.append(sorted(part))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_is_read():
    graph = import_graph()
    assert "topopt.ad.core" in graph["topopt.ad.api"]
    assert "topopt.fem" in graph["topopt.formulations.compliance"]


def test_no_import_cycles():
    assert cycles(import_graph()) == []


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_lower_layers_import_nothing_from_higher_ones(layer):
    bad = [(m, t) for m, targets in import_graph().items() if m.startswith(layer)
           for t in targets if not t.startswith(LAYERS[layer])]
    assert bad == []


def test_modules_and_functions_are_short():
    long_modules = [(m, n) for m, p in MODULES.items()
                    if (n := len(open(p).read().splitlines())) > MAX_MODULE_LINES]
    long_functions = [(m, node.name, node.end_lineno - node.lineno + 1)
                      for m, tree in TREES.items() for node in ast.walk(tree)
                      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert long_modules == [] and long_functions == []
