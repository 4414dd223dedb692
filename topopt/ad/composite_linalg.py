"""numpy.linalg's array-API names and tensor forms by traced operations (issue 35).

`linalg.matrix_transpose` (and `np.matrix_transpose`), `linalg.outer`,
`linalg.cross`, `linalg.trace`, `linalg.diagonal`, `linalg.vecdot`,
`linalg.matmul`, `linalg.tensordot`, `linalg.matrix_norm`,
`linalg.vector_norm`, `linalg.multi_dot`, `linalg.tensorsolve` and
`linalg.tensorinv`: each a call form whose rewrite is the function with
rules it names (`swapaxes`, `np.linalg.norm`, `solve`, `inv`, `matmul`...),
so every mode follows. `multi_dot`'s value is numpy's (its product order
rounds differently), with the derivative of the left-to-right product.

Examples
--------
>>> import numpy as np
>>> from topopt import ad
>>> ad.gradient(lambda a: np.linalg.trace(np.linalg.matrix_transpose(a) @ a),
...             np.array([[1.0, 2.0], [3.0, 4.0]]))
array([[2., 4.],
       [6., 8.]])
"""

from __future__ import annotations

import numpy as np

from .callforms import callform
from .core import _shape, value

__all__: list = []

_L = np.linalg


def _transpose(x):
    return np.swapaxes(x, -1, -2)


def _cross(a, b, axis=-1):
    if _shape(a)[axis] != 3 or _shape(b)[axis] != 3:
        raise ValueError("numpy.linalg.cross: both inputs must have size 3 along axis "
                         f"{axis}, got {_shape(a)} and {_shape(b)}")
    c = np.cross(np.moveaxis(a, axis, -1), np.moveaxis(b, axis, -1))
    return np.moveaxis(c, -1, axis)


def _vector_norm(x, axis=None, keepdims=False, ord=2):
    nd = len(_shape(x))
    axes = tuple(range(nd)) if axis is None else (
        (axis,) if np.ndim(axis) == 0 else tuple(axis))
    axes = tuple(int(a) % nd for a in axes)
    rest = tuple(a for a in range(nd) if a not in axes)
    moved = np.transpose(x, rest + axes)
    flat = np.reshape(moved, tuple(_shape(x)[a] for a in rest) + (-1,))
    y = np.linalg.norm(flat, ord, axis=-1)
    if keepdims:
        y = np.reshape(y, tuple(1 if a in axes else s for a, s in enumerate(_shape(x))))
    return y


def _multi_dot(arrays, *, out=None):
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("numpy.linalg.multi_dot: expecting at least two arrays")
    y0 = np.linalg.multi_dot([np.asarray(value(a)) for a in arrays])   # numpy's checks, value
    first, last = len(_shape(arrays[0])) == 1, len(_shape(arrays[-1])) == 1
    if first:
        arrays[0] = np.reshape(arrays[0], (1, -1))
    if last:
        arrays[-1] = np.reshape(arrays[-1], (-1, 1))
    y = arrays[0]
    for a in arrays[1:]:
        y = y @ a
    y = np.reshape(y, np.shape(y0))
    return y0 + (y - value(y))


def _tensorsolve(a, b, axes=None):
    if axes is not None:
        nd = len(_shape(a))
        order = [k for k in range(nd) if k not in [int(x) % nd for x in axes]]
        a = np.transpose(a, order + [int(x) % nd for x in axes])
    shape = _shape(a)[len(_shape(b)):]
    n = int(np.prod(shape))
    if int(np.prod(_shape(b))) != n:
        raise np.linalg.LinAlgError("numpy.linalg.tensorsolve: input arrays must satisfy "
                                    "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    x = np.linalg.solve(np.reshape(a, (n, n)), np.reshape(b, (-1,)))
    return np.reshape(x, shape)


def _tensorinv(a, ind=2):
    if ind <= 0:
        raise ValueError(f"numpy.linalg.tensorinv: ind must be > 0, got {ind}")
    shape = _shape(a)
    n = int(np.prod(shape[:ind]))
    return np.reshape(np.linalg.inv(np.reshape(a, (n, -1))), shape[ind:] + shape[:ind])


def _form(owner, name, data, accepts, rewrite, **kw):
    fun = getattr(owner, name, None)           # numpy >= 2.0 names
    if fun is not None:
        callform(fun, data, accepts, rewrite=rewrite, always=True, **kw)


_form(_L, "matrix_transpose", 1, (), _transpose)
_form(np, "matrix_transpose", 1, (), _transpose)
_form(_L, "outer", 2, (), np.outer)
_form(_L, "cross", 2, ("axis",), _cross)
_form(_L, "trace", 1, ("offset", "dtype"),
      lambda x, offset=0, dtype=None: np.trace(x, offset, -2, -1, dtype))
_form(_L, "diagonal", 1, ("offset",), lambda x, offset=0: np.diagonal(x, offset, -2, -1))
_form(_L, "vecdot", 2, ("axis",), lambda a, b, axis=-1: np.sum(np.conj(a) * b, axis=axis))
_form(_L, "matmul", 2, (), np.matmul)
_form(_L, "tensordot", 2, ("axes",), lambda a, b, axes=2: np.tensordot(a, b, axes))
_form(_L, "matrix_norm", 1, ("keepdims", "ord"),
      lambda x, keepdims=False, ord="fro": np.linalg.norm(x, ord, (-2, -1), keepdims))
_form(_L, "vector_norm", 1, ("axis", "keepdims", "ord"), _vector_norm)
_form(_L, "multi_dot", 1, (), _multi_dot, lift="s")
_form(_L, "tensorsolve", 2, ("axes",), _tensorsolve)
_form(_L, "tensorinv", 1, ("ind",), _tensorinv)
