"""Iterative backends: multigrid-preconditioned conjugate gradients.

Two preconditioners for the real symmetric positive definite stiffness
matrix on the free dofs, both used inside the same conjugate-gradient loop
(`pcg`), behind the backend interface of `topopt.fem.solvers`:

* ``"mg-cg"`` -- geometric multigrid on structured quadrilateral and
  hexahedral lattices (`GeometricMultigrid`), the MGCG of Amir, Aage &
  Lazarov, "On multigrid-CG for efficient topology optimization", Struct.
  Multidisc. Optim. 49 (2014) 815-829. The lattice is found from the node
  coordinates and coarsened by two per direction; the prolongation is
  bilinear/trilinear interpolation (built once per mesh) and the coarse
  operators are Galerkin products ``A_c = P^T A P`` computed per design
  without sparse matrix products: each coarse-cell matrix is a fixed linear
  combination of the fine element coefficients (see `GeometricMultigrid`).
  Smoothing is Chebyshev-Jacobi (Adams, Brezina, Hu & Tuminaro, "Parallel
  multigrid smoothing: polynomial versus Gauss-Seidel", J. Comput. Phys.
  188 (2003) 593-610) on ``[lmax / eig_ratio, lmax]`` with ``lmax`` a
  guaranteed upper bound of the largest eigenvalue of ``D^{-1} A`` (see
  `_Chebyshev`); the coarsest level is solved directly (CHOLMOD if cvxopt
  is installed, else SuperLU). The V-cycle is symmetric and each smoother
  contracts in the energy norm, so it is symmetric positive definite: a
  valid CG preconditioner.
* ``"amg-cg"`` -- pyamg's smoothed aggregation (Vanek, Mandel & Brezina,
  "Algebraic multigrid by smoothed aggregation for second and fourth order
  elliptic problems", Computing 56 (1996) 179-196) with the rigid-body
  modes as near-nullspace, for unstructured meshes; optional dependency
  (``pip install 'topopt[fast]'``).

The hierarchy ("factorization") is set up once per design and reused by
the forward and the adjoint solve (``K`` is symmetric). Each solve stops at
the relative residual ``rtol`` (default `RTOL`) and raises
`ConvergenceError` after ``maxiter`` iterations instead of returning an
unconverged vector; with ``warm_start`` it starts from the previous
solution of the same kind when that is closer than zero. Options: see
``_OPTIONS``.

Measured on SIMP iterates (Emin = 1e-9, rtol = 1e-8): 11-16 CG iterations
per solve on a 40 x 20 x 20 cantilever, ~18 (at most 57) on the 60 x 20 x
4 one, 36 (at most 169, warm started) over the first 20 designs of the
1200 x 400 MBB beam, whose later designs have large void regions (a cold
solve of the last one, the benchmark's floor, took 18 s). Known weakness:
solid islands held only by void (Emin) give near-singular modes that the
geometric coarse spaces miss; CG then needs hundreds of iterations (a
design with ten such islands took ~1000).
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Callable

import numpy as np
import scipy.sparse as sps

from .smoothers import _Chebyshev, _CoarseSolver, element_lmax_bound, scaled_lmax_bound
from .solvers import SingularSystemError
from .supports import rigid_body_modes
from .system import csr_structure

__all__ = ["RTOL", "MAXITER", "ConvergenceError", "pcg", "GeometricMultigrid",
           "SmoothedAggregation", "IterativeFactor", "rigid_body_modes", "scaled_lmax_bound",
           "element_lmax_bound"]

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
    ``"V"``, ``"W"`` or ``"K"`` (Krylov-accelerated coarse solves) (mg-cg).
``coarse_size``, ``max_levels``, ``semi_ratio``
    Coarsen while a level has more free dofs than ``coarse_size``; an axis is
    coarsened only while it has at least ``semi_ratio`` times the cells of the
    longest axis (semi-coarsening of thin domains: a 60 x 20 x 4 plate keeps
    its 4 cells through the thickness; full coarsening needed 40-60 CG
    iterations on its designs instead of ~20) (mg-cg).
"""


class ConvergenceError(SingularSystemError, RuntimeError):
    """CG did not reach the tolerance within ``maxiter`` iterations.

    A subclass of `SingularSystemError` (a singular system is the usual
    cause) and of `RuntimeError`.
    """


