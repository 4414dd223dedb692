"""topopt.flow.thermal: forced convection of a temperature in a given flow (SUPG), traced.

References: the fully developed Nusselt number between isothermal parallel
plates, 7.5407 (Shah & London 1978, Laminar Flow Forced Convection in Ducts,
ch. VI); its axial-conduction correction at a finite Peclet number from the
1-D eigenproblem solved here by Chebyshev collocation; the 1-D
advection-diffusion boundary layer ``(exp(Pe x) - 1) / (exp(Pe) - 1)`` and
the nodal exactness of SUPG with the optimal tau for P1 in 1-D (Brooks &
Hughes 1982, Comput. Methods Appl. Mech. Engrg. 32:199, sec. 3).
"""

import os
import sys

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse.linalg
import skfem

from topopt import ad, fem

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts", "crosscheck"))
import thermal_nusselt  # noqa: E402
from topopt.flow import Convection, convective_flux, mean_temperature

NU_T = 7.5407          # Shah & London (1978): isothermal plates, Pe -> infinity, D_h = 2H


def _velocity(model, fun):
    """The P2 velocity dofs of ``fun(x) -> (dim, ...)`` (exact for quadratics)."""
    return model.basis_u.project(fun)


def _chebyshev(n):
    """Chebyshev points on [-1, 1] and the differentiation matrix (Trefethen 2000, cheb.m)."""
    x = np.cos(np.pi * np.arange(n + 1) / n)
    c = np.hstack([2.0, np.ones(n - 1), 2.0]) * (-1.0) ** np.arange(n + 1)
    dx = x[:, None] - x[None, :]
    D = np.outer(c, 1.0 / c) / (dx + np.eye(n + 1))
    return D - np.diag(D.sum(axis=1)), x


def developed_nusselt(pe, n=48):
    """Fully developed Nu between isothermal plates with axial conduction, gap H = 1.

    ``T = f(y) exp(-lam x)`` in ``u T_x = alpha (T_xx + T_yy)`` with ``u =
    6 y (1 - y)``, ``alpha = 2 / pe``: the quadratic eigenproblem ``alpha
    f'' + (alpha lam^2 + lam u) f = 0``, ``f(0) = f(1) = 0``, its smallest
    positive ``lam``; ``Nu = 2 f'(0) / f_bulk``. Tends to 7.5407 as
    ``pe -> infinity``.
    """
    D, s = _chebyshev(n)
    y, D = (s + 1.0) / 2.0, 2.0 * D
    alpha, u, inner = 2.0 / pe, 6.0 * y * (1.0 - y), slice(1, n)
    A, B = alpha * (D @ D)[inner, inner], np.diag(u[inner])
    eye, zero = np.eye(n - 1), np.zeros((n - 1, n - 1))
    lam, V = scipy.linalg.eig(np.block([[zero, eye], [-A, -B]]),
                              np.block([[eye, zero], [zero, alpha * eye]]))
    real = np.isfinite(lam) & (lam.real > 0) & (np.abs(lam.imag) < 1e-8)
    j = np.argmin(np.where(real, lam.real, np.inf))
    f = np.zeros(n + 1)
    f[inner] = V[:n - 1, j].real
    cu = np.polynomial.chebyshev.chebfit(s, u * f, n)
    bulk = np.diff(np.polynomial.chebyshev.chebval([-1.0, 1.0],
                                                   np.polynomial.chebyshev.chebint(cu)))[0] / 2
    return 2.0 * abs((D @ f)[0] / bulk)             # index 0: the wall y = 1


def test_developed_nusselt_reference():
    # the eigenproblem reproduces Shah & London's 7.5407 without axial conduction
    assert developed_nusselt(1e7) == pytest.approx(NU_T, abs=1e-4)


def test_nusselt_parallel_plates():
    """Nu = q_w D_h / (k (T_w - T_b)) in the developed region of a channel with an entrance.

    Gap H = 1, length 5, Poiseuille velocity of mean 1, Pe = U D_h / alpha
    = 50; T = 1 at the inlet, 0 on both walls, insulated outlet. P2
    temperature on 80 x 16 squares (each split into two triangles).
    Measured between x = 3 and 4.5, past the thermal entrance and before the
    outlet's boundary layer: the local wall flux ``k dT/dy`` at the wall's
    quadrature points and the mixing-cup temperature ``int u T dy / int u
    dy`` (12-point Gauss) on the vertical line through each.
    """
    pe = 50.0
    nu, _ = thermal_nusselt.nusselt(80, 16, 2, pe=pe)   # the mesh study's function
    reference = developed_nusselt(pe)              # 7.5457: axial conduction at Pe = 50
    assert reference == pytest.approx(7.5457, abs=1e-4)
    assert np.all(np.abs(nu / NU_T - 1) < 0.01)   # the acceptance: 7.54 within 1 %
    assert np.all(np.abs(nu / reference - 1) < 2e-3)   # measured: 7.5508 to 7.5522


