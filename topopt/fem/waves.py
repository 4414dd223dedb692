"""Time-harmonic scalar waves (2-D, H_z polarisation) with a PML, on scikit-fem.

``-div(1/eps grad u) - k^2 u = f`` in a cell periodic in ``x``, with
stretched-coordinate perfectly matched layers (PML) at the bottom and top
(optionally also at the left and right) and ``u = 0`` on the outer
boundary. With ``d/dx -> (1/s_x) d/dx``, ``d/dy -> (1/s_y) d/dy`` and
``s = 1 + i sigma / k`` (Oskooi & Johnson 2011), multiplying by ``s_x s_y``
gives the complex-symmetric weak form

``a(u, v) = int (s_y/s_x u_x v_x + s_x/s_y u_y v_y) / eps - k^2 s_x s_y u v``

and the load ``int s_x s_y f v``,

``sigma = sigma_0 (depth / d)^2`` with ``sigma_0 = -3/4 ln(R) / d`` for a
round-trip reflection ``R`` in the continuum limit (the Gridap tutorial
TopOptEMFocus). Air (``eps = 1``) everywhere is the constant part ``K0``;
in the design elements ``1/eps`` differs from 1 by ``a_e = 1/eps_e - 1``,
so ``K(a) = K0 + sum_e a_e K_e`` with ``K_e = int_e grad u . grad v`` real:
the system fits `LinearSystem` and is solved and differentiated by
`topopt.fem.solve` (complex ``a``, complex symmetric non-Hermitian ``K``).

Periodicity identifies the nodes of the right edge with those of the left
edge: element dofs are renumbered and ``K0`` is reduced as ``R^T K0 R``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps
import skfem
from skfem.helpers import dot, grad

from .._validate import (check_bool, check_finite_array, check_indices, check_positive,
                         check_range, check_real_array)
from .mesh import check_mesh, element_centroids
from ..ad import value as ad_value
from .system import LinearSystem
from .adjoint import solve

__all__ = ["graded_axis", "WaveModel"]


def graded_axis(points, sizes, growth: float = 1.15) -> np.ndarray:
    """Node coordinates through `points` with local element `sizes`.

    Between consecutive control points the spacing grows geometrically by at
    most `growth` per element from the smaller size toward the larger one.

    Examples
    --------
    >>> from topopt.fem.waves import graded_axis
    >>> graded_axis([0, 10], [1, 1]).tolist() == list(range(11))
    True
    """
    points = check_finite_array("points", points)
    sizes = check_finite_array("sizes", sizes)
    growth = check_range("growth", growth, 1.0, what="ratio of neighbouring element sizes")
    if points.ndim != 1 or points.size < 2 or np.any(np.diff(points) <= 0):
        raise ValueError("points must be increasing, at least two")
    if sizes.shape != points.shape or np.any(sizes <= 0):
        raise ValueError("sizes must be positive, one per point")
    out = [points[:1]]
    for a, b, ha, hb in zip(points[:-1], points[1:], sizes[:-1], sizes[1:]):
        length = b - a
        x, h, steps = 0.0, [], []
        grow_from_a = ha <= hb
        h0, h1 = (ha, hb) if grow_from_a else (hb, ha)
        while x < length - 1e-9:
            size = min(h0 * growth ** len(steps), h1)
            steps.append(size)
            x += size
        steps = np.array(steps) * length / x
        if not grow_from_a:
            steps = steps[::-1]
        out.append(a + np.cumsum(steps))
    nodes = np.concatenate(out)
    nodes[-1] = points[-1]
    return nodes


class WaveModel:
    """Scalar wave problem with PML in ``y`` (and ``x``), periodic in ``x``, design elements.

    Parameters
    ----------
    mesh : scikit-fem quadrilateral or triangle mesh of the cell, including the PML
    k : float
        Free-space wavenumber ``2 pi / lambda``.
    pml : (y_bottom, y_top, d)
        The physical region is ``y_bottom <= y <= y_top``; the PML of
        thickness `d` lies outside it, up to the mesh boundary.
    pml_x : (x_left, x_right), optional
        Also absorb at the sides: PML of the same profile for ``x < x_left``
        and ``x > x_right``. A scatterer is then isolated instead of one of a
        periodic row; a plane wave travelling in ``y`` is unaffected.
    design : int array
        Elements whose ``1/eps`` is designed (outside the PML).
    R : float
        Round-trip reflection of the PML profile in the continuum limit.
    periodic : bool
        Identify the left and right edges.
    design_quadrature : (X, W), optional
        Reference quadrature points and weights: then the coefficient ``a``
        has one value per design element and point (element by element),
        ``K_{e,q} = w_q grad N_i . grad N_j``, so ``1/eps`` may vary inside
        an element (e.g. a projection of a smooth filtered field).
    solver : str
        Direct solver; ``"auto"`` takes UMFPACK when cvxopt is installed.

    Examples
    --------
    A plane wave from a line source in an empty cell is ``u = i/(2k) e^{ik|y - y_s|}``:

    >>> import numpy as np
    >>> from topopt.fem import WaveModel, rectangle
    >>> mesh = rectangle(2, 200, h=5.0)
    >>> mesh = mesh.translated((0.0, -200.0))
    >>> k = 2 * np.pi / 200
    >>> model = WaveModel(mesh, k, pml=(-100.0, 700.0, 100.0), design=np.array([], int))
    >>> u = model.full(model.solve(np.zeros(0), model.line_source(300.0)))
    >>> y = model.mesh.p[1]
    >>> inside = (y > 0) & (y < 600)
    >>> exact = 1j / (2 * k) * np.exp(1j * k * np.abs(y - 300.0))
    >>> bool(np.max(np.abs(u[inside] - exact[inside])) < 0.02 * np.max(np.abs(exact)))
    True
    """

    def __init__(self, mesh: skfem.Mesh, k: float, pml, design, R: float = 1e-10,
                 periodic: bool = True, solver: str = "auto", design_quadrature=None,
                 pml_x=None):
        k = check_positive("k", k, "the wavenumber")
        y_bottom, y_top, d = check_finite_array("pml", pml, (3,))
        if not (d > 0 and y_bottom < y_top):
            raise ValueError("pml must be (y_bottom, y_top, d) with y_bottom < y_top, d > 0")
        R = check_range("R", R, 0.0, 1.0, lo_open=True, hi_open=True,
                        what="the PML's reflection coefficient")
        periodic = check_bool("periodic", periodic)
        if pml_x is not None:
            x_left, x_right = check_finite_array("pml_x", pml_x, (2,))
            if not x_left < x_right:
                raise ValueError("pml_x must be (x_left, x_right) with x_left < x_right")
            pml_x = (x_left, x_right)
        check_mesh(mesh)
        self.mesh, self.k, self.pml, self.R = mesh, float(k), (y_bottom, y_top, d), R
        self.pml_x = pml_x
        n_el = mesh.t.shape[1]
        self.design = check_indices("design", design, n_el, "elements").ravel()
        c = element_centroids(mesh)
        self.sigma0 = -0.75 * np.log(R) / d
        cy, cx = c[self.design, 1], c[self.design, 0]
        if np.any(self.stretch(cy) != 1) or np.any(self.stretch_x(cx) != 1):
            raise ValueError("design elements must lie outside the PML")
        element = mesh.elem()
        self.basis = skfem.Basis(mesh, element, intorder=4)
        self._reduce(periodic)
        K0 = self._air_form().assemble(self.basis)
        K0 = (self.Rmat.T @ K0 @ self.Rmat).tocsr()
        if self.design.size and design_quadrature is not None:
            db = skfem.Basis(mesh, element, elements=self.design, quadrature=design_quadrature)
            g = np.stack([np.asarray(db.basis[i][0].grad) for i in range(db.Nbfun)])
            n_q = db.dx.shape[1]
            Ke = np.einsum("idep,jdep,ep->epij", g, g, db.dx).reshape(-1, db.Nbfun, db.Nbfun)
            edofs = np.repeat(self.reduced[db.element_dofs.T], n_q, axis=0)
        elif self.design.size:
            db = skfem.Basis(mesh, element, elements=self.design)
            Ke = skfem.BilinearForm(lambda u, v, w: dot(grad(u), grad(v))).elemental(db)
            Ke, edofs = Ke.tolocal(), self.reduced[db.element_dofs.T]
        else:
            Ke, edofs = np.zeros((1, 4, 4)), np.zeros((0, 4), dtype=np.int64)
            Ke = Ke[0]
        boundary = self.basis.get_dofs(lambda x: np.isclose(x[1], mesh.p[1].min())
                                       | np.isclose(x[1], mesh.p[1].max())).all()
        self.system = LinearSystem(edofs, Ke, self.n, np.unique(self.reduced[boundary]),
                                   K0=K0, symmetric=True, solver=solver)

    # ---------------------------------------------------------------- setup
    def stretch(self, y) -> np.ndarray:
        """PML factor ``s_y = 1 + i sigma(y) / k`` (1 outside the PML)."""
        return self._stretch(y, *self.pml[:2])

    def stretch_x(self, x) -> np.ndarray:
        """PML factor ``s_x`` of the side layers (1 everywhere without `pml_x`)."""
        if self.pml_x is None:
            return np.ones(np.shape(x), dtype=complex)
        return self._stretch(x, *self.pml_x)

    def _stretch(self, t, lo, hi) -> np.ndarray:
        return 1.0 + 1j * self._sigma(t, lo, hi) / self.k

    def _sigma(self, t, lo, hi) -> np.ndarray:
        """The PML profile ``sigma = sigma_0 (depth / d)^2`` outside ``[lo, hi]`` (0 inside)."""
        depth = np.maximum(np.maximum(lo - t, t - hi), 0.0)
        return self.sigma0 * (depth / self.pml[2]) ** 2

    def _air_form(self) -> skfem.BilinearForm:
        k2 = self.k ** 2

        def air(u, v, w):
            sx, sy = self.stretch_x(w.x[0]), self.stretch(w.x[1])
            du, dv = grad(u), grad(v)
            return (sy / sx * du[0] * dv[0] + sx / sy * du[1] * dv[1]
                    - k2 * sx * sy * u * v)

        return skfem.BilinearForm(air, dtype=complex)

    def _reduce(self, periodic: bool) -> None:
        p = self.mesh.p
        n = p.shape[1]
        partner = np.arange(n)
        if periodic:
            x0, x1 = p[0].min(), p[0].max()
            left = np.flatnonzero(np.isclose(p[0], x0))
            right = np.flatnonzero(np.isclose(p[0], x1))
            order_l, order_r = left[np.argsort(p[1, left])], right[np.argsort(p[1, right])]
            if order_l.size != order_r.size or not np.allclose(p[1, order_l], p[1, order_r]):
                raise ValueError("a periodic cell needs matching nodes on its left and right edges")
            partner[order_r] = order_l
        _, self.reduced = np.unique(partner, return_inverse=True)
        self.n = int(self.reduced.max()) + 1
        self.Rmat = sps.csr_matrix((np.ones(n), (np.arange(n), self.reduced)), shape=(n, self.n))

    # ---------------------------------------------------------------- use
    def line_source(self, y_s: float) -> np.ndarray:
        """Load ``int_{y = y_s} s_x v``: a plane wave source line (reduced dofs)."""
        facets = self.mesh.facets_satisfying(lambda x: np.isclose(x[1], y_s))
        if facets.size == 0:
            raise ValueError(f"no mesh facets lie on the line y = {y_s}")
        fb = skfem.FacetBasis(self.mesh, self.mesh.elem(), facets=facets)
        b = skfem.LinearForm(lambda v, w: self.stretch_x(w.x[0]) * v,
                             dtype=complex).assemble(fb)
        return self.Rmat.T @ (b if self.pml_x else b.real)

    def focus_matrix(self, elements, x0, width: float = 1.0) -> sps.csr_matrix:
        """``O = int w(x) grad u . grad v`` over `elements`, ``w`` a normalized Gaussian at `x0`.

        ``Re(u^H O u)`` is the intensity ``|grad u|^2`` at the focus (Gridap tutorial).
        """
        x0 = check_real_array("x0", x0, allow_bool=True)
        eb = skfem.Basis(self.mesh, self.mesh.elem(), elements=np.asarray(elements), intorder=6)

        def weighted(u, v, w):
            r2 = (w.x[0] - x0[0]) ** 2 + (w.x[1] - x0[1]) ** 2
            return np.exp(-r2 / (2 * width ** 2)) / (2 * np.pi * width ** 2) * dot(grad(u), grad(v))

        O = skfem.BilinearForm(weighted).assemble(eb)
        return (self.Rmat.T @ O @ self.Rmat).tocsr()

    def solve(self, a, b, k=None):
        """Field for ``1/eps - 1 = a`` on the design elements; differentiable in `a`, `b`.

        `k` (optional, > 0): solve at that wavenumber instead of the model's,
        differentiable in `k` too (a traced `k` may come from a random
        wavelength): the air and PML terms enter as coefficients of fixed
        pieces, ``K(a, k) = L + sum_e a_e K_e - k^2 sum_e M_e + sum_q [s_y/s_x
        X_q + s_x/s_y Y_q - k^2 s_x s_y M_q]`` (``L`` the Laplacian outside the
        PML, ``q`` the quadrature points of the PML elements, ``s = 1 + i
        sigma / k``), the same discretization as the model's ``K0`` (equal to
        rounding at ``k = self.k``). Periodic cells only (`pml_x` makes the
        source depend on ``k``).

        Examples
        --------
        >>> import numpy as np
        >>> from topopt import ad
        >>> from topopt.fem import WaveModel, rectangle
        >>> mesh = rectangle(2, 100, h=5.0).translated((0.0, -100.0))
        >>> model = WaveModel(mesh, 2 * np.pi / 200, pml=(-50.0, 350.0, 50.0),
        ...                   design=np.array([], int))
        >>> b = model.line_source(150.0)
        >>> u0, u1 = model.solve(np.zeros(0), b), model.solve(np.zeros(0), b, k=model.k)
        >>> bool(np.allclose(u0, u1, rtol=1e-12, atol=1e-14 * np.abs(u0).max()))
        True
        >>> E = lambda k: np.abs(model.solve(np.zeros(0), b, k=k)[40]) ** 2
        >>> g = float(ad.gradient(E, model.k)); h = 1e-7
        >>> bool(abs(g - (E(model.k + h) - E(model.k - h)) / (2 * h)) < 1e-5 * abs(g))
        True
        """
        if k is None:
            return solve(self.system, a, b)
        kv = ad_value(k)
        if np.ndim(kv) != 0 or not np.isfinite(kv) or kv <= 0:
            raise ValueError(f"k must be one positive wavenumber, got {kv!r}")
        if self.pml_x is not None:
            raise ValueError("k= needs a periodic cell without side PML (pml_x=None): "
                             "the side layers make the source depend on k")
        system, sig_y, n_air = _wavenumber_pieces(self)
        s_y, k2 = 1.0 + 1j * sig_y / k, k * k                     # s_x = 1: no side PML
        coef = [a, -k2 * np.ones(n_air), s_y, 1.0 / s_y, -k2 * s_y]
        return solve(system, np.concatenate(coef), b)

    def wavenumber_system(self) -> LinearSystem:
        """The `LinearSystem` of `solve`'s ``k=`` form (built on first use; its ``counts``)."""
        return _wavenumber_pieces(self)[0]

    def full(self, u) -> np.ndarray:
        """Nodal values on the whole mesh from reduced (periodic) dofs."""
        return self.Rmat @ np.asarray(u)

    def element_gradients(self, u) -> np.ndarray:
        """``grad u`` at the element centroids, shape ``(n_el, 2)``."""
        ub = self.full(u)
        cb = skfem.Basis(self.mesh, self.mesh.elem(), quadrature=(np.full((2, 1), 0.5),
                                                                   np.ones(1)))
        if isinstance(self.mesh, skfem.MeshTri):
            cb = skfem.Basis(self.mesh, self.mesh.elem(),
                             quadrature=(np.full((2, 1), 1 / 3), np.array([0.5])))
        g = cb.interpolate(ub).grad
        return g[:, :, 0].T


