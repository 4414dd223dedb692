"""Finite-element layer on scikit-fem: meshes, element matrices, the design-dependent solve.

Modules, each importing only those above it: `errors`, `solvers/` (the
backend table, ``auto`` with every threshold, direct factorizations, the one
CG loop in `solvers.krylov`, multigrid, AMG, reanalysis), `petsc/` (the
``"petsc"`` backend across MPI ranks), `supports` (rigid-body modes),
`singular` (the singularity checks of a solve), `adjoint` (the
differentiable `solve`, `matvec`, `products`), `kernels` (gather and
scatter of element vectors), `system` (`LinearSystem`),
`models`, `modal` (mass matrices, eigenvalues), `harmonic` (forced
vibration: the dynamic stiffness), `waves` (time-harmonic wave models),
`nonlinear` (`solve_nonlinear`: Newton, implicit adjoint),
`mesh`, `meshfile` (`read_mesh`: gmsh and meshio files), `shapes` (L-shape,
plate with a hole), `refine` (nested grids), `budget` (memory estimates).
"""

from .solvers.auto import AUTO_MIN_DOFS, ITERATIVE_MIN_DOFS, auto_solver, describe
from .errors import ConvergenceError, SingularSystemError
from .waves import WaveModel, graded_axis
from .mesh import DEGENERATE_TOL, box, check_mesh, element_centroids, element_volumes, rectangle
from .models import Model, elasticity, heat
from .meshfile import read_mesh
from .modal import ModalSystem, eigenmodes, eigenvalues, element_mass, point_mass
from .solvers.reanalysis import (Reanalysis, ReanalysisFactor, direct_options,
                                 reanalysis_policy)
from .refine import nested_elements
from .shapes import l_shape, plate_with_hole
from .supports import Unrestrained, rigid_body_modes, unrestrained_modes
from .solvers.table import BACKENDS, ITERATIVE, Backend, available_solvers
from .kernels import ElementKernels
from .system import RAYLEIGH_TOL, LinearSystem
from .adjoint import matvec, products, solve
from .harmonic import HarmonicSystem

__all__ = ["WaveModel", "graded_axis", "rectangle", "box", "check_mesh", "DEGENERATE_TOL",
           "element_centroids",
           "element_volumes", "nested_elements", "Model", "elasticity", "heat", "LinearSystem",
           "solve", "matvec", "products", "RAYLEIGH_TOL", "SingularSystemError",
           "ConvergenceError", "available_solvers", "Backend", "BACKENDS", "ITERATIVE",
           "Unrestrained", "rigid_body_modes", "unrestrained_modes",
           "ModalSystem", "eigenmodes", "eigenvalues", "element_mass", "point_mass",
           "l_shape", "plate_with_hole", "ITERATIVE_MIN_DOFS", "auto_solver", "describe",
           "AUTO_MIN_DOFS", "Reanalysis", "ReanalysisFactor", "direct_options",
           "reanalysis_policy", "ElementKernels", "read_mesh",
           "HarmonicSystem"]
from .transient import TransientSystem, temperatures, transient, transient_vjp

__all__ += ["TransientSystem", "transient", "transient_vjp", "temperatures"]
from .buckling import BucklingSystem, buckling_factors  # noqa: E402
from .buckling_modes import buckling_modes  # noqa: E402

__all__ += ["BucklingSystem", "buckling_factors", "buckling_modes"]
from .nonlinear import NewtonError, solve_nonlinear  # noqa: E402

__all__ += ["solve_nonlinear", "NewtonError"]

from .._keywords import check_keywords_of as _check_keywords_of  # noqa: E402

_check_keywords_of(globals(), __all__)   # a misspelled keyword names the closest one

