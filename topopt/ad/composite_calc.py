"""Finite differences, grids, correlations and a few more functions by traced
operations (issue 35).

`gradient` (spacing scalars or coordinate arrays, traced or not, ``axis``,
``edge_order`` 1 and 2), `meshgrid` (``indexing``, ``sparse``, ``copy``),
`correlate`, `ediff1d`, `diagflat`, `vander`, `cov`, `corrcoef`,
`take_along_axis`, `real_if_close`, `linalg.cond`, `polyder`, `polyint`,
`polyfit`, `select`, `extract`, `resize`, `partition`, `sort_complex`,
`cumulative_prod`, `unstack`, and the ufuncs `modf`, `frexp`, `ldexp`,
`divmod`: each a call form whose rewrite computes it with operations that
have rules, so every mode follows. Where numpy's own arithmetic may round
differently, the result is numpy's value plus ``t - value(t)`` for the
traced ``t``: numpy's number, the derivative of ``t``. `fix`, `nextafter`,
`spacing` and `linalg.matrix_rank` have no derivative (piecewise constant).

Examples
--------
>>> import numpy as np
>>> from topopt import ad
>>> ad.gradient(lambda f: np.sum(np.gradient(f, 0.5) ** 2), np.array([0.0, 1.0, 4.0]))
array([-16., -16.,  32.])
"""

from __future__ import annotations

import numpy as np

from .callforms import CallForm, callform, lifting
from .coerce import _lift_all
from .core import NoRuleError, _dtype, _shape, getitem, value
from .registry import REGISTRY
from .composite_more import _cumulative
from .linalg_decomp import svdvals

__all__: list = []


def _numpys(y0, t):
    """numpy's value `y0` with the derivative of the traced `t` (the same number)."""
    return y0 + (t - value(t))


class _Varargs(CallForm):
    """The call form of ``fun(*arrays, **options)``: every positional argument is data."""

    __slots__ = ()

    def bind(self, args, kwargs):
        return tuple(args), self._options(dict(kwargs or {}))


def _varargs(fun, data, accepts, rewrite):
    REGISTRY.register_form(fun, _Varargs(fun, data, accepts, rewrite=rewrite, always=True))
    lifting(fun, _lift_all)


# ----------------------------------------------------------------- gradient

def _spacing(d, axis, nd):
    """The differences of coordinates `d` shaped to broadcast along `axis`."""
    return np.reshape(d, (-1,) + (1,) * (nd - 1 - axis))


def _gradient_axis(f, axis, dx, edge_order):
    nd = len(_shape(f))
    S = lambda a, b: getitem(f, (slice(None),) * axis + (slice(a, b),))    # noqa: E731
    F = lambda k: getitem(f, (slice(None),) * axis + (k,))                  # noqa: E731
    if np.ndim(dx) == 0:
        inner = (S(2, None) - S(0, -2)) / (2.0 * dx)
        if edge_order == 1:
            first, last = (F(1) - F(0)) / dx, (F(-1) - F(-2)) / dx
        else:
            first = (-1.5 / dx) * F(0) + (2.0 / dx) * F(1) + (-0.5 / dx) * F(2)
            last = (0.5 / dx) * F(-3) + (-2.0 / dx) * F(-2) + (1.5 / dx) * F(-1)
    else:
        d1, d2 = _spacing(dx[:-1], axis, nd), _spacing(dx[1:], axis, nd)
        inner = (-d2 / (d1 * (d1 + d2)) * S(0, -2) + (d2 - d1) / (d1 * d2) * S(1, -1)
                 + d1 / (d2 * (d1 + d2)) * S(2, None))
        if edge_order == 1:
            first, last = (F(1) - F(0)) / dx[0], (F(-1) - F(-2)) / dx[-1]
        else:
            a, b = dx[0], dx[1]
            first = (-(2.0 * a + b) / (a * (a + b)) * F(0) + (a + b) / (a * b) * F(1)
                     - a / (b * (a + b)) * F(2))
            a, b = dx[-2], dx[-1]
            last = (b / (a * (a + b)) * F(-3) - (a + b) / (a * b) * F(-2)
                    + (2.0 * b + a) / (b * (a + b)) * F(-1))
    edge = lambda e: np.expand_dims(e, axis)       # noqa: E731
    return np.concatenate([edge(first), inner, edge(last)], axis=axis)


