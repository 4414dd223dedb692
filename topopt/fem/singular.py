"""Checks that a `LinearSystem`'s ``K(a)`` is not singular, each raising `SingularSystemError`.

* The solve itself (`_timed_solve`, the one of `LinearSystem.free_solve` and
  `topopt.grid.GridSystem.free_solve`): a solution that is not finite.

* Structure, before a factorization: every connected part of the mesh
  held against rigid-body motion by its supports (and ``K0``), once per
  system and again per pattern of exactly-zero coefficients
  (`topopt.fem.supports`), or, without geometry, a fixed dof in every part.
* Rayleigh quotient, after a solve: ``x^T b / x^T D x > rayleigh_tol``
  (`topopt.fem.system.RAYLEIGH_TOL`) where ``K(a)`` must be positive
  (semi)definite.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sps
from scipy.sparse.csgraph import connected_components

from .._validate import check_finite_values
from .errors import SingularSystemError
from .solvers.table import ITERATIVE
from .supports import unrestrained_modes


def _check_support(S) -> str | None:
    """Without geometry: the message if a connected part has no fixed dof, else None."""
    graph = sps.coo_matrix((np.ones(S.element_dofs.size),
                            (np.repeat(S.element_dofs[:, 0], S.n_loc),
                             S.element_dofs.ravel())), shape=(S.ndof, S.ndof))
    n, label = connected_components(graph, directed=False)
    used = np.unique(S.element_dofs)
    supported = np.unique(label[S.fixed]) if S.fixed.size else np.array([], int)
    floating = np.setdiff1d(np.unique(label[used]), supported)
    if floating.size:
        return (f"{floating.size} connected part(s) of the mesh have no fixed dof: the "
                "stiffness matrix is singular (rigid-body motion). Add supports.")
    return None


def _check_structure(S, active=None, raise_: bool = True):
    """Raise if the supports leave a rigid-body motion free (`topopt.fem.supports`).

    The verdict for all elements is computed once and kept; with `active`
    (the elements whose coefficient is not 0) it is computed afresh.
    """
    if active is None and S._structure is not None:
        if S._singular:
            raise SingularSystemError(S._singular)
        return
    verdict = None
    if S.geometry is not None:
        verdict = unrestrained_modes(S.element_dofs, S.Ke, S.ndof, S.fixed,
                                     S.geometry, S.K0, active)
    if active is not None:
        if verdict is not None and verdict.singular:
            raise SingularSystemError(
                verdict.message() + f" (the {int(np.sum(~active))} element(s) whose "
                "coefficient is 0 left out)")
        return
    S._structure = verdict is not None
    if verdict is None and S.requires_support:
        S._singular = _check_support(S)
    elif verdict is not None and verdict.singular:
        S._singular = verdict.message()
    if S._singular and raise_:
        raise SingularSystemError(S._singular)


def _check_zeros(S, a):
    """The structural check without the elements whose coefficient is exactly 0."""
    active = a != 0
    key = np.packbits(active).tobytes()
    if S._zeros_checked != key:
        _check_structure(S, active)
        S._zeros_checked = key


def _positive_definite(S, a) -> bool:
    """Whether ``K(a)`` must be positive (semi)definite: the Rayleigh check applies.

    CHOLMOD and the CG backends accept nothing else; for the LU backends
    it holds for real symmetric systems without ``K0`` whose element
    matrices are positive semidefinite (checked once) and ``a >= 0``.
    """
    if S._diag_pos is None:
        return False
    if S.solver == "cholmod" or S.solver in ITERATIVE:
        return True
    if not (S.real and S.symmetric and S.K0 is None) or np.iscomplexobj(a):
        return False
    if S._psd_elements is None:
        S._psd_elements = _psd(S.Ke)
    return S._psd_elements and bool(np.all(a >= 0))


def _timed_solve(S, F, b, adjoint: bool, where: str, dof: str) -> np.ndarray:
    """``F.solve(b)`` (``F.solve_adjoint(b)`` if `adjoint`), timed and counted in ``S.timers``
    and ``S.counts``; a solution that is not finite raises.

    A non-finite `b` raises ValueError naming its first bad entry (a `dof`);
    else the system is singular: SingularSystemError asks whether every part
    of the `where` (``"domain"``, ``"grid"``) is supported.
    """
    t0 = time.perf_counter()
    x = F.solve_adjoint(b) if adjoint else F.solve(b)
    key = "adjoint" if adjoint else "solve"
    S.timers[key] += time.perf_counter() - t0
    S.counts[key + "s"] += 1
    if not np.all(np.isfinite(x)):
        check_finite_values("the right-hand side", b, "a load or an objective's derivative is "
                            "NaN/inf (not a support problem)", (dof,))
        raise SingularSystemError("the solution is not finite: the system is singular (is every "
                                  f"part of the {where} supported?)")
    return x


def _check_rayleigh(S, diag, b, x):
    """Raise if ``x^T b / x^T D x`` (per load case) is below `rayleigh_tol`."""
    xb = np.real(np.sum(np.conj(x) * b, axis=0))
    d = diag if x.ndim == 1 else diag[:, None]
    xdx = np.sum(d * (x.real ** 2 + x.imag ** 2 if np.iscomplexobj(x) else x * x), axis=0)
    bad = (xdx > 0) & (xb <= S.rayleigh_tol * xdx)
    if np.any(bad):
        mu = float(np.min(np.where(bad, xb / np.where(xdx > 0, xdx, 1.0), np.inf)))
        raise SingularSystemError(
            f"the solve returned x with x^T b / x^T diag(K) x = {mu:.1e} <= "
            f"{S.rayleigh_tol:.0e}: the stiffness matrix is singular to working "
            "precision (a mechanism or a part held by nothing, or a coefficient "
            "contrast beyond 1/eps)")


def _psd(Ke: np.ndarray, chunk: int = 65536) -> bool:
    """Whether every element matrix is positive semidefinite (to 1e-10 relative)."""
    if Ke.ndim == 2:
        Ke = Ke[None]
    for s in range(0, Ke.shape[0], chunk):
        ev = np.linalg.eigvalsh(Ke[s:s + chunk])
        if np.any(ev[:, 0] < -1e-10 * np.maximum(np.abs(ev[:, -1]), 1e-300)):
            return False
    return True
