"""The design-dependent linear system ``K(a) u = f`` and its differentiable solve.

``K(a) = K0 + sum_e a_e K_e`` on the free dofs: element matrices ``K_e``
(computed once by scikit-fem), one coefficient ``a_e`` per design element
(the SIMP modulus, ``1/eps`` of a wave problem, ...) and a constant part
``K0``. The free-dof sparsity pattern is built once; each design assembles
only ``K.data = P @ a + K0.data`` with a precomputed sparse operator ``P``.

Differentiation goes through four primitives that are closed under
differentiation, so gradients, Hessian-vector products and mixed second
derivatives all work (element matrices are real symmetric):

* ``_solve(S, a, f, F)`` -- ``u = K(a)^{-1} f`` with factorization ``F``;
  pullback ``lambda = K^{-H} ubar``, ``abar_e = -conj(lambda_e^H K_e u_e)``,
  ``fbar = lambda``: one adjoint solve reusing ``F``;
* ``_solve_adjoint(S, a, g, F)`` -- ``K(a)^{-H} g``;
* ``matvec(S, a, w)`` -- ``sum_e a_e K_e w_e``;
* ``products(S, v, w)`` -- per element ``conj(v_e)^T K_e w_e`` (summed over
  load cases), the vectorised sensitivity ``-lambda_e^T K_e u_e``.
"""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np
import scipy.sparse as sps
from scipy.sparse.csgraph import connected_components

from .. import ad
from .._validate import check_finite_values, check_indices, check_load
from .solvers.csr import csr_structure
from .solvers.reanalysis import ReanalysisFactor, reanalysis_policy
from .solvers.table import (BACKENDS, ITERATIVE, CholmodContext, SingularSystemError, factorize,
                            pick_solver)
from .supports import unrestrained_modes

__all__ = ["LinearSystem", "solve", "matvec", "products", "RAYLEIGH_TOL", "csr_structure"]

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


def _conj(z):
    return np.conj(z) if np.iscomplexobj(ad.value(z)) else z


