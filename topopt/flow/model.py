"""Stokes and Navier-Stokes flow with Brinkman penalization on Taylor-Hood elements.

A `FlowModel` is the residual of the nonlinear-solve contract
(``fem.solve_nonlinear(model, rho, model.initial_state())``): ``residual(w, rho, t=1)`` is
plain numpy traced by `topopt.ad` in the state ``w`` and the design
``rho``, ``jacobian(w, rho, t=1)`` its exact derivative in ``w`` as a
scipy.sparse matrix, and ``fixed`` the prescribed dofs (Dirichlet velocity
data, and a pinned pressure when no boundary is traction-free). The weak
form (test functions ``v``, ``s``), with ``alpha = alpha(rho)`` of
`brinkman.alpha`::

    R_u(v) = int mu grad u : grad v + alpha u.v + t rho_f ((grad u) u).v - p div v - f.v
    R_p(s) = - int s div u

Boundaries without velocity data are traction-free in this form's sense
(the "do-nothing" condition ``(mu grad u - p I) n = 0``: a straight outlet
of a fully developed flow has ``p = 0`` there). The Reynolds number enters
through ``rho_f`` and ``mu``: ``Re = rho_f U L / mu`` (either one scaled).
"""

from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sps
import skfem
from skfem.helpers import ddot, div, dot, grad, mul

from .. import ad
from .._validate import check_choice, check_range
from .assembly import BlockAssembler
from .brinkman import alpha as _alpha, alpha_parameters
from .fields import at_quadrature
from .spaces import TaylorHood

__all__ = ["FlowModel", "stokes", "navier_stokes"]


@skfem.BilinearForm
def _viscous(u, v, w):
    return ddot(grad(u), grad(v))


@skfem.BilinearForm
def _divergence(u, s, w):
    return s * div(u)


@skfem.BilinearForm
def _brinkman(u, v, w):
    return w["a"] * dot(u, v)


@skfem.BilinearForm
def _oseen_newton(u, v, w):
    """The derivative of ``((grad u) u).v`` at ``uk``: ``(grad du) uk + (grad uk) du``."""
    uk = w["uk"]
    return w["a"] * dot(u, v) + w["s"] * dot(mul(grad(u), uk) + mul(grad(uk), u), v)


