"""Reverse and forward rules for numpy (and a few scipy.special) functions.

Every pullback is written with numpy calls, so on traced cotangents or
residuals it is itself recorded: that is what gives second derivatives.
Complex convention: for ``y = f(z)`` holomorphic, ``zbar = ybar * conj(f'(z))``
and ``zdot -> f'(z) zdot``; the walk takes the real part of a cotangent
that reaches a real argument.
"""

from __future__ import annotations

import numpy as np
import scipy.special as sp

from .core import (NoRuleError, _dtype, _nondiff, _shape, astype, frule,
                   getitem, primitive, rrule, thunk, value)


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
    read-only cotangents before handing them to the user.
    """
    if _is_unit(ybar) and type(c) is np.ndarray and c.shape == ybar.shape == tuple(shape):
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


# ------------------------------------------------ elementwise, one argument

def _unary(fun, deriv):
    """Rules of a holomorphic elementwise `fun` with ``f'(x) = deriv(x, y)``."""
    name = fun.__name__

    @rrule(fun)
    def unary_rrule(x, **kw):
        y = fun(x, **kw)

        def pullback(ybar):
            return (_scaled(ybar, _conj(deriv(x, y)), _shape(y)),)
        return y, _named(pullback, f"{name}_pullback")

    @frule(fun)
    def unary_frule(primals, tangents, **kw):
        (x,), (xdot,) = primals, tangents
        y = fun(x, **kw)
        return y, deriv(x, y) * xdot


_LN10, _LN2, _SQRT2PI = np.log(10.0), np.log(2.0), np.sqrt(2 * np.pi)

for _fun, _deriv in [
    (np.exp, lambda x, y: y),
    (np.expm1, lambda x, y: y + 1),
    (np.exp2, lambda x, y: y * _LN2),
    (np.log, lambda x, y: 1 / x),
    (np.log1p, lambda x, y: 1 / (1 + x)),
    (np.log10, lambda x, y: 1 / (x * _LN10)),
    (np.log2, lambda x, y: 1 / (x * _LN2)),
    (np.sqrt, lambda x, y: 0.5 / y),
    (np.square, lambda x, y: 2 * x),
    (np.reciprocal, lambda x, y: -y * y),
    (np.sin, lambda x, y: np.cos(x)),
    (np.cos, lambda x, y: -np.sin(x)),
    (np.tan, lambda x, y: 1 + y * y),
    (np.arctan, lambda x, y: 1 / (1 + x * x)),
    (np.sinh, lambda x, y: np.cosh(x)),
    (np.cosh, lambda x, y: np.sinh(x)),
    (np.tanh, lambda x, y: 1 - y * y),
    (sp.expit, lambda x, y: y * (1 - y)),
    (sp.erf, lambda x, y: (2 / np.sqrt(np.pi)) * np.exp(-x * x)),
    (sp.ndtr, lambda x, y: np.exp(-0.5 * x * x) / _SQRT2PI),
    (sp.log_ndtr, lambda x, y: np.exp(-0.5 * x * x - y) / _SQRT2PI),
    (sp.ndtri, lambda x, y: _SQRT2PI * np.exp(0.5 * y * y)),
]:
    _unary(_fun, _deriv)


@rrule(np.negative)
def negative_rrule(x):
    def negative_pullback(ybar):
        return (-ybar,)
    return -x, negative_pullback


@frule(np.negative)
def negative_frule(primals, tangents):
    return -primals[0], -tangents[0]


@rrule(np.positive)
def positive_rrule(x):
    return x, lambda ybar: (ybar,)


@rrule(np.conjugate)
def conjugate_rrule(x):
    def conjugate_pullback(ybar):
        return (np.conj(ybar),)
    return np.conj(x), conjugate_pullback


@frule(np.conjugate)
def conjugate_frule(primals, tangents):
    return np.conj(primals[0]), np.conj(tangents[0])


@rrule(np.real)
def real_rrule(x):
    def real_pullback(ybar):
        return (np.real(ybar),)
    return np.real(x), real_pullback


@frule(np.real)
def real_frule(primals, tangents):
    return np.real(primals[0]), np.real(tangents[0])


@rrule(np.imag)
def imag_rrule(x):
    def imag_pullback(ybar):
        return (1j * np.real(ybar),)
    return np.imag(x), imag_pullback


