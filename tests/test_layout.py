"""The shape of the library: layers, no import cycles, modules and functions a reader can hold.

The import graph is read from the source with `ast` (imports inside
functions count too, and so does ``importlib.import_module("topopt.x")``
with a literal name: a lazy import that dodges a cycle is still a cycle;
``tests/test_imports.py`` checks it has no circle). The limits are
issue 24's: modules of at most 500 lines, classes of 250, a formulation class
of 150, a problem script of 150, no more than 8 modules at the top of
``topopt/`` besides packages, one conjugate-gradient loop, and the physics,
design, responses and the optimizer importing nothing from the command line,
the run files or the pictures.
"""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_MODULE_LINES, MAX_FUNCTION_LINES, MAX_CLASS_LINES = 500, 80, 250
MAX_FORMULATION_LINES, MAX_SCRIPT_LINES, MAX_TOP_MODULES = 150, 150, 8
# a lower layer imports nothing from a higher one
_UTILS = ("topopt._validate", "topopt._keywords", "topopt._files", "topopt._memory",
          "topopt._comm")
LAYERS = {"topopt.ad": ("topopt.ad",),
          "topopt.fem": ("topopt.ad", "topopt.fem") + _UTILS,
          "topopt.design": ("topopt.ad", "topopt.fem", "topopt.design") + _UTILS,
          "topopt.responses": ("topopt.ad", "topopt.fem", "topopt.design",
                               "topopt.responses") + _UTILS,
          "topopt.optimize": ("topopt.ad", "topopt.design", "topopt.optimize") + _UTILS,
          "topopt.grid": ("topopt.ad", "topopt.fem", "topopt.design", "topopt.grid") + _UTILS,
          "topopt.flow": ("topopt.ad", "topopt.fem", "topopt.design", "topopt.responses",
                          "topopt.flow") + _UTILS}
# what no physics, design, response or optimizer module may import
OUTER = ("topopt.cli", "topopt.io", "topopt.plot")


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


def _imported_by_name(node) -> str | None:
    """The module ``importlib.import_module("topopt.x")`` or ``__import__("topopt.x")``
    imports, when its name is a literal (an import by name is an import too)."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)):
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return node.args[0].value if name in ("import_module", "__import__") else None


def import_graph() -> dict:
    graph = {}
    for m, tree in TREES.items():
        targets = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                targets.update(_targets(m, node))
            elif (name := _imported_by_name(node)) and (known := _known(name)) and known != m:
                targets.add(known)
        graph[m] = targets
    return graph


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


def _class_lines(tree) -> list:
    return [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef)]


def test_classes_are_short():
    long = [(m, name, n) for m, tree in TREES.items() for name, n in _class_lines(tree)
            if n > MAX_CLASS_LINES]
    assert long == []


def test_formulations_hold_only_their_physics():
    long = [(m, name, n) for m, tree in TREES.items() if m.startswith("topopt.formulations.")
            and m != "topopt.formulations.base"      # the base: a class, <= MAX_CLASS_LINES
            for name, n in _class_lines(tree) if n > MAX_FORMULATION_LINES]
    assert long == []


def test_problem_scripts_read_like_a_setup_section():
    folder = os.path.join(ROOT, "problems")
    long = [(name, n) for name in sorted(os.listdir(folder)) if name.endswith(".py")
            if (n := len(open(os.path.join(folder, name)).read().splitlines())) > MAX_SCRIPT_LINES]
    assert long == []


def test_few_modules_at_the_top():
    top = [m for m, p in MODULES.items() if m.count(".") == 1 and not p.endswith("__init__.py")]
    assert len(top) <= MAX_TOP_MODULES, top


@pytest.mark.parametrize("layer", ["topopt.fem", "topopt.design", "topopt.responses",
                                   "topopt.optimize", "topopt.reliability", "topopt.robust",
                                   "topopt.formulations"])
def test_physics_imports_nothing_of_the_command_line_or_pictures(layer):
    # a formulation's run writes its folder (topopt.io, topopt.plot), never the command line
    outer = OUTER if layer != "topopt.formulations" else ("topopt.cli",)
    bad = [(m, t) for m, targets in import_graph().items() if m.startswith(layer)
           for t in targets if t.startswith(outer)]
    assert bad == []


def _cg_loops(tree) -> list:
    """Loops with a conjugate-gradient step: ``alpha = rz / pq`` and then ``alpha * p``
    (or a call given both, as ``cg_update(x, r, p, q, alpha)``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.While)):
            steps = {sub.targets[0].id for sub in ast.walk(node) if isinstance(sub, ast.Assign)
                     and isinstance(sub.targets[0], ast.Name)
                     and isinstance(sub.value, ast.BinOp) and isinstance(sub.value.op, ast.Div)}
            if any(isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Mult)
                   and isinstance(sub.left, ast.Name) and sub.left.id in steps
                   and isinstance(sub.right, ast.Name) and sub.right.id == "p"
                   for sub in ast.walk(node)) or any(
                    isinstance(sub, ast.Call) and {"p"} | steps <= {
                        a.id for a in sub.args if isinstance(a, ast.Name)}
                    for sub in ast.walk(node) if steps):
                found.append(node.lineno)
    return found


def test_one_conjugate_gradient_loop():
    assert _cg_loops(ast.parse("while r:\n    a = rz / pq\n    x += a * p\n")) == [1]
    assert _cg_loops(ast.parse("while r:\n    a = rz * pq\n    x += a * p\n")) == []
    assert _cg_loops(ast.parse("while r:\n    a = rz / pq\n    f(x, p, a)\n")) == [1]
    loops = {m: lines for m, tree in TREES.items() if (lines := _cg_loops(tree))}
    assert list(loops) == ["topopt.fem.solvers.krylov"] and len(loops["topopt.fem.solvers.krylov"]) == 1
