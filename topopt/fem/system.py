"""The design-dependent linear system ``K(a) u = f`` and its differentiable solve.

``K(a) = K0 + sum_e a_e K_e`` on the free dofs: element matrices ``K_e``
(computed once by scikit-fem), one coefficient ``a_e`` per design element
(the SIMP modulus, ``1/eps`` of a wave problem, ...) and a constant part
``K0``. The free-dof sparsity pattern is built once; each design assembles
only ``K.data = P @ a + K0.data`` with a precomputed sparse operator ``P``.

The pieces live beside it: the pattern and ``P`` in `topopt.fem.solvers.csr`
(`build_pattern`), the singularity checks in `topopt.fem.singular`, the
cvxopt matrices of CHOLMOD and UMFPACK in `topopt.fem.solvers.direct`, and
the differentiable `solve` with its rules (`matvec`, `products`) in
`topopt.fem.adjoint` (all exported by `topopt.fem`).
"""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np
import scipy.sparse as sps

from .. import ad
from .._validate import check_bool, check_finite_values, check_indices, check_int
from .kernels import ElementKernels
from .singular import (_check_rayleigh, _check_structure, _check_zeros, _positive_definite,
                       _timed_solve)
from .solvers.csr import build_pattern
from .solvers.direct import cvxopt_full_of, cvxopt_lower_of
from .solvers.reanalysis import ReanalysisFactor, reanalysis_policy
from .budget import PATHS, check_dofs
from .solvers.table import BACKENDS, factorize, pick_solver
from .solvers.direct import CholmodContext
from .errors import SingularSystemError

__all__ = ["LinearSystem", "RAYLEIGH_TOL"]

RAYLEIGH_TOL = 100 * np.finfo(float).eps
"""Smallest accepted ``x^T b / x^T D x`` of a solve with a positive definite ``K``.

For the computed ``x`` of ``K x = b`` (``D = diag K``) this ratio is the
Rayleigh quotient of the matrix the solver actually inverted, so it bounds
the smallest eigenvalue of the Jacobi-scaled ``D^-1/2 K D^-1/2`` from above
(to within the solver's backward error, a few eps). Measured: 3e-17 to
1.4e-16 for singular elasticity systems (CHOLMOD, UMFPACK, SuperLU; 4 x 2
to 200 x 100 elements), 2e-3 to 5e-10 for supported ones with a solid island
held by Emin = 1e-9 void; below ``100 eps`` the system is singular to
working precision.
"""


