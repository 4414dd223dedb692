"""Rules of reductions: sum, mean, max/min (amax/amin) and linalg.norm.

Every call is normalised by its `CallForm` first: the rules see `axis`
(None, an int or a tuple, negative allowed), `keepdims` and `initial` by name
whatever form the user wrote; ``where=`` and ``dtype=`` are rewritten into
traced operations (``np.where``, a cast) before the rule runs.
"""

from __future__ import annotations

import numpy as np

from .api import jvp, pullback
from .callforms import callform
from .core import NoRuleError, _shape, astype, value
from .extend import frule, rrule
from .linalg_decomp import svdvals
from .rulekit import _axes, _expand, _kept_shape, _named, _safe

_NOVALUE = np._NoValue


def _check_where(where, x):
    if np.broadcast_shapes(np.shape(where), _shape(x)) != _shape(x):
        raise ValueError(f"where= of shape {np.shape(where)} does not broadcast to the "
                         f"array of shape {_shape(x)}")
    return np.asarray(value(where), dtype=bool)


def _cast(a, dtype):
    return a if dtype is None else astype(a, np.dtype(dtype))


def _sum_rewrite(a, axis=None, dtype=None, keepdims=False, initial=_NOVALUE, where=True):
    if dtype is None and where is True:
        return NotImplemented
    a = _cast(a, dtype)
    if where is not True:
        a = np.where(_check_where(where, a), a, 0)
    return np.sum(a, axis=axis, keepdims=keepdims, initial=initial)


def _mean_rewrite(a, axis=None, dtype=None, keepdims=False, where=True):
    if dtype is None and where is True:
        return NotImplemented
    a = _cast(a, dtype)
    if where is True:
        return np.mean(a, axis=axis, keepdims=keepdims)
    mask = np.broadcast_to(_check_where(where, a), _shape(a))
    count = np.sum(mask, axis=axis, keepdims=keepdims)
    return np.sum(np.where(mask, a, 0), axis=axis, keepdims=keepdims) / count


callform(np.sum, 1, ("axis", "dtype", "keepdims", "initial", "where"), rewrite=_sum_rewrite)
callform(np.mean, 1, ("axis", "dtype", "keepdims", "where"), rewrite=_mean_rewrite)


@rrule(np.sum)
def sum_rrule(x, axis=None, keepdims=False, initial=_NOVALUE):
    shape = _shape(x)

    def sum_pullback(ybar):
        return (_expand(ybar, shape, axis),)
    return np.sum(x, axis=axis, keepdims=keepdims, initial=initial), sum_pullback


@frule(np.sum)
def sum_frule(primals, tangents, axis=None, keepdims=False, initial=_NOVALUE):
    return (np.sum(primals[0], axis=axis, keepdims=keepdims, initial=initial),
            np.sum(tangents[0], axis=axis, keepdims=keepdims))


def _count(shape, axis) -> int:
    return int(np.prod([shape[a] for a in _axes(axis, len(shape))]))


@rrule(np.mean)
def mean_rrule(x, axis=None, keepdims=False):
    shape = _shape(x)
    n = _count(shape, axis)

    def mean_pullback(ybar):
        return (_expand(ybar / n, shape, axis),)
    return np.mean(x, axis=axis, keepdims=keepdims), mean_pullback


@frule(np.mean)
def mean_frule(primals, tangents, axis=None, keepdims=False):
    return (np.mean(primals[0], axis=axis, keepdims=keepdims),
            np.mean(tangents[0], axis=axis, keepdims=keepdims))


def _reduce_extremum(fun):
    """Rules of a max/min reduction; ties (with `initial` too) share the derivative."""
    name = fun.__name__

    def rewrite(a, axis=None, keepdims=False, initial=_NOVALUE, where=True):
        if where is True:
            return NotImplemented
        if initial is _NOVALUE:
            raise ValueError(f"numpy.{name} with where= needs initial= (the reduction "
                             "has no identity)")
        a = np.where(_check_where(where, a), a, initial)
        return fun(a, axis=axis, keepdims=keepdims, initial=initial)

    callform(fun, 1, ("axis", "keepdims", "initial", "where"), rewrite=rewrite)

    def share(x, y, axis, initial):
        """Where `x` attains the extremum, split evenly among ties."""
        kept = np.reshape(value(y), _kept_shape(_shape(x), axis))
        hit = value(x) == kept
        count = np.sum(hit, axis=_axes(axis, hit.ndim), keepdims=True)
        if initial is not _NOVALUE:
            count = count + (kept == initial)
        return hit / np.maximum(count, 1)

    @rrule(fun)
    def extremum_rrule(x, axis=None, keepdims=False, initial=_NOVALUE):
        y = fun(x, axis=axis, keepdims=keepdims, initial=initial)
        w = share(x, y, axis, initial)

        def pullback(ybar):
            return (_expand(ybar, _shape(x), axis) * w,)
        return y, _named(pullback, f"{name}_pullback")

    @frule(fun)
    def extremum_frule(primals, tangents, axis=None, keepdims=False, initial=_NOVALUE):
        (x,), (xdot,) = primals, tangents
        y = fun(x, axis=axis, keepdims=keepdims, initial=initial)
        return y, np.sum(share(x, y, axis, initial) * xdot, axis=axis, keepdims=keepdims)


