"""Steady forced convection: the temperature in a computed flow, SUPG-stabilized, traced.

The temperature ``T`` solves, one-way coupled to a velocity ``u`` and a
design ``rho`` (1 fluid, 0 solid),

    rho_c (u . grad T) s + k(rho) grad T . grad s = Q(rho) s     (for all s),

Galerkin with continuous P1 or P2 elements plus the streamline-upwind
Petrov-Galerkin term of Brooks & Hughes (1982, Comput. Methods Appl. Mech.
Engrg. 32:199) ``sum_K int_K tau (u . grad s) r(T)`` with the strong
residual ``r = rho_c u . grad T - div(k grad T) - Q``. The residual
`Convection.residual` is element-level numpy traced by `topopt.ad` in the
temperature, the velocity and the design, every mode; `Convection.jacobian`
is ``dR/dT`` as a scipy.sparse matrix, so the model fits
``topopt.fem.solve_nonlinear(model, p, T0)`` with ``p = np.concatenate([u,
rho])`` (the residual is linear in ``T``: Newton converges in one step).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import skfem

from .. import ad
from .fields import at_quadrature

__all__ = ["Convection"]

_ELEMENTS = {(1, 1): skfem.ElementLineP1, (1, 2): skfem.ElementLineP2,
             (2, 1): skfem.ElementTriP1, (2, 2): skfem.ElementTriP2,
             (3, 1): skfem.ElementTetP1, (3, 2): skfem.ElementTetP2}
_TAUS = ("shakib", "optimal")


def _reference_hessians(elem, X) -> np.ndarray:
    """Hessians in reference coordinates of each local shape function, ``(nb, dim, dim, nq)``.

    Central differences of the element's exact gradient: exact (to rounding)
    for shape functions of degree <= 2, whose gradients are affine.
    """
    dim, eps = X.shape[0], 1e-3
    out = np.zeros((elem.doflocs.shape[0], dim, dim, X.shape[1]))
    for i in range(out.shape[0]):
        for k in range(dim):
            e = np.zeros((dim, 1))
            e[k] = eps
            out[i, :, k] = (elem.lbasis(X + e, i)[1] - elem.lbasis(X - e, i)[1]) / (2 * eps)
    return out


def _optimal_ratio(s):
    """``g = (coth Pe - 1/Pe) / Pe`` as a function of ``s = Pe^2``: smooth at 0, traced.

    The series ``1/3 - s/45 + 2 s^2/945 - s^3/4725`` below ``Pe = 0.1``
    (truncation < 1e-12 relative), the closed form above; the closed form
    is evaluated at a safe argument so no branch's derivative is nan.
    """
    small = np.asarray(ad.value(s)) < 1e-2
    pe, s = np.sqrt(np.where(small, 1.0, s)), np.where(small, s, 0.0)
    series = 1.0 / 3.0 + s * (-1.0 / 45.0 + s * (2.0 / 945.0 - s / 4725.0))
    return np.where(small, series, (1.0 / np.tanh(pe) - 1.0 / pe) / pe)


class Convection:
    """Convection-diffusion of a temperature in a given flow: residual, Jacobian, responses.

    Parameters
    ----------
    mesh : skfem.MeshTri, skfem.MeshTet or skfem.MeshLine
        The flow's mesh (affine simplices; intervals for 1-D checks).
    fixed : callable
        Predicate ``x -> bool array`` (``x`` of shape ``(dim, n)``) selecting
        the boundary facets (by their midpoints) of prescribed temperature;
        the values are taken from ``T0`` by the solver (`fixed` attribute).
        Elsewhere the boundary is insulated (zero flux). ``None``: none.
    order : {1, 2}
        Degree of the temperature element, P2 by default: the same degree as
        the Taylor-Hood velocity (the convective term uses it at full
        accuracy and the wall heat flux converges at second order); P1 is
        the cheaper choice for designs, and nodally exact in 1-D with
        ``tau="optimal"``.
    rho_c : float
        Volumetric heat capacity of the fluid (positive).
    k : tuple of float
        ``(k_solid, k_fluid)``, conductivities (positive).
    q_k : float
        RAMP parameter of the conductivity (Stolpe & Svanberg 2001, as used by
        Alexandersen et al. 2014), ``k(rho) = k_s + (k_f - k_s) rho / (1 +
        q_k (1 - rho))``; ``q_k = 0`` interpolates linearly (>= 0).
    source : tuple
        ``(Q_solid, Q_fluid)``, heat source per volume, each a float or a
        callable ``x -> array`` of the quadrature coordinates ``(dim, nelems,
        nq)``; ``Q(rho) = Q_s (1 - rho) + Q_f rho``.
    tau : {"shakib", "optimal"}
        SUPG parameter with ``alpha = k(rho)/rho_c``, ``h = h_K / order``
        and ``h_K = (d! |K|)^(1/d)`` (the leg of a right isosceles cell: ``sqrt(2
        |K|)`` on triangles), ``Pe = |u| h / (2 alpha)``:
        ``"shakib"`` (Shakib, Hughes & Johan 1991) ``tau = ((2|u|/h)^2 +
        9 (4 alpha/h^2)^2)^(-1/2)``; ``"optimal"``, ``tau = h/(2|u|) (coth Pe
        - 1/Pe)``, nodally exact for P1 in 1-D (Brooks & Hughes 1982) and on
        the interior rows of a diagonal-split square grid.
        Both are smooth in ``u`` (functions of ``|u|^2``), so every
        derivative exists, also at ``u = 0`` (``tau = h^2/(12 alpha)``).
    supg : bool
        Add the SUPG term (default); ``False``: plain Galerkin.
    intorder : int, optional
        Quadrature degree; by default ``3 order``, exact for the Galerkin
        terms (the convective term ``(u . grad T) s`` has degree ``2 + 2 order
        - 1``).

    Attributes
    ----------
    basis, basis_u : skfem.Basis
        The temperature's basis and a P2 vector basis (the velocity's dof
        layout; quadrature degree >= 4 so that ``basis_u.project`` is exact
        for quadratics).
    n, nu : int
        Temperature and velocity dof counts.
    fixed : ndarray of int
        The prescribed temperature dofs (the `topopt.fem.solve_nonlinear`
        contract: their values come from ``T0``, their residual rows are
        ignored).
    linear : bool
        True: the residual is affine in ``T``, so `topopt.fem.solve_nonlinear`
        takes one Newton step and reuses its factorization for the adjoint.

    Notes
    -----
    ``p = np.concatenate([u, rho])``: ``u`` the velocity dofs of
    ``skfem.ElementVector(ElementTriP2())`` (``ElementTetP2`` in 3-D) on
    `mesh` (the Taylor-Hood layout ``w = [u, p]`` of `topopt.flow`; take
    ``w[:model.nu]``), ``rho`` one value per element (P0) or per vertex
    (P1), as in `at_quadrature`. The strong residual drops ``grad k .
    grad T``, which vanishes for a P0 design (and ``k Laplacian T``
    vanishes for P1 temperatures).

    Examples
    --------
    A channel with parabolic flow, cold inflow (T = 0 at x = 0) and hot
    walls (T = 1) solved by one linear solve:

    >>> import numpy as np, skfem
    >>> from topopt import fem
    >>> from topopt.flow import Convection, convective_flux
    >>> mesh = skfem.MeshTri.init_tensor(np.linspace(0, 2, 9), np.linspace(0, 1, 5))
    >>> model = Convection(mesh, fixed=lambda x: (x[0] < 1e-9) | (x[1] < 1e-9)
    ...                    | (x[1] > 1 - 1e-9), k=(1.0, 0.05))
    >>> u = model.basis_u.project(lambda x: np.stack([6 * x[1] * (1 - x[1]), 0 * x[0]]))
    >>> p = np.concatenate([u, np.ones(mesh.t.shape[1])])
    >>> T0 = np.where(model.basis.doflocs[0] < 1e-9, 0.0, 1.0)
    >>> T = fem.solve_nonlinear(model, p, T0)
    >>> flux = convective_flux(model, lambda x: x[0] > 2 - 1e-9)   # outlet
    >>> round(float(flux(T, p)), 4)
    0.5537
    """

    #: The residual is affine in ``T`` (`topopt.fem.solve_nonlinear` reuses its factor).
    linear = True

    def __init__(self, mesh, fixed=None, *, order: int = 2, rho_c: float = 1.0,
                 k=(1.0, 1.0), q_k: float = 0.0, source=(0.0, 0.0), tau: str = "shakib",
                 supg: bool = True, intorder: int | None = None):
        dim = mesh.dim()
        if (dim, order) not in _ELEMENTS or mesh.t.shape[0] != dim + 1:
            raise ValueError(f"Convection needs a MeshTri, MeshTet or MeshLine and order 1 "
                             f"or 2, got {type(mesh).__name__} and order={order!r}")
        if tau not in _TAUS:
            raise ValueError(f"tau must be one of {_TAUS}, got {tau!r}")
        if not (np.isscalar(rho_c) and rho_c > 0):
            raise ValueError(f"rho_c must be a positive number, got {rho_c!r}")
        if len(k) != 2 or not all(np.isscalar(c) and c > 0 for c in k):
            raise ValueError(f"k must be (k_solid, k_fluid), two positive numbers, got {k!r}")
        if not (np.isscalar(q_k) and q_k >= 0):
            raise ValueError(f"q_k must be a number >= 0, got {q_k!r}")
        if len(source) != 2:
            raise ValueError(f"source must be (Q_solid, Q_fluid), got {source!r}")
        self.mesh, self.order, self.rho_c, self.k, self.q_k = mesh, order, float(rho_c), \
            tuple(map(float, k)), float(q_k)
        self.tau, self.supg = tau, bool(supg)
        self.intorder = 3 * order if intorder is None else int(intorder)
        self.element = _ELEMENTS[dim, order]()
        self.basis = skfem.Basis(mesh, self.element, intorder=self.intorder)
        elem_u = skfem.ElementVector(_ELEMENTS[dim, 2]())
        self.basis_u = skfem.Basis(mesh, elem_u, intorder=max(4, self.intorder))
        bu = skfem.Basis(mesh, elem_u, quadrature=self.basis.quadrature)
        self.nu, self.n = self.basis_u.N, self.basis.N
        self.fixed = (np.zeros(0, int) if fixed is None else
                      self.basis.get_dofs(mesh.facets_satisfying(fixed, True)).all())
        b = self.basis
        self._phi = np.stack([np.asarray(f[0]) for f in b.basis])      # (nb, ne, nq)
        self._dphi = np.stack([f[0].grad for f in b.basis])            # (nb, d, ne, nq)
        self._phiu = np.stack([np.asarray(f[0]) for f in bu.basis])    # (nbu, d, ne, nq)
        self._lap = self._laplacians() if order == 2 else None        # (nb, ne, nq)
        x = np.asarray(b.global_coordinates())
        self._Q = tuple(np.broadcast_to(q(x) if callable(q) else float(q), b.dx.shape)
                        for q in source)
        volume = np.sum(b.dx, axis=1)
        h = (np.prod(np.arange(1, dim + 1)) * volume) ** (1.0 / dim)  # (dim! |K|)^(1/dim)
        self._h = (h / order)[:, None]
        rows = np.repeat(b.element_dofs[:, None, :], b.element_dofs.shape[0], 1)
        self._ij = (rows.ravel(), np.swapaxes(rows, 0, 1).ravel())

    def _laplacians(self) -> np.ndarray:
        """Laplacian of each P2 shape function at the quadrature points (affine cells)."""
        b = self.basis
        inv = b.mapping.invDF(b.X)                                     # (d, d, ne, nq)
        metric = np.einsum("kjeq,ljeq->kleq", inv, inv)
        href = _reference_hessians(self.element, b.X)                  # (nb, d, d, nq)
        return np.einsum("aklq,kleq->aeq", href, metric)

    def split(self, p):
        """``(u, rho)`` from ``p = concatenate([u, rho])``, checking the lengths."""
        nrho = np.shape(p)[0] - self.nu if np.ndim(p) == 1 else -1
        if nrho not in (self.mesh.t.shape[1], self.mesh.p.shape[1]):
            raise ValueError(f"p has shape {np.shape(p)}; give concatenate([u, rho]) with "
                             f"{self.nu} velocity dofs and rho per element "
                             f"({self.mesh.t.shape[1]}) or per vertex ({self.mesh.p.shape[1]})")
        return p[:self.nu], p[self.nu:]

    def conductivity(self, rho_q):
        """RAMP conductivity ``k_s + (k_f - k_s) rho / (1 + q_k (1 - rho))`` (traced)."""
        ks, kf = self.k
        return ks + (kf - ks) * rho_q / (1.0 + self.q_k * (1.0 - rho_q))

    def heat_source(self, rho_q):
        """The heat source ``Q_s (1 - rho) + Q_f rho`` at the quadrature points, ``rho_q``
        of shape ``(ne, nq)`` (traced)."""
        return self._Q[0] * (1.0 - rho_q) + self._Q[1] * rho_q

    def _coefficients(self, p):
        """Velocity, conductivity, source and tau at the quadrature points (traced)."""
        u, rho = self.split(p)
        uq = np.einsum("ae,adeq->deq", u[self.basis_u.element_dofs], self._phiu)
        rho_q = at_quadrature(self.basis, rho)
        kq = self.conductivity(rho_q)
        Qq = self.heat_source(rho_q)
        if not self.supg:
            return uq, kq, Qq, None
        h, alpha = self._h, kq / self.rho_c
        uu = np.sum(uq * uq, axis=0)
        if self.tau == "shakib":
            tau = (4.0 * uu / h ** 2 + 144.0 * alpha ** 2 / h ** 4) ** -0.5
        else:
            tau = h ** 2 / (4.0 * alpha) * _optimal_ratio(uu * h ** 2 / (4.0 * alpha ** 2))
        return uq, kq, Qq, tau

    def residual(self, T, p, t=None):
        """``R(T, u, rho)``, shape ``(n,)``; traced in `T` and `p` (`t` is ignored).

        Rows of fixed dofs are the plain residual; the solver replaces them.
        """
        T = self._check_T(T)
        uq, kq, Qq, tau = self._coefficients(p)
        dx = self.basis.dx
        Te = T[self.basis.element_dofs]
        gradT = np.einsum("ae,adeq->deq", Te, self._dphi)
        conv = self.rho_c * np.sum(uq * gradT, axis=0)
        Re = np.einsum("eq,aeq->ae", dx * (conv - Qq), self._phi) \
            + np.einsum("eq,deq,adeq->ae", dx * kq, gradT, self._dphi)
        if tau is not None:
            strong = conv - Qq
            if self._lap is not None:
                strong = strong - kq * np.einsum("ae,aeq->eq", Te, self._lap)
            Re = Re + np.einsum("eq,deq,adeq->ae", dx * tau * strong, uq, self._dphi)
        return ad.scatter_add(np.zeros(self.n), self.basis.element_dofs, Re)

    def jacobian(self, T, p, t=None):
        """``dR/dT`` at plain arrays, a scipy.sparse CSR matrix ``(n, n)``."""
        uq, kq, _, tau = self._coefficients(np.asarray(p, float))
        dx = self.basis.dx
        ugrad = np.einsum("deq,adeq->aeq", uq, self._dphi)            # u . grad phi_a
        Ke = np.einsum("eq,aeq,beq->abe", dx * self.rho_c, self._phi, ugrad) \
            + np.einsum("eq,adeq,bdeq->abe", dx * kq, self._dphi, self._dphi)
        if tau is not None:
            strong = self.rho_c * ugrad
            if self._lap is not None:
                strong = strong - kq * self._lap
            Ke = Ke + np.einsum("eq,aeq,beq->abe", dx * tau, ugrad, strong)
        return sp.coo_matrix((Ke.ravel(), self._ij), shape=(self.n, self.n)).tocsr()

    def _check_T(self, T):
        if np.shape(T) != (self.n,):
            raise ValueError(f"T has shape {np.shape(T)}; the temperature has {self.n} dofs")
        return T
