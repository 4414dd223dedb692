"""top88's density filter on a grid split across MPI ranks (`topopt.grid.slabs`).

Each rank correlates its slab of the design with the whole grid's
`density_kernel` after borrowing ``m`` element planes from each neighbour
(``m`` the kernel's half-width, ``ceil(rmin / h) - 1``; zeros past the
grid's ends, as `GridDensityFilter`'s ``mode="constant"``), so ``W x`` and
the row sums ``Hs = W 1`` are the serial filter's, slab by slab. The kernel
is symmetric, so ``W^T = W`` and the adjoint ``F^T y = W (y / Hs)`` is the
same halo exchange and correlation: two messages of ``m`` planes per
application.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_positive
from .element import heat_matrix, mass_matrix
from .filters import (GridDensityFilter, GridHelmholtzFilter, _by_parts, _GridFilter,
                      _warn_grid_radius, density_kernel)
from .slab_system import SlabSystem
from .slabs import Slabs

__all__ = ["SlabDensityFilter", "SlabHelmholtzFilter"]


class SlabDensityFilter(GridDensityFilter):
    """`GridDensityFilter` of the whole grid, applied to this rank's slab of the design.

    Parameters
    ----------
    slabs : Slabs
        This rank's slab (each slab at least ``m`` element planes thick).
    rmin : float
        Filter radius (> 0), in length units.
    """

    def __init__(self, slabs: Slabs, rmin: float):
        _GridFilter.__init__(self, slabs.local)
        self.slabs = slabs
        self.rmin = check_positive("rmin", rmin, "filter radius, in the grid's length unit")
        _warn_grid_radius(slabs.grid, self.rmin, "rmin")
        self.kernel = density_kernel(slabs.grid, self.rmin)
        self.width = self.kernel.shape[0] // 2
        self.Hs = self._correlate(np.ones(self.n))

    def _correlate(self, v: np.ndarray) -> np.ndarray:
        from scipy import ndimage
        m = self.width
        padded = self.slabs.halo(np.ascontiguousarray(v).reshape(self.grid.shape), m)
        out = ndimage.correlate(padded, self.kernel, mode="constant", cval=0.0)
        return np.ascontiguousarray(out[m:out.shape[0] - m]).ravel()


class SlabHelmholtzFilter(_GridFilter):
    """`GridHelmholtzFilter` of the whole grid on this rank's slab, ``Kf`` solved by CG.

    Parameters
    ----------
    slabs : Slabs
        This rank's slab.
    r : float
        Length scale, > 0 (`from_rmin` takes the density filter's radius).
    solver_options : dict, optional
        Of the split CG (`SlabSystem`); ``rtol`` 1e-12 unless given.
    """

    helmholtz_radius = GridHelmholtzFilter.helmholtz_radius

    def __init__(self, slabs: Slabs, r: float, solver_options: dict | None = None):
        super().__init__(slabs.local)
        self.slabs = slabs
        self.r = check_positive("r", r, "Helmholtz filter length scale")
        _warn_grid_radius(slabs.grid, 2.0 * np.sqrt(3.0) * self.r,
                          f"2 sqrt(3) r (r = {self.r:g})")
        Kf = self.r ** 2 * heat_matrix(self.grid) + mass_matrix(self.grid)
        self.system = SlabSystem(slabs, Kf, 1, (), {"rtol": 1e-12, **(solver_options or {})})
        self._factor = self.system.factorize(np.ones(self.n))

    @classmethod
    def from_rmin(cls, slabs: Slabs, rmin: float, solver_options: dict | None = None):
        """The filter of ``r = helmholtz_radius(rmin)`` (Lazarov & Sigmund 2011)."""
        return cls(slabs, GridHelmholtzFilter.helmholtz_radius(rmin), solver_options)

    def _solve(self, x: np.ndarray, weight: float) -> np.ndarray:
        """``weight T^T Kf^-1 T x`` (T: volume / 2^dim of each element to each corner)."""
        g = self.grid
        xe = x.reshape(g.shape) * (g.volume / 2 ** g.dim)
        b = np.zeros(g.nodes_shape)
        for q in range(2 ** g.dim):
            b[g.corner_slice(q)] += xe                     # additive at the shared planes
        u = self.system.free_solve(self._factor, b.ravel()).reshape(g.nodes_shape)
        out = np.zeros(g.shape)
        for q in range(2 ** g.dim):
            out += u[g.corner_slice(q)]
        return (out * weight).ravel()

    def _forward(self, x):
        # F x = D^-1 T^T Kf^-1 T x, D = volume * I
        return _by_parts(lambda v: self._solve(v, 1.0 / 2 ** self.grid.dim), x)

    def _transpose(self, y):
        # F^T y = T^T Kf^-1 T D^-1 y
        g = self.grid
        return _by_parts(lambda v: self._solve(v / g.volume, g.volume / 2 ** g.dim), y)
