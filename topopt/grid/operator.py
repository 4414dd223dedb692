"""``K(E) u = sum_e E_e K0 u_e`` on a grid, matrix-free, in slabs of elements.

The element vectors of a slab of x-rows are gathered from the nodal array
by the corner slices of `topopt.grid.Grid` (no connectivity is stored),
multiplied by the one stored ``K0`` in one dense product, scaled by the
element coefficients ``E_e`` and added back by the same slices (the
element-by-element product of TOP3D_XL, Wang et al. 2025, sect. 3.2). Its
diagonal and the element products ``v_e^T K0 w_e`` (the sensitivities
``-u_e^T K0 u_e``) use the same gather.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_int, check_real_array, check_type
from . import kernels
from .grid import Grid

__all__ = ["GridOperator", "CellOperator", "BLOCK_ELEMENTS"]

#: Elements per slab: 2^14, whose (24, n) work arrays (3 MB) stay in cache; 2^17 took
#: twice as long (``scripts/benchmarks/benchmark_scale.py`` measures the product).
BLOCK_ELEMENTS = 1 << 14


class GridOperator:
    """``K(E) = sum_e E_e K0`` of a `Grid`, with `components` unknowns per node.

    Parameters
    ----------
    grid : Grid
    K0 : (2**dim * components,) * 2 float array
        The element matrix at unit coefficient, node-major local dofs
        (`topopt.grid.element`).
    components : int
        Unknowns per node (``dim`` for elasticity, 1 for heat).
    block : int
        Elements per slab (rounded to whole x-rows).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.grid import Grid
    >>> from topopt.grid.element import heat_matrix
    >>> g = Grid((3, 2))
    >>> A = GridOperator(g, heat_matrix(g), 1)
    >>> bool(np.allclose(A.apply(np.ones(6), np.ones(12)), 0.0))     # constants: no flux
    True
    """

    def __init__(self, grid: Grid, K0: np.ndarray, components: int, block: int = BLOCK_ELEMENTS):
        check_type("grid", grid, Grid, "a topopt.grid.Grid")
        self.grid, self.components = grid, check_int("components", components, 1, what="dofs per node")
        block = check_int("block", block, 1, what="elements per slab")
        self.n_loc = grid.corners.shape[0] * self.components
        K0 = check_real_array("K0", K0, allow_bool=True)
        if K0.shape != (self.n_loc, self.n_loc):
            raise ValueError(f"K0 has shape {K0.shape}; expected ({self.n_loc}, {self.n_loc}) "
                             f"for {components} components on a {grid.dim}-D grid")
        self.K0 = np.ascontiguousarray(K0)
        self.cells = None
        self._buffers: dict = {}
        self.ndof = grid.n_nodes * self.components
        plane = int(np.prod(grid.shape[1:]))
        self.rows = max(1, block // plane)            # x-rows of elements per slab

    def __repr__(self):
        return f"GridOperator({self.grid!r}, {self.components} components)"

    # ------------------------------------------------------------ slabs
    def slabs(self):
        """The x-row ranges of the slabs: ``slice(i0, i1)``."""
        n = self.grid.shape[0]
        for i0 in range(0, n, self.rows):
            yield slice(i0, min(n, i0 + self.rows))

    def nodal(self, u: np.ndarray) -> np.ndarray:
        """The dof vector `u` as the nodal array ``(components,) + nodes_shape`` (a view)."""
        return np.asarray(u).reshape((self.components,) + self.grid.nodes_shape)

    def gather(self, nodal: np.ndarray, rows: slice, out: np.ndarray | None = None) -> np.ndarray:
        """``(n_loc, n_slab)`` element vectors of the slab `rows`, local dof ``q c + i``.

        `out`, a flat work array of at least ``n_loc * n_slab`` entries, is
        filled instead of a new array (no allocation per slab).
        """
        g = self.grid
        n_rows = rows.stop - rows.start
        shape = (g.corners.shape[0], self.components, n_rows) + g.shape[1:]
        size = int(np.prod(shape))
        buf = (np.empty(size, dtype=nodal.dtype) if out is None or out.dtype != nodal.dtype
               else out[:size])
        buf = buf.reshape(shape)
        for q in range(g.corners.shape[0]):
            buf[q] = nodal[(slice(None),) + g.corner_slice(q, rows)]
        return buf.reshape(self.n_loc, -1)

    def scatter_add(self, nodal: np.ndarray, local: np.ndarray, rows: slice) -> None:
        """Add the element vectors `local` of the slab `rows` into `nodal` (transpose of `gather`)."""
        g = self.grid
        n_rows = rows.stop - rows.start
        local = local.reshape((g.corners.shape[0], self.components, n_rows) + g.shape[1:])
        for q in range(g.corners.shape[0]):
            nodal[(slice(None),) + g.corner_slice(q, rows)] += local[q]

    def _coefficients(self, E, rows: slice) -> np.ndarray:
        plane = int(np.prod(self.grid.shape[1:]))
        return E[rows.start * plane:rows.stop * plane]

    # ------------------------------------------------------------ products
    def apply(self, E: np.ndarray, u: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``K(E) u`` (`out`, overwritten, may be given to save an allocation)."""
        E = self.cells if E is None else np.asarray(E)
        y = np.zeros(self.ndof, dtype=np.result_type(u, E)) if out is None else out
        un, yn = self.nodal(u), self.nodal(y)
        if self._compiled(E, un, yn):
            kernels.apply(self._K0_as(y.dtype), E, un, yn)
            return y
        if out is not None:
            y[...] = 0.0
        work = self._work(y.dtype)
        for rows in self.slabs():
            X = self.gather(un, rows, work[0])
            self.scatter_add(yn, self._local(E, X, rows, work[1]), rows)
        return y

    def _compiled(self, E, *nodal) -> bool:
        """Whether the fused kernels of `topopt.grid.kernels` take this product."""
        return (type(self)._local is GridOperator._local and isinstance(E, np.ndarray)
                and all(kernels.supports(E, a) for a in nodal))

    def _K0_as(self, dtype) -> np.ndarray:
        """``K0`` in `dtype` (a float32 copy made once)."""
        if self.K0.dtype == dtype:
            return self.K0
        key = ("K0", np.dtype(dtype))
        if key not in self._buffers:
            self._buffers[key] = self.K0.astype(dtype)
        return self._buffers[key]

    def _work(self, dtype) -> tuple:
        """Three flat work arrays of a slab (made once per operator and dtype)."""
        key = np.dtype(dtype)
        if key not in self._buffers:
            n = self.n_loc * self.rows * int(np.prod(self.grid.shape[1:]))
            self._buffers[key] = tuple(np.empty(n, dtype=key) for _ in range(3))
        return self._buffers[key]

    def _local(self, E, X: np.ndarray, rows: slice, out: np.ndarray | None = None) -> np.ndarray:
        """``K_e X_e`` for the element vectors `X` (columns) of the slab `rows` (float32 `X`:
        by ``K0``'s float32 copy, the float32 smoothers of `topopt.grid.multigrid`)."""
        K0 = self._K0_as(X.dtype) if X.dtype == np.float32 else self.K0
        local = K0 @ X if out is None else np.matmul(K0, X, out=out[:X.size].reshape(X.shape))
        local *= self._coefficients(E, rows)
        return local

    def diagonal(self, E: np.ndarray) -> np.ndarray:
        """The diagonal of ``K(E)``, ``sum_e E_e diag(K0)`` at each dof."""
        E = self.cells if E is None else np.asarray(E)
        d = np.zeros(self.ndof, dtype=E.dtype if np.iscomplexobj(E) else float)
        dn = self.nodal(d)
        for rows in self.slabs():
            self.scatter_add(dn, self._local_diagonal(E, rows), rows)
        return d

    def _local_diagonal(self, E, rows: slice) -> np.ndarray:
        return np.diagonal(self.K0)[:, None] * self._coefficients(E, rows)[None, :]

    def products(self, v: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Per element ``conj(v_e)^T K0 w_e`` (without the coefficient), ``(n_el,)``."""
        vn, wn = self.nodal(v), self.nodal(w)
        out = np.empty(self.grid.n_el, dtype=np.result_type(v, w))
        if out.dtype == self.K0.dtype and self._compiled(out, vn, wn):
            return kernels.products(self.K0, vn, wn, out)
        plane = int(np.prod(self.grid.shape[1:]))
        work = self._work(out.dtype)
        for rows in self.slabs():
            ve = self.gather(vn, rows, work[0])
            w_e = self.gather(wn, rows, work[1])
            kw = np.matmul(self.K0, w_e, out=work[2][:w_e.size].reshape(w_e.shape))
            out[rows.start * plane:rows.stop * plane] = np.einsum(
                "ie,ie->e", np.conj(ve) if np.iscomplexobj(ve) else ve, kw)
        return out


class CellOperator(GridOperator):
    """``A = sum_c A_c`` with one stored matrix per cell: a Galerkin coarse level.

    `cells` is ``(n_el, n_loc, n_loc)`` (the cells of `grid`, C order); the
    products ignore `E` (``apply(None, u)``). The coarse levels of
    `topopt.grid.multigrid` hold these (`topopt.grid.galerkin` forms them).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.grid import Grid
    >>> from topopt.grid.element import heat_matrix
    >>> g = Grid((3, 2))
    >>> E, u = np.arange(1.0, 7.0), np.arange(12.0)
    >>> A = CellOperator(g, E[:, None, None] * heat_matrix(g), 1)
    >>> bool(np.allclose(A.apply(None, u), GridOperator(g, heat_matrix(g), 1).apply(E, u)))
    True
    """

    def __init__(self, grid: Grid, cells: np.ndarray, components: int,
                 block: int = BLOCK_ELEMENTS):
        check_type("grid", grid, Grid, "a topopt.grid.Grid")
        n_loc = grid.corners.shape[0] * check_int("components", components, 1, what="dofs per node")
        if np.shape(cells) != (grid.n_el, n_loc, n_loc):
            raise ValueError(f"cells has shape {np.shape(cells)}; expected "
                             f"({grid.n_el}, {n_loc}, {n_loc})")
        super().__init__(grid, np.zeros((n_loc, n_loc)), components, block)
        self.cells = cells

    def _local(self, E, X: np.ndarray, rows: slice, out: np.ndarray | None = None) -> np.ndarray:
        cells = self._coefficients(self.cells, rows)
        return np.matmul(cells, X.T[:, :, None])[:, :, 0].T

    def _local_diagonal(self, E, rows: slice) -> np.ndarray:
        return np.diagonal(self._coefficients(self.cells, rows), axis1=1, axis2=2).T

    def abs_apply(self, u: np.ndarray) -> np.ndarray:
        """``|A| u`` with ``|A| = sum_c |A_c|`` entrywise: Gershgorin's bound (`lmax_bound`)."""
        y = np.zeros(self.ndof)
        un, yn = self.nodal(u), self.nodal(y)
        for rows in self.slabs():
            X = self.gather(un, rows)
            local = np.matmul(np.abs(self._coefficients(self.cells, rows)),
                              X.T[:, :, None])[:, :, 0].T
            self.scatter_add(yn, local, rows)
        return y
