"""The library's one CG loop (`cg_steps`), its stopping rules, and the iterative factor.

`cg_steps` takes a stopping rule: `ResidualNorm` (``|r| <= rtol |b|``, failures
raise; `pcg`, behind the iterative backends) or `EnergyNorm` (``r^T M r <=
rtol^2 b^T x``, failures return None; `pcg_energy`, behind reanalysis).

The loop is kept hand-written: ``scripts/benchmarks/benchmark_iterative.py`` runs it and
scipy's `scipy.sparse.linalg.cg` with the same multigrid V-cycle (same
iterations: 14-15 on the 40 x 20 x 20 cantilever, 15-17 on the 600 x 200
MBB beam). On the idle machine the times matched (0.24 / 0.24 s and 0.33 /
0.34 s per solve); with the 2 cores shared (load 2-5) scipy's took 1.05-2.7
times as long (median of 5: 0.35 against 0.95 s, 0.37 against 0.92 s) and
never less at the least of 5: its ``np.dot`` / ``np.linalg.norm`` go to the
threaded BLAS, whose threads wait for busy cores (``_dot`` here does not).
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
import scipy.sparse as sps

from ..._validate import check_bool, check_choice, check_int, check_keywords, check_range
from ..errors import ConvergenceError, SingularSystemError
from .vectors import cg_direction, cg_update, residual

__all__ = ["RTOL", "MAXITER", "pcg", "pcg_energy", "cg_steps", "ResidualNorm", "EnergyNorm",
           "IterativeFactor"]

RTOL = 1e-8
"""Default relative residual ``|K x - b| / |b|`` at which CG stops.

Tight enough that compliance gradients pass the Taylor test (rate >= 1.9);
override per system with ``LinearSystem(..., solver_options={"rtol": ...})``
or ``S.solver_options["rtol"] = ...``.
"""

MAXITER = 500
"""Default iteration limit of CG; `ConvergenceError` beyond it."""

_OPTIONS = {"rtol": RTOL, "maxiter": MAXITER, "warm_start": False, "energy_scaling": True,
            "degree": 2, "eig_ratio": 30.0, "cycle": "V",
            "coarse_size": 10000, "max_levels": 10, "semi_ratio": 0.25}
"""Options of the iterative solvers (``LinearSystem(..., solver_options=...)``).

``rtol``, ``maxiter``
    CG stopping rule (relative residual) and iteration limit.
``warm_start``
    Start each solve from the previous solution of the same kind (forward,
    adjoint, load column) when that is closer than zero. Saves ~15-20 % of the
    iterations in an optimization but makes a solve depend on the previous
    one: outputs other than compliance then carry first-order CG errors that
    differ between nearby designs (the Taylor test of a displacement fails at
    ``rtol = 1e-8``). Off by default; `problems/cantilever3d.py` turns it on.
``energy_scaling``
    Scale each solution by ``b^T x / x^T K x`` (the best multiple in the
    energy norm): compliance ``b^T x`` then errs by ``||u - x||_K^2`` only.
``degree``, ``eig_ratio``
    Chebyshev smoother degree on the finest level (one more on the coarser
    ones) and interval ``[lmax / eig_ratio, lmax]``, ``lmax`` an upper bound
    of the spectrum of ``D^{-1} A`` (mg-cg).
``cycle``
    ``"V"`` or ``"W"`` (mg-cg).
``coarse_size``, ``max_levels``, ``semi_ratio``
    Coarsen while a level has more free dofs than ``coarse_size``; an axis is
    coarsened only while it has at least ``semi_ratio`` times the cells of the
    longest axis (semi-coarsening of thin domains: a 60 x 20 x 4 plate keeps
    its 4 cells through the thickness; full coarsening needed 40-60 CG
    iterations on its designs instead of ~20) (mg-cg).
