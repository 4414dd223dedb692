"""Thermo-elastic coupling (`topopt.responses.thermoelastic`, `ThermoelasticProblem`).

Closed forms of a uniformly heated bar (free: it lengthens by ``alpha dT L``;
clamped: ``sigma_xx = -E alpha dT``), the load's equilibrium, the three
primitives' rules in every mode, the problem's gradient against the
two-field adjoint written out by hand (Gao & Zhang 2010, eqs. (20)-(22)),
Taylor tests, the refusals, and the analysis against pyMOTO
(scripts/crosscheck/pymoto_thermoelastic.py, when an interpreter with pymoto is at hand).
"""

import importlib.util
import os

import numpy as np
import pytest
import scipy.sparse as sps

from topopt import ad, fem
from topopt.design.interpolation import ramp
from topopt.formulations.thermoelastic import ThermoelasticProblem
from topopt.responses.stress import ElementStress
from topopt.responses.structural import compliance
from topopt.responses.thermoelastic import (ThermalCoupling, _local, coupling_matrices,
                                            coupling_products, coupling_transpose,
                                            thermal_load, thermal_modulus)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NU, ALPHA, DT = 0.3, 1e-2, 2.5


def _bar(dim, plane, clamped):
    """A 6 x 2 (x 2) bar: x held at the left end (and the right one if `clamped`), no
    rigid motion otherwise, so that the heated bar expands freely sideways."""
    mesh = fem.rectangle(6, 2) if dim == 2 else fem.box(6, 2, 2)
    model = fem.elasticity(mesh, nu=NU, plane=plane)
    ends = (lambda x: np.isclose(x[0], 0) | np.isclose(x[0], 6)) if clamped \
        else (lambda x: np.isclose(x[0], 0))
    model.fix(nodes=ends, components=0)
    origin = (0.0,) * dim
    model.fix(nodes=origin, components=list(range(1, dim)))
    if dim == 3:
        model.fix(nodes=(0.0, 2.0, 0.0), components=2)        # the rotation about x
    return mesh, model


# (dim, plane): free strain / (alpha dT), clamped sigma_xx / (E alpha dT)
BARS = [
    (2, "stress", 1.0, -1.0),
    (2, "strain", 1.0 + NU, -1.0 / (1.0 - NU)),      # eps_zz = 0 holds the expansion
    (3, "stress", 1.0, -1.0),
]


@pytest.mark.parametrize("temperature", ["consistent", "centroid"])
@pytest.mark.parametrize("dim, plane, strain, stress", BARS)
def test_heated_bar_closed_forms(dim, plane, strain, stress, temperature):
    for clamped in (False, True):
        mesh, model = _bar(dim, plane, clamped)
        thermal = fem.heat(mesh)
        C = ThermalCoupling(model, thermal, ALPHA, nu=NU, plane=plane, temperature=temperature)
        b = np.ones(model.n_el)
        u = model.solve(b, C(b, np.full(thermal.ndof, DT)))
        if not clamped:       # every point moves by eps x: u_x(L) = eps L, u_y(H) = eps H
            eps = strain * ALPHA * DT
            U = model.nodal_values(u)
            np.testing.assert_allclose(U, eps * mesh.p.T, rtol=1e-10, atol=1e-12)
            continue
        sigma = ElementStress(model, nu=NU, plane=plane).components(u)
        normal = 2 if (dim == 2 and plane == "stress") else 3
        sigma[:, :normal] -= C.kappa * ALPHA * DT                   # sigma = D (eps - eps_th)
        np.testing.assert_allclose(sigma[:, 0], stress * ALPHA * DT, rtol=1e-10)
        np.testing.assert_allclose(sigma[:, 1], 0.0, atol=1e-12)


def test_kappa_closed_forms():
    # plane stress E / (1 - nu); plane strain and 3-D E / (1 - 2 nu)
    assert thermal_modulus(2, 0.25, 2.0) == pytest.approx(2.0 / 0.75, rel=1e-15)
    assert thermal_modulus(2, 0.25, 2.0, "strain") == pytest.approx(4.0, rel=1e-15)
    assert thermal_modulus(3, 0.25, 2.0) == pytest.approx(4.0, rel=1e-15)


