"""A grid split across MPI ranks in slabs of x-planes: ownership, ghost planes, reductions.

Rank ``r`` holds the elements ``e0 <= i < e1`` of the first axis (every y and
z) and the node planes ``e0 .. e1``: plane ``e1`` is shared with rank
``r + 1``, which owns it (the last rank owns its own ``e1``). The slab
boundaries are multiples of `align` (the product of the multigrid's
coarsening factors), so every multigrid level splits at the same planes and
a coarse cell never straddles two ranks. Nodal vectors come in two kinds:

* **consistent** (states, loads, CG's iterates): a shared plane holds the
  same value on both ranks. Linear combinations stay consistent.
* **additive** (element products before `sum_shared`, cotangents): a shared
  plane's value is the sum of the two ranks' entries.

`sum_shared` turns additive into consistent (one plane to each neighbour and
back), `additive` the other way (the ghost plane zeroed). `dot` of two
consistent vectors counts each node once. Every reduction is a ``Reduce``
then ``Bcast`` (`topopt.optimize.CommReduce`'s rule): all ranks get the same
bits, so CG's iteration counts and MMA's steps agree on every rank.
"""

from __future__ import annotations

import numpy as np

from .._comm import reduce_bcast
from .grid import Grid

__all__ = ["Slabs", "slab_bounds"]


