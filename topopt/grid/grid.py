"""A structured grid of equal square or cubic elements: numbering without index arrays.

Elements ``(i, j[, k])`` and nodes ``(i, j[, k])`` are numbered in C order
(x slowest, the last axis fastest): element ``e = (i * nely + j) * nelz + k``,
node ``n = (i * (nely + 1) + j) * (nelz + 1) + k``; a field with ``c``
components per node is component-major, dof ``component * n_nodes + n``.
So a nodal field is a C-ordered array of shape ``(c,) + nodes_shape`` and
the nodes of corner ``(a, b, c)`` of every element are the slice ``[:, a:a
+ nelx, b:b + nely, c:c + nelz]`` of it, in runs contiguous along the last
axis: the grid's operators gather and scatter element vectors by slices,
never by a stored connectivity.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..fem.budget import _bytes, _refuse
from .._validate import (check_callable, check_factor, check_grid_index, check_indices, check_int,
                         check_positive)

__all__ = ["Grid"]


class Grid:
    """``nelx x nely [x nelz]`` elements of side `h`, corner at the origin.

    Parameters
    ----------
    shape : tuple of 2 or 3 ints >= 1
        Elements per axis ``(nelx, nely[, nelz])``.
    h : float > 0
        Element side.

    Examples
    --------
    >>> from topopt.grid import Grid
    >>> g = Grid((4, 2, 2))
    >>> g.n_el, g.n_nodes, g.nodes_shape
    (16, 45, (5, 3, 3))
    >>> g.corners[:3].tolist()       # local node q = binary (a, b, c), x bit first
    [[0, 0, 0], [0, 0, 1], [0, 1, 0]]
    >>> g.element_index((3, 1, 1)), g.node_index((4, 2, 2))
    (15, 44)
    """

    def __init__(self, shape, h: float = 1.0):
        shape = tuple(shape) if np.ndim(shape) == 1 else shape
        if not isinstance(shape, tuple) or len(shape) not in (2, 3) or not all(
                isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1
                for n in shape):
            raise ValueError(f"shape must be 2 or 3 positive integers (elements per axis), "
                             f"got {shape!r}")
        self.shape = tuple(int(n) for n in shape)
        self.h = check_positive("h", h, "element side")
        self.dim = len(self.shape)
        self.nodes_shape = tuple(n + 1 for n in self.shape)
        self.n_el = math.prod(self.shape)                  # Python ints: no overflow
        self.n_nodes = math.prod(self.nodes_shape)
        # one float64 per node and per element: the least any use of the grid allocates
        _refuse(8.0 * (self.n_el + self.n_nodes), f"Grid({self.shape})",
                f"one value per node and per element alone needs "
                f"{_bytes(8.0 * (self.n_el + self.n_nodes))}", "use fewer elements", None)
        #: (2**dim, dim) corner offsets of the local nodes, in local order.
        self.corners = np.array(list(itertools.product((0, 1), repeat=self.dim)))

    def __repr__(self):
        return f"Grid({self.shape}, h={self.h:g})"

    def __eq__(self, other):
        return isinstance(other, Grid) and other.shape == self.shape and other.h == self.h

    __hash__ = None

    # ------------------------------------------------------------ numbering
    def element_index(self, ijk) -> int | np.ndarray:
        """Element number(s) of the element grid index `ijk` (C order)."""
        out = np.ravel_multi_index(check_grid_index("ijk", ijk, self.shape, "element index"),
                                   self.shape)
        return int(out) if np.ndim(out) == 0 else out

    def node_index(self, ijk) -> int | np.ndarray:
        """Node number(s) of the node grid index `ijk` (C order)."""
        out = np.ravel_multi_index(check_grid_index("ijk", ijk, self.nodes_shape, "node index"),
                                   self.nodes_shape)
        return int(out) if np.ndim(out) == 0 else out

    def corner_slice(self, q: int, rows: slice = slice(None)) -> tuple:
        """Slice of the node array holding corner `q` of the elements (of the x-rows `rows`).

        ``nodal[grid.corner_slice(q)]`` has the element grid's shape: entry
        ``(i, j, k)`` is the node of corner `q` of element ``(i, j, k)``.
        """
        q = check_int("q", q, 0, len(self.corners) - 1, "a local node of the element")
        if not isinstance(rows, slice):
            raise TypeError(f"rows must be a slice of the x-rows, got {type(rows).__name__}")
        start, stop, _ = rows.indices(self.shape[0])
        c = self.corners[q]
        return (slice(start + c[0], stop + c[0]),) + tuple(
            slice(c[d], c[d] + self.shape[d]) for d in range(1, self.dim))

    def element_nodes(self, elements=None) -> np.ndarray:
        """``(n, 2**dim)`` node numbers of the elements (all by default), local order.

        Built on demand for small grids, tests and outputs; the operators do
        not use it.
        """
        idx = np.arange(self.n_el) if elements is None else check_indices(
            "elements", elements, self.n_el, "elements")
        ijk = np.array(np.unravel_index(idx, self.shape))              # (dim, n)
        return np.stack([self.node_index(ijk + c[:, None]) for c in self.corners], axis=1)

    # ------------------------------------------------------------ geometry
    def node_axes(self) -> list:
        """The node coordinates of each axis, ``[h * arange(n + 1), ...]``."""
        return [self.h * np.arange(n + 1.0) for n in self.shape]

    def center_axes(self) -> list:
        """The element-centre coordinates of each axis, ``[h * (arange(n) + 1/2), ...]``."""
        return [self.h * (np.arange(n) + 0.5) for n in self.shape]

    def node_coordinates(self, nodes=None) -> np.ndarray:
        """``(dim, n)`` coordinates of the nodes (all by default)."""
        idx = np.arange(self.n_nodes) if nodes is None else check_indices(
            "nodes", nodes, self.n_nodes, "nodes")
        return self.h * np.array(np.unravel_index(idx, self.nodes_shape), dtype=float)

    def element_centers(self, elements=None) -> np.ndarray:
        """``(n, dim)`` element centres (all by default)."""
        idx = np.arange(self.n_el) if elements is None else check_indices(
            "elements", elements, self.n_el, "elements")
        return self.h * (np.array(np.unravel_index(idx, self.shape), dtype=float).T + 0.5)

    def nodes_where(self, where) -> np.ndarray:
        """Node numbers whose coordinates satisfy ``where(x) -> bool array``.

        `where` gets a ``(dim, ...)`` array of coordinates (as scikit-fem's
        node predicates do); it is evaluated one x-plane of nodes at a time,
        so a predicate on a 10-million-node grid needs no full coordinate array.
        """
        check_callable("where", where)
        axes = self.node_axes()
        rest = list(np.meshgrid(*axes[1:], indexing="ij"))
        plane = int(np.prod(self.nodes_shape[1:]))
        out = []
        for i, xi in enumerate(axes[0]):
            x = np.stack([np.full_like(rest[0], xi)] + rest)
            hit = np.asarray(where(x))
            if hit.dtype != bool or not _broadcasts(hit.shape, x.shape[1:]):
                raise TypeError(f"where must return a boolean array of the coordinates' shape "
                                f"{x.shape[1:]} (a node predicate), got dtype {hit.dtype} and "
                                f"shape {hit.shape}")
            if hit.shape != x.shape[1:]:
                hit = np.broadcast_to(hit, x.shape[1:])
            out.append(i * plane + np.flatnonzero(hit.ravel()))
        return np.concatenate(out)

    @property
    def volume(self) -> float:
        """The volume (area) of one element, ``h**dim``."""
        return self.h ** self.dim

    def coarsened(self, factor: int = 2) -> "Grid":
        """The grid of `factor`-times larger elements (every count divisible by `factor`)."""
        factor = check_factor("factor", factor, self.shape, "element count of the grid")
        return Grid(tuple(n // factor for n in self.shape), self.h * factor)

    def to_mesh(self):
        """The scikit-fem mesh of this grid (small grids: tests and plots) and the map
        ``perm`` with ``mesh element perm[e] = grid element e``."""
        from ..fem.mesh import box, rectangle
        mesh = (rectangle if self.dim == 2 else box)(*self.shape, h=self.h)
        centers = mesh.p[:, mesh.t].mean(axis=1)                 # (dim, n_el)
        ijk = np.floor(centers / self.h + 1e-9).astype(np.int64)
        order = np.ravel_multi_index(tuple(ijk), self.shape)     # grid number of mesh element
        perm = np.empty(self.n_el, dtype=np.int64)
        perm[order] = np.arange(self.n_el)
        return mesh, perm


def _broadcasts(shape: tuple, to: tuple) -> bool:
    """Whether an array of `shape` broadcasts to `to` (and keeps it)."""
    try:
        return np.broadcast_shapes(shape, to) == to
    except ValueError:
        return False
