"""Operands at the boundary: Python sequences made arrays, casts without a derivative.

numpy reads a list or tuple where it wants an array (``x * [1., 2.]``,
``np.dot(x, (1, 2))``, ``np.hstack([x, [x[0], 1.]])``). `_lift` does the
same once, in `core.apply`, before any rule runs: a sequence of constants
becomes ``np.asarray(seq)``; a sequence holding traced values (nested
lists, traced 0-d values mixed with floats) becomes ``np.stack`` of its
items, a traced operation, so every mode (reverse, forward, hvp, nested)
sees one traced array. Which arguments numpy reads as arrays is declared per
function (`REGISTRY.lifts`, written by `callforms.lifting`): ``"a"`` an
array, ``"s"`` a sequence of arrays (`np.concatenate`), ``"-"`` left as it
is (an index, a dtype); a ufunc reads all its inputs as arrays. Functions
without a declaration (user primitives) see their arguments as given.

A ``dtype=`` of integer, boolean or another non-numeric kind makes a result
without derivative (piecewise constant): `_drops_derivative` tells `apply` to
call numpy on the plain values, so the value, and any refusal of the cast,
is numpy's own.

Examples
--------
>>> import numpy as np
>>> from topopt import ad
>>> ad.gradient(lambda x: np.sum(x * [1.0, 2.0, -3.0]), np.ones(3))
array([ 1.,  2., -3.])
>>> ad.gradient(lambda x: np.sum(x.astype(int) * 1.0) + np.sum(x), np.array([0.3, 1.7]))
array([1., 1.])
"""

from __future__ import annotations

import numpy as np

from . import core, tree
from .core import _no_derivative_dtype
from .registry import REGISTRY
from .registry import function_name as _name

__all__: list = []

_SEQ = (list, tuple)


def _requested_dtype(form, args, kwargs):
    if "dtype" in kwargs:
        return kwargs["dtype"]
    if form is not None and "dtype" in form.positional:
        i = form.positional.index("dtype")
        if i < len(args):
            return args[i]
    return None


def _drops_derivative(fun, form, args, kwargs) -> bool:
    """True if the call asks for a ``dtype=`` whose result has no derivative."""
    dtype = _requested_dtype(form, args, kwargs)
    if dtype is None or isinstance(dtype, core.Box):
        return False
    return _no_derivative_dtype(dtype, f"{_name(fun)}(..., dtype={np.dtype(dtype).name})")


def _holds_box(v) -> bool:
    return any(isinstance(leaf, core.Box) for leaf in tree.leaves(v))


def _array(v):
    """`v` as numpy reads an array argument: a sequence becomes an array."""
    if type(v) not in _SEQ:
        return v
    if not _holds_box(v):
        return np.asarray(v)
    items = [_array(item) for item in v]
    return np.stack(items)          # traced: recorded, every mode


def _arrays(v):
    """A sequence of arrays, each item read as an array."""
    if type(v) not in _SEQ:
        return v
    items = [_array(item) for item in v]
    return v if all(a is b for a, b in zip(items, v)) else type(v)(items)


_LIFT = {"a": _array, "s": _arrays}


def _spec(fun, form):
    spec = REGISTRY.lifts.get(fun)
    if spec is not None:
        return spec
    if isinstance(fun, np.ufunc):
        return "a" * fun.nin
    return "a" * form.ndata if form is not None else None


def _lift(fun, form, args: tuple) -> tuple:
    """`args` with each argument numpy reads as an array lifted (`args` itself if none is)."""
    spec = _spec(fun, form)
    if spec is None:
        return args
    if callable(spec):
        return spec(args)
    out = list(args)
    for i, kind in enumerate(spec[:len(args)]):
        if kind in _LIFT and type(args[i]) in _SEQ:
            out[i] = _LIFT[kind](args[i])
    return tuple(out) if any(a is not b for a, b in zip(out, args)) else args


def _lift_einsum(args: tuple) -> tuple:
    """The operands of `np.einsum` lifted: after the subscripts, or every other one
    in the interleaved form ``einsum(a, [0, 1], b, [1], [0])``."""
    if args and isinstance(args[0], str):
        return args[:1] + tuple(_array(a) for a in args[1:])
    n = len(args)
    return tuple(_array(a) if k % 2 == 0 and k < n - n % 2 else a for k, a in enumerate(args))


def _lift_all(args: tuple) -> tuple:
    """Every argument read as an array (`np.atleast_1d(*arys)`)."""
    return tuple(_array(a) for a in args)


REGISTRY.lift_args = _lift
REGISTRY.drops_derivative = _drops_derivative
