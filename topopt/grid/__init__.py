"""Structured voxel grids: the matrix-free path for large 2-D and 3-D designs.

Modules, each importing only those above it: `grid` (`Grid`: numbering by
strides), `element` (the one element matrix ``K0``), `kernels` (its fused products compiled
with numba, when installed), `operator` (``K(E) u`` matrix-free in slabs,
cell operators), `transfer` (multilinear interpolation
by slices), `galerkin` (coarse cells from the fine coefficients),
`multigrid` (`GridMultigrid`), `system` (`GridSystem`, the system
`topopt.fem.solve` takes), `model` (`GridModel`: supports and loads),
`filters` (density and Helmholtz filters on the grid); across MPI ranks:
`slabs` (`Slabs`: a rank's slab of x-planes, its exchanges and reductions),
`slab_system` (`SlabSystem`, `SlabMultigrid`), `slab_filter` (`SlabDensityFilter`, `SlabHelmholtzFilter`).
"""

from .grid import Grid
from .element import elasticity_matrix, heat_matrix, mass_matrix, shape_gradients, shape_values
from .operator import BLOCK_ELEMENTS, CellOperator, GridOperator
from .transfer import prolong, restrict
from .galerkin import cells_from_cells, cells_from_coefficients, child_interpolations
from .multigrid import GRID_OPTIONS, GridMultigrid, coarsest, grid_levels
from .system import GridSystem
from .model import GridModel, grid_elasticity, grid_heat
from .filters import GridDensityFilter, GridHelmholtzFilter, density_kernel
from .slabs import Slabs, slab_bounds
from .slab_system import SlabMultigrid, SlabSystem, slab_align
from .slab_filter import SlabDensityFilter, SlabHelmholtzFilter

__all__ = ["Grid", "elasticity_matrix", "heat_matrix", "mass_matrix", "shape_gradients", "shape_values",
           "BLOCK_ELEMENTS", "CellOperator", "GridOperator", "prolong", "restrict",
           "cells_from_cells", "cells_from_coefficients", "child_interpolations",
           "GRID_OPTIONS", "GridMultigrid", "grid_levels", "coarsest", "GridSystem", "GridModel", "grid_elasticity",
           "grid_heat", "GridDensityFilter", "GridHelmholtzFilter", "density_kernel",
           "Slabs", "slab_bounds", "SlabMultigrid", "SlabSystem", "slab_align", "SlabDensityFilter",
           "SlabHelmholtzFilter"]

from .._keywords import check_keywords_of as _check_keywords_of  # noqa: E402

_check_keywords_of(globals(), __all__)   # a misspelled keyword names the closest one
