"""topopt.formulations.flow_thermal: the flow -> temperature chain of ConvectionProblem.

References: Poiseuille flow between plates, pressure drop ``12 mu U L / h^2``
for the mean velocity ``U`` (the all-fluid channel, which Taylor-Hood
reproduces to round-off); the derivatives against central differences
(`topopt.ad.check_modes`) and the first-order Taylor remainder.
"""

import numpy as np
import pytest
import scipy.sparse.linalg
import skfem

from topopt import ad, fem
from topopt.flow import Convection, navier_stokes, parabolic_inlet, stokes
from topopt.formulations.flow_thermal import ConvectionProblem

TOL = 1e-9
LEFT, RIGHT = (lambda x: x[0] < TOL), (lambda x: x[0] > 2 - TOL)
HEATED = (lambda x: np.abs(x[0] - 1.0) < 0.5)


def _problem(nx=4, ny=2, kind="stokes", rmin=None, dp_max=100.0, **kw):
    mesh = skfem.MeshTri.init_tensor(np.linspace(0, 2, nx + 1), np.linspace(0, 1, ny + 1))
    build = stokes if kind == "stokes" else (lambda m, **a: navier_stokes(m, mu=0.1, **a))
    model = build(mesh, alpha_max=1e3, dirichlet=[
        (lambda x: (x[1] < TOL) | (x[1] > 1 - TOL), 0.0),
        (LEFT, parabolic_inlet([0, 0.5], 1.0))])
    thermal = Convection(mesh, fixed=LEFT, order=kw.pop("order", 1), rho_c=5.0,
                         k=(0.1, 0.01), q_k=1.0,
                         source=(lambda x: 1.0 * HEATED(x), lambda x: 0.5 * HEATED(x)))
    return ConvectionProblem(model, thermal, 0.5, rmin, heated=HEATED, inlet=LEFT,
                             outlet=RIGHT, dp_max=dp_max, **kw)


def test_empty_channel_is_poiseuille():
    # 12 mu U L / h^2 with U = 2/3 (peak 1), L = 2, h = 1, mu = 1
    p = _problem(8, 4)
    assert p.empty_pressure_drop() == pytest.approx(16.0, rel=1e-10)
    T, fluid, dp = p.responses_at(np.ones(p.n))
    assert float(fluid) == pytest.approx(1.0, abs=1e-14)
    assert float(dp) == pytest.approx(16.0, rel=1e-10)


def test_temperature_is_one_linear_solve():
    # Convection.linear: solve_nonlinear takes one Newton step and the adjoint
    # reuses its factorization, so the gradient equals the direct solve's
    p = _problem(6, 3)
    rho = np.linspace(0.2, 0.9, p.n)
    w = np.asarray(p.state(rho))
    T = np.asarray(p.temperature(w, rho))
    pp, direct = np.concatenate([w[:p.model.nu], rho]), np.zeros(p.thermal.n)
    free = np.setdiff1d(np.arange(p.thermal.n), p.thermal.fixed)   # one scipy solve
    J, R0 = p.thermal.jacobian(direct, pp)[free][:, free], p.thermal.residual(direct, pp)
    direct[free] = -scipy.sparse.linalg.spsolve(J.tocsc(), R0[free])
    np.testing.assert_allclose(T, direct, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["stokes", "navier-stokes"])
def test_chain_every_mode(kind):
    p = _problem(kind=kind, newton={"rtol": 1e-12})
    rho = np.random.default_rng(1).uniform(0.3, 0.9, p.n)
    # measured: 7.5e-13 .. 2.9e-11 (Stokes), 3.0e-14 .. 2.2e-11 (Navier-Stokes, Re = 10)
    report = ad.check_modes(lambda r: p.responses_at(r), rho, rtol=1e-8)
    assert max(report.values()) < 1e-8


def test_chain_p2_temperature_reverse():
    p = _problem(order=2)
    rho = np.random.default_rng(2).uniform(0.3, 0.9, p.n)
    report = ad.check_modes(lambda r: p.responses_at(r)[0], rho, modes=("reverse",),
                            rtol=1e-5)
    assert max(report.values()) < 1e-5


def test_objective_taylor_rate():
    p = _problem(12, 6, rmin=0.3)
    rng = np.random.default_rng(3)
    x = rng.uniform(0.3, 0.7, p.n)
    rate = ad.taylor_test(lambda z: p.objective(z), x, rng.standard_normal(p.n), h0=1e-2)
    assert rate >= 1.9                     # measured 1.9986


def test_responses_scaled_and_named():
    p = _problem(8, 4, dp_max=32.0)
    p.prepare(np.full(p.n, 0.5), None)
    f, g_fluid, g_dp = p.responses(np.ones(p.n))
    assert float(g_fluid) == pytest.approx(1.0 / 0.5 - 1.0)
    assert float(g_dp) == pytest.approx(16.0 / 32.0 - 1.0, rel=1e-10)
    assert float(f) == pytest.approx(float(p.objective(np.ones(p.n))) / p.c0)
    assert p.constraint_names == ["fluid fraction / 0.5 - 1", "dp / 32 - 1"]


def test_refusals():
    p = _problem()
    with pytest.raises(TypeError, match="thermal must be a topopt.flow.Convection"):
        ConvectionProblem(p.model, object(), 0.5, heated=HEATED, inlet=LEFT, outlet=RIGHT,
                          dp_max=1.0)
    with pytest.raises(ValueError, match="dp_max"):
        ConvectionProblem(p.model, p.thermal, 0.5, heated=HEATED, inlet=LEFT, outlet=RIGHT,
                          dp_max=-1.0)
    with pytest.raises(ValueError, match="T0 has shape"):
        ConvectionProblem(p.model, p.thermal, 0.5, heated=HEATED, inlet=LEFT, outlet=RIGHT,
                          dp_max=1.0, T0=np.zeros(3))
    other = Convection(skfem.MeshTri(), order=1)
    with pytest.raises(ValueError, match="flow model's mesh"):
        ConvectionProblem(p.model, other, 0.5, heated=HEATED, inlet=LEFT, outlet=RIGHT,
                          dp_max=1.0)
