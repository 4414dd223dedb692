"""A design field at the quadrature points of a scikit-fem basis, traced by `topopt.ad`."""

from __future__ import annotations

import numpy as np
import skfem

__all__ = ["at_quadrature"]

#: The vertex interpolation of each cell kind: ``(vertices per cell, dim)`` -> the linear
#: (simplex) or multilinear (quadrilateral, hexahedron) element on the mesh's vertices.
_VERTEX_ELEMENTS = {(2, 1): skfem.ElementLineP1,
                    (3, 2): skfem.ElementTriP1, (4, 3): skfem.ElementTetP1,
                    (4, 2): skfem.ElementQuad1, (8, 3): skfem.ElementHex1}


def _vertex_shapes(mesh, X: np.ndarray) -> np.ndarray:
    """The vertex shape functions of `mesh`'s cells at reference points `X`, ``(nv, nq)``:
    P1 on simplices, Q1 on quadrilaterals and hexahedra (scikit-fem's local vertex order is
    that of ``mesh.t``)."""
    elem = _VERTEX_ELEMENTS[mesh.t.shape[0], mesh.dim()]()
    return np.stack([np.asarray(elem.lbasis(X, i)[0]) for i in range(mesh.t.shape[0])])


def at_quadrature(basis, rho):
    """Values of the design `rho` at the quadrature points of `basis`, shape ``(nelems, nq)``.

    `rho` is one value per element (piecewise constant, P0) or one per mesh
    vertex (continuous, interpolated with the cell's vertex shape functions:
    linear, P1, on intervals, triangles and tetrahedra; bilinear or trilinear, Q1, on
    quadrilaterals and hexahedra); it may be traced, so every derivative mode
    follows.

    Examples
    --------
    >>> import numpy as np, skfem
    >>> from topopt.flow import at_quadrature
    >>> mesh = skfem.MeshTri()
    >>> basis = skfem.Basis(mesh, skfem.ElementTriP1(), intorder=2)
    >>> at_quadrature(basis, mesh.p[0]).round(3)        # rho = x at the points
    array([[0.167, 0.667, 0.167],
           [0.833, 0.333, 0.833]])

    On a quadrilateral the vertex values ``x y`` are interpolated exactly (bilinear):

    >>> quad = skfem.MeshQuad()
    >>> basis = skfem.Basis(quad, skfem.ElementQuad1(), intorder=1)
    >>> x = basis.global_coordinates()
    >>> bool(np.allclose(at_quadrature(basis, quad.p[0] * quad.p[1]), x[0] * x[1]))
    True
    """
    mesh = basis.mesh
    n = np.shape(rho)
    if (mesh.t.shape[0], mesh.dim()) not in _VERTEX_ELEMENTS:
        raise ValueError(f"at_quadrature: the mesh's cells have {mesh.t.shape[0]} vertices in "
                         f"{mesh.dim()}-D; intervals (2), triangles (3), tetrahedra (4), "
                         "quadrilaterals (4) and hexahedra (8) are supported")
    if n == (mesh.t.shape[1],):
        return rho[:, None] * np.ones((1, basis.X.shape[1]))
    if n == (mesh.p.shape[1],):
        return np.einsum("ve,vq->eq", rho[mesh.t], _vertex_shapes(mesh, basis.X))
    raise ValueError(f"rho has shape {n}; give one value per element ({mesh.t.shape[1]},) "
                     f"or one per vertex ({mesh.p.shape[1]},)")
