"""Multigrid-preconditioned CG on a grid without a fine matrix.

The finest level is `GridOperator` (``E_e K0``, matrix-free); the first
coarse level coarsens by 4 per axis where the counts allow (the level a
factor 2 would give holds 8 times more cell matrices than the grid has
dofs' worth of memory: the non-dyadic step of TOP3D_XL, Wang et al. 2025),
else by 3, else by 2, then by 2 (else 3) while a level has more than
``coarse_size`` dofs (`grid_levels`: 324 x 162 x 162 coarsens by 3, 2, 3). Coarse levels
hold one matrix per cell, Galerkin (``coarse="galerkin"``,
`topopt.grid.galerkin`) or rediscretized from the children's mean
coefficient (``coarse="rediscretized"``, matrix-free again); the coarsest is
assembled and factorized (`topopt.fem.solvers.factorize_spd`). Smoothing is
the Chebyshev-Jacobi smoother of `topopt.fem.solvers.smoothers` with a
guaranteed bound: the element bound of ``K0`` on the finest level,
Gershgorin's on the Jacobi-scaled cells (``|A|`` applied cell by cell)
below. Fixed dofs stay in the vectors as identity rows; a coarse node is
fixed where its fine node is. CG is the library's one loop
(`topopt.fem.solvers.krylov`) with its options and warm starts.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict

import numpy as np
import scipy.sparse as sps

from .._validate import check_choice, check_keywords
from ..fem.solvers.krylov import IterativeFactor, _options
from ..fem.solvers.multigrid import _VCycle
from ..fem.solvers.smoothers import _Chebyshev, _CoarseSolver, element_lmax_bound
from .galerkin import _children, cells_from_cells, cells_from_coefficients
from .grid import Grid
from .operator import CellOperator, GridOperator
from .transfer import prolong, restrict

__all__ = ["GridMultigrid", "GRID_OPTIONS", "grid_levels", "coarsest"]

#: Options of the grid solver beside those of `topopt.fem.solvers.krylov`.
GRID_OPTIONS = {"coarse": "galerkin", "first_factor": 4}


def _split_options(options: dict | None) -> tuple[dict, dict]:
    """``(krylov options with defaults, grid options with defaults)``, each checked."""
    options = dict(options or {})
    grid = {k: options.pop(k) for k in list(options) if k in GRID_OPTIONS}
    check_keywords("solver_options", options, list(_options(None)) + list(GRID_OPTIONS))
    out = dict(GRID_OPTIONS, **grid)
    check_choice("coarse", out["coarse"], ("galerkin", "rediscretized"))
    if isinstance(out["first_factor"], bool) or out["first_factor"] not in (2, 4):
        raise ValueError(f"first_factor must be 2 or 4 (the first coarsening per axis), "
                         f"got {out['first_factor']!r}")
    return _options(options), out


def _timed(timers: dict, key: str, fun, *args):
    t0 = time.perf_counter()
    out = fun(*args)
    timers[key] += time.perf_counter() - t0
    return out


class _Level:
    """A level's operator on full-length vectors: ``M (A x + s x) + (1 - M) x``.

    ``M`` zeroes the fixed rows, so the fixed entries of the result are those
    of `x`: set by index (the fixed dofs are few), not by a pass over a mask.
    """

    def __init__(self, apply, fixed: np.ndarray, springs: np.ndarray | None, timers: dict,
                 key: str):
        self.apply, self.fixed, self.springs = apply, fixed, springs
        self.timers, self.key = timers, key

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        y = _timed(self.timers, self.key, self.apply, x)
        if self.springs is not None:
            y += self.springs * x
        y[self.fixed] = x[self.fixed]
        return y


def _held(v: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    """`v` with zeros at the `fixed` dofs (a copy only when one is not zero)."""
    if fixed.size and np.any(v[fixed]):
        v = v.copy()
        v[fixed] = 0.0
    return v


class _Transfer:
    """``P`` (``prolong``) or ``P^T`` between a level and the next coarser one, masked."""

    def __init__(self, fine: Grid, coarse: Grid, factor: int, components: int,
                 fixed_f: np.ndarray, fixed_c: np.ndarray, transpose: bool, timers: dict):
        self.shapes = ((components,) + fine.nodes_shape, (components,) + coarse.nodes_shape)
        self.factor, self.transpose = factor, transpose
        self.fixed_f, self.fixed_c, self.timers = fixed_f, fixed_c, timers

    def __matmul__(self, v: np.ndarray) -> np.ndarray:
        return _timed(self.timers, "transfer", self._apply, v)

    def _apply(self, v: np.ndarray) -> np.ndarray:
        if self.transpose:
            out = restrict(_held(v, self.fixed_f).reshape(self.shapes[0]), self.factor).ravel()
            out[self.fixed_c] = 0.0
        else:
            out = prolong(_held(v, self.fixed_c).reshape(self.shapes[1]), self.factor).ravel()
            out[self.fixed_f] = 0.0
        return out


class _Coarsest:
    """The coarsest level factorized on its free dofs, as a map of full-length vectors."""

    def __init__(self, grid: Grid, cells: np.ndarray, components: int, free: np.ndarray,
                 springs: np.ndarray | None, timers: dict):
        self.timers = timers
        nodes = grid.element_nodes()                                    # (n_c, nq)
        dofs = (np.arange(components)[None, None, :] * grid.n_nodes
                + nodes[:, :, None]).reshape(nodes.shape[0], -1)        # local q c + i
        n = grid.n_nodes * components
        rows = np.broadcast_to(dofs[:, :, None], cells.shape).ravel()
        cols = np.broadcast_to(dofs[:, None, :], cells.shape).ravel()
        A = sps.csr_matrix((cells.ravel(), (rows, cols)), shape=(n, n))
        if springs is not None:
            A = A + sps.diags(springs)
        self.free = np.flatnonzero(free)
        self.n = n
        self.solver = _CoarseSolver(sps.csr_matrix(A[self.free][:, self.free]))

    def __call__(self, b: np.ndarray) -> np.ndarray:
        t0 = time.perf_counter()
        x = np.zeros(self.n)
        x[self.free] = self.solver(b[self.free])
        self.timers["coarse_solve"] += time.perf_counter() - t0
        return x


def grid_levels(shape, components: int, coarse_size: float = 10000, max_levels: float = 10,
                first_factor: int = 4) -> tuple[list, list]:
    """The element counts of a grid's multigrid levels and the factors between them.

    The first coarsening is by `first_factor` where every count allows it,
    else by 3, else by 2 (the fewer cells a coarse level holds the better);
    later ones by 2, else by 3; while a level has more than `coarse_size`
    dofs and fewer than `max_levels` levels exist. Counts that no factor
    divides end the hierarchy there: that level is factorized directly.

    Examples
    --------
    >>> grid_levels((336, 160, 160), 3)[1], grid_levels((324, 162, 162), 3)
    ([4, 2, 2], ([(324, 162, 162), (108, 54, 54), (54, 27, 27), (18, 9, 9)], [3, 2, 3]))
    >>> grid_levels((101, 51, 51), 3)                  # no factor divides 101: one level
    ([(101, 51, 51)], [])
    """
    shapes, factors = [tuple(int(n) for n in shape)], []
    while (len(shapes) < max_levels
           and components * math.prod(n + 1 for n in shapes[-1]) > coarse_size):
        order = (first_factor, 3, 2) if not factors else (2, 3)
        f = next((f for f in order if all(n % f == 0 for n in shapes[-1])), None)
        if f is None:
            break
        shapes.append(tuple(n // f for n in shapes[-1]))
        factors.append(f)
    return shapes, factors


def coarsest(shape, components: int) -> tuple[int, str]:
    """The dofs and element counts of the smallest coarsest level any options give a grid
    (`grid_levels` without a size or level limit): what the memory check counts as
    factorized directly (`topopt.fem.budget.estimate_bytes`' `coarse_dofs`).

    Examples
    --------
    >>> coarsest((324, 162, 162), 3), coarsest((101, 51, 51), 3)
    ((36, '2 x 1 x 1'), (827424, '101 x 51 x 51'))
    """
    last = grid_levels(shape, components, coarse_size=0, max_levels=math.inf)[0][-1]
    return components * math.prod(n + 1 for n in last), " x ".join(map(str, last))


def _scaled_bound(A: CellOperator, dinv: np.ndarray, free: np.ndarray) -> float:
    """Gershgorin's bound ``max_i sum_j |A_ij| s_i s_j`` (``s = dinv^1/2``) on the free dofs."""
    s = np.sqrt(dinv)
    return max(1.0, float(np.max(s * A.abs_apply(s) * free, initial=0.0)))


class GridMultigrid:
    """The levels of a grid (set up once) and, per design, the preconditioned CG.

    Parameters
    ----------
    grid : Grid
    K0 : (n_loc, n_loc) array
        The element matrix at unit coefficient.
    components : int
    free : (ndof,) float array
        1 at free dofs, 0 at fixed ones.
    springs : (ndof,) array or None
        Grounded springs (a diagonal added to ``K``).
    options : dict
        `topopt.fem.solvers.krylov` options and `GRID_OPTIONS`.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.grid import Grid
    >>> from topopt.grid.element import heat_matrix
    >>> g = Grid((16, 8))
    >>> free = np.ones(g.n_nodes); free[:9] = 0            # the edge x = 0 held
    >>> mg = GridMultigrid(g, heat_matrix(g), 1, free, None, {"coarse_size": 20})
    >>> [lvl.shape for lvl in mg.grids]
    [(16, 8), (4, 2)]
    >>> F = mg.factor(np.ones(g.n_el))
    >>> x = F.solve(free * 1.0)                            # a unit heat source per node
    >>> F.last_iterations                                  # to rtol = 1e-8
    13
    """

    def __init__(self, grid: Grid, K0: np.ndarray, components: int, free: np.ndarray,
                 springs: np.ndarray | None, options: dict | None = None):
        self.options, self.grid_options = _split_options(options)
        self.grid, self.K0, self.components = grid, np.asarray(K0, dtype=float), components
        self.fine = GridOperator(grid, self.K0, components)
        self.grids, self.factors = [grid], []
        for f in grid_levels(grid.shape, components, self.options["coarse_size"],
                             self.options["max_levels"], self.grid_options["first_factor"])[1]:
            self.grids.append(self.grids[-1].coarsened(f))
            self.factors.append(f)
        self.free = [np.asarray(free, dtype=float)]
        self.springs = [None if springs is None or not np.any(springs)
                        else np.asarray(springs, dtype=float)]
        for g, f in zip(self.grids[1:], self.factors):
            shape = (components,) + g.nodes_shape
            fine = self.free[-1].reshape((components,) + self._finer(g, f).nodes_shape)
            self.free.append(np.ascontiguousarray(
                fine[(slice(None),) + (slice(None, None, f),) * g.dim]).reshape(-1))
            s = self.springs[-1]
            self.springs.append(None if s is None else restrict(
                s.reshape((components,) + self._finer(g, f).nodes_shape), f).ravel())
            assert self.free[-1].size == int(np.prod(shape))
        self.fixed = [np.flatnonzero(free == 0) for free in self.free]
        self.bound0 = max(1.0, element_lmax_bound(self.K0))
        self.log: list[int] = []
        self.warm: dict = {}
        #: seconds by phase: fine_operator, coarse_operators, transfer, coarse_solve, setup
        self.timers: dict = defaultdict(float)

    def _finer(self, g: Grid, f: int) -> Grid:
        return self.grids[self.grids.index(g) - 1]

    def __repr__(self):
        return f"GridMultigrid({[g.shape for g in self.grids]}, coarse={self.grid_options['coarse']!r})"

    # ------------------------------------------------------------ per design
    def _cells(self, E: np.ndarray):
        """The coarse levels' cell matrices (Galerkin or rediscretized) of coefficients `E`."""
        out, coarse = [], self.grid_options["coarse"]
        for level, (g, f) in enumerate(zip(self.grids[1:], self.factors), start=1):
            finer = self.grids[level - 1]
            if coarse == "galerkin":
                out.append(cells_from_coefficients(finer, self.K0, E, f, self.components)
                           if level == 1 else cells_from_cells(finer, out[-1], self.components,
                                                               f))
            else:                       # the children's mean, the element matrix of the cell
                scale = (g.h / self.grid.h) ** (g.dim - 2)
                mean = _children(np.asarray(E, dtype=float), self.grid.shape,
                                 int(round(g.h / self.grid.h))).mean(axis=1)
                out.append(mean[:, None, None] * (scale * self.K0))
        return out

    def factor(self, E: np.ndarray, counts=None) -> IterativeFactor:
        """The preconditioned CG of ``K(E)`` (`topopt.fem.solvers.krylov.IterativeFactor`)."""
        t0 = time.perf_counter()
        E = np.asarray(E, dtype=float)
        degree, ratio = int(self.options["degree"]), float(self.options["eig_ratio"])
        cells, T = self._cells(E), self.timers
        ops, smoothers = [], []
        for level, g in enumerate(self.grids):
            free, springs = self.free[level], self.springs[level]
            if level == 0:
                A = self.fine
                ops.append(_Level(lambda x, A=A: A.apply(E, x), self.fixed[level], springs,
                                  T, "fine_operator"))
                d = A.diagonal(E)
            else:
                A = CellOperator(g, cells[level - 1], self.components)
                ops.append(_Level(lambda x, A=A: A.apply(None, x), self.fixed[level], springs,
                                  T, "coarse_operators"))
                d = A.diagonal(None)
            if springs is not None:
                d = d + springs
            dinv = np.divide(free, d, out=np.zeros_like(d), where=d > 0)
            if level == len(self.grids) - 1:
                break
            bound = self.bound0 if level == 0 else _scaled_bound(A, dinv, free) + (
                0.0 if springs is None else float(np.max(springs * dinv)))
            smoothers.append(_Chebyshev(ops[-1], degree if level == 0 else degree + 1, ratio,
                                        upper=bound, dinv=dinv))
        last = len(self.grids) - 1
        coarse = _Coarsest(self.grids[last], cells[-1] if last else
                           E[:, None, None] * self.K0, self.components, self.free[last],
                           self.springs[last], T)
        P, R = ([_Transfer(self.grids[k], self.grids[k + 1], f, self.components,
                           self.fixed[k], self.fixed[k + 1], transpose, T)
                 for k, f in enumerate(self.factors)] for transpose in (False, True))
        cycle = _VCycle(P, R, ops, smoothers, coarse, self.options["cycle"])
        T["setup"] += time.perf_counter() - t0
        return IterativeFactor(ops[0], cycle, self.options, counts, self.warm, self.log)
