"""Traced ``ufunc.reduce``, ``ufunc.accumulate`` and ``ufunc.outer`` (issue 35).

``np.add.reduce`` / ``multiply`` / ``maximum`` / ``minimum`` are `np.sum` /
`np.prod` / `np.max` / `np.min` over ``axis`` (0 by default, as for a ufunc
method), ``np.add.accumulate`` / ``multiply`` are `np.cumsum` / `np.cumprod`,
and ``f.outer(a, b)`` of a two-argument ufunc is ``f`` of ``a`` reshaped
against ``b``: each then has the rules of those. Other methods and options
(``initial=``, ``where=``, ``reduceat``) return NotImplemented, which the
tape turns into a `NoRuleError` naming the method.

Examples
--------
>>> import numpy as np
>>> from topopt import ad
>>> ad.gradient(lambda x: np.sum(np.multiply.outer(x, x)), np.array([1.0, 2.0]))
array([6., 6.])
"""

from __future__ import annotations

import numpy as np

from .core import _shape
from .registry import REGISTRY

__all__: list = []

_REDUCE = {np.add: np.sum, np.multiply: np.prod, np.maximum: np.max, np.minimum: np.min}
_ACCUMULATE = {np.add: np.cumsum, np.multiply: np.cumprod}


def ufunc_method(ufunc, method, inputs, kwargs):
    """The traced ``ufunc.method(*inputs, **kwargs)`` by functions with rules, or
    NotImplemented."""
    kwargs = dict(kwargs)
    if method == "outer" and ufunc.nin == 2 and len(inputs) == 2 and not kwargs:
        a, b = inputs
        return ufunc(np.reshape(a, _shape(a) + (1,) * len(_shape(b))), b)
    table = {"reduce": _REDUCE, "accumulate": _ACCUMULATE}.get(method)
    if table is None or ufunc not in table or len(inputs) != 1:
        return NotImplemented
    axis = kwargs.pop("axis", 0)
    dtype = kwargs.pop("dtype", None)
    keepdims = kwargs.pop("keepdims", False) if method == "reduce" else False
    if any(v is not None for k, v in kwargs.items() if k != "out") or (
            method == "accumulate" and axis is None):
        return NotImplemented
    if method == "accumulate":
        return table[ufunc](inputs[0], axis=axis, dtype=dtype)
    return table[ufunc](inputs[0], axis=axis, dtype=dtype, keepdims=keepdims) if dtype \
        else table[ufunc](inputs[0], axis=axis, keepdims=keepdims)


REGISTRY.ufunc_methods = ufunc_method