@frule(np.imag)
def imag_frule(primals, tangents):
    return np.imag(primals[0]), np.imag(tangents[0])


def _safe(y):
    return np.where(value(y) == 0, 1.0, y)


@rrule(np.absolute)
def absolute_rrule(x):
    y = np.absolute(x)

    def absolute_pullback(ybar):
        if _dtype(x).kind == "c":
            return (np.real(ybar) * x / _safe(y),)
        return (ybar * np.sign(x),)
    return y, absolute_pullback


@frule(np.absolute)
def absolute_frule(primals, tangents):
    (x,), (xdot,) = primals, tangents
    y = np.absolute(x)
    if _dtype(x).kind == "c":
        return y, np.real(np.conj(x) * xdot) / _safe(y)
    return y, np.sign(x) * xdot


# ----------------------------------------------- elementwise, two arguments

@rrule(np.add)
def add_rrule(a, b):
    sa, sb = _shape(a), _shape(b)

    def add_pullback(ybar):
        return (thunk(lambda: _unbroadcast(ybar, sa)), thunk(lambda: _unbroadcast(ybar, sb)))
    return a + b, add_pullback


@frule(np.add)
def add_frule(primals, tangents):
    return primals[0] + primals[1], _add(*tangents)


@rrule(np.subtract)
def subtract_rrule(a, b):
    sa, sb = _shape(a), _shape(b)

    def subtract_pullback(ybar):
        return (thunk(lambda: _unbroadcast(ybar, sa)), thunk(lambda: _unbroadcast(-ybar, sb)))
    return a - b, subtract_pullback


@frule(np.subtract)
def subtract_frule(primals, tangents):
    adot, bdot = tangents
    return primals[0] - primals[1], _add(adot, None if bdot is None else -bdot)


@rrule(np.multiply)
def multiply_rrule(a, b):
    sa, sb = _shape(a), _shape(b)

    def multiply_pullback(ybar):
        return (thunk(lambda: _scaled(ybar, _conj(b), sa)),
                thunk(lambda: _scaled(ybar, _conj(a), sb)))
    return a * b, multiply_pullback


@frule(np.multiply)
def multiply_frule(primals, tangents):
    (a, b), (adot, bdot) = primals, tangents
    return a * b, _add(None if adot is None else adot * b, None if bdot is None else a * bdot)


@rrule(np.true_divide)
def divide_rrule(a, b):
    sa, sb = _shape(a), _shape(b)
    y = a / b

    def divide_pullback(ybar):
        return (thunk(lambda: _unbroadcast(ybar / _conj(b), sa)),
                thunk(lambda: _unbroadcast(-ybar * _conj(y / b), sb)))
    return y, divide_pullback


@frule(np.true_divide)
def divide_frule(primals, tangents):
    (a, b), (adot, bdot) = primals, tangents
    y = a / b
    return y, _add(None if adot is None else adot / b, None if bdot is None else -y * bdot / b)


def _log0(a):
    """``log a`` with ``log 0`` replaced by 0, for ``d(a^b)/db = a^b log a``."""
    return np.log(np.where(value(a) == 0, 1.0, a))


def _power_da(a, b):
    if np.ndim(value(b)) == 0 and value(b) == 0:
        return 0.0
    return b * np.power(a, b - 1)


@rrule(np.power)
def power_rrule(a, b):
    sa, sb = _shape(a), _shape(b)
    y = np.power(a, b)

    def power_pullback(ybar):
        return (thunk(lambda: _unbroadcast(ybar * _conj(_power_da(a, b)), sa)),
                thunk(lambda: _unbroadcast(ybar * _conj(y * _log0(a)), sb)))
    return y, power_pullback


@frule(np.power)
def power_frule(primals, tangents):
    (a, b), (adot, bdot) = primals, tangents
    y = np.power(a, b)
    return y, _add(None if adot is None else _power_da(a, b) * adot,
                   None if bdot is None else y * _log0(a) * bdot)