def _boundary_layer(mesh, tau, supg=True, order=1):
    """u = (1, 0), alpha = 0.01 (Pe = 100 over the unit length), T = exact on the boundary
    facets `mesh` has at x = 0 and x = 1 (1-D) or on all of its boundary (2-D)."""
    alpha = 0.01
    model = Convection(mesh, fixed=lambda x: np.ones(x.shape[1], bool), order=order,
                       k=(alpha, alpha), tau=tau, supg=supg)
    u = _velocity(model, lambda x: np.stack([1 + 0 * x[0]] + [0 * x[0]] * (mesh.dim() - 1)))
    x = model.basis.doflocs[0]
    exact = np.expm1(x / alpha) / np.expm1(1 / alpha)
    T = fem.solve_nonlinear(model, np.concatenate([u, np.ones(mesh.t.shape[1])]),
                    np.where(np.isin(np.arange(model.n), model.fixed), exact, 0.5))
    return T, exact


LINE = skfem.MeshLine(np.linspace(0, 1, 21))
# squares of side 1/20 split along one diagonal: the interior rows of an x-only field
# reduce to the 1-D stencils (an insulated edge's rows do not: their consistent mass
# lies unevenly left and right), so the exact profile is prescribed on the whole boundary
SQUARES = skfem.MeshTri.init_tensor(np.linspace(0, 1, 21), np.linspace(0, 0.2, 5))


@pytest.mark.parametrize("mesh", [LINE, SQUARES])
def test_boundary_layer_nodally_exact_with_optimal_tau(mesh):
    # cell Peclet 2.5: SUPG with tau = h/(2|u|)(coth Pe - 1/Pe) is nodally exact for P1
    T, exact = _boundary_layer(mesh, "optimal")
    assert np.max(np.abs(T - exact)) < 1e-13
    shakib, _ = _boundary_layer(mesh, "shakib")     # close to the optimal tau, not equal
    assert 1e-3 < np.max(np.abs(shakib - exact)) < 0.02 and shakib.min() > -1e-4
    galerkin, _ = _boundary_layer(mesh, "optimal", supg=False)     # wiggles
    assert galerkin.min() < -0.1


def test_boundary_layer_p2_converges():
    errors = [np.max(np.abs(np.subtract(*_boundary_layer(skfem.MeshLine(np.linspace(0, 1, n)),
                                                         "shakib", order=2))))
              for n in (21, 41, 81)]
    assert errors[2] < errors[1] < errors[0] < 0.01


@pytest.mark.parametrize("tau", ["shakib", "optimal"])
@pytest.mark.parametrize("mesh,order", [(skfem.MeshTri.init_sqsymmetric().refined(1), 1),
                                        (skfem.MeshTri.init_sqsymmetric().refined(1), 2),
                                        (skfem.MeshTet().refined(1), 2)])
def test_supg_consistency_exact_solution(mesh, order, tau):
    """A T of the element's degree with its manufactured source is reproduced to round-off.

    ``u`` a P2 field with ``|u| ~ 1`` and cell Peclet > 1, so tau and the
    strong residual (with ``k Laplacian T`` for P2) take part.
    """
    dim = mesh.dim()
    a = np.arange(1.0, dim + 1)
    if order == 1:
        exact, lap = (lambda x: np.einsum("d,d...->...", a, x)), 0.0
        grad = (lambda x: np.broadcast_to(a.reshape((dim,) + (1,) * (x.ndim - 1)), x.shape))
    else:
        exact, lap = (lambda x: x[0] ** 2 + x[0] * x[-1]), 2.0
        grad = (lambda x: np.stack([2 * x[0] + x[-1]] + [0 * x[0]] * (dim - 2) + [x[0]]))

    def velocity(x):
        return np.stack([1 + x[1] ** 2, 0.5 - x[0] * x[1]] + [x[0] * 0] * (dim - 2))

    rho, q_k, rho_c = 0.3, 2.0, 3.0
    k = Convection(mesh, k=(1e-2, 1e-3), q_k=q_k).conductivity(rho)

    def source(x):
        return rho_c * np.sum(velocity(x) * grad(x), axis=0) - k * lap

    model = Convection(mesh, fixed=lambda x: np.ones(x.shape[1], bool), order=order,
                       rho_c=rho_c, k=(1e-2, 1e-3), q_k=q_k, source=(source, source), tau=tau)
    u = _velocity(model, velocity)
    p = np.concatenate([u, np.full(mesh.t.shape[1], rho)])
    T_exact = exact(model.basis.doflocs)
    free = np.setdiff1d(np.arange(model.n), model.fixed)
    assert np.max(np.abs(model.residual(T_exact, p)[free])) < 1e-14
    T = fem.solve_nonlinear(model, p, np.where(np.isin(np.arange(model.n), model.fixed), T_exact, 0.0))
    assert np.max(np.abs(T - T_exact)) < 1e-10


