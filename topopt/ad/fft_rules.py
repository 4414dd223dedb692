"""Rules of numpy.fft: every transform, with ``n=`` / ``s=`` (padding and cropping),
``axis=`` / ``axes=`` and ``norm=``.

The four one-dimensional transforms have rules; each is linear (``irfft``
real-linear), so its forward rule is the transform of the tangent and its
pullback the adjoint, written with the transforms themselves (hence every
mode, nested ones included):

* ``fft`` / ``ifft`` with ``norm`` have the adjoint ``ifft`` / ``fft`` with
  the dual norm (``'backward'`` and ``'forward'`` swap, ``'ortho'`` stays),
  followed by the adjoint of numpy's resizing to ``n`` (crop what it padded,
  pad with zeros what it cropped);
* ``rfft`` keeps the first ``n // 2 + 1`` entries of ``fft`` of a real
  signal: the adjoint pads the cotangent with zeros to ``n``, takes ``ifft``
  with the dual norm and its real part;
* ``irfft`` reads the half spectrum (the imaginary parts of the zero and, for
  even ``n``, the Nyquist bins ignored): the adjoint is ``w rfft`` with the
  dual norm, ``w`` 1 on those bins and 2 on the others.

``fft2``/``fftn``/``ifft2``/``ifftn``/``rfft2``/``rfftn``/``irfft2``/``irfftn``
are the loops numpy itself runs over the one-dimensional ones, ``hfft`` /
``ihfft`` are ``irfft`` / ``rfft`` of the conjugate with the swapped norm,
and ``fftshift`` / ``ifftshift`` are `np.roll`.

Examples
--------
>>> import numpy as np
>>> from topopt import ad
>>> g = ad.gradient(lambda x: np.sum(np.abs(np.fft.rfft(x, n=8)) ** 2),
...                 np.array([1.0, 2.0, 0.0, 0.0]))
>>> np.allclose(g, [10.0, 20.0, 2.0, 4.0])
True
"""

from __future__ import annotations

import warnings

import numpy as np

from .callforms import callform
from .core import _shape, getitem
from .extend import frule, rrule
from .rulekit import _axis

__all__: list = []

_DUAL = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _dual(norm, name):
    if norm not in _DUAL:
        raise ValueError(f"numpy.fft.{name}: norm must be 'backward', 'ortho' or 'forward', "
                         f"got {norm!r}")
    return _DUAL[norm]


def _fit(g, axis, m):
    """`g` cropped or padded with zeros at the end to size `m` along `axis`."""
    shape = _shape(g)
    k = shape[axis]
    if k > m:
        return getitem(g, (slice(None),) * axis + (slice(0, m),))
    if k < m:
        pad = np.zeros(shape[:axis] + (m - k,) + shape[axis + 1:], dtype=np.result_type(g))
        return np.concatenate([g, pad], axis=axis)
    return g


def _size(n, m, name):
    n = m if n is None else int(n)
    if n < 1:
        raise ValueError(f"numpy.fft.{name}: invalid number of FFT data points ({n}) specified")
    return n


def _along(w, axis, nd):
    return np.reshape(w, (-1,) + (1,) * (nd - 1 - axis))


def _c2c(fun, inverse):
    """Rules of `fft` (`inverse` False) or `ifft`."""
    other = np.fft.fft if inverse else np.fft.ifft
    name = fun.__name__
    callform(fun, 1, ("n", "axis", "norm"))

    @rrule(fun)
    def c2c_rrule(a, n=None, axis=-1, norm=None):
        dual = _dual(norm, name)
        ax = _axis(axis, len(_shape(a)), f"numpy.fft.{name}")
        m = _shape(a)[ax]
        _size(n, m, name)

        def fft_pullback(ybar):
            return (_fit(other(ybar, axis=ax, norm=dual), ax, m),)
        return fun(a, n, axis, norm), fft_pullback

    @frule(fun)
    def c2c_frule(primals, tangents, n=None, axis=-1, norm=None):
        _dual(norm, name)
        nd = len(_shape(primals[0]))
        _size(n, _shape(primals[0])[_axis(axis, nd, f"numpy.fft.{name}")], name)
        return fun(primals[0], n, axis, norm), fun(tangents[0], n, axis, norm)


_c2c(np.fft.fft, False)
_c2c(np.fft.ifft, True)

callform(np.fft.rfft, 1, ("n", "axis", "norm"))
callform(np.fft.irfft, 1, ("n", "axis", "norm"))


@rrule(np.fft.rfft)
def rfft_rrule(a, n=None, axis=-1, norm=None):
    dual = _dual(norm, "rfft")
    ax = _axis(axis, len(_shape(a)), "numpy.fft.rfft")
    m = _shape(a)[ax]
    n = _size(n, m, "rfft")

    def rfft_pullback(ybar):
        return (_fit(np.real(np.fft.ifft(ybar, n, axis=ax, norm=dual)), ax, m),)
    return np.fft.rfft(a, n, axis, norm), rfft_pullback


@frule(np.fft.rfft)
def rfft_frule(primals, tangents, n=None, axis=-1, norm=None):
    _dual(norm, "rfft")
    nd = len(_shape(primals[0]))
    _size(n, _shape(primals[0])[_axis(axis, nd, "numpy.fft.rfft")], "rfft")
    return np.fft.rfft(primals[0], n, axis, norm), np.fft.rfft(tangents[0], n, axis, norm)