class FlowModel:
    """Brinkman-penalized Stokes (``rho_f = 0``) or Navier-Stokes flow.

    Parameters
    ----------
    space : TaylorHood
        The P2/P1 or Q2/Q1 spaces (mesh, quadrature).
    mu : float
        Dynamic viscosity, > 0.
    rho_f : float
        Fluid density, >= 0; 0 is Stokes flow (no convective term).
    alpha_min, alpha_max, q : float
        The interpolation `brinkman.alpha` (default ``alpha_max = 2.5e4 mu``,
        Borrvall & Petersson's ``2.5 mu / 0.01^2``).
    dirichlet : sequence of tuples
        ``(where, value)`` or ``(where, value, components)``: the velocity on
        the boundary facets selected by ``where(x) -> bool`` (``x`` the facet
        midpoints, ``(dim, n)``); ``value`` is ``None`` or 0 (no-slip), a
        constant vector, or a callable ``x (dim, n) -> (dim, n)`` such as
        `parabolic_inlet`; ``components`` (default all) restricts it to some
        velocity components (a symmetry or slip wall). Later entries win
        where facets share nodes.
    body_force : callable, optional
        ``f(x)`` at the quadrature points, ``x (dim, nel, nq) -> (dim, nel, nq)``.
    pin_pressure : "auto", bool or point
        Fix the pressure at one vertex to 0 (added to `fixed`). ``"auto"``
        pins when every boundary facet has all velocity components
        prescribed (the pressure is then defined up to a constant); a point
        pins the vertex nearest to it (default the first vertex). The state
        keeps its layout: no multiplier is added, so compare pressures up to a
        constant (e.g. subtract the mean) or through differences.
    assembly : {"kernels", "forms"}
        How `jacobian` assembles its design- and state-dependent part:
        einsum element matrices into a CSR pattern fixed at the first call
        (`assembly.BlockAssembler`, the default, about 5x faster) or
        scikit-fem ``BilinearForm`` objects with ``alpha`` at the quadrature points
        (the reference; equal to round-off).

    Attributes
    ----------
    fixed : numpy.ndarray
        Prescribed dofs (indices into ``w``), sorted.
    K : scipy.sparse.csr_matrix
        The constant part: viscous and pressure-divergence blocks.
    A : scipy.sparse.csr_matrix
        Its viscous block ``mu int grad u : grad v`` (``nu x nu``).

    Examples
    --------
    Poiseuille flow in a unit channel: parabolic inflow, no-slip walls,
    traction-free outlet; the pressure drop is ``12 mu U L / h^2`` with the
    mean velocity ``U = 2/3``:

    >>> import numpy as np, skfem, scipy.sparse.linalg as sla
    >>> from topopt.flow import TaylorHood, stokes, parabolic_inlet
    >>> mesh = skfem.MeshTri.init_tensor(np.linspace(0, 2, 9), np.linspace(0, 1, 5))
    >>> model = stokes(mesh, dirichlet=[(lambda x: (x[1] < 1e-9) | (x[1] > 1 - 1e-9), 0.0),
    ...                                 (lambda x: x[0] < 1e-9, parabolic_inlet([0, 0.5], 1.0))])
    >>> rho = np.ones(mesh.p.shape[1])
    >>> w = model.initial_state()
    >>> free = np.setdiff1d(np.arange(model.n), model.fixed)
    >>> r = model.residual(w, rho)
    >>> w[free] -= sla.spsolve(model.jacobian(w, rho)[free][:, free].tocsc(), r[free])
    >>> p = model.space.split(w)[1]
    >>> round(float(p[0]), 10)                  # 12 * 1 * (2/3) * 2 / 1
    16.0
    """

    def __init__(self, space: TaylorHood, *, mu: float = 1.0, rho_f: float = 0.0,
                 alpha_min: float = 0.0, alpha_max: float | None = None, q: float = 0.1,
                 dirichlet=(), body_force=None, pin_pressure="auto",
                 assembly: str = "kernels"):
        if not isinstance(space, TaylorHood):
            raise TypeError(f"space must be a topopt.flow.TaylorHood, got {type(space).__name__}")
        self.space = space
        self.mu = check_range("mu", mu, 0.0, None, lo_open=True, what="dynamic viscosity")
        self.rho_f = check_range("rho_f", rho_f, 0.0, None, what="fluid density; 0 is Stokes")
        self.alpha_min, self.alpha_max, self.q = alpha_parameters(
            alpha_min, 2.5e4 * self.mu if alpha_max is None else alpha_max, q)
        self.n, self.nu = space.n, space.nu
        self.assembly = check_choice("assembly", assembly, ("kernels", "forms"))
        self._shared = {}                 # the CSR pattern, shared by with_parameters' copies
        self._precompute()
        self._boundary(dirichlet, pin_pressure)
        self.F = np.zeros(self.n)
        if body_force is not None:
            self.F[:self.nu] = self._body_force(body_force)

    # ------------------------------------------------------------ set-up
    def _precompute(self):
        s, dim = self.space, self.space.dim
        bs = s.basis_s
        nb = bs.Nbfun
        self.phi = np.stack([np.asarray(bs.basis[a][0]) for a in range(nb)])        # (a, e, q)
        self.dphi = np.stack([np.asarray(bs.basis[a][0].grad) for a in range(nb)])  # (a, d, e, q)
        self.dx = bs.dx                                                              # (e, q)
        self.dofs_u = (dim * bs.element_dofs[:, None, :]
                       + np.arange(dim)[None, :, None])                       # (a, c, e)
        self.A = (self.mu * _viscous.assemble(s.basis_u)).tocsr()
        B = _divergence.assemble(s.basis_u, s.basis_p)                       # (np, nu)
        self.K = sps.bmat([[self.A, -B.T], [-B, None]], format="csr")

    def _boundary(self, dirichlet, pin_pressure):
        s = self.space
        self.w_bc = np.zeros(self.n)
        if isinstance(dirichlet, tuple) and dirichlet and callable(dirichlet[0]):
            raise TypeError("dirichlet is a sequence of (where, value[, components]) tuples; "
                            "wrap a single one in a list")
        covered = np.zeros(s.mesh.facets.shape[1], dtype=bool)
        fixed = []
        for k, entry in enumerate(dirichlet):
            if not isinstance(entry, (tuple, list)) or len(entry) not in (2, 3):
                raise ValueError(f"dirichlet[{k}] must be (where, value) or (where, value, "
                                 f"components), got {entry!r}")
            where, value, comps = (*entry, None) if len(entry) == 2 else entry
            facets = s.facets(where)
            dofs = s.velocity_dofs(facets, comps)
            values = s.interpolate_velocity(0.0 if value is None else value)
            self.w_bc[dofs] = values[dofs]
            fixed.append(dofs)
            if comps is None or len(s._components(comps)) == s.dim:
                covered[facets] = True
        if isinstance(pin_pressure, str):
            if pin_pressure != "auto":
                raise ValueError(f"pin_pressure must be 'auto', True, False or a point, "
                                 f"got {pin_pressure!r}")
            pin_pressure = bool(covered[s.mesh.boundary_facets()].all())
        if pin_pressure is True:
            fixed.append([s.nu])
        elif pin_pressure is not False and pin_pressure is not None:
            fixed.append([s.pressure_dof_near(pin_pressure)])
        self.pinned = bool(pin_pressure is not False and pin_pressure is not None)
        self.fixed = np.unique(np.concatenate([np.asarray(f, dtype=np.int64) for f in fixed])
                               if fixed else np.zeros(0, np.int64))

    def _body_force(self, f):
        x = np.asarray(self.space.basis_u.global_coordinates())
        fx = np.asarray(f(x), dtype=float)
        if fx.shape != x.shape:
            raise ValueError(f"body_force must return shape {x.shape} for points of shape "
                             f"{x.shape}, got {fx.shape}")
        return skfem.LinearForm(lambda v, w: dot(w["f"], v)).assemble(self.space.basis_u, f=fx)

    def with_parameters(self, **params) -> "FlowModel":
        """A copy with other ``alpha_min``, ``alpha_max``, ``q`` or ``rho_f`` (sharing the
        mesh data): continuation in ``q`` or the Reynolds number.

        Examples
        --------
        >>> import skfem
        >>> from topopt.flow import TaylorHood, FlowModel
        >>> m = FlowModel(TaylorHood(skfem.MeshTri()), q=0.01).with_parameters(q=0.1)
        >>> m.q
        0.1
        """
        other = copy.copy(self)
        bad = set(params) - {"alpha_min", "alpha_max", "q", "rho_f"}
        if bad:
            raise TypeError(f"with_parameters: unknown {sorted(bad)}; accepted alpha_min, "
                            "alpha_max, q, rho_f")
        a = {k: params.get(k, getattr(self, k)) for k in ("alpha_min", "alpha_max", "q")}
        other.alpha_min, other.alpha_max, other.q = alpha_parameters(**a)
        if "rho_f" in params:
            other.rho_f = check_range("rho_f", params["rho_f"], 0.0, None, what="fluid density")
        return other

    @property
    def linear(self) -> bool:
        """True for Stokes flow (``rho_f = 0``): the residual is affine in ``w``, so
        `topopt.fem.solve_nonlinear` reuses its Newton factorization for the adjoint."""
        return self.rho_f == 0

    # ------------------------------------------------------------ state
    def initial_state(self) -> np.ndarray:
        """A state with the Dirichlet data at `fixed` and zeros elsewhere (the solver's ``u0``)."""
        return self.w_bc.copy()

    def alpha_at_quadrature(self, rho):
        """``alpha(rho)`` at the quadrature points, ``(nel, nq)``, traced."""
        return _alpha(at_quadrature(self.space.basis_p, rho),
                      self.alpha_min, self.alpha_max, self.q)

    def velocity_at_quadrature(self, w):
        """``(u, grad u)`` at the quadrature points, ``(dim, e, q)`` and ``(dim, dim, e, q)``
        (``grad u[c, d] = du_c / dx_d``), traced."""
        U = w[self.dofs_u]
        return (np.einsum("ace,aeq->ceq", U, self.phi),
                np.einsum("ace,adeq->cdeq", U, self.dphi))

    def _t(self, t):
        return check_range("t", t, 0.0, 1.0, what="continuation parameter of the convection")

    # ------------------------------------------------------------ contract
    def residual(self, w, rho, t: float = 1.0):
        """The residual ``R(w, rho)``, shape ``(n,)``; traced in `w` and `rho`.

        `t` in [0, 1] scales the convective term (continuation; ignored when
        ``rho_f = 0``). Rows at `fixed` are not equations (the solver drops them).
        """
        self.space._check_state(w)
        t = self._t(t)
        R = self.K @ w - self.F
        U = w[self.dofs_u]
        uq = np.einsum("ace,aeq->ceq", U, self.phi)
        f = uq * (self.alpha_at_quadrature(rho) * self.dx)
        if self.rho_f > 0 and t > 0:
            gq = np.einsum("ace,adeq->cdeq", U, self.dphi)
            f = f + np.einsum("cdeq,deq->ceq", gq, uq) * ((t * self.rho_f) * self.dx)
        return ad.scatter_add(R, self.dofs_u, np.einsum("ceq,aeq->ace", f, self.phi))

    def jacobian(self, w, rho, t: float = 1.0) -> sps.csr_matrix:
        """``dR/dw`` at plain `w`, `rho` as a scipy.sparse CSR matrix (Newton's and the
        adjoint's matrix; exact, the same quadrature as `residual`). It stores no exact
        zeros: UMFPACK takes them for entries, and with them its factor of the Q2/Q1
        double pipe on 96 x 96 squares solved to a relative residual of 5.8 (4e-15 without)."""
        self.space._check_state(w)
        t = self._t(t)
        w, rho = ad.value(w), ad.value(rho)
        a = np.asarray(self.alpha_at_quadrature(rho))
        J = self._jacobian_forms(w, a, t) if self.assembly == "forms" else \
            self._jacobian_kernels(w, a, t)
        J.eliminate_zeros()
        return J

    def _jacobian_kernels(self, w, a, t):
        if "assembler" not in self._shared:
            self._shared["assembler"] = BlockAssembler(self.K, self.dofs_u)
        asm = self._shared["assembler"]
        diag = np.einsum("aeq,beq,eq->abe", self.phi, self.phi, a * self.dx, optimize=True)
        if not (self.rho_f > 0 and t > 0):
            return asm.assemble(diagonal=diag)
        uq, gq = self.velocity_at_quadrature(w)
        s = (t * self.rho_f) * self.dx
        diag += np.einsum("aeq,deq,bdeq->abe", self.phi, uq * s, self.dphi, optimize=True)
        full = np.einsum("aeq,beq,cdeq->acbde", self.phi, self.phi, gq * s, optimize=True)
        return asm.assemble(diagonal=diag, full=full)

    def _jacobian_forms(self, w, a, t):
        bu = self.space.basis_u
        if self.rho_f > 0 and t > 0:
            M = _oseen_newton.assemble(bu, a=a, s=t * self.rho_f, uk=bu.interpolate(w[:self.nu]))
        else:
            M = _brinkman.assemble(bu, a=a)
        M.resize((self.n, self.n))
        return (self.K + M).tocsr()


