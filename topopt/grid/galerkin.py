"""Galerkin coarse cells ``A_c = sum_g P_g^T K_g P_g`` without a fine matrix.

A coarse cell of a grid coarsened by ``F`` covers ``F**dim`` fine elements
(its children ``g``); with ``P_g`` the multilinear interpolation from the
cell's corners to child ``g``'s corners (the local block of
`topopt.grid.transfer.prolong`), the Galerkin product ``P^T K(E) P`` of
the whole grid is the sum over coarse cells of ``A_c = sum_g E_g N_g``,
``N_g = P_g^T K0 P_g``: one product of the children's coefficients with
the ``F**dim`` fixed matrices ``N_g`` (Amir, Aage & Lazarov 2014, sect.
3.2; TOP3D_XL's coarse levels, Wang et al. 2025). Coarser cells follow from
finer cells the same way, ``A_c = sum_k P_k^T A_k P_k`` over ``F**dim`` children.
"""

from __future__ import annotations

import itertools

import numpy as np

from .._validate import check_array_range, check_factor, check_finite_array, check_int
from .grid import Grid

__all__ = ["child_interpolations", "cells_from_coefficients", "cells_from_cells"]


def child_interpolations(grid: Grid, factor: int, components: int) -> np.ndarray:
    """``(factor**dim, n_loc, n_loc)``: ``P_g`` from a coarse cell's dofs to child ``g``'s.

    Children in C order of their offsets in the cell; local dofs ``q c + i``.

    Examples
    --------
    >>> from topopt.grid import Grid
    >>> P = child_interpolations(Grid((2, 2)), 2, 1)
    >>> P[0][0].tolist(), P[0][3].tolist()     # child (0, 0): its corners 0 and (1, 1)
    ([1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25])
    """
    factor = check_int("factor", factor, 1, what="fine elements per coarse element and axis")
    components = check_int("components", components, 1, what="dofs per node")
    corners = grid.corners                                       # (nq, dim)
    out = []
    for g in itertools.product(range(factor), repeat=grid.dim):
        t = (np.asarray(g)[None, :] + corners) / factor          # fine corners in the cell
        w = np.prod(np.where(corners[None, :, :] == 1, t[:, None, :], 1 - t[:, None, :]),
                    axis=2)                                       # (fine q', coarse q)
        out.append(np.kron(w, np.eye(components)))
    return np.array(out)


def _children(values: np.ndarray, shape: tuple, factor: int) -> np.ndarray:
    """``(n_coarse, factor**dim, ...)``: the per-element `values` grouped by coarse cell."""
    dim = len(shape)
    coarse = tuple(n // factor for n in shape)
    split = values.reshape(sum(((c, factor) for c in coarse), ()) + values.shape[1:])
    order = tuple(range(0, 2 * dim, 2)) + tuple(range(1, 2 * dim, 2)) + tuple(
        range(2 * dim, split.ndim))
    return split.transpose(order).reshape((int(np.prod(coarse)), factor ** dim)
                                          + values.shape[1:])


def cells_from_coefficients(grid: Grid, K0: np.ndarray, E: np.ndarray, factor: int,
                            components: int) -> np.ndarray:
    """The cells ``sum_g E_g P_g^T K0 P_g`` of `grid` coarsened by `factor`, ``(n_c, n, n)``."""
    check_factor("factor", factor, grid.shape, "element count of the grid")
    P = child_interpolations(grid, factor, components)
    _check_cells("K0", K0, P.shape[1], ())
    E = check_finite_array("E", E, (grid.n_el,))
    check_array_range("E", E, 0.0, what="element coefficients of the fine grid")
    N = np.einsum("gji,jk,gkl->gil", P, K0, P).reshape(P.shape[0], -1)   # (children, n*n)
    children = _children(E, grid.shape, factor)
    n = K0.shape[0]
    return (children @ N).reshape(-1, n, n)


def cells_from_cells(grid: Grid, cells: np.ndarray, components: int,
                     factor: int = 2) -> np.ndarray:
    """The cells ``sum_k P_k^T A_k P_k`` of `grid` (the cells' grid) coarsened by `factor`.

    Each child ``k`` is a strided view of `cells`: no copy of the finer level.
    """
    factor = check_factor("factor", factor, grid.shape, "element count of the cells' grid")
    P = child_interpolations(grid, factor, components)
    _check_cells("cells", cells, P.shape[1], (grid.n_el,))
    coarse = tuple(n // factor for n in grid.shape)
    n = cells.shape[1]
    split = cells.reshape(sum(((c, factor) for c in coarse), ()) + (n, n))
    out = np.zeros((int(np.prod(coarse)), n, n))
    for k, offset in enumerate(itertools.product(range(factor), repeat=grid.dim)):
        child = split[tuple(x for o in offset for x in (slice(None), o))]
        out += np.einsum("ji,...jk,kl->...il", P[k], child, P[k],
                         optimize=True).reshape(out.shape)
    return out


def _check_cells(name: str, cells, n: int, lead: tuple) -> None:
    """`cells` of shape ``lead + (n, n)``: one ``n x n`` matrix per element (none for ``()``)."""
    shape = np.shape(cells)
    if shape != lead + (n, n):
        raise ValueError(f"{name} has shape {shape}; expected {lead + (n, n)} (one {n} x {n} "
                         f"matrix per element: 2**dim nodes x components)")
