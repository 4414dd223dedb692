"""The Helmholtz PDE filter (Lazarov & Sigmund 2011) and its density-filter radius."""

from __future__ import annotations

import numpy as np
import scipy.sparse.linalg as spla
from skfem import (Basis, BilinearForm, ElementHex0, ElementHex1, ElementLineP0,
                   ElementLineP1, ElementQuad0, ElementQuad1, ElementTetP0,
                   ElementTetP1, ElementTriP0, ElementTriP1, LinearForm,
                   MeshHex1, MeshLine1, MeshQuad1, MeshTet1, MeshTri1)
from skfem.helpers import dot, grad

from .._validate import check_positive
from .linear_filter import LinearFilter, _mesh, _warn_radius
from .quadrature import QuadratureField

__all__ = ["HelmholtzFilter", "helmholtz_radius"]


# mesh type -> (linear nodal element, piecewise constant element)
_ELEMENTS = (
    (MeshTri1, ElementTriP1, ElementTriP0),
    (MeshQuad1, ElementQuad1, ElementQuad0),
    (MeshTet1, ElementTetP1, ElementTetP0),
    (MeshHex1, ElementHex1, ElementHex0),
    (MeshLine1, ElementLineP1, ElementLineP0),
)


def helmholtz_radius(rmin: float) -> float:
    """Helmholtz filter radius ``r`` equivalent to density-filter radius `rmin`.

    ``r = rmin / (2 sqrt(3))`` (Lazarov & Sigmund 2011).

    Examples
    --------
    >>> from topopt.design import helmholtz_radius
    >>> round(helmholtz_radius(2 * 3 ** 0.5), 12)
    1.0
    """
    return float(check_positive("rmin", rmin, "density filter radius") / (2.0 * np.sqrt(3.0)))


@BilinearForm
def _helmholtz(u, v, w):
    return w.r2 * dot(grad(u), grad(v)) + u * v


@BilinearForm
def _mass(u, v, w):
    return u * v


@LinearForm
def _measure(v, w):
    return v