def stokes(mesh, *, mu: float = 1.0, intorder: int = 4, **kwargs) -> FlowModel:
    """Brinkman-penalized Stokes flow (`FlowModel`) on triangles or tetrahedra (P2/P1),
    quadrilaterals or hexahedra (Q2/Q1); `intorder` 4 integrates every term exactly on
    affine cells (`TaylorHood`).

    Examples
    --------
    >>> import skfem
    >>> from topopt.flow import stokes
    >>> model = stokes(skfem.MeshTri(), dirichlet=[(lambda x: x[0] > -1, 0.0)])
    >>> model.pinned, model.n                       # all walls: the pressure is pinned
    (True, 22)
    """
    return FlowModel(TaylorHood(mesh, intorder), mu=mu, rho_f=0.0, **kwargs)


def navier_stokes(mesh, *, mu: float = 1.0, rho_f: float = 1.0, intorder: int | None = None,
                  **kwargs) -> FlowModel:
    """Brinkman-penalized steady Navier-Stokes flow (`FlowModel` with ``rho_f > 0``).

    ``Re = rho_f U L / mu``: with ``rho_f = 1`` and unit velocity and length
    scales, ``mu = 1 / Re``. The default quadrature integrates the convective
    term exactly on affine cells: order 5 for P2 velocities on simplices, 6
    (4 Gauss points per direction) for Q2 velocities on quadrilaterals and
    hexahedra (degree 6 in each variable, `TaylorHood`).

    Examples
    --------
    >>> import skfem
    >>> from topopt.flow import navier_stokes
    >>> navier_stokes(skfem.MeshTri(), mu=0.01).rho_f
    1.0
    """
    if not rho_f > 0:
        raise ValueError(f"rho_f must be > 0 for Navier-Stokes (0 is Stokes), got {rho_f!r}")
    if intorder is None:
        intorder = 5 if mesh.t.shape[0] == mesh.dim() + 1 else 6
    return FlowModel(TaylorHood(mesh, intorder), mu=mu, rho_f=rho_f, **kwargs)
