"""The ``"petsc"`` backend: the state solve on PETSc across MPI ranks (``topopt[mpi]``).
"""

from .layout import (element_blocks, partition, rank_payload)
from .mg import (hierarchy, rank_rows, COARSE_SIZE, SEMI_RATIO, MAX_LEVELS)
from .rank import (RankSolver, scatter_rows, gather_rows, SMOOTHER, MG_DEFAULTS)
from .backend import (PetscContext, PetscFactor, RTOL, MAXITER, comm, is_root, serve, stop,
                      run_on_root, rank_stats, petsc_options)

__all__ = ['element_blocks', 'partition', 'rank_payload', 'hierarchy', 'rank_rows', 'COARSE_SIZE',
           'SEMI_RATIO', 'MAX_LEVELS', 'RankSolver', 'scatter_rows', 'gather_rows', 'SMOOTHER',
           'MG_DEFAULTS', 'PetscContext', 'PetscFactor', 'RTOL', 'MAXITER', 'comm', 'is_root',
           'serve', 'stop', 'run_on_root', 'rank_stats', 'petsc_options']