"""


def _options(options: dict | None) -> dict:
    """The iterative solvers' options with defaults, each checked (name and range)."""
    out = dict(_OPTIONS)
    if options:
        check_keywords("solver_options", options, _OPTIONS)
        out.update(options)
    out["rtol"] = check_range("rtol", out["rtol"], 0, 1, lo_open=True, hi_open=True)
    for name in ("maxiter", "degree", "coarse_size", "max_levels"):
        out[name] = check_int(name, out[name], 1)
    out["eig_ratio"] = check_range("eig_ratio", out["eig_ratio"], 1, lo_open=True)
    out["semi_ratio"] = check_range("semi_ratio", out["semi_ratio"], 0, 1, lo_open=True)
    for name in ("warm_start", "energy_scaling"):
        out[name] = check_bool(name, out[name])
    out["cycle"] = check_choice("cycle", out["cycle"], ("V", "W"))
    return out


def _dot(x: np.ndarray, y: np.ndarray) -> float:
    """``x . y`` without BLAS: a threaded BLAS dot is slow on small vectors on a busy machine."""
    return float(np.einsum("i,i->", x, y))


def _norm(x: np.ndarray, dot=_dot) -> float:
    return float(np.sqrt(dot(x, x)))


def _dot_of(A):
    """The inner product of CG on `A`: `_dot`, or the ``A.global_dot`` of an operator
    whose vectors are split across processes (`topopt.grid.slab_system`)."""
    return getattr(A, "global_dot", None) or _dot


def pcg(A, b: np.ndarray, M: Callable[[np.ndarray], np.ndarray] | None = None,
        x0: np.ndarray | None = None, rtol: float = RTOL,
        maxiter: int = MAXITER) -> tuple[np.ndarray, int]:
    """Preconditioned conjugate gradients for symmetric positive definite `A`.

    Stops when ``|b - A x| <= rtol |b|`` on the true residual (restarted
    from the current ``x`` when the recursive one drifted below it); raises
    `ConvergenceError` after `maxiter` iterations and `SingularSystemError`
    when ``A`` or ``M`` is found not positive definite.

    Parameters
    ----------
    A : sparse matrix or LinearOperator
        ``A @ v`` returns a new array each time (CG updates the products in place).
    b : (n,) array
    M : callable, optional
        Symmetric positive definite preconditioner ``r -> M r``.
    x0 : (n,) array, optional
        Initial guess.
    rtol, maxiter : float, int

    Returns
    -------
    x : (n,) array
    iterations : int

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sps
    >>> from topopt.fem.solvers.krylov import pcg
    >>> A = sps.diags([-np.ones(9), 2 * np.ones(10), -np.ones(9)], [-1, 0, 1]).tocsr()
    >>> x, its = pcg(A, np.ones(10), rtol=1e-12)
    >>> bool(np.allclose(A @ x, 1.0)), its <= 10
    (True, True)
    """
    return _pcg(A, np.asarray(b, dtype=float), M,
                None if x0 is None else np.array(x0, dtype=float), rtol, maxiter)


def _pcg(A, b: np.ndarray, M, x: np.ndarray | None, rtol: float, maxiter: int):
    """`pcg` updating the caller's start `x` (float64, owned) in place: no copy of it."""
    dot = _dot_of(A)
    bnorm = _norm(b, dot)
    if bnorm == 0.0:
        return np.zeros_like(b), 0
    if not np.isfinite(bnorm):
        raise ValueError("the right-hand side contains NaN or inf")
    rule = ResidualNorm(rtol, bnorm)
    r = b.copy() if x is None else residual(A, b, x)
    x = np.zeros_like(b) if x is None else x
    it = 0
    while True:                                   # restarts when the true residual drifts
        it = cg_steps(A, b, M, x, r, rule, maxiter, it)
        r = None                                  # freed before the true residual is made
        r = residual(A, b, x)
        if _norm(r, dot) <= rule.tol:
            return x, it
        if it >= maxiter:
            raise rule.exhausted(maxiter, _norm(r, dot))


def pcg_energy(A, b: np.ndarray, M: Callable[[np.ndarray], np.ndarray], rtol: float,
               maxiter: int) -> tuple[np.ndarray | None, int]:
    """CG on ``A x = b`` from ``x = M b`` to an energy-norm `rtol`; None on failure.

    Stops when ``r^T M r <= rtol^2 b^T x`` (`EnergyNorm`); returns ``(None,
    maxiter)`` when that takes more than `maxiter` iterations, or when ``A``
    or ``M`` is found not positive definite (the failure policy of
    reanalysis: the caller then factorizes, which reports a singular ``A``).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sps
    >>> A = sps.diags([2.0, 3.0, 4.0]).tocsr()
    >>> x, its = pcg_energy(A, np.ones(3), lambda r: r / np.array([2.0, 3.0, 5.0]), 1e-12, 5)
    >>> np.round(x, 12), its
    (array([0.5       , 0.33333333, 0.25      ]), 1)
    >>> pcg_energy(A, np.ones(3), lambda r: -r, 1e-12, 5)
    (None, 5)
    """
    if not np.any(b):
        return np.zeros_like(b), 0
    x = M(b)
    try:
        return x, cg_steps(A, b, M, x, b - A @ x, EnergyNorm(rtol), maxiter)
    except _Breakdown:
        return None, maxiter


