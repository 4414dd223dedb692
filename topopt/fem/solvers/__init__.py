"""The linear solver backends: one table, ``auto``, direct factorizations, CG, multigrid, AMG.

Modules, each importing only those above it: `csr` (the free-dof pattern),
`direct` (SuperLU, CHOLMOD, UMFPACK), `vectors` (fused vector updates, numba
where it runs), `smoothers`, `krylov` (the only CG
loop, with its stopping rules), `lattice`, `amg`, `multigrid`, `auto` (every
threshold of ``solver="auto"``, reanalysis ``"auto"`` and PETSc ``pc="auto"``),
`table` (the backend table), `reanalysis` (solves on an earlier factor).
"""

from .csr import build_pattern, compact_index, csr_from_parts, csr_structure, free_local
from .direct import (FAST_EXTRA, CholmodContext, CholmodFactor, SuperLUFactor, UmfpackFactor,
                     cvxopt_full_of, cvxopt_lower, cvxopt_lower_of, factorize_spd, has_module)
from .smoothers import element_lmax_bound, scaled_lmax_bound
from .krylov import (MAXITER, RTOL, EnergyNorm, IterativeFactor, ResidualNorm, cg_steps, pcg,
                     pcg_energy)
from .lattice import (axis_groups, cell_pattern, classify, coarse_indices, coarsen, interp_1d,
                      lattice)
from .amg import SmoothedAggregation
from .multigrid import GeometricMultigrid
from .auto import (AUTO_MIN_DOFS, ITERATIVE_MIN_DOFS, VOXEL_MIN_DOFS, auto_pc, auto_reanalysis,
                   auto_solver, auto_voxel, auto_path, describe)
from .table import BACKENDS, ITERATIVE, Backend, available_solvers, factorize, pick_solver
from .reanalysis import OPTIONS, Reanalysis, ReanalysisFactor, direct_options, reanalysis_policy

__all__ = ["csr_structure", "csr_from_parts", "compact_index", "build_pattern", "free_local",
           "SuperLUFactor", "CholmodContext", "CholmodFactor", "UmfpackFactor", "has_module",
           "cvxopt_lower", "factorize_spd", "FAST_EXTRA", "cvxopt_lower_of", "cvxopt_full_of",
           "scaled_lmax_bound", "element_lmax_bound",
           "RTOL", "MAXITER", "pcg", "pcg_energy", "cg_steps", "ResidualNorm", "EnergyNorm",
           "IterativeFactor",
           "axis_groups", "lattice", "coarse_indices", "interp_1d", "coarsen", "classify",
           "cell_pattern", "SmoothedAggregation", "GeometricMultigrid",
           "ITERATIVE_MIN_DOFS", "AUTO_MIN_DOFS", "VOXEL_MIN_DOFS", "auto_voxel", "auto_solver",
           "auto_reanalysis", "auto_pc", "auto_path",
           "describe", "Backend", "BACKENDS", "ITERATIVE", "available_solvers", "pick_solver",
           "factorize", "OPTIONS", "Reanalysis", "ReanalysisFactor", "direct_options",
           "reanalysis_policy"]
