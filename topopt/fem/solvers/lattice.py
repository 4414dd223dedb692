"""Structured lattices for geometric multigrid: node lattice, coarsening, interpolation classes.

Helpers of `topopt.fem.solvers.GeometricMultigrid`: find the tensor
lattice of the mesh nodes, pick the coarse nodes, build the 1-D linear
interpolations, and group the fine elements by their local interpolation
matrix from the coarse cell (so each coarse-cell matrix is a fixed linear
combination of the fine element coefficients).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from .csr import csr_structure

__all__ = ["axis_groups", "lattice", "coarse_indices", "interp_1d", "coarsen", "classify",
           "cell_pattern"]


def axis_groups(v: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values of `v` (gaps > tol) and the group index of each entry."""
    order = np.argsort(v, kind="stable")
    sv = v[order]
    group = np.concatenate([[0], np.cumsum(np.diff(sv) > tol)])
    index = np.empty(v.size, dtype=np.int64)
    index[order] = group
    coords = np.bincount(group, sv) / np.bincount(group)
    return coords, index


def lattice(p: np.ndarray, tol: float = 1e-9):
    """Axis coordinates and grid indices ``(dim, n_nodes)`` of a full tensor lattice, or None."""
    dim, n = p.shape
    scale = max(float(np.ptp(p)), 1e-300) if n else 1.0
    coords, index = [], []
    for d in range(dim):
        c, i = axis_groups(p[d], tol * scale)
        coords.append(c)
        index.append(i)
    shape = tuple(c.size for c in coords)
    if int(np.prod(shape)) != n or min(shape) < 2:
        return None
    lin = np.ravel_multi_index(index, shape, order="F")
    if np.unique(lin).size != n:
        return None
    return coords, np.array(index)


def coarse_indices(n_nodes: int) -> np.ndarray:
    """Every second node of an axis, and the last one (an odd count keeps one thin cell)."""
    c = np.arange(0, n_nodes, 2)
    return c if c[-1] == n_nodes - 1 else np.append(c, n_nodes - 1)


def interp_1d(X: np.ndarray, ci: np.ndarray) -> sps.csr_matrix:
    """Linear interpolation from the nodes `ci` of an axis with coordinates `X` to all nodes."""
    nf, nc = X.size, ci.size
    k = np.clip(np.searchsorted(ci, np.arange(nf), side="right") - 1, 0, nc - 2)
    t = (X - X[ci[k]]) / (X[ci[k + 1]] - X[ci[k]])
    rows = np.concatenate([np.arange(nf), np.arange(nf)])
    cols = np.concatenate([k, k + 1])
    vals = np.concatenate([1.0 - t, t])
    keep = np.abs(vals) > 1e-14
    return sps.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=(nf, nc))


def coarsen(coords: list, semi_ratio: float, ncomp: int):
    """One coarsening step of a lattice with axis coordinates `coords`.

    Every axis with at least ``semi_ratio`` times the most cells (and two) is
    coarsened by two (`coarse_indices`); thinner ones are kept
    (semi-coarsening of slender domains). Returns ``ci`` (the kept nodes per
    axis), ``P`` (lattice dofs x coarse lattice dofs, trilinear interpolation,
    dofs ``node * ncomp + component``, nodes lexicographic with x fastest)
    and ``inj`` (the fine lattice node at each coarse node).

    Examples
    --------
    A 4 x 1 strip of cells, one component: the long axis is coarsened, the
    thin one kept.

    >>> import numpy as np
    >>> ci, P, inj = coarsen([np.arange(5.0), np.arange(2.0)], 0.25, 1)
    >>> [c.tolist() for c in ci], P.shape, inj.tolist()
    ([[0, 2, 4], [0, 1]], (10, 6), [0, 2, 4, 5, 7, 9])
    """
    cells = [c.size - 1 for c in coords]
    ci = [coarse_indices(c.size) if n >= max(2, semi_ratio * max(cells))
          else np.arange(c.size) for c, n in zip(coords, cells)]
    Pn = sps.csr_matrix(np.ones((1, 1)))
    for X, c in zip(coords, ci):                # kron(z, kron(y, x))
        Pn = sps.kron(interp_1d(X, c), Pn, format="csr")
    P = sps.kron(Pn, sps.identity(ncomp), format="csr")
    inj = np.ravel_multi_index([g.ravel(order="F") for g in np.meshgrid(*ci, indexing="ij")],
                               tuple(c.size for c in coords), order="F")
    return ci, P, inj


def classify(g, comp, free, coords, ci, ncomp: int):
    """Coarse cell and interpolation class of each fine element.

    `g` (dim, n_e, n_loc) are the grid indices of the node of each local
    dof, `comp` and `free` its component and whether it is free. Two
    elements are in one class when their local interpolation matrices
    ``Q (n_loc, 2^dim ncomp)`` from the coarse cell (fixed fine dofs give
    zero rows) are equal. Returns None if an element is not a lattice cell.
    """
    dim, n_e, n_loc = g.shape
    lower, upper = g.min(axis=2), g.max(axis=2)
    if np.any(upper - lower != 1):
        return None
    kc, ts = [], []
    for d in range(dim):
        k = np.clip(np.searchsorted(ci[d], lower[d], side="right") - 1, 0, ci[d].size - 2)
        X = coords[d]
        lo, hi = X[ci[d][k]], X[ci[d][k + 1]]
        ts.append((X[g[d]] - lo[:, None]) / (hi - lo)[:, None])
        kc.append(k)
    parent = np.ravel_multi_index(kc, tuple(c.size - 1 for c in ci), order="F")
    key = np.concatenate([np.rint(t * 2 ** 20).astype(np.int64) for t in ts]
                         + [comp.astype(np.int64), free.astype(np.int64)], axis=1)
    _, first, cls = np.unique(key, axis=0, return_index=True, return_inverse=True)
    cls = cls.ravel()
    ncls, nlc = first.size, 2 ** dim * ncomp
    Q = np.zeros((ncls, n_loc, nlc))
    c_rep = comp[first]
    f_rep = free[first]
    ii = np.arange(ncls)[:, None]
    ll = np.arange(n_loc)[None, :]
    for m in range(2 ** dim):
        w = np.ones((ncls, n_loc))
        for d in range(dim):
            t = ts[d][first]
            w *= t if (m >> d) & 1 else 1.0 - t
        Q[ii, ll, m * ncomp + c_rep] = w * f_rep
    return parent, cls, Q


def cell_pattern(edofs: np.ndarray, free_index: np.ndarray):
    """Free-dof CSR pattern of the cells `edofs` and each local entry's position (or -1)."""
    loc = free_index[edofs]
    n_e, n_loc = loc.shape
    rows = np.repeat(loc, n_loc, axis=1).ravel()
    cols = np.tile(loc, (1, n_loc)).ravel()
    keep = (rows >= 0) & (cols >= 0)
    n = int(free_index.max()) + 1
    keys = rows[keep] * n + cols[keep]
    uniq, inverse = np.unique(keys, return_inverse=True)
    _, cols, indptr = csr_structure(uniq, n)
    return indptr, cols, np.flatnonzero(keep), inverse.ravel(), uniq.size
