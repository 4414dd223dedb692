"""topopt.ad.tree (nested containers), the rule registry, and the layering of topopt.ad.

The expected leaves and key paths below follow from the definition in
topopt/ad/tree.py: containers are exactly tuple, list, dict and named tuples,
walked depth first with items in order (dicts in insertion order).
"""

import ast
import collections
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topopt import ad
from topopt.ad import tree
from topopt.ad.registry import REGISTRY, Registry

Pair = collections.namedtuple("Pair", "first second")


class Items(list):
    """A list subclass: a leaf, not a container."""


ARRAY = np.arange(3.0)
TREES = [
    # (tree, leaves, key paths)
    (1.0, [1.0], [()]),
    (None, [None], [()]),
    ("text", ["text"], [()]),
    ((), [], []),
    ({}, [], []),
    ((1, [2, 3]), [1, 2, 3], [(0,), (1, 0), (1, 1)]),
    ({"b": 1, "a": (2, None)}, [1, 2, None], [("b",), ("a", 0), ("a", 1)]),
    (Pair(ARRAY, [4, {"k": 5}]), [ARRAY, 4, 5], [(0,), (1, 0), (1, 1, "k")]),
    (np.linalg.slogdet(np.eye(2)), [1.0, 0.0], [(0,), (1,)]),
    ([Items([1, 2]), ()], [Items([1, 2])], [(0,)]),
    ([[[]], [(), [7]]], [7], [(1, 1, 0)]),
]


