"""Rules for numpy reductions and scans: prod, cumsum, cumprod, diff, var, std, trace.

Each function's `CallForm` hands its rule one canonical call whatever form
the user wrote (positional or keyword arguments, negative and tuple axes);
``dtype=`` (a cast), ``where=`` of ``prod`` (masked entries count as 1) and
``correction=`` are rewritten before the rule runs, and an argument a rule
does not handle raises an error naming it. ``np.diff`` takes `prepend` and
`append` as data: traced, they get cotangents. ``var``/``std`` take
``where=`` and a constant ``mean=``; ``std`` has derivative 0 where it is 0
(a kink, like ``abs``). Pullbacks and forward rules are numpy calls, so on
traced values they are recorded again (hvp, nested gradients).

Products never divide by `x`: the derivative of ``prod`` is the product of
the *other* elements, an exclusive cumulative product from each side, and
``cumprod`` is differentiated through its log-depth (Hillis-Steele) scan
``y <- y * shift(y, s)``, ``s = 1, 2, 4, ...``, whose derivatives are products
only. Both are exact at zeros.
"""

from __future__ import annotations

import numpy as np

from .callforms import callform
from .core import _dtype, _shape, astype, getitem, is_traced, value
from .extend import frule, rrule
from .rulekit import _axes, _conj, _expand, _safe, _unbroadcast

_NOVALUE = np._NoValue

__all__: list = []


def _take(v, ax, sl):
    """``v[..., sl, ...]`` with `sl` at axis `ax` (traced when `v` is)."""
    return getitem(v, (slice(None),) * ax + (sl,))


def _pad_shape(v, ax, s):
    shape = list(_shape(v))
    shape[ax] = s
    return tuple(shape)


def _shift(v, ax, s, fill):
    """`v` moved `s` places along `ax`, the first `s` entries set to `fill`."""
    pad = np.full(_pad_shape(v, ax, s), fill, dtype=_dtype(v))
    return np.concatenate([pad, _take(v, ax, slice(None, -s))], axis=ax)


def _unshift(w, ax, s):
    """The adjoint of ``_shift(., ax, s, 0)``: `w` moved `s` places back, zeros appended."""
    pad = np.zeros(_pad_shape(w, ax, s), dtype=_dtype(w))
    return np.concatenate([_take(w, ax, slice(s, None)), pad], axis=ax)


# --------------------------------------------------------------------- prod

def _exclusive_cumprod(t):
    """``[1, t0, t0 t1, ...]`` along the last axis (one shorter product per entry)."""
    ones = np.ones(_shape(t)[:-1] + (1,), dtype=_dtype(t))
    return np.concatenate([ones, np.cumprod(t[..., :-1], axis=-1)], axis=-1)


def _others(a, axes):
    """Per entry, the product over `axes` of the other entries (no division)."""
    shape = _shape(a)
    nd, k = len(shape), len(axes)
    last = tuple(range(nd - k, nd))
    t = np.moveaxis(a, axes, last) if axes != last else a
    moved = _shape(t)
    m = int(np.prod(moved[nd - k:], dtype=int))
    if m == 0:
        return np.zeros(shape, _dtype(a))
    t = np.reshape(t, moved[:nd - k] + (m,))
    flip = (Ellipsis, slice(None, None, -1))
    o = _exclusive_cumprod(t) * getitem(_exclusive_cumprod(getitem(t, flip)), flip)
    o = np.reshape(o, moved)
    return np.moveaxis(o, last, axes) if axes != last else o


