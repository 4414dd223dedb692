"""Array manipulations and ufuncs computed by traced operations (issue 23, round two).

`flip`, `flipud`, `fliplr`, `roll`, `rot90`, `triu`, `tril`, `split`,
`array_split`, `cumulative_sum`, `trapezoid`, `quantile`, `percentile`
(method ``'linear'``), `matrix_power`, `sinc`, and the ufuncs `logaddexp`,
`logaddexp2`, `fmax`, `fmin`, `copysign`, `float_power`, `nan_to_num`,
`vecdot`, `matvec`, `vecmat`: each a call form whose rewrite (``always``)
is indexing, `where`, reductions or products with rules of their own, so
every mode comes from those. An option the rewrite does not take raises
`NoRuleError` naming the function and the argument.

Examples
--------
>>> import numpy as np
>>> from topopt import ad
>>> ad.gradient(lambda x: np.sum(np.roll(x, 1) * np.arange(3.0)), np.ones(3))
array([1., 2., 0.])
"""

from __future__ import annotations

import numpy as np

from .callforms import callform
from .core import _shape, getitem, value
from .linalg_rules import _hermitian_from
from .products import eigh, eigvalsh
from .rulekit import _axis

__all__: list = []


def _flip(m, axis=None):
    nd = len(_shape(m))
    axes = range(nd) if axis is None else (axis,) if np.ndim(axis) == 0 else axis
    axes = {_axis(a, nd, "numpy.flip") for a in axes}
    return getitem(m, tuple(slice(None, None, -1) if k in axes else slice(None)
                            for k in range(nd)))


callform(np.flip, 1, ("axis",), rewrite=_flip, always=True)
callform(np.flipud, 1, (), rewrite=lambda m: _flip(m, 0), always=True)
callform(np.fliplr, 1, (), rewrite=lambda m: _flip(m, 1), always=True)


def _roll(a, shift, axis=None):
    if axis is None:
        return np.reshape(_roll(np.reshape(a, (-1,)), shift, 0), _shape(a))
    shifts, axes = np.broadcast_arrays(np.asarray(shift), np.asarray(axis))
    for s, ax in zip(shifts.ravel(), axes.ravel()):
        ax = _axis(ax, len(_shape(a)), "numpy.roll")
        n = _shape(a)[ax]
        a = np.take(a, (np.arange(n) - int(s)) % n if n else np.arange(0), axis=ax)
    return a


callform(np.roll, 1, ("shift", "axis"), rewrite=_roll, always=True)


def _rot90(m, k=1, axes=(0, 1)):
    a0, a1 = axes
    k = int(k) % 4
    if k == 0:
        return m + 0
    if k == 2:
        return _flip(_flip(m, a0), a1)
    if k == 1:
        return np.swapaxes(_flip(m, a1), a0, a1)
    return _flip(np.swapaxes(m, a0, a1), a1)


callform(np.rot90, 1, ("k", "axes"), rewrite=_rot90, always=True)


def _triangle(fun):
    def rewrite(m, k=0):
        mask = fun(np.ones(_shape(m), bool), k)
        return np.where(mask, m, 0)
    return rewrite


callform(np.triu, 1, ("k",), rewrite=_triangle(np.triu), always=True)
callform(np.tril, 1, ("k",), rewrite=_triangle(np.tril), always=True)


def _splitting(fun):
    def rewrite(ary, indices_or_sections, axis=0):
        nd = len(_shape(ary))
        ax = _axis(axis, nd, f"numpy.{fun.__name__}")
        parts = fun(np.arange(_shape(ary)[ax]), indices_or_sections)  # numpy's checks
        return [getitem(ary, (slice(None),) * ax + (slice(int(p[0]), int(p[-1]) + 1)
                                                    if len(p) else slice(0, 0),))
                for p in parts]
    return rewrite


callform(np.split, 1, ("indices_or_sections", "axis"), rewrite=_splitting(np.split),
         always=True)
callform(np.array_split, 1, ("indices_or_sections", "axis"),
         rewrite=_splitting(np.array_split), always=True)


