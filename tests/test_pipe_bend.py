"""The pipe bend (problems/pipe_bend.py, pipe_bend3d.py): Alexandersen's interpolation and
continuation, his symmetric-gradient objective, Newton at Re = 500 with and without
continuation, Taylor rates through the Newton primitive."""

import os
import sys

import numpy as np
import pytest
import skfem
from skfem.helpers import dot

from topopt import ad, fem
from topopt.flow import alpha, dissipated_power, parabolic_inlet, stokes
from topopt.formulations.flow import FlowProblem

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "problems"))
import pipe_bend  # noqa: E402



def annulus(mesh, r0=0.7, r1=0.9):
    """The bend's obvious channel: fluid in the quarter annulus r0 < |x| < r1 (element
    centroids), which joins the inlet (x = 0, 0.7 <= y <= 0.9) to the outlet."""
    r = np.linalg.norm(mesh.p[:, mesh.t].mean(axis=1), axis=0)
    return np.where((r > r0) & (r < r1), 1.0, 0.0)


def test_interpolation_is_alexandersens_with_q_inverse():
    """alpha_min + (alpha_max - alpha_min)(1 - x)/(1 + q_A x) (topFlow.m) equals Borrvall &
    Petersson's alpha with q = 1/q_A, and q_init puts alpha(volfrac) at 2.5 mu / 0.1^2."""
    for re in pipe_bend.REYNOLDS:
        _, model = pipe_bend.setup(re, 5)
        qs = pipe_bend.q_values(model, 0.25)
        a_min, a_max = model.alpha_min, model.alpha_max
        x = np.linspace(0.0, 1.0, 11)
        for q in qs:
            q_a = 1.0 / q
            topflow = a_min + (a_max - a_min) * (1 - x) / (1 + q_a * x)
            np.testing.assert_allclose(alpha(x, a_min, a_max, q), topflow, rtol=1e-12,
                                       atol=1e-12 * a_max)
        assert alpha(np.array([0.25]), a_min, a_max, qs[0])[0] == \
            pytest.approx(2.5 * model.mu / 0.1 ** 2, rel=1e-12)
        np.testing.assert_allclose(np.array(qs) / qs[0], [1, 2, 10, 20])


def test_table4_parameters():
    """Alexandersen's Table 4: mu = 1/(5 Re), alpha_min = 2.5 mu / (1/5)^2, x 1e4."""
    p = pipe_bend.parameters(100)
    assert p["mu"] == pytest.approx(0.002) and p["alpha_min"] == pytest.approx(62.5 * 0.002)
    assert p["alpha_max"] == pytest.approx(1e4 * p["alpha_min"]) and p["rho_f"] == 1.0
    with pytest.raises(ValueError, match=r"re must be one of \(0, 10, 100, 500\)"):
        pipe_bend.parameters(50)


def test_symmetric_gradient_convention():
    """grad u : grad u^T vanishes for a shear flow u = (f(y), 0) (Poiseuille): the two
    conventions agree to round-off; the rotation u = (-y, x) has grad u : grad u^T = -2."""
    mesh = skfem.MeshTri.init_tensor(np.linspace(0, 2, 7), np.linspace(0, 1, 5))
    walls = [(lambda x: (x[1] < 1e-9) | (x[1] > 1 - 1e-9), 0.0),
             (lambda x: x[0] < 1e-9, parabolic_inlet([0, 0.5], 1.0))]
    model = stokes(mesh, mu=0.3, alpha_min=0.0, dirichlet=walls)
    rho = np.ones(mesh.nelements)
    w = fem.solve_nonlinear(model, rho, model.initial_state())
    j = [float(dissipated_power(model, w, rho, c)) for c in ("borrvall-petersson", "alexandersen")]
    # Poiseuille: 1/2 mu int |du/dy|^2 = 1/2 * 0.3 * 16/3 * length 2
    assert j[0] == pytest.approx(0.5 * 0.3 * 16 / 3 * 2, rel=1e-10)
    assert j[1] == pytest.approx(j[0], rel=1e-10)
    u = model.space.interpolate_velocity(lambda x: np.array([-x[1], x[0]]))
    w = np.concatenate([u, np.zeros(model.space.np_)])
    # mu/2 int (|grad u|^2 + grad u : grad u^T) = 0.15 * (2 - 2) * area 2 = 0
    assert float(dissipated_power(model, w, rho, "alexandersen")) == pytest.approx(0.0, abs=1e-10)