def _irfft_weights(n):
    w = np.full(n // 2 + 1, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return w


@rrule(np.fft.irfft)
def irfft_rrule(a, n=None, axis=-1, norm=None):
    dual = _dual(norm, "irfft")
    nd = len(_shape(a))
    ax = _axis(axis, nd, "numpy.fft.irfft")
    m = _shape(a)[ax]
    n = _size(n, 2 * (m - 1), "irfft")
    w = _along(_irfft_weights(n), ax, nd)

    def irfft_pullback(xbar):
        return (_fit(w * np.fft.rfft(xbar, axis=ax, norm=dual), ax, m),)
    return np.fft.irfft(a, n, axis, norm), irfft_pullback


@frule(np.fft.irfft)
def irfft_frule(primals, tangents, n=None, axis=-1, norm=None):
    _dual(norm, "irfft")
    _size(n, 1, "irfft")
    return np.fft.irfft(primals[0], n, axis, norm), np.fft.irfft(tangents[0], n, axis, norm)


# ------------------------------------------- n-dimensional: numpy's own loops

def _cook(a, s, axes, name, invreal=False):
    """numpy's ``_cook_nd_args``: the sizes and axes of an n-dimensional transform."""
    shape = _shape(a)
    shapeless = s is None
    if shapeless:
        s = list(shape) if axes is None else [shape[_axis(x, len(shape), f"numpy.fft.{name}")]
                                              for x in axes]
    s = list(s)
    if axes is None:
        if not shapeless:
            warnings.warn(f"numpy.fft.{name}: `axes` should not be `None` if `s` is not `None` "
                          "(deprecated in NumPy 2.0)", DeprecationWarning, stacklevel=4)
        axes = list(range(-len(s), 0))
    axes = [_axis(x, len(shape), f"numpy.fft.{name}") for x in axes]
    if len(s) != len(axes):
        raise ValueError(f"numpy.fft.{name}: shape and axes have different lengths")
    if invreal and shapeless:
        s[-1] = (shape[axes[-1]] - 1) * 2
    return [shape[x] if v == -1 else v for v, x in zip(s, axes)], axes


def _fftn(fun, name, default=None):
    def rewrite(a, s=None, axes=default, norm=None):
        s, axes = _cook(a, s, axes, name)
        for ii in reversed(range(len(axes))):
            a = fun(a, s[ii], axes[ii], norm)
        return a
    return rewrite


def _rfftn(a, s=None, axes=None, norm=None, name="rfftn"):
    s, axes = _cook(a, s, axes, name)
    a = np.fft.rfft(a, s[-1], axes[-1], norm)
    for ii in range(len(axes) - 2, -1, -1):
        a = np.fft.fft(a, s[ii], axes[ii], norm)
    return a


def _irfftn(a, s=None, axes=None, norm=None, name="irfftn"):
    s, axes = _cook(a, s, axes, name, invreal=True)
    for ii in range(len(axes) - 1):
        a = np.fft.ifft(a, s[ii], axes[ii], norm)
    return np.fft.irfft(a, s[-1], axes[-1], norm)


def _two(rewrite, name):
    def rewrite2(a, s=None, axes=(-2, -1), norm=None):
        return rewrite(a, s, axes, norm, name=name)
    return rewrite2


_ND = ("s", "axes", "norm")
callform(np.fft.fftn, 1, _ND, rewrite=_fftn(np.fft.fft, "fftn"), always=True)
callform(np.fft.ifftn, 1, _ND, rewrite=_fftn(np.fft.ifft, "ifftn"), always=True)
callform(np.fft.fft2, 1, _ND, rewrite=_fftn(np.fft.fft, "fft2", (-2, -1)), always=True)
callform(np.fft.ifft2, 1, _ND, rewrite=_fftn(np.fft.ifft, "ifft2", (-2, -1)), always=True)
callform(np.fft.rfftn, 1, _ND, rewrite=_rfftn, always=True)
callform(np.fft.irfftn, 1, _ND, rewrite=_irfftn, always=True)
callform(np.fft.rfft2, 1, _ND, rewrite=_two(_rfftn, "rfft2"), always=True)
callform(np.fft.irfft2, 1, _ND, rewrite=_two(_irfftn, "irfft2"), always=True)


def _hfft(a, n=None, axis=-1, norm=None):
    dual = _dual(norm, "hfft")
    if n is None:
        n = (_shape(a)[_axis(axis, len(_shape(a)), "numpy.fft.hfft")] - 1) * 2
    return np.fft.irfft(np.conj(a), n, axis, norm=dual)


def _ihfft(a, n=None, axis=-1, norm=None):
    return np.conj(np.fft.rfft(a, n, axis, norm=_dual(norm, "ihfft")))


callform(np.fft.hfft, 1, ("n", "axis", "norm"), rewrite=_hfft, always=True)
callform(np.fft.ihfft, 1, ("n", "axis", "norm"), rewrite=_ihfft, always=True)


def _shift(sign):
    def rewrite(x, axes=None):
        shape = _shape(x)
        if axes is None:
            axes = tuple(range(len(shape)))
        if np.ndim(axes) == 0:
            return np.roll(x, sign * (shape[int(axes)] // 2), int(axes))
        return np.roll(x, [sign * (shape[int(a)] // 2) for a in axes], tuple(axes))
    return rewrite


callform(np.fft.fftshift, 1, ("axes",), rewrite=_shift(1), always=True)
callform(np.fft.ifftshift, 1, ("axes",), rewrite=_shift(-1), always=True)
