"""``mpirun`` for the MPI tests: one launcher, the environment every MPI test runs under.

A test module checks `HAVE_MPIRUN` (mpi4py importable and ``mpirun`` on the path) and
calls `mpirun(n, args)`; the run's failure fails the test with the ranks' output.
"""

import importlib.util
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAVE_MPIRUN = importlib.util.find_spec("mpi4py") is not None and shutil.which("mpirun") is not None


def mpirun(n: int, args: list, timeout: int = 900) -> subprocess.CompletedProcess:
    """``mpirun -n n --oversubscribe python args`` from the checkout; asserts it succeeded.

    One thread per rank (BLAS, OpenMP), waiting ranks yield their core, root allowed.
    """
    env = dict(os.environ, PYTHONPATH=ROOT, MPLBACKEND="Agg", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1",
               OMPI_MCA_mpi_yield_when_idle="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run(["mpirun", "-n", str(n), "--oversubscribe", sys.executable, *args],
                          capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc
