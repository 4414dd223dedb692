"""One import path per name: no import circle among the files of ``topopt/``, no re-exports.

The file-level import graph is `test_layout.import_graph`: one node per file
of ``topopt/`` (a package is its ``__init__.py``), an edge for every import
the file makes, relative or absolute, at module level or inside a function,
and for ``importlib.import_module("topopt.x")`` with a literal name. The
edge goes to the file imported (``from ..fem.system import solve`` ->
``topopt.fem.system``; ``from ..fem import Model`` -> ``topopt.fem``, the
package's ``__init__.py``). The implicit import of a file's parent packages
is not an edge: ``topopt/__init__.py`` imports its subpackages, so with it
every file would sit in a circle with it.
"""

import ast

import pytest

from test_layout import MODULES, TREES, cycles, import_graph


def cycle_path(graph: dict, component) -> list:
    """One circle ``[a, b, ..., a]`` through the modules of a strongly connected `component`."""
    inside, start = set(component), sorted(component)[0]
    path, seen = [start], {start}

    def walk(v):
        for w in sorted(graph[v] & inside):
            if w == start:
                return path + [start]
            if w not in seen:
                seen.add(w)
                path.append(w)
                if found := walk(w):
                    return found
                path.pop()
        return None

    return walk(start)


def test_cycle_path_names_the_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert [cycle_path(graph, c) for c in cycles(graph)] == [["a", "b", "c", "a"]]


def test_no_import_circle_among_files():
    graph = import_graph()
    circles = [" -> ".join(cycle_path(graph, c)) for c in cycles(graph)]
    assert not circles, "import circles:\n" + "\n".join(circles)


def _top_level(tree) -> list:
    """The statements run on import: the module's body and what its ``if``/``try``/``with``
    blocks hold (not the bodies of functions and classes)."""
    found, todo = [], list(tree.body)
    while todo:
        node = todo.pop(0)
        found.append(node)
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            todo += node.body + node.orelse + getattr(node, "finalbody", [])
            todo += [s for h in getattr(node, "handlers", []) for s in h.body]
    return found


def _is_module(module: str, node: ast.ImportFrom, name: str) -> bool:
    """``from . import shapes``: the name is a file or package of topopt (imported for its
    effect, registering rules; a module has its own import path)."""
    base = module.split(".")
    if not MODULES[module].endswith("__init__.py"):
        base = base[:-1]
    prefix = (".".join(base[:len(base) - node.level + 1] + [node.module or ""]).rstrip(".")
              if node.level else node.module)
    return f"{prefix}.{name}" in MODULES


def re_exports(module: str, tree) -> list:
    """The ways `module` serves names of other modules (see `test_no_module_re_exports`)."""
    found, imported, top = [], {}, _top_level(tree)
    for node in top:
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            for alias in node.names:
                if alias.name == "*":
                    found.append(f"line {node.lineno}: from {'.' * node.level}"
                                 f"{node.module or ''} import *")
                elif not _is_module(module, node, alias.name):
                    imported[alias.asname or alias.name] = node.lineno
        elif isinstance(node, ast.FunctionDef) and node.name in ("__getattr__", "__dir__"):
            found.append(f"line {node.lineno}: module {node.name} (PEP 562)")
    listed = [elt.value for node in top if isinstance(node, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
              for elt in ast.walk(node.value) if isinstance(elt, ast.Constant)]
    found += [f"__all__ lists {name!r}, imported on line {imported[name]}"
              for name in listed if name in imported]
    reads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    kept = {id(n) for node in top if isinstance(node, ast.Assign)
            and all(isinstance(t, ast.Name) and t.id not in reads and t.id not in listed
                    for t in node.targets)
            for n in ast.walk(node.value)}
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load) and id(n) not in kept}
    found += [f"line {line}: imports {name!r} and never uses it"
              for name, line in imported.items() if name not in used and name not in listed]
    return found


def test_re_export_finder_finds_each_kind():
    source = ("from __future__ import annotations\nfrom .a import *\nfrom .b import x, y, z\n"
              "_KEPT = (x,)\n__all__ = ['f', 'y']\n\ndef f():\n    return z\n\n"
              "def __getattr__(name):\n    return name\n")
    assert re_exports("topopt.ad.core", ast.parse(source)) == [
        "line 2: from .a import *", "line 10: module __getattr__ (PEP 562)",
        "__all__ lists 'y', imported on line 3", "line 3: imports 'x' and never uses it"]
    assert re_exports("topopt.ad.core", ast.parse("from . import api\nimport numpy as np\n")) == []


@pytest.mark.parametrize("module", sorted(m for m, p in MODULES.items()
                                          if not p.endswith("__init__.py")))
def test_no_module_re_exports(module):
    """Each name has one import path: the module that defines it, or its package.

    Rule. A file of ``topopt/`` other than a package's ``__init__.py`` (which
    gathers its package's names; ``topopt/__init__.py`` gathers the main
    ones) does not serve names that another module defines. It fails when it

    1. star-imports (``from m import *``);
    2. lists in ``__all__`` a name that it binds by an import;
    3. imports a name at module level (in its body or the ``if``/``try``/
       ``with`` blocks there) that its own code never reads; a read inside the
       value of a module-level assignment whose name the module never reads
       and ``__all__`` does not list (a keep-alive such as ``_MOVED = (a, b)``)
       does not count. Importing a file or package of topopt as a module
       (``from . import shapes``, for the rules it registers) binds no other
       module's names and is allowed, as is ``import numpy as np``;
    4. defines a module ``__getattr__`` or ``__dir__`` (PEP 562), which
       serves names looked up at run time.
    """
    assert re_exports(module, TREES[module]) == []