def _wavenumber_pieces(self: WaveModel):
    """The `LinearSystem` of `solve`'s ``k=`` form, ``sigma_y`` at its PML points, the air count."""
    if getattr(self, "_kparts", None) is not None:
        return self._kparts
    b = self.basis
    x = np.asarray(b.global_coordinates())                         # (2, n_el, n_q)
    sig_y = self._sigma(x[1], *self.pml[:2])
    pml = np.flatnonzero(np.any(sig_y > 0, axis=1))
    air = np.setdiff1d(np.arange(self.mesh.t.shape[1]), pml)
    phi = np.stack([np.asarray(b.basis[i][0]) for i in range(b.Nbfun)])
    g = np.stack([np.asarray(b.basis[i][0].grad) for i in range(b.Nbfun)])
    dofs = self.reduced[b.element_dofs.T]                     # (n_el, n_loc)
    n_q = b.dx.shape[1]

    def pieces(u, v, els):                                    # (n_els * n_q, i, j)
        return np.einsum("iep,jep,ep->epij", u[:, els], v[:, els],
                         b.dx[els]).reshape(-1, b.Nbfun, b.Nbfun)

    mass_air = np.einsum("iep,jep,ep->eij", phi[:, air], phi[:, air], b.dx[air])
    lap = np.einsum("idep,jdep,ep->eij", g[:, :, air], g[:, :, air], b.dx[air])
    rows = np.repeat(dofs[air], b.Nbfun, axis=1).ravel()
    cols = np.tile(dofs[air], (1, b.Nbfun)).ravel()
    L = sps.csr_matrix((lap.ravel().astype(complex), (rows, cols)), shape=(self.n,) * 2)
    d = self.system
    Kd = np.broadcast_to(d.Ke, (d.n_el,) + d.Ke.shape[-2:]) if d.uniform else d.Ke
    Ke = np.concatenate([Kd, mass_air, pieces(g[:, 0], g[:, 0], pml),
                         pieces(g[:, 1], g[:, 1], pml), pieces(phi, phi, pml)])
    q_dofs = np.repeat(dofs[pml], n_q, axis=0)
    edofs = np.concatenate([d.element_dofs, dofs[air], q_dofs, q_dofs, q_dofs])
    system = LinearSystem(edofs, Ke, self.n, d.fixed, K0=L, symmetric=True,
                          solver=d.requested_solver)
    self._kparts = (system, sig_y[pml].ravel(), air.size)
    return self._kparts
