"""Iterative backends: multigrid-preconditioned conjugate gradients.

Two preconditioners for the real symmetric positive definite stiffness
matrix on the free dofs, both used inside the same conjugate-gradient loop
(`topopt.fem.solvers.pcg`; kept instead of scipy's `cg`, which was 2-3
times slower on the shared machine, ``scripts/benchmarks/benchmark_iterative.py``),
behind the backend table of
`topopt.fem.solvers`; this module holds the geometric one (the lattice
helpers are in `topopt.fem.solvers.lattice`, the algebraic one in `topopt.fem.solvers.amg`):

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
  `_Chebyshev`); the coarsest level is solved directly by the direct
  backends' code (`topopt.fem.solvers.factorize_spd`: CHOLMOD if cvxopt is
  installed, else SuperLU). The V-cycle is symmetric and each smoother
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
``topopt.fem.solvers.krylov._OPTIONS``.

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

from types import SimpleNamespace

import numpy as np
import scipy.sparse as sps

from .csr import compact_index as _int32, csr_from_parts as _csr
from .krylov import IterativeFactor, _options
from .lattice import cell_pattern, classify, coarsen, lattice
from .smoothers import _Chebyshev, _CoarseSolver, element_lmax_bound

__all__ = ["GeometricMultigrid"]

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
    >>> from topopt.fem.solvers.multigrid import GeometricMultigrid
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
        found = lattice(p)
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
            ci, Pd, inj = coarsen(cur_coords, opts["semi_ratio"], ncomp)
            c_coords = [X[c] for X, c in zip(cur_coords, ci)]
            c_shape = tuple(c.size for c in ci)
            # coarse dof fixed iff the coincident fine dof is fixed
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
            out = classify(g0, comp0, free0, coords, ci, ncomp)
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
            out = classify(g, comp, ~fixed_lex[edofs], coords, ci, ncomp)
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
        indptr, indices, target, position, nnz = cell_pattern(edofs, c_free_index)
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
        return IterativeFactor(A, _VCycle.of(self, self.galerkin(A, a), options, bound0), options,
                               self.counts, self.warm, self.log)


class _VCycle:
    """Symmetric V- (or W-) cycle: Chebyshev pre/post smoothing, direct coarsest solve.

    The W-cycle (``cycle="W"``) applies the coarse-level cycle twice below the
    finest level (error propagation ``(I - C A)^2``, still symmetric).
    """

    def __init__(self, P, R, operators, smoothers, coarse, cycle: str = "V"):
        self.cycle = cycle
        self.gamma = 2 if self.cycle == "W" else 1
        self.P, self.R, self.A = P, R, operators
        self.smoothers, self.coarse = smoothers, coarse

    @classmethod
    def of(cls, hierarchy: GeometricMultigrid, operators, options: dict,
           bound0: float = np.inf) -> "_VCycle":
        """The cycle of a lattice hierarchy with its Galerkin `operators` (CSR)."""
        # the coarse levels' Gershgorin bounds exceed their spectra by ~40 % (the finest
        # level's element bound by ~25 %): one more Chebyshev step there, at a quarter of
        # the cost, makes up for it (1200 x 400 MBB: 64 CG iterations instead of 92 with
        # the same degree, 66 with the exact top eigenvalue)
        degree = int(options["degree"])
        smoothers = [_Chebyshev(A, degree if level == 0 else degree + 1,
                                float(options["eig_ratio"]), bound0 if level == 0 else np.inf)
                     for level, A in enumerate(operators[:-1])]
        return cls([lvl.P for lvl in hierarchy.levels[1:]],
                   [lvl.R for lvl in hierarchy.levels[1:]], operators, smoothers,
                   _CoarseSolver(operators[-1]), options["cycle"])

    def __call__(self, b: np.ndarray, level: int = 0) -> np.ndarray:
        if level == len(self.A) - 1:
            return self.coarse(b)
        smooth = self.smoothers[level]
        x, r = smooth(b)
        rc = self.R[level] @ r
        r = None                        # not kept through the coarser levels
        e = self(rc, level + 1)
        if self.gamma == 2 and level + 2 < len(self.A):
            e += self(rc - self.A[level + 1] @ e, level + 1)
        x += self.P[level] @ e
        x, _ = smooth(b, x, residual=False)
        return x