def _options(options: dict | None) -> dict:
    out = dict(_OPTIONS)
    if options:
        unknown = set(options) - set(_OPTIONS)
        if unknown:
            raise ValueError(f"unknown solver option(s) {sorted(unknown)}; expected some of "
                             f"{sorted(_OPTIONS)}")
        out.update(options)
    if not (0 < float(out["rtol"]) < 1):
        raise ValueError(f"rtol must lie in (0, 1), got {out['rtol']!r}")
    if int(out["maxiter"]) < 1:
        raise ValueError(f"maxiter must be positive, got {out['maxiter']!r}")
    return out


# ----------------------------------------------------------------------- CG

def _dot(x: np.ndarray, y: np.ndarray) -> float:
    """``x . y`` without BLAS: a threaded BLAS dot is slow on small vectors on a busy machine."""
    return float(np.einsum("i,i->", x, y))


def _norm(x: np.ndarray) -> float:
    return float(np.sqrt(_dot(x, x)))


def pcg(A, b: np.ndarray, M: Callable[[np.ndarray], np.ndarray] | None = None,
        x0: np.ndarray | None = None, rtol: float = RTOL, maxiter: int = MAXITER,
        flexible: bool = False) -> tuple[np.ndarray, int]:
    """Preconditioned conjugate gradients for symmetric positive definite `A`.

    Stops when ``|b - A x| <= rtol |b|`` (checked on the true residual at
    the end); raises `ConvergenceError` after `maxiter` iterations and
    `SingularSystemError` when ``A`` or ``M`` is found not positive definite.

    Parameters
    ----------
    A : sparse matrix or LinearOperator
    b : (n,) array
    M : callable, optional
        Symmetric positive definite preconditioner ``r -> M r``.
    x0 : (n,) array, optional
        Initial guess.
    rtol, maxiter : float, int
    flexible : bool
        Polak-Ribiere ``beta`` (flexible CG, Notay 2000), for preconditioners
        that are not fixed linear operators (the K-cycle).

    Returns
    -------
    x : (n,) array
    iterations : int

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sps
    >>> from topopt.fem.multigrid import pcg
    >>> A = sps.diags([-np.ones(9), 2 * np.ones(10), -np.ones(9)], [-1, 0, 1]).tocsr()
    >>> x, its = pcg(A, np.ones(10), rtol=1e-12)
    >>> bool(np.allclose(A @ x, 1.0)), its <= 10
    (True, True)
    """
    b = np.asarray(b, dtype=float)
    bnorm = _norm(b)
    if bnorm == 0.0:
        return np.zeros_like(b), 0
    if not np.isfinite(bnorm):
        raise ValueError("the right-hand side contains NaN or inf")
    tol = rtol * bnorm
    if x0 is None:
        x = np.zeros_like(b)
        r = b.copy()
    else:
        x = np.array(x0, dtype=float)
        r = b - A @ x
    it = 0
    while True:                                   # restarts when the true residual drifts
        p = None
        rz = 0.0
        rnorm = _norm(r)
        while rnorm > tol:
            if it >= maxiter:
                raise ConvergenceError(
                    f"CG did not converge in {maxiter} iterations (relative residual "
                    f"{rnorm / bnorm:.1e} > rtol {rtol:.0e}): the system may be singular "
                    "(unsupported parts) or too ill-conditioned for the preconditioner; "
                    "raise maxiter or use a direct solver")
            z = M(r) if M is not None else r.copy()
            rz_new = _dot(r, z)
            if not rz_new > 0:
                raise SingularSystemError("the preconditioner is not positive definite "
                                          f"(r^T M r = {rz_new:.2e})")
            if p is None:
                p = z
            else:
                beta = (rz_new - _dot(z, r_prev)) / rz if flexible else rz_new / rz
                p = z + beta * p
            rz = rz_new
            q = A @ p
            pq = _dot(p, q)
            if not pq > 0:
                raise SingularSystemError("the matrix is not positive definite (p^T K p = "
                                          f"{pq:.2e}): is every part of the domain supported?")
            alpha = rz / pq
            x += alpha * p
            if flexible:
                r_prev = r.copy()
            r -= alpha * q
            rnorm = _norm(r)
            it += 1
        r = b - A @ x
        if _norm(r) <= tol or it >= maxiter:
            if _norm(r) > 10 * tol:
                raise ConvergenceError(f"CG stalled at a relative residual of "
                                       f"{_norm(r) / bnorm:.1e}")
            return x, it


# ---------------------------------------------------------- structured grid

