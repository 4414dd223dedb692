"""The ``"petsc"`` backend: the state solve on PETSc across MPI ranks (``topopt[mpi]``).

Modules: `layout` (which rank owns which elements and rows), `mg` (the
lattice hierarchy of ``pc="mg"``), `rank` (one rank's matrix and KSP),
`backend` (rank 0's side: `PetscContext`, `serve`, `stop`), `filter` (a PDE
filter on the ranks). ``pc="auto"`` is `topopt.fem.solvers.auto.auto_pc`.
petsc4py and mpi4py load only when a system is built.
"""

from .layout import (element_blocks, partition, rank_payload)
from .mg import (hierarchy, rank_rows, COARSE_SIZE, SEMI_RATIO, MAX_LEVELS)
from .rank import (RankSolver, scatter_rows, gather_rows, SMOOTHER, MG_DEFAULTS)
from .backend import (PetscContext, PetscFactor, RTOL, MAXITER, comm, is_root, serve, stop,
                      run_on_root, rank_stats, petsc_options)
from .filter import filter_solver, lattice_filter_system

__all__ = ['element_blocks', 'partition', 'rank_payload', 'hierarchy', 'rank_rows', 'COARSE_SIZE',
           'SEMI_RATIO', 'MAX_LEVELS', 'RankSolver', 'scatter_rows', 'gather_rows', 'SMOOTHER',
           'MG_DEFAULTS', 'PetscContext', 'PetscFactor', 'RTOL', 'MAXITER', 'comm', 'is_root',
           'serve', 'stop', 'run_on_root', 'rank_stats', 'petsc_options', 'filter_solver',
           'lattice_filter_system']