class LinearSystem(ElementKernels):
    """``K(a) = K0 + sum_e a_e K_e`` restricted to the free dofs.

    Parameters
    ----------
    element_dofs : (n_el, n_loc) int array
        Global dofs of each design element.
    Ke : (n_loc, n_loc) or (n_el, n_loc, n_loc) real array
        Element matrices at ``a_e = 1``; one matrix means all are equal.
    ndof : int
        Number of dofs.
    fixed : int array
        Dofs with a homogeneous Dirichlet condition.
    K0 : sparse (ndof, ndof), optional
        Constant part (may be complex).
    symmetric : bool
        Whether ``K^T = K``.
    solver : {"auto", "cholmod", "umfpack", "superlu", "mg-cg", "amg-cg"}
        Solver backend (see `topopt.fem.solvers`); the iterative ones are
        for real symmetric positive definite systems.
    requires_support : bool
        Check that every connected part of the mesh has a fixed dof (with
        `geometry`, this check is always made, and more strictly).
    geometry : (p, nodal_dofs), optional
        Node coordinates and dofs per node (``basis.nodal_dofs``): needed by
        ``"mg-cg"`` (the lattice) and used by ``"amg-cg"`` (rigid-body
        modes); `Model.system` passes them. With it, `factorize` raises
        `SingularSystemError` when the supports (and ``K0``) leave a
        rigid-body motion of some part of the mesh free, on every backend
        (`topopt.fem.supports`; checked once per system, and again per
        pattern of exactly-zero coefficients, which may cut parts loose).
    solver_options : dict, optional
        Options of the iterative backends, e.g. ``{"rtol": 1e-8, "maxiter":
        500}`` (see `topopt.fem.solvers.multigrid`); read at each factorization.

    Examples
    --------
    A chain of two unit springs fixed at node 0, pulled at node 2:

    >>> import numpy as np
    >>> from topopt.fem import LinearSystem, solve
    >>> S = LinearSystem(np.array([[0, 1], [1, 2]]), np.array([[1., -1.], [-1., 1.]]),
    ...                  ndof=3, fixed=[0], solver="superlu")
    >>> solve(S, np.array([1.0, 0.5]), np.array([0.0, 0.0, 1.0]))
    array([0., 1., 3.])
    """

    def __init__(self, element_dofs, Ke, ndof: int, fixed=(), K0=None, symmetric: bool = True,
                 solver: str = "auto", requires_support: bool = False, geometry=None,
                 solver_options: dict | None = None):
        ndof = check_int("ndof", ndof, 1, what="number of dofs")
        symmetric = check_bool("symmetric", symmetric)
        self.element_dofs = check_indices("element_dofs", element_dofs, ndof, "dofs")
        if self.element_dofs.ndim != 2:
            raise ValueError("element_dofs must be a 2-D array (elements x local dofs)")
        self.n_el, self.n_loc = self.element_dofs.shape
        Ke = _element_matrices(Ke, self.n_el, self.n_loc)
        self.Ke = Ke
        self.uniform = Ke.ndim == 2
        self._KeT = np.ascontiguousarray(Ke.T) if self.uniform else None    # BLAS-friendly
        self.ndof = int(ndof)
        self.fixed = np.unique(check_indices("fixed", fixed, self.ndof, "dofs"))
        self.free = np.setdiff1d(np.arange(self.ndof), self.fixed)
        if self.free.size == 0 and self.ndof:
            raise ValueError(f"fixed: every one of the {self.ndof} dofs is fixed, nothing is left "
                             "to solve for; fix fewer nodes or components")
        self.K0 = None if K0 is None else sps.csr_matrix(K0)
        if self.K0 is not None:
            check_finite_values("K0", self.K0.data, "K0 must be finite")
        self.real = self.K0 is None or not np.iscomplexobj(self.K0.data)
        self.requested_solver = solver
        self.symmetric = symmetric
        self.solver = pick_solver(solver, real=self.real, hermitian=symmetric and self.real,
                                  geometry=geometry, n_loc=self.n_loc,
                                  free_dofs=self.free.size, constant=self.K0 is not None)
        self.geometry = geometry
        _check_memory(self)                          # before the pattern and the factor
        self.requires_support = requires_support
        self._structure = None      # rigid-mode check: None not yet run, then True/False
        self._singular = None       # its error message
        self._zeros_checked = None  # the zero pattern last checked (`_check_zeros`)
        self._psd_elements = None   # whether every K_e is positive semidefinite, once known
        _check_structure(self, raise_=False)    # once per system; raised by `factorize`
        self._distributed = self.solver == "petsc"     # K(a) is assembled on the MPI ranks
        if self._distributed:
            self._diag_pos = None
        else:
            build_pattern(self)
        self.counts = defaultdict(int)
        self.timers = defaultdict(float)
        self._cache = None
        self.residual_tol = 1e-3
        self.rayleigh_tol = RAYLEIGH_TOL
        self._cholmod = CholmodContext() if self.solver == "cholmod" else None
        self._umf_symbolic = None
        self.solver_options = dict(solver_options or {})
        self._iterative = None
        hierarchy = BACKENDS[self.solver].hierarchy
        if hierarchy is not None:
            self._iterative = hierarchy(self, geometry, self.solver_options)
        self.reanalysis = reanalysis_policy(self)

    def __repr__(self):
        return (f"LinearSystem({self.n_el} elements, {self.free.size} free dofs, "
                f"solver={self.solver!r})")

    # ------------------------------------------------------------ assembly
    def data(self, a) -> np.ndarray:
        """Values of ``K(a)`` on the free-dof pattern."""
        a = np.asarray(a)
        if a.shape != (self.n_el,):
            raise ValueError(f"the coefficient vector has shape {a.shape}; expected "
                             f"({self.n_el},), one entry per design element")
        if not hasattr(self, "P"):      # solver="petsc" assembles on the ranks: built on demand
            build_pattern(self)
        data = self.P @ a if not np.iscomplexobj(a) else self.P @ a.real + 1j * (self.P @ a.imag)
        if self.K0_data is not None:
            data = data + self.K0_data
        return data

    def matrix(self, a) -> sps.csr_matrix:
        """``K(a)`` on the free dofs as a CSR matrix."""
        n = self.free.size
        return sps.csr_matrix((self.data(a), self.indices, self.indptr), shape=(n, n))

    # -------------------------------------------------------- factorization
    def factorize(self, a, exact: bool = False):
        """Factorization of ``K(a)``; the last one is reused for an equal `a`.

        With reanalysis on (`topopt.fem.solvers.reanalysis`) the result solves by CG
        preconditioned with an earlier design's factor unless `exact`.
        """
        a = np.asarray(ad.value(a))
        if a.shape != (self.n_el,):
            raise ValueError(f"a has shape {a.shape}; expected ({self.n_el},): one coefficient "
                             f"per element of the system")
        check_finite_values("the coefficient vector a", a, "coefficients must be finite, "
                            "without NaN or inf", ("element",))
        if self._cache is not None and np.array_equal(self._cache[0], a) and (
                not exact or not isinstance(self._cache[1], ReanalysisFactor)):
            return self._cache[1]
        self._cache = None                        # free the previous factor first
        _check_structure(self)
        if self._structure and not np.all(a):
            _check_zeros(self, a)
        if self.reanalysis is None or exact:
            F = self._factorize(a)
        else:
            t0 = time.perf_counter()
            K = self.matrix(a)
            self.timers["assembly"] += time.perf_counter() - t0
            F = self.reanalysis.factor(K, lambda: self._factorize(a), self.counts)
            if F is not self.reanalysis.base:
                F.diag = None if self._diag_pos is None else K.data[self._diag_pos]
        self._cache = (a.copy(), F)
        return F

    def _factorize(self, a):
        """A new factorization of ``K(a)`` by the system's backend."""
        t0 = time.perf_counter()
        if self.solver == "cholmod":
            K, lower = None, cvxopt_lower_of(self, a)
            diag = None if self._diag_pos is None else self._lower_data[self._lower_diag_pos]
        elif self.solver == "umfpack":
            K = self.matrix(a)
            lower = cvxopt_full_of(self, K.data)
            diag = None if self._diag_pos is None else K.data[self._diag_pos]
        else:
            K, lower = (None if self._distributed else self.matrix(a)), None
            diag = None if self._diag_pos is None else K.data[self._diag_pos]
        self.timers["assembly"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        context = self._cholmod
        if self.solver == "umfpack":
            if self._umf_symbolic is None:
                from cvxopt import umfpack
                self._umf_symbolic = umfpack.symbolic(lower)
            context = self._umf_symbolic
        if self._iterative is not None:
            context = self._iterative
        F = factorize(K, self.solver, self.symmetric, lower, context, a=a,
                      options=self.solver_options)
        F.matrix = K
        F.diag = diag if _positive_definite(self, a) else None
        self.timers["factorization"] += time.perf_counter() - t0
        self.counts["factorizations"] += 1
        return F

    def free_solve(self, F, b, adjoint=False):
        """Solve on the free dofs and check the result (`_timed_solve`, then the Rayleigh
        quotient and the residual)."""
        x = _timed_solve(self, F, b, adjoint, "domain", "free dof")
        if getattr(F, "diag", None) is not None:
            _check_rayleigh(self, F.diag, b, x)
        if not adjoint and F.matrix is not None:    # CHOLMOD detects singularity itself
            K = F.matrix
            norm_b = np.linalg.norm(b)
            residual = np.linalg.norm(K @ x - b) / norm_b if norm_b else 0.0
            if residual > self.residual_tol:
                raise SingularSystemError(
                    f"the solve left a relative residual of {residual:.1e}: the system is "
                    "singular or nearly so (is every part of the domain supported against "
                    "rigid-body motion?)")
        return x

    def restrict(self, f) -> np.ndarray:
        """The free-dof entries of a full-dof vector (or ``(ndof, k)`` array) `f`."""
        return np.asarray(f)[self.free]

    def expand(self, x_free, like):
        """Full-dof vector with zeros at the fixed dofs."""
        shape = (self.ndof,) + np.shape(like)[1:]
        out = np.zeros(shape, dtype=np.result_type(x_free, like, float))
        out[self.free] = x_free
        return out


def _element_matrices(Ke, n_el: int, n_loc: int) -> np.ndarray:
    """`Ke` checked (real, finite, ``(n_loc, n_loc)`` or ``(n_el, n_loc, n_loc)``); one if equal."""
    Ke = np.asarray(Ke)
    if np.iscomplexobj(Ke):
        raise TypeError("element matrices Ke must be real; put complex constant terms in K0")
    if Ke.ndim == 3 and Ke.shape[0] == n_el and (
            Ke.strides[0] == 0 or np.allclose(Ke, Ke[:1], rtol=1e-12, atol=0)):
        Ke = Ke[0]                      # equal matrices (a broadcast view: no check needed)
    if Ke.shape[-2:] != (n_loc, n_loc) or Ke.ndim not in (2, 3):
        raise ValueError(f"Ke has shape {Ke.shape}; expected ({n_loc}, {n_loc}) "
                         f"or ({n_el}, {n_loc}, {n_loc})")
    check_finite_values("Ke", Ke, "element matrices must be finite",
                        ("row", "column") if Ke.ndim == 2 else ("element", "row", "column"))
    return Ke


def _check_memory(system) -> None:
    """`topopt.fem.budget.check_dofs` on the path of the system's backend (a mesh geometry)."""
    dim = None if system.geometry is None else np.shape(system.geometry[0])[0]
    path = PATHS.get(system.solver)
    if dim in (2, 3) and path is not None:
        others = [("amg-cg", "solver='amg-cg'")] if system.real and system.symmetric else []
        check_dofs(system.ndof, dim, f"a system of {system.ndof} dofs with solver="
                   f"{system.solver!r}", path=path, others=others)
