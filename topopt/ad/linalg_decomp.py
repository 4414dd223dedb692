"""Rules of the decompositions numpy.linalg.qr, svd (and svdvals) and lstsq.

Each is a primitive whose rules are written with traced operations on its
outputs (so every mode, nested ones included, follows), and a call form that
maps numpy's options onto it or refuses them naming the fix.

* ``Q, R = qr(A)`` (reduced, ``m >= n``, full column rank): with ``X = dA
  R^-1``, ``C = Q^H X`` and ``W = tril(C, -1) - tril(C, -1)^H + i Im diag C``,
  ``dQ = Q (W - C) + X`` and ``dR = (C - W) R``; the pullback is the
  transpose, ``Abar = (Qbar + Q H) R^-H`` with ``G = Rbar R^H - Q^H Qbar`` and
  ``H`` the Hermitian matrix of the upper triangle of ``G`` (real diagonal).
* ``U, s, Vh = svd(A)`` (reduced): with ``dS = U^H dA V`` and ``F_ij = 1 /
  (s_j^2 - s_i^2)``, ``ds = Re diag dS``, ``dU = U (F o (dS S + S dS^H) + i Im
  diag(dS) S^-1) + (I - U U^H) dA V S^-1``, ``dV = V F o (S dS + dS^H S) + (I -
  V V^H) dA^H U S^-1`` (JAX's gauge: the phase of a complex pair moves with
  ``U``); the pullback is its transpose. The singular vectors need distinct
  singular values (and nonzero ones where ``S^-1`` appears).
* ``x = lstsq(A, b)[0]`` (full rank): with ``P = A^+`` and ``r = b - A x``,
  ``dx = P (db - dA x) + P P^H dA^H r + (I - P A) dA^H P^H x``.

Examples
--------
>>> import numpy as np
>>> from topopt import ad
>>> a = np.array([[3.0, 0.0], [0.0, 1.0]])
>>> ad.gradient(lambda a: np.linalg.svd(a, compute_uv=False)[0], a)
array([[1., 0.],
       [0., 0.]])
"""

from __future__ import annotations

import numpy as np

from .callforms import callform
from .core import NoRuleError, _dtype, _shape, value
from .extend import frule, primitive, rrule
from .linalg_rules import _hermitian_from
from .products import eigh

__all__: list = []

_QRResult = type(np.linalg.qr(np.eye(1)))
_SVDResult = type(np.linalg.svd(np.eye(1)))
_EPS = np.finfo(float).eps


def _ct(a):
    return np.conj(np.swapaxes(a, -1, -2))


def _eye(n):
    return np.eye(n, dtype=bool)


def _complex(a) -> bool:
    return _dtype(a).kind == "c"


# ----------------------------------------------------------------------- qr

def _check_qr(A, R):
    m, n = _shape(A)[-2:]
    if m < n:
        raise NoRuleError(
            f"numpy.linalg.qr of a wide matrix ({m} x {n}): no derivative rule (R's "
            "trailing columns make it non-unique); differentiate the QR of a matrix "
            "with rows >= columns")
    d = np.abs(np.diagonal(value(R), axis1=-2, axis2=-1))
    if d.size and np.any(d <= max(m, n) * _EPS * np.max(d, axis=-1, keepdims=True)):
        raise ValueError("numpy.linalg.qr: the derivative needs full column rank; R has a "
                         "zero diagonal entry (a is rank-deficient)")


def _right_solve(X, R):
    """``X R^-1``."""
    return _ct(np.linalg.solve(_ct(R), _ct(X)))


@primitive
def qr(A):
    """The reduced QR decomposition ``(Q, R)`` of `A` (rows >= columns, full rank)."""
    Q, R = np.linalg.qr(np.asarray(A))
    return Q, R


