"""Nested containers ("trees"): flatten to a list of leaves, rebuild from one.

A *tree* is a tuple, list, dict or named tuple of trees, or a *leaf*:
anything else (an array, a traced value, a number, ``None``, a string, a
subclass of list or dict...). The containers are those exact types; a named
tuple keeps its type and fields, a dict its keys in insertion order.

`flatten` returns the leaves in a fixed order and a `TreeDef` that
`unflatten` fills with new leaves; `TreeDef.paths` gives each leaf's key path
(``tree[k0][k1]...``). The differentiation core walks arguments, outputs and
cotangents with these functions only.

Examples
--------
>>> from topopt.ad import tree
>>> leaves, treedef = tree.flatten((1.0, [2.0, {"a": 3.0}]))
>>> leaves
[1.0, 2.0, 3.0]
>>> treedef.paths()
[(0,), (1, 0), (1, 1, 'a')]
>>> tree.unflatten(treedef, [10, 20, 30])
(10, [20, {'a': 30}])
>>> tree.map(lambda v: 2 * v, {"x": (1, 2)})
{'x': (2, 4)}
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["TreeDef", "flatten", "unflatten", "unflatten_sparse", "flatten_as", "leaves", "walk",
           "map", "rebuild", "is_container"]


def is_container(x) -> bool:
    """True if `x` is a tuple, list, dict or named tuple (a node, not a leaf)."""
    t = type(x)
    return t is tuple or t is list or t is dict or (isinstance(x, tuple) and
                                                     hasattr(t, "_fields"))


class TreeDef:
    """The structure of a tree: its container types and keys, its leaf count.

    ``kind`` is ``None`` for a leaf, else the container type; ``keys`` holds
    a dict's keys; ``children`` the `TreeDef` of each item.
    """

    __slots__ = ("kind", "keys", "children", "num_leaves")

    def __init__(self, kind, keys, children: tuple, num_leaves: int):
        self.kind = kind
        self.keys = keys
        self.children = children
        self.num_leaves = num_leaves

    def __eq__(self, other) -> bool:
        return (isinstance(other, TreeDef) and self.kind is other.kind
                and self.keys == other.keys and self.children == other.children)

    def __hash__(self) -> int:
        return hash((self.kind, self.keys, self.children))

    def __repr__(self) -> str:
        if self.kind is None:
            return "*"
        if self.kind is dict:
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.keys, self.children)) + "}"
        inner = ", ".join(repr(c) for c in self.children)
        return f"[{inner}]" if self.kind is list else f"{self.kind.__name__}({inner})"

    def paths(self) -> list:
        """The key path of every leaf, in the order of `flatten`: ``[(k0, k1, ...), ...]``."""
        if self.kind is None:
            return [()]
        keys = self.keys if self.kind is dict else range(len(self.children))
        return [(k,) + p for k, c in zip(keys, self.children) for p in c.paths()]


LEAF = TreeDef(None, None, (), 1)


def _flatten_into(x, out: list) -> TreeDef:
    t = type(x)
    start = len(out)
    if t is tuple or t is list or (isinstance(x, tuple) and hasattr(t, "_fields")):
        children = tuple([_flatten_into(c, out) for c in x])
        keys = None
    elif t is dict:
        keys = tuple(x)
        children = tuple([_flatten_into(x[k], out) for k in keys])
    else:
        out.append(x)
        return LEAF
    return TreeDef(t, keys, children, len(out) - start)


def flatten(tree) -> tuple[list, TreeDef]:
    """The leaves of `tree` (depth first, items in order) and its structure."""
    out: list = []
    treedef = _flatten_into(tree, out)
    return out, treedef


def _leaves_into(x, out: list) -> None:
    t = type(x)
    if t is tuple or t is list or (isinstance(x, tuple) and hasattr(t, "_fields")):
        for c in x:
            _leaves_into(c, out)
    elif t is dict:
        for c in x.values():
            _leaves_into(c, out)
    else:
        out.append(x)


def leaves(tree) -> list:
    """The leaves of `tree` in the order of `flatten` (without building its structure)."""
    out: list = []
    _leaves_into(tree, out)
    return out


def walk(tree):
    """Every subtree of `tree` depth first, the root first: containers and leaves.

    >>> list(walk((1, [2])))
    [(1, [2]), 1, [2], 2]
    """
    yield tree
    t = type(tree)
    if t is tuple or t is list or (isinstance(tree, tuple) and hasattr(t, "_fields")):
        for c in tree:
            yield from walk(c)
    elif t is dict:
        for c in tree.values():
            yield from walk(c)


def rebuild(like: tuple, items) -> tuple:
    """`items` as a tuple of `like`'s type: a named tuple keeps its type and fields."""
    return type(like)(*items) if hasattr(type(like), "_fields") else tuple(items)