def test_symmetric_gradient_rules():
    mesh, model = pipe_bend.setup(100, 5)
    rng = np.random.default_rng(0)
    w = rng.standard_normal(model.n)
    ad.check_modes(lambda w, r: dissipated_power(model, w, r, "alexandersen"), w,
                   rng.uniform(0.2, 0.9, mesh.nelements))


def _outflow(model, w):
    """int_outlet u . n (outward normal) over the outlet facets, P2 integrated exactly."""
    fb = skfem.FacetBasis(model.space.mesh, model.space.basis_u.elem,
                          facets=model.space.facets(pipe_bend.outlet))
    u = fb.interpolate(w[:model.nu])
    return float(skfem.Functional(lambda v: dot(v["u"], v.n)).assemble(fb, u=u))


def test_newton_at_re500_needs_continuation():
    """Re = 500 on the quarter-annulus channel: Newton from the zero state stalls and says
    so (the residual norm, the iterations, continuation as the remedy); five steps of the
    convective term's t converge, and the outflow equals the inflow 2/3 * 0.2 (Taylor-Hood
    conserves mass through the boundary exactly: the constant is in the pressure space)."""
    mesh, model = pipe_bend.setup(500, 10)
    model = model.with_parameters(q=pipe_bend.q_values(model, 0.25)[-1])
    rho = annulus(mesh)
    with pytest.raises(fem.NewtonError, match=r"residual norm .* after 25 iterations.*"
                                              r"continuation steps") as info:
        fem.solve_nonlinear(model, rho, model.initial_state(), maxiter=25)
    assert info.value.residual > 1e-3 and info.value.iterations == 25
    norms = []
    w = fem.solve_nonlinear(model, rho, model.initial_state(), maxiter=25,
                            steps=(0.2, 0.4, 0.6, 0.8, 1.0),
                            monitor=lambda t, it, r: norms.append((t, it, r)))
    assert norms[-1][0] == 1.0 and norms[-1][2] < 1e-10 * norms[0][2] + 1e-11
    assert _outflow(model, w) == pytest.approx(2 / 3 * 0.2, rel=1e-10)      # outward


def test_objective_taylor_rate_re100():
    """The bend's J at Re = 100 through Newton (FlowProblem): Taylor rate >= 1.9."""
    mesh, model = pipe_bend.setup(100, 6)
    problem = FlowProblem(model, 0.25, newton=dict(rtol=1e-13))
    q = pipe_bend.q_values(model, 0.25)[-1]
    x = 0.2 + 0.6 * annulus(mesh)
    dx = np.random.default_rng(1).standard_normal(problem.n)
    assert ad.taylor_test(lambda x: problem.objective(x, q), x, dx) >= 1.9


def test_small_runs_write_the_pictures(tmp_path):
    for re in (0, 100):                 # Re = 500 wants a finer mesh than 6 x 6 (cell Re)
        result = pipe_bend.run(re=re, n=6, maxeval=4, out=str(tmp_path / str(re)),
                               verbose=False)
        assert result["dissipated_power_alexandersen"] > 0 and result["dissipated_power"] > 0
        assert os.path.isfile(tmp_path / str(re) / "flow.png")


def test_objective_taylor_rate_3d():
    """The 3-D bend's J on tetrahedra (n = 6, 1 296 tetrahedra) through the Stokes solve:
    Taylor rate >= 1.9 at the last q of its continuation."""
    from topopt_problems import pipe_bend3d
    mesh, model = pipe_bend3d.setup(6)
    problem = FlowProblem(model, 0.12)
    q = pipe_bend3d.q_values(model, 0.12)[-1]
    rng = np.random.default_rng(2)
    x, dx = rng.uniform(0.3, 0.9, problem.n), rng.standard_normal(problem.n)
    assert ad.taylor_test(lambda x: problem.objective(x, q), x, dx) >= 1.9
