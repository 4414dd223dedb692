"""A design field at the quadrature points of a scikit-fem basis, traced by `topopt.ad`."""

from __future__ import annotations

import numpy as np

__all__ = ["at_quadrature"]


def _linear_shapes(X: np.ndarray) -> np.ndarray:
    """P1 shape functions of the reference simplex at reference points `X` (dim, nq)."""
    return np.vstack([1.0 - X.sum(axis=0), X])


def at_quadrature(basis, rho):
    """Values of the design `rho` at the quadrature points of `basis`, shape ``(nelems, nq)``.

    `rho` is one value per element (piecewise constant, P0) or one per mesh
    vertex (continuous piecewise linear, P1, interpolated with the simplex's
    linear shape functions); it may be traced, so every derivative mode
    follows. Triangles and tetrahedra.

    Examples
    --------
    >>> import numpy as np, skfem
    >>> from topopt.flow import at_quadrature
    >>> mesh = skfem.MeshTri()
    >>> basis = skfem.Basis(mesh, skfem.ElementTriP1(), intorder=2)
    >>> at_quadrature(basis, mesh.p[0]).round(3)        # rho = x at the points
    array([[0.167, 0.667, 0.167],
           [0.833, 0.333, 0.833]])
    """
    mesh = basis.mesh
    n = np.shape(rho)
    if mesh.t.shape[0] != mesh.dim() + 1:
        raise ValueError(f"at_quadrature: the mesh's cells have {mesh.t.shape[0]} vertices; "
                         "triangles (3) and tetrahedra (4) are supported")
    if n == (mesh.t.shape[1],):
        return rho[:, None] * np.ones((1, basis.X.shape[1]))
    if n == (mesh.p.shape[1],):
        return np.einsum("ve,vq->eq", rho[mesh.t], _linear_shapes(basis.X))
    raise ValueError(f"rho has shape {n}; give one value per element ({mesh.t.shape[1]},) "
                     f"or one per vertex ({mesh.p.shape[1]},)")
