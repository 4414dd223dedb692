"""Rules for scipy: the error-function family, logsumexp and sparse solves.

* ``scipy.special.erfc``, ``erfcx``, ``erfinv``, ``erfcinv`` are ufuncs, so
  ``erfc(x)`` on a traced `x` dispatches here directly.
* ``scipy.special.logsumexp`` and ``scipy.sparse.linalg.spsolve`` are Python
  functions that convert their arguments to plain arrays, which a traced
  value refuses. `logsumexp` and `spsolve` here take the same arguments and
  are differentiable; call them (``ad.logsumexp``, ``ad.spsolve``) instead.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from .core import NoRuleError, _dtype, _shape, is_traced, value
from .extend import check_tangents, frule, not_differentiable, primitive, rrule, thunk
from .elementwise import _special_rules
from .registry import REGISTRY
from .rulekit import _add, _axes, _conj, _unbroadcast

__all__ = ["logsumexp", "spsolve"]

_2_SQRTPI = 2.0 / np.sqrt(np.pi)
_SQRTPI_2 = np.sqrt(np.pi) / 2.0

# ------------------------------------------------------------ error functions

ERROR_FUNCTIONS = {     # scipy.special's, registered once it is imported
    "erfc": lambda x, y: -_2_SQRTPI * np.exp(-x * x),
    "erfcx": lambda x, y: 2 * x * y - _2_SQRTPI,               # erfcx = exp(x^2) erfc(x)
    "erfinv": lambda x, y: _SQRTPI_2 * np.exp(y * y),          # derivative of the inverse
    "erfcinv": lambda x, y: -_SQRTPI_2 * np.exp(y * y),
}
REGISTRY.defer("scipy.special", _special_rules(ERROR_FUNCTIONS))


# ----------------------------------------------------------------- logsumexp

def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """``log(sum(b * exp(a), axis))``, computed stably; differentiable in `a` and `b`.

    The traced counterpart of `scipy.special.logsumexp` (which converts its
    arguments to plain arrays and so refuses traced values): same arguments,
    same values -- it is what this calls. The gradient in `a` is the softmax
    ``b exp(a - y)``, in `b` it is ``exp(a - y)``.

    Parameters
    ----------
    a : array_like
        The exponents, real or complex, traced or not.
    axis : None, int or tuple of ints
        The axes summed over (all by default); negative counts from the end.
    b : array_like, optional
        Weights broadcast against `a`, traced or not.
    keepdims : bool
        Keep the summed axes with length 1.
    return_sign : bool
        Return ``(log|s|, sign(s))`` for ``s = sum(b exp(a))`` (real `a`
        and `b` only); the sign has zero derivative.

    Returns
    -------
    y : array or tuple
        ``log(s)``, or ``(log|s|, sign(s))`` with `return_sign`.

    Raises
    ------
    TypeError
        For `keepdims`/`return_sign` not a bool or `axis` not None, an int
        or a tuple.
    NoRuleError
        For ``return_sign=True`` with complex values.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> ad.gradient(lambda a: ad.logsumexp(a), np.log(np.array([1.0, 3.0])))
    array([0.25, 0.75])
    """
    if not isinstance(keepdims, (bool, np.bool_)):
        raise TypeError(f"logsumexp: keepdims must be a bool, got {keepdims!r}")
    if not isinstance(return_sign, (bool, np.bool_)):
        raise TypeError(f"logsumexp: return_sign must be a bool, got {return_sign!r}")
    if axis is not None and not isinstance(axis, (int, np.integer, tuple)):
        raise TypeError(f"logsumexp: axis must be None, an int or a tuple of ints, got {axis!r}")
    return _logsumexp(_stacked(a), _stacked(b), axis, bool(keepdims), bool(return_sign))


def _stacked(v):
    """A list of traced values as one traced array (the rules take arrays)."""
    if type(v) in (list, tuple) and any(is_traced(x) for x in v):
        return np.stack(v)
    return v


@primitive
def _logsumexp(a, b, axis, keepdims, return_sign):
    from scipy.special import logsumexp as lse      # imported on first use (0.25 s)
    return lse(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)


def _lse_parts(a, b, axis, keepdims, return_sign):
    """``y`` and its kept-dims form, the weights ``exp(a - y) sign`` of ``d y / d b``."""
    if return_sign and (_dtype(a).kind == "c" or (b is not None and _dtype(b).kind == "c")):
        raise NoRuleError("no differentiation rule for logsumexp with return_sign=True "
                          "of complex values")
    y = _logsumexp(a, b, axis, keepdims, return_sign)
    out, sign = (y if return_sign else (y, None))
    full = np.broadcast_shapes(_shape(a), () if b is None else _shape(b))
    kept = tuple(1 if i in _axes(axis, len(full)) else n for i, n in enumerate(full))
    w = np.exp(a - np.reshape(out, kept))
    if sign is not None:
        w = w * np.reshape(sign, kept)
    return y, kept, full, w


@rrule(_logsumexp)
def logsumexp_rrule(a, b, axis, keepdims, return_sign):
    y, kept, full, w = _lse_parts(a, b, axis, keepdims, return_sign)

    def logsumexp_pullback(ybar):
        if return_sign:
            ybar = ybar[0]  # the sign has zero derivative
        if ybar is None:
            return None, None
        g = np.reshape(ybar, kept)
        # d y / d a_i = b_i exp(a_i - y) (times the sign), d y / d b_i = exp(a_i - y)
        abar = thunk(lambda: _unbroadcast(np.broadcast_to(
            g * _conj(w if b is None else w * b), full), _shape(a)))
        bbar = thunk(lambda: _unbroadcast(np.broadcast_to(g * _conj(w), full), _shape(b)))
        return abar, bbar, None, None, None
    return y, logsumexp_pullback


@frule(_logsumexp)
def logsumexp_frule(primals, tangents):
    a, b, axis, keepdims, return_sign = primals
    adot, bdot = tangents[:2]
    y, kept, full, w = _lse_parts(a, b, axis, keepdims, return_sign)
    axes = _axes(axis, len(full))
    dot = _add(None if adot is None else (w if b is None else w * b) * adot,
               None if bdot is None else w * bdot)
    ydot = None if dot is None else np.sum(np.broadcast_to(dot, full), axis=axes,
                                           keepdims=keepdims)
    return y, ((ydot, None) if return_sign else ydot)


# ------------------------------------------------------------------- spsolve

def spsolve(A, b, permc_spec=None, use_umfpack=True):
    """Solve ``A x = b`` for a constant sparse `A`; differentiable in `b`.

    The traced counterpart of `scipy.sparse.linalg.spsolve` (which converts
    `b` to a plain array and so refuses a traced one): same arguments, same
    values -- it is what this calls. The pullback is one solve with ``A^H``,
    the tangent one solve with `A` (each factorizes again: for repeated
    solves with one matrix use the factorizations of `topopt.fem.solvers`).

    Parameters
    ----------
    A : scipy.sparse matrix or array, or numpy.ndarray
        The square matrix; a constant. For a design-dependent matrix ``K(x)``
        use `topopt.fem.solve`, for a small dense traced matrix
        `numpy.linalg.solve`.
    b : array_like
        Right-hand side(s), ``(n,)``, ``(n, 1)`` or ``(n, k)``; traced or not.
    permc_spec, use_umfpack
        Passed to `scipy.sparse.linalg.spsolve`.

    Returns
    -------
    x : numpy.ndarray
        As `scipy.sparse.linalg.spsolve`: ``(n,)`` for a vector `b` (also
        ``(n, 1)``), ``(n, k)`` otherwise.

    Raises
    ------
    TypeError
        If `A` is traced, or neither a sparse matrix nor an ndarray.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sps
    >>> from topopt import ad
    >>> A = sps.csc_matrix(np.array([[2.0, 0.0], [0.0, 4.0]]))
    >>> ad.gradient(lambda b: np.sum(ad.spsolve(A, b)), np.ones(2))
    array([0.5 , 0.25])
    """
    if is_traced(A):
        raise TypeError(
            "ad.spsolve: the matrix A is a traced value; only b is differentiable here. "
            "For a design-dependent matrix K(x) use topopt.fem.solve, for a small "
            "dense traced matrix numpy.linalg.solve.")
    if not (sps.issparse(A) or isinstance(A, np.ndarray)):
        raise TypeError(f"ad.spsolve: A must be a scipy.sparse matrix or array, got "
                        f"{type(A).__name__}")
    if is_traced(b) and sps.issparse(value(b)):
        raise TypeError("ad.spsolve: a traced b must be a dense array")
    return _spsolve(A, _stacked(b), permc_spec, bool(use_umfpack))


@primitive
def _spsolve(A, b, permc_spec, use_umfpack):
    from scipy.sparse.linalg import spsolve as solve      # imported on first use
    return solve(A, b, permc_spec=permc_spec, use_umfpack=use_umfpack)


def _adjoint(A):
    A = sps.csc_matrix(A) if not sps.issparse(A) else A
    return A.conj().T.tocsc() if A.dtype.kind == "c" else A.T.tocsc()


@rrule(_spsolve)
def spsolve_rrule(A, b, permc_spec, use_umfpack):
    x = _spsolve(A, b, permc_spec, use_umfpack)
    shape = _shape(b)

    def spsolve_pullback(xbar):
        # A x = b: bbar = A^{-H} xbar (one adjoint solve)
        bbar = _spsolve(_adjoint(A), xbar, permc_spec, use_umfpack)
        return not_differentiable("the matrix A of ad.spsolve"), np.reshape(bbar, shape)
    return x, spsolve_pullback


@frule(_spsolve)
def spsolve_frule(primals, tangents):
    check_tangents(tangents, {0: "the matrix A of ad.spsolve"})
    A, b, permc_spec, use_umfpack = primals
    x = _spsolve(A, b, permc_spec, use_umfpack)
    return x, np.reshape(_spsolve(A, tangents[1], permc_spec, use_umfpack), _shape(x))