for _fun in (np.max, np.min, np.amax, np.amin):
    _reduce_extremum(_fun)


# ------------------------------------------------------------------- norms

callform(np.linalg.norm, 1, ("ord", "axis", "keepdims"))


def _norm_axes(ndim, ord, axis):
    """``("vector", axes)`` or ``("matrix", (row, col))`` as numpy decides."""
    if axis is None:
        if ord is None or ndim == 1:
            return "vector", tuple(range(ndim))
        return "matrix", (0, 1)
    axes = _axes(axis, ndim)
    return ("vector", axes) if len(axes) == 1 else ("matrix", axes)


def _two_norm(x, axis, keepdims):
    return np.sqrt(np.sum(np.real(np.conj(x) * x), axis=axis, keepdims=keepdims))


def _singular_values(x, rc):
    """Singular values of the matrices over axes `rc`, batch axes in front (`svdvals`:
    its rules raise at a zero singular value, where a 2-norm has no derivative)."""
    nd = len(_shape(x))
    batch = tuple(i for i in range(nd) if i not in rc)
    return svdvals(np.transpose(x, batch + tuple(rc)))


def _matrix_norm(x, ord, rc, keepdims):
    r, c = rc
    shape = _shape(x)
    kept = tuple(1 if i in rc else s for i, s in enumerate(shape))
    target = kept if keepdims else tuple(s for i, s in enumerate(shape) if i not in rc)
    if ord in (None, "fro"):
        return _two_norm(x, rc, keepdims)
    if ord in (1, -1, np.inf, -np.inf):
        inner, outer = (r, c) if ord in (1, -1) else (c, r)
        pick = np.max if ord in (1, np.inf) else np.min
        z = pick(np.sum(np.abs(x), axis=inner, keepdims=True), axis=outer, keepdims=True)
        return np.reshape(z, target)
    if ord in (2, -2, "nuc"):
        s = _singular_values(x, rc)
        z = {2: np.max, -2: np.min, "nuc": np.sum}[ord](s, axis=-1)
        return np.reshape(z, target)
    raise NoRuleError(f"no differentiation rule for numpy.linalg.norm with ord={ord!r}")


def _vector_norm(x, ord, axes, keepdims):
    if ord in (None, 2):
        return _two_norm(x, axes, keepdims)
    a = np.abs(x)
    if ord == np.inf:
        return np.max(a, axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return np.min(a, axis=axes, keepdims=keepdims)
    if isinstance(ord, (int, float, np.integer, np.floating)) and ord != 0:
        return np.sum(a ** ord, axis=axes, keepdims=keepdims) ** (1.0 / ord)
    raise NoRuleError(f"no differentiation rule for numpy.linalg.norm with ord={ord!r} "
                      "(the count of nonzeros has no derivative)")


def _norm_traced(x, ord=None, axis=None, keepdims=False):
    """``np.linalg.norm`` by traced operations, every ord and axis numpy takes."""
    kind, axes = _norm_axes(len(_shape(x)), ord, axis)
    if kind == "matrix":
        return _matrix_norm(x, ord, axes, keepdims)
    return _vector_norm(x, ord, axes, keepdims)


@rrule(np.linalg.norm)
def norm_rrule(x, ord=None, axis=None, keepdims=False):
    y = np.linalg.norm(x, ord, axis, keepdims)     # numpy validates ord and axis
    kind, axes = _norm_axes(len(_shape(x)), ord, axis)
    if ord is None or (ord == "fro" and kind == "matrix") or (ord == 2 and kind == "vector"):
        kept = _kept_shape(_shape(x), axes)

        def norm_pullback(ybar):
            ys = np.reshape(y, kept)
            return (np.reshape(np.real(ybar), kept) * x / _safe(ys),)
        return y, norm_pullback
    return pullback(lambda x: _norm_traced(x, ord, axis, keepdims), x)


@frule(np.linalg.norm)
def norm_frule(primals, tangents, ord=None, axis=None, keepdims=False):
    return jvp(lambda x: _norm_traced(x, ord, axis, keepdims), primals[:1], tangents[:1])
