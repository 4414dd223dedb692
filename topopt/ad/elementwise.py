"""Rules of elementwise functions: ufuncs of one and two arguments, where, clip,
remainder and fmod.

Complex convention: for ``y = f(z)`` holomorphic, ``zbar = ybar * conj(f'(z))``
and ``zdot -> f'(z) zdot``; the walk takes the real part of a cotangent
that reaches a real argument. Ufunc keywords (``dtype=``, ``where=``...) are
normalised by `callforms.ufunc_call` before these rules run, so the rules
take the inputs only.
"""

from __future__ import annotations

import sys

import numpy as np

from .callforms import callform
from .core import _dtype, _shape, value
from .extend import frule, rrule, thunk
from .registry import REGISTRY
from .rulekit import _add, _conj, _named, _safe, _scaled, _unbroadcast

# ------------------------------------------------ elementwise, one argument


def _unary(fun, deriv):
    """Rules of a holomorphic elementwise `fun` with ``f'(x) = deriv(x, y)``."""
    name = fun.__name__

    @rrule(fun)
    def unary_rrule(x):
        y = fun(x)

        def pullback(ybar):
            return (_scaled(ybar, _conj(deriv(x, y)), _shape(y)),)
        return y, _named(pullback, f"{name}_pullback")

    @frule(fun)
    def unary_frule(primals, tangents):
        (x,), (xdot,) = primals, tangents
        y = fun(x)
        return y, deriv(x, y) * xdot


_LN10, _LN2, _SQRT2PI = np.log(10.0), np.log(2.0), np.sqrt(2 * np.pi)

UNARY = {
    np.exp: lambda x, y: y,
    np.expm1: lambda x, y: y + 1,
    np.exp2: lambda x, y: y * _LN2,
    np.log: lambda x, y: 1 / x,
    np.log1p: lambda x, y: 1 / (1 + x),
    np.log10: lambda x, y: 1 / (x * _LN10),
    np.log2: lambda x, y: 1 / (x * _LN2),
    np.sqrt: lambda x, y: 0.5 / y,
    np.cbrt: lambda x, y: 1 / (3 * y * y),
    np.deg2rad: lambda x, y: np.pi / 180 + 0 * x,
    np.radians: lambda x, y: np.pi / 180 + 0 * x,
    np.rad2deg: lambda x, y: 180 / np.pi + 0 * x,
    np.degrees: lambda x, y: 180 / np.pi + 0 * x,
    np.square: lambda x, y: 2 * x,
    np.reciprocal: lambda x, y: -y * y,
    np.sin: lambda x, y: np.cos(x),
    np.cos: lambda x, y: -np.sin(x),
    np.tan: lambda x, y: 1 + y * y,
    np.arctan: lambda x, y: 1 / (1 + x * x),
    np.sinh: lambda x, y: np.cosh(x),
    np.cosh: lambda x, y: np.sinh(x),
    np.tanh: lambda x, y: 1 - y * y,
    np.arcsin: lambda x, y: 1 / np.sqrt(1 - x * x),
    np.arccos: lambda x, y: -1 / np.sqrt(1 - x * x),
    np.arcsinh: lambda x, y: 1 / np.sqrt(x * x + 1),
    np.arccosh: lambda x, y: 1 / (np.sqrt(x - 1) * np.sqrt(x + 1)),
    np.arctanh: lambda x, y: 1 / (1 - x * x),
    np.fabs: lambda x, y: np.sign(x),          # real input only (numpy refuses complex)
}

# scipy.special's, by name: registered once scipy.special is imported (the
# import costs a quarter of a second, and a traced call needs it imported)
SPECIAL_UNARY = {
    "expit": lambda x, y: y * (1 - y),
    "erf": lambda x, y: (2 / np.sqrt(np.pi)) * np.exp(-x * x),
    "ndtr": lambda x, y: np.exp(-0.5 * x * x) / _SQRT2PI,
    "log_ndtr": lambda x, y: np.exp(-0.5 * x * x - y) / _SQRT2PI,
    "ndtri": lambda x, y: _SQRT2PI * np.exp(0.5 * y * y),
}

for _fun, _deriv in UNARY.items():
    _unary(_fun, _deriv)


def _special_rules(derivatives: dict):
    """The registration of the rules of scipy.special's ufuncs `derivatives` (by name)."""
    def register():
        sp = sys.modules["scipy.special"]
        for name, deriv in derivatives.items():
            fun = getattr(sp, name)
            if not (REGISTRY.rrules.get(fun) or REGISTRY.frules.get(fun)):  # a user's first
                _unary(fun, deriv)
    return register


REGISTRY.defer("scipy.special", _special_rules(SPECIAL_UNARY))


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
    def positive_pullback(ybar):
        return (ybar,)
    return np.positive(x), positive_pullback


@frule(np.positive)
def positive_frule(primals, tangents):
    return np.positive(primals[0]), tangents[0]


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