@rrule(qr)
def qr_rrule(A):
    Q, R = qr(A)
    _check_qr(A, R)
    n = _shape(R)[-1]

    def qr_pullback(ybar):
        Qbar, Rbar = ybar
        G = 0.0 if Rbar is None else Rbar @ _ct(R)
        if Qbar is not None:
            G = G - _ct(Q) @ Qbar
        if Qbar is None and Rbar is None:
            return (None,)
        H = np.triu(G, 1) + np.tril(_ct(G), -1) + np.where(_eye(n), np.real(G), 0.0)
        Xbar = Q @ H if Qbar is None else Qbar + Q @ H
        return (_ct(np.linalg.solve(R, _ct(Xbar))),)
    return (Q, R), qr_pullback


@frule(qr)
def qr_frule(primals, tangents):
    (A,), (Adot,) = primals, tangents
    Q, R = qr(A)
    _check_qr(A, R)
    X = _right_solve(Adot, R)
    C = _ct(Q) @ X
    L = np.tril(C, -1)
    W = L - _ct(L)
    if _complex(C):
        W = W + np.where(_eye(_shape(R)[-1]), 1j * np.imag(C), 0.0)
    return (Q, R), (Q @ (W - C) + X, (C - W) @ R)


def _qr(a, mode="reduced"):
    m, n = _shape(a)[-2:]
    if mode == "complete" and m != n:
        raise NoRuleError(
            f"numpy.linalg.qr(mode='complete') of a {m} x {n} matrix: no derivative rule "
            "(the extra columns of Q are not unique); use mode='reduced'")
    if mode not in ("reduced", "complete", "r"):
        raise NoRuleError(f"numpy.linalg.qr(mode={mode!r}): no derivative rule; the rule "
                          "takes mode='reduced', 'complete' (square) or 'r'")
    Q, R = qr(a)
    return R if mode == "r" else _QRResult(Q, R)


callform(np.linalg.qr, 1, ("mode",), rewrite=_qr, always=True)


# ---------------------------------------------------------------------- svd

@primitive
def svd(A):
    """The reduced SVD ``(U, s, Vh)`` of `A`."""
    U, s, Vh = np.linalg.svd(np.asarray(A), full_matrices=False)
    return U, s, Vh


@primitive
def svdvals(A):
    """The singular values of `A`, descending."""
    return np.linalg.svd(np.asarray(A), compute_uv=False)


def _tiny(s, shape):
    return max(shape[-2:]) * _EPS * value(s)[..., :1]


def _check_nonzero(s, shape, what):
    sv = value(s)
    if sv.size and np.any(sv <= _tiny(s, shape)):
        raise ValueError(
            f"numpy.linalg.svd: {what} is undefined at a zero singular value (s = "
            f"{np.array2string(sv, precision=3)}): the matrix is rank-deficient")


def _check_distinct(s, shape, complex_):
    sv = value(s)
    tiny = _tiny(s, shape)
    gaps = np.abs(sv[..., :, None] - sv[..., None, :])[..., ~_eye(sv.shape[-1])]
    if gaps.size and np.any(gaps <= tiny):
        raise ValueError(
            "numpy.linalg.svd: the derivative of U and Vh is undefined at repeated singular "
            f"values (s = {np.array2string(sv, precision=3)}); for the singular values "
            "alone use compute_uv=False")
    m, n = shape[-2:]
    if m != n or complex_:
        _check_nonzero(s, shape, "the derivative of U and Vh of a "
                       + ("complex" if complex_ else "non-square") + " matrix")


def _gaps(s):
    """``F_ij = 1 / (s_j^2 - s_i^2)`` off the diagonal, 0 on it."""
    eye = _eye(_shape(s)[-1])
    d = (s[..., None, :] + s[..., :, None]) * (s[..., None, :] - s[..., :, None])
    return np.where(eye, 0.0, 1.0 / np.where(eye, 1.0, d))


@rrule(svdvals)
def svdvals_rrule(A):
    s = svdvals(A)
    _check_nonzero(s, _shape(A), "the derivative of the singular values")
    U, _, Vh = svd(A)

    def svdvals_pullback(sbar):
        return ((U * sbar[..., None, :]) @ Vh,)
    return s, svdvals_pullback