class _Breakdown(Exception):
    """A CG failure of a rule whose policy is to return None (caught by `pcg_energy`)."""


class ResidualNorm:
    """Stopping rule ``|r| <= rtol |b|`` on the recursive residual; failures raise.

    Checked before each preconditioning (a converged ``r`` is not
    preconditioned); raises `SingularSystemError` when ``r^T M r <= 0`` and
    `ConvergenceError` (`exhausted`) past `maxiter`.
    """

    def __init__(self, rtol: float, bnorm: float):
        self.rtol, self.bnorm, self.tol = rtol, bnorm, rtol * bnorm
        self.rnorm = np.inf

    def small(self, rr: float) -> bool:
        """Whether ``|r| <= rtol |b|``, given ``rr = r . r``."""
        self.rnorm = float(np.sqrt(rr))
        return self.rnorm <= self.tol

    def converged(self, b, x, rz: float) -> bool:
        return False

    def check(self, rz: float) -> None:
        if not rz > 0:
            raise SingularSystemError("the preconditioner is not positive definite "
                                      f"(r^T M r = {rz:.2e})")

    def exhausted(self, maxiter: int, rnorm: float | None = None) -> ConvergenceError:
        relative = (self.rnorm if rnorm is None else rnorm) / self.bnorm
        return ConvergenceError(
            f"CG did not converge in {maxiter} iterations (relative residual {relative:.1e} > "
            f"rtol {self.rtol:.0e}): the system may be singular (unsupported parts) or too "
            "ill-conditioned for the preconditioner; raise maxiter or use a direct solver")

    def indefinite(self, pq: float) -> Exception:
        return SingularSystemError("the matrix is not positive definite (p^T K p = "
                                   f"{pq:.2e}): is every part of the domain supported?")


class EnergyNorm:
    """Stopping rule ``r^T M r <= rtol^2 b^T x``: the relative energy-norm error.

    ``r^T M r`` estimates ``||u - x||_A^2`` when ``M`` is close to
    ``A^{-1}`` and ``b^T x`` estimates ``||u||_A^2``; checked after each
    preconditioning. Every failure raises `_Breakdown` (`pcg_energy` returns
    None).
    """

    def __init__(self, rtol: float):
        self.rtol = rtol

    def small(self, rr: float) -> bool:
        return False

    def converged(self, b, x, rz: float) -> bool:
        bx = _dot(b, x)
        if not (bx > 0 and rz >= 0):
            raise _Breakdown
        return rz <= self.rtol * self.rtol * bx

    def check(self, rz: float) -> None:
        pass

    def exhausted(self, maxiter: int) -> Exception:
        return _Breakdown()

    def indefinite(self, pq: float) -> Exception:
        return _Breakdown()


def cg_steps(A, b, M, x, r, rule, maxiter: int, it: int = 0) -> int:
    """CG steps on `x` and its residual `r` (in place) until `rule` stops; the iterations.

    The only CG loop of the library (Hestenes & Stiefel 1952, preconditioned:
    Saad, Iterative Methods, Alg. 9.1). `rule` (`ResidualNorm`, `EnergyNorm`)
    says when to stop and what a failure raises; `it` counts on from earlier
    steps (a restart).
    """
    dot = _dot_of(A)
    p, rz, rr = None, 0.0, dot(r, r)
    while not rule.small(rr):
        z = M(r) if M is not None else r.copy()
        rz_new = dot(r, z)
        if rule.converged(b, x, rz_new):
            return it
        if it >= maxiter:
            raise rule.exhausted(maxiter)
        rule.check(rz_new)
        # p = z + beta p in place (p owned here: M may hand back an array it keeps)
        p = z.copy() if p is None else cg_direction(p, z, rz_new / rz)
        z = None                                  # each temporary freed before the next
        rz = rz_new
        q = A @ p
        pq = dot(p, q)
        if not pq > 0:
            raise rule.indefinite(pq)
        alpha = rz / pq
        rr = cg_update(x, r, p, q, alpha)         # x += alpha p; r -= alpha q
        if dot is not _dot:                       # the local r . r counts shared nodes twice
            rr = dot(r, r)
        q = None
        it += 1
    return it