class LinearSystem:
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
        self.element_dofs = check_indices("element_dofs", element_dofs, int(ndof), "dofs")
        if self.element_dofs.ndim != 2:
            raise ValueError("element_dofs must be a 2-D array (elements x local dofs)")
        self.n_el, self.n_loc = self.element_dofs.shape
        Ke = np.asarray(Ke)
        if np.iscomplexobj(Ke):
            raise TypeError("element matrices Ke must be real; put complex constant terms in K0")
        if Ke.ndim == 3 and Ke.shape[0] == self.n_el and (
                Ke.strides[0] == 0 or np.allclose(Ke, Ke[:1], rtol=1e-12, atol=0)):
            Ke = Ke[0]                      # equal matrices (a broadcast view: no check needed)
        if Ke.shape[-2:] != (self.n_loc, self.n_loc) or Ke.ndim not in (2, 3):
            raise ValueError(f"Ke has shape {Ke.shape}; expected ({self.n_loc}, {self.n_loc}) "
                             f"or ({self.n_el}, {self.n_loc}, {self.n_loc})")
        check_finite_values("Ke", Ke, "element matrices must be finite",
                            ("row", "column") if Ke.ndim == 2 else ("element", "row", "column"))
        self.Ke, self.uniform = Ke, Ke.ndim == 2
        self._KeT = np.ascontiguousarray(Ke.T) if self.uniform else None    # BLAS-friendly
        self.ndof = int(ndof)
        self.fixed = fixed = np.unique(check_indices("fixed", fixed, self.ndof, "dofs"))
        self.free = np.setdiff1d(np.arange(self.ndof), fixed)
        if self.free.size == 0 and self.ndof:
            raise ValueError(f"fixed: every one of the {self.ndof} dofs is fixed, nothing is left "
                             "to solve for; fix fewer nodes or components")
        self.K0 = None if K0 is None else sps.csr_matrix(K0)
        if self.K0 is not None:
            check_finite_values("K0", self.K0.data, "K0 must be finite")
        self.real = real = self.K0 is None or not np.iscomplexobj(self.K0.data)
        self.requested_solver, self.symmetric = solver, symmetric
        self.solver = pick_solver(solver, real=real, hermitian=symmetric and real,
                                  geometry=geometry, n_loc=self.n_loc,
                                  free_dofs=self.free.size, constant=self.K0 is not None)
        self.geometry, self.requires_support = geometry, requires_support
        self._structure = None      # rigid-mode check: None not yet run, then True/False
        self._singular = None       # its error message
        self._zeros_checked = self._psd_elements = None
        self._check_structure(raise_=False)    # once per system; raised by `factorize`
        self._distributed = self.solver == "petsc"     # K(a) is assembled on the MPI ranks
        if self._distributed:
            self._diag_pos = None
        else:
            self._build_pattern()
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

    # ------------------------------------------------------------- pattern
    def _check_support(self) -> str | None:
        """Without geometry: the message if a connected part has no fixed dof, else None."""
        graph = sps.coo_matrix((np.ones(self.element_dofs.size),
                                (np.repeat(self.element_dofs[:, 0], self.n_loc),
                                 self.element_dofs.ravel())), shape=(self.ndof, self.ndof))
        n, label = connected_components(graph, directed=False)
        used = np.unique(self.element_dofs)
        supported = np.unique(label[self.fixed]) if self.fixed.size else np.array([], int)
        floating = np.setdiff1d(np.unique(label[used]), supported)
        if floating.size:
            return (f"{floating.size} connected part(s) of the mesh have no fixed dof: the "
                    "stiffness matrix is singular (rigid-body motion). Add supports.")
        return None

    def _check_structure(self, active=None, raise_: bool = True):
        """Raise if the supports leave a rigid-body motion free (`topopt.fem.supports`).

        The verdict for all elements is computed once and kept; with `active`
        (the elements whose coefficient is not 0) it is computed afresh.
        """
        if active is None and self._structure is not None:
            if self._singular:
                raise SingularSystemError(self._singular)
            return
        verdict = None
        if self.geometry is not None:
            verdict = unrestrained_modes(self.element_dofs, self.Ke, self.ndof, self.fixed,
                                         self.geometry, self.K0, active)
        if active is not None:
            if verdict is not None and verdict.singular:
                raise SingularSystemError(
                    verdict.message() + f" (the {int(np.sum(~active))} element(s) whose "
                    "coefficient is 0 left out)")
            return
        self._structure = verdict is not None
        if verdict is None and self.requires_support:
            self._singular = self._check_support()
        elif verdict is not None and verdict.singular:
            self._singular = verdict.message()
        if self._singular and raise_:
            raise SingularSystemError(self._singular)

    def _check_zeros(self, a):
        """The structural check without the elements whose coefficient is exactly 0."""
        active = a != 0
        key = np.packbits(active).tobytes()
        if self._zeros_checked != key:
            self._check_structure(active)
            self._zeros_checked = key

    def _build_pattern(self):
        """Free-dof CSR pattern and the operator ``P`` with ``K.data = P @ a``."""
        if self.K0 is None:
            return self._build_pattern_chunked()
        loc = self._free_local()
        rows = np.repeat(loc, self.n_loc, axis=1).ravel()
        cols = np.tile(loc, (1, self.n_loc)).ravel()
        elem = np.repeat(np.arange(self.n_el), self.n_loc ** 2)
        vals = (np.broadcast_to(self.Ke.ravel(), (self.n_el, self.n_loc ** 2)).ravel()
                if self.uniform else self.Ke.reshape(self.n_el, -1).ravel())
        keep = (rows >= 0) & (cols >= 0)
        rows, cols, elem, vals = rows[keep], cols[keep], elem[keep], vals[keep]
        n = self.free.size
        K0 = self.K0[self.free][:, self.free].tocoo()
        keys, inverse = np.unique(np.concatenate([rows, K0.row]) * n
                                  + np.concatenate([cols, K0.col]), return_inverse=True)
        self.P = sps.csr_matrix((vals, (inverse[:rows.size], elem)),
                                shape=(keys.size, self.n_el))
        self.K0_data = np.zeros(keys.size, dtype=K0.data.dtype)
        np.add.at(self.K0_data, inverse[rows.size:], K0.data)
        self._set_pattern(keys)

    def _build_pattern_chunked(self, chunk_entries: int = 2 ** 23):
        """`_build_pattern` without ``K0``, in blocks of rows (the same pattern and ``P``).

        Sorting all ``n_el n_loc^2`` entries at once took 6 GB on a 80 x 40 x
        40 hex mesh (74 M entries); blocks of ~8 M entries keep the peak near
        the size of ``P`` itself.
        """
        loc = self._free_local()
        n, n_loc = self.free.size, self.n_loc
        e_idx, i_idx = np.nonzero(loc >= 0)                     # (element, local row) pairs
        prow = loc[e_idx, i_idx]
        order = np.argsort(prow, kind="stable")                 # by row, then element
        e_idx, i_idx, prow = e_idx[order], i_idx[order], prow[order]
        del order
        total = int(np.sum((loc >= 0).sum(axis=1)[e_idx]))
        data = np.empty(total)
        indices = np.empty(total, dtype=np.int32 if self.n_el < 2 ** 31 else np.int64)
        # blocks of whole rows
        starts = np.arange(0, prow.size, max(1, chunk_entries // n_loc))
        starts = np.unique(np.searchsorted(prow, prow[starts], side="left"))
        bounds = np.append(starts, prow.size)
        keys_list, count_list, offset = [], [], 0
        for s, t in zip(bounds[:-1], bounds[1:]):
            e, i, r = e_idx[s:t], i_idx[s:t], prow[s:t]
            c = loc[e]                                          # (m, n_loc) columns
            v = self.Ke[i] if self.uniform else self.Ke[e, i]
            keep = c >= 0
            keys = (r[:, None] * n + c)[keep]
            o = np.argsort(keys, kind="stable")
            keys = keys[o]
            m = keys.size
            data[offset:offset + m] = v[keep][o]
            indices[offset:offset + m] = np.broadcast_to(e[:, None], c.shape)[keep][o]
            first = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
            keys_list.append(keys[first])
            count_list.append(np.diff(np.append(first, m)))
            offset += m
        keys = np.concatenate(keys_list)
        nnz = keys.size
        P_indptr = np.zeros(nnz + 1, dtype=np.int64)
        np.cumsum(np.concatenate(count_list), out=P_indptr[1:])
        del keys_list, count_list
        self.P = sps.csr_matrix((data, indices, P_indptr), shape=(nnz, self.n_el))
        self.K0_data = None
        self._set_pattern(keys)

    def _free_local(self) -> np.ndarray:
        """Free-dof index of each element's local dofs, -1 at fixed dofs: (n_el, n_loc)."""
        index = -np.ones(self.ndof, dtype=np.int64)
        index[self.free] = np.arange(self.free.size)
        return index[self.element_dofs]

    def _set_pattern(self, keys: np.ndarray) -> None:
        """The CSR pattern from the sorted unique keys ``row * n_free + col``."""
        self.rows, self.cols, indptr = csr_structure(keys, self.free.size)
        self.indptr, self.indices = indptr, self.cols
        self.lower = self.rows >= self.cols
        self._diag_pos = np.flatnonzero(self.rows == self.cols)
        if self._diag_pos.size != self.free.size:      # a free dof in no element: no check
            self._diag_pos = None
        if self.rows.size < 2 ** 31 - 1:         # else scipy downcasts at every assembly
            self.indptr, self.indices = indptr.astype(np.int32), self.cols.astype(np.int32)

    def data(self, a) -> np.ndarray:
        """Values of ``K(a)`` on the free-dof pattern."""
        a = np.asarray(a)
        if a.shape != (self.n_el,):
            raise ValueError(f"the coefficient vector has shape {a.shape}; expected "
                             f"({self.n_el},), one entry per design element")
        if not hasattr(self, "P"):      # solver="petsc" assembles on the ranks: built on demand
            self._build_pattern()
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
        check_finite_values("the coefficient vector a", a, "coefficients must be finite, "
                            "without NaN or inf", ("element",))
        if self._cache is not None and np.array_equal(self._cache[0], a) and (
                not exact or not isinstance(self._cache[1], ReanalysisFactor)):
            return self._cache[1]
        self._cache = None                        # free the previous factor first
        self._check_structure()
        if self._structure and not np.all(a):
            self._check_zeros(a)
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
            K, lower = None, self._cvxopt_lower(a)
            diag = None if self._diag_pos is None else self._lower_data[self._lower_diag_pos]
        elif self.solver == "umfpack":
            K = self.matrix(a)
            lower = self._cvxopt_full(K.data)
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
        F.diag = diag if self._positive_definite(a) else None
        self.timers["factorization"] += time.perf_counter() - t0
        self.counts["factorizations"] += 1
        return F

    def _cvxopt_lower(self, a):
        """The lower triangle of ``K(a)`` as a cvxopt matrix, assembled directly.

        The rows of ``P`` for the lower triangle are put once in cvxopt's
        column-compressed order, so each design costs one sparse product.
        """
        from cvxopt import matrix, spmatrix
        if not hasattr(self, "_lower_spmatrix"):
            I = self.rows[self.lower].astype(np.int64)
            J = self.cols[self.lower].astype(np.int64)
            n = self.free.size
            A = spmatrix(matrix(np.arange(I.size, dtype=float)), matrix(I), matrix(J), (n, n))
            order = np.flatnonzero(self.lower)[np.array(A.V, dtype=np.int64).ravel()]
            diag = self.rows[order] == self.cols[order]
            self._lower_diag_pos = np.flatnonzero(diag)[np.argsort(self.rows[order][diag])]
            self._P_lower = self.P[order].tocsr()
            self._K0_lower = None if self.K0_data is None else self.K0_data[order]
            self._lower_spmatrix = A
        data = self._P_lower @ a
        if self._K0_lower is not None:
            data = data + self._K0_lower
        self._lower_data = data
        A = self._lower_spmatrix
        A.V = matrix(data)
        return A

    def _cvxopt_full(self, data):
        """``K`` as a cvxopt matrix (pattern and value order built once)."""
        from cvxopt import matrix, spmatrix
        complex_ = np.iscomplexobj(data) or not self.real
        if getattr(self, "_full_complex", None) != complex_:
            n = self.free.size
            A = spmatrix(matrix(np.arange(self.rows.size, dtype=float)),
                         matrix(self.rows.astype(np.int64)), matrix(self.cols.astype(np.int64)),
                         (n, n))
            self._full_order = np.array(A.V, dtype=np.int64).ravel()
            if complex_:
                A = spmatrix(matrix(np.zeros(self.rows.size, dtype=complex)),
                             matrix(self.rows.astype(np.int64)),
                             matrix(self.cols.astype(np.int64)), (n, n), "z")
            self._full_spmatrix, self._full_complex = A, complex_
            self._umf_symbolic = None
        A = self._full_spmatrix
        A.V = matrix(np.asarray(data, dtype=complex if complex_ else float)[self._full_order])
        return A

    def _positive_definite(self, a) -> bool:
        """Whether ``K(a)`` must be positive (semi)definite: the Rayleigh check applies.

        CHOLMOD and the CG backends accept nothing else; for the LU backends
        it holds for real symmetric systems without ``K0`` whose element
        matrices are positive semidefinite (checked once) and ``a >= 0``.
        """
        if self._diag_pos is None:
            return False
        if self.solver == "cholmod" or self.solver in ITERATIVE:
            return True
        if not (self.real and self.symmetric and self.K0 is None) or np.iscomplexobj(a):
            return False
        if self._psd_elements is None:
            self._psd_elements = _psd(self.Ke)
        return self._psd_elements and bool(np.all(a >= 0))

    def _check_rayleigh(self, diag, b, x):
        """Raise if ``x^T b / x^T D x`` (per load case) is below `rayleigh_tol`."""
        xb = np.real(np.sum(np.conj(x) * b, axis=0))
        d = diag if x.ndim == 1 else diag[:, None]
        xdx = np.sum(d * (x.real ** 2 + x.imag ** 2 if np.iscomplexobj(x) else x * x), axis=0)
        bad = (xdx > 0) & (xb <= self.rayleigh_tol * xdx)
        if np.any(bad):
            mu = float(np.min(np.where(bad, xb / np.where(xdx > 0, xdx, 1.0), np.inf)))
            raise SingularSystemError(
                f"the solve returned x with x^T b / x^T diag(K) x = {mu:.1e} <= "
                f"{self.rayleigh_tol:.0e}: the stiffness matrix is singular to working "
                "precision (a mechanism or a part held by nothing, or a coefficient "
                "contrast beyond 1/eps)")

    def free_solve(self, F, b, adjoint=False):
        """Solve on the free dofs and check the result."""
        t0 = time.perf_counter()
        x = F.solve_adjoint(b) if adjoint else F.solve(b)
        key = "adjoint" if adjoint else "solve"
        self.timers[key] += time.perf_counter() - t0
        self.counts[key + "s"] += 1
        if not np.all(np.isfinite(x)):
            check_finite_values("the right-hand side", b, "a load or an objective's "
                                "derivative is NaN/inf (not a support problem)", ("free dof",))
            raise SingularSystemError("the solution is not finite: the system is singular "
                                      "(is every part of the domain supported?)")
        if getattr(F, "diag", None) is not None:
            self._check_rayleigh(F.diag, b, x)
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

    def expand(self, x_free, like):
        """Full-dof vector with zeros at the fixed dofs."""
        shape = (self.ndof,) + np.shape(like)[1:]
        out = np.zeros(shape, dtype=np.result_type(x_free, like, float))
        out[self.free] = x_free
        return out

    # ------------------------------------------------------ element kernels
    def gather(self, w):
        """Element vectors ``w_e``: (n_el, n_loc) or (n_el, n_loc, n_load)."""
        return np.asarray(w)[self.element_dofs]

    def apply_Ke(self, we):
        """``K_e w_e`` for every element."""
        if self.uniform:
            return we @ self._KeT if we.ndim == 2 else np.matmul(self.Ke, we)
        return np.einsum("eij,ej...->ei...", self.Ke, we, optimize=True)

    def scatter(self, local):
        """Sum element vectors into a global vector (transpose of `gather`)."""
        idx = self.element_dofs.ravel()
        local = local.reshape(idx.size, -1)
        out = np.empty((self.ndof, local.shape[1]), dtype=local.dtype)
        for k in range(local.shape[1]):
            col = local[:, k]
            out[:, k] = np.bincount(idx, col.real, self.ndof)
            if np.iscomplexobj(col):
                out[:, k] += 1j * np.bincount(idx, col.imag, self.ndof)
        return out


def _psd(Ke: np.ndarray, chunk: int = 65536) -> bool:
    """Whether every element matrix is positive semidefinite (to 1e-10 relative)."""
    if Ke.ndim == 2:
        Ke = Ke[None]
    for s in range(0, Ke.shape[0], chunk):
        ev = np.linalg.eigvalsh(Ke[s:s + chunk])
        if np.any(ev[:, 0] < -1e-10 * np.maximum(np.abs(ev[:, -1]), 1e-300)):
            return False
    return True


def _check_rhs(S: LinearSystem, f):
    """The load `f`: shape ``(ndof,)`` or ``(ndof, n_loads)``, finite at every dof (one pass)."""
    check_load("f", f, S.ndof)


# ---------------------------------------------------------------- primitives

@ad.primitive
def _solve(S: LinearSystem, a, f, F):
    """``u = K(a)^{-1} f`` on the free dofs, zeros on the fixed ones."""
    f = np.asarray(f)
    return S.expand(S.free_solve(F, f[S.free]), f)


@ad.primitive
def _solve_adjoint(S: LinearSystem, a, g, F):
    """``K(a)^{-H} g`` on the free dofs, zeros on the fixed ones."""
    g = np.asarray(g)
    return S.expand(S.free_solve(F, g[S.free], adjoint=True), g)


def _self_adjoint(S: LinearSystem, f, u, ubar):
    """``lambda = K^{-H} ubar`` without a solve when ``ubar = alpha f`` and ``K = K^H``.

    Compliance ``c = f^T u`` gives ``ubar = f`` (times a scale): then
    ``lambda = alpha u`` exactly. Checked per call, per load case; None when
    it does not apply (or for traced values, whose derivatives need the solve).
    """
    if not (S.real and S.symmetric) or any(map(ad.is_traced, (f, u, ubar))):
        return None
    fb, ub = np.asarray(f)[S.free], np.asarray(ubar)[S.free]
    if fb.shape != ub.shape or np.iscomplexobj(ub):
        return None
    ff = np.sum(fb * fb, axis=0)
    if np.any(ff == 0):
        return None
    alpha = np.sum(fb * ub, axis=0) / ff
    if np.max(np.abs(ub - alpha * fb), initial=0.0) > 1e-13 * np.max(np.abs(ub), initial=0.0):
        return None
    S.counts["self_adjoint"] += 1
    return np.asarray(u) * alpha


@ad.rrule(_solve)
def _solve_rrule(S, a, f, F):
    u = _solve(S, a, f, F)

    def solve_pullback(ubar):
        lam = _self_adjoint(S, f, u, ubar)
        if lam is None:
            lam = _solve_adjoint(S, a, ubar, F)
        return None, ad.thunk(lambda: -_conj(products(S, lam, u))), lam, None
    return u, solve_pullback


@ad.frule(_solve)
def _solve_frule(primals, tangents):
    S, a, f, F = primals
    _, adot, fdot, _ = tangents
    u = _solve(S, a, f, F)
    rhs = fdot
    if adot is not None:
        rhs = -matvec(S, adot, u) if rhs is None else rhs - matvec(S, adot, u)
    return u, None if rhs is None else _solve(S, a, rhs, F)


@ad.rrule(_solve_adjoint)
def _solve_adjoint_rrule(S, a, g, F):
    y = _solve_adjoint(S, a, g, F)

    def solve_adjoint_pullback(ybar):
        mu = _solve(S, a, ybar, F)
        return None, ad.thunk(lambda: -products(S, mu, y)), mu, None
    return y, solve_adjoint_pullback


@ad.frule(_solve_adjoint)
def _solve_adjoint_frule(primals, tangents):
    S, a, g, F = primals
    _, adot, gdot, _ = tangents
    y = _solve_adjoint(S, a, g, F)
    rhs = gdot
    if adot is not None:
        rhs = -matvec(S, _conj(adot), y) if rhs is None else rhs - matvec(S, _conj(adot), y)
    return y, None if rhs is None else _solve_adjoint(S, a, rhs, F)


@ad.primitive
def matvec(S: LinearSystem, a, w):
    """``sum_e a_e K_e w_e``: the design part of ``K(a) w`` on all dofs."""
    t0 = time.perf_counter()
    a, w = np.asarray(a), np.asarray(w)
    local = S.apply_Ke(S.gather(w))
    local = local * (a[:, None] if local.ndim == 2 else a[:, None, None])
    y = S.scatter(local).reshape(w.shape)
    S.timers["sensitivity"] += time.perf_counter() - t0
    return y


@ad.rrule(matvec)
def matvec_rrule(S, a, w):
    def matvec_pullback(ybar):
        return (None, ad.thunk(lambda: _conj(products(S, ybar, w))),
                ad.thunk(lambda: matvec(S, _conj(a), ybar)))
    return matvec(S, a, w), matvec_pullback


def _bilinear_frule(fun):
    """Forward rule of a primitive ``fun(S, v, w)`` linear in `v` and in `w`."""
    def frule(primals, tangents):
        S, v, w = primals
        _, vdot, wdot = tangents
        ydot = None if vdot is None else fun(S, vdot, w)
        if wdot is not None:
            ydot = fun(S, v, wdot) if ydot is None else ydot + fun(S, v, wdot)
        return fun(S, v, w), ydot
    frule.__name__ = frule.__qualname__ = f"{fun.__name__}_frule"
    return frule


ad.frule(matvec)(_bilinear_frule(matvec))


@ad.primitive
def products(S: LinearSystem, v, w):
    """Per element ``conj(v_e)^T K_e w_e``, summed over load cases."""
    t0 = time.perf_counter()
    if S._distributed and not (np.iscomplexobj(v) or np.iscomplexobj(w)):
        y = S._iterative.products(v, w)         # on the ranks that own the elements
    else:
        ve, Kw = S.gather(v), S.apply_Ke(S.gather(w))
        ve = np.conj(ve) if np.iscomplexobj(ve) else ve
        y = np.sum((ve * Kw).reshape(S.n_el, -1), axis=1)
    S.timers["sensitivity"] += time.perf_counter() - t0
    return y


@ad.rrule(products)
def products_rrule(S, v, w):
    def products_pullback(ybar):
        return (None, ad.thunk(lambda: matvec(S, _conj(ybar), w)),
                ad.thunk(lambda: matvec(S, ybar, v)))
    return products(S, v, w), products_pullback


ad.frule(products)(_bilinear_frule(products))


@ad.primitive
def solve(S: LinearSystem, a, f):
    """Solve ``K(a) u = f``; differentiable in `a` and `f`.

    Factorizes ``K(a)`` once (reused for an equal `a`); the pullback makes
    one adjoint solve with the same factorization and returns the element
    sensitivities ``-conj(lambda_e^H K_e u_e)`` computed vectorised.
    `f` is a full-dof vector or an ``(ndof, n_loads)`` array; `u` has zeros
    at the fixed dofs.
    """
    _check_rhs(S, f)
    return _solve(S, a, f, S.factorize(a))


@ad.rrule(solve)
def solve_rrule(S, a, f):
    _check_rhs(S, f)
    u, pullback = _solve_rrule(S, a, f, S.factorize(a))
    return u, lambda ubar: pullback(ubar)[:3]


@ad.frule(solve)
def solve_frule(primals, tangents):
    S, a, f = primals
    _check_rhs(S, f)
    return _solve_frule((S, a, f, S.factorize(a)), tuple(tangents) + (None,))