def _cumulative(name: str, scan, fill):
    """numpy 2's ``cumulative_<name>`` as the traced `scan` (cumsum, cumprod): `fill` (zeros,
    ones) in front with ``include_initial``; a 1-D array needs no ``axis``."""
    def cumulative(x, axis=None, dtype=None, include_initial=False):
        if axis is None:
            if len(_shape(x)) != 1:
                raise ValueError(f"numpy.cumulative_{name}: axis must be given for an array "
                                 "of more than one dimension")
            axis = 0
        y = scan(x, axis=axis, dtype=dtype)
        if include_initial:
            shape = list(_shape(y))
            shape[axis] = 1
            y = np.concatenate([fill(shape, np.result_type(y)), y], axis=axis)
        return y
    return cumulative


_cumulative_sum = _cumulative("sum", np.cumsum, np.zeros)


if hasattr(np, "cumulative_sum"):
    callform(np.cumulative_sum, 1, ("axis", "dtype", "include_initial"),
             rewrite=_cumulative_sum, always=True)


def _trapezoid(y, x=None, dx=1.0, axis=-1):
    nd = len(_shape(y))
    ax = _axis(axis, nd, "numpy.trapezoid")
    lo = (slice(None),) * ax + (slice(None, -1),)
    hi = (slice(None),) * ax + (slice(1, None),)
    if x is None:
        d = dx
    else:
        d = np.diff(x, axis=-1 if len(_shape(x)) == 1 else ax)
        if len(_shape(x)) == 1 and nd > 1:
            d = np.reshape(d, (-1,) + (1,) * (nd - 1 - ax))
    return np.sum(d * (getitem(y, lo) + getitem(y, hi)) / 2.0, axis=ax)


if hasattr(np, "trapezoid"):
    callform(np.trapezoid, 2, ("dx", "axis"), rewrite=_trapezoid, always=True)


def _quantile(a, q, axis=None, method="linear", keepdims=False, name="numpy.quantile"):
    if method != "linear":
        raise ValueError(f"{name}: traced values take method='linear' only, got {method!r}")
    qv = np.asarray(value(q), float)
    if np.any((qv < 0) | (qv > 1)):
        raise ValueError(f"{name}: quantiles must be in the range [0, 1]")
    if axis is None:
        a, axis = np.reshape(a, (-1,)), 0
    nd = len(_shape(a))
    ax = _axis(axis, nd, name)
    s = np.sort(a, axis=ax)
    n = _shape(a)[ax]
    pos = qv * (n - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, n - 1)
    frac = pos - lo
    shape = qv.shape + (1,) * (nd - 1)
    lo_v = np.moveaxis(np.take(s, lo.ravel(), axis=ax), ax, 0)
    hi_v = np.moveaxis(np.take(s, hi.ravel(), axis=ax), ax, 0)
    rest = tuple(d for k, d in enumerate(_shape(a)) if k != ax)
    lo_v, hi_v = np.reshape(lo_v, qv.shape + rest), np.reshape(hi_v, qv.shape + rest)
    y = lo_v + np.reshape(frac, shape) * (hi_v - lo_v)
    if keepdims:
        y = np.expand_dims(y, qv.ndim + ax)
    return y


callform(np.quantile, 2, ("axis", "method", "keepdims"), rewrite=_quantile, always=True)
callform(np.percentile, 2, ("axis", "method", "keepdims"), always=True,
         rewrite=lambda a, q, **kw: _quantile(a, np.asarray(value(q)) / 100.0,
                                              name="numpy.percentile", **kw))


def _matrix_power(a, n):
    n = int(n)
    if n < 0:
        a, n = np.linalg.inv(a), -n
    if n == 0:
        return np.broadcast_to(np.eye(_shape(a)[-1]), _shape(a)) + 0.0 * a
    y = a
    for _ in range(n - 1):
        y = y @ a
    return y


callform(np.linalg.matrix_power, 1, ("n",), rewrite=_matrix_power, always=True)


def _sinc(x):
    y = np.pi * np.where(value(x) == 0, 1.0e-20, x)
    return np.sin(y) / y


callform(np.sinc, 1, (), rewrite=_sinc, always=True)


def _logaddexp(a, b):
    m = np.maximum(value(a), value(b))
    m = np.where(np.isfinite(m), m, 0.0)
    return m + np.log(np.exp(a - m) + np.exp(b - m))