def _small(order, tau, design="P0", seed=0):
    rng = np.random.default_rng(seed)
    mesh = skfem.MeshTri().refined(1)
    model = Convection(mesh, fixed=lambda x: x[0] < 1e-9, order=order, rho_c=2.0,
                       k=(0.3, 0.05), q_k=1.0, source=(1.0, lambda x: x[0]), tau=tau)
    n_rho = mesh.t.shape[1] if design == "P0" else mesh.p.shape[1]
    return (model, rng.standard_normal(model.n), rng.standard_normal(model.nu),
            rng.uniform(0.1, 0.9, n_rho))


@pytest.mark.parametrize("order,tau,design", [(1, "shakib", "P0"), (2, "shakib", "P1"),
                                              (2, "optimal", "P0"), (1, "optimal", "P1")])
def test_residual_rules(order, tau, design):
    model, T, u, rho = _small(order, tau, design)
    report = ad.check_modes(lambda T, u, rho: model.residual(T, np.concatenate([u, rho])),
                            T, u, rho, rtol=1e-6)
    assert max(report.values()) < 1e-6


def test_residual_rules_tetrahedra():
    rng = np.random.default_rng(3)
    mesh = skfem.MeshTet()
    model = Convection(mesh, fixed=lambda x: x[2] < 1e-9, k=(0.3, 0.05), q_k=1.0,
                       source=(1.0, 0.5), tau="optimal")
    T, u = rng.standard_normal(model.n), rng.standard_normal(model.nu)
    rho = rng.uniform(0.1, 0.9, mesh.p.shape[1])
    report = ad.check_modes(lambda T, u, rho: model.residual(T, np.concatenate([u, rho])),
                            T, u, rho)
    assert max(report.values()) < 1e-6


def test_optimal_tau_series_branch_rules():
    # |u| small: Pe^2 < 1e-2 everywhere, the series of (coth Pe - 1/Pe)/Pe
    model, T, u, rho = _small(1, "optimal")
    report = ad.check_modes(lambda u: model.residual(T, np.concatenate([u, rho])), 1e-3 * u,
                            rtol=1e-6)
    assert max(report.values()) < 1e-6


def test_jacobian_is_dR_dT():
    for order in (1, 2):
        model, T, u, rho = _small(order, "shakib", "P1")
        p = np.concatenate([u, rho])
        d = np.random.default_rng(1).standard_normal(model.n)
        _, jd = ad.jvp(lambda T: model.residual(T, p), (T,), (d,))
        assert np.allclose(model.jacobian(T, p) @ d, jd, rtol=1e-12, atol=1e-12)


def test_response_rules():
    model, T, u, rho = _small(2, "shakib", "P1")
    flux = convective_flux(model, lambda x: x[0] > 1 - 1e-9)
    mean = mean_temperature(model, lambda x: x[1] > 0.5)
    report = ad.check_modes(lambda T, u, rho: flux(T, np.concatenate([u, rho])), T, u, rho)
    report.update(ad.check_modes(mean, T))
    assert max(report.values()) < 1e-6