def _same(a, b) -> bool:
    """Equal structure, types and leaves (arrays compared by identity)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)) and tree.is_container(a):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a is b or a == b


@pytest.mark.parametrize("t, leaves, paths", TREES, ids=[repr(t)[:30] for t, _, _ in TREES])
def test_flatten_leaves_paths_and_round_trip(t, leaves, paths):
    got, treedef = tree.flatten(t)
    assert len(got) == len(leaves) == treedef.num_leaves
    assert all(g is x or g == x for g, x in zip(got, leaves))
    assert tree.leaves(t) == got
    assert treedef.paths() == paths
    assert _same(tree.unflatten(treedef, got), t)
    for leaf, path in zip(got, paths):       # each path addresses its leaf
        node = t
        for key in path:
            node = node[key]
        assert node is leaf


def test_named_tuple_keeps_type_and_fields():
    _, treedef = tree.flatten(np.linalg.slogdet(np.eye(2)))
    out = tree.unflatten(treedef, [-1.0, 2.0])
    assert type(out).__name__ == "SlogdetResult" and out.sign == -1.0 and out.logabsdet == 2.0
    assert tree.map(lambda v: v + 1, Pair(1, 2)) == Pair(2, 3)


def test_unflatten_checks_the_leaf_count():
    _, treedef = tree.flatten((1, [2, 3]))
    with pytest.raises(ValueError, match="has 3 leaves, got 2"):
        tree.unflatten(treedef, [1, 2])
    with pytest.raises(ValueError, match="has 3 leaves, got 4"):
        tree.unflatten_sparse(treedef, [1, 2, 3, 4])


def test_flatten_as_reads_a_tree_with_another_structure():
    _, treedef = tree.flatten((1.0, {"a": 2.0, "b": [3.0]}))
    assert tree.flatten_as(treedef, [5, {"b": (7,), "a": 6}]) == [5, 6, 7]
    assert tree.flatten_as(treedef, (5, None)) == [5, None, None]
    assert tree.flatten_as(treedef, None) == [None, None, None]
    assert tree.flatten_as(treedef, (np.ones(2), {"a": (1, 2), "b": [3]}))[1] == (1, 2)
    for bad in ((5,), (5, {"a": 6}), (5, {"a": 6, "b": 7}), 5, (5, {"a": 6, "c": [7]})):
        with pytest.raises(ValueError, match="the cotangent must have the structure"):
            tree.flatten_as(treedef, bad, "the cotangent")


def test_unflatten_sparse_gives_none_for_subtrees_without_values():
    _, treedef = tree.flatten(([1, [2]], {"a": 3}, 4))
    assert tree.unflatten_sparse(treedef, [None, None, None, None]) == (None, None, None)
    assert tree.unflatten_sparse(treedef, [None, 5, None, 6]) == ([None, [5]], None, 6)


def test_map_over_several_trees():
    assert tree.map(lambda a, b: a * b, {"x": (1, 2)}, {"x": [3, 4]}) == {"x": (3, 8)}
    with pytest.raises(ValueError, match="each tree must have the structure"):
        tree.map(lambda a, b: a, (1, 2), (1,))


def test_public_names():
    assert ad.tree_flatten is tree.flatten and ad.tree_unflatten is tree.unflatten
    assert ad.tree_map is tree.map and ad.tree_leaves is tree.leaves


_scalars = st.one_of(st.integers(-5, 5), st.none(), st.text(max_size=2))
_trees = st.recursive(
    _scalars,
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.lists(kids, max_size=3).map(tuple),
                           st.dictionaries(st.text(max_size=2), kids, max_size=3),
                           st.tuples(kids, kids).map(lambda p: Pair(*p))),
    max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(_trees)
def test_round_trip_property(t):
    leaves, treedef = tree.flatten(t)
    assert _same(tree.unflatten(treedef, leaves), t)
    assert len(treedef.paths()) == len(leaves) == treedef.num_leaves
    assert tree.flatten(tree.unflatten(treedef, leaves))[1] == treedef
    assert tree.flatten_as(treedef, t) == leaves


# ------------------------------------------------ differentiation through trees

def test_pullback_of_a_dict_output():
    # y = {"a": x^2, "b": (sin x, 3)}: xbar = 2 x abar + cos(x) bbar (the int gets None)
    x = np.array([0.3, -1.2])
    y, back = ad.pullback(lambda x: {"a": x ** 2, "b": (np.sin(x), 3)}, x)
    assert type(y) is dict and not ad.is_traced(y["a"]) and y["b"][1] == 3
    np.testing.assert_allclose(y["b"][0], np.sin(x))
    abar, bbar = np.array([1.0, 2.0]), np.array([-0.5, 4.0])
    xbar, = back({"b": (bbar, None), "a": abar})
    np.testing.assert_allclose(xbar, 2 * x * abar + np.cos(x) * bbar, rtol=1e-14)
    xbar, = back({"a": None, "b": None})
    np.testing.assert_array_equal(xbar, np.zeros(2))
    with pytest.raises(ValueError, match="the cotangent of the output must have"):
        back({"a": abar})


def test_jvp_and_aux_with_nested_outputs():
    x, t = np.array([0.3, -1.2]), np.array([1.0, 0.5])
    y, ydot = ad.jvp(lambda x: {"s": [np.exp(x), x.shape]}, (x,), (t,))
    np.testing.assert_allclose(ydot["s"][0], np.exp(x) * t, rtol=1e-14)
    assert ydot["s"][1] == (None,) and y["s"][1] == (2,)      # a shape is a tuple of ints
    g, aux = ad.gradient(lambda x: (np.sum(x ** 3), {"sq": [x ** 2]}), x, has_aux=True)
    np.testing.assert_allclose(g, 3 * x ** 2, rtol=1e-14)
    assert not ad.is_traced(aux["sq"][0])
    np.testing.assert_allclose(aux["sq"][0], x ** 2)


@ad.primitive
def energy(parts):
    """``sum(a * b) + sum(c^2)`` of ``parts = {"a": a, "bc": (b, c)}`` (a nested argument)."""
    return np.sum(parts["a"] * parts["bc"][0]) + np.sum(parts["bc"][1] ** 2)


CALLS = []


@ad.rrule(energy)
def energy_rrule(parts):
    a, (b, c) = parts["a"], parts["bc"]

    def energy_pullback(ybar):
        # dE/da = b, dE/db = a, dE/dc = 2c; the cotangent of `a` only when it is traced
        return ({"a": ad.thunk(lambda: CALLS.append("a") or ybar * b),
                 "bc": (ybar * a, 2 * ybar * c)},)
    return energy(parts), energy_pullback


@ad.frule(energy)
def energy_frule(primals, tangents):
    parts = primals[0]
    _, treedef = tree.flatten(parts)
    ta, tb, tc = tree.flatten_as(treedef, tangents[0])
    a, (b, c) = parts["a"], parts["bc"]
    terms = [np.sum(ta * b) if ta is not None else 0.0, np.sum(a * tb) if tb is not None else 0.0,
             np.sum(2 * c * tc) if tc is not None else 0.0]
    return energy(parts), sum(terms)


def _parts(rng):
    return {"a": rng.standard_normal(3), "bc": (rng.standard_normal(3), rng.standard_normal(2))}


def test_rule_with_a_nested_argument_checked_leaf_by_leaf():
    report = ad.check_rule(energy, _parts(np.random.default_rng(1)))
    assert sorted(report) == sorted(f"arg 0{p} {m}" for p in ("['a']", "['bc'][0]", "['bc'][1]")
                                    for m in ("reverse", "forward"))
    assert max(report.values()) < 1e-8


def test_gradient_hvp_and_nested_gradient_through_a_nested_argument():
    # E(x) = sum(x * 2x) + sum(x[:2]^2) = 2|x|^2 + |x[:2]|^2:
    # gradient 4x + 2 x[:2], Hessian 4 I + 2 P (P keeps the first two entries)
    x, v = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, -1.0])

    def f(x):
        return energy({"a": x, "bc": (2 * x, x[:2])})
    expected = 4 * x + 2 * np.array([x[0], x[1], 0.0])
    np.testing.assert_allclose(ad.gradient(f, x), expected, rtol=1e-14)
    np.testing.assert_allclose(ad.jvp(f, (x,), (v,))[1], expected @ v, rtol=1e-14)
    hv = 4 * v + 2 * np.array([v[0], v[1], 0.0])
    np.testing.assert_allclose(ad.hvp(f, x, v), hv, rtol=1e-14)
    nested = ad.gradient(lambda x: np.sum(ad.gradient(f, x) ** 2) / 2, x)  # H g
    np.testing.assert_allclose(nested, 4 * expected + 2 * expected * [1, 1, 0], rtol=1e-14)
    report = ad.check_modes(f, x, seed=2)
    assert max(report.values()) < 1e-7


def test_a_thunk_inside_a_nested_cotangent_runs_only_for_a_traced_leaf():
    rng = np.random.default_rng(3)
    parts = _parts(rng)
    CALLS.clear()
    g = ad.gradient(lambda b: energy({"a": parts["a"], "bc": (b, parts["bc"][1])}), parts["bc"][0])
    np.testing.assert_allclose(g, parts["a"], rtol=1e-14)
    assert CALLS == []
    g = ad.gradient(lambda a: energy({"a": a, "bc": parts["bc"]}), parts["a"])
    np.testing.assert_allclose(g, parts["bc"][0], rtol=1e-14)
    assert CALLS == ["a"]


def test_a_wrong_cotangent_shape_in_a_nested_argument_is_named():
    @ad.primitive
    def first(parts):
        return parts[1][0] * 1.0

    @ad.rrule(first)
    def first_rrule(parts):
        return first(parts), lambda ybar: ((None, (np.zeros(5),)),)

    with pytest.raises(ValueError, match=r"argument 0\[1, 0\] of shape \(2,\)"):
        ad.gradient(lambda x: np.sum(first((1.0, (x,)))), np.ones(2))


# ---------------------------------------------------------------- registry

def test_registry_register_lookup_remove():
    reg = Registry()

    def fun(x):
        return x

    def generic(x):
        return x, None

    def typed(x):
        return x, None

    reg.register("rrule", fun, generic)
    reg.register("rrule", fun, typed, types=Pair)
    assert reg.lookup("rrule", fun, (1.0,)) == (generic, None)
    assert reg.lookup("rrule", fun, ([Pair(1, 2)],)) == (typed, (Pair,))
    assert [t for t, _ in reg.entries("rrule", fun)] == [(Pair,), None]
    assert reg.functions("rrule") == [fun] and reg.functions("frule") == []
    assert reg.remove("rrule", fun, Pair) and not reg.remove("rrule", fun, Pair)
    assert reg.remove("rrule", fun) and reg.lookup("rrule", fun, (1.0,)) == (None, None)
    with pytest.raises(ValueError, match="kind must be one of"):
        reg.register("rule", fun, generic)
    with pytest.raises(TypeError, match="types must be a type"):
        reg.register("rrule", fun, generic, types="Pair")


def test_extension_api_writes_to_the_registry():
    def fun(x):
        return x

    handle = ad.opt_out(fun, Pair)
    assert REGISTRY.lookup("opt_out", fun, (Pair(1, 2),)) == (True, (Pair,))
    handle.remove()
    assert REGISTRY.entries("opt_out", fun) == []

    @ad.rrule(fun)
    def fun_rrule(x):
        return x, lambda ybar: (ybar,)

    assert REGISTRY.lookup("rrule", fun, (1.0,)) == (fun_rrule, None)
    ad.remove_rule(fun)
    assert REGISTRY.entries("rrule", fun) == []


# ---------------------------------------------------------------- layering

AD = pathlib.Path(ad.__file__).parent
LAYER = {"tree": 0, "registry": 1, "extend": 2, "core": 3, "api": 4, "testing": 6}


def _ad_imports(path: pathlib.Path) -> list:
    """(module imported from topopt.ad, line, inside a function?) for one module."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        outside = (isinstance(node, ast.ImportFrom) and (node.level > 1 or (
            node.module or "").startswith("topopt"))) or (isinstance(node, ast.Import) and any(
                a.name.startswith("topopt") for a in node.names))
        assert not outside, f"{path.name}:{node.lineno} imports from topopt outside topopt.ad"
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [node.module] if node.module else [a.name for a in node.names]
            out += [(n.split(".")[0], node.lineno, node.col_offset > 0) for n in names]
    return out


def test_ad_modules_import_downwards_only_and_at_the_top():
    graph = {}
    for path in AD.glob("*.py"):
        imports = _ad_imports(path)
        assert not [i for i in imports if i[2]], f"{path.name}: imports inside a function"
        graph[path.stem] = {m for m, _, _ in imports}
    for mod, deps in graph.items():
        if mod == "__init__":
            continue
        for dep in deps:           # rule modules sit between core and api
            assert LAYER.get(dep, 5) < LAYER.get(mod, 5) or (
                dep not in LAYER and mod not in LAYER), f"{mod} imports {dep}"
    seen, done = set(), set()

    def visit(mod, stack):
        assert mod not in stack, f"import cycle: {' -> '.join(stack + [mod])}"
        if mod in done:
            return
        for dep in graph.get(mod, ()):
            visit(dep, stack + [mod])
        done.add(mod)
    for mod in graph:
        visit(mod, [])


def test_ad_module_and_function_sizes():
    for path in AD.glob("*.py"):
        text = path.read_text()
        assert len(text.splitlines()) < 700, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno - node.lineno < 80, f"{path.name}: {node.name}"
