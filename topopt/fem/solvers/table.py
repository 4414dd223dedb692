"""The solver backends behind one small interface, in one table (`BACKENDS`).

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
  `topopt.fem.solvers.multigrid`). ``"auto"`` picks ``"mg-cg"`` for large 3-D
  lattices (`topopt.fem.solvers.auto`).
* ``"petsc"`` (`ITERATIVE` too): PETSc CG + PCMG (lattices) or GAMG across MPI ranks
  (``pip install 'topopt[mpi]'``, run under ``mpirun``; `topopt.fem.petsc`).

The factor classes live in `topopt.fem.solvers.direct`, the CG
loop in `topopt.fem.solvers.krylov`. A backend whose optional module is missing
raises ImportError naming the extra (``pip install 'topopt[fast]'``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import scipy.sparse as sps

from .amg import SmoothedAggregation
from .auto import auto_solver
from .direct import FAST_EXTRA, CholmodFactor, SuperLUFactor, UmfpackFactor, has_module
from .multigrid import GeometricMultigrid

__all__ = ["Backend", "BACKENDS", "ITERATIVE", "available_solvers", "pick_solver", "factorize"]


@dataclass(frozen=True)
class Backend:
    """One solver backend: how it factorizes, what it needs, which matrices it takes.

    Attributes
    ----------
    name : str
    factorize : callable
        ``(K, symmetric, lower, context, a, options) -> factor`` with
        ``solve`` and ``solve_adjoint`` (see `factorize`).
    module : str or None
        Optional module it imports (None: always installed).
    iterative : bool
        CG with a multigrid preconditioner (``"auto"`` picks one only by `topopt.fem.solvers.auto`).
    spd_only : bool
        Only real symmetric positive definite matrices (else also complex and
        non-symmetric ones).
    hierarchy : callable or None
        ``(system, geometry, options) -> context``, built once per system
        (the multigrid hierarchy of an iterative backend).
    """

    name: str
    factorize: Callable
    module: str | None = None
    iterative: bool = False
    spd_only: bool = False
    hierarchy: Callable | None = None
    extra: str = FAST_EXTRA

    def available(self) -> bool:
        """Whether its optional module is installed."""
        return self.module is None or has_module(self.module)

    def check_available(self) -> None:
        """Raise ImportError naming the extra to install when it is not."""
        if not self.available():
            raise ImportError(f"solver={self.name!r} needs {self.module.split('.')[0]}: "
                              f"{self.extra}")


def _iterative_factor(K, symmetric, lower, context, a, options):
    return context.factor(K, a, options or {})


def _petsc_context(system, geometry, options):
    from ..petsc.backend import PetscContext  # petsc4py and mpi4py load only when asked for
    return PetscContext(system, geometry, options)


BACKENDS: dict[str, Backend] = {b.name: b for b in [
    Backend("cholmod", lambda K, symmetric, lower, context, a, options:
            CholmodFactor(lower, context), module="cvxopt.cholmod", spd_only=True),
    Backend("umfpack", lambda K, symmetric, lower, context, a, options:
            UmfpackFactor(lower, context), module="cvxopt.umfpack"),
    Backend("superlu", lambda K, symmetric, lower, context, a, options:
            SuperLUFactor(K, symmetric)),
    Backend("mg-cg", _iterative_factor, iterative=True, spd_only=True,
            hierarchy=GeometricMultigrid),
    Backend("amg-cg", _iterative_factor, module="pyamg", iterative=True, spd_only=True,
            hierarchy=SmoothedAggregation),
    Backend("petsc", _iterative_factor, module="petsc4py", iterative=True, spd_only=True,
            hierarchy=_petsc_context, extra="pip install 'topopt[mpi]' (see docs/notes/mpi.md)"),
]}
"""Every backend, fastest first; ``"auto"``: `topopt.fem.solvers.auto_solver`."""

ITERATIVE: list[str] = [name for name, b in BACKENDS.items() if b.iterative]
"""Iterative backends (conjugate gradients with a multigrid preconditioner)."""


def available_solvers(iterative: bool = False) -> list[str]:
    """Solver backends installed here, fastest first (direct ones unless `iterative`).

    Examples
    --------
    >>> "superlu" in available_solvers(), "mg-cg" in available_solvers(iterative=True)
    (True, True)
    """
    return [name for name, b in BACKENDS.items()
            if b.available() and (iterative or not b.iterative)]


def pick_solver(solver: str, real: bool, hermitian: bool, geometry=None, n_loc: int = 0,
                free_dofs: int = 0, constant: bool = False) -> str:
    """Resolve ``"auto"`` and check that `solver` is installed and can factorize such a matrix.

    ``"auto"`` is `topopt.fem.solvers.auto_solver` of the mesh `geometry`, the
    element's `n_loc` dofs and the `free_dofs` (a system with a `constant`
    part ``K0`` gets a direct backend). Raises ValueError for an unknown
    name or a matrix the backend does not take, ImportError naming the
    extra to install for a missing module.
    """
    spd = real and hermitian
    if solver == "auto":
        direct = [name for name, b in BACKENDS.items() if not b.iterative
                  and b.available() and (spd or not b.spd_only)]
        return auto_solver(direct, spd and not constant, geometry, n_loc, free_dofs)
    backend = BACKENDS.get(solver) if isinstance(solver, str) else None
    if backend is None:
        raise ValueError(f"unknown solver {solver!r}; expected one of "
                         f"{', '.join(map(repr, ['auto', *BACKENDS]))}")
    backend.check_available()
    if backend.spd_only and not spd:
        alternative = "solver='superlu'" if solver == "cholmod" else "a direct solver"
        raise ValueError(f"solver={solver!r} needs a real symmetric positive definite "
                         f"matrix; use {alternative}")
    return solver


def factorize(K: sps.spmatrix, solver: str, symmetric: bool, lower=None, context=None,
              a=None, options: dict | None = None):
    """Factorize `K` with a backend named by `pick_solver`.

    For ``"cholmod"`` pass `lower`, the cvxopt lower triangle of `K`, and the
    pattern's `CholmodContext`; for ``"umfpack"`` the cvxopt matrix and its
    symbolic analysis. For the iterative backends pass the system's
    hierarchy (`Backend.hierarchy`: `topopt.fem.solvers.GeometricMultigrid`
    or `topopt.fem.solvers.SmoothedAggregation`) as `context`, the element
    coefficients `a` and the solver `options`; the result has ``solve``,
    ``solve_adjoint`` and ``matrix``.
    """
    return BACKENDS[solver].factorize(K, symmetric, lower, context, a, options)