@pytest.mark.parametrize("temperature", ["consistent", "centroid"])
@pytest.mark.parametrize("seed", [0, 1])
def test_load_is_self_equilibrated(temperature, seed):
    """Internal stresses: zero resultant force and moment for any temperature field."""
    mesh = fem.rectangle(5, 3)
    model, thermal = fem.elasticity(mesh), fem.heat(mesh)
    C = ThermalCoupling(model, thermal, temperature=temperature)
    rng = np.random.default_rng(seed)
    f = C(rng.uniform(0.1, 1.0, model.n_el), rng.standard_normal(thermal.ndof))
    F = model.nodal_values(f)                                   # (n_points, 2)
    x, y = mesh.p
    assert abs(F[:, 0].sum()) < 1e-12 and abs(F[:, 1].sum()) < 1e-12
    assert abs(np.sum(x * F[:, 1] - y * F[:, 0])) < 1e-11
    assert np.max(np.abs(F)) > 0.1


def test_centroid_differs_from_consistent_for_a_gradient():
    """T = x on a unit square: the consistent load sees the gradient inside the element,
    ``int dN_i/dy (x - 1/2) dA = +-1/12`` on the y dofs (``dN_i/dy = +-x`` or ``+-(1 - x)``),
    nothing on the x dofs (``dN_i/dx`` does not depend on x)."""
    mesh = fem.rectangle(1, 1)
    model, thermal = fem.elasticity(mesh), fem.heat(mesh)
    T, b = mesh.p[0].copy(), np.ones(1)                      # T = x at the nodes
    fc = ThermalCoupling(model, thermal)(b, T)
    fa = ThermalCoupling(model, thermal, temperature="centroid")(b, T)
    diff = model.nodal_values(fc - fa) / thermal_modulus(2)
    np.testing.assert_allclose(diff[:, 0], 0.0, atol=1e-14)
    np.testing.assert_allclose(diff[:, 1], np.where(mesh.p[1] > 0, 1, -1) * (
        np.where(mesh.p[0] > 0, 1, -1)) / 12, rtol=1e-12)
    # both equal for a uniform field (the shape functions sum to one)
    np.testing.assert_allclose(ThermalCoupling(model, thermal)(b, np.ones(4)),
                               ThermalCoupling(model, thermal, temperature="centroid")(
                                   b, np.ones(4)), atol=1e-14)


@pytest.mark.parametrize("temperature", ["consistent", "centroid"])
def test_broadcast_lattice_matches_every_element(temperature):
    mesh = fem.rectangle(3, 2)
    model, thermal = fem.elasticity(mesh), fem.heat(mesh)
    L = coupling_matrices(model, thermal, alpha=0.7, temperature=temperature)
    assert L.strides[0] == 0                                    # one matrix, broadcast
    full = 0.7 * thermal_modulus(2) * _local(model.basis, thermal.basis.elem,
                                             temperature == "centroid")
    np.testing.assert_allclose(L, full, rtol=1e-13, atol=1e-15)


def test_triangles_integrate_exactly():
    """On a P1 mesh ``L_e = kappa alpha div(phi_i) |e| / 3`` (constant div, mean of N = 1/3)."""
    import skfem
    mesh = skfem.MeshTri.init_symmetric().refined(1)
    model, thermal = fem.elasticity(mesh), fem.heat(mesh)
    L = coupling_matrices(model, thermal)
    area = fem.element_volumes(mesh)
    div = np.stack([np.trace(phi[0].grad)[:, 0] for phi in model.basis.basis], axis=1)
    expected = thermal_modulus(2) * (div * area[:, None] / 3)[:, :, None] * np.ones(3)
    np.testing.assert_allclose(L, expected, rtol=1e-12, atol=1e-14)


# ------------------------------------------------------------------ the rules

def _coupling(n=(3, 2), temperature="consistent"):
    mesh = fem.rectangle(*n)
    return ThermalCoupling(fem.elasticity(mesh), fem.heat(mesh), 0.5, temperature=temperature)


@pytest.mark.parametrize("temperature", ["consistent", "centroid"])
@pytest.mark.parametrize("prim", [thermal_load, coupling_products, coupling_transpose])
def test_primitive_rules_every_mode(prim, temperature):
    C = _coupling(temperature=temperature)
    rng = np.random.default_rng(3)
    sizes = {thermal_load: (C.n_el, C.n_T), coupling_products: (C.n_u, C.n_T),
             coupling_transpose: (C.n_el, C.n_u)}[prim]
    args = [rng.standard_normal(n) for n in sizes]
    report = ad.check_rule(prim, C, *args, seed=1)
    assert max(report.values()) < 1e-8, report
    report = ad.check_modes(lambda a, b: prim(C, a, b), *args, seed=2)
    assert set(k.split("/")[0] for k in report) == {"reverse", "forward", "hvp", "nested"}
    assert max(report.values()) < 1e-6, report


