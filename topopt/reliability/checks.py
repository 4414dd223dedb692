"""Checks of the reliability arguments shared by several modules: correlation matrices, betas.

Each raises ``TypeError`` or ``ValueError`` naming the argument, what is wrong
and the accepted range, before any expensive work.

Examples
--------
>>> import numpy as np
>>> from topopt.reliability.checks import check_correlation
>>> check_correlation("rho", [[1.0, 1.5], [1.5, 1.0]], 2)
Traceback (most recent call last):
...
ValueError: rho[0, 1] = 1.5: correlations must lie in [-1, 1]
"""

from __future__ import annotations

import numpy as np

from .._validate import check_real_array

__all__ = ["check_correlation", "PSD_TOL"]

#: Smallest eigenvalue accepted for a positive semi-definite correlation matrix
#: (rounding of ``alpha alpha^T`` and of matrices typed with a few digits).
PSD_TOL = 1e-10
#: Asymmetry and diagonal deviation accepted (rounding).
_SYM_TOL = 1e-12


def check_correlation(name: str, R, k: int | None = None, *, definite: bool = False,
                      what: str = "component") -> np.ndarray:
    """`R` as a float correlation matrix: square (``k x k`` if `k` is given),
    finite, symmetric, unit diagonal, entries in ``[-1, 1]`` and positive
    semi-definite (smallest eigenvalue ``>= -PSD_TOL``; with ``definite=True``
    off-diagonal entries in ``(-1, 1)`` and the smallest eigenvalue ``>
    PSD_TOL``). `what` names a row in the shape message. Returns the symmetrized copy with an exact unit diagonal.

    Examples
    --------
    >>> from topopt.reliability.checks import check_correlation
    >>> check_correlation("rho", [[1, 0.9, -0.9], [0.9, 1, 0.9], [-0.9, 0.9, 1]], 3)
    Traceback (most recent call last):
    ...
    ValueError: rho is not positive semi-definite: its smallest eigenvalue is -0.8 (a correlation matrix has none below 0)
    """
    A = check_real_array(name, R)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {A.shape}")
    if k is not None and A.shape != (k, k):
        raise ValueError(f"{name} has shape {A.shape}; expected ({k}, {k}), one row and "
                         f"column per {what} ({k} {what}s)")
    bad = np.argwhere(~np.isfinite(A))
    if bad.size:
        i, j = bad[0]
        raise ValueError(f"{name} must be finite; {name}[{i}, {j}] = {A[i, j]} "
                         f"({len(bad)} non-finite entries)")
    asym = np.abs(A - A.T)
    if np.max(asym, initial=0.0) > _SYM_TOL:
        i, j = np.unravel_index(np.argmax(asym), A.shape)
        raise ValueError(f"{name} must be symmetric: {name}[{i}, {j}] = {A[i, j]:.6g} but "
                         f"{name}[{j}, {i}] = {A[j, i]:.6g}")
    diag = np.abs(np.diag(A) - 1.0)
    if np.max(diag, initial=0.0) > _SYM_TOL:
        i = int(np.argmax(diag))
        raise ValueError(f"{name} must have a unit diagonal: {name}[{i}, {i}] = {A[i, i]:.6g}")
    over = np.abs(A) - 1.0
    if np.max(over, initial=0.0) > _SYM_TOL:
        i, j = np.unravel_index(np.argmax(over), A.shape)
        raise ValueError(f"{name}[{i}, {j}] = {A[i, j]:.6g}: correlations must lie in [-1, 1]")
    off = np.abs(A[~np.eye(len(A), dtype=bool)])
    if definite and off.size and np.max(off) >= 1.0:
        i, j = np.argwhere((np.abs(A) >= 1.0) & ~np.eye(len(A), dtype=bool))[0]
        raise ValueError(f"{name}[{i}, {j}] = {A[i, j]:.6g}: off-diagonal correlations must "
                         "lie in (-1, 1) here")
    A = np.clip(0.5 * (A + A.T), -1.0, 1.0)
    np.fill_diagonal(A, 1.0)
    if A.size:
        low = float(np.min(np.linalg.eigvalsh(A)))
        if definite and low <= PSD_TOL:
            raise ValueError(f"{name} must be positive definite: its smallest eigenvalue is "
                             f"{low:.3g}")
        if low < -PSD_TOL:
            raise ValueError(f"{name} is not positive semi-definite: its smallest eigenvalue "
                             f"is {low:.3g} (a correlation matrix has none below 0)")
    return A


def _check_betas(name: str, betas, *, allow_inf: bool = True) -> np.ndarray:
    """`betas` as a 1-D float array, no NaN (``+-inf`` only with `allow_inf`)."""
    b = check_real_array(name, betas).copy()      # the caller's array stays its own
    if b.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array (one reliability index per component), "
                         f"got shape {b.shape}")
    if b.size == 0:
        raise ValueError(f"{name} is empty: pass one reliability index per component")
    bad = np.flatnonzero(np.isnan(b) if allow_inf else ~np.isfinite(b))
    if bad.size:
        rule = "must not be NaN" if allow_inf else "must be finite"
        raise ValueError(f"{name} {rule}; {name}[{bad[0]}] = {b[bad[0]]}")
    return b