@frule(svdvals)
def svdvals_frule(primals, tangents):
    (A,), (Adot,) = primals, tangents
    s = svdvals(A)
    _check_nonzero(s, _shape(A), "the derivative of the singular values")
    U, _, Vh = svd(A)
    return s, np.real(np.sum(np.conj(U) * (Adot @ _ct(Vh)), axis=-2))


@rrule(svd)
def svd_rrule(A):
    U, s, Vh = svd(A)
    m, n = _shape(A)[-2:]
    complex_ = _complex(A)

    def svd_pullback(ybar):
        Ubar, sbar, Vhbar = ybar
        if Ubar is None and Vhbar is None:
            return (None,) if sbar is None else ((U * sbar[..., None, :]) @ Vh,)
        _check_distinct(s, (m, n), complex_)
        F, sr, sc = _gaps(s), s[..., None, :], s[..., :, None]
        J = 0.0 if sbar is None else np.where(_eye(_shape(s)[-1]), sbar[..., None, :], 0.0)
        extra = 0.0
        if Ubar is not None:
            Gu = F * (_ct(U) @ Ubar)
            J = J + (Gu + _ct(Gu)) * sr
            if complex_:
                J = J + np.where(_eye(_shape(s)[-1]), 1j * np.imag(_ct(U) @ Ubar) / sr, 0.0)
            if m > n:
                extra = ((Ubar - U @ (_ct(U) @ Ubar)) / sr) @ Vh
        if Vhbar is not None:
            Gv = F * (Vh @ _ct(Vhbar))
            J = J + sc * (Gv + _ct(Gv))
            if n > m:
                extra = extra + (U / sr) @ (Vhbar - (Vhbar @ _ct(Vh)) @ Vh)
        return (U @ J @ Vh + extra,)
    return (U, s, Vh), svd_pullback


@frule(svd)
def svd_frule(primals, tangents):
    (A,), (Adot,) = primals, tangents
    U, s, Vh = svd(A)
    m, n = _shape(A)[-2:]
    complex_ = _complex(A)
    _check_distinct(s, (m, n), complex_)
    V = _ct(Vh)
    dS = _ct(U) @ Adot @ V
    eye = _eye(_shape(s)[-1])
    F, sr, sc = _gaps(s), s[..., None, :], s[..., :, None]
    ds = np.real(np.sum(np.where(eye, dS, 0.0), axis=-1))
    dSS, SdS = dS * sr, sc * dS
    K = F * (dSS + _ct(dSS))
    if complex_:
        K = K + np.where(eye, 1j * np.imag(dS) / sr, 0.0)
    dU, dV = U @ K, V @ (F * (SdS + _ct(SdS)))
    if m > n:
        dAV = Adot @ V
        dU = dU + (dAV - U @ (_ct(U) @ dAV)) / sr
    if n > m:
        dAHU = _ct(Adot) @ U
        dV = dV + (dAHU - V @ (Vh @ dAHU)) / sr
    return (U, s, Vh), (dU, ds, _ct(dV))


def _svd_hermitian(a, compute_uv):
    """numpy's ``hermitian=True`` path: eigh of the lower triangle, sorted by ``|w|``."""
    w, U = eigh(_hermitian_from(a, "L"))
    order = np.argsort(np.abs(value(w)), axis=-1)[..., ::-1]
    s = np.take_along_axis(np.abs(w), order, axis=-1)
    if not compute_uv:         # numpy's value (from eigvalsh), the derivative of s
        s0 = np.linalg.svd(np.asarray(value(a)), compute_uv=False, hermitian=True)
        return s0 + (s - value(s))
    sign = np.take_along_axis(np.sign(value(w)), order, axis=-1)
    U = np.take_along_axis(U, order[..., None, :], axis=-1)
    return _SVDResult(U, s, _ct(U * sign[..., None, :]))