class HelmholtzFilter(LinearFilter):
    """PDE filter: ``r^2 (grad rho, grad v) + (rho, v) = (x, v)``, natural BCs.

    Lazarov & Sigmund (2011). The element values `x` are piecewise constant
    (P0); the nodal solution ``rho`` is linear (P1/Q1) and the output is its
    element averages (L2 projection onto P0). As matrices, with ``Kf = r^2
    K + M`` the filter stiffness, ``T`` the P0-to-P1 mass matrix and ``D``
    the element measures, ``F = D^-1 T^T Kf^-1 T``. ``Kf`` is factorized
    once here and reused by the forward and the transposed solves.

    Parameters
    ----------
    mesh : skfem.Mesh
        Triangle, quadrilateral, tetrahedron, hexahedron or line mesh.
    r : float
        Length scale, > 0; ``helmholtz_radius(rmin)`` matches a density
        filter of radius `rmin` (or use `from_rmin`). An equivalent radius
        ``2 sqrt(3) r`` larger than the domain (`domain_size`) warns
        (`topopt._validate.TopoptWarning`).
    solver : {None, "petsc"}
        None: ``Kf`` factorized by SuperLU in this process. ``"petsc"``: the
        filter's PDE solved by CG across the MPI ranks (`topopt.fem.petsc`;
        uniform lattices), as the state solve of ``solver="petsc"`` problems.

    Attributes
    ----------
    basis : skfem.Basis
        The P1/Q1 basis of the nodal field.
    Kf, T : scipy.sparse.csr_matrix
        Filter matrix and P0-to-P1 mass matrix (nodes x elements).
    measures : numpy.ndarray
        Element areas/volumes.

    Examples
    --------
    >>> import numpy as np
    >>> from skfem import MeshQuad
    >>> from topopt import ad
    >>> from topopt.design import HelmholtzFilter
    >>> flt = HelmholtzFilter.from_rmin(MeshQuad().refined(3), rmin=0.2)
    >>> np.allclose(flt(np.ones(64)), 1.0)
    True
    >>> x, w = np.linspace(0, 1, 64), np.arange(64.0)
    >>> np.allclose(ad.gradient(lambda x: flt(x) @ w, x), flt.transpose(w))
    True
    """

    helmholtz_radius = staticmethod(helmholtz_radius)

    def __init__(self, mesh: Mesh, r: float, solver: str | None = None):
        self.r = check_positive("r", r, "Helmholtz filter length scale")
        if solver not in (None, "petsc"):
            raise ValueError(f"solver must be None (SuperLU on this process) or 'petsc' (the "
                             f"filter's PDE solved across the MPI ranks), got {solver!r}")
        self.n = _mesh(mesh)
        for mesh_type, p1, p0 in _ELEMENTS:
            if isinstance(mesh, mesh_type):
                break
        else:
            raise TypeError(
                f"HelmholtzFilter supports MeshTri, MeshQuad, MeshTet, MeshHex and "
                f"MeshLine meshes, got {type(mesh).__name__}")
        _warn_radius(mesh, 2.0 * np.sqrt(3.0) * self.r, f"2 sqrt(3) r (r = {self.r:g})")
        self.basis = Basis(mesh, p1())
        basis0 = self.basis.with_element(p0())  # same quadrature points
        self.Kf = _helmholtz.assemble(self.basis, r2=self.r ** 2).tocsr()
        self.T = _mass.assemble(basis0, self.basis).tocsr()
        self.measures = _measure.assemble(basis0)
        self.system = self._lu = None
        if solver == "petsc":
            self.system, self._factor = _distributed(self.basis, self.r)
        else:
            self._lu = spla.splu(self.Kf.tocsc())

    @classmethod
    def from_rmin(cls, mesh: Mesh, rmin: float, solver: str | None = None) -> "HelmholtzFilter":
        """The Helmholtz filter matching a density filter of radius `rmin`.

        Examples
        --------
        >>> from skfem import MeshTri
        >>> from topopt.design import HelmholtzFilter
        >>> flt = HelmholtzFilter.from_rmin(MeshTri().scaled(4.0), rmin=2 * 3 ** 0.5)
        >>> round(flt.r, 12)
        1.0

        A radius larger than the domain warns (a nearly uniform grey design):

        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     _ = HelmholtzFilter.from_rmin(MeshTri(), rmin=2.0)
        >>> print(caught[0].message)  # doctest: +ELLIPSIS
        filter radius 2 sqrt(3) r (r = 0.57735) = 2 is larger than the domain (...: 1)...
        """
        return cls(mesh, helmholtz_radius(rmin), solver)

    @property
    def at_quadrature(self) -> "QuadratureField":
        """The filtered nodal field at the quadrature points of `basis`.

        A linear map from element values to the ``(n_elements, n_points)``
        quadrature values of ``rho = Kf^-1 T x``, flattened element by element:
        for coefficients that vary inside an element (a projection applied to
        the smooth filtered field, as in the Gridap tutorial TopOptEMFocus).
        """
        if getattr(self, "_at_quadrature", None) is None:
            self._at_quadrature = QuadratureField(self)
        return self._at_quadrature

    def _solve(self, b, trans: str) -> np.ndarray:
        if self._lu is None:    # on PETSc; Kf is symmetric, so "T" is the same solve
            return self._factor.solve(b)
        if np.iscomplexobj(b):  # a real factorization solves real right-hand sides
            return self._lu.solve(b.real, trans) + 1j * self._lu.solve(b.imag, trans)
        return self._lu.solve(b, trans)

    def _forward(self, x):
        # F x = D^-1 T^T Kf^-1 T x
        return (self.T.T @ self._solve(self.T @ x, "N")) / self.measures

    def _transpose(self, y):
        # F^T y = T^T Kf^-T T D^-1 y
        return self.T.T @ self._solve(self.T @ (y / self.measures), "T")


def _distributed(basis: Basis, r: float):
    """``Kf`` as a `topopt.fem.LinearSystem` on ``solver="petsc"``, and its factor.

    ``Kf = sum_e K_e`` with one element's ``r^2 K + M`` (a uniform lattice:
    every element a translate of the first), no fixed dofs; CG to 1e-10 with
    PCMG on the lattice hierarchy, set up once.
    """
    from ..fem.petsc.filter import lattice_filter_system
    return lattice_filter_system(basis, _helmholtz, r2=r ** 2)
