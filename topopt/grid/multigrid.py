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

``precision="mixed"`` runs the preconditioner in float32 (`_Single`): the
level vectors, the smoothers and their ``dinv``, the transfers, the fine
products inside the smoothers (a float32 copy of ``K0`` and of each
design's ``E``) and the coarse cell matrices (half their memory); the
coarsest solve stays float64. CG, its residual, the fine product of its
iterations and the solution stay float64, so the solution meets the same
``rtol``: a preconditioner need only be close to ``K^-1``, and float32
rounding (1e-7 relative) is far below the V-cycle's own error (mixed-
precision multigrid-preconditioned CG: Goddeke, Strzodka & Turek, Int. J.
Parallel Emerg. Distrib. Syst. 22 (2007) 221-256; TOP3D_XL, Wang et al.
2025, runs its V-cycle in float32 as well). Measured on the 3-D cantilever
(``scripts/benchmarks/benchmark_precision.py``, rtol 1e-8, four designs of an MMA run):
the same CG iterations as double at every solve, compliance equal to 5e-14
and sensitivities to 4e-11 (of the largest); a cold solve 1.19 times faster
at 80 x 40 x 40 (two levels) and 1.41 at 128 x 64 x 64, whose coarse cells
take 24 MB instead of 42. With equal iteration counts the plain CG
recurrence (Fletcher-Reeves ``beta``) was kept: a flexible one (Polak-Ribiere,
for preconditioners that vary between iterations) was not needed.
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

#: Options of the grid solver beside those of `topopt.fem.solvers.krylov`:
#: ``coarse`` ("galerkin" or "rediscretized" coarse levels), ``first_factor`` (2 or 4,
#: the first coarsening per axis), ``precision`` ("double", or "mixed": the V-cycle in
#: float32 inside float64 CG, see the module's text).
GRID_OPTIONS = {"coarse": "galerkin", "first_factor": 4, "precision": "double"}


def _split_options(options: dict | None) -> tuple[dict, dict]:
    """``(krylov options with defaults, grid options with defaults)``, each checked."""
    options = dict(options or {})
    grid = {k: options.pop(k) for k in list(options) if k in GRID_OPTIONS}
    check_keywords("solver_options", options, list(_options(None)) + list(GRID_OPTIONS))
    out = dict(GRID_OPTIONS, **grid)
    check_choice("coarse", out["coarse"], ("galerkin", "rediscretized"))
    check_choice("precision", out["precision"], ("double", "mixed"))
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
        """The solution in the dtype of `b`, solved in float64."""
        t0 = time.perf_counter()
        x = np.zeros(self.n, dtype=b.dtype)
        x[self.free] = self.solver(np.asarray(b[self.free], dtype=float))
        self.timers["coarse_solve"] += time.perf_counter() - t0
        return x