def _axis_groups(v: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values of `v` (gaps > tol) and the group index of each entry."""
    order = np.argsort(v, kind="stable")
    sv = v[order]
    group = np.concatenate([[0], np.cumsum(np.diff(sv) > tol)])
    index = np.empty(v.size, dtype=np.int64)
    index[order] = group
    coords = np.bincount(group, sv) / np.bincount(group)
    return coords, index


def _lattice(p: np.ndarray, tol: float = 1e-9):
    """Axis coordinates and grid indices ``(dim, n_nodes)`` of a full tensor lattice, or None."""
    dim, n = p.shape
    scale = max(float(np.ptp(p)), 1e-300) if n else 1.0
    coords, index = [], []
    for d in range(dim):
        c, i = _axis_groups(p[d], tol * scale)
        coords.append(c)
        index.append(i)
    shape = tuple(c.size for c in coords)
    if int(np.prod(shape)) != n or min(shape) < 2:
        return None
    lin = np.ravel_multi_index(index, shape, order="F")
    if np.unique(lin).size != n:
        return None
    return coords, np.array(index)


def _coarse_indices(n_nodes: int) -> np.ndarray:
    """Every second node of an axis, and the last one (an odd count keeps one thin cell)."""
    c = np.arange(0, n_nodes, 2)
    return c if c[-1] == n_nodes - 1 else np.append(c, n_nodes - 1)


def _interp_1d(X: np.ndarray, ci: np.ndarray) -> sps.csr_matrix:
    """Linear interpolation from the nodes `ci` of an axis with coordinates `X` to all nodes."""
    nf, nc = X.size, ci.size
    k = np.clip(np.searchsorted(ci, np.arange(nf), side="right") - 1, 0, nc - 2)
    t = (X - X[ci[k]]) / (X[ci[k + 1]] - X[ci[k]])
    rows = np.concatenate([np.arange(nf), np.arange(nf)])
    cols = np.concatenate([k, k + 1])
    vals = np.concatenate([1.0 - t, t])
    keep = np.abs(vals) > 1e-14
    return sps.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=(nf, nc))


def _classify(g, comp, free, coords, ci, ncomp: int):
    """Coarse cell and interpolation class of each fine element.

    `g` (dim, n_e, n_loc) are the grid indices of the node of each local
    dof, `comp` and `free` its component and whether it is free. Two
    elements are in one class when their local interpolation matrices
    ``Q (n_loc, 2^dim ncomp)`` from the coarse cell (fixed fine dofs give
    zero rows) are equal. Returns None if an element is not a lattice cell.
    """
    dim, n_e, n_loc = g.shape
    lower, upper = g.min(axis=2), g.max(axis=2)
    if np.any(upper - lower != 1):
        return None
    kc, ts = [], []
    for d in range(dim):
        k = np.clip(np.searchsorted(ci[d], lower[d], side="right") - 1, 0, ci[d].size - 2)
        X = coords[d]
        lo, hi = X[ci[d][k]], X[ci[d][k + 1]]
        ts.append((X[g[d]] - lo[:, None]) / (hi - lo)[:, None])
        kc.append(k)
    parent = np.ravel_multi_index(kc, tuple(c.size - 1 for c in ci), order="F")
    key = np.concatenate([np.rint(t * 2 ** 20).astype(np.int64) for t in ts]
                         + [comp.astype(np.int64), free.astype(np.int64)], axis=1)
    _, first, cls = np.unique(key, axis=0, return_index=True, return_inverse=True)
    cls = cls.ravel()
    ncls, nlc = first.size, 2 ** dim * ncomp
    Q = np.zeros((ncls, n_loc, nlc))
    c_rep = comp[first]
    f_rep = free[first]
    ii = np.arange(ncls)[:, None]
    ll = np.arange(n_loc)[None, :]
    for m in range(2 ** dim):
        w = np.ones((ncls, n_loc))
        for d in range(dim):
            t = ts[d][first]
            w *= t if (m >> d) & 1 else 1.0 - t
        Q[ii, ll, m * ncomp + c_rep] = w * f_rep
    return parent, cls, Q


def _pattern(edofs: np.ndarray, free_index: np.ndarray):
    """Free-dof CSR pattern of the cells `edofs` and each local entry's position (or -1)."""
    loc = free_index[edofs]
    n_e, n_loc = loc.shape
    rows = np.repeat(loc, n_loc, axis=1).ravel()
    cols = np.tile(loc, (1, n_loc)).ravel()
    keep = (rows >= 0) & (cols >= 0)
    n = int(free_index.max()) + 1
    keys = rows[keep] * n + cols[keep]
    uniq, inverse = np.unique(keys, return_inverse=True)
    _, cols, indptr = csr_structure(uniq, n)
    return indptr, cols, np.flatnonzero(keep), inverse.ravel(), uniq.size


def _csr(data, indptr, indices, n) -> sps.csr_matrix:
    A = sps.csr_matrix((n, n))
    A.data, A.indices, A.indptr = data, indices, indptr
    return A


def _int32(a: np.ndarray) -> np.ndarray:
    return a.astype(np.int32) if a.size and a.max() < 2 ** 31 - 1 else a


class _Level:
    """Mesh-constant data of one coarse level."""

    def __init__(self):
        self.P = None          # prolongation from this level to the finer one (free dofs)
        self.R = None          # its transpose, CSR
        self.n = 0             # free dofs of this level
        self.mode = "sparse"   # "element": A from the fine coefficients; "sparse": R A P


class GeometricMultigrid:
    """Geometric multigrid hierarchy of a `LinearSystem` on a structured lattice.

    Built once per mesh and support set: the node lattice, the prolongations
    ``P_l`` (free dofs of level ``l+1`` to free dofs of level ``l``) and the
    data that gives each design's Galerkin operators ``A_{l+1} = P_l^T A_l
    P_l`` cheaply. With equal element matrices ``K_e`` (any lattice made by
    `fem.rectangle` / `fem.box`), the fine elements inside a coarse cell fall
    into a few classes by their position in it (and by which of their dofs
    are fixed); the coarse-cell matrix is ``sum_e a_e Q_c^T K_e Q_c`` with
    ``Q_c`` the interpolation of class ``c``, so every level is one sparse
    x dense product with the coefficients ``a`` and a scatter into a fixed
    pattern. Otherwise (different element matrices, a constant part ``K0``)
    the products ``P^T A P`` are sparse matrix products.

    Parameters
    ----------
    system : LinearSystem
        Real symmetric system; its free dofs and element dofs.
    geometry : (p, nodal_dofs)
        Node coordinates ``(dim, n_nodes)`` and the dofs of each node
        ``(n_components, n_nodes)`` (scikit-fem's ``basis.nodal_dofs``).
    options : dict
        ``coarse_size`` (coarsen while a level has more free dofs),
        ``max_levels``.

    Examples
    --------
    Free dofs per level of a clamped 16 x 8 plate:

    >>> from topopt import fem
    >>> from topopt.fem.multigrid import GeometricMultigrid
    >>> model = fem.elasticity(fem.rectangle(16, 8)).fix(nodes=lambda x: x[0] == 0)
    >>> S = model.system("mg-cg")
    >>> GeometricMultigrid(S, (model.mesh.p, model.basis.nodal_dofs), {"coarse_size": 50}).sizes
    [288, 80, 24]
    """

    def __init__(self, system, geometry, options: dict | None = None):
        opts = _options(options)
        if geometry is None:
            raise ValueError("solver='mg-cg' needs the mesh geometry of a structured "
                             "quadrilateral/hexahedral lattice (fem.rectangle, fem.box): build "
                             "the system with Model.system('mg-cg'), or pass "
                             "LinearSystem(..., geometry=(mesh.p, basis.nodal_dofs)); use "
                             "solver='amg-cg' on unstructured meshes")
        p, nodal_dofs = (np.asarray(g) for g in geometry)
        nodal_dofs = np.atleast_2d(nodal_dofs).astype(np.int64)
        S = system
        ncomp, n_nodes = nodal_dofs.shape
        if (p.ndim != 2 or p.shape[1] != n_nodes or nodal_dofs.size != S.ndof
                or np.unique(nodal_dofs).size != S.ndof):
            raise ValueError("solver='mg-cg' needs one dof per node and component (bilinear "
                             "quadrilaterals or trilinear hexahedra) and geometry=(p, "
                             "nodal_dofs) matching the system")
        found = _lattice(p)
        if found is None:
            raise ValueError("solver='mg-cg' needs a structured mesh: the nodes do not form a "
                             "full tensor-product lattice (use fem.rectangle / fem.box, or "
                             "solver='amg-cg' for unstructured meshes)")
        coords, index = found
        dim = p.shape[0]
        if S.n_loc != 2 ** dim * ncomp:
            raise ValueError(f"solver='mg-cg' needs {2 ** dim}-node lattice cells; the elements "
                             f"have {S.n_loc} dofs")
        self.dim, self.ncomp = dim, ncomp
        node_of = np.empty(S.ndof, dtype=np.int64)
        comp_of = np.empty(S.ndof, dtype=np.int64)
        for c in range(ncomp):
            node_of[nodal_dofs[c]] = np.arange(n_nodes)
            comp_of[nodal_dofs[c]] = c
        shape = tuple(c.size for c in coords)
        lex = np.ravel_multi_index(index, shape, order="F")          # mesh node -> lattice
        fixed = np.zeros(S.ndof, dtype=bool)
        fixed[S.fixed] = True
        # level 0: the mesh's dof numbering; lattice dof of dof d is lex[node]*ncomp + comp
        lex_dof = lex[node_of] * ncomp + comp_of
        # what the levels need of the system, without a reference cycle system <-> hierarchy
        # (a cycle would keep gigabytes alive until the garbage collector runs)
        view = SimpleNamespace(ndof=S.ndof, free=S.free, element_dofs=S.element_dofs, Ke=S.Ke,
                               uniform=S.uniform, K0=S.K0, n_loc=S.n_loc)
        self._system, self._index, self._node_of, self._comp_of = view, index, node_of, comp_of
        self._lex_dof, self._fixed, self.coords = lex_dof, fixed, coords
        self.counts = getattr(system, "counts", None)
        self.warm: dict = {}
        self.log: list[int] = []           # CG iterations of every solve
        self._levels: list[_Level] | None = None
        self._built_for = None
        self._element_bound = None
        self._opts = opts

    @property
    def levels(self) -> list[_Level]:
        """The levels, finest first (built on first use with the current options)."""
        key = (int(self._opts["coarse_size"]), int(self._opts["max_levels"]),
               float(self._opts["semi_ratio"]))
        if self._levels is None or self._built_for != key:
            self._build(self._opts)
            self._built_for = key
        return self._levels

    def _build(self, opts: dict) -> None:
        S, index, node_of, comp_of = self._system, self._index, self._node_of, self._comp_of
        lex_dof, fixed, coords = self._lex_dof, self._fixed, self.coords
        ncomp = self.ncomp
        shape = tuple(c.size for c in coords)
        free_index = -np.ones(S.ndof, dtype=np.int64)
        free_index[S.free] = np.arange(S.free.size)

        element_mode = S.uniform and S.K0 is None
        g0 = index[:, node_of[S.element_dofs]]                      # (dim, n_el, n_loc)
        comp0 = comp_of[S.element_dofs]
        free0 = ~fixed[S.element_dofs]

        levels: list[_Level] = []
        top = _Level()
        top.n = S.free.size
        levels.append(top)
        cur_coords, cur_fixed_lex = coords, np.zeros(int(np.prod(shape)) * ncomp, dtype=bool)
        cur_fixed_lex[lex_dof] = fixed
        cur_free_index_lex = -np.ones(cur_fixed_lex.size, dtype=np.int64)
        cur_free_index_lex[lex_dof] = free_index
        cell_of = cls_of = M = None           # fine element -> cell/class of the current level
        while (levels[-1].n > opts["coarse_size"] and len(levels) < opts["max_levels"]
               and max(c.size for c in cur_coords) > 2):
            cells = [c.size - 1 for c in cur_coords]
            # semi-coarsening: keep the thin directions of slender domains
            ci = [_coarse_indices(c.size) if n >= max(2, opts["semi_ratio"] * max(cells))
                  else np.arange(c.size) for c, n in zip(cur_coords, cells)]
            c_coords = [X[c] for X, c in zip(cur_coords, ci)]
            c_shape = tuple(c.size for c in ci)
            # node prolongation, lexicographic (x fastest): kron(z, kron(y, x))
            Pn = sps.csr_matrix(np.ones((1, 1)))
            for X, c in zip(cur_coords, ci):
                Pn = sps.kron(_interp_1d(X, c), Pn, format="csr")
            Pd = sps.kron(Pn, sps.identity(ncomp), format="csr")
            # coarse dof fixed iff the coincident fine dof is fixed
            inj = np.ravel_multi_index([g.ravel(order="F") for g in
                                        np.meshgrid(*ci, indexing="ij")],
                                       tuple(c.size for c in cur_coords), order="F")
            c_fixed = cur_fixed_lex.reshape(-1, ncomp)[inj].ravel()
            c_free_index = -np.ones(c_fixed.size, dtype=np.int64)
            c_free_index[~c_fixed] = np.arange(int(np.sum(~c_fixed)))
            rows = cur_free_index_lex >= 0
            f_order = np.argsort(cur_free_index_lex[rows])
            P = Pd[np.flatnonzero(rows)[f_order]][:, ~c_fixed].tocsr()
            lvl = _Level()
            lvl.P, lvl.R = P, P.T.tocsr()
            lvl.P.indices, lvl.P.indptr = _int32(P.indices), _int32(P.indptr)
            lvl.R.indices, lvl.R.indptr = _int32(lvl.R.indices), _int32(lvl.R.indptr)
            lvl.n = int(np.sum(~c_fixed))
            if lvl.n == 0:
                break
            if element_mode:
                element_mode = self._element_level(
                    lvl, len(levels), S, g0, comp0, free0, cur_coords, ci, c_shape,
                    cur_fixed_lex, c_free_index, cell_of, cls_of, M)
                if element_mode:
                    cell_of, cls_of, M = lvl.cell_of, lvl.cls_of, lvl.M
            levels.append(lvl)
            cur_coords, cur_fixed_lex, cur_free_index_lex = c_coords, c_fixed, c_free_index
        self._levels = levels

    @property
    def sizes(self) -> list[int]:
        """Free dofs of each level, finest first."""
        return [lvl.n for lvl in self.levels]

    # ------------------------------------------------------------------ setup
    def _element_level(self, lvl, depth, S, g0, comp0, free0, coords, ci, c_shape,
                       fixed_lex, c_free_index, cell_of, cls_of, M) -> bool:
        """Class data so that the level's cell matrices are ``sparse(a) @ M``."""
        dim, ncomp = self.dim, self.ncomp
        nlc = 2 ** dim * ncomp
        if depth == 1:
            out = _classify(g0, comp0, free0, coords, ci, ncomp)
            if out is None:
                return False
            parent, cls, Q = out
            Ke = np.asarray(S.Ke, dtype=float)
            M_new = np.einsum("cia,ij,cjb->cab", Q, Ke, Q, optimize=True)
            new_cell, new_cls = parent, cls
        else:
            # the cells of the finer level are this step's "elements"
            f_cells = tuple(c.size - 1 for c in coords)
            n_cells = int(np.prod(f_cells))
            cidx = np.array(np.unravel_index(np.arange(n_cells), f_cells, order="F"))
            bits = np.array([[(m >> d) & 1 for m in range(2 ** dim)] for d in range(dim)])
            gn = cidx[:, :, None] + bits[:, None, :]                     # (dim, n_cells, 2^dim)
            g = np.repeat(gn, ncomp, axis=2)
            comp = np.tile(np.arange(ncomp), (n_cells, 2 ** dim))
            nodes = np.ravel_multi_index(tuple(gn), tuple(c.size for c in coords), order="F")
            edofs = (np.repeat(nodes, ncomp, axis=1) * ncomp + comp)
            out = _classify(g, comp, ~fixed_lex[edofs], coords, ci, ncomp)
            if out is None:
                return False
            parent, ccls, Q = out
            pair = ccls[cell_of].astype(np.int64) * M.shape[0] + cls_of
            uniq, first, new_cls = np.unique(pair, return_index=True, return_inverse=True)
            if uniq.size > 50000:
                return False
            Qc, Mc = Q[ccls[cell_of[first]]], M[cls_of[first]].reshape(-1, nlc, nlc)
            M_new = np.einsum("cia,cij,cjb->cab", Qc, Mc, Qc, optimize=True)
            new_cell, new_cls = parent[cell_of], new_cls.ravel()
        n_cells_c = int(np.prod([s - 1 for s in c_shape]))
        # the coarse cells' dofs and the assembly into the free-dof pattern
        cidx = np.array(np.unravel_index(np.arange(n_cells_c), tuple(s - 1 for s in c_shape),
                                         order="F"))
        bits = np.array([[(m >> d) & 1 for m in range(2 ** dim)] for d in range(dim)])
        nodes = np.ravel_multi_index(tuple(cidx[:, :, None] + bits[:, None, :]), c_shape,
                                     order="F")
        comp = np.tile(np.arange(ncomp), (n_cells_c, 2 ** dim))
        edofs = np.repeat(nodes, ncomp, axis=1) * ncomp + comp
        indptr, indices, target, position, nnz = _pattern(edofs, c_free_index)
        lvl.indptr, lvl.indices = _int32(indptr), _int32(indices)
        lvl.target, lvl.position, lvl.nnz = target, position, nnz
        order = np.argsort(new_cell, kind="stable")
        lvl.coef_indptr = np.concatenate([[0], np.cumsum(np.bincount(new_cell,
                                                                     minlength=n_cells_c))])
        lvl.coef_indices = new_cls[order].astype(np.int32)
        lvl.coef_order = order
        lvl.n_cells = n_cells_c
        lvl.M = M_new.reshape(M_new.shape[0], -1)
        lvl.cell_of, lvl.cls_of = new_cell, new_cls.astype(np.int64)
        lvl.mode = "element"
        return True

    def galerkin(self, A: sps.csr_matrix, a: np.ndarray | None) -> list[sps.csr_matrix]:
        """The operators of all levels for the fine matrix `A` with coefficients `a`."""
        out = [A]
        for lvl in self.levels[1:]:
            if lvl.mode == "element" and a is not None:
                coef = sps.csr_matrix((a[lvl.coef_order], lvl.coef_indices, lvl.coef_indptr),
                                      shape=(lvl.n_cells, lvl.M.shape[0]))
                cell = coef @ lvl.M                                   # (n_cells, nlc^2)
                data = np.bincount(lvl.position, cell.ravel()[lvl.target], minlength=lvl.nnz)
                out.append(_csr(data, lvl.indptr, lvl.indices, lvl.n))
            else:
                Ac = (lvl.R @ out[-1] @ lvl.P).tocsr()
                Ac.sum_duplicates()
                out.append(Ac)
        return out

    def factor(self, A: sps.csr_matrix, a: np.ndarray | None, options: dict) -> "IterativeFactor":
        """Set up the V-cycle for `A` (one design) and return the solver object."""
        options = _options(options)
        self._opts = options
        bound0 = np.inf
        if a is not None and self._system.K0 is None and np.all(a >= 0):
            if self._element_bound is None:
                self._element_bound = element_lmax_bound(self._system.Ke)
            bound0 = self._element_bound
        return IterativeFactor(A, _VCycle(self, self.galerkin(A, a), options, bound0), options,
                               self.counts, self.warm, self.log)


class _VCycle:
    """Symmetric V- (or W-) cycle: Chebyshev pre/post smoothing, direct coarsest solve.

    The W-cycle (``cycle="W"``) applies the coarse-level cycle twice below the
    finest level (error propagation ``(I - C A)^2``, still symmetric). The
    K-cycle (``cycle="K"``) replaces each coarse solve above the coarsest by
    two flexible-CG steps preconditioned by that level's cycle (Notay &
    Vassilevski, "Recursive Krylov-based multigrid cycles", Numer. Linear
    Algebra Appl. 15 (2008) 473-487); the preconditioner is then not linear
    and the outer CG is flexible.
    """

    def __init__(self, hierarchy: GeometricMultigrid, operators, options: dict,
                 bound0: float = np.inf):
        if options["cycle"] not in ("V", "W", "K"):
            raise ValueError(f"cycle must be 'V', 'W' or 'K', got {options['cycle']!r}")
        self.cycle = options["cycle"]
        self.gamma = 2 if self.cycle == "W" else 1
        self.flexible = self.cycle == "K"
        self.P = [lvl.P for lvl in hierarchy.levels[1:]]
        self.R = [lvl.R for lvl in hierarchy.levels[1:]]
        self.A = operators
        # the coarse levels' Gershgorin bounds exceed their spectra by ~40 % (the finest
        # level's element bound by ~25 %): one more Chebyshev step there, at a quarter of
        # the cost, makes up for it (1200 x 400 MBB: 64 CG iterations instead of 92 with
        # the same degree, 66 with the exact top eigenvalue)
        degree = int(options["degree"])
        self.smoothers = [_Chebyshev(A, degree if level == 0 else degree + 1,
                                     float(options["eig_ratio"]), bound0 if level == 0 else np.inf)
                          for level, A in enumerate(operators[:-1])]
        self.coarse = _CoarseSolver(operators[-1])

    def __call__(self, b: np.ndarray, level: int = 0) -> np.ndarray:
        if level == len(self.A) - 1:
            return self.coarse(b)
        smooth = self.smoothers[level]
        x, r = smooth(b)
        rc = self.R[level] @ r
        if self.flexible and level + 2 < len(self.A):
            e = self._krylov(rc, level + 1)
        else:
            e = self(rc, level + 1)
            if self.gamma == 2 and level + 2 < len(self.A):
                e += self(rc - self.A[level + 1] @ e, level + 1)
        x += self.P[level] @ e
        x, _ = smooth(b, x, residual=False)
        return x

    def _krylov(self, r: np.ndarray, level: int) -> np.ndarray:
        """Two flexible-CG steps for ``A_level e = r`` (Notay & Vassilevski 2008, Alg. 2.1)."""
        A = self.A[level]
        c = self(r, level)
        v = A @ c
        rho1, alpha1 = _dot(c, v), _dot(c, r)
        if not rho1 > 0:
            return c
        rt = r - (alpha1 / rho1) * v
        if _norm(rt) <= 0.25 * _norm(r):
            return (alpha1 / rho1) * c
        d = self(rt, level)
        w = A @ d
        gamma, beta, alpha2 = _dot(d, v), _dot(d, w), _dot(d, rt)
        rho2 = beta - gamma ** 2 / rho1
        if not rho2 > 0:
            return (alpha1 / rho1) * c
        return (alpha1 / rho1 - gamma * alpha2 / (rho1 * rho2)) * c + (alpha2 / rho2) * d


# ------------------------------------------------------ smoothed aggregation

class SmoothedAggregation:
    """pyamg smoothed-aggregation AMG with a rigid-body near-nullspace, set up per design.

    Parameters
    ----------
    system : LinearSystem
    geometry : (p, nodal_dofs) or None
        Without it the near-nullspace is the constant vector (pyamg's default).
    options : dict

    Examples
    --------
    >>> import numpy as np, skfem
    >>> from topopt import fem
    >>> mesh = skfem.MeshTri.init_symmetric().refined(3)
    >>> model = fem.elasticity(mesh).fix(nodes=lambda x: x[0] == 0)
    >>> f = model.point_load((1.0, 1.0), (0.0, -1.0))
    >>> u = model.solve(np.ones(model.n_el), f, solver="amg-cg")
    >>> bool(np.allclose(u, model.solve(np.ones(model.n_el), f, solver="superlu")))
    True
    """

    def __init__(self, system, geometry=None, options: dict | None = None):
        try:
            import pyamg  # noqa: F401
        except ImportError as err:
            raise ValueError("solver='amg-cg' needs pyamg: pip install 'topopt[fast]'") from err
        _options(options)
        self.B = None
        if geometry is not None:
            p, nodal_dofs = geometry
            self.B = rigid_body_modes(p, nodal_dofs, system.ndof)[system.free]
        self.counts = getattr(system, "counts", None)
        self.warm: dict = {}
        self.log: list[int] = []           # CG iterations of every solve

    def factor(self, A: sps.csr_matrix, a, options: dict) -> "IterativeFactor":
        import pyamg
        options = _options(options)
        ml = pyamg.smoothed_aggregation_solver(A, B=self.B, symmetry="symmetric",
                                               max_coarse=500)
        M = ml.aspreconditioner(cycle="V")
        return IterativeFactor(A, lambda r: M @ r, options, self.counts, self.warm, self.log)


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
    >>> from topopt.fem.multigrid import IterativeFactor
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
        x0 = None
        key = (kind, column)
        if self.options["warm_start"]:
            prev = self.warm.get(key)
            if prev is not None and prev.shape == b.shape:
                # the best multiple of the previous solution in the energy norm: its
                # error is then smaller than that of zero whenever b^T prev != 0
                Ap = self.matrix @ prev
                pAp = _dot(prev, Ap)
                if pAp > 0 and _dot(b, prev) != 0:
                    x0 = prev * (_dot(b, prev) / pAp)
        t0 = time.perf_counter()
        x, its = pcg(self.matrix, b, self.M, x0=x0, rtol=float(self.options["rtol"]),
                     maxiter=int(self.options["maxiter"]),
                     flexible=getattr(self.M, "flexible", False))
        if self.options["energy_scaling"]:
            # The Galerkin projection of u onto span{x}: compliance b^T x then errs by
            # ||u - x||_A^2 >= 0 (second order) even from a warm start.
            xAx = _dot(x, self.matrix @ x)
            if xAx > 0:
                x *= _dot(b, x) / xAx
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
