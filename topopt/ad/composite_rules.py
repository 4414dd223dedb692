"""More functions computed by traced operations (issue 23, round two).

The nan-reductions (`nansum`, `nanprod`, `nanmean`, `nanvar`, `nanstd`,
`nanmax`, `nanmin`, `nancumsum`, `nancumprod`: the reduction of
``where(isnan(a), neutral, a)``), `ptp`, `median`, `copy`, `angle`,
`block`, `inner`, `kron`, `cross`, `convolve`, `polyval`, `interp` and
`linspace` have a call form whose rewrite (``always``) computes them with
traced operations that have rules, so every mode (reverse, forward, hvp,
nested) comes from those rules, and a list where numpy reads an array is
read as one (`coerce`). An option a rewrite does not take raises
`NoRuleError` naming the function and the argument.

Examples
--------
>>> import numpy as np
>>> from topopt import ad
>>> ad.gradient(lambda x: np.nansum(x * x), np.array([1.0, 2.0]))
array([2., 4.])
>>> ad.gradient(lambda x: np.sum(np.linspace(0.0, x[0], 3)), np.array([2.0]))
array([1.5])
"""

from __future__ import annotations

import numpy as np

from .callforms import callform
from .coerce import _no_derivative_dtype
from .core import _shape, getitem, value

__all__: list = []

_NOVALUE = np._NoValue


def _masked(a, fill):
    return np.where(np.isnan(value(a)), fill, a)


def _nan_reduction(fun, base, fill):
    def rewrite(a, axis=None, dtype=None, keepdims=_NOVALUE):
        kw = {} if keepdims is _NOVALUE else {"keepdims": keepdims}
        if dtype is not None:
            kw["dtype"] = dtype
        return base(_masked(a, fill), axis=axis, **kw)
    rewrite.__name__ = f"_{fun.__name__}"
    callform(fun, 1, ("axis", "dtype", "keepdims"), rewrite=rewrite, always=True)


for _fun, _base, _fill in ((np.nansum, np.sum, 0.0), (np.nanprod, np.prod, 1.0),
                           (np.nancumsum, np.cumsum, 0.0), (np.nancumprod, np.cumprod, 1.0)):
    if _fun in (np.nancumsum, np.nancumprod):
        def _cum(a, axis=None, dtype=None, _base=_base, _fill=_fill):
            return _base(_masked(a, _fill), axis=axis, dtype=dtype)
        callform(_fun, 1, ("axis", "dtype"), rewrite=_cum, always=True)
    else:
        _nan_reduction(_fun, _base, _fill)


def _nanextreme(base, fill):
    def rewrite(a, axis=None, keepdims=_NOVALUE):
        kw = {} if keepdims is _NOVALUE else {"keepdims": keepdims}
        return base(_masked(a, fill), axis=axis, **kw)
    return rewrite


callform(np.nanmax, 1, ("axis", "keepdims"), rewrite=_nanextreme(np.max, -np.inf), always=True)
callform(np.nanmin, 1, ("axis", "keepdims"), rewrite=_nanextreme(np.min, np.inf), always=True)


def _count(a, axis, keepdims):
    return np.sum(~np.isnan(value(a)), axis=axis, keepdims=keepdims)


def _nanmean(a, axis=None, dtype=None, keepdims=False):
    if dtype is not None and _no_derivative_dtype(dtype, "numpy.nanmean"):
        return np.nanmean(value(a), axis=axis, dtype=dtype, keepdims=keepdims)
    return np.sum(_masked(a, 0.0), axis=axis, keepdims=keepdims) / _count(a, axis, keepdims)