# ------------------------------------------------------------------ factor

class IterativeFactor:
    """What an iterative backend's ``factorize`` returns: preconditioned CG on ``A``.

    ``solve(b)`` and ``solve_adjoint(b)`` (the same: ``A`` is symmetric)
    accept ``(n,)`` or ``(n, k)`` right-hand sides, real or complex.
    ``iterations`` lists the CG iterations of every solve,
    ``last_iterations`` the last one; the system's ``counts`` (when given)
    accumulates ``cg_iterations`` and ``cg_solves``.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sps
    >>> from topopt.fem.solvers.krylov import IterativeFactor
    >>> A = sps.diags([1.0, 2.0, 4.0]).tocsr()
    >>> F = IterativeFactor(A, lambda r: r / A.diagonal(), {})
    >>> F.solve(np.ones(3)), F.last_iterations
    (array([1.  , 0.5 , 0.25]), 1)
    """

    def __init__(self, A: sps.csr_matrix, M: Callable, options: dict, counts=None,
                 warm: dict | None = None, log: list | None = None):
        self.matrix = A
        self.M = M
        self.options = _options(options)
        self.counts = counts
        self.warm = warm if warm is not None else {}
        self.iterations: list[int] = []
        self.log = log
        self.last_iterations = 0
        self.seconds = 0.0

    def _one(self, b: np.ndarray, kind: str, column: int) -> np.ndarray:
        x0, dot = None, _dot_of(self.matrix)
        key = (kind, column)
        if self.options["warm_start"]:
            prev = self.warm.pop(key, None)       # not kept beside x0 during the solve
            if prev is not None and prev.shape == b.shape:
                # the best multiple of the previous solution in the energy norm: its
                # error is then smaller than that of zero whenever b^T prev != 0
                pAp, bp = dot(prev, self.matrix @ prev), dot(b, prev)
                if pAp > 0 and bp != 0:
                    x0 = prev * (bp / pAp)                   # new: the caller may hold prev
            prev = None
        t0 = time.perf_counter()
        x, its = _pcg(self.matrix, b, self.M, x0, float(self.options["rtol"]),
                      int(self.options["maxiter"]))
        if self.options["energy_scaling"]:
            # The Galerkin projection of u onto span{x}: compliance b^T x then errs by
            # ||u - x||_A^2 >= 0 (second order) even from a warm start.
            xAx = dot(x, self.matrix @ x)
            if xAx > 0:
                x *= dot(b, x) / xAx
        self.seconds += time.perf_counter() - t0
        self.iterations.append(its)
        if self.log is not None:
            self.log.append(its)
        self.last_iterations = its
        if self.counts is not None:
            self.counts["cg_iterations"] += its
            self.counts["cg_solves"] += 1
        if self.options["warm_start"]:
            self.warm[key] = x
        return x

    def _solve(self, b: np.ndarray, kind: str) -> np.ndarray:
        b = np.asarray(b)
        if np.iscomplexobj(b):
            return self._solve(b.real, kind) + 1j * self._solve(b.imag, kind + "i")
        b = np.asarray(b, dtype=float)
        if b.ndim == 1:
            return self._one(b, kind, 0)
        return np.stack([self._one(np.ascontiguousarray(b[:, k]), kind, k)
                         for k in range(b.shape[1])], axis=1)

    def solve(self, b: np.ndarray) -> np.ndarray:
        """Solve ``A x = b``."""
        return self._solve(b, "forward")

    def solve_adjoint(self, b: np.ndarray) -> np.ndarray:
        """Solve ``A^T x = b`` (``A`` is symmetric: a CG solve with its own warm start)."""
        return self._solve(b, "adjoint")