def _extremum(fun, larger):
    name = fun.__name__

    def weight(a, b):
        a, b = value(a), value(b)
        return np.where(larger(a, b), 1.0, np.where(a == b, 0.5, 0.0))

    @rrule(fun)
    def extremum_rrule(a, b):
        sa, sb, w = _shape(a), _shape(b), weight(a, b)

        def pullback(ybar):
            return (thunk(lambda: _unbroadcast(ybar * w, sa)),
                    thunk(lambda: _unbroadcast(ybar * (1 - w), sb)))
        return fun(a, b), _named(pullback, f"{name}_pullback")

    @frule(fun)
    def extremum_frule(primals, tangents):
        (a, b), (adot, bdot) = primals, tangents
        w = weight(a, b)
        return fun(a, b), _add(None if adot is None else w * adot,
                               None if bdot is None else (1 - w) * bdot)


_extremum(np.maximum, np.greater)
_extremum(np.minimum, np.less)


@rrule(np.where)
def where_rrule(cond, a, b):
    cond = value(cond)
    sa, sb = _shape(a), _shape(b)

    def where_pullback(ybar):
        return (None, thunk(lambda: _unbroadcast(np.where(cond, ybar, 0.0), sa)),
                thunk(lambda: _unbroadcast(np.where(cond, 0.0, ybar), sb)))
    return np.where(cond, a, b), where_pullback


@frule(np.where)
def where_frule(primals, tangents):
    cond, a, b = primals
    _, adot, bdot = tangents
    cond = value(cond)
    return np.where(cond, a, b), np.where(cond, 0.0 if adot is None else adot,
                                          0.0 if bdot is None else bdot)


def _clip_masks(x, lo, hi):
    x = value(x)
    below = np.zeros(np.shape(x), bool) if lo is None else x < value(lo)
    above = np.zeros(np.shape(x), bool) if hi is None else x > value(hi)
    return below, above


@rrule(np.clip)
def clip_rrule(x, lo=None, hi=None, **kw):
    below, above = _clip_masks(x, lo, hi)
    inside = ~(below | above)

    def clip_pullback(ybar):
        return (np.where(inside, ybar, 0.0),
                thunk(lambda: _unbroadcast(np.where(below, ybar, 0.0), _shape(lo))),
                thunk(lambda: _unbroadcast(np.where(above, ybar, 0.0), _shape(hi))))
    return np.clip(x, lo, hi, **kw), clip_pullback


@frule(np.clip)
def clip_frule(primals, tangents, **kw):
    x, lo, hi = (tuple(primals) + (None, None))[:3]
    xdot, lodot, hidot = (tuple(tangents) + (None, None))[:3]
    below, above = _clip_masks(x, lo, hi)
    ydot = np.where(below | above, 0.0, 0.0 if xdot is None else xdot)
    if lodot is not None:
        ydot = ydot + np.where(below, lodot, 0.0)
    if hidot is not None:
        ydot = ydot + np.where(above, hidot, 0.0)
    return np.clip(x, lo, hi, **kw), ydot


# ----------------------------------------------------------- linear algebra

def _mT(a):
    """Conjugate transpose of the last two axes (sparse matrices too)."""
    if hasattr(a, "tocsr"):
        return a.conj().T if a.dtype.kind == "c" else a.T
    a = _conj(a)
    return a.T if len(_shape(a)) == 2 else np.swapaxes(a, -1, -2)


def _matmul_cotangents(ybar, a, b):
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 1 and nb == 1:
        return lambda: ybar * _conj(b), lambda: ybar * _conj(a)
    if nb == 1:
        return (lambda: _unbroadcast(ybar[..., :, None] * _conj(b), _shape(a)),
                lambda: _mT(a) @ ybar if na == 2 else
                _unbroadcast((_mT(a) @ ybar[..., :, None])[..., 0], _shape(b)))
    if na == 1:
        return (lambda: _unbroadcast((ybar[..., None, :] @ _mT(b))[..., 0, :], _shape(a)),
                lambda: _unbroadcast(_conj(a)[:, None] * ybar[..., None, :], _shape(b)))
    return (lambda: _unbroadcast(ybar @ _mT(b), _shape(a)),
            lambda: _unbroadcast(_mT(a) @ ybar, _shape(b)))


@rrule(np.matmul)
def matmul_rrule(a, b):
    def matmul_pullback(ybar):
        da, db = _matmul_cotangents(ybar, a, b)
        return thunk(da), thunk(db)
    return a @ b, matmul_pullback


@frule(np.matmul)
def matmul_frule(primals, tangents):
    (a, b), (adot, bdot) = primals, tangents
    return a @ b, _add(None if adot is None else adot @ b, None if bdot is None else a @ bdot)


