"""``K(E) u = f`` on a grid: the system of the voxel path, solved by matrix-free MG-CG.

`GridSystem` is what `topopt.fem.solve` needs of a system (the hooks of
`topopt.fem.adjoint`: ``factorize``, ``free_solve``, ``restrict``,
``expand``, ``element_matvec``, ``element_products``), so the solve's
rules (reverse, forward, second order) are the same as on a mesh. Vectors
keep every dof: the fixed ones are zero in ``restrict(f)`` and in the
solution, and identity rows of the preconditioned operator.
"""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np

from .. import ad
from .._validate import (check_array_range, check_finite_array, check_finite_values, check_indices,
                         check_int, check_type)
from ..fem.singular import _timed_solve
from .grid import Grid
from .multigrid import GridMultigrid
from .operator import GridOperator

__all__ = ["GridSystem"]


class GridSystem:
    """``K(E) = sum_e E_e K0`` (+ grounded springs) on a `Grid`, fixed dofs held.

    Parameters
    ----------
    grid : Grid
    K0 : (n_loc, n_loc) array
        The element matrix at unit coefficient (`topopt.grid.element`).
    components : int
        Unknowns per node; dofs are component-major (`topopt.grid.grid`).
    fixed : int array
        Fixed dofs (homogeneous Dirichlet).
    springs : (ndof,) array, optional
        Grounded spring stiffness per dof.
    solver_options : dict, optional
        CG and multigrid options (`topopt.fem.solvers.krylov`,
        `topopt.grid.multigrid.GRID_OPTIONS`).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.grid import Grid, GridSystem
    >>> from topopt.grid.element import heat_matrix
    >>> g = Grid((8, 4))
    >>> S = GridSystem(g, heat_matrix(g), 1, fixed=np.arange(5))      # the edge x = 0
    >>> u = fem.solve(S, np.ones(g.n_el), np.ones(g.n_nodes))
    >>> import scipy.sparse.linalg as spla                   # the assembled matrix
    >>> K, free = S.matrix(np.ones(g.n_el)), S.free
    >>> bool(np.allclose(u[free], spla.spsolve(K[free][:, free].tocsc(), np.ones(free.size))))
    True
    """

    solver = "voxel"
    real = symmetric = True
    _distributed = False
    reanalysis = None
    geometry = None

    def __init__(self, grid: Grid, K0, components: int, fixed=(), springs=None,
                 solver_options: dict | None = None):
        check_type("grid", grid, Grid, "a topopt.grid.Grid")
        self.grid, self.components = grid, check_int("components", components, 1, what="dofs per node")
        self.ndof = grid.n_nodes * self.components
        self.n_el = grid.n_el
        self.fixed = np.unique(check_indices("fixed", fixed, self.ndof, "dofs"))
        free = np.ones(self.ndof, dtype=np.float32)       # the mask: 0/1 exact, half the bytes
        free[self.fixed] = 0.0
        if not free.any():
            raise ValueError(f"fixed: every one of the {self.ndof} dofs is fixed, nothing is "
                             "left to solve for; fix fewer nodes or components")
        self._free = free
        self.springs = None if springs is None else check_finite_array("springs", springs,
                                                                        (self.ndof,))
        if self.springs is not None:
            check_array_range("springs", self.springs, 0.0, what="grounded spring stiffness per dof")
        self.operator = GridOperator(grid, K0, self.components)
        self.solver_options = dict(solver_options or {})
        self._iterative = self._multigrid(free)
        self.counts, self.timers = defaultdict(int), defaultdict(float)
        self._cache = None

    def _multigrid(self, free: np.ndarray) -> GridMultigrid:
        return GridMultigrid(self.grid, self.operator.K0, self.components, free, self.springs,
                             self.solver_options)

    def __repr__(self):
        return f"GridSystem({self.grid!r}, {self.free.size} free dofs, {self._iterative!r})"

    @property
    def free(self) -> np.ndarray:
        """The free dofs (built on demand: the solves use the mask)."""
        return np.flatnonzero(self._free)

    def summary(self) -> str:
        """The line a run prints: backend, size, levels."""
        levels = " > ".join("x".join(map(str, g.shape)) for g in self._iterative.grids)
        return (f"solver voxel (matrix-free multigrid CG, {self.ndof - self.fixed.size} free "
                f"dofs, {self.grid.dim}-D grid, levels {levels}, "
                f"{self._iterative.grid_options['coarse']} coarse levels"
                f"{', float32 V-cycle' if self._iterative.dtype != float else ''})")

    # ------------------------------------------------------------ solves
    def factorize(self, a, exact: bool = False):
        """The preconditioned CG of ``K(a)``; reused for an equal `a`."""
        a = np.asarray(ad.value(a), dtype=float) if not np.iscomplexobj(ad.value(a)) \
            else np.asarray(ad.value(a))
        if a.shape != (self.n_el,):
            raise ValueError(f"the coefficient vector has shape {a.shape}; expected "
                             f"({self.n_el},), one entry per grid element")
        check_finite_values("the coefficient vector a", a, "coefficients must be finite, "
                            "without NaN or inf", ("element",))
        if np.iscomplexobj(a) or a.min(initial=0.0) < 0:
            raise ValueError("the grid solver needs real coefficients a >= 0 (a positive "
                             "semidefinite K); use a mesh model for other systems")
        if self._cache is not None and np.array_equal(self._cache[0], a):
            return self._cache[1]
        self._cache = None
        t0 = time.perf_counter()
        F = self._iterative.factor(a, self.counts)
        self.timers["factorization"] += time.perf_counter() - t0
        self.counts["factorizations"] += 1
        self._cache = (a.copy(), F)
        return F

    def free_solve(self, F, b, adjoint: bool = False) -> np.ndarray:
        """Solve with the masked right-hand side `b` (zeros at fixed dofs; the checks of
        `topopt.fem.singular._timed_solve`)."""
        return _timed_solve(self, F, b, adjoint, "grid", "dof")

    def restrict(self, f) -> np.ndarray:
        """`f` with zeros at the fixed dofs (full length: the solves keep every dof)."""
        f = np.asarray(f)
        return f * (self._free if f.ndim == 1 else self._free[:, None])

    def expand(self, x, like) -> np.ndarray:
        """The solution `x` as a full-dof vector (it is one already)."""
        return np.asarray(x, dtype=np.result_type(x, like, float))

    # ------------------------------------------------------ element kernels
    def _columns(self, fun, *vectors):
        vectors = [np.asarray(v) for v in vectors]
        if vectors[-1].ndim == 1:
            return fun(*vectors)
        return [fun(*(v[:, k] for v in vectors)) for k in range(vectors[-1].shape[1])]

    def element_matvec(self, a, w) -> np.ndarray:
        """``sum_e a_e K_e w_e`` on all dofs (no supports; the primitive `matvec`)."""
        out = self._columns(lambda w: self.operator.apply(a, w), w)
        return out if np.ndim(w) == 1 else np.stack(out, axis=1)

    def element_products(self, v, w) -> np.ndarray:
        """Per element ``conj(v_e)^T K0 w_e``, summed over load cases (`products`)."""
        out = self._columns(self.operator.products, v, w)
        return out if np.ndim(w) == 1 else np.sum(out, axis=0)

    def matrix(self, a):
        """``K(a)`` assembled on all dofs, fixed rows and columns kept (small grids: tests)."""
        import scipy.sparse as sps
        g, c = self.grid, self.components
        nodes = g.element_nodes()
        dofs = (np.arange(c)[None, None, :] * g.n_nodes + nodes[:, :, None]).reshape(
            g.n_el, -1)
        K0 = self.operator.K0
        data = np.asarray(a)[:, None, None] * K0[None]
        rows = np.broadcast_to(dofs[:, :, None], data.shape).ravel()
        cols = np.broadcast_to(dofs[:, None, :], data.shape).ravel()
        return sps.csr_matrix((data.ravel(), (rows, cols)), shape=(self.ndof, self.ndof))
