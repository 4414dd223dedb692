"""Flow core: Taylor-Hood Stokes and Navier-Stokes with Brinkman penalization.

Closed forms: plane Poiseuille flow (Taylor-Hood reproduces it to round-off:
quadratic velocity, linear pressure, and the convective term vanishes), a
uniformly porous channel (Brinkman's cosh profile), a manufactured smooth
solution with the Taylor-Hood rates (Brezzi & Fortin 1991; Girault &
Raviart 1986: velocity O(h^3) in L2 and O(h^2) in H1, pressure O(h^2)).
"""

import numpy as np
import pytest
import skfem

from topopt import ad, fem
from topopt.flow import (FlowModel, TaylorHood, alpha, dissipated_power, fluid_fraction,
                         mean_pressure_weights, navier_stokes, parabolic_inlet,
                         pressure_drop, stokes)

TOL = 1e-9


def newton(model, rho, steps=None, rtol=1e-12):
    """fem.solve_nonlinear from the model's initial state; returns (w, Newton steps)."""
    seen = []
    w = fem.solve_nonlinear(model, rho, model.initial_state(), rtol=rtol, steps=steps,
                            monitor=lambda t, k, r: seen.append(k))
    return w, max(seen)


# -------------------------------------------------------------- Poiseuille

L, H, MU, UPEAK = 2.0, 1.0, 0.1, 1.5          # mean velocity U = 2/3 UPEAK = 1


def channel(ctor, cells=skfem.MeshTri, **kw):
    xs = np.array([0.0, 0.3, 0.5, 1.1, 1.4, 2.0])              # graded on purpose
    ys = np.array([0.0, 0.2, 0.45, 0.7, 1.0])
    mesh = cells.init_tensor(xs, ys)
    walls = lambda x: (x[1] < TOL) | (x[1] > H - TOL)           # noqa: E731
    inlet = lambda x: x[0] < TOL                                # noqa: E731
    return ctor(mesh, mu=MU, dirichlet=[(inlet, parabolic_inlet([0, H / 2], H, UPEAK)),
                                        (walls, None)], **kw), inlet


@pytest.mark.parametrize("cells", [skfem.MeshTri, skfem.MeshQuad])
@pytest.mark.parametrize("ctor", [stokes, navier_stokes])
def test_poiseuille_to_round_off(ctor, cells):
    """u = 4 Upeak y (H - y) / H^2, p = 12 mu U (L - x) / H^2 (White, Viscous Fluid
    Flow, 3rd ed., eq. 3-38 with U = 2/3 Upeak); exact in P2/P1 and in Q2/Q1."""
    model, inlet = channel(ctor, cells)
    assert not model.pinned                                     # the outlet is traction-free
    rho = np.ones(model.space.mesh.nelements)
    w, its = newton(model, rho)
    u, p = model.space.split(w)
    x = model.space.nodes
    np.testing.assert_allclose(u[:, 0], 4 * UPEAK * x[1] * (H - x[1]) / H ** 2, atol=1e-12)
    np.testing.assert_allclose(u[:, 1], 0.0, atol=1e-12)
    xv = model.space.mesh.p
    np.testing.assert_allclose(p, 12 * MU * 1.0 * (L - xv[0]) / H ** 2, atol=1e-12)
    dp = pressure_drop(model, w, inlet, lambda x: x[0] > L - TOL)
    assert abs(dp - 12 * MU * 1.0 * L / H ** 2) < 1e-12        # 2.4
    # dissipation: mu int |du/dy|^2 = mu (4 Upeak / H^2)^2 H^3 / 3 * L = 2.4 (= Q dp, Q = 1)
    for conv, c in (("borrvall-petersson", 0.5), ("dolfin-adjoint", 1.0)):
        assert abs(dissipated_power(model, w, rho, conv) - c * 2.4) < 1e-12
    assert its <= (1 if ctor is stokes else 5)             # measured 1 and 4


