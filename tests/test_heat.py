"""Issue 14, item 2: heat conduction, the volume-to-point problem.

FE checks of `fem.heat` against closed forms (a bar with a uniform source, two
conductors in series), rule and Taylor tests of the problem's chain, the
optimized design (a tree rooted at the sink), and the analysis against pyMOTO
(scripts/crosscheck/pymoto_heat.py, when an interpreter with pymoto is at hand).
"""

import importlib.util
import json
import os

import numpy as np
import pytest
from scipy import ndimage

from topopt import ad, fem
from topopt.formulations.compliance import ComplianceProblem

from topopt_problems import heat_sink

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ------------------------------------------------------------ FE against closed forms

@pytest.mark.parametrize("L, H, h, q, k", [
    (10, 1, 1.0, 1.0, 1.0),
    (8, 2, 0.5, 0.3, 2.5),
    (12, 4, 2.0, 2.0, 0.1),
])
def test_bar_with_uniform_source(L, H, h, q, k):
    """-k T'' = q on (0, L), T(0) = 0, T'(L) = 0: T(x) = q (L x - x^2 / 2) / k.

    Bilinear elements are exact at the nodes for this 1-D solution (the
    y-direction carries no gradient; 1-D linear elements are nodally exact).
    """
    nelx, nely = round(L / h), round(H / h)
    model = fem.heat(fem.rectangle(nelx, nely, h=h), k0=k)
    model.fix(nodes=lambda p: np.isclose(p[0], 0.0))
    f = model.body_load((q,))
    assert f.sum() == pytest.approx(q * L * H, rel=1e-13)          # the source integrates
    T = model.solve(np.ones(model.n_el), f)
    x = model.mesh.p[0, model.basis.nodal_dofs[0]]
    exact = q * (L * x - x ** 2 / 2) / k
    assert np.max(np.abs(T[model.basis.nodal_dofs[0]] - exact)) <= 1e-12 * exact.max()


@pytest.mark.parametrize("k1, k2", [(1.0, 1.0), (1.0, 1e-3), (0.2, 5.0)])
def test_two_conductors_in_series(k1, k2):
    """k1 on x < L/2, k2 beyond, T(0) = 0, flux q into the right end: T(L) = q L/2 (1/k1 + 1/k2)
    and the thermal compliance is q^2 H L/2 (1/k1 + 1/k2), the series resistance."""
    L, H, q = 10, 2, 0.7
    model = fem.heat(fem.rectangle(L, H))
    model.fix(nodes=lambda p: np.isclose(p[0], 0.0))
    f = model.traction(lambda p: np.isclose(p[0], L), (q,))
    k = np.where(fem.element_centroids(model.mesh)[:, 0] < L / 2, k1, k2)
    T = fem.solve(model.system(), k, f)
    x = model.mesh.p[0, model.basis.nodal_dofs[0]]
    exact = np.where(x <= L / 2, q * x / k1, q * L / (2 * k1) + q * (x - L / 2) / k2)
    np.testing.assert_allclose(T[model.basis.nodal_dofs[0]], exact, rtol=1e-11, atol=1e-13)
    assert float(f @ T) == pytest.approx(q ** 2 * H * L / 2 * (1 / k1 + 1 / k2), rel=1e-12)


# ------------------------------------------------------------ the problem's chain

def sink_problem(n=8, **kw):
    mesh, model, f = heat_sink.setup(n, n)
    return ComplianceProblem(model, f, 0.4, 1.5, Emin=heat_sink.K_MIN, **kw)


def test_sink_is_the_middle_tenth_of_the_left_edge():
    mesh, model, f = heat_sink.setup(40, 40)
    p = mesh.p[:, model.fixed]
    assert np.all(p[0] == 0.0)
    np.testing.assert_array_equal(np.sort(p[1]), [18, 19, 20, 21, 22])
    assert f.sum() == pytest.approx(heat_sink.Q * 1600, rel=1e-13)