class _Single:
    """The V-cycle `cycle` in float32 for float64 residuals: ``M r = C(s r) / s``.

    ``s``, a power of 2, brings ``max |r|`` into [1/2, 1) (exact: it only
    shifts exponents), so neither a small residual near convergence nor a
    large load leaves float32's range; the cast in and out are the only
    float64 passes.
    """

    def __init__(self, cycle, largest=float):
        self.cycle, self.largest = cycle, largest    # a distributed run's global max

    def __call__(self, r: np.ndarray) -> np.ndarray:
        s = 2.0 ** -int(np.frexp(self.largest(np.max(np.abs(r), initial=0.0)))[1])
        z = self.cycle(np.multiply(r, s, out=np.empty(r.shape, np.float32),
                                   casting="same_kind"))
        return np.multiply(z, 1.0 / s, dtype=np.float64)


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
    >>> mixed = GridMultigrid(g, heat_matrix(g), 1, free, None,
    ...                       {"coarse_size": 20, "precision": "mixed"}).factor(np.ones(g.n_el))
    >>> bool(np.allclose(mixed.solve(free * 1.0), x, rtol=1e-10)), mixed.last_iterations
    (True, 13)
    """

    def __init__(self, grid: Grid, K0: np.ndarray, components: int, free: np.ndarray,
                 springs: np.ndarray | None, options: dict | None = None, shape=None):
        self.options, self.grid_options = _split_options(options)
        self.grid, self.K0, self.components = grid, np.asarray(K0, dtype=float), components
        self.fine = GridOperator(grid, self.K0, components)
        self.grids, self.factors = [grid], []
        for f in grid_levels(grid.shape if shape is None else shape, components,
                             self.options["coarse_size"], self.options["max_levels"],
                             self.grid_options["first_factor"])[1]:
            self.grids.append(self.grids[-1].coarsened(f))
            self.factors.append(f)
        self.free = [np.asarray(free, dtype=np.float32)]       # masks, 0/1: exact in float32
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
        # the cycle's dtype; one level is a direct solve, kept float64 (exact preconditioner)
        self.dtype = (np.float32 if self.grid_options["precision"] == "mixed"
                      and len(self.grids) > 1 else float)
        self.log: list[int] = []
        self.warm: dict = {}
        #: seconds by phase: fine_operator, coarse_operators, transfer, coarse_solve, setup
        self.timers: dict = defaultdict(float)

    def _finer(self, g: Grid, f: int) -> Grid:
        return self.grids[self.grids.index(g) - 1]

    def __repr__(self):
        return (f"GridMultigrid({[g.shape for g in self.grids]}, "
                f"coarse={self.grid_options['coarse']!r}, "
                f"precision={self.grid_options['precision']!r})")

    # ------------------------------------------------------------ per design
    def _cells(self, E: np.ndarray):
        """The coarse levels' cell matrices (Galerkin or rediscretized) of coefficients `E`.

        With ``precision="mixed"`` each level but the coarsest (factorized in
        float64) is stored float32 once the next is formed from it.
        """
        out, coarse = [], self.grid_options["coarse"]
        for level, (g, f) in enumerate(zip(self.grids[1:], self.factors), start=1):
            finer = self.grids[level - 1]
            if coarse == "galerkin":
                cells = (cells_from_coefficients(finer, self.K0, E, f, self.components)
                         if level == 1 else cells_from_cells(finer, out[-1], self.components,
                                                             f))
            else:                       # the children's mean, the element matrix of the cell
                scale = (g.h / self.grid.h) ** (g.dim - 2)
                mean = _children(np.asarray(E, dtype=float), self.grid.shape,
                                 int(round(g.h / self.grid.h))).mean(axis=1)
                cells = mean[:, None, None] * (scale * self.K0)
            out.append(cells.astype(self.dtype, copy=False) if level < len(self.factors)
                       else cells)
        return out

    def _level(self, level: int, E: np.ndarray, Ec: np.ndarray, cells: list):
        """Level `level`'s operator in the cycle's dtype, its ``A`` and float64 ``dinv``."""
        free, springs = self.free[level], self.springs[level]
        s = None if springs is None else springs.astype(self.dtype, copy=False)
        if level == 0:
            A = self.fine                       # float32 Ec and x: float32 products
            op = self._operator(0, lambda x: A.apply(Ec, x), s)
            d = self._diagonal(A, E)
        else:
            A = CellOperator(self.grids[level], cells[level - 1], self.components)
            op = self._operator(level, lambda x: A.apply(None, x), s)
            d = self._diagonal(A, None)
        if springs is not None:
            d = d + springs
        return op, A, np.divide(free, d, out=np.zeros_like(d), where=d > 0)

    def _diagonal(self, A, E) -> np.ndarray:
        return A.diagonal(E)

    def factor(self, E: np.ndarray, counts=None) -> IterativeFactor:
        """The preconditioned CG of ``K(E)`` (`topopt.fem.solvers.krylov.IterativeFactor`)."""
        t0 = time.perf_counter()
        E = np.asarray(E, dtype=float)
        Ec = E.astype(self.dtype, copy=False)             # the cycle's copy (float32: mixed)
        degree, ratio = int(self.options["degree"]), float(self.options["eig_ratio"])
        cells, T = self._cells(E), self.timers
        ops, smoothers = [], []
        for level in range(len(self.grids)):
            op, A, dinv = self._level(level, E, Ec, cells)
            ops.append(op)
            if level == len(self.grids) - 1:
                break
            springs = self.springs[level]
            bound = self.bound0 if level == 0 else self._bound(A, dinv, level) + (
                0.0 if springs is None else float(np.max(springs * dinv)))
            smoothers.append(_Chebyshev(op, degree if level == 0 else degree + 1, ratio,
                                    upper=bound, dinv=dinv.astype(self.dtype, copy=False)))
        last = len(self.grids) - 1
        coarse = self._coarsest(cells[-1] if last else E[:, None, None] * self.K0)
        P, R = ([self._transfer(k, f, transpose) for k, f in enumerate(self.factors)]
                for transpose in (False, True))
        cycle = _VCycle(P, R, ops, smoothers, coarse, self.options["cycle"])
        outer = ops[0] if self.dtype == float else self._operator(
            0, lambda x: self.fine.apply(E, x), self.springs[0])
        T["setup"] += time.perf_counter() - t0
        return IterativeFactor(outer, cycle if self.dtype == float else self._single(cycle),
                               self.options, counts, self.warm, self.log)

    # -- the pieces a distributed grid replaces (`topopt.grid.slab_system`) ----------------
    def _operator(self, level: int, apply, springs) -> _Level:
        return _Level(apply, self.fixed[level], springs, self.timers,
                      "fine_operator" if level == 0 else "coarse_operators")

    def _bound(self, A: CellOperator, dinv: np.ndarray, level: int) -> float:
        return _scaled_bound(A, dinv, self.free[level])

    def _coarsest(self, cells: np.ndarray) -> _Coarsest:
        last = len(self.grids) - 1
        return _Coarsest(self.grids[last], cells, self.components, self.free[last],
                         self.springs[last], self.timers)

    def _transfer(self, k: int, factor: int, transpose: bool) -> _Transfer:
        return _Transfer(self.grids[k], self.grids[k + 1], factor, self.components,
                         self.fixed[k], self.fixed[k + 1], transpose, self.timers)

    def _single(self, cycle) -> _Single:
        return _Single(cycle)
