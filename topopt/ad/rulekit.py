"""Helpers shared by the rule modules: broadcasting, conjugation, axes.

Rules never mutate cotangents; a helper that returns its argument (or a
read-only view of it) relies on that.
"""

from __future__ import annotations

import numpy as np

from .core import _dtype, _shape, value

__all__ = ["_conj", "_is_unit", "_scaled", "_unbroadcast", "_named", "_add", "_safe",
           "_axes", "_kept_shape", "_expand", "_mT", "_filled"]


def _conj(z):
    return np.conj(z) if _dtype(z).kind == "c" else z


def _is_unit(g) -> bool:
    """True for a plain array of ones broadcast from one value (a sum's cotangent)."""
    return (type(g) is np.ndarray and g.size > 0 and not any(g.strides)
            and g.dtype.kind == "f" and g.flat[0] == 1.0)


def _scaled(ybar, c, shape):
    """``ybar * c`` summed to `shape`; `c` itself, read-only, when `ybar` is all ones.

    Skipping the product saves a pass over memory in the reverse pass of
    ``sum(f(x))``. Rules never mutate cotangents, and the API copies
    read-only cotangents before handing them to the user. An integer or
    boolean `c` is multiplied out (a cotangent is float or complex).
    """
    if (_is_unit(ybar) and type(c) is np.ndarray and c.dtype.kind in "fc"
            and c.shape == ybar.shape == tuple(shape)):
        view = c.view()
        view.flags.writeable = False
        return view
    return _unbroadcast(ybar * c, shape)


def _unbroadcast(g, shape):
    """Sum `g` over the axes that broadcasting added to an array of `shape`."""
    gshape = _shape(g)
    if gshape == tuple(shape):
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and gshape[lead + i] != 1)
    if axes:
        g = np.sum(g, axis=axes)
    return np.reshape(g, shape)


def _named(fun, name):
    fun.__name__ = fun.__qualname__ = name
    return fun


def _add(a, b):
    if a is None:
        return b
    return a if b is None else a + b


def _safe(y):
    return np.where(value(y) == 0, 1.0, y)


def _axes(axis, ndim):
    """`axis` (None, an int or a sequence, negative counting from the end) as a tuple."""
    if axis is None:
        return tuple(range(ndim))
    axis = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    for a in axis:
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
    return tuple(int(a) % ndim if ndim else 0 for a in axis)


def _axis(axis, nd, name):
    """One `axis` of an `nd`-dimensional array as 0..nd-1; `name` (``"numpy.roll"``) is
    the function the AxisError names."""
    a = int(axis)
    if not -nd <= a < nd:
        raise np.exceptions.AxisError(f"{name}: axis {a} is out of bounds for an array of "
                                      f"dimension {nd}")
    return a % nd


def _kept_shape(shape, axis, keepdims=False):
    axes = _axes(axis, len(shape))
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _expand(ybar, shape, axis):
    """Broadcast the cotangent of a reduction back to the input `shape`."""
    if _shape(ybar) != shape:
        ybar = np.reshape(ybar, _kept_shape(shape, axis))
    return np.broadcast_to(ybar, shape)


def _mT(a):
    """Conjugate transpose of the last two axes (sparse matrices too)."""
    if hasattr(a, "tocsr"):
        return a.conj().T if a.dtype.kind == "c" else a.T
    a = _conj(a)
    return a.T if len(_shape(a)) == 2 else np.swapaxes(a, -1, -2)


def _filled(tangents, primals):
    return [np.zeros(_shape(p), _dtype(p)) if t is None else t
            for t, p in zip(tangents, primals)]
