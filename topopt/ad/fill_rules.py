"""Functions computed by traced operations: full_like, take, diagonal, compress,
append, diag, average, pad, astype.

Each has a call form whose rewrite handles every traced call (``always``):
``np.full_like(a, fill)`` is ``zeros + fill`` (the derivative flows through
the fill value, none through the template `a`), and `take`, `diagonal` and
`compress` are indexing (`core.getitem`), `append` a concatenation and
`diag` a diagonal or a scatter (`scatter_add`), `pad` indexing of the padded
index grid (a traced constant fills the rest), so every mode comes from the
rules of those operations. A result of an integer or boolean dtype has no
derivative and is numpy's own.

Examples
--------
>>> import numpy as np
>>> from topopt import ad
>>> ad.gradient(lambda x: np.sum(np.full_like(x, x[0]) * x), np.array([2.0, 3.0]))
array([7., 2.])
"""

from __future__ import annotations

import numpy as np

from .callforms import callform
from .coerce import _no_derivative_dtype
from .core import NoRuleError, _dtype, _shape, astype, getitem, is_traced, value
from .rulekit import _axes
from .shapes import scatter_add

__all__: list = []


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, device=None):
    options = {"dtype": dtype, "order": order, "subok": subok, "shape": shape}
    dt = np.dtype(dtype) if dtype is not None else _dtype(a)
    if not is_traced(fill_value) or _no_derivative_dtype(dt, "numpy.full_like"):
        return np.full_like(value(a), value(fill_value), **options)
    if shape is None:
        shape = _shape(a)
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
    try:
        fits = np.broadcast_shapes(_shape(fill_value), shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"numpy.full_like: could not broadcast the fill value of shape "
                         f"{_shape(fill_value)} into shape {shape}")
    if _dtype(fill_value) != dt:
        fill_value = astype(fill_value, dt)
    return np.zeros(shape, dt) + fill_value


callform(np.full_like, 2, ("dtype", "order", "subok", "shape"), rewrite=_full_like, always=True)


def _take(a, indices, axis=None, mode="raise"):
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"numpy.take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    if axis is None:
        a, ax = np.ravel(a), 0
    else:
        ax = _axes(axis, len(_shape(a)))[0]
    n = _shape(a)[ax]
    idx = np.asarray(value(indices))
    if idx.dtype.kind not in "iu":
        raise TypeError(f"numpy.take: indices must be integers, got dtype {idx.dtype}")
    if mode == "wrap":
        idx = np.mod(idx, n)
    elif mode == "clip":
        idx = np.clip(idx, 0, n - 1)
    elif idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"numpy.take: index {int(idx.max() if idx.max() >= n else idx.min())} "
                         f"is out of bounds for axis {ax} with size {n}")
    return getitem(a, (slice(None),) * ax + (idx,))


callform(np.take, 1, ("indices", "axis", "mode"), rewrite=_take, always=True)


def _diagonal(a, offset=0, axis1=0, axis2=1):
    nd = len(_shape(a))
    if nd < 2:
        raise ValueError("numpy.diagonal: the array must have at least 2 dimensions")
    ax1, ax2 = _axes((axis1, axis2), nd)
    if ax1 == ax2:
        raise ValueError("numpy.diagonal: axis1 and axis2 cannot be the same")
    moved = np.moveaxis(a, (ax1, ax2), (-2, -1))
    rows, cols = _shape(moved)[-2:]
    offset = int(offset)
    k = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    i = np.arange(k) - min(offset, 0)
    return getitem(moved, (Ellipsis, i, i + offset))


callform(np.diagonal, 1, ("offset", "axis1", "axis2"), rewrite=_diagonal, always=True)


def _compress(condition, a, axis=None):
    cond = np.asarray(value(condition))
    if cond.ndim != 1:
        raise ValueError("numpy.compress: condition must be a 1-d array")
    if axis is None:
        a, ax = np.ravel(a), 0
    else:
        ax = _axes(axis, len(_shape(a)))[0]
    idx = np.flatnonzero(cond)
    if idx.size and idx[-1] >= _shape(a)[ax]:
        raise IndexError(f"numpy.compress: index {int(idx[-1])} is out of bounds for axis "
                         f"{ax} with size {_shape(a)[ax]}")
    return getitem(a, (slice(None),) * ax + (idx,))


callform(np.compress, 2, ("axis",), rewrite=_compress, always=True)


def _append(arr, values, axis=None):
    if axis is None:
        return np.concatenate([np.ravel(arr), np.ravel(values)])
    return np.concatenate([arr, values], axis=axis)


