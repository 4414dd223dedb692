"""Structured meshes; any scikit-fem mesh (triangles, tetrahedra, meshio files) works too."""

from __future__ import annotations

import numpy as np
import skfem

from .._validate import check_int, check_positive, check_type
from .budget import check_grid


def _counts(**counts) -> tuple[int, ...]:
    """Element counts along the axes: integers >= 1."""
    return tuple(check_int(name, n, 1, what="elements along an axis")
                 for name, n in counts.items())


def _size(h) -> float:
    return check_positive("h", h, "element size")


def _check_mesh(mesh) -> skfem.Mesh:
    """`mesh` if it is a scikit-fem Mesh; `TypeError` naming ``mesh`` otherwise."""
    return check_type("mesh", mesh, skfem.Mesh, "a scikit-fem Mesh")


def rectangle(nelx: int, nely: int, h: float = 1.0) -> skfem.MeshQuad1:
    """``nelx x nely`` bilinear quadrilaterals of size `h`, corner at the origin.

    Examples
    --------
    >>> from topopt.fem import rectangle
    >>> m = rectangle(6, 2)
    >>> m.t.shape[1], m.p[:, -1].tolist()
    (12, [6.0, 2.0])
    """
    nelx, nely = _counts(nelx=nelx, nely=nely)
    check_grid((nelx, nely), f"fem.rectangle({nelx}, {nely})")     # before allocating
    h = _size(h)
    return skfem.MeshQuad.init_tensor(h * np.arange(nelx + 1.0), h * np.arange(nely + 1.0))


def box(nelx: int, nely: int, nelz: int, h: float = 1.0) -> skfem.MeshHex1:
    """``nelx x nely x nelz`` trilinear hexahedra of size `h`, corner at the origin.

    Examples
    --------
    >>> from topopt.fem import box
    >>> box(4, 2, 2).t.shape
    (8, 16)
    """
    nelx, nely, nelz = _counts(nelx=nelx, nely=nely, nelz=nelz)
    check_grid((nelx, nely, nelz), f"fem.box({nelx}, {nely}, {nelz})")    # before allocating
    h = _size(h)
    return skfem.MeshHex.init_tensor(*(h * np.arange(n + 1.0) for n in (nelx, nely, nelz)))


def element_centroids(mesh: skfem.Mesh) -> np.ndarray:
    """Centroids of the elements, shape ``(n_elements, dim)``.

    Examples
    --------
    >>> from topopt.fem import element_centroids, rectangle
    >>> element_centroids(rectangle(2, 1))
    array([[0.5, 0.5],
           [1.5, 0.5]])
    """
    return _check_mesh(mesh).p[:, mesh.t].mean(axis=1).T


def element_volumes(mesh: skfem.Mesh) -> np.ndarray:
    """Area (2-D) or volume (3-D) of each element, integrated by scikit-fem.

    Examples
    --------
    >>> from topopt.fem import element_volumes, rectangle
    >>> element_volumes(rectangle(2, 1, h=0.5))
    array([0.25, 0.25])
    """
    # the integrand is the Jacobian determinant: degree <= 2 per direction on
    # multilinear elements, exact with 2 points per direction (intorder 3)
    basis = skfem.Basis(_check_mesh(mesh), mesh.elem(), intorder=3)
    return skfem.Functional(lambda w: 1.0 + 0.0 * w.x[0]).elemental(basis)
