"""Dynamic compliance: `fem.HarmonicSystem`, `responses.dynamic_compliance`, the formulation.

Sources of the asserted numbers: the closed form of a damped bar's end
response, the static compliance (omega = 0), the two direct backends
against each other, central differences (`ad.check_modes`), Taylor
remainders, and pyMOTO's dynamic-compliance example (scripts/crosscheck/pymoto_dynamic.py,
when an interpreter with pymoto is at hand).
"""

import importlib.util
import os

import numpy as np
import pytest

from topopt import ad, fem
from topopt.fem.harmonic import HarmonicSystem
from topopt.fem.solvers.direct import has_module
from topopt.formulations.compliance import ComplianceProblem
from topopt.formulations.dynamic import DynamicComplianceProblem
from topopt.responses.dynamic import dynamic_compliance

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _bar(n):
    """A fixed-free bar of `n` unit elements (1 high, nu = 0, E = rho = 1), axial motion only."""
    model = fem.elasticity(fem.rectangle(n, 1), nu=0.0).fix(
        nodes=lambda x: np.isclose(x[0], 0)).fix(nodes=lambda x: x[0] >= 0, components=1)
    f = model.point_load((n, 0), (0.5, 0)) + model.point_load((n, 1), (0.5, 0))
    return model, f


def _cantilever(nelx=8, nely=4):
    model = fem.elasticity(fem.rectangle(nelx, nely)).fix(nodes=lambda x: x[0] == 0)
    return model, model.point_load((nelx, nely / 2), (0, -1))


# ------------------------------------------------------------ the system against closed forms

@pytest.mark.parametrize("omega, alpha, beta", [
    (0.0125, 0.0, 0.0),             # k L = 1, below the first resonance pi / (2 L)
    (0.03125, 0.0, 0.0),            # k L = 2.5, between the first and the second 3 pi / (2 L)
    (np.pi / 160, 0.0, 0.5),        # at the first resonance, stiffness-proportional damping
    (0.0375, 0.002, 0.0),           # mass-proportional damping
    (0.075, 0.002, 2.0),            # both, k L ~ 6
])
def test_bar_end_response_matches_the_damped_wave_closed_form(omega, alpha, beta):
    # E u'' (1 + i w beta) + (w^2 - i w alpha) u = 0, u(0) = 0, E* u'(L) = 1:
    # u(L) = tan(k L) / (E* k), E* = 1 + i w beta, k^2 = (w^2 - i w alpha) / E*
    L = 80
    model, f = _bar(L)
    u = HarmonicSystem(model, omega, alpha, beta).solve(np.ones(L), np.ones(L), f)
    E = 1 + 1j * omega * beta
    k = np.sqrt((omega ** 2 - 1j * omega * alpha) / E)
    exact = np.tan(k * L) / (E * k)
    # the FE dispersion (k h)^2 of the consistent mass: measured 8e-6 .. 3.3e-3 (at resonance)
    assert abs(f @ u - exact) <= 5e-3 * abs(exact)


def test_zero_frequency_is_the_static_compliance():
    model, f = _cantilever()
    x = np.random.default_rng(1).uniform(0.1, 1.0, model.n_el)
    static = ComplianceProblem(model, f, 0.5, 1.5).compliance(x)
    dynamic = DynamicComplianceProblem(model, f, 0.0, 0.5, 1.5).dynamic_compliance(x)
    assert dynamic == pytest.approx(float(static), rel=1e-12)


@pytest.mark.skipif(not has_module("cvxopt"), reason="UMFPACK needs cvxopt")
def test_umfpack_and_superlu_agree_above_resonance():
    model, f = _cantilever(12, 6)
    x = np.random.default_rng(2).uniform(0.1, 1.0, model.n_el)
    E = 1e-9 + x ** 3
    us = [HarmonicSystem(model, 0.2, 1e-3, 1e-3, solver=s).solve(E, E, f)
          for s in ("umfpack", "superlu")]
    assert np.max(np.abs(us[0] - us[1])) <= 1e-10 * np.max(np.abs(us[1]))
    assert HarmonicSystem(model, 0.2).solver == "umfpack"        # what "auto" takes


def test_bar_first_eigenfrequency_is_the_closed_form():
    # pi / (2 L), the resonance of the closed-form table above, from fem.modal's same masses
    L = 80
    model, _ = _bar(L)
    lam = fem.ModalSystem(model, n_modes=1).modes(np.ones(L), np.ones(L))[0]
    assert np.sqrt(lam[0]) == pytest.approx(np.pi / (2 * L), rel=1e-3)


# ------------------------------------------------------------ derivatives

@pytest.mark.parametrize("omega, alpha, beta", [(0.05, 0.0, 0.0), (0.3, 0.02, 0.01)])
def test_rules_of_the_harmonic_solve_in_every_mode(omega, alpha, beta):
    model, f = _cantilever(6, 3)
    S = HarmonicSystem(model, omega, alpha, beta)
    rng = np.random.default_rng(3)
    E, rho = rng.uniform(0.1, 1.0, (2, model.n_el))
    report = ad.check_modes(lambda E, rho: dynamic_compliance(S.solve(E, rho, f), f), E, rho)
    assert max(report.values()) <= 1e-6
    report = ad.check_modes(lambda E: S.solve(E, rho, f)[-3:], E, modes=("reverse", "forward"))
    assert max(report.values()) <= 1e-6