def test_energy_balance():
    """Heat carried out through inlet and outlet = the source, when no wall exchanges heat.

    A uniform flow through the unit square: T prescribed at the inlet,
    insulated elsewhere; integrating the weak form with ``s = 1`` gives
    ``int rho_c (u . n) T ds = int Q dx`` (the SUPG term vanishes for s = 1).
    """
    mesh = skfem.MeshTri().refined(3)
    model = Convection(mesh, fixed=lambda x: x[0] < 1e-9, k=(0.2, 0.01),
                       source=(2.0, lambda x: 1 + x[1]), q_k=1.0)
    u = _velocity(model, lambda x: np.stack([1 + 0 * x[0], 0 * x[0]]))
    rho = np.random.default_rng(0).uniform(0, 1, mesh.p.shape[1])
    p = np.concatenate([u, rho])
    T = fem.solve_nonlinear(model, p, np.zeros(model.n))
    net = convective_flux(model, lambda x: (x[0] < 1e-9) | (x[0] > 1 - 1e-9))(T, p)
    # the sum of all rows is int rho_c div(u T) - Q; the free rows vanish, the fixed
    # rows' sum is the heat conducted in through the inlet (the reaction)
    reaction = np.sum(model.residual(T, p)[model.fixed])
    source = -np.sum(model.residual(np.zeros(model.n), np.concatenate([0 * u, rho])))
    assert net - reaction == pytest.approx(source, rel=1e-10)


def test_mean_and_flux_values():
    model = Convection(skfem.MeshTri().refined(2))
    mean = mean_temperature(model)
    assert float(mean(model.basis.doflocs[1] ** 2)) == pytest.approx(1 / 3, abs=1e-12)
    u = _velocity(model, lambda x: np.stack([x[1] * 0, 1 + 0 * x[0]]))
    p = np.concatenate([u, np.ones(model.mesh.t.shape[1])])
    flux = convective_flux(model, lambda x: x[1] > 1 - 1e-9)      # int_0^1 x dx at y = 1
    assert float(flux(model.basis.doflocs[0], p)) == pytest.approx(0.5, abs=1e-12)


def test_rejects_bad_input():
    mesh = skfem.MeshTri()
    with pytest.raises(ValueError, match="order"):
        Convection(mesh, order=3)
    with pytest.raises(ValueError, match="tau"):
        Convection(mesh, tau="codina")
    with pytest.raises(ValueError, match="k must"):
        Convection(mesh, k=(1.0, 0.0))
    model = Convection(mesh)
    with pytest.raises(ValueError, match="velocity dofs"):
        model.residual(np.zeros(model.n), np.zeros(model.nu + 3))
    with pytest.raises(ValueError, match="T has shape"):
        model.residual(np.zeros(3), np.zeros(model.nu + 2))
    with pytest.raises(ValueError, match="no boundary facet"):
        convective_flux(model, lambda x: x[0] > 2)


def test_adjoint_gradient_through_the_solve():
    """The implicit-function adjoint of a response (what `fem.solve_nonlinear` will do) equals
    central differences of the solved response: ``dJ/dp = J_p - lam^T R_p``, ``K^T lam =
    J_T`` on the free dofs, with ``R_p^T lam`` pulled back through the traced residual."""
    mesh = skfem.MeshTri.init_tensor(np.linspace(0, 2, 9), np.linspace(0, 1, 5))
    model = Convection(mesh, fixed=lambda x: (x[0] < 1e-9) | (x[1] < 1e-9), k=(1.0, 0.02),
                       q_k=3.0, source=(1.0, 0.0), tau="optimal")
    rng = np.random.default_rng(2)
    u = _velocity(model, lambda x: np.stack([6 * x[1] * (1 - x[1]), 0 * x[0]]))
    u = u + 0.1 * rng.standard_normal(u.size)
    p = np.concatenate([u, rng.uniform(0.2, 0.8, mesh.p.shape[1])])
    T0 = np.where(model.basis.doflocs[0] < 1e-9, 1.0, 0.0)
    flux = convective_flux(model, lambda x: x[0] > 2 - 1e-9)
    J = lambda p: float(flux(fem.solve_nonlinear(model, p, T0), p))   # noqa: E731
    T = fem.solve_nonlinear(model, p, T0)
    J_T, J_p = ad.gradient(flux, T, p, argnums=(0, 1))
    free = np.setdiff1d(np.arange(model.n), model.fixed)
    lam = np.zeros(model.n)
    lam[free] = scipy.sparse.linalg.spsolve(model.jacobian(T, p)[free][:, free].T.tocsc(),
                                            J_T[free])
    _, back = ad.pullback(lambda p: model.residual(T, p), p)
    grad = J_p - back(lam)[0]
    d = rng.standard_normal(p.size)
    h = 1e-5
    fd = (J(p + h * d) - J(p - h * d)) / (2 * h)
    assert grad @ d == pytest.approx(fd, rel=1e-7)