@pytest.mark.parametrize("cells", [skfem.MeshTet, skfem.MeshHex])
def test_plane_poiseuille_in_3d(cells):
    """The same closed form in 3-D: plates at y = 0, H; symmetry walls z = 0, 0.5
    (u_z = 0, tangential traction free); P2/P1 tetrahedra and Q2/Q1 hexahedra
    (27-node velocity) are exact too."""
    mesh = cells.init_tensor(np.linspace(0, L, 4), np.linspace(0, H, 3),
                                     np.linspace(0, 0.5, 2))
    profile = lambda x: np.array([4 * UPEAK * x[1] * (H - x[1]), 0 * x[1], 0 * x[1]])  # noqa
    model = stokes(mesh, mu=MU, dirichlet=[
        (lambda x: x[0] < TOL, profile),
        (lambda x: (x[1] < TOL) | (x[1] > H - TOL), 0.0),
        (lambda x: (x[2] < TOL) | (x[2] > 0.5 - TOL), 0.0, [2])])
    w, _ = newton(model, np.ones(mesh.nvertices))
    u, p = model.space.split(w)
    x = model.space.nodes
    np.testing.assert_allclose(u[:, 0], 4 * UPEAK * x[1] * (H - x[1]), atol=1e-11)
    np.testing.assert_allclose(u[:, 1:], 0.0, atol=1e-11)
    np.testing.assert_allclose(p, 12 * MU * (L - mesh.p[0]) / H ** 2, atol=1e-11)


def test_paraboloid_inlet():
    """3-D: u = Upeak (1 - (2r/w)^2) along the direction, r across it; 0 outside."""
    g = parabolic_inlet([0.0, 0.5, 0.5], 0.5, peak=2.0, direction=[-3.0, 0.0, 0.0])
    x = np.array([[0.0, 0.3, 0.0, 0.0], [0.5, 0.5, 0.625, 0.9], [0.5, 0.5, 0.5, 0.5]])
    np.testing.assert_allclose(g(x), [[-2.0, -2.0, -1.5, 0.0], [0] * 4, [0] * 4])


# ------------------------------------------------------------- Brinkman channel