def test_rules_of_the_response_in_every_mode():
    rng = np.random.default_rng(4)
    u = rng.standard_normal(6) + 1j * rng.standard_normal(6)
    f = rng.standard_normal(6)
    report = ad.check_modes(dynamic_compliance, u, f)
    assert max(report.values()) <= 1e-6
    U, F = u.reshape(3, 2), f.reshape(3, 2)          # two load cases: sum of the moduli
    assert dynamic_compliance(U, F) == pytest.approx(
        abs(F[:, 0] @ U[:, 0]) + abs(F[:, 1] @ U[:, 1]), rel=1e-14)


@pytest.mark.parametrize("mass", ["simp", "du_olhoff"])
def test_taylor_test_of_the_problem_objective(mass):
    model, f = _cantilever(10, 5)
    p = DynamicComplianceProblem(model, f, 0.05, 0.5, 1.5, alpha=1e-3, beta=1e-3, mass=mass)
    rng = np.random.default_rng(5)
    x = rng.uniform(0.2, 0.9, p.n)
    p.c0 = float(p.dynamic_compliance(x))
    dx = rng.standard_normal(p.n)
    assert ad.taylor_test(lambda z: p.responses(z)[0], x, dx) >= 1.9   # the volume is linear


def test_problem_rules_in_every_mode():
    model, f = _cantilever(6, 3)
    p = DynamicComplianceProblem(model, f, 0.1, 0.5, 1.5, alpha=1e-3, beta=1e-3,
                                 mass="du_olhoff")
    x = np.random.default_rng(6).uniform(0.2, 0.9, p.n)
    assert max(ad.check_modes(p.dynamic_compliance, x).values()) <= 1e-6


# ------------------------------------------------------------ refusals

@pytest.mark.parametrize("kwargs, match", [
    (dict(omega=-1.0), "omega"),
    (dict(alpha=-0.1), "alpha"),
    (dict(beta=float("nan")), "beta"),
    (dict(rho0=0.0), "rho0"),
    (dict(solver="cholmod"), "solver"),
])
def test_harmonic_system_refuses_bad_arguments(kwargs, match):
    model, _ = _cantilever()
    args = dict(omega=0.1) | kwargs
    with pytest.raises(ValueError, match=match):
        HarmonicSystem(model, **args)


def test_harmonic_system_refuses_bad_coefficients():
    model, f = _cantilever()
    S = HarmonicSystem(model, 0.1)
    n = model.n_el
    with pytest.raises(ValueError, match="E must be a real vector of shape"):
        S.solve(np.ones(n + 1), np.ones(n), f)
    with pytest.raises(ValueError, match="rho must be a real vector"):
        S.solve(np.ones(n), np.ones(n) * 1j, f)
    with pytest.raises(ValueError, match="rho"):
        S.solve(np.ones(n), np.full(n, np.nan), f)
    with pytest.raises(TypeError, match="model"):
        HarmonicSystem(None, 0.1)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(mass="linear"), ValueError, "mass"),
    (dict(omega=-0.1), ValueError, "omega"),
    (dict(f="zero"), ValueError, "nonzero"),
    (dict(f="complex"), TypeError, "real"),
    (dict(volfrac=1.5), ValueError, "volfrac"),
])
def test_problem_refuses_bad_arguments(kwargs, error, match):
    model, f = _cantilever()
    loads = {"zero": np.zeros_like(f), "complex": f * 1j}
    args = dict(f=f, omega=0.1, volfrac=0.5, rmin=1.5) | kwargs
    args["f"] = loads.get(args["f"], args["f"]) if isinstance(args["f"], str) else args["f"]
    with pytest.raises(error, match=match):
        DynamicComplianceProblem(model, **args)


# ------------------------------------------------------------ against pyMOTO

def _pymoto_python():
    path = os.environ.get("PYMOTO_PYTHON", "/tmp/pymoto-venv/bin/python")
    return path if os.access(path, os.X_OK) else None


@pytest.mark.skipif(_pymoto_python() is None, reason="no interpreter with pymoto "
                    "(set PYMOTO_PYTHON)")
def test_dynamic_compliance_matches_pymoto(monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(ROOT, "scripts", "crosscheck"))  # its pymoto_bridge
    spec = importlib.util.spec_from_file_location(
        "pymoto_dynamic", os.path.join(ROOT, "scripts", "crosscheck", "pymoto_dynamic.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.compare("pymoto_example", _pymoto_python())
    assert len(rows) == 5
    for r in rows:
        assert max(r["err_c"], r["err_dc"], r["err_v"], r["err_dv"]) <= 1e-8
        assert r["hz"][0] < 370.0          # the load lies above each design's first resonance


# ------------------------------------------------------------ the problem script

def test_dynamic_beam_moves_the_resonance_above_the_load():
    from topopt_problems import dynamic_beam
    r = dynamic_beam.run(nelx=24, nely=12, static_maxeval=40, maxeval=30)
    assert r["omega"] == pytest.approx(0.95 * r["omega1_static"], rel=1e-12)
    # the static design near resonance responds several times its static compliance
    assert r["dynamic_compliance_static"] > 3 * r["compliance_static"]
    assert r["dynamic_compliance"] < 0.5 * r["dynamic_compliance_static"]
    assert r["eigenfrequencies"][0] > 1.1 * r["omega"]        # the resonance moved up
    assert r["omega1_uniform"] < r["omega"]                   # why it starts from the static design
    assert r["volume"] <= 0.5 + 1e-6
