"""Rules of shape functions, indexing and scatter.

reshape, ravel, squeeze, expand_dims, atleast_1d, transpose, swapaxes,
broadcast_to, concatenate, stack, ``x[idx]`` (`core.getitem`), `scatter_add`
and ``x.astype`` (`core.astype`). A memory order (``order='F'``, ``'A'``,
``'K'``) is resolved once from the layout of the primal value, and the
pullback and the tangent use the same concrete order.
"""

from __future__ import annotations

import numpy as np

from .callforms import callform, lifting
from .coerce import _lift_all
from .core import NoRuleError, _dtype, _shape, astype, getitem, value
from .extend import frule, primitive, rrule, thunk
from .rulekit import _axes, _filled, _named, _unbroadcast


def _order(fun, x, order):
    """The concrete index order ('C' or 'F') numpy uses for `order` on `x`."""
    if order in ("C", "F"):
        return order
    v = value(x)
    layout = np.asarray(v).flags if isinstance(v, np.ndarray) else None
    if order == "A":
        return "F" if layout is not None and layout.f_contiguous and not layout.c_contiguous \
            else "C"
    if order == "K":
        if layout is None or layout.c_contiguous:
            return "C"
        if layout.f_contiguous:
            return "F"
        strides = [st for st, n in zip(v.strides, v.shape) if n > 1]
        if all(st > 0 for st in strides):
            if strides == sorted(strides, reverse=True):
                return "C"
            if strides == sorted(strides):
                return "F"
    raise NoRuleError(f"no differentiation rule for {fun} with order={order!r} on an array "
                      "whose memory order is neither C nor Fortran; pass order='C' or 'F'")


callform(np.reshape, 1, ("shape", "order", "copy"))
callform(np.ravel, 1, ("order",))


@rrule(np.reshape)
def reshape_rrule(x, shape, order="C", copy=None):
    sx, o = _shape(x), _order("numpy.reshape", x, order)

    def reshape_pullback(ybar):
        return (np.reshape(ybar, sx, order=o),)
    return np.reshape(x, shape, order=o, copy=copy), reshape_pullback


@frule(np.reshape)
def reshape_frule(primals, tangents, shape, order="C", copy=None):
    o = _order("numpy.reshape", primals[0], order)
    return (np.reshape(primals[0], shape, order=o, copy=copy),
            np.reshape(tangents[0], shape, order=o))


@rrule(np.ravel)
def ravel_rrule(x, order="C"):
    sx, o = _shape(x), _order("numpy.ravel", x, order)

    def ravel_pullback(ybar):
        return (np.reshape(ybar, sx, order=o),)
    return np.ravel(x, order=o), ravel_pullback


@frule(np.ravel)
def ravel_frule(primals, tangents, order="C"):
    o = _order("numpy.ravel", primals[0], order)
    return np.ravel(primals[0], order=o), np.ravel(tangents[0], order=o)


def _reshaping(fun):
    """Rules of a function that only inserts or removes axes of length one."""
    name = fun.__name__

    @rrule(fun)
    def reshaping_rrule(x, **named):
        shape = _shape(x)

        def pullback(ybar):
            return (np.reshape(ybar, shape),)
        return fun(x, **named), _named(pullback, f"{name}_pullback")

    @frule(fun)
    def reshaping_frule(primals, tangents, **named):
        return fun(primals[0], **named), fun(tangents[0], **named)


callform(np.squeeze, 1, ("axis",))
callform(np.expand_dims, 1, ("axis",))
for _fun in (np.squeeze, np.expand_dims):
    _reshaping(_fun)


lifting(getitem, "a-")
lifting(astype, "a-")


