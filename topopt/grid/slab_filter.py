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
from .filters import GridDensityFilter, _GridFilter, _warn_grid_radius, density_kernel
from .slabs import Slabs

__all__ = ["SlabDensityFilter"]


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