def _logaddexp2(a, b):
    m = np.maximum(value(a), value(b))
    m = np.where(np.isfinite(m), m, 0.0)
    return m + np.log2(np.exp2(a - m) + np.exp2(b - m))


def _fextremum(fun):
    def rewrite(a, b):
        av, bv = value(a), value(b)
        return np.where(np.isnan(bv), a, np.where(np.isnan(av), b, fun(a, b)))
    return rewrite


def _copysign(a, b):
    return a * np.where(np.signbit(value(a)) == np.signbit(value(b)), 1.0, -1.0)


def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    if np.iscomplexobj(value(x)):        # numpy replaces in the real and imaginary parts apart
        return (_nan_to_num(np.real(x), copy, nan, posinf, neginf)
                + 1j * _nan_to_num(np.imag(x), copy, nan, posinf, neginf))
    xv = value(x)
    info = np.finfo(np.result_type(xv, float))
    y = np.where(np.isnan(xv), nan, x)
    y = np.where(np.isposinf(xv), info.max if posinf is None else posinf, y)
    return np.where(np.isneginf(xv), -info.max if neginf is None else neginf, y)


def _ufunc(fun, n, rewrite, accepts=()):
    params = ("x", "y", "z")[:n] if n <= 3 else None
    callform(fun, n, accepts, rewrite=rewrite, always=True, params=params)


_ufunc(np.logaddexp, 2, _logaddexp)
_ufunc(np.logaddexp2, 2, _logaddexp2)
_ufunc(np.fmax, 2, _fextremum(np.maximum))
_ufunc(np.fmin, 2, _fextremum(np.minimum))
_ufunc(np.copysign, 2, _copysign)
_ufunc(np.float_power, 2, lambda a, b: np.power(a * 1.0, b))
callform(np.nan_to_num, 1, ("copy", "nan", "posinf", "neginf"), rewrite=_nan_to_num,
         always=True)
for _name, _rw in (("vecdot", lambda a, b: np.sum(np.conj(a) * b, axis=-1)),
                   ("matvec", lambda a, b: np.sum(a * np.expand_dims(b, -2), axis=-1)),
                   ("vecmat", lambda a, b: np.sum(np.expand_dims(np.conj(a), -1) * b, axis=-2))):
    if hasattr(np, _name):
        _ufunc(getattr(np, _name), 2, _rw)


def _eigh(a, UPLO="L"):
    return eigh(_hermitian_from(a, UPLO))


callform(np.linalg.eigh, 1, ("UPLO",), rewrite=_eigh, always=True)
callform(np.linalg.eigvalsh, 1, ("UPLO",),
         rewrite=lambda a, UPLO="L": eigvalsh(_hermitian_from(a, UPLO)),
         always=True)


def _unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """``p`` plus numpy's piecewise-constant correction (derivative one)."""
    pv = np.asarray(value(p))
    return p + (np.unwrap(pv, discont, axis, period=period) - pv)


callform(np.unwrap, 1, ("discont", "axis", "period"), rewrite=_unwrap, always=True)


def _pinv(a, rcond=None, hermitian=False, rtol=None):
    """``(a^H a)^-1 a^H`` (or its transpose form) for a matrix of full rank."""
    av = np.asarray(value(a))
    m, n = av.shape[-2:]
    s = np.linalg.svd(av, compute_uv=False)
    cut = (rcond if rcond is not None else rtol if rtol is not None
           else max(m, n) * np.finfo(float).eps)
    if np.any(s[..., -1] <= np.asarray(cut)[..., None] * s[..., :1]):
        raise ValueError("numpy.linalg.pinv of a traced matrix needs full rank (its derivative "
                         "jumps where the rank changes); this one is rank-deficient at "
                         "the cut-off")
    ah = np.conj(np.swapaxes(a, -1, -2))
    if m >= n:
        return np.linalg.solve(ah @ a, ah)
    return np.conj(np.swapaxes(np.linalg.solve(a @ ah, a), -1, -2))


callform(np.linalg.pinv, 1, ("rcond", "hermitian", "rtol"), rewrite=_pinv, always=True)
