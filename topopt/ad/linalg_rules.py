"""Rules for numpy.linalg.inv, det and slogdet (stacked matrices too).

* ``Y = inv(A)``: ``dY = -Y dA Y``, so ``Abar = -Y^H Ybar Y^H``.
* ``d = det(A)``: ``dd = sum(C * dA)`` with the cofactor matrix
  ``C = adj(A)^T`` (Jacobi's formula), so ``Abar = dbar conj(C)``. For an
  invertible ``A``, ``C = det(A) inv(A)^T``; at an exactly singular ``A``
  (LAPACK finds a zero pivot) ``C`` comes from the SVD ``A = U S V^H``:
  ``adj(A) = det(U) det(V^H) V adj(S) U^H`` with ``adj(S)_ii = prod_{j != i}
  s_j`` -- finite, and zero only where the rank is below ``n - 1``.
* ``(s, l) = slogdet(A)``: with ``t = tr(A^{-1} dA)``, ``dl = Re t`` and
  ``ds = i s Im t`` (zero for real ``A``), so ``Abar = (lbar - i Im(conj(sbar)
  s)) A^{-H}``.
"""

from __future__ import annotations

import numpy as np

from .callforms import callform
from .core import _dtype, _shape, is_traced, value
from .extend import frule, primitive, rrule
from .rulekit import _add, _conj

__all__: list = []

_LinAlgError = np.linalg.LinAlgError


def _mT(a):
    return np.swapaxes(a, -1, -2)


def _mH(a):
    return _conj(np.swapaxes(a, -1, -2))


def _matrix_scalar(y):
    """A (stacked) scalar shaped to broadcast over the last two axes."""
    return np.expand_dims(y, (-2, -1))


for _fun in (np.linalg.inv, np.linalg.det, np.linalg.slogdet):
    callform(_fun, 1)


# ---------------------------------------------------------------------- inv

@rrule(np.linalg.inv)
def inv_rrule(a):
    y = np.linalg.inv(a)

    def inv_pullback(ybar):
        return (-(_mH(y) @ ybar @ _mH(y)),)
    return y, inv_pullback


@frule(np.linalg.inv)
def inv_frule(primals, tangents):
    y = np.linalg.inv(primals[0])
    return y, -(y @ tangents[0] @ y)


# ---------------------------------------------------------------------- det

def _others(s):
    """``prod_{j != i} s_j`` along the last axis, without division."""
    ones = np.ones(s.shape[:-1] + (1,), s.dtype)
    left = np.cumprod(np.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, s[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return left * right


def _adjugate_svd(a):
    """``adj(a)`` of plain (stacked) matrices through the SVD; exact at singular ones."""
    u, s, vh = np.linalg.svd(a)
    phase = np.linalg.det(u) * np.linalg.det(vh)
    adj = (_mH(vh) * _others(s)[..., None, :]) @ _mH(u)
    return _matrix_scalar(phase) * adj


def _cofactor(a, y):
    """The cofactor matrix ``adj(a)^T`` (``y = det(a)``), traced when `a` is."""
    try:
        return _matrix_scalar(y) * _mT(np.linalg.inv(a))
    except _LinAlgError:
        if is_traced(a):
            raise _LinAlgError(
                "second derivatives of numpy.linalg.det at a singular matrix are not "
                "supported (the first derivative, the cofactor matrix, is)") from None
        return _mT(_adjugate_svd(value(a)))


@rrule(np.linalg.det)
def det_rrule(a):
    y = np.linalg.det(a)

    def det_pullback(ybar):
        # Jacobi: d det = sum(C * dA), C = adj(A)^T
        return (_matrix_scalar(ybar) * _conj(_cofactor(a, y)),)
    return y, det_pullback


@frule(np.linalg.det)
def det_frule(primals, tangents):
    a, = primals
    y = np.linalg.det(a)
    return y, np.sum(_cofactor(a, y) * tangents[0], axis=(-2, -1))


# ------------------------------------------------------------------ slogdet

def _inverse_for_slogdet(a):
    try:
        return np.linalg.inv(a)
    except _LinAlgError:
        raise _LinAlgError(
            "numpy.linalg.slogdet: the matrix is singular (logabsdet = -inf), its "
            "derivative is infinite") from None


@rrule(np.linalg.slogdet)
def slogdet_rrule(a):
    y = np.linalg.slogdet(a)            # a named tuple (sign, logabsdet)
    sign = y[0]
    complex_ = _dtype(a).kind == "c"

    def slogdet_pullback(ybar):
        sbar, lbar = ybar
        coef = None if lbar is None else np.real(lbar)
        if complex_ and sbar is not None:  # the sign of a real matrix is locally constant
            coef = _add(coef, -1j * np.imag(np.conj(sbar) * sign))
        if coef is None:
            return (None,)
        return (_matrix_scalar(coef) * _mH(_inverse_for_slogdet(a)),)
    return y, slogdet_pullback


@frule(np.linalg.slogdet)
def slogdet_frule(primals, tangents):
    a, = primals
    y = np.linalg.slogdet(a)
    sign = y[0]
    t = np.sum(_mT(_inverse_for_slogdet(a)) * tangents[0], axis=(-2, -1))  # tr(A^-1 dA)
    sdot = sign * (1j * np.imag(t)) if _dtype(a).kind == "c" else None
    return y, (sdot, np.real(t))


def _phi(X):
    """The lower triangle of `X` with half its diagonal (Cholesky's derivative)."""
    n = _shape(X)[-1]
    return X * (np.tril(np.ones((n, n))) - 0.5 * np.eye(n))


def _ct(a):
    return np.conj(np.swapaxes(a, -1, -2))


@primitive
def _cholesky_h(A):
    """``np.linalg.cholesky`` of the Hermitian `A`, a primitive with rules of every order."""
    return np.linalg.cholesky(A)


@rrule(_cholesky_h)
def cholesky_h_rrule(A):
    L = _cholesky_h(A)

    def cholesky_pullback(Lbar):
        Y = np.linalg.solve(_ct(L), _phi(_ct(L) @ Lbar))
        X = _ct(np.linalg.solve(_ct(L), _ct(Y)))
        return (0.5 * (X + _ct(X)),)
    return L, cholesky_pullback


@frule(_cholesky_h)
def cholesky_h_frule(primals, tangents):
    (A,), (Adot,) = primals, tangents
    L = _cholesky_h(A)
    W = np.linalg.solve(L, Adot)
    Z = _ct(np.linalg.solve(L, _ct(W)))
    return L, L @ _phi(Z)


def _hermitian_from(a, UPLO):
    """The Hermitian matrix numpy's eigh/cholesky read from one triangle of `a`."""
    if UPLO not in ("L", "U"):
        raise ValueError(f"UPLO must be 'L' or 'U', got {UPLO!r}")
    tri = np.tril if UPLO == "L" else np.triu
    strict = tri(a, -1 if UPLO == "L" else 1)
    return np.real(tri(a) - strict) + strict + np.conj(np.swapaxes(strict, -1, -2)) \
        if np.iscomplexobj(value(a)) else tri(a) + np.swapaxes(strict, -1, -2)


def _cholesky(a, upper=False):
    L = _cholesky_h(_hermitian_from(a, "L"))
    return _ct(L) if upper else L


callform(np.linalg.cholesky, 1, ("upper",), rewrite=_cholesky, always=True)