def _problem(nelx=6, nely=4, **kw):
    mesh = fem.rectangle(nelx, nely)
    model = fem.elasticity(mesh).fix(nodes=lambda x: np.isclose(x[0], nelx))
    model.fix(nodes=lambda x: np.isclose(x[0], 0), components=0)
    thermal = fem.heat(mesh).fix(nodes=lambda x: np.isclose(x[0], nelx))
    f = model.point_load((0.0, 0.0), (0.0, -0.05))
    heat = thermal.point_load((0.0, 0.0), (1.0,))
    return ThermoelasticProblem(model, thermal, f, heat, 0.4, 1.5, alpha=0.05, **kw)


def test_problem_chain_every_mode():
    p = _problem(4, 2, solver="superlu")
    x = np.random.default_rng(1).uniform(0.3, 1.0, p.n)
    report = ad.check_modes(p.compliance, x, seed=1)
    assert max(report.values()) < 1e-6, report


@pytest.mark.parametrize("q_beta", [0.0, 3.0])
def test_gradient_is_the_two_field_adjoint(q_beta):
    """dc/dx_e = 2 u^T df/dx_e - E'_e u_e K_e u_e - k'_e mu_e K_th,e T_e,
    K_th mu = 2 (df_th/dT)^T u: the adjoint by hand, with scipy's sparse solves."""
    p = _problem(q_beta=q_beta, solver="superlu")
    xp = np.random.default_rng(5).uniform(0.2, 1.0, p.n_el)
    g = ad.gradient(lambda xp: compliance(*p.state(xp)[:2]), xp)
    u, f, T = (np.asarray(a) for a in p.state(xp))
    C, model, thermal = p.coupling, p.model, p.thermal
    d = lambda fun: ad.gradient(lambda x: np.sum(fun(x)), xp)          # noqa: E731
    dE, dk, db = d(p.modulus), d(p.conductivity), d(p.expansion)
    ue, Te = u[C.u_dofs], T[C.T_dofs]
    # K_th(k) mu = 2 (df_th/dT)^T u, on the free temperatures
    k = p.conductivity(xp)
    Kt = _assemble(thermal, k)
    free = np.setdiff1d(np.arange(thermal.ndof), thermal.fixed)
    rhs = 2 * C.transpose(p.expansion(xp), u)
    mu = np.zeros(thermal.ndof)
    mu[free] = sps.linalg.spsolve(Kt[free][:, free].tocsc(), rhs[free])
    expected = (2 * db * np.einsum("ei,eij,ej->e", ue, C.L, Te)
                - dE * np.einsum("ei,eij,ej->e", ue, model.Ke, ue)
                - dk * np.einsum("ei,eij,ej->e", mu[C.T_dofs], thermal.Ke, Te))
    np.testing.assert_allclose(g, expected, rtol=1e-9, atol=1e-12 * np.abs(expected).max())
    # the temperature's term is a sizeable part of the gradient
    assert np.linalg.norm(dk * np.einsum("ei,eij,ej->e", mu[C.T_dofs], thermal.Ke, Te)) \
        > 0.05 * np.linalg.norm(expected)


def _assemble(model, a):
    dofs = model.basis.element_dofs.T
    rows = np.repeat(dofs, dofs.shape[1], axis=1).ravel()
    cols = np.tile(dofs, (1, dofs.shape[1])).ravel()
    vals = (a[:, None, None] * model.Ke).ravel()
    return sps.csr_matrix((vals, (rows, cols)), shape=(model.ndof, model.ndof))


@pytest.mark.parametrize("kw", [{}, {"temperature": "centroid"}, {"q_beta": 2.0},
                                {"filter": "helmholtz"}])
@pytest.mark.parametrize("seed", [0, 1])
def test_taylor(kw, seed):
    p = _problem(10, 6, **kw)
    rng = np.random.default_rng(seed)
    x, dx = rng.uniform(0.1, 0.9, p.n), rng.standard_normal(p.n)
    assert ad.taylor_test(p.compliance, x, dx) >= 1.9
    p.c0 = 1.0
    assert ad.taylor_test(lambda x: p.responses(x)[0], x, dx) >= 1.9
    assert ad.taylor_test(lambda x: p.compliance(x, beta=4.0), x, dx) >= 1.9


def test_expansion_pushes_against_the_load():
    """Heating raises the compliance of the clamped beam (the expansion's part is positive)."""
    p = _problem()
    x = np.full(p.n, 0.6)
    metrics, _ = p.final(p.x_phys(x))
    assert metrics["compliance_thermal"] > 0 and metrics["temperature_max"] > 0
    assert metrics["compliance"] == pytest.approx(
        metrics["compliance_mechanical"] + metrics["compliance_thermal"], rel=1e-14)


