"""Rules of products and solves: matmul, dot, vdot, outer, linalg.solve, eigh."""

from __future__ import annotations

import numpy as np

from .callforms import callform
from .core import NoRuleError, _shape, value
from .extend import frule, primitive, rrule, thunk
from .rulekit import _add, _conj, _mT, _unbroadcast


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


callform(np.dot, 2)
callform(np.vdot, 2)
callform(np.outer, 2)
callform(np.linalg.solve, 2)


def _scalar_operand(a, b) -> bool:
    return np.ndim(value(a)) == 0 or np.ndim(value(b)) == 0


@rrule(np.dot)
def dot_rrule(a, b):
    if _scalar_operand(a, b):
        sa, sb = _shape(a), _shape(b)

        def dot_pullback(ybar):
            return (thunk(lambda: _unbroadcast(ybar * _conj(b), sa)),
                    thunk(lambda: _unbroadcast(ybar * _conj(a), sb)))
        return np.dot(a, b), dot_pullback
    if len(_shape(a)) > 2 or len(_shape(b)) > 2:
        raise NoRuleError("no rule for numpy.dot of arrays with more than 2 dimensions; "
                          "use np.matmul or np.einsum")
    return matmul_rrule(a, b)


@frule(np.dot)
def dot_frule(primals, tangents):
    (a, b), (adot, bdot) = primals, tangents
    if not _scalar_operand(a, b) and (len(_shape(a)) > 2 or len(_shape(b)) > 2):
        raise NoRuleError("no rule for numpy.dot of arrays with more than 2 dimensions; "
                          "use np.matmul or np.einsum")
    return np.dot(a, b), _add(None if adot is None else np.dot(adot, b),
                              None if bdot is None else np.dot(a, bdot))


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


def _solve(A, B, vec):
    """``A^-1 B``, `B` a stack of vectors when `vec` (numpy reads a 1-d b only as one)."""
    return np.linalg.solve(A, B[..., None])[..., 0] if vec else np.linalg.solve(A, B)


@rrule(np.linalg.solve)
def solve_rrule(A, b):
    x = np.linalg.solve(A, b)
    vec = len(_shape(b)) == 1

    def solve_pullback(ybar):
        bbar = _solve(_mT(A), ybar, vec)       # batched where A or ybar is
        if vec:
            Abar = thunk(lambda: _unbroadcast(-bbar[..., :, None] * _conj(x)[..., None, :],
                                              _shape(A)))
        else:
            Abar = thunk(lambda: _unbroadcast(-(bbar @ _mT(x)), _shape(A)))
        return Abar, _unbroadcast(bbar, _shape(b))
    return x, solve_pullback


@frule(np.linalg.solve)
def solve_frule(primals, tangents):
    (A, b), (Adot, bdot) = primals, tangents
    x = np.linalg.solve(A, b)
    vec = len(_shape(b)) == 1
    Ax = None if Adot is None else (Adot @ x[..., None])[..., 0] if vec else Adot @ x
    rhs = _add(bdot, None if Ax is None else -Ax)
    return x, None if rhs is None else _solve(A, rhs, vec)


# ------------------------------------------------- Hermitian eigenproblem

def _herm(A):
    """Hermitian part ``(A + A^H) / 2`` of the last two axes."""
    return 0.5 * (A + _mT(A))


@primitive
def eigh(A):
    """Eigenvalues (ascending) and eigenvectors of the Hermitian part of `A`.

    ``np.linalg.eigh((A + A^H) / 2)`` as a primitive with rules of every
    order (the pullbacks are traced operations on the eigenpairs). The
    derivative of the eigenvectors needs distinct eigenvalues.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.ad.products import eigh
    >>> w, U = eigh(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> w
    array([1., 3.])
    """
    A = np.asarray(A)
    return np.linalg.eigh(0.5 * (A + np.conj(np.swapaxes(A, -1, -2))))


def _gaps(w):
    """``F_ij = 1 / (w_j - w_i)`` off the diagonal, 0 on it."""
    n = _shape(w)[-1]
    eye = np.eye(n, dtype=bool)
    diff = w[..., None, :] - w[..., :, None]
    return np.where(eye, 0.0, 1.0 / np.where(eye, 1.0, diff))


def _check_distinct(w):
    """Raise where two eigenvalues are equal to rounding (the eigenvectors' derivative
    ``1 / (w_j - w_i)`` is undefined there)."""
    wv = value(w)
    n = wv.shape[-1]
    tiny = n * np.finfo(float).eps * np.max(np.abs(wv), axis=-1, keepdims=True)
    gaps = np.abs(wv[..., :, None] - wv[..., None, :])[..., ~np.eye(n, dtype=bool)]
    if gaps.size and np.any(gaps <= tiny[..., :1]):
        raise ValueError(
            "numpy.linalg.eigh: the derivative of the eigenvectors is undefined at repeated "
            f"eigenvalues (w = {np.array2string(wv, precision=3)}); for the eigenvalues alone "
            "use np.linalg.eigvalsh")


@rrule(eigh)
def eigh_rrule(A):
    w, U = eigh(A)

    def eigh_pullback(ybar):
        wbar, Ubar = ybar
        B = 0.0
        if wbar is not None:
            B = wbar[..., :, None] * np.eye(_shape(w)[-1])
        if Ubar is not None:
            _check_distinct(w)
            B = B + _gaps(w) * (_mT(U) @ Ubar)
        return (_herm(U @ B @ _mT(U)),)
    return (w, U), eigh_pullback


@frule(eigh)
def eigh_frule(primals, tangents):
    (A,), (Adot,) = primals, tangents
    w, U = eigh(A)
    _check_distinct(w)
    M = _mT(U) @ _herm(Adot) @ U
    wdot = np.real(np.sum(M * np.eye(_shape(w)[-1]), axis=-1))
    return (w, U), (wdot, U @ (_gaps(w) * M))


@primitive
def eigvalsh(A):
    """The eigenvalues (ascending) of the Hermitian part of `A`.

    The eigenvalues of `eigh` without its eigenvectors: its first derivative,
    ``U^H dA U`` on the diagonal, needs no gap between eigenvalues (at a
    repeated one it is the derivative along the directions that keep the
    basis numpy returns); second derivatives go through `eigh`'s.
    """
    return eigh._impl(A)[0]


@rrule(eigvalsh)
def eigvalsh_rrule(A):
    w, U = eigh(A)

    def eigvalsh_pullback(wbar):
        return (_herm((U * wbar[..., None, :]) @ _mT(U)),)
    return w, eigvalsh_pullback


@frule(eigvalsh)
def eigvalsh_frule(primals, tangents):
    (A,), (Adot,) = primals, tangents
    w, U = eigh(A)
    return w, np.real(np.sum(np.conj(U) * (_herm(Adot) @ U), axis=-2))
