"""The linear solver backends: one table, `auto`, direct factorizations, CG, multigrid, AMG, reanalysis.
"""

from .csr import (csr_structure, csr_from_parts, compact_index, build_pattern, free_local)
from .direct import (SuperLUFactor, CholmodContext, CholmodFactor, UmfpackFactor, has_module,
                     cvxopt_lower, factorize_spd, FAST_EXTRA, cvxopt_lower_of, cvxopt_full_of)
from .smoothers import (scaled_lmax_bound, element_lmax_bound)
from .krylov import (RTOL, MAXITER, pcg, pcg_energy, cg_steps, ResidualNorm, EnergyNorm,
                     IterativeFactor)
from .lattice import (axis_groups, lattice, coarse_indices, interp_1d, coarsen, classify,
                      cell_pattern)
from .amg import SmoothedAggregation
from .multigrid import GeometricMultigrid
from .auto import (ITERATIVE_MIN_DOFS, AUTO_MIN_DOFS, auto_solver, auto_reanalysis, auto_pc,
                   describe)
from .table import (Backend, BACKENDS, ITERATIVE, available_solvers, pick_solver, factorize)
from .reanalysis import (OPTIONS, Reanalysis, ReanalysisFactor, direct_options,
                         reanalysis_policy)

__all__ = ['csr_structure', 'csr_from_parts', 'compact_index', 'build_pattern', 'free_local',
           'SuperLUFactor', 'CholmodContext',
           'CholmodFactor', 'UmfpackFactor', 'has_module', 'cvxopt_lower', 'factorize_spd', 'cvxopt_lower_of', 'cvxopt_full_of',
           'FAST_EXTRA', 'scaled_lmax_bound', 'element_lmax_bound', 'RTOL', 'MAXITER', 'pcg',
           'pcg_energy', 'cg_steps', 'ResidualNorm', 'EnergyNorm', 'IterativeFactor', 'axis_groups', 'lattice', 'coarse_indices', 'interp_1d', 'coarsen',
           'classify', 'cell_pattern', 'SmoothedAggregation', 'GeometricMultigrid',
           'ITERATIVE_MIN_DOFS', 'auto_solver', 'auto_reanalysis', 'auto_pc', 'describe', 'Backend', 'BACKENDS', 'ITERATIVE',
           'available_solvers', 'pick_solver', 'factorize', 'OPTIONS', 'AUTO_MIN_DOFS',
           'Reanalysis', 'ReanalysisFactor', 'direct_options', 'reanalysis_policy']