# ------------------------------------------------------------------ refusals

def test_refusals():
    mesh = fem.rectangle(3, 2)
    model, thermal = fem.elasticity(mesh), fem.heat(mesh)
    C = ThermalCoupling(model, thermal)
    with pytest.raises(ValueError, match=r"b has shape \(5,\); expected \(6,\)"):
        C(np.ones(5), np.ones(12))
    with pytest.raises(ValueError, match=r"T has shape \(24,\); expected \(12,\)"):
        C(np.ones(6), np.ones(24))
    with pytest.raises(ValueError, match="T contains NaN"):
        C(np.ones(6), np.full(12, np.nan))
    with pytest.raises(ValueError, match="same mesh"):
        ThermalCoupling(model, fem.heat(fem.rectangle(2, 3)))
    with pytest.raises(TypeError, match="thermal must be a heat model"):
        ThermalCoupling(model, model)
    with pytest.raises(TypeError, match="mechanical must be an elasticity model"):
        ThermalCoupling(thermal, thermal)
    with pytest.raises(ValueError, match="do not describe this model"):
        ThermalCoupling(model, thermal, nu=0.25)
    with pytest.raises(ValueError, match="alpha must be"):
        ThermalCoupling(model, thermal, alpha=0.0)
    with pytest.raises(ValueError, match="temperature must be one of"):
        ThermalCoupling(model, thermal, temperature="mean")
    model.fix(nodes=lambda x: x[0] == 0)
    thermal.fix(nodes=lambda x: x[0] == 0)
    with pytest.raises(ValueError, match="the heat load is zero"):
        ThermoelasticProblem(model, thermal, np.zeros(24), np.zeros(12), 0.5, 1.5)
    with pytest.raises(ValueError, match="heat has shape"):
        ThermoelasticProblem(model, thermal, np.zeros(24), np.ones((12, 2)), 0.5, 1.5)
    with pytest.raises(ValueError, match="q_beta must be"):
        ThermoelasticProblem(model, thermal, np.zeros(24), np.ones(12), 0.5, 1.5, q_beta=-1)


# ------------------------------------------------------------ pyMOTO cross-check

def _pymoto_python():
    path = os.environ.get("PYMOTO_PYTHON", "/tmp/pymoto-venv/bin/python")
    return path if os.access(path, os.X_OK) else None


@pytest.mark.skipif(_pymoto_python() is None, reason="no interpreter with pymoto "
                    "(set PYMOTO_PYTHON)")
def test_analysis_matches_pymoto(monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(ROOT, "scripts", "crosscheck"))  # its pymoto_bridge
    spec = importlib.util.spec_from_file_location(
        "pymoto_thermoelastic", os.path.join(ROOT, "scripts", "crosscheck", "pymoto_thermoelastic.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for case in module.CASES:
        rows = module.compare(case, _pymoto_python())
        assert len(rows) == 5
        for r in rows:
            assert max(r["err_c"], r["err_dc"]) <= 1e-8, (case, r)


# ------------------------------------------------------------------ the problem

def test_beam_the_truss_is_not_a_coupled_optimum():
    """problems/thermo_beam.py: the optimum of the mechanical load alone (``--alpha 0``, a
    V truss) is not one under the heated load: the coupled run started there lowers the
    coupled compliance by more than 3 % (30.02 -> 28.71 at 30 x 20, 100 evaluations)."""
    from topopt_problems import thermo_beam
    from topopt.io.result import RunResult
    truss = thermo_beam.run(nelx=30, nely=20, alpha=0.0, maxeval=100)
    coupled = thermo_beam.run(nelx=30, nely=20, maxeval=100, x0=truss["x"])
    assert isinstance(coupled, RunResult)
    _, model, thermal, f, q = thermo_beam.setup(30, 20)
    p = ThermoelasticProblem(model, thermal, f, q, 0.25, 2.0, alpha=0.05, nu=thermo_beam.NU,
                             kmin=thermo_beam.K_MIN)
    c_truss = float(compliance(*p.state(truss["x_phys"])[:2]))
    assert float(compliance(*p.state(coupled["x_phys"])[:2])) == pytest.approx(
        coupled["compliance"], rel=1e-10)
    assert coupled["compliance"] < 0.97 * c_truss, (coupled["compliance"], c_truss)
    assert coupled["volume"] == pytest.approx(0.25, abs=2e-3)
    assert coupled["compliance_thermal"] > 0.1 * coupled["compliance"]
