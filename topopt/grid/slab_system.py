"""The voxel path's system split across MPI ranks: each rank its slab of x-planes.

`SlabSystem` is `GridSystem` on one rank's `topopt.grid.slabs.Slabs`: the
fine product is the same element-by-element kernel on the slab's elements
followed by `Slabs.sum_shared` (one node plane to each neighbour and back),
the multigrid levels split at the same planes (`SlabMultigrid`: restriction
sums the shared coarse planes, prolongation is local, the Galerkin cells are
the slab's own), the coarsest level is gathered and factorized on every rank
(a redundant direct solve of a few thousand dofs), and CG's inner products
are global (``global_dot``, each node counted once). The solve's rules of
`topopt.fem.adjoint` hold unchanged with one convention:

* **states are consistent** (`topopt.grid.slabs`): a shared plane holds the
  same value on both ranks -- solutions, tangents of solutions;
* **right-hand sides are additive**: loads, ``matvec``'s products and the
  cotangents of states hold each rank's share of a shared plane (a load on
  a shared plane sits on one of the two ranks, `Slabs.additive`).

So ``compliance = f . u`` is a local dot summed over the ranks, and its
cotangent ``f`` goes into the adjoint solve as it is.
"""

from __future__ import annotations

import numpy as np

from .multigrid import GridMultigrid, _Coarsest, _Level, _Single, _Transfer
from .slabs import Slabs
from .system import GridSystem

__all__ = ["SlabSystem", "SlabMultigrid", "slab_align"]


class _SlabLevel(_Level):
    """A level's operator with its product summed over the shared planes."""

    def __init__(self, slabs: Slabs, components: int, *args):
        super().__init__(*args)
        self.slabs, self.components = slabs, components

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        y = super().__matmul__(x)            # fixed rows set: identical on both ranks
        return self.slabs.sum_shared(y, self.components)

    def global_dot(self, x: np.ndarray, y: np.ndarray) -> float:
        return self.slabs.dot(x, y, self.components)


class _SlabTransfer(_Transfer):
    """Prolongation (local: a coarse cell never straddles two ranks) or restriction
    (of the consistent fine vector's owned planes, then summed over the shared ones)."""

    def __init__(self, slabs_f: Slabs, slabs_c: Slabs, *args):
        super().__init__(*args)
        self.slabs_f, self.slabs_c = slabs_f, slabs_c

    def _apply(self, v: np.ndarray) -> np.ndarray:
        c = self.shapes[0][0]
        if not self.transpose:
            return super()._apply(v)
        out = super()._apply(self.slabs_f.additive(v, c))
        return self.slabs_c.sum_shared(out, c)


class _SlabCoarsest:
    """The coarsest level of the whole grid, factorized on every rank."""

    def __init__(self, slabs: Slabs, cells: np.ndarray, components: int, free: np.ndarray,
                 timers: dict):
        self.slabs, self.components = slabs, components
        whole = slabs.gather(np.asarray(free, dtype=float), components)
        self.solve = _Coarsest(slabs.grid, slabs.gather_cells(cells), components, whole,
                               None, timers)

    def __call__(self, b: np.ndarray) -> np.ndarray:
        x = self.solve(self.slabs.gather(b, self.components))
        return self.slabs.take(x, self.components)


class SlabMultigrid(GridMultigrid):
    """`GridMultigrid` on one rank's slab; the levels are the whole grid's (`grid_levels`).

    Parameters
    ----------
    slabs : Slabs
        This rank's slab (aligned to the levels' coarsening: `slab_system`).
    K0, components, free, options
        As `GridMultigrid` (`free`: this slab's nodes).
    """

    def __init__(self, slabs: Slabs, K0: np.ndarray, components: int, free: np.ndarray,
                 options: dict | None = None):
        super().__init__(slabs.local, K0, components, free, None, options,
                         shape=slabs.grid.shape)
        self.slabs = [slabs]
        for f in self.factors:
            self.slabs.append(self.slabs[-1].coarsened(f))

    def _operator(self, level: int, apply, springs) -> _Level:
        return _SlabLevel(self.slabs[level], self.components, apply, self.fixed[level],
                          springs, self.timers,
                          "fine_operator" if level == 0 else "coarse_operators")

    def _diagonal(self, A, E) -> np.ndarray:
        level = next(k for k, g in enumerate(self.grids) if g is A.grid)
        return self.slabs[level].sum_shared(A.diagonal(E), self.components)

    def _bound(self, A, dinv: np.ndarray, level: int) -> float:
        s = np.sqrt(dinv)
        y = self.slabs[level].sum_shared(A.abs_apply(s), self.components)
        return max(1.0, self.slabs[level].max(float(np.max(s * y * self.free[level],
                                                              initial=0.0))))

    def _coarsest(self, cells: np.ndarray) -> _SlabCoarsest:
        last = len(self.grids) - 1
        return _SlabCoarsest(self.slabs[last], cells, self.components, self.free[last],
                             self.timers)

    def _transfer(self, k: int, factor: int, transpose: bool) -> _Transfer:
        return _SlabTransfer(self.slabs[k], self.slabs[k + 1], self.grids[k], self.grids[k + 1],
                             factor, self.components, self.fixed[k], self.fixed[k + 1],
                             transpose, self.timers)

    def _single(self, cycle) -> _Single:
        return _Single(cycle, self.slabs[0].max)


class SlabSystem(GridSystem):
    """`GridSystem` on one rank's slab of the whole grid (see the module's text).

    Parameters
    ----------
    slabs : Slabs
        This rank's slab; its ``align`` must be a multiple of the multigrid's
        coarsening (`slab_align`).
    K0, components
        As `GridSystem`.
    fixed : int array
        The fixed dofs of this slab's nodes (local numbering).
    solver_options : dict, optional
        As `GridSystem` (``precision``, ``rtol``, ``warm_start``, ...).
    """

    def __init__(self, slabs: Slabs, K0, components: int, fixed=(),
                 solver_options: dict | None = None):
        self.slabs = slabs
        super().__init__(slabs.local, K0, components, fixed, None, solver_options)

    def _multigrid(self, free: np.ndarray) -> SlabMultigrid:
        return SlabMultigrid(self.slabs, self.operator.K0, self.components, free,
                             self.solver_options)

    def free_solve(self, F, b, adjoint: bool = False) -> np.ndarray:
        """Solve with the additive right-hand side `b` (made consistent first)."""
        b = np.asarray(b, dtype=float)
        if b.ndim != 1:
            raise ValueError("a distributed grid system solves one right-hand side at a time; "
                             f"got shape {b.shape}")
        return super().free_solve(F, self.slabs.sum_shared(b.copy(), self.components), adjoint)

    def global_sum(self, local) -> np.ndarray:
        """Entry-wise sum over the ranks (the self-adjoint test of `topopt.fem.adjoint`)."""
        return self.slabs.reduce(local)

    def global_max(self, local) -> np.ndarray:
        """Entry-wise maximum over the ranks."""
        return self.slabs.reduce(local, "max")


def slab_align(shape, components: int, options: dict | None = None) -> int:
    """The product of the multigrid's coarsening factors of a grid of `shape`: slab
    boundaries at its multiples keep every level's cells whole on one rank."""
    from .multigrid import _split_options, grid_levels
    opts, grid_opts = _split_options(options)
    factors = grid_levels(tuple(shape), components, opts["coarse_size"], opts["max_levels"],
                          grid_opts["first_factor"])[1]
    return int(np.prod(factors, dtype=np.int64))