@pytest.mark.parametrize("filter, beta", [("density", None), ("helmholtz", 4.0)])
def test_taylor_full_chain(filter, beta):
    """x -> filter (-> projection) -> SIMP conductivity -> T = K^-1 f -> c = f^T T."""
    problem = sink_problem(12, filter=filter)
    rng = np.random.default_rng(0)
    x = rng.uniform(0.2, 0.8, problem.n)
    rate = ad.taylor_test(lambda x: problem.compliance(x, beta), x,
                          rng.standard_normal(problem.n))
    assert rate >= 1.9


def test_chain_in_every_mode():
    """Reverse, forward, Hessian-vector and reverse-over-reverse of the thermal compliance."""
    problem = sink_problem(4)
    x = np.random.default_rng(1).uniform(0.3, 0.9, problem.n)
    report = ad.check_modes(problem.compliance, x, rtol=1e-5)
    assert max(report.values()) < 1e-5


def test_the_gradient_is_the_adjoint_formula():
    """Self-adjoint: dc/dk_e = -T_e^T K_e T_e, chained through SIMP and the filter."""
    problem = sink_problem(6)
    x = np.random.default_rng(2).uniform(0.2, 0.9, problem.n)
    x_phys = problem.x_phys(x)
    T = fem.solve(problem.system, problem.stiffness(x), problem.f)
    Te = T[problem.model.basis.element_dofs.T]                     # (n_el, 4)
    ce = np.einsum("ei,eij,ej->e", Te, problem.model.Ke, Te)
    dk = 3.0 * (1 - heat_sink.K_MIN) * x_phys ** 2
    want = problem.filter.matrix.T @ (-dk * ce)
    np.testing.assert_allclose(ad.gradient(problem.compliance, x), want, rtol=1e-10)


# ------------------------------------------------------------ the optimized design

def test_optimized_conductor_is_a_tree_rooted_at_the_sink(tmp_path):
    out = str(tmp_path / "heat")
    n = 40
    result = heat_sink.run(n, n, rmin=1.2, maxeval=150, out=out)
    assert result["volume"] == pytest.approx(0.4, abs=2e-3)
    history = [h["objective"] for h in result["history"]]
    assert history[-1] < 0.2 * history[0]                  # far better than uniform 0.4
    solid = result["x_phys"].reshape(n, n) > 0.5            # [ix, iy]: column-major elements
    labels, _ = ndimage.label(solid)
    sink = labels[0, 18:22]
    assert np.all(sink == sink[0]) and sink[0] > 0          # solid at the sink
    assert np.count_nonzero(labels == sink[0]) >= 0.9 * solid.sum()   # one conductor
    # branches: the conductor crosses the vertical line x = 0.9 L several times
    crossings = np.count_nonzero(np.diff(solid[int(0.9 * n)].astype(int)) == 1)
    assert crossings >= 5
    saved = json.load(open(os.path.join(out, "result.json")))
    assert saved["setup"]["k_min"] == heat_sink.K_MIN
    assert saved["result"]["compliance"] == pytest.approx(result["compliance"])


# ------------------------------------------------------------ pyMOTO cross-check

def _pymoto_python():
    path = os.environ.get("PYMOTO_PYTHON", "/tmp/pymoto-venv/bin/python")
    return path if os.access(path, os.X_OK) else None


@pytest.mark.skipif(_pymoto_python() is None, reason="no interpreter with pymoto "
                    "(set PYMOTO_PYTHON)")
def test_analysis_matches_pymoto(monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(ROOT, "scripts", "crosscheck"))  # its pymoto_bridge
    spec = importlib.util.spec_from_file_location(
        "pymoto_heat", os.path.join(ROOT, "scripts", "crosscheck", "pymoto_heat.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.compare("heat_sink", _pymoto_python())
    assert len(rows) == 5
    for r in rows:
        assert max(r["err_c"], r["err_dc"], r["err_v"], r["err_dv"]) <= 1e-6