def _svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if hermitian:
        return _svd_hermitian(a, compute_uv)
    if not compute_uv:
        return svdvals(a)
    m, n = _shape(a)[-2:]
    if full_matrices and m != n:
        raise NoRuleError(
            f"numpy.linalg.svd(full_matrices=True) of a {m} x {n} matrix: no derivative rule "
            "(the extra singular vectors are not unique); pass full_matrices=False")
    return _SVDResult(*svd(a))


callform(np.linalg.svd, 1, ("full_matrices", "compute_uv", "hermitian"), rewrite=_svd,
         always=True)
if hasattr(np.linalg, "svdvals"):
    callform(np.linalg.svdvals, 1, (), rewrite=svdvals, always=True)


# -------------------------------------------------------------------- lstsq

@primitive
def lstsq(A, b):
    """The least-squares (minimum-norm) solution of ``A x = b`` for a full-rank `A`."""
    return np.linalg.lstsq(np.asarray(A), np.asarray(b))[0]


def _pinv_full(A):
    """``A^+`` of a full-rank `A` by traced operations."""
    Ah = _ct(A)
    m, n = _shape(A)[-2:]
    return np.linalg.solve(Ah @ A, Ah) if m >= n else _ct(np.linalg.solve(A @ Ah, A))


def _lstsq_parts(A, b, x):
    P = _pinv_full(A)
    col = len(_shape(b)) == 1
    bb, xx = (b[:, None], x[:, None]) if col else (b, x)
    return P, col, bb - A @ xx, xx


@rrule(lstsq)
def lstsq_rrule(A, b):
    x = lstsq(A, b)

    def lstsq_pullback(xbar):
        P, col, r, xx = _lstsq_parts(A, b, x)
        xb = xbar[:, None] if col else xbar
        m, n = _shape(A)[-2:]
        Abar = -_ct(P) @ xb @ _ct(xx) + r @ (_ct(xb) @ (P @ _ct(P)))
        if n > m:
            Abar = Abar + (_ct(P) @ xx) @ (_ct(xb) - (_ct(xb) @ P) @ A)
        bbar = _ct(P) @ xb
        return Abar, bbar[:, 0] if col else bbar
    return x, lstsq_pullback


@frule(lstsq)
def lstsq_frule(primals, tangents):
    (A, b), (Adot, bdot) = primals, tangents
    x = lstsq(A, b)
    P, col, r, xx = _lstsq_parts(A, b, x)
    m, n = _shape(A)[-2:]
    dx = 0.0
    if bdot is not None:
        dx = P @ (bdot[:, None] if col else bdot)
    if Adot is not None:
        dx = dx - P @ (Adot @ xx) + P @ (_ct(P) @ (_ct(Adot) @ r))
        if n > m:
            z = _ct(Adot) @ (_ct(P) @ xx)
            dx = dx + z - P @ (A @ z)
    return x, dx[:, 0] if col else dx


def _lstsq(a, b, rcond=None):
    av, bv = np.asarray(value(a)), np.asarray(value(b))
    if av.ndim != 2 or bv.ndim not in (1, 2):
        raise ValueError("numpy.linalg.lstsq: a must be 2-D and b 1-D or 2-D")
    x0, resid0, rank, s0 = np.linalg.lstsq(av, bv, rcond=rcond)
    m, n = av.shape
    if rank < min(m, n):
        raise ValueError(
            f"numpy.linalg.lstsq: the derivative needs a of full rank; this {m} x {n} a has "
            f"rank {rank} at rcond={rcond} (its solution jumps where the rank changes)")
    x = lstsq(a, b)
    t = svdvals(a)
    s = s0 + (t - value(t))
    if resid0.size:
        r = b - (a @ x)
        resid = np.reshape(np.sum(np.real(r * np.conj(r)), axis=0), resid0.shape)
        resid = resid0 + (resid - value(resid))
    else:
        resid = resid0
    return x, resid, rank, s


callform(np.linalg.lstsq, 2, ("rcond",), rewrite=_lstsq, always=True)