@rrule(np.dot)
def dot_rrule(a, b):
    if np.ndim(value(a)) == 0 or np.ndim(value(b)) == 0:
        return multiply_rrule(a, b)
    if len(_shape(a)) > 2 or len(_shape(b)) > 2:
        raise NoRuleError("no rule for numpy.dot of arrays with more than 2 dimensions; "
                          "use np.matmul or np.einsum")
    return matmul_rrule(a, b)


@frule(np.dot)
def dot_frule(primals, tangents):
    if np.ndim(value(primals[0])) == 0 or np.ndim(value(primals[1])) == 0:
        return multiply_frule(primals, tangents)
    return matmul_frule(primals, tangents)


@rrule(np.vdot)
def vdot_rrule(a, b):
    sa, sb = _shape(a), _shape(b)

    def vdot_pullback(ybar):
        return (thunk(lambda: np.reshape(np.conj(ybar) * b, sa)),
                thunk(lambda: np.reshape(ybar * a, sb)))
    return np.vdot(a, b), vdot_pullback


@frule(np.vdot)
def vdot_frule(primals, tangents):
    (a, b), (adot, bdot) = primals, tangents
    return np.vdot(a, b), _add(None if adot is None else np.vdot(adot, b),
                               None if bdot is None else np.vdot(a, bdot))


@rrule(np.outer)
def outer_rrule(a, b):
    sa, sb = _shape(a), _shape(b)

    def outer_pullback(ybar):
        return (thunk(lambda: np.reshape(ybar @ _conj(np.ravel(b)), sa)),
                thunk(lambda: np.reshape(_conj(np.ravel(a)) @ ybar, sb)))
    return np.outer(a, b), outer_pullback


@frule(np.outer)
def outer_frule(primals, tangents):
    (a, b), (adot, bdot) = primals, tangents
    return np.outer(a, b), _add(None if adot is None else np.outer(adot, b),
                                None if bdot is None else np.outer(a, bdot))


@rrule(np.linalg.solve)
def solve_rrule(A, b):
    x = np.linalg.solve(A, b)

    def solve_pullback(ybar):
        bbar = np.linalg.solve(_mT(A), ybar)
        if len(_shape(b)) == 1:
            return thunk(lambda: -bbar[:, None] * _conj(x)[None, :]), bbar
        return thunk(lambda: -(bbar @ _mT(x))), bbar
    return x, solve_pullback


@frule(np.linalg.solve)
def solve_frule(primals, tangents):
    (A, b), (Adot, bdot) = primals, tangents
    x = np.linalg.solve(A, b)
    rhs = _add(bdot, None if Adot is None else -(Adot @ x))
    return x, None if rhs is None else np.linalg.solve(A, rhs)


def _two_norm(x, axis, keepdims):
    return np.sqrt(np.sum(np.real(np.conj(x) * x), axis=axis, keepdims=keepdims))