callform(np.append, 2, ("axis",), rewrite=_append, always=True)


def _diag(v, k=0):
    shape = _shape(v)
    if len(shape) == 2:
        return _diagonal(v, k)
    if len(shape) != 1:
        raise ValueError(f"numpy.diag: the input must be 1-d or 2-d, got shape {shape}")
    k, n = int(k), shape[0]
    m = n + abs(k)
    i = np.arange(n) + max(-k, 0)
    zeros = np.zeros((m, m), np.result_type(_dtype(v), np.float64))
    return scatter_add(zeros, (i, i + k), v)


callform(np.diag, 1, ("k",), rewrite=_diag, always=True)


def _average(a, axis=None, weights=None, returned=False, keepdims=False):
    if weights is None:
        avg = np.mean(a, axis=axis, keepdims=keepdims)
        scl = np.full(_shape(avg), np.prod(_shape(a)) / max(np.prod(_shape(avg)), 1))
        return (avg, scl) if returned else avg
    shape, wshape = _shape(a), _shape(weights)
    if wshape != shape:
        if axis is None:
            raise TypeError("numpy.average: axis must be specified when the shapes of a "
                            f"{shape} and weights {wshape} differ")
        ax = _axes(axis, len(shape))
        if len(ax) != 1 or len(wshape) != 1 or wshape[0] != shape[ax[0]]:
            raise ValueError(f"numpy.average: weights of shape {wshape} must be 1-d of the "
                             f"length of a's axis {axis} (a has shape {shape})")
        weights = np.reshape(weights, tuple(-1 if i == ax[0] else 1 for i in range(len(shape))))
    scl = np.sum(np.broadcast_to(weights, np.broadcast_shapes(_shape(weights), shape))
                 if wshape != shape else weights, axis=axis, keepdims=keepdims)
    if np.any(value(scl) == 0):
        raise ZeroDivisionError("numpy.average: weights sum to zero, can't be normalized")
    avg = np.sum(a * weights, axis=axis, keepdims=keepdims) / scl
    return (avg, np.broadcast_to(scl, _shape(avg)) + 0.0) if returned else avg


# a, axis, weights by position (weights may be traced); axis is not read as an array
callform(np.average, 3, ("returned", "keepdims"), rewrite=_average, always=True, lift="a-a")


_PAD_INDEXED = ("constant", "edge", "reflect", "symmetric", "wrap")


def _pad(array, pad_width, mode=None, constant_values=None, reflect_type=None,
         stat_length=None, end_values=None):
    """`np.pad` as indexing: numpy pads the index grid, the values follow it."""
    mode = "constant" if mode is None else mode
    if reflect_type not in (None, "even"):
        raise NoRuleError(f"no differentiation rule for numpy.pad with reflect_type="
                          f"{reflect_type!r}; the rule supports reflect_type='even'")
    if mode not in _PAD_INDEXED:
        raise NoRuleError(f"no differentiation rule for numpy.pad with mode={mode!r}; the "
                          f"rule supports mode={', '.join(map(repr, _PAD_INDEXED))}")
    shape = _shape(array)
    grid = np.arange(int(np.prod(shape)), dtype=np.intp).reshape(shape)
    if mode != "constant":
        return getitem(np.ravel(array), np.pad(grid, pad_width, mode))
    index = np.pad(grid, pad_width, "constant", constant_values=-1)
    inside = index >= 0
    taken = getitem(np.ravel(array), np.where(inside, index, 0))
    if constant_values is None or not is_traced(constant_values):
        fill = np.pad(np.zeros(shape), pad_width, "constant",
                      constant_values=0 if constant_values is None else value(constant_values))
    elif np.ndim(value(constant_values)) == 0:
        fill = constant_values
    else:
        raise NoRuleError("no differentiation rule for numpy.pad with traced per-axis "
                          "constant_values; pass one traced scalar or constant pairs")
    return np.where(inside, taken, fill)


# numpy.pad(array, pad_width, mode='constant', **kwargs): constant_values may be traced
callform(np.pad, 4, ("reflect_type", "stat_length", "end_values"), rewrite=_pad, always=True,
         lift="a--a", params=("array", "pad_width", "mode", "constant_values", "reflect_type",
                              "stat_length", "end_values"))


def _astype(x, dtype, copy=True, device=None):
    if device not in (None, "cpu"):
        raise ValueError(f"numpy.astype: device must be 'cpu', got {device!r}")
    return x.astype(dtype)      # a traced value's astype (numpy's casting rules)


callform(np.astype, 1, ("dtype", "copy", "device"), rewrite=_astype, always=True)