def _nanvar(a, axis=None, dtype=None, ddof=0, keepdims=False):
    if dtype is not None and _no_derivative_dtype(dtype, "numpy.nanvar"):
        return np.nanvar(value(a), axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
    d = _masked(a - _nanmean(a, axis, keepdims=True), 0.0)
    return np.sum(d * np.conj(d), axis=axis, keepdims=keepdims).real / (
        _count(a, axis, keepdims) - ddof)


callform(np.nanmean, 1, ("axis", "dtype", "keepdims"), rewrite=_nanmean, always=True)
callform(np.nanvar, 1, ("axis", "dtype", "ddof", "keepdims"), rewrite=_nanvar, always=True)
callform(np.nanstd, 1, ("axis", "dtype", "ddof", "keepdims"),
         rewrite=lambda a, **kw: np.sqrt(_nanvar(a, **kw)), always=True)
callform(np.ptp, 1, ("axis", "keepdims"),
         rewrite=lambda a, axis=None, keepdims=False: (np.max(a, axis=axis, keepdims=keepdims)
                                                       - np.min(a, axis=axis, keepdims=keepdims)),
         always=True)
callform(np.copy, 1, ("order", "subok"), rewrite=lambda a, order="K", subok=False: a + 0,
         always=True)
callform(np.angle, 1, ("deg",), always=True,
         rewrite=lambda z, deg=False: np.arctan2(np.imag(z), np.real(z)) * (
             180 / np.pi if deg else 1.0))


def _median(a, axis=None, keepdims=False):
    if axis is None:
        a, axis = np.reshape(a, (-1,)), 0
    nd = len(_shape(a))
    axis = axis + nd if axis < 0 else axis
    s = np.sort(a, axis=axis)
    n = _shape(a)[axis]
    lo, hi = (n - 1) // 2, n // 2
    pick = lambda k: getitem(s, (slice(None),) * axis + (slice(k, k + 1),))  # noqa: E731
    m = (pick(lo) + pick(hi)) / 2
    return m if keepdims else np.squeeze(m, axis=axis)


callform(np.median, 1, ("axis", "keepdims"), rewrite=_median, always=True)


def _block(arrays):
    def depth(a):
        return 1 + depth(a[0]) if type(a) is list else 0

    def leaves(a):
        return [y for b in a for y in leaves(b)] if type(a) is list else [a]
    if type(arrays) is not list:
        return arrays + 0
    d = depth(arrays)
    nd = max([d] + [len(_shape(a)) for a in leaves(arrays)])

    def build(a, level):
        if type(a) is not list:
            a = np.asarray(a) if not hasattr(a, "shape") else a
            return np.reshape(a, (1,) * (nd - len(_shape(a))) + _shape(a))
        return np.concatenate([build(b, level + 1) for b in a], axis=level - d)
    return build(arrays, 0)


callform(np.block, 1, (), rewrite=_block, always=True, lift="-")


def _inner(a, b):
    if len(_shape(a)) == 0 or len(_shape(b)) == 0:
        return a * b
    return np.tensordot(a, b, axes=([-1], [-1]))


callform(np.inner, 2, (), rewrite=_inner, always=True)


def _kron(a, b):
    sa, sb = _shape(a), _shape(b)
    nd = max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    a = np.reshape(a, tuple(v for s in sa for v in (s, 1)))
    b = np.reshape(b, tuple(v for s in sb for v in (1, s)))
    return np.reshape(a * b, tuple(p * q for p, q in zip(sa, sb)))


callform(np.kron, 2, (), rewrite=_kron, always=True)


def _cross(a, b):
    na, nb = _shape(a)[-1], _shape(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("numpy.cross: incompatible dimensions for cross product "
                         "(dimension must be 2 or 3)")
    c = lambda v, k: getitem(v, (Ellipsis, k))  # noqa: E731
    z = lambda v, k, n: c(v, k) if k < n else 0.0  # noqa: E731
    if na == nb == 2:
        return c(a, 0) * c(b, 1) - c(a, 1) * c(b, 0)
    return np.stack([z(a, 1, na) * z(b, 2, nb) - z(a, 2, na) * z(b, 1, nb),
                     z(a, 2, na) * z(b, 0, nb) - z(a, 0, na) * z(b, 2, nb),
                     z(a, 0, na) * z(b, 1, nb) - z(a, 1, na) * z(b, 0, nb)], axis=-1)


callform(np.cross, 2, (), rewrite=_cross, always=True)


def _convolve(a, v, mode="full"):
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"numpy.convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")
    n, m = _shape(a)[0], _shape(v)[0]
    if n == 0 or m == 0:
        raise ValueError("numpy.convolve: a and v must be non-empty")
    k = (np.arange(n)[:, None] + np.arange(m)[None, :]).ravel()
    t = (np.arange(n + m - 1)[:, None] == k[None, :]).astype(float)
    full = t @ np.reshape(np.reshape(a, (n, 1)) * np.reshape(v, (1, m)), (-1,))
    lo, hi = min(n, m), max(n, m)
    if mode == "same":
        return getitem(full, slice((lo - 1) // 2, (lo - 1) // 2 + hi))
    if mode == "valid":
        return getitem(full, slice(lo - 1, hi))
    return full


callform(np.convolve, 2, ("mode",), rewrite=_convolve, always=True)


def _polyval(p, x):
    y = np.zeros(_shape(x))
    for k in range(_shape(p)[0]):
        y = y * x + getitem(p, k)
    return y


callform(np.polyval, 2, (), rewrite=_polyval, always=True)


def _interp(x, xp, fp, left=None, right=None):
    xv, xpv = np.asarray(value(x)), np.asarray(value(xp))
    i = np.clip(np.searchsorted(xpv, xv, side="right") - 1, 0, len(xpv) - 2)
    x0, x1, f0, f1 = getitem(xp, i), getitem(xp, i + 1), getitem(fp, i), getitem(fp, i + 1)
    y = f0 + (x - x0) / (x1 - x0) * (f1 - f0)
    y = np.where(xv < xpv[0], getitem(fp, 0) if left is None else left, y)
    return np.where(xv > xpv[-1], getitem(fp, -1) if right is None else right, y)


callform(np.interp, 5, (), rewrite=_interp, always=True)


def _linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None):
    if dtype is not None and _no_derivative_dtype(dtype, "numpy.linspace"):
        return np.linspace(value(start), value(stop), num, endpoint, retstep, dtype)
    num = int(num)
    if num < 0:
        raise ValueError(f"numpy.linspace: num must be non-negative, got {num}")
    div = num - 1 if endpoint else num
    shape = np.broadcast_shapes(_shape(start), _shape(stop))
    t = np.arange(num, dtype=float).reshape((num,) + (1,) * len(shape))
    delta = stop - start
    step = delta / div if div > 0 else delta * np.nan
    y = start + t * step if div > 0 else start + t * delta
    if endpoint and num > 1:
        y = np.where((np.arange(num) == num - 1).reshape(t.shape), stop, y)
    if dtype is not None:
        y = y.astype(dtype)
    return (y, step) if retstep else y


callform(np.linspace, 2, ("num", "endpoint", "retstep", "dtype"), rewrite=_linspace,
         always=True)