callform(np.real, 1)
callform(np.imag, 1)


@rrule(np.absolute)
def absolute_rrule(x):
    y = np.absolute(x)

    def absolute_pullback(ybar):
        if np.iscomplexobj(value(x)):
            return (np.real(ybar) * x / _safe(y),)
        return (ybar * np.sign(x),)
    return y, absolute_pullback


@frule(np.absolute)
def absolute_frule(primals, tangents):
    (x,), (xdot,) = primals, tangents
    y = np.absolute(x)
    if np.iscomplexobj(value(x)):
        return y, np.real(np.conj(x) * xdot) / _safe(y)
    return y, np.sign(x) * xdot


def _sign(x):
    """``np.sign``: piecewise constant on real input (no derivative: the rule of the
    functions without one), ``z / |z|`` (0 at 0) on complex input, by traced operations."""
    if _dtype(x).kind != "c":
        return NotImplemented
    r = np.absolute(x)
    t = np.where(value(r) == 0, 0.0, x / _safe(r))
    return np.sign(value(x)) + (t - value(t))      # numpy's value, the derivative of z / |z|


callform(np.sign, 1, rewrite=_sign, always=True, params=("x",))


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
    """Rules of an elementwise maximum/minimum (ties split evenly)."""
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


def _where_rewrite(condition, x=None, y=None):
    if x is None and y is None:
        return np.nonzero(value(condition))
    return NotImplemented


callform(np.where, 3, rewrite=_where_rewrite)


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


# numpy 2: np.clip(x, min=..., max=...) is np.clip(x, a_min, a_max)
callform(np.clip, 3, aliases={"min": "a_min", "max": "a_max"})


@rrule(np.clip)
def clip_rrule(x, lo=None, hi=None):
    below, above = _clip_masks(x, lo, hi)
    inside = ~(below | above)
    sx = _shape(x)

    def clip_pullback(ybar):
        return (thunk(lambda: _unbroadcast(np.where(inside, ybar, 0.0), sx)),
                thunk(lambda: _unbroadcast(np.where(below, ybar, 0.0), _shape(lo))),
                thunk(lambda: _unbroadcast(np.where(above, ybar, 0.0), _shape(hi))))
    return np.clip(x, lo, hi), clip_pullback


@frule(np.clip)
def clip_frule(primals, tangents):
    x, lo, hi = (tuple(primals) + (None, None))[:3]
    xdot, lodot, hidot = (tuple(tangents) + (None, None))[:3]
    below, above = _clip_masks(x, lo, hi)
    y = np.clip(x, lo, hi)
    ydot = np.where(below | above, 0.0, 0.0 if xdot is None else xdot)
    if lodot is not None:
        ydot = ydot + np.where(below, lodot, 0.0)
    if hidot is not None:
        ydot = ydot + np.where(above, hidot, 0.0)
    return y, np.broadcast_to(ydot, _shape(y)) if _shape(ydot) != _shape(y) else ydot


# ------------------------------------------------- remainder, fmod

def _modulo(fun, quotient):
    """Rules of ``a - q(a / b) b`` with a piecewise constant ``q`` (floor, trunc)."""
    name = fun.__name__

    @rrule(fun)
    def modulo_rrule(a, b):
        sa, sb = _shape(a), _shape(b)
        q = quotient(value(a) / value(b))

        def pullback(ybar):
            return (thunk(lambda: _unbroadcast(ybar, sa)),
                    thunk(lambda: _unbroadcast(-ybar * q, sb)))
        return fun(a, b), _named(pullback, f"{name}_pullback")

    @frule(fun)
    def modulo_frule(primals, tangents):
        (a, b), (adot, bdot) = primals, tangents
        q = quotient(value(a) / value(b))
        return fun(a, b), _add(adot, None if bdot is None else -q * bdot)


_modulo(np.remainder, np.floor)
_modulo(np.fmod, np.trunc)


def _binary(fun, partials):
    """Rules of a real binary ufunc with ``partials(a, b, y) -> (dy/da, dy/db)``."""
    name = fun.__name__

    @rrule(fun)
    def binary_rrule(a, b):
        sa, sb, y = _shape(a), _shape(b), fun(a, b)

        def pullback(ybar):
            da, db = partials(a, b, y)
            return (thunk(lambda: _unbroadcast(ybar * da, sa)),
                    thunk(lambda: _unbroadcast(ybar * db, sb)))
        return y, _named(pullback, f"{name}_pullback")

    @frule(fun)
    def binary_frule(primals, tangents):
        (a, b), (adot, bdot) = primals, tangents
        y = fun(a, b)
        da, db = partials(a, b, y)
        return y, _add(None if adot is None else da * adot, None if bdot is None else db * bdot)


_binary(np.arctan2, lambda a, b, y: (b / (a * a + b * b), -a / (a * a + b * b)))
_binary(np.hypot, lambda a, b, y: (a / y, b / y))