def _cast(fun, a, dtype):
    """``a.astype(dtype)`` for a ``dtype=`` argument; an integer dtype has no derivative."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "fc":
        raise TypeError(f"{fun}(..., dtype={dtype.name}) of a traced value: an integer or "
                        "boolean result has no derivative; use a float or complex dtype")
    if dtype.kind == "f" and _dtype(a).kind == "c":
        raise TypeError(f"{fun}(..., dtype={dtype.name}) of a complex traced value: numpy "
                        "discards the imaginary part at a point of its own choosing; take "
                        "np.real(x) first")
    return astype(a, dtype) if not isinstance(a, np.ndarray) else a.astype(dtype)


def _mask(fun, where, a):
    """A ``where=`` argument as a boolean array of the shape of `a`."""
    shape = _shape(a)
    if np.broadcast_shapes(np.shape(where), shape) != shape:
        raise ValueError(f"{fun}: where= of shape {np.shape(where)} does not broadcast to "
                         f"the array of shape {shape}")
    return np.broadcast_to(np.asarray(value(where), dtype=bool), shape)


def _prod_rewrite(a, axis=None, dtype=None, keepdims=False, initial=_NOVALUE, where=True):
    if dtype is None and where is True:
        return NotImplemented
    if dtype is not None:
        a = _cast("numpy.prod", a, dtype)
    if where is not True:
        a = np.where(_mask("numpy.prod", where, a), a, 1.0)  # masked entries count as 1
    return np.prod(a, axis=axis, keepdims=keepdims, initial=initial)


callform(np.prod, 1, ("axis", "dtype", "keepdims", "initial", "where"), rewrite=_prod_rewrite)


@rrule(np.prod)
def prod_rrule(a, axis=None, keepdims=False, initial=_NOVALUE):
    shape = _shape(a)
    axes = _axes(axis, len(shape))
    y = np.prod(a, axis=axis, keepdims=keepdims, initial=initial)

    def prod_pullback(ybar):
        # d prod / d a_i = initial * prod_{j != i} a_j
        abar = _expand(ybar, shape, axes) * _conj(_others(a, axes))
        return (abar if initial is _NOVALUE else abar * _conj(initial),)
    return y, prod_pullback


@frule(np.prod)
def prod_frule(primals, tangents, axis=None, keepdims=False, initial=_NOVALUE):
    (a,), (adot,) = primals, tangents
    axes = _axes(axis, len(_shape(a)))
    ydot = np.sum(_others(a, axes) * adot, axis=axes, keepdims=keepdims)
    return (np.prod(a, axis=axis, keepdims=keepdims, initial=initial),
            ydot if initial is _NOVALUE else ydot * initial)


# ------------------------------------------------------------ cumsum, cumprod

def _scan_callform(fun):
    name = f"numpy.{fun.__name__}"

    def rewrite(a, axis=None, dtype=None):
        if dtype is None:
            return NotImplemented
        return fun(_cast(name, a, dtype), axis=axis)
    callform(fun, 1, ("axis", "dtype"), rewrite=rewrite)


def _scan_axis(a, axis):
    """The scanned axis (0 of the flattened array for ``axis=None``) and the array."""
    if axis is None:
        return 0, np.reshape(a, -1)
    return _axes(axis, len(_shape(a)))[0], a


def _reverse_cumsum(g, ax):
    rev = (slice(None),) * ax + (slice(None, None, -1),)
    return getitem(np.cumsum(getitem(g, rev), axis=ax), rev)


_scan_callform(np.cumsum)


@rrule(np.cumsum)
def cumsum_rrule(a, axis=None):
    shape = _shape(a)
    ax = 0 if axis is None else _axes(axis, len(shape))[0]

    def cumsum_pullback(ybar):
        # y_k = sum_{i <= k} a_i: abar_i = sum_{k >= i} ybar_k
        return (np.reshape(_reverse_cumsum(ybar, ax), shape),)
    return np.cumsum(a, axis=axis), cumsum_pullback


@frule(np.cumsum)
def cumsum_frule(primals, tangents, axis=None):
    return np.cumsum(primals[0], axis=axis), np.cumsum(tangents[0], axis=axis)


def _scan_levels(x, ax):
    """``[(y_t, s_t)]``: the inputs of the steps ``y_{t+1} = y_t * shift(y_t, s_t)``."""
    n, levels, s, y = _shape(x)[ax], [], 1, x
    while s < n:
        levels.append((y, s))
        y = y * _shift(y, ax, s, 1)
        s *= 2
    return levels


_scan_callform(np.cumprod)


@rrule(np.cumprod)
def cumprod_rrule(a, axis=None):
    shape = _shape(a)

    def cumprod_pullback(ybar):
        ax, x = _scan_axis(a, axis)
        g = ybar
        for y_t, s in reversed(_scan_levels(x, ax)):
            # y_{t+1}[k] = y_t[k] y_t[k - s]
            g = g * _conj(_shift(y_t, ax, s, 1)) + _unshift(g * _conj(y_t), ax, s)
        return (np.reshape(g, shape),)
    return np.cumprod(a, axis=axis), cumprod_pullback


@frule(np.cumprod)
def cumprod_frule(primals, tangents, axis=None):
    ax, x = _scan_axis(primals[0], axis)
    d = _scan_axis(tangents[0], axis)[1]
    for y_t, s in _scan_levels(x, ax):
        d = d * _shift(y_t, ax, s, 1) + y_t * _shift(d, ax, s, 0)
    return np.cumprod(primals[0], axis=axis), d


# --------------------------------------------------------------------- diff

def _diff_parts(a, ax, prepend, append):
    """``(argument position, value, shape joined to a)`` of prepend, `a`, append."""
    parts = []
    for pos, v in ((3, prepend), (0, a), (4, append)):
        if v is None:
            continue
        if not is_traced(v):
            v = np.asarray(v)  # a constant list
        shape = _shape(v)
        if not shape:  # numpy: a scalar spans the other axes
            shape = _pad_shape(a, ax, 1)
        parts.append((pos, v, shape))
    return parts


# prepend/append are data: traced, they get cotangents (positional or keyword)
callform(np.diff, 5)


def _diff_adjoint(g, ax):
    """Transpose of ``x[1:] - x[:-1]`` along `ax`: ``xbar_k = g_{k-1} - g_k``."""
    z = np.zeros(_pad_shape(g, ax, 1), dtype=_dtype(g))
    return np.concatenate([z, g], axis=ax) - np.concatenate([g, z], axis=ax)


def _diff_call(a, n, axis, prepend, append):
    kw = {} if prepend is None else {"prepend": prepend}
    if append is not None:
        kw["append"] = append
    return np.diff(a, n, axis, **kw)


@rrule(np.diff)
def diff_rrule(a, n=1, axis=-1, prepend=None, append=None):
    y = _diff_call(a, n, axis, prepend, append)
    if n == 0:
        return y, lambda ybar: (ybar,)
    ax = _axes(axis, len(_shape(a)))[0]
    parts = _diff_parts(a, ax, prepend, append)

    def diff_pullback(ybar):
        g = ybar
        for _ in range(int(n)):
            g = _diff_adjoint(g, ax)
        out, start = [None] * 5, 0
        for pos, v, shape in parts:
            piece = _take(g, ax, slice(start, start + shape[ax]))
            start += shape[ax]
            out[pos] = _unbroadcast(piece, _shape(v))  # a scalar's: the sum
        return tuple(out)
    return y, diff_pullback


def _list_tangent(t, v):
    """The tangent of an argument given as a list of values (one per entry, None: zero)."""
    if type(t) not in (list, tuple):
        return t
    if all(ti is None for ti in t):
        return None
    return np.stack([np.zeros(_shape(vi), _dtype(vi)) if ti is None else ti
                     for ti, vi in zip(t, v)])


@frule(np.diff)
def diff_frule(primals, tangents, n=1, axis=-1, prepend=None, append=None):
    a = primals[0]
    n, axis, prepend, append = (tuple(primals[1:]) + (n, axis, prepend, append)[len(primals) - 1:])
    y = _diff_call(a, n, axis, prepend, append)
    if n == 0:
        return y, tangents[0]
    ax = _axes(axis, len(_shape(a)))[0]
    pieces = []
    for pos, v, shape in _diff_parts(a, ax, prepend, append):
        t = _list_tangent(tangents[pos], v) if pos < len(tangents) else None
        pieces.append(np.zeros(shape, np.result_type(_dtype(v), float)) if t is None
                      else np.broadcast_to(t, shape))
    return y, np.diff(np.concatenate(pieces, axis=ax), n, ax)


# ---------------------------------------------------------------- var, std

def _moment_callform(fun):
    name = f"numpy.{fun.__name__}"

    def rewrite(a, axis=None, dtype=None, ddof=0, keepdims=False, where=True, mean=_NOVALUE,
                correction=_NOVALUE):
        if dtype is None and correction is _NOVALUE:
            return NotImplemented
        if correction is not _NOVALUE:
            if ddof != 0:
                raise ValueError(f"{name}: ddof and correction can't be provided simultaneously")
            ddof = correction
        if dtype is not None:
            a = _cast(name, a, dtype)
        return fun(a, axis=axis, ddof=ddof, keepdims=keepdims, where=where, mean=mean)
    callform(fun, 1, ("axis", "dtype", "ddof", "keepdims", "where", "mean", "correction"),
             rewrite=rewrite)


def _centered(fun, a, axis, ddof, where, mean):
    """``(axes, x - mean, N - ddof)``, zero outside ``where``; `mean` a constant if given."""
    shape = _shape(a)
    axes = _axes(axis, len(shape))
    mask = None if where is True else _mask(fun, where, a)
    count = (np.float64(np.prod([shape[i] for i in axes])) if mask is None
             else np.sum(mask, axis=axes, keepdims=True))  # N - ddof <= 0: inf/nan as numpy
    if mean is _NOVALUE:
        masked = a if mask is None else np.where(mask, a, 0.0)
        mean = np.sum(masked, axis=axes, keepdims=True) / count
    xc = a - mean
    if mask is not None:
        xc = np.where(mask, xc, 0.0)
    return axes, xc, count - ddof


def _moment_call(fun, a, axis, ddof, keepdims, where, mean):
    kw = {"axis": axis, "ddof": ddof, "keepdims": keepdims}
    if where is not True:
        kw["where"] = where
    if mean is not _NOVALUE:
        kw["mean"] = mean
    return fun(a, **kw)


_moment_callform(np.var)
_moment_callform(np.std)


@rrule(np.var)
def var_rrule(a, axis=None, ddof=0, keepdims=False, where=True, mean=_NOVALUE):
    axes, xc, dof = _centered("numpy.var", a, axis, ddof, where, mean)
    shape = _shape(a)

    def var_pullback(ybar):
        # var = sum |x - m|^2 / (N - ddof); the variation of the mean m sums to 0
        return (_expand(np.real(ybar), shape, axes) * xc * (2.0 / dof),)
    return _moment_call(np.var, a, axis, ddof, keepdims, where, mean), var_pullback


@frule(np.var)
def var_frule(primals, tangents, axis=None, ddof=0, keepdims=False, where=True, mean=_NOVALUE):
    a, = primals
    axes, xc, dof = _centered("numpy.var", a, axis, ddof, where, mean)
    vdot = np.sum(np.real(_conj(xc) * tangents[0]) * (2.0 / dof), axis=axes, keepdims=keepdims)
    return _moment_call(np.var, a, axis, ddof, keepdims, where, mean), vdot


@rrule(np.std)
def std_rrule(a, axis=None, ddof=0, keepdims=False, where=True, mean=_NOVALUE):
    axes, xc, dof = _centered("numpy.std", a, axis, ddof, where, mean)
    shape = _shape(a)
    y = _moment_call(np.std, a, axis, ddof, keepdims, where, mean)

    def std_pullback(ybar):
        # std = sqrt(var): d std = d var / (2 std); 0 where std = 0 (a kink)
        return (_expand(np.real(ybar) / _safe(y), shape, axes) * xc * (1.0 / dof),)
    return y, std_pullback


@frule(np.std)
def std_frule(primals, tangents, axis=None, ddof=0, keepdims=False, where=True, mean=_NOVALUE):
    a, = primals
    axes, xc, dof = _centered("numpy.std", a, axis, ddof, where, mean)
    y = _moment_call(np.std, a, axis, ddof, keepdims, where, mean)
    vdot = np.sum(np.real(_conj(xc) * tangents[0]) * (1.0 / dof), axis=axes, keepdims=keepdims)
    return y, vdot / _safe(y)


# -------------------------------------------------------------------- trace

def _trace_rewrite(a, offset=0, axis1=0, axis2=1, dtype=None):
    if dtype is None:
        return NotImplemented
    return np.trace(_cast("numpy.trace", a, dtype), offset=offset, axis1=axis1, axis2=axis2)


callform(np.trace, 1, ("offset", "axis1", "axis2", "dtype"), rewrite=_trace_rewrite)


def _diagonal_mask(shape, offset, ax1, ax2):
    """Ones at ``[i, i + offset]`` of axes (`ax1`, `ax2`), shaped to broadcast on `shape`."""
    eye = np.eye(shape[ax1], shape[ax2], k=offset)
    full = [1] * len(shape)
    full[ax1], full[ax2] = shape[ax1], shape[ax2]
    return np.reshape(eye if ax1 < ax2 else eye.T, full)


@rrule(np.trace)
def trace_rrule(a, offset=0, axis1=0, axis2=1):
    shape = _shape(a)
    y = np.trace(a, offset=offset, axis1=axis1, axis2=axis2)
    ax1, ax2 = _axes((axis1, axis2), len(shape))

    def trace_pullback(ybar):
        # d tr / d a[..., i, ..., j, ...] = [j - i == offset]
        full = np.expand_dims(ybar, (min(ax1, ax2), max(ax1, ax2)))
        return (full * _diagonal_mask(shape, offset, ax1, ax2),)
    return y, trace_pullback


@frule(np.trace)
def trace_frule(primals, tangents, offset=0, axis1=0, axis2=1):
    return (np.trace(primals[0], offset=offset, axis1=axis1, axis2=axis2),
            np.trace(tangents[0], offset=offset, axis1=axis1, axis2=axis2))
