"""One reduction over MPI ranks that gives every rank the same bits: ``Reduce`` then ``Bcast``.

An ``Allreduce`` may round differently on different ranks (the MPI standard allows
it); rank 0's result broadcast keeps CG's iteration counts and MMA's steps identical
on every rank. Used by `topopt.optimize.CommReduce` and `topopt.grid.slabs.Slabs`;
mpi4py is imported only when a communicator is at hand (MPI is initialized already).
"""

from __future__ import annotations

import numpy as np


def reduce_bcast(comm, local, op: str = "sum") -> np.ndarray:
    """Entry-wise ``"sum"`` or ``"max"`` of `local` over the ranks of `comm`, on every rank."""
    from mpi4py import MPI
    send = np.ascontiguousarray(local, dtype=float)
    out = np.empty_like(send)
    comm.Reduce(send, out, op={"sum": MPI.SUM, "max": MPI.MAX}[op], root=0)
    comm.Bcast(out, root=0)
    return out