def slab_bounds(nelx: int, size: int, align: int = 1) -> np.ndarray:
    """Element planes where the `size` slabs start and end: ``size + 1`` multiples of `align`.

    Examples
    --------
    >>> slab_bounds(48, 3, 4).tolist(), slab_bounds(10, 4).tolist()
    ([0, 16, 32, 48], [0, 3, 6, 8, 10])
    """
    if nelx % align:
        raise ValueError(f"align: {align} must divide the grid's {nelx} element planes")
    blocks = nelx // align
    if blocks < size:
        raise ValueError(f"the grid's {nelx} element planes make {blocks} slabs of {align} "
                         f"(the multigrid's coarsening), fewer than the {size} ranks: run "
                         f"on at most {blocks} ranks, or lengthen the grid's x axis")
    counts = np.full(size, blocks // size)
    counts[:blocks % size] += 1
    return align * np.concatenate([[0], np.cumsum(counts)])


class Slabs:
    """This rank's slab of `grid`: its local grid, neighbours and the exchanges.

    Parameters
    ----------
    grid : Grid
        The whole grid.
    comm : mpi4py.MPI.Comm
        The ranks sharing it.
    align : int
        Slab boundaries at multiples of it (`slab_bounds`).
    """

    def __init__(self, grid: Grid, comm, align: int = 1):
        from mpi4py import MPI
        self.grid, self.comm, self.MPI = grid, comm, MPI
        self.bounds = slab_bounds(grid.shape[0], comm.size, align)
        self.rank, self.size = comm.rank, comm.size
        self.e0, self.e1 = int(self.bounds[self.rank]), int(self.bounds[self.rank + 1])
        self.local = Grid((self.e1 - self.e0,) + grid.shape[1:], grid.h)
        self.left = self.rank - 1 if self.rank > 0 else MPI.PROC_NULL
        self.right = self.rank + 1 if self.rank < self.size - 1 else MPI.PROC_NULL
        self.last = self.rank == self.size - 1

    def __repr__(self):
        return f"Slabs(rank {self.rank} of {self.size}: element planes {self.e0}:{self.e1})"

    def coarsened(self, factor: int) -> "Slabs":
        """The same split of the grid coarsened by `factor`."""
        out = object.__new__(Slabs)
        out.__dict__.update(self.__dict__)
        out.grid, out.bounds = self.grid.coarsened(factor), self.bounds // factor
        out.e0, out.e1 = self.e0 // factor, self.e1 // factor
        out.local = self.local.coarsened(factor)
        return out

    # -------------------------------------------------------------- coordinates
    def where(self, predicate):
        """`predicate` of global coordinates as one of this slab's local coordinates."""
        shift = self.e0 * self.grid.h

        def local(x):
            return predicate(np.concatenate([x[:1] + shift, x[1:]]))
        return local

    def dofs_where(self, predicate, components: int) -> np.ndarray:
        """This slab's dofs (all `components` of each node) whose global coordinates satisfy
        `predicate` (a node predicate, `Grid.nodes_where`); empty where none do."""
        nodes = self.local.nodes_where(self.where(predicate))
        return (np.arange(components)[:, None] * self.local.n_nodes + nodes).ravel()

    def planes(self, v: np.ndarray, components: int) -> np.ndarray:
        """`v` as ``(components, local node planes, plane)`` (a view)."""
        return v.reshape(components, self.local.nodes_shape[0], -1)

    # -------------------------------------------------------------- exchanges
    def _swap(self, send: np.ndarray, dest: int, source: int) -> np.ndarray | None:
        buf = np.ascontiguousarray(send)
        recv = np.empty_like(buf)
        self.comm.Sendrecv(buf, dest=dest, recvbuf=recv, source=source)
        return None if source == self.MPI.PROC_NULL else recv

    def sum_shared(self, v: np.ndarray, components: int) -> np.ndarray:
        """Additive `v` made consistent, in place: each shared plane the sum of both ranks'."""
        p = self.planes(v, components)
        got = self._swap(p[:, -1], self.right, self.left)     # partial sums, to the owner
        if got is not None:
            p[:, 0] += got
        got = self._swap(p[:, 0], self.left, self.right)      # the owner's total, back
        if got is not None:
            p[:, -1] = got
        return v

    def additive(self, v: np.ndarray, components: int) -> np.ndarray:
        """Consistent `v` as additive: a copy with the ghost plane (not owned) zeroed."""
        if self.last:
            return v
        v = v.copy()
        self.planes(v, components)[:, -1] = 0.0
        return v

    def owned(self, v: np.ndarray, components: int) -> np.ndarray:
        """The owned node planes of `v`, ``(components, planes, plane)`` (a view)."""
        p = self.planes(v, components)
        return p if self.last else p[:, :-1]

    # -------------------------------------------------------------- reductions
    def reduce(self, local, op: str = "sum") -> np.ndarray:
        """Sum (or max) over the ranks, the same bits on every rank (a 1-D array)."""
        return reduce_bcast(self.comm, np.reshape(local, -1), op)

    def dot(self, x: np.ndarray, y: np.ndarray, components: int) -> float:
        """``x . y`` of consistent vectors, each node counted once, on every rank."""
        a, b = self.owned(x, components), self.owned(y, components)
        return float(self.reduce(np.einsum("ijk,ijk->", a, b))[0])

    def max(self, value: float) -> float:
        """The largest of the ranks' `value`."""
        return float(self.reduce(np.array([value]), "max")[0])

    def gather(self, v: np.ndarray, components: int) -> np.ndarray:
        """The whole grid's consistent vector from the ranks' `v`, on every rank."""
        own = np.ascontiguousarray(self.owned(v, components))
        plane = own.shape[2]
        counts = np.array(self.comm.allgather(own.size))
        out = np.empty(int(counts.sum()), dtype=own.dtype)
        self.comm.Allgatherv(own, [out, counts])
        parts = np.split(out, np.cumsum(counts)[:-1])
        return np.concatenate([p.reshape(components, -1, plane) for p in parts], axis=1).ravel()

    def take(self, full: np.ndarray, components: int) -> np.ndarray:
        """This slab's part of the whole grid's nodal vector `full`."""
        p = full.reshape(components, self.grid.nodes_shape[0], -1)
        return np.ascontiguousarray(p[:, self.e0:self.e1 + 1]).ravel()

    def gather_cells(self, cells: np.ndarray) -> np.ndarray:
        """The ranks' per-element (or per-cell) arrays in the whole grid's order, on every rank."""
        cells = np.ascontiguousarray(cells)
        counts = np.array(self.comm.allgather(cells.size))
        out = np.empty(int(counts.sum()), dtype=cells.dtype)
        self.comm.Allgatherv(cells, [out, counts])
        return out.reshape((-1,) + cells.shape[1:])

    def halo(self, field: np.ndarray, width: int) -> np.ndarray:
        """Element field ``(local nelx, ...)`` with `width` planes of each neighbour's on
        either side (zeros past the grid's ends): ``(local nelx + 2 width, ...)``."""
        if width == 0:
            return field
        if field.shape[0] < width:
            raise ValueError(f"a slab of {field.shape[0]} element planes cannot lend a halo "
                             f"of {width}: use fewer ranks or a smaller filter radius")
        out = np.zeros((field.shape[0] + 2 * width,) + field.shape[1:], dtype=field.dtype)
        out[width:-width] = field
        got = self._swap(field[:width], self.left, self.right)
        if got is not None:
            out[-width:] = got
        got = self._swap(field[-width:], self.right, self.left)
        if got is not None:
            out[:width] = got
        return out

    def fold_halo(self, padded: np.ndarray, width: int) -> np.ndarray:
        """The transpose of `halo`: the halo planes' values sent back and added to their owners."""
        if width == 0:
            return padded
        out = np.array(padded[width:-width])
        got = self._swap(padded[-width:], self.right, self.left)   # my right halo: right's first
        if got is not None:
            out[:width] += got
        got = self._swap(padded[:width], self.left, self.right)
        if got is not None:
            out[-width:] += got
        return out
