"""Sparse direct solver backends behind one small interface.

A backend factorizes the free-dof matrix once per design; the forward solve
and the adjoint solve (``K^H x = b``) both use that factorization.

* ``"superlu"``: scipy's SuperLU, always installed. For symmetric matrices it
  runs in symmetric mode (``permc_spec="MMD_AT_PLUS_A"``,
  ``diag_pivot_thresh=0``, ``SymmetricMode``), which is a fill-reducing
  ordering of ``A + A^T`` and diagonal pivots.
* ``"cholmod"``: CHOLMOD through cvxopt (``pip install topopt[fast]``) for
  real symmetric positive definite matrices; the symbolic analysis is done
  once per sparsity pattern, only the numeric factorization per design.
* ``"umfpack"``: UMFPACK through cvxopt for any square matrix, real or
  complex (the wave problems); symbolic analysis once per pattern. scipy's
  complex SuperLU took 1-6 s where UMFPACK takes 0.1 s on the 10 k-dof
  EM-focusing cell.
* ``"mg-cg"``, ``"amg-cg"`` (`ITERATIVE`): conjugate gradients preconditioned
  by geometric multigrid on structured quad/hex lattices, or by pyamg's
  smoothed aggregation (``topopt[fast]``); real symmetric positive definite
  matrices only; "factorizing" sets up the hierarchy once per design (see
  `topopt.fem.multigrid`). ``"auto"`` never picks them.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps
import scipy.sparse.linalg as spla

__all__ = ["SingularSystemError", "available_solvers", "pick_solver", "factorize"]


class SingularSystemError(np.linalg.LinAlgError):
    """The system matrix is singular (e.g. a part of the domain has no support).

    Raised the same way by every backend: before the factorization when the
    supports leave a rigid-body motion free (`topopt.fem.supports`, a proof
    that does not depend on rounding), by the factorization or CG when they
    break down, and after a solve whose Rayleigh quotient shows a matrix
    singular to working precision (`topopt.fem.system.RAYLEIGH_TOL`).
    """


def _has_pyamg() -> bool:
    try:
        import pyamg  # noqa: F401
    except ImportError:
        return False
    return True


def _has_cholmod() -> bool:
    try:
        import cvxopt.cholmod  # noqa: F401
    except ImportError:
        return False
    return True


def available_solvers(iterative: bool = False) -> list[str]:
    """Solver backends installed here, fastest first (direct ones unless `iterative`)."""
    direct = (["cholmod", "umfpack"] if _has_cholmod() else []) + ["superlu"]
    if not iterative:
        return direct
    return direct + [s for s in ITERATIVE if s != "amg-cg" or _has_pyamg()]


ITERATIVE: list[str] = ["mg-cg", "amg-cg"]
"""Iterative backends (conjugate gradients with a multigrid preconditioner)."""


def pick_solver(solver: str, real: bool, hermitian: bool) -> str:
    """Resolve ``"auto"`` and check that `solver` can factorize such a matrix."""
    if solver == "auto":
        if not _has_cholmod():
            return "superlu"
        return "cholmod" if (real and hermitian) else "umfpack"
    if solver == "umfpack":
        if not _has_cholmod():
            raise ValueError("solver='umfpack' needs cvxopt: pip install 'topopt[fast]'")
        return solver
    if solver == "cholmod":
        if not _has_cholmod():
            raise ValueError("solver='cholmod' needs cvxopt: pip install 'topopt[fast]'")
        if not (real and hermitian):
            raise ValueError("solver='cholmod' needs a real symmetric positive definite "
                             "matrix; use solver='superlu'")
        return solver
    if solver == "superlu":
        return solver
    if solver in ITERATIVE:
        if solver == "amg-cg" and not _has_pyamg():
            raise ValueError("solver='amg-cg' needs pyamg: pip install 'topopt[fast]'")
        if not (real and hermitian):
            raise ValueError(f"solver={solver!r} needs a real symmetric positive definite "
                             "matrix; use a direct solver")
        return solver
    raise ValueError(f"unknown solver {solver!r}; expected one of 'auto', 'cholmod', "
                     f"'umfpack', 'superlu', 'mg-cg', 'amg-cg'")


class SuperLUFactor:
    """``K = LU`` by SuperLU; `symmetric` means ``K^T = K`` (real or complex)."""

    def __init__(self, K: sps.spmatrix, symmetric: bool):
        self.real = not np.iscomplexobj(K.data)
        self.symmetric = symmetric
        options = dict(SymmetricMode=True) if symmetric else {}
        try:
            self.lu = spla.splu(K.tocsc(), permc_spec="MMD_AT_PLUS_A" if symmetric else "COLAMD",
                                diag_pivot_thresh=0.0 if symmetric else 1.0, options=options)
        except RuntimeError as err:
            raise SingularSystemError(f"the system matrix is singular ({err}): is every "
                                      "part of the domain supported?") from err

    def _solve(self, b, trans="N"):
        if self.real and np.iscomplexobj(b):
            return self.lu.solve(np.ascontiguousarray(b.real), trans) + \
                1j * self.lu.solve(np.ascontiguousarray(b.imag), trans)
        return self.lu.solve(np.asarray(b, dtype=np.result_type(b, self.lu.U.dtype)), trans)

    def solve(self, b: np.ndarray) -> np.ndarray:
        return self._solve(b)

    def solve_adjoint(self, b: np.ndarray) -> np.ndarray:
        """Solve ``K^H x = b``."""
        if self.symmetric:
            return self._solve(b) if self.real else np.conj(self._solve(np.conj(b)))
        return self._solve(b, "H")


class CholmodContext:
    """One CHOLMOD factor object per sparsity pattern, refactorized per design.

    cvxopt's ``numeric`` overwrites its factor in place, so each
    `CholmodFactor` remembers the generation it was computed in and
    refactorizes its own matrix if a later design took the factor over.
    """

    def __init__(self):
        from cvxopt import cholmod
        self.cholmod = cholmod
        self.F = None
        self.generation = 0

    def numeric(self, lower) -> int:
        if self.F is None:
            self.F = self.cholmod.symbolic(lower, uplo="L")
        try:
            self.cholmod.numeric(lower, self.F)
        except ArithmeticError as err:
            raise SingularSystemError(
                "the system matrix is not positive definite (singular): is every part "
                "of the domain supported?") from err
        self.generation += 1
        return self.generation


class CholmodFactor:
    """``K = L L^T`` by CHOLMOD; only the numeric factorization is per design."""

    def __init__(self, lower, context: CholmodContext):
        self.lower, self.context = lower, context
        self.generation = context.numeric(lower)

    def solve(self, b: np.ndarray) -> np.ndarray:
        from cvxopt import matrix
        if np.iscomplexobj(b):
            return self.solve(b.real) + 1j * self.solve(b.imag)
        if self.context.generation != self.generation:
            self.generation = self.context.numeric(self.lower)
        x = matrix(np.asfortranarray(b, dtype=float))
        self.context.cholmod.solve(self.context.F, x)
        return np.array(x).reshape(np.shape(b))

    solve_adjoint = solve


class UmfpackFactor:
    """``K = LU`` by UMFPACK (cvxopt), real or complex; `symbolic` reused per pattern."""

    def __init__(self, A, symbolic):
        from cvxopt import umfpack
        self.A, self._umfpack = A, umfpack
        try:
            self.F = umfpack.numeric(A, symbolic)
        except ArithmeticError as err:
            raise SingularSystemError(f"the system matrix is singular ({err}): is every "
                                      "part of the domain supported?") from err

    def _solve(self, b, trans):
        from cvxopt import matrix
        complex_ = self.A.typecode == "z"
        if not complex_ and np.iscomplexobj(b):
            return self._solve(b.real, trans) + 1j * self._solve(b.imag, trans)
        x = matrix(np.asfortranarray(b, dtype=complex if complex_ else float))
        self._umfpack.solve(self.A, self.F, x, trans=trans)
        return np.array(x).reshape(np.shape(b))

    def solve(self, b: np.ndarray) -> np.ndarray:
        return self._solve(b, "N")

    def solve_adjoint(self, b: np.ndarray) -> np.ndarray:
        """Solve ``K^H x = b``."""
        return self._solve(b, "C")


def factorize(K: sps.spmatrix, solver: str, symmetric: bool, lower=None, context=None,
              a=None, options: dict | None = None):
    """Factorize `K` with a backend named by `pick_solver`.

    For ``"cholmod"`` pass `lower`, the cvxopt lower triangle of `K`, and the
    pattern's `CholmodContext`. For the iterative backends pass the mesh's
    hierarchy (`topopt.fem.multigrid.GeometricMultigrid` or
    `SmoothedAggregation`) as `context`, the element coefficients `a` and the
    solver `options`; the result has ``solve``, ``solve_adjoint`` and
    ``matrix``.
    """
    if solver in ITERATIVE:
        return context.factor(K, a, options or {})
    if solver == "cholmod":
        return CholmodFactor(lower, context)
    if solver == "umfpack":
        return UmfpackFactor(lower, context)
    return SuperLUFactor(K, symmetric)