def _norm_traced(x, ord=None, axis=None, keepdims=False):
    """Vector p-norms by traced operations (autograd-style composite rule)."""
    if ord in (None, 2, "fro"):
        return _two_norm(x, axis, keepdims)
    a = np.abs(x)
    if ord == np.inf:
        return np.max(a, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return np.min(a, axis=axis, keepdims=keepdims)
    if isinstance(ord, (int, float)) and ord >= 1:
        return np.sum(a ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)
    raise NoRuleError(f"no differentiation rule for numpy.linalg.norm with ord={ord!r}")


@rrule(np.linalg.norm)
def norm_rrule(x, ord=None, axis=None, keepdims=False):
    if ord is not None and len(_shape(x)) == 2 and axis is None and ord != "fro":
        raise NoRuleError(f"no differentiation rule for matrix norm ord={ord!r}")
    if ord in (None, 2, "fro"):
        y = np.linalg.norm(x, ord, axis, keepdims)
        kept = _kept_shape(_shape(x), axis, keepdims)

        def norm_pullback(ybar):
            ys = np.reshape(y, kept)
            return (np.reshape(np.real(ybar), kept) * x / _safe(ys),)
        return y, norm_pullback
    from .api import pullback
    return pullback(lambda x: _norm_traced(x, ord, axis, keepdims), x)


@frule(np.linalg.norm)
def norm_frule(primals, tangents, **kw):
    from .api import jvp
    return jvp(lambda x: _norm_traced(x, *primals[1:], **kw), primals[:1], tangents[:1])


# --------------------------------------------------------------- reductions

def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axis = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return tuple(a % ndim for a in axis)


def _kept_shape(shape, axis, keepdims=False):
    axes = _axes(axis, len(shape))
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _expand(ybar, shape, axis):
    """Broadcast the cotangent of a reduction back to the input `shape`."""
    if _shape(ybar) != shape:
        ybar = np.reshape(ybar, _kept_shape(shape, axis))
    return np.broadcast_to(ybar, shape)


@rrule(np.sum)
def sum_rrule(x, axis=None, dtype=None, out=None, keepdims=False, **kw):
    shape = _shape(x)

    def sum_pullback(ybar):
        return (_expand(ybar, shape, axis),)
    return np.sum(x, axis=axis, keepdims=keepdims), sum_pullback


@frule(np.sum)
def sum_frule(primals, tangents, axis=None, dtype=None, out=None, keepdims=False, **kw):
    return (np.sum(primals[0], axis=axis, keepdims=keepdims),
            np.sum(tangents[0], axis=axis, keepdims=keepdims))


@rrule(np.mean)
def mean_rrule(x, axis=None, dtype=None, out=None, keepdims=False, **kw):
    shape = _shape(x)
    n = int(np.prod([shape[a] for a in _axes(axis, len(shape))]))

    def mean_pullback(ybar):
        return (_expand(ybar / n, shape, axis),)
    return np.mean(x, axis=axis, keepdims=keepdims), mean_pullback


@frule(np.mean)
def mean_frule(primals, tangents, axis=None, dtype=None, out=None, keepdims=False, **kw):
    return (np.mean(primals[0], axis=axis, keepdims=keepdims),
            np.mean(tangents[0], axis=axis, keepdims=keepdims))


def _reduce_extremum(fun):
    name = fun.__name__

    def share(x, y, axis):
        """Where `x` attains the extremum, split evenly among ties."""
        hit = value(x) == np.reshape(value(y), _kept_shape(_shape(x), axis))
        return hit / np.sum(hit, axis=_axes(axis, hit.ndim), keepdims=True)

    @rrule(fun)
    def extremum_rrule(x, axis=None, out=None, keepdims=False, **kw):
        y = fun(x, axis=axis, keepdims=keepdims)
        w = share(x, y, axis)

        def pullback(ybar):
            return (_expand(ybar, _shape(x), axis) * w,)
        return y, _named(pullback, f"{name}_pullback")

    @frule(fun)
    def extremum_frule(primals, tangents, axis=None, out=None, keepdims=False, **kw):
        (x,), (xdot,) = primals, tangents
        y = fun(x, axis=axis, keepdims=keepdims)
        return y, np.sum(share(x, y, axis) * xdot, axis=axis, keepdims=keepdims)


for _fun in {np.max, np.min, np.amax, np.amin}:
    _reduce_extremum(_fun)


# ------------------------------------------------------- shape manipulation

def _reshaping(fun):
    """Rules of a function that only rearranges (a view of) its first argument."""
    name = fun.__name__

    @rrule(fun)
    def reshaping_rrule(x, *args, **kw):
        shape = _shape(x)

        def pullback(ybar):
            return (np.reshape(ybar, shape),) + (None,) * len(args)
        return fun(x, *args, **kw), _named(pullback, f"{name}_pullback")

    @frule(fun)
    def reshaping_frule(primals, tangents, **kw):
        return fun(*primals, **kw), fun(tangents[0], *primals[1:], **kw)


for _fun in (np.reshape, np.ravel, np.squeeze, np.expand_dims, np.atleast_1d):
    _reshaping(_fun)


@rrule(np.transpose)
def transpose_rrule(x, axes=None):
    inverse = None if axes is None else tuple(np.argsort(axes))

    def transpose_pullback(ybar):
        return np.transpose(ybar, inverse), None
    return np.transpose(x, axes), transpose_pullback


@frule(np.transpose)
def transpose_frule(primals, tangents):
    return np.transpose(*primals), np.transpose(tangents[0], *primals[1:])


@rrule(np.swapaxes)
def swapaxes_rrule(x, a1, a2):
    def swapaxes_pullback(ybar):
        return np.swapaxes(ybar, a1, a2), None, None
    return np.swapaxes(x, a1, a2), swapaxes_pullback


@frule(np.swapaxes)
def swapaxes_frule(primals, tangents):
    return np.swapaxes(*primals), np.swapaxes(tangents[0], *primals[1:])


@rrule(np.broadcast_to)
def broadcast_to_rrule(x, shape, **kw):
    sx = _shape(x)

    def broadcast_to_pullback(ybar):
        return _unbroadcast(ybar, sx), None
    return np.broadcast_to(x, shape), broadcast_to_pullback


@frule(np.broadcast_to)
def broadcast_to_frule(primals, tangents, **kw):
    return np.broadcast_to(*primals), np.broadcast_to(tangents[0], primals[1])


def _filled(tangents, primals):
    return [np.zeros(_shape(p), _dtype(p)) if t is None else t
            for t, p in zip(tangents, primals)]


@rrule(np.concatenate)
def concatenate_rrule(arrays, axis=0, **kw):
    ends = np.cumsum([_shape(a)[axis] for a in arrays])
    starts = np.concatenate([[0], ends[:-1]])
    ndim = len(_shape(arrays[0]))
    ax = axis % ndim

    def concatenate_pullback(ybar):
        pieces = tuple(
            getitem(ybar, (slice(None),) * ax + (slice(int(s), int(e)),))
            for s, e in zip(starts, ends))
        return pieces, None
    return np.concatenate(arrays, axis, **kw), concatenate_pullback


@frule(np.concatenate)
def concatenate_frule(primals, tangents, axis=0, **kw):
    arrays = primals[0]
    axis = primals[1] if len(primals) > 1 else axis
    return (np.concatenate(arrays, axis, **kw),
            np.concatenate(_filled(tangents[0], arrays), axis, **kw))


@rrule(np.stack)
def stack_rrule(arrays, axis=0, **kw):
    ax = axis % (len(_shape(arrays[0])) + 1)

    def stack_pullback(ybar):
        return tuple(getitem(ybar, (slice(None),) * ax + (i,))
                     for i in range(len(arrays))), None
    return np.stack(arrays, axis, **kw), stack_pullback


@frule(np.stack)
def stack_frule(primals, tangents, axis=0, **kw):
    arrays = primals[0]
    axis = primals[1] if len(primals) > 1 else axis
    return np.stack(arrays, axis, **kw), np.stack(_filled(tangents[0], arrays), axis, **kw)


# ----------------------------------------------------- indexing and scatter

def _basic(idx) -> bool:
    items = idx if isinstance(idx, tuple) else (idx,)
    return all(isinstance(i, (int, np.integer, slice)) or i is None or i is Ellipsis
               for i in items)


@primitive
def scatter_add(x, idx, v):
    """``x`` with ``v`` added at ``x[idx]``, repeated indices summed.

    The functional form of ``np.add.at`` (JAX's ``x.at[idx].add(v)``), the
    transpose of indexing.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> ad.scatter_add(np.zeros(3), np.array([0, 2, 0]), np.ones(3))
    array([2., 0., 1.])
    """
    x = np.asarray(x)
    out = np.array(x, dtype=np.result_type(x, v), copy=True)
    if _basic(idx):
        out[idx] += v
    elif out.ndim == 1 and isinstance(idx, np.ndarray) and idx.dtype.kind in "iu":
        flat = idx.ravel()
        w = np.broadcast_to(v, idx.shape).ravel()
        n = out.shape[0]
        out += np.bincount(flat, np.real(w), n)
        if np.iscomplexobj(w):
            out += 1j * np.bincount(flat, np.imag(w), n)
    else:
        np.add.at(out, idx, v)
    return out


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


# ------------------------------------------------------ not differentiable

_nondiff.update({
    np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
    np.logical_and, np.logical_or, np.logical_not, np.logical_xor,
    np.isfinite, np.isnan, np.isinf, np.signbit, np.sign, np.floor, np.ceil,
    np.rint, np.trunc, np.round, np.around, np.heaviside,
    np.argmax, np.argmin, np.argsort, np.nonzero, np.flatnonzero, np.searchsorted,
    np.shape, np.ndim, np.size, np.zeros_like, np.ones_like, np.empty_like,
    np.full_like, np.result_type, np.iscomplexobj, np.isrealobj, np.iscomplex,
    np.isreal, np.any, np.all, np.count_nonzero, np.isclose, np.allclose,
    np.array_equal,
})