def test_uniformly_porous_channel_cosh_profile():
    """mu u'' - alpha u = dp/dx = -G, u(0) = u(H) = 0:
    u = G/alpha (1 - cosh(k (y - H/2)) / cosh(k H / 2)), k = sqrt(alpha / mu)
    (Brinkman 1947; Nield & Bejan, Convection in Porous Media, sec. 4.10)."""
    a, G, mu = 100.0, 1.0, 1.0
    k = np.sqrt(a / mu)

    def exact(y):
        return G / a * (1 - np.cosh(k * (y - H / 2)) / np.cosh(k * H / 2))
    errs, drops, perr, Lc = [], [], [], 0.25
    for ny in (8, 16):
        mesh = skfem.MeshTri.init_tensor(np.linspace(0, Lc, ny // 4 + 1),
                                         np.linspace(0, H, ny + 1))
        model = stokes(mesh, mu=mu, alpha_min=a, alpha_max=a, dirichlet=[
            (lambda x: x[0] < TOL, lambda x: np.array([exact(x[1]), 0 * x[1]])),
            (lambda x: (x[1] < TOL) | (x[1] > H - TOL), 0.0)])
        w, _ = newton(model, np.full(mesh.nelements, 0.5))     # alpha = a whatever rho
        p = model.space.split(w)[1]
        bu = skfem.Basis(mesh, model.space.basis_u.elem, intorder=8)
        uh, xq = np.asarray(bu.interpolate(w[:model.nu])), np.asarray(bu.global_coordinates())
        errs.append(np.sqrt(np.sum(((uh[0] - exact(xq[1])) ** 2 + uh[1] ** 2) * bu.dx)))
        dp = pressure_drop(model, w, lambda x: x[0] < TOL, lambda x: x[0] > Lc - TOL)
        drops.append(abs(dp - G * Lc))
        perr.append(np.abs(p - G * (Lc - mesh.p[0])).max())
    # measured: L2 errors 1.60e-5 and 2.16e-6 (rate 2.89; 2.99 at the next mesh),
    # pressure-drop errors 8.3e-5 and 1.7e-5 (of 0.25), nodal pressure 1.5e-3 and 4.4e-4
    assert drops[0] < 1e-4 and drops[1] < 2e-5 and perr[0] < 1.6e-3 and perr[1] < 5e-4
    assert errs[0] < 1.7e-5 and errs[1] < 2.3e-6
    assert np.log2(errs[0] / errs[1]) > 2.8


def porous_walls_exact(y, a=0.25, alpha=100.0, G=1.0, mu=1.0):
    """A channel 0 < y < 1 whose core |y - 1/2| < a is fluid and whose walls a < |s| < 1/2
    (s = y - 1/2) are porous (Brinkman, inverse permeability alpha), driven by a body force G:
    mu u'' = -G in the core, mu u'' - alpha u = -G in the walls, u(0) = u(1) = 0, u and u'
    continuous at |s| = a. Walls: u = G/alpha (1 - cosh(k d)) + B sinh(k d), d = 1/2 - |s|,
    k = sqrt(alpha / mu); core: u = G (a^2 - s^2) / (2 mu) + C."""
    k, s = np.sqrt(alpha / mu), np.abs(y - 0.5)
    d0 = 0.5 - a
    B = (G * a / (mu * k) + G / alpha * np.sinh(k * d0)) / np.cosh(k * d0)
    C = G / alpha * (1 - np.cosh(k * d0)) + B * np.sinh(k * d0)
    d = 0.5 - s
    walls = G / alpha * (1 - np.cosh(k * d)) + B * np.sinh(k * d)
    return np.where(s < a, G * (a ** 2 - s ** 2) / (2 * mu) + C, walls)


def test_channel_with_porous_walls_against_its_1d_closed_form():
    """Fluid core (rho = 1, alpha = 0) between porous walls (rho = 0, alpha = 100) on a mesh
    aligned with the interfaces, driven by a body force with traction-free ends: the flow is
    the 1-D profile `porous_walls_exact` (the ends see du/dx = 0 and p = 0)."""
    errs = []
    for ny in (16, 32):
        mesh = skfem.MeshTri.init_tensor(np.linspace(0, 0.25, ny // 4 + 1),
                                         np.linspace(0, 1, ny + 1))
        model = stokes(mesh, alpha_min=0.0, alpha_max=100.0, q=0.1,
                       body_force=lambda x: np.stack([np.ones_like(x[0]), np.zeros_like(x[0])]),
                       dirichlet=[(lambda x: (x[1] < TOL) | (x[1] > 1 - TOL), 0.0)])
        mid = mesh.p[:, mesh.t].mean(axis=1)
        rho = (np.abs(mid[1] - 0.5) < 0.25).astype(float)
        w = fem.solve_nonlinear(model, rho, model.initial_state())
        bu = skfem.Basis(mesh, model.space.basis_u.elem, intorder=8)
        uh, xq = np.asarray(bu.interpolate(w[:model.nu])), np.asarray(bu.global_coordinates())
        errs.append(np.sqrt(np.sum(((uh[0] - porous_walls_exact(xq[1])) ** 2 + uh[1] ** 2)
                                   * bu.dx)) / np.sqrt(np.sum(porous_walls_exact(xq[1]) ** 2
                                                              * bu.dx)))
    # measured: relative L2 errors 3.27e-4, 4.16e-5 (and 5.24e-6 at ny = 64): rate 2.97
    assert errs[0] < 3.5e-4 and errs[1] < 4.5e-5 and np.log2(errs[0] / errs[1]) > 2.8, errs


# ---------------------------------------------------------- manufactured rates

PI = np.pi


def u_exact(x):
    return np.array([np.sin(PI * x[0]) * np.cos(PI * x[1]),
                     -np.cos(PI * x[0]) * np.sin(PI * x[1])])


def grad_exact(x):
    s, c = np.sin, np.cos
    X, Y = PI * x[0], PI * x[1]
    return PI * np.array([[c(X) * c(Y), -s(X) * s(Y)], [s(X) * s(Y), -c(X) * c(Y)]])


def p_exact(x):                                  # mean zero on the unit square
    return np.cos(PI * x[0]) * np.cos(PI * x[1])


def force(mu, rho_f):
    """f = -mu lap u + rho_f (grad u) u + grad p for the divergence-free u above."""
    def f(x):
        X, Y = PI * x[0], PI * x[1]
        conv = PI * np.array([np.sin(X) * np.cos(X), np.sin(Y) * np.cos(Y)])
        gp = -PI * np.array([np.sin(X) * np.cos(Y), np.cos(X) * np.sin(Y)])
        return 2 * PI ** 2 * mu * u_exact(x) + rho_f * conv + gp
    return f


def errors(model, w):
    """L2 and H1-seminorm velocity errors and the L2 error of the mean-free pressure."""
    s = model.space
    bu = skfem.Basis(s.mesh, s.basis_u.elem, intorder=8)
    bp = bu.with_element(s.basis_p.elem)
    uh, ph = bu.interpolate(w[:s.nu]), np.asarray(bp.interpolate(w[s.nu:]))
    x, dx = np.asarray(bu.global_coordinates()), bu.dx
    ph = ph - np.sum(ph * dx) / np.sum(dx)

    def norm(e):
        return np.sqrt(np.sum(e.reshape(-1, *dx.shape) ** 2 * dx))
    return (norm(np.asarray(uh) - u_exact(x)), norm(np.asarray(uh.grad) - grad_exact(x)),
            norm(ph - p_exact(x)))


#: (cells, state, mu, rho_f, least rates 8 -> 16, largest errors at n = 16): velocity L2,
#: H1, pressure L2. Measured at n = 16 (errors) and 8 -> 16 (rates):
#:   P2/P1 Stokes (mu = 1):          9.71e-5, 1.19e-2, 1.62e-3; rates 2.99, 1.99, 2.05
#:   P2/P1 Navier-Stokes (0.05):     1.05e-4, 1.28e-2, 1.62e-3; rates 3.28, 2.21, 2.04
#:   Q2/Q1 Stokes (mu = 1):          4.35e-5, 4.51e-3, 1.02e-3; rates 3.00, 2.00, 2.02
#:   Q2/Q1 Navier-Stokes (0.05):     4.69e-5, 4.98e-3, 1.02e-3; rates 3.25, 2.30, 2.02
#: (Q2/Q1 16 -> 32: 3.00, 2.00, 2.00 and 3.08, 2.10, 2.00)
RATES = [(skfem.MeshTri, stokes, 1.0, 0.0, [2.9, 1.95, 1.9], [1.1e-4, 1.3e-2, 1.7e-3]),
         (skfem.MeshTri, navier_stokes, 0.05, 1.0, [2.9, 1.95, 1.9], [1.1e-4, 1.3e-2, 1.7e-3]),
         (skfem.MeshQuad, stokes, 1.0, 0.0, [2.95, 1.95, 1.95], [4.8e-5, 5.1e-3, 1.05e-3]),
         (skfem.MeshQuad, navier_stokes, 0.05, 1.0, [2.95, 1.95, 1.95],
          [4.8e-5, 5.1e-3, 1.05e-3])]


@pytest.mark.parametrize("cells,ctor,mu,rho_f,rate,err", RATES)
def test_manufactured_rates(cells, ctor, mu, rho_f, rate, err):
    """Taylor-Hood rates: velocity 3 (L2), 2 (H1); pressure 2 (L2) (Brezzi & Fortin 1991,
    Sect. VI.6), P2/P1 on triangles and Q2/Q1 on squares. Dirichlet data everywhere, so
    the pressure is pinned at one vertex and compared mean-free; Navier-Stokes (Re 20)
    solved by Newton from rest (quads: quadrature order 6, the convective term's)."""
    errs = []
    kw = {"rho_f": rho_f} if rho_f else {}
    for n in (4, 8, 16):
        mesh = cells.init_tensor(np.linspace(0, 1, n + 1), np.linspace(0, 1, n + 1))
        model = ctor(mesh, mu=mu, dirichlet=[(lambda x: x[0] > -1, u_exact)],
                     body_force=force(mu, rho_f), **kw)
        assert model.pinned
        if cells is skfem.MeshQuad:
            assert model.space.intorder == (4 if rho_f == 0 else 6)
        w, its = newton(model, np.ones(mesh.nelements))
        assert its <= (1 if rho_f == 0 else 5)
        errs.append(errors(model, w))
    errs = np.array(errs)
    rates = np.log2(errs[:-1] / errs[1:])
    assert np.all(rates[-1] > rate), rates
    assert np.all(errs[-1] < err), errs[-1]


# ------------------------------------------------------------ derivatives

#: The small meshes of the rule tests: P2/P1 triangles and tetrahedra, Q2/Q1 quadrilaterals.
SMALL = {"tri": lambda: skfem.MeshTri().refined(1), "tet": skfem.MeshTet,
         "quad": lambda: skfem.MeshQuad().refined(1)}


def small(ctor=navier_stokes, p1=False, cells="tri", **kw):
    """A model on the `cells` mesh of `SMALL`, a random state and a random design (P0, or
    one value per vertex with `p1`: linear on simplices, bilinear on quadrilaterals)."""
    mesh = SMALL[cells]()
    model = ctor(mesh, mu=0.3, alpha_min=0.5, alpha_max=40.0, q=0.2,
                 dirichlet=[(lambda x: x[1] < TOL, 0.0),
                            (lambda x: x[0] < TOL,
                             parabolic_inlet([0, 0.5, 0.5][:mesh.dim()], 1.0))], **kw)
    rng = np.random.default_rng(1)
    rho = rng.uniform(0.1, 0.9, mesh.nvertices if p1 else mesh.nelements)
    w = rng.standard_normal(model.n)
    return model, w, rho


@pytest.mark.parametrize("p1,cells", [(False, "tri"), (True, "tri"), (True, "tet"),
                                      (False, "quad"), (True, "quad")])
def test_jacobian_is_the_derivative_of_the_residual(p1, cells):
    """R is quadratic in w: the central difference is exact up to round-off."""
    model, w, rho = small(p1=p1, cells=cells)
    d = np.random.default_rng(2).standard_normal(model.n)
    for t in (0.4, 1.0):
        J = model.jacobian(w, rho, t=t)
        h = 1e-3
        fd = (model.residual(w + h * d, rho, t=t) - model.residual(w - h * d, rho, t=t)) / (2 * h)
        assert np.linalg.norm(J @ d - fd) < 1e-11 * np.linalg.norm(fd)


def test_alpha_values_and_rules():
    """Borrvall & Petersson (2003) eq. 15: alpha(0) = alpha_max, alpha(1) = alpha_min,
    alpha'(1) = (alpha_min - alpha_max) q / (1 + q)."""
    r = np.array([0.0, 0.25, 1.0])
    np.testing.assert_allclose(alpha(r, 1.0, 101.0, 0.5), [101.0, 101 - 100 * 0.25 * 1.5 / 0.75,
                                                           1.0])
    g = ad.gradient(lambda r: np.sum(alpha(r, 1.0, 101.0, 0.5)), np.array([1.0]))
    np.testing.assert_allclose(g, [-100 * 0.5 / 1.5])
    ad.check_modes(lambda r: alpha(r, 0.1, 50.0, 0.1), np.array([0.2, 0.5, 0.8]))


@pytest.mark.parametrize("ctor,p1,cells", [
    (stokes, False, "tri"), (navier_stokes, False, "tri"), (navier_stokes, True, "tri"),
    (navier_stokes, True, "tet"), (stokes, False, "quad"), (navier_stokes, True, "quad")])
def test_residual_rules(ctor, p1, cells):
    model, w, rho = small(ctor, p1, cells)
    ad.check_modes(lambda w, r: model.residual(w, r, t=0.6), w, rho)


@pytest.mark.parametrize("p1,cells", [(True, "tri"), (False, "quad"), (True, "quad")])
def test_response_rules(p1, cells):
    model, w, rho = small(p1=p1, cells=cells)
    inlet, outlet = mean_pressure_weights(model.space, lambda x: x[0] < TOL), \
        (lambda x: x[0] > 1 - TOL)
    for conv in ("borrvall-petersson", "dolfin-adjoint"):
        ad.check_modes(lambda w, r: dissipated_power(model, w, r, conv), w, rho)
    ad.check_modes(lambda w: pressure_drop(model, w, inlet, outlet), w)
    ad.check_modes(lambda r: fluid_fraction(model, r), rho)


# ------------------------------------------------------------- validation

def test_rejections():
    with pytest.raises(ValueError, match="q must be > 0"):
        alpha(np.ones(2), 0.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="alpha_max"):
        alpha(np.ones(2), 2.0, 1.0, 0.1)
    with pytest.raises(ValueError, match=r"rho must lie in \[0, 1\]"):
        alpha(np.array([1.5]), 0.0, 1.0, 0.1)
    with pytest.raises(TypeError, match="MeshQuad or skfem.MeshHex"):
        TaylorHood(skfem.MeshLine())
    with pytest.raises(TypeError, match="MeshTri, skfem.MeshTet"):
        TaylorHood(skfem.MeshQuad2())                   # quadratic geometry
    with pytest.raises(ValueError, match="intorder"):
        TaylorHood(skfem.MeshTri(), intorder=0)
    with pytest.raises(ValueError, match="mu must be > 0"):
        stokes(skfem.MeshTri(), mu=0.0)
    with pytest.raises(ValueError, match=r"dirichlet\[0\]"):
        stokes(skfem.MeshTri(), dirichlet=[lambda x: x[0] < 0])
    with pytest.raises(ValueError, match="components"):
        stokes(skfem.MeshTri(), dirichlet=[(lambda x: x[0] < TOL, 0.0, [2])])
    model, w, rho = small()
    with pytest.raises(ValueError, match=r"t must be in \[0, 1\]"):
        model.residual(w, rho, t=1.5)
    with pytest.raises(ValueError, match="w has shape"):
        model.residual(w[:-1], rho)
    with pytest.raises(ValueError, match="one value per element"):
        model.residual(w, rho[:-1])
    with pytest.raises(ValueError, match="convention"):
        dissipated_power(model, w, rho, "half")


def test_fixed_dofs_and_parameters():
    model, w, rho = small()
    assert not model.pinned                      # two sides are traction-free
    np.testing.assert_array_equal(model.initial_state()[model.fixed], model.w_bc[model.fixed])
    other = model.with_parameters(q=0.01, rho_f=2.0)
    assert other.q == 0.01 and other.rho_f == 2.0 and model.q == 0.2 and model.rho_f == 1.0
    # continuation in the Reynolds number: rho_f = 2 at t = 1/2 is rho_f = 1 at t = 1
    J1 = model.jacobian(w, rho)
    assert other._shared is model._shared            # one CSR pattern for every copy
    np.testing.assert_allclose(model.with_parameters(rho_f=2.0).residual(w, rho, t=0.5),
                               model.residual(w, rho), rtol=1e-13, atol=1e-13)
    assert abs(model.with_parameters(rho_f=2.0).jacobian(w, rho, t=0.5) - J1).max() < 1e-13
    # a fully enclosed cavity pins one pressure (the vertex nearest the point)
    cav = stokes(skfem.MeshTri().refined(1), dirichlet=[(lambda x: x[0] > -1, 0.0)],
                 pin_pressure=[1.0, 1.0])
    assert cav.pinned and cav.fixed[-1] == cav.nu + 3     # vertex (1, 1) of MeshTri


@pytest.mark.parametrize("ctor,cells", [(stokes, "tri"), (navier_stokes, "tri"),
                                        (navier_stokes, "tet"), (stokes, "quad"),
                                        (navier_stokes, "quad")])
def test_kernel_jacobian_equals_skfem_forms(ctor, cells):
    model, w, rho = small(ctor, p1=True, cells=cells)
    forms = small(ctor, p1=True, cells=cells, assembly="forms")[0]
    for t in (0.3, 1.0):
        J, Jf = model.jacobian(w, rho, t=t), forms.jacobian(w, rho, t=t)
        assert abs(J - Jf).max() < 1e-13 * abs(Jf).max()


# ----------------------------------------------------- through the nonlinear solve

@pytest.mark.parametrize("ctor,steps,cells", [(stokes, None, "tri"),
                                               (navier_stokes, (0.5, 1.0), "tri"),
                                               (stokes, None, "quad"),
                                               (navier_stokes, (0.5, 1.0), "quad")])
def test_dissipated_power_through_the_solve(ctor, steps, cells):
    """J(rho) = dissipated_power(w(rho), rho) with w from fem.solve_nonlinear: the
    adjoint gradient passes the Taylor test (rate 2) and every mode's check; on P2/P1
    triangles and on Q2/Q1 quadrilaterals (a vertex design: linear, or bilinear)."""
    mesh = (skfem.MeshTri().refined(2) if cells == "tri" else skfem.MeshQuad().refined(2))
    model = ctor(mesh, mu=0.05, alpha_max=50.0, q=0.1, dirichlet=[
        (lambda x: (x[1] < TOL) | (x[1] > 1 - TOL), 0.0),
        (lambda x: x[0] < TOL, parabolic_inlet([0, 0.5], 1.0, peak=1.0))])
    rho = np.random.default_rng(3).uniform(0.3, 0.9, mesh.nvertices)
    w0 = model.initial_state()

    def J(r):
        return dissipated_power(model, fem.solve_nonlinear(model, r, w0, steps=steps), r)
    d = np.random.default_rng(4).uniform(-1, 1, rho.size)
    assert ad.taylor_test(J, rho, d, h0=0.05) > 1.9
    ad.check_modes(J, rho, modes=("reverse", "forward", "hvp"), rtol=1e-5)
