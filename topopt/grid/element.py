"""The one element matrix of a grid: bilinear / trilinear elements by 2-point Gauss rules.

Every element of a `Grid` is the same square or cube, so its stiffness
``K0`` (elasticity or heat) and mass matrix are computed once; ``K_e = E_e
K0``. The 2-point Gauss rule per axis integrates these polynomials exactly.
Local dofs are node-major: local node ``q`` (the binary corner ``(a, b[,
c])`` of `Grid.corners`), component ``i`` -> ``q * components + i``, as the
global dofs ``node * components + i``. Checked against scikit-fem's element
matrices in ``tests/test_grid_element.py``.
"""

from __future__ import annotations

import itertools

import numpy as np

from .._validate import check_choice, check_positive, check_range
from .grid import Grid

__all__ = ["shape_values", "shape_gradients", "elasticity_matrix", "heat_matrix", "mass_matrix"]

_GAUSS = (0.5 - 0.5 / np.sqrt(3.0), 0.5 + 0.5 / np.sqrt(3.0))     # on [0, 1]


def _points(dim: int):
    """Gauss points of ``[0, 1]^dim`` (weights all ``2**-dim``)."""
    return np.array(list(itertools.product(_GAUSS, repeat=dim)))


def shape_values(grid: Grid) -> np.ndarray:
    """``(n_points, 2**dim)`` values of the shape functions at the Gauss points."""
    xi = _points(grid.dim)
    c = grid.corners
    return np.prod(np.where(c[None] == 1, xi[:, None], 1.0 - xi[:, None]), axis=2)


def shape_gradients(grid: Grid) -> np.ndarray:
    """``(n_points, dim, 2**dim)`` gradients of the shape functions at the Gauss points."""
    xi = _points(grid.dim)
    c = grid.corners
    val = np.where(c[None] == 1, xi[:, None], 1.0 - xi[:, None])      # (p, q, dim)
    der = np.where(c[None] == 1, 1.0, -1.0) * np.ones_like(val)
    out = np.empty((xi.shape[0], grid.dim, c.shape[0]))
    for d in range(grid.dim):
        factors = np.where(np.arange(grid.dim) == d, der, val)
        out[:, d] = np.prod(factors, axis=2) / grid.h
    return out


def elasticity_matrix(grid: Grid, nu: float = 0.3, E0: float = 1.0,
                      plane: str = "stress") -> np.ndarray:
    """``K0``: the stiffness of one element at Young's modulus `E0`, ``(dim 2**dim,)*2``.

    2-D is plane stress (unit thickness) or plane strain, as `topopt.fem.elasticity`.

    Examples
    --------
    >>> from topopt.grid import Grid
    >>> from topopt.grid.element import elasticity_matrix
    >>> K0 = elasticity_matrix(Grid((1, 1)))
    >>> round(float(K0[0, 0]), 6)      # top88: (1/(1-nu^2)) (1/2 - nu/6)
    0.494505
    """
    nu = check_range("nu", nu, -1.0, 0.5, lo_open=True, hi_open=True, what="Poisson's ratio")
    E0 = check_positive("E0", E0, "Young's modulus")
    check_choice("plane", plane, ("stress", "strain"))
    lam, mu = E0 * nu / ((1 + nu) * (1 - 2 * nu)), E0 / (2 * (1 + nu))
    dim = grid.dim
    if dim == 2 and plane == "stress":
        lam = 2 * lam * mu / (lam + 2 * mu)
    G = shape_gradients(grid)                       # (p, dim, q)
    n = G.shape[2] * dim
    K = np.zeros((n, n))
    weight = grid.volume / G.shape[0]
    for g in G:
        # symmetric gradient of each local dof: eps[dof] (dim, dim)
        B = np.zeros((n, dim, dim))
        for q in range(g.shape[1]):
            for i in range(dim):
                B[q * dim + i, i, :] += 0.5 * g[:, q]
                B[q * dim + i, :, i] += 0.5 * g[:, q]
        tr = np.trace(B, axis1=1, axis2=2)
        K += weight * (2 * mu * np.einsum("aij,bij->ab", B, B) + lam * np.outer(tr, tr))
    return 0.5 * (K + K.T)


def heat_matrix(grid: Grid, k0: float = 1.0) -> np.ndarray:
    """``K0`` of steady conduction, ``k0 (grad N_a, grad N_b)``, ``(2**dim, 2**dim)``.

    Examples
    --------
    >>> from topopt.grid import Grid
    >>> from topopt.grid.element import heat_matrix
    >>> (heat_matrix(Grid((1, 1))) * 6).round(12).tolist()[0]
    [4.0, -1.0, -1.0, -2.0]
    """
    k0 = check_positive("k0", k0, "conductivity")
    G = shape_gradients(grid)
    return k0 * grid.volume / G.shape[0] * np.einsum("pda,pdb->ab", G, G)


def mass_matrix(grid: Grid) -> np.ndarray:
    """The scalar mass matrix ``(N_a, N_b)`` of one element, ``(2**dim, 2**dim)``.

    Examples
    --------
    >>> from topopt.grid import Grid
    >>> from topopt.grid.element import mass_matrix
    >>> float(mass_matrix(Grid((1, 1, 1), h=2.0)).sum())     # the element's volume
    8.0
    """
    N = shape_values(grid)
    return grid.volume / N.shape[0] * N.T @ N
