"""Density filters on scikit-fem meshes: classic (top88) and Helmholtz PDE.

A filter is a linear map ``x -> F x`` of element values (one per column of
``mesh.t``). Calling a filter runs the primitive `apply_filter`, whose
pullback is the primitive `apply_filter_transpose` and vice versa, so a
gradient through a filter costs one application of ``F^T`` and second
derivatives (`ad.hvp`) go through it too.

Examples
--------
>>> import numpy as np
>>> from skfem import MeshQuad
>>> from topopt import ad
>>> from topopt.design.filters import DensityFilter
>>> mesh = MeshQuad.init_tensor(np.arange(4.0), np.arange(2.0))
>>> flt = DensityFilter(mesh, rmin=1.5)
>>> flt(np.array([1.0, 0.0, 0.0]))
array([0.75, 0.2 , 0.  ])
>>> ad.gradient(lambda x: flt(x)[0], np.zeros(3))
array([0.75, 0.25, 0.  ])
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sps
import scipy.sparse.linalg as spla
from numpy.typing import ArrayLike
from skfem import (Basis, BilinearForm, ElementHex0, ElementHex1, ElementLineP0,
                   ElementLineP1, ElementQuad0, ElementQuad1, ElementTetP0,
                   ElementTetP1, ElementTriP0, ElementTriP1, LinearForm, Mesh,
                   MeshHex1, MeshLine1, MeshQuad1, MeshTet1, MeshTri1)
from skfem.helpers import dot, grad

from .. import ad
from .._validate import check_positive, check_type, warn
from ..fem.mesh import check_mesh

__all__ = ["LinearFilter", "DensityFilter", "HelmholtzFilter", "QuadratureField", "helmholtz_radius",
           "apply_filter", "apply_filter_transpose", "domain_size"]


def _mesh(mesh) -> int:
    """The number of elements of `mesh`, checked by `topopt.fem.mesh.check_mesh`."""
    return int(check_mesh(check_type("mesh", mesh, Mesh, "a scikit-fem Mesh")).t.shape[1])


def domain_size(mesh: Mesh) -> float:
    """Largest side of the bounding box of the mesh's nodes.

    Examples
    --------
    >>> from skfem import MeshQuad
    >>> from topopt.design.filters import domain_size
    >>> domain_size(MeshQuad.init_tensor([0.0, 3.0, 6.0], [0.0, 2.0]))
    6.0
    """
    return float(np.max(np.ptp(mesh.p, axis=1)))


def _warn_radius(mesh: Mesh, rmin: float, label: str) -> None:
    """`TopoptWarning` when the (equivalent) radius `rmin` exceeds the domain size."""
    size = domain_size(mesh)
    if rmin > size * (1.0 + 1e-12):       # equal sizes (up to rounding) do not warn
        warn(f"filter radius {label} = {rmin:g} is larger than the domain (largest side of "
             f"the mesh's bounding box: {size:g}): the filter averages the whole design "
             "into a nearly uniform grey")


class LinearFilter:
    """Base class of the linear filters: validation and the primitive pair.

    Subclasses set ``n`` (number of elements) and implement ``_forward(x)``
    and ``_transpose(y)`` on plain 1-D arrays (real or complex); calls,
    validation of the design vector and differentiation come from here.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> from topopt.design.filters import LinearFilter
    >>> class Shift(LinearFilter):  # y_i = x_(i+1), cyclic
    ...     n = 3
    ...     def _forward(self, x):
    ...         return np.roll(x, -1)
    ...     def _transpose(self, y):
    ...         return np.roll(y, 1)
    >>> ad.gradient(lambda x: Shift()(x) @ np.array([1.0, 2.0, 3.0]), np.zeros(3))
    array([3., 1., 2.])
    """

    n: int
    seconds: float = 0.0      # time spent applying F and F^T (for benchmarks)

    def __call__(self, x: ArrayLike) -> np.ndarray:
        """Filtered element values ``F x``; differentiable in `x`."""
        return apply_filter(self, x)

    def transpose(self, y: ArrayLike) -> np.ndarray:
        """``F^T y``, the pullback of the filter; differentiable in `y`."""
        return apply_filter_transpose(self, y)

    @property
    def operator(self) -> spla.LinearOperator:
        """The filter as a scipy ``LinearOperator`` (``matvec`` F, ``rmatvec`` F^T)."""
        return spla.LinearOperator((self.n_out, self.n), matvec=self._forward,
                                   rmatvec=self._transpose, dtype=float)

    @property
    def n_out(self) -> int:
        """Length of the output (``n`` for element-to-element filters)."""
        return self.n

    def _check(self, x, name: str, nan: bool) -> np.ndarray:
        x = np.asarray(x)
        if x.dtype.kind not in "iufc":
            raise TypeError(f"{name} must be a numeric array, got dtype {x.dtype}")
        size = self.n if name == "x" else self.n_out
        if x.shape != (size,):
            what = ("mesh.t.shape[1]", "one value per element") if size == self.n else \
                ("the output size", "one value per output point")
            raise ValueError(
                f"{name} has shape {x.shape}: expected {what[0]} = {size} entries ({what[1]})")
        if nan and not np.isfinite(x).all():
            raise ValueError(f"{name} contains NaN or inf (at element "
                             f"{np.flatnonzero(~np.isfinite(x))[:5]}...)")
        return x if x.dtype.kind in "fc" else x.astype(float)

    def _forward(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _transpose(self, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError


# ------------------------------------------------------- the primitive pair

def _check_filter(flt) -> None:
    if not isinstance(flt, LinearFilter):
        raise TypeError(f"flt must be a LinearFilter (DensityFilter, HelmholtzFilter, ...), "
                        f"got {type(flt).__name__}")


@ad.primitive
def apply_filter(flt: LinearFilter, x: ArrayLike) -> np.ndarray:
    """``F x`` for a linear filter `flt`: the primitive behind ``flt(x)``.

    Its pullback is `apply_filter_transpose`, its forward rule itself.

    Examples
    --------
    >>> import numpy as np
    >>> from skfem import MeshTri
    >>> from topopt import ad
    >>> from topopt.design.filters import HelmholtzFilter, apply_filter
    >>> flt = HelmholtzFilter(MeshTri().refined(1), r=0.1)
    >>> x = np.linspace(0.0, 1.0, 8)
    >>> report = ad.check_rule(apply_filter, flt, x)
    >>> report["arg 1 reverse"] < 1e-8
    True
    """
    _check_filter(flt)
    t0 = time.perf_counter()
    y = flt._forward(flt._check(x, "x", nan=True))
    flt.seconds += time.perf_counter() - t0
    return y


@ad.primitive
def apply_filter_transpose(flt: LinearFilter, y: ArrayLike) -> np.ndarray:
    """``F^T y`` for a linear filter `flt` (the pullback of `apply_filter`).

    Its pullback is `apply_filter`, its forward rule itself.

    Examples
    --------
    >>> import numpy as np
    >>> from skfem import MeshQuad
    >>> from topopt.design.filters import DensityFilter, apply_filter, apply_filter_transpose
    >>> flt = DensityFilter(MeshQuad().refined(2), rmin=0.3)
    >>> x, y = np.arange(16.0), np.cos(np.arange(16.0))
    >>> bool(np.isclose(apply_filter(flt, x) @ y, x @ apply_filter_transpose(flt, y)))
    True
    """
    _check_filter(flt)
    t0 = time.perf_counter()
    x = flt._transpose(flt._check(y, "y", nan=False))
    flt.seconds += time.perf_counter() - t0
    return x


@ad.rrule(apply_filter)
def apply_filter_rrule(flt, x):
    def apply_filter_pullback(ybar):
        return None, apply_filter_transpose(flt, ybar)
    return apply_filter(flt, x), apply_filter_pullback


@ad.frule(apply_filter)
def apply_filter_frule(primals, tangents):
    flt, x = primals
    xdot = tangents[1]
    return apply_filter(flt, x), None if xdot is None else apply_filter(flt, xdot)


@ad.rrule(apply_filter_transpose)
def apply_filter_transpose_rrule(flt, y):
    def apply_filter_transpose_pullback(xbar):
        return None, apply_filter(flt, xbar)
    return apply_filter_transpose(flt, y), apply_filter_transpose_pullback


@ad.frule(apply_filter_transpose)
def apply_filter_transpose_frule(primals, tangents):
    flt, y = primals
    ydot = tangents[1]
    return (apply_filter_transpose(flt, y),
            None if ydot is None else apply_filter_transpose(flt, ydot))


# ------------------------------------------------------------ density filter

class DensityFilter(LinearFilter):
    """Classic density filter: weighted average over element centroids.

    ``x_tilde_e = sum_i H_ei x_i / sum_i H_ei`` (the density filter of
    top88, Andreassen et al. 2011, Sect. 2) with weights
    ``H_ei = max(0, rmin - |c_e - c_i|)`` (top88 eq. (6)) between
    element centroids ``c`` (the mean of an element's vertices).

    Parameters
    ----------
    mesh : skfem.Mesh
        Any scikit-fem mesh; one design value per element.
    rmin : float
        Filter radius, > 0, in the mesh's length unit. A radius larger than
        the domain (`domain_size`) warns (`topopt._validate.TopoptWarning`).

    Attributes
    ----------
    H : scipy.sparse.csr_matrix
        The weights ``H_ei``.
    Hs : numpy.ndarray
        Their row sums.

    Examples
    --------
    >>> import numpy as np
    >>> from skfem import MeshQuad
    >>> from topopt import ad
    >>> from topopt.design.filters import DensityFilter
    >>> mesh = MeshQuad.init_tensor(np.arange(5.0), np.arange(3.0))
    >>> flt = DensityFilter(mesh, rmin=1.5)
    >>> np.allclose(flt(np.ones(8)), 1.0)
    True
    >>> x, w = np.linspace(0, 1, 8), np.arange(8.0)
    >>> g = ad.gradient(lambda x: flt(x) @ w, x)
    >>> np.allclose(g, flt.matrix.T @ w)
    True
    """

    def __init__(self, mesh: Mesh, rmin: float):
        self.rmin = check_positive("rmin", rmin, "filter radius")
        self.n = _mesh(mesh)
        _warn_radius(mesh, self.rmin, "rmin")
        from scipy.spatial import cKDTree     # here: scipy.spatial stays out of `import topopt`
        centroids = mesh.p[:, mesh.t].mean(axis=1).T
        tree = cKDTree(centroids)
        pairs = tree.sparse_distance_matrix(tree, self.rmin, output_type="ndarray")
        w = self.rmin - pairs["v"]  # top88 eq. (6); pairs within rmin, self included
        keep = w > 0
        self.H = sps.csr_matrix((w[keep], (pairs["i"][keep], pairs["j"][keep])),
                                shape=(self.n, self.n))
        self.Hs = np.asarray(self.H.sum(axis=1)).ravel()

    @property
    def matrix(self) -> sps.csr_matrix:
        """The filter as a sparse matrix ``diag(1 / Hs) H``."""
        return sps.csr_matrix(sps.diags(1.0 / self.Hs) @ self.H)

    def _forward(self, x):
        return (self.H @ x) / self.Hs  # top88 density filter: H x / Hs

    def _transpose(self, y):
        # top88 chain rule of the density filter: d x_tilde_e / d x_i = H_ei / Hs_e
        return self.H.T @ (y / self.Hs)


# ----------------------------------------------------------- Helmholtz filter

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
    >>> from topopt.design.filters import helmholtz_radius
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
    >>> from topopt.design.filters import HelmholtzFilter
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
        >>> from topopt.design.filters import HelmholtzFilter
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
    from ..fem.models import _local, _translates
    from ..fem.system import LinearSystem
    mesh = basis.mesh
    if not _translates(mesh):
        raise ValueError("HelmholtzFilter(solver='petsc') needs a uniform quadrilateral or "
                         "hexahedral lattice (fem.rectangle, fem.box); use solver=None")
    Ke = _local(_helmholtz, basis, True, r2=r ** 2)
    system = LinearSystem(basis.element_dofs.T, Ke, basis.N, np.zeros(0, dtype=np.int64),
                          solver="petsc", geometry=(mesh.p, basis.nodal_dofs),
                          solver_options={"rtol": 1e-10})
    return system, system.factorize(np.ones(mesh.t.shape[1]))


class QuadratureField(LinearFilter):
    """``x -> N(x_q) Kf^-1 T x``: a Helmholtz-filtered field at quadrature points.

    Built by `HelmholtzFilter.at_quadrature`; its transpose reuses the
    filter's factorization. Output order: element by element, points within.

    Examples
    --------
    >>> import numpy as np
    >>> from skfem import MeshQuad
    >>> from topopt.design.filters import HelmholtzFilter
    >>> q = HelmholtzFilter(MeshQuad().refined(2), r=0.1).at_quadrature
    >>> q.n_out, bool(np.allclose(q(np.full(16, 0.3)), 0.3))
    (144, True)
    """

    def __init__(self, flt: HelmholtzFilter):
        self.flt, self.n = flt, flt.n
        basis = flt.basis
        n_el, n_q = basis.nelems, basis.X.shape[-1]
        rows = np.arange(n_el * n_q).reshape(n_el, n_q)
        blocks = [sps.csr_matrix((np.asarray(basis.basis[i][0]).ravel(),
                                  (rows.ravel(), np.repeat(basis.element_dofs[i], n_q))),
                                 shape=(n_el * n_q, basis.N)) for i in range(basis.Nbfun)]
        self.Q = sum(blocks[1:], blocks[0]).tocsr()
        self.points_per_element = n_q

    @property
    def n_out(self) -> int:
        return self.Q.shape[0]

    def _forward(self, x):
        return self.Q @ self.flt._solve(self.flt.T @ x, "N")

    def _transpose(self, y):
        return self.flt.T.T @ self.flt._solve(self.Q.T @ y, "T")
