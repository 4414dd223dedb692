"""The global reductions of `topopt.optimize.MMA`: one process, or many through MPI.

`MMA` works on a process's part of the design; its only global operations are
``sum`` and ``max`` of small vectors (the dual's value, gradient and Hessian,
the ``xtol`` test). A `Reduce` gives both with results identical on every
process to the bit, so that every rank takes the same Newton steps and the
same accept/reject decisions.
"""

from __future__ import annotations

import numpy as np

from .._comm import reduce_bcast

__all__ = ["SerialReduce", "CommReduce"]


class SerialReduce:
    """The global reductions of `MMA` on one process: the local values themselves.

    Examples
    --------
    >>> SerialReduce().sum(np.array([1.0, 2.0])), SerialReduce().max(np.array([3.0]))
    (array([1., 2.]), array([3.]))
    """

    def sum(self, local: np.ndarray) -> np.ndarray:
        """Entry-wise sum over the processes of the small vector `local`."""
        return np.array(local, dtype=float)

    def max(self, local: np.ndarray) -> np.ndarray:
        """Entry-wise maximum over the processes of the small vector `local`."""
        return np.array(local, dtype=float)


class CommReduce:
    """The global reductions of `MMA` over the ranks of an MPI communicator.

    Each reduction is `topopt._comm.reduce_bcast` (a ``Reduce`` to rank 0 then a
    ``Bcast``): every rank gets rank 0's bits, so the ranks' iterates never drift apart.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The ranks that share the design (``MPI.COMM_WORLD``).

    Examples
    --------
    >>> from mpi4py import MPI                                      # doctest: +SKIP
    >>> CommReduce(MPI.COMM_WORLD).sum(np.array([1.0]))              # doctest: +SKIP
    array([2.])                                                     # on 2 ranks
    """

    def __init__(self, comm):
        for name in ("Reduce", "Bcast", "size", "rank"):
            if not hasattr(comm, name):
                raise TypeError(f"comm must be an mpi4py communicator (MPI.COMM_WORLD), got "
                                f"{type(comm).__name__} without {name!r}")
        self.comm = comm

    def sum(self, local: np.ndarray) -> np.ndarray:
        """Entry-wise sum over the ranks of the small vector `local`, the same on every rank."""
        return reduce_bcast(self.comm, local, "sum")

    def max(self, local: np.ndarray) -> np.ndarray:
        """Entry-wise maximum over the ranks of `local`, the same on every rank."""
        return reduce_bcast(self.comm, local, "max")