def _build(treedef: TreeDef, it):
    kind = treedef.kind
    if kind is None:
        return next(it)
    return _rebuild(treedef, [_build(c, it) for c in treedef.children])


def _rebuild(treedef: TreeDef, items: list):
    kind = treedef.kind
    if kind is dict:
        return dict(zip(treedef.keys, items))
    if kind is list:
        return items
    return tuple(items) if kind is tuple else kind(*items)   # a named tuple keeps its fields


def _counted(treedef: TreeDef, leaves) -> list:
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"unflatten: the structure {treedef!r} has {treedef.num_leaves} "
                         f"leaves, got {len(leaves)}")
    return leaves


def unflatten(treedef: TreeDef, leaves) -> Any:
    """The tree of structure `treedef` with `leaves` (as many as it has)."""
    leaves = _counted(treedef, leaves)
    return _build(treedef, iter(leaves))


def _build_sparse(treedef: TreeDef, it):
    if treedef.kind is None:
        return next(it)
    items = [_build_sparse(c, it) for c in treedef.children]
    if all(v is None for v in items):
        return None
    return _rebuild(treedef, items)


def unflatten_sparse(treedef: TreeDef, leaves) -> Any:
    """As `unflatten`, but a container (below the top) whose leaves are all None is None.

    This is the form of tangents and cotangents: ``None`` is the zero of a
    whole subtree.

    Examples
    --------
    >>> from topopt.ad import tree
    >>> _, treedef = tree.flatten((1.0, [2.0, [3.0]], [4.0]))
    >>> tree.unflatten_sparse(treedef, [None, 5.0, None, None])
    (None, [5.0, None], None)
    """
    leaves = _counted(treedef, leaves)
    if treedef.kind is None:
        return leaves[0]
    it = iter(leaves)
    return _rebuild(treedef, [_build_sparse(c, it) for c in treedef.children])


def _as_into(treedef: TreeDef, x, out: list, where: str) -> None:
    kind = treedef.kind
    if kind is None:
        out.append(x)
    elif x is None:
        out.extend([None] * treedef.num_leaves)
    elif kind is dict:
        if type(x) is not dict or set(x) != set(treedef.keys):
            raise ValueError(f"{where} must have the structure {treedef!r}, got {x!r}")
        for k, c in zip(treedef.keys, treedef.children):
            _as_into(c, x[k], out, where)
    else:
        if not isinstance(x, (tuple, list)) or len(x) != len(treedef.children):
            raise ValueError(f"{where} must have the structure {treedef!r}, got {x!r}")
        for c, xi in zip(treedef.children, x):
            _as_into(c, xi, out, where)


def flatten_as(treedef: TreeDef, tree, where: str = "the tree") -> list:
    """The leaves of `tree` read with the structure `treedef`.

    A sequence may stand for a tuple, list or named tuple of the same length,
    a dict must have the same keys (in any order), and ``None`` stands for a
    whole subtree of ``None`` leaves (the zero cotangent). Whatever sits at a
    leaf of `treedef` is one leaf. Raises ``ValueError`` naming `where` if the
    structures differ.

    Examples
    --------
    >>> from topopt.ad import tree
    >>> _, treedef = tree.flatten((1.0, {"a": 2.0, "b": 3.0}))
    >>> tree.flatten_as(treedef, [5.0, {"b": 7.0, "a": 6.0}])
    [5.0, 6.0, 7.0]
    >>> tree.flatten_as(treedef, (5.0, None))
    [5.0, None, None]
    """
    out: list = []
    _as_into(treedef, tree, out, where)
    return out


def map(fun: Callable, tree, *rest):
    """`tree` with every leaf ``v`` replaced by ``fun(v, *(r's leaf))`` for `rest` trees.

    The trees in `rest` are read with `tree`'s structure (see `flatten_as`).
    """
    if not rest and not is_container(tree):
        return fun(tree)
    values, treedef = flatten(tree)
    others = [flatten_as(treedef, r, "each tree") for r in rest]
    return unflatten(treedef, [fun(*vs) for vs in zip(values, *others)])
