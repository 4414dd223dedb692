"""Taylor-Hood spaces (P2/P1 on simplices, Q2/Q1 on quadrilaterals and hexahedra) and
velocity boundary data.

The state of every flow model is one vector ``w = [u, p]``: the velocity
``u`` (``basis_u.N`` values, scikit-fem's `ElementVector` ordering of the
quadratic element, which interleaves the components: ``u[dim * k + c]`` is
component ``c`` at scalar node ``k``; the mesh vertices are the first nodes)
followed by the pressure ``p`` (``basis_p.N`` values, P1 or Q1 at the mesh
vertices). Both bases live on the same mesh with the same quadrature, so
quadrature arrays of either multiply pointwise.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import skfem

__all__ = ["TaylorHood", "parabolic_inlet"]

_ELEMENTS = {skfem.MeshTri: (skfem.ElementTriP2, skfem.ElementTriP1),
             skfem.MeshTet: (skfem.ElementTetP2, skfem.ElementTetP1),
             skfem.MeshQuad: (skfem.ElementQuad2, skfem.ElementQuad1),
             skfem.MeshHex: (skfem.ElementHex2, skfem.ElementHex1)}
#: The meshes `TaylorHood` accepts, named in its refusal.
MESHES = "skfem.MeshTri, skfem.MeshTet, skfem.MeshQuad or skfem.MeshHex (linear cells)"


class TaylorHood:
    """The Taylor-Hood velocity-pressure pair: P2/P1 on simplices, Q2/Q1 on quadrilaterals.

    Triangles and tetrahedra carry continuous quadratic velocities and linear
    pressures (P2/P1); quadrilaterals and hexahedra their tensor-product
    analogues, biquadratic (9-node) velocities and bilinear pressures (Q2/Q1,
    the "mixed-order quadratic-linear elements" Borrvall & Petersson 2003
    used on their rectangles). Both pairs are inf-sup stable (Brezzi & Fortin
    1991, Sect. VI.6) with velocity errors O(h^3) in L2 and pressure O(h^2).

    Parameters
    ----------
    mesh : skfem.MeshTri, skfem.MeshTet, skfem.MeshQuad or skfem.MeshHex
        Linear triangles or bilinear quadrilaterals (2-D), tetrahedra or
        trilinear hexahedra (3-D).
    intorder : int
        Quadrature order shared by both bases (>= 1). On simplices 4
        integrates the P2 mass matrix exactly and the convective term of
        Navier-Stokes is of degree 5. On quadrilaterals and hexahedra the
        rule is Gauss per direction, exact for degree `intorder` in each
        variable: on parallelograms 4 (3 x 3 points) integrates the Q2 mass
        matrix, the viscous term and the Brinkman term of a bilinear design
        (degree 5) exactly, and the convective term ``((grad u) u).v`` has
        degree 6 in each variable (intorder 6, 4 x 4 points). The residual
        and its Jacobian use the same rule, so Newton is exact either way.

    Attributes
    ----------
    basis_u, basis_p : skfem.CellBasis
        Vector quadratic (P2, Q2) and scalar linear (P1, Q1) bases;
        ``basis_s`` is the scalar quadratic basis whose dofs number the
        velocity nodes.
    dim, nu, np_, n : int
        Space dimension, velocity dofs, pressure dofs, total.

    Examples
    --------
    >>> import skfem
    >>> from topopt.flow import TaylorHood
    >>> space = TaylorHood(skfem.MeshTri().refined(1))
    >>> space.nu, space.np_, space.n                    # 25 P2 nodes x 2 + 9 vertices
    (50, 9, 59)
    >>> quads = TaylorHood(skfem.MeshQuad().refined(1))
    >>> quads.nu, quads.np_                   # 9 vertices + 12 edges + 4 centres, x 2
    (50, 9)
    """

    def __init__(self, mesh, intorder: int = 4):
        kinds = [k for k in _ELEMENTS if type(mesh) is k]
        if not kinds:
            raise TypeError(f"mesh must be a {MESHES}, got {type(mesh).__name__}")
        if isinstance(intorder, bool) or not isinstance(intorder, (int, np.integer)) \
                or intorder < 1:
            raise ValueError(f"intorder must be an integer >= 1, got {intorder!r}")
        p2, p1 = _ELEMENTS[kinds[0]]
        self.mesh = mesh
        self.dim = mesh.dim()
        self.intorder = int(intorder)
        self.basis_u = skfem.Basis(mesh, skfem.ElementVector(p2()), intorder=self.intorder)
        self.basis_s = self.basis_u.with_element(p2())
        self.basis_p = self.basis_u.with_element(p1())
        self.nu, self.np_ = int(self.basis_u.N), int(self.basis_p.N)
        self.n = self.nu + self.np_

    def split(self, w):
        """``(u, p)``: the velocity as ``(n_nodes, dim)`` and the pressure, views of `w`."""
        self._check_state(w)
        return w[:self.nu].reshape(-1, self.dim), w[self.nu:]

    def join(self, u, p) -> np.ndarray:
        """The state ``w`` from a velocity ``(n_nodes, dim)`` (or flat) and a pressure."""
        return np.concatenate([np.ravel(u), np.ravel(p)])

    def _check_state(self, w):
        if np.shape(w) != (self.n,):
            raise ValueError(f"w has shape {np.shape(w)}; a state is ({self.n},): "
                             f"{self.nu} velocity then {self.np_} pressure values")

    @property
    def nodes(self) -> np.ndarray:
        """Coordinates of the velocity nodes (P2 or Q2), ``(dim, n_nodes)``."""
        return self.basis_s.doflocs

    def facets(self, where: Callable) -> np.ndarray:
        """Boundary facets whose midpoints satisfy ``where(x)`` (x of shape ``(dim, n)``)."""
        if not callable(where):
            raise TypeError(f"where must be a callable of the points (dim, n) -> bool (n,), "
                            f"got {type(where).__name__}")
        return self.mesh.facets_satisfying(where, boundaries_only=True)

    def velocity_dofs(self, facets, components=None) -> np.ndarray:
        """Velocity dofs (indices into ``w``) on `facets`, of the given `components`."""
        comps = self._components(components)
        nodes = self.basis_s.get_dofs(np.asarray(facets, dtype=np.int64)).flatten()
        return (self.dim * nodes[:, None] + comps[None, :]).ravel()

    def _components(self, components) -> np.ndarray:
        if components is None:
            return np.arange(self.dim)
        comps = np.atleast_1d(np.asarray(components))
        if comps.dtype.kind not in "iu" or comps.size == 0 or comps.min() < 0 \
                or comps.max() >= self.dim:
            raise ValueError(f"components must be integers in [0, {self.dim - 1}], "
                             f"got {components!r}")
        return np.unique(comps)

    def interpolate_velocity(self, value) -> np.ndarray:
        """Nodal values ``(nu,)`` of a velocity: a callable ``x (dim, n) -> (dim, n)``,
        a constant vector of length ``dim``, or a scalar (every component)."""
        x = self.nodes
        if callable(value):
            v = np.asarray(value(x), dtype=float)
            if v.shape != x.shape:
                raise ValueError(f"a velocity function must return shape {x.shape} for points "
                                 f"of shape {x.shape}, got {v.shape}")
        else:
            c = np.asarray(value, dtype=float)
            if c.shape not in ((), (self.dim,)):
                raise ValueError(f"a constant velocity is a scalar or has {self.dim} "
                                 f"components, got shape {c.shape}")
            v = np.broadcast_to(c.reshape(-1, 1), x.shape)
        return np.ascontiguousarray(v.T).ravel()

    def pressure_dof_near(self, point) -> int:
        """Index into ``w`` of the pressure dof (a vertex) closest to `point`."""
        pt = np.asarray(point, dtype=float)
        if pt.shape != (self.dim,):
            raise ValueError(f"point must have {self.dim} coordinates, got shape {pt.shape}")
        return self.nu + int(np.argmin(((self.mesh.p - pt[:, None]) ** 2).sum(axis=0)))


def parabolic_inlet(center, width: float, peak: float = 1.0, direction=None) -> Callable:
    """A parabolic (2-D) or paraboloid (3-D) velocity profile across an opening.

    ``u(x) = peak * (1 - (2 s / width)^2) * direction`` for ``s < width / 2``
    and 0 beyond, with ``s`` the distance of ``x`` from `center` (in 3-D the
    radius of a circular opening of diameter `width`, measured in the plane
    normal to `direction`; in 2-D the distance along the opening).

    Parameters
    ----------
    center : array_like, shape (dim,)
        Centre of the opening.
    width : float
        Width (2-D) or diameter (3-D) of the opening, > 0.
    peak : float
        Velocity at the centre (its mean is ``2/3 peak`` in 2-D, ``peak/2`` in 3-D).
    direction : array_like, shape (dim,), optional
        Flow direction (normalized here); default ``+x``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.flow import parabolic_inlet
    >>> g = parabolic_inlet([0.0, 0.5], 1.0, peak=2.0)
    >>> g(np.array([[0.0, 0.0, 0.0], [0.5, 0.25, 0.0]]))
    array([[2. , 1.5, 0. ],
           [0. , 0. , 0. ]])
    """
    c = np.asarray(center, dtype=float)
    if c.ndim != 1 or c.size not in (2, 3):
        raise ValueError(f"center must have 2 or 3 coordinates, got shape {c.shape}")
    if not np.isfinite(width) or width <= 0:
        raise ValueError(f"width must be > 0, got {width!r}")
    d = np.zeros_like(c) if direction is None else np.asarray(direction, dtype=float)
    if direction is None:
        d[0] = 1.0
    if d.shape != c.shape or not np.linalg.norm(d) > 0:
        raise ValueError(f"direction must be a nonzero vector of {c.size} components, "
                         f"got {direction!r}")
    d = d / np.linalg.norm(d)

    def profile(x):
        r = np.asarray(x, dtype=float) - c[:, None]
        r = r - d[:, None] * (d @ r)[None, :]          # the part across the flow
        s = np.sqrt((r ** 2).sum(axis=0))
        mag = peak * np.clip(1.0 - (2.0 * s / width) ** 2, 0.0, None)
        return d[:, None] * mag[None, :]
    return profile