def _atleast(fun):
    """Rules of `np.atleast_1d` / `_2d` / `_3d`: reshapes of each argument."""
    lifting(fun, _lift_all)

    @rrule(fun)
    def atleast_rrule(*arys):
        shapes = [_shape(a) for a in arys]
        y = fun(*arys)

        def atleast_pullback(ybar):
            if len(arys) == 1:
                return (np.reshape(ybar, shapes[0]),)
            return tuple(None if g is None else np.reshape(g, s) for g, s in zip(ybar, shapes))
        return (tuple(y) if len(arys) > 1 else y), atleast_pullback

    @frule(fun)
    def atleast_frule(primals, tangents):
        y = fun(*primals)
        ydot = [None if t is None else np.reshape(fun(t), _shape(v)) for t, v in
                zip(tangents, y if len(primals) > 1 else [y])]
        return (tuple(y), tuple(ydot)) if len(primals) > 1 else (y, ydot[0])


for _fun in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
    _atleast(_fun)


callform(np.transpose, 1, ("axes",))
callform(np.swapaxes, 1, ("axis1", "axis2"))
callform(np.broadcast_to, 1, ("shape",))


def _transpose_axes(x, axes):
    nd = len(_shape(x))
    if axes is None:
        return tuple(range(nd))[::-1]
    axes = _axes(axes, nd)
    if sorted(axes) != list(range(nd)):
        raise ValueError(f"axes {axes} don't match an array of {nd} dimensions")
    return axes


@rrule(np.transpose)
def transpose_rrule(x, axes=None):
    axes = _transpose_axes(x, axes)
    inverse = tuple(int(i) for i in np.argsort(axes))

    def transpose_pullback(ybar):
        return (np.transpose(ybar, inverse),)
    return np.transpose(x, axes), transpose_pullback


@frule(np.transpose)
def transpose_frule(primals, tangents, axes=None):
    axes = _transpose_axes(primals[0], axes)
    return np.transpose(primals[0], axes), np.transpose(tangents[0], axes)


@rrule(np.swapaxes)
def swapaxes_rrule(x, axis1, axis2):
    def swapaxes_pullback(ybar):
        return (np.swapaxes(ybar, axis1, axis2),)
    return np.swapaxes(x, axis1, axis2), swapaxes_pullback


@frule(np.swapaxes)
def swapaxes_frule(primals, tangents, axis1, axis2):
    return np.swapaxes(primals[0], axis1, axis2), np.swapaxes(tangents[0], axis1, axis2)


@rrule(np.broadcast_to)
def broadcast_to_rrule(x, shape):
    sx = _shape(x)

    def broadcast_to_pullback(ybar):
        return (_unbroadcast(ybar, sx),)
    return np.broadcast_to(x, shape), broadcast_to_pullback


@frule(np.broadcast_to)
def broadcast_to_frule(primals, tangents, shape):
    return np.broadcast_to(primals[0], shape), np.broadcast_to(tangents[0], shape)


def _joining(fun):
    """Call form of concatenate/stack: `dtype` a cast, one array its sequence of rows."""
    def rewrite(arrays, axis=0, dtype=None):
        if type(arrays) not in (list, tuple):
            arrays = list(arrays)
        elif dtype is None and not (fun is np.concatenate and axis is None):
            return NotImplemented
        if dtype is not None:
            arrays = [astype(a, np.dtype(dtype)) if not isinstance(a, np.ndarray)
                      else a.astype(dtype) for a in arrays]
        if fun is np.concatenate and axis is None:
            arrays, axis = [np.ravel(a) for a in arrays], 0
        return fun(arrays, axis=axis)
    callform(fun, 1, ("axis", "dtype"), rewrite=rewrite, lift="s")


_joining(np.concatenate)
_joining(np.stack)


def _pieces(arrays, pieces):
    """Cotangents of the joined arrays: a tuple, or stacked for one array of rows."""
    return pieces if type(arrays) in (list, tuple) else np.stack(pieces)


@rrule(np.concatenate)
def concatenate_rrule(arrays, axis=0):
    ends = np.cumsum([_shape(a)[axis] for a in arrays])
    starts = np.concatenate([[0], ends[:-1]])
    ax = _axes(axis, len(_shape(arrays[0])))[0]

    def concatenate_pullback(ybar):
        return (_pieces(arrays, tuple(getitem(ybar, (slice(None),) * ax + (slice(int(s), int(e)),))
                                      for s, e in zip(starts, ends))),)
    return np.concatenate(arrays, axis), concatenate_pullback