def _gradient(f, *varargs, axis=None, edge_order=1):
    if edge_order not in (1, 2):
        raise ValueError(f"numpy.gradient: edge_order must be 1 or 2, got {edge_order!r}")
    y0 = np.gradient(value(f), *[value(v) for v in varargs], axis=axis,
                     edge_order=edge_order)        # numpy's checks and value
    nd = len(_shape(f))
    axes = tuple(range(nd)) if axis is None else tuple(
        int(a) % nd for a in ((axis,) if np.ndim(axis) == 0 else axis))
    if not varargs:
        dx = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(value(varargs[0])) == 0:
        dx = list(varargs) * len(axes)
    else:
        dx = [v if np.ndim(value(v)) == 0 else np.diff(v * 1.0) for v in varargs]
    if _dtype(f).kind not in "fc":
        f = np.asarray(f, float)
    out = [_gradient_axis(f, a, d, edge_order) for a, d in zip(axes, dx)]
    y0 = (y0,) if len(axes) == 1 else y0
    out = tuple(_numpys(y, t) for y, t in zip(y0, out))
    return out[0] if len(axes) == 1 else out


_varargs(np.gradient, 1, ("axis", "edge_order"), _gradient)


# ----------------------------------------------------------------- meshgrid

def _meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError(f"numpy.meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    ndim = len(xi)
    s0 = (1,) * ndim
    out = [np.reshape(x, s0[:i] + (-1,) + s0[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and ndim > 1:
        out[0] = np.reshape(out[0], (1, -1) + s0[2:])
        out[1] = np.reshape(out[1], (-1, 1) + s0[2:])
    if not sparse:
        shape = np.broadcast_shapes(*[_shape(o) for o in out])
        out = [np.broadcast_to(o, shape) for o in out]
    if copy:
        out = [o + 0 for o in out]
    return tuple(out)


_varargs(np.meshgrid, 0, ("copy", "sparse", "indexing"), _meshgrid)


# ----------------------------------------------------- products of sequences

def _window(n, m, mode):
    """Where numpy's `mode` output of ``correlate`` of lengths `n`, `m` starts in the full one.

    Asked of numpy: ``correlate(1..n, delta_0)`` is ``a`` at the lags ``0..n-1``
    and 0 before, so any nonzero entry names its lag.
    """
    delta = np.zeros(m)
    delta[0] = 1.0
    c = np.correlate(np.arange(1.0, n + 1), delta, mode)
    p = int(np.flatnonzero(c)[0])
    return m - 1 + int(c[p]) - 1 - p, c.size


def _correlate(a, v, mode="valid"):
    y0 = np.correlate(value(a), value(v), mode)       # numpy's checks and value
    start, size = _window(_shape(a)[0], _shape(v)[0], mode)
    full = np.convolve(a, np.conj(v)[::-1], "full")
    return _numpys(y0, getitem(full, slice(start, start + size)))


callform(np.correlate, 2, ("mode",), rewrite=_correlate, always=True)


def _ediff1d(ary, to_end=None, to_begin=None):
    y0 = np.ediff1d(value(ary), value(to_end), value(to_begin))
    parts = [np.diff(np.reshape(ary, (-1,)))]
    if to_begin is not None:
        parts.insert(0, np.reshape(to_begin, (-1,)))
    if to_end is not None:
        parts.append(np.reshape(to_end, (-1,)))
    return _numpys(y0, np.concatenate(parts))


callform(np.ediff1d, 3, (), rewrite=_ediff1d, always=True)
callform(np.diagflat, 1, ("k",), always=True,
         rewrite=lambda v, k=0: np.diag(np.reshape(v, (-1,)), k))


def _vander(x, N=None, increasing=False):
    y0 = np.vander(value(x), N, increasing)            # numpy's checks and value
    n = _shape(x)[0] if N is None else int(N)
    if n == 0:
        return y0
    cols = [np.ones((_shape(x)[0], 1), _dtype(x))] + [np.reshape(x, (-1, 1))] * (n - 1)
    t = np.cumprod(np.concatenate(cols, axis=1), axis=1)
    return _numpys(y0, t if increasing else t[:, ::-1])


callform(np.vander, 1, ("N", "increasing"), rewrite=_vander, always=True)


def _cov(m, y=None, rowvar=True, bias=False, ddof=None, dtype=None):
    y0 = np.cov(value(m), None if y is None else value(y), rowvar, bias, ddof, dtype=dtype)
    X = np.reshape(m, (1, -1)) if len(_shape(m)) == 1 else m
    if not rowvar and _shape(X)[0] != 1:
        X = np.swapaxes(X, 0, 1)
    if y is not None:
        Y = np.reshape(y, (1, -1)) if len(_shape(y)) == 1 else y
        if not rowvar and _shape(Y)[0] != 1:
            Y = np.swapaxes(Y, 0, 1)
        X = np.concatenate([X, Y], axis=0)
    ddof = (0 if bias else 1) if ddof is None else ddof
    X = X - np.mean(X, axis=1, keepdims=True)
    c = (X @ np.conj(np.swapaxes(X, 0, 1))) / (_shape(X)[1] - ddof)
    return _numpys(y0, np.reshape(c, np.shape(y0)))


def _corrcoef(x, y=None, rowvar=True, dtype=None):
    y0 = np.corrcoef(value(x), None if y is None else value(y), rowvar, dtype=dtype)
    c = _cov(x, y, rowvar, dtype=dtype)
    if len(_shape(c)) == 0:
        return _numpys(y0, c / c)
    s = np.sqrt(np.real(np.diagonal(c)))
    return _numpys(y0, c / s[:, None] / s[None, :])


callform(np.cov, 2, ("rowvar", "bias", "ddof", "dtype"), rewrite=_cov, always=True)
callform(np.corrcoef, 2, ("rowvar", "dtype"), rewrite=_corrcoef, always=True)


def _take_along_axis(arr, indices, axis=-1):
    if axis is None:
        arr, axis = np.reshape(arr, (-1,)), 0
    idx = np.asarray(value(indices))
    nd = len(_shape(arr))
    if idx.ndim != nd:
        raise ValueError(f"numpy.take_along_axis: indices and arr must have the same number "
                         f"of dimensions, got {idx.ndim} and {nd}")
    ax = int(axis) % nd
    fancy = tuple(idx if d == ax else np.arange(_shape(arr)[d]).reshape(
        (1,) * d + (-1,) + (1,) * (nd - d - 1)) for d in range(nd))
    return getitem(arr, fancy)


callform(np.take_along_axis, 1, ("indices", "axis"), rewrite=_take_along_axis, always=True)


def _cond(x, p=None):
    y0 = np.linalg.cond(value(x), p)
    if p in (None, 2, -2):
        s = svdvals(x)
        t = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    else:
        t = (np.linalg.norm(x, p, axis=(-2, -1))
             * np.linalg.norm(np.linalg.inv(x), p, axis=(-2, -1)))
    return _numpys(y0, t)


callform(np.linalg.cond, 1, ("p",), rewrite=_cond, always=True)


def _real_if_close(a, tol=100):
    close = np.real_if_close(value(a), tol).dtype.kind != "c"      # numpy's decision
    return np.real(a) if close and _dtype(a).kind == "c" else a


callform(np.real_if_close, 1, ("tol",), rewrite=_real_if_close, always=True)


# ----------------------------------------------------- polynomials, selection

def _polyder(p, m=1):
    m = int(m)
    if m < 0:
        raise ValueError(f"numpy.polyder: order of derivative must be positive, got {m}")
    y0 = np.polyder(value(p), m)
    for _ in range(m):
        n = _shape(p)[0] - 1
        p = p[:-1] * np.arange(n, 0, -1.0) if n > 0 else p[:0]
    return _numpys(y0, p)


def _polyint(p, m=1, k=None):
    y0 = np.polyint(value(p), m, None if k is None else value(k))
    m = int(m)
    ks = np.zeros(m) if k is None else np.broadcast_to(k, (m,)) if np.ndim(value(k)) == 0 \
        else k
    for i in range(m):
        n = _shape(p)[0]
        p = np.concatenate([p / np.arange(n, 0, -1.0), np.reshape(ks[i], (1,))])
    return _numpys(y0, p)


def _polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    if full or cov or w is not None:
        raise NoRuleError("no differentiation rule for numpy.polyfit with full=True, cov=True "
                          "or w=; the rule takes the plain least-squares fit")
    y0 = np.polyfit(value(x), value(y), deg, rcond)          # numpy's checks and value
    lhs = _vander(x, int(deg) + 1)
    scale = np.sqrt(np.sum(lhs * lhs, axis=0))
    c = np.linalg.lstsq(lhs / scale, y, rcond)[0]
    c = c / scale if len(_shape(y)) == 1 else c / scale[:, None]
    return _numpys(y0, c)


def _select(condlist, choicelist, default=0):
    y0 = np.select([value(c) for c in condlist], [value(c) for c in choicelist],
                   value(default))                            # numpy's checks
    out = default
    for cond, choice in zip(condlist[::-1], choicelist[::-1]):
        out = np.where(value(cond), choice, out)
    return _numpys(y0, np.broadcast_to(out, np.shape(y0)) + 0)


def _extract(condition, arr):
    return getitem(np.reshape(arr, (-1,)), np.flatnonzero(np.ravel(value(condition))))


def _resize(a, new_shape):
    y0 = np.resize(value(a), new_shape)
    size = int(np.prod(_shape(a)))
    if size == 0 or y0.size == 0:
        return y0
    flat = getitem(np.reshape(a, (-1,)), np.arange(y0.size) % size)
    return np.reshape(flat, y0.shape)


def _partition(a, kth, axis=-1, kind="introselect", order=None):
    if axis is None:
        a, axis = np.reshape(a, (-1,)), 0
    y0 = np.partition(value(a), kth, axis, kind, order)
    idx = np.argpartition(value(a), kth, axis, kind, order)
    if not np.array_equal(np.take_along_axis(value(a), idx, axis), y0):
        raise ValueError("numpy.partition: argpartition arranges the entries differently "
                         "from partition here, so the derivative's permutation is unknown; "
                         "use np.sort")
    return np.take_along_axis(a, idx, axis)


_cumulative_prod = _cumulative("prod", np.cumprod, np.ones)


callform(np.polyder, 1, ("m",), rewrite=_polyder, always=True)
callform(np.polyint, 1, ("m", "k"), rewrite=_polyint, always=True)
callform(np.polyfit, 2, ("deg", "rcond", "full", "w", "cov"), rewrite=_polyfit, always=True)
callform(np.select, 3, (), rewrite=_select, always=True, lift="-sa")
callform(np.extract, 2, (), rewrite=_extract, always=True)
callform(np.resize, 1, ("new_shape",), rewrite=_resize, always=True)
callform(np.partition, 1, ("kth", "axis", "kind", "order"), rewrite=_partition, always=True)
callform(np.sort_complex, 1, (), rewrite=lambda a: np.sort(a) + 0j, always=True)
if hasattr(np, "cumulative_prod"):
    callform(np.cumulative_prod, 1, ("axis", "dtype", "include_initial"),
             rewrite=_cumulative_prod, always=True)
if hasattr(np, "unstack"):
    callform(np.unstack, 1, ("axis",), always=True,
             rewrite=lambda x, axis=0: tuple(np.moveaxis(x, axis, 0)[i]
                                             for i in range(_shape(x)[axis])))


# -------------------------------------------------------------------- ufuncs

def _modf(x):
    whole = np.trunc(value(x))
    return _numpys(np.modf(value(x))[0], x - whole), whole


def _frexp(x):
    mantissa, exponent = np.frexp(value(x))
    return x * np.ldexp(1.0, -exponent), exponent


def _divmod(a, b):
    return np.floor_divide(value(a), value(b)), np.remainder(a, b)


callform(np.modf, 1, (), rewrite=_modf, always=True, params=("x",))
callform(np.frexp, 1, (), rewrite=_frexp, always=True, params=("x",))
callform(np.ldexp, 2, (), rewrite=lambda a, e: a * np.ldexp(1.0, value(e)), always=True,
         params=("x1", "x2"))
callform(np.divmod, 2, (), rewrite=_divmod, always=True, params=("x1", "x2"))

REGISTRY.mark_nondifferentiable({np.fix, np.nextafter, np.spacing, np.linalg.matrix_rank})