@frule(np.concatenate)
def concatenate_frule(primals, tangents, axis=0):
    arrays = primals[0]
    return (np.concatenate(arrays, axis),
            np.concatenate(_filled(tangents[0], arrays), axis))


@rrule(np.stack)
def stack_rrule(arrays, axis=0):
    ax = _axes(axis, len(_shape(arrays[0])) + 1)[0]

    def stack_pullback(ybar):
        return (_pieces(arrays, tuple(getitem(ybar, (slice(None),) * ax + (i,))
                                      for i in range(len(arrays)))),)
    return np.stack(arrays, axis), stack_pullback


@frule(np.stack)
def stack_frule(primals, tangents, axis=0):
    arrays = primals[0]
    return np.stack(arrays, axis), np.stack(_filled(tangents[0], arrays), axis)


# ----------------------------------------------------- indexing and scatter

def _basic(idx) -> bool:
    items = idx if isinstance(idx, tuple) else (idx,)
    return all(isinstance(i, (int, np.integer, slice)) or i is None or i is Ellipsis
               for i in items)


@primitive
def scatter_add(x, idx, v):
    """``x`` with ``v`` added at ``x[idx]``, repeated indices summed.

    The functional form of ``np.add.at`` (JAX's ``x.at[idx].add(v)``), the
    transpose of indexing; negative indices count from the end as in
    ``x[idx]``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> ad.scatter_add(np.zeros(3), np.array([0, 2, 0, -1]), np.ones(4))
    array([2., 0., 2.])
    """
    x, v = np.asarray(x), np.asarray(v)
    out = np.array(x, dtype=np.result_type(x, v), copy=True)
    if _basic(idx):
        out[idx] += v
    elif out.ndim == 1 and isinstance(idx, np.ndarray) and idx.dtype.kind in "iu":
        n = out.shape[0]
        flat = idx.ravel()
        if flat.size and (flat.min() < -n or flat.max() >= n):
            raise IndexError(f"index out of bounds for an axis of size {n}")
        flat = np.where(flat < 0, flat + n, flat)
        w = np.broadcast_to(v, idx.shape).ravel()
        out += np.bincount(flat, np.real(w), n)
        if np.iscomplexobj(w):
            out += 1j * np.bincount(flat, np.imag(w), n)
    else:
        np.add.at(out, idx, v)
    return out


lifting(scatter_add, "a-a")


@rrule(scatter_add)
def scatter_add_rrule(x, idx, v):
    sv = _shape(v)

    def scatter_add_pullback(ybar):
        return ybar, None, thunk(lambda: _unbroadcast(getitem(ybar, idx), sv))
    return scatter_add(x, idx, v), scatter_add_pullback


@frule(scatter_add)
def scatter_add_frule(primals, tangents):
    x, idx, v = primals
    xdot, _, vdot = tangents
    y = scatter_add(x, idx, v)
    if vdot is None:
        return y, xdot
    base = np.zeros(_shape(y), np.result_type(_dtype(vdot), np.float64)) if xdot is None else xdot
    return y, scatter_add(base, idx, vdot)


@rrule(getitem)
def getitem_rrule(x, idx):
    shape, dtype = _shape(x), _dtype(x)

    def getitem_pullback(ybar):
        zeros = np.zeros(shape, np.result_type(dtype, _dtype(ybar)))
        return scatter_add(zeros, idx, ybar), None
    return getitem(x, idx), getitem_pullback


@frule(getitem)
def getitem_frule(primals, tangents):
    x, idx = primals
    return getitem(x, idx), getitem(tangents[0], idx)


@rrule(astype)
def astype_rrule(x, dtype):
    xdtype = _dtype(x)

    def astype_pullback(ybar):
        if xdtype.kind != "c":
            ybar = np.real(ybar)
        return astype(ybar, xdtype), None
    return astype(x, dtype), astype_pullback


@frule(astype)
def astype_frule(primals, tangents):
    return astype(*primals), astype(tangents[0], primals[1])
