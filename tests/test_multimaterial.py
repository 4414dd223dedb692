"""Ordered multi-material SIMP (Zuo & Saitou 2017): the interpolation's rules in every mode,
its values at the phases, the rule-of-mixtures bars, the formulation's Taylor tests, the script."""

import importlib.util
import os

import numpy as np
import pytest

from topopt import ad, fem
from topopt.design.interpolation import simp
from topopt.design.multimaterial import (check_phases, ordered_simp, phase_fraction,
                                         phase_index)
from topopt.formulations.compliance import ComplianceProblem
from topopt.formulations.multimaterial import MultiMaterialCompliance
from topopt.plot.figures import design_figure

from topopt_problems import mbb_beam, multimaterial_beam

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = {f"{m}/arg 0" for m in ("reverse", "forward", "hvp", "nested")}

# (rho, E, penal, Emin): Zuo & Saitou's 3 materials, 2 materials, a non-monotone E, one phase
RULES = [
    ((0.4, 0.7, 1.0), (0.2, 0.6, 1.0), 3.0, 1e-9),
    ((0.5, 1.0), (0.3, 1.0), 3.0, 1e-9),
    ((0.5, 1.0), (0.3, 1.0), 1.0, 0.0),
    ((0.3, 0.6, 1.0), (0.5, 0.2, 1.0), 4.5, 1e-3),
    ((1.0,), (2.0,), 3.0, 1e-6),
]


def off_knots(rho, n, seed, margin=1e-2):
    """Seeded densities in (0, 1) at least `margin` from every knot (no segment change
    within a finite-difference step)."""
    x = np.random.default_rng(seed).uniform(margin, 1 - margin, 4 * n)
    knots = np.concatenate([[0.0], rho])
    keep = np.min(np.abs(x[:, None] - knots), axis=1) > margin
    return x[keep][:n]


def reference(x, rho, E, p, Emin):
    """The paper's piecewise law, written independently: a loop over the segments."""
    knots, vals = np.r_[0.0, rho], np.r_[Emin, E]
    y = np.empty_like(x)
    for i in range(1, knots.size):
        on = (x >= knots[i - 1]) & (x <= knots[i])
        A = (vals[i - 1] - vals[i]) / (knots[i - 1] ** p - knots[i] ** p)
        y[on] = A * x[on] ** p + vals[i - 1] - A * knots[i - 1] ** p
    return y


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("rho, E, penal, Emin", RULES)
def test_ordered_simp_every_mode(rho, E, penal, Emin, seed):
    x = off_knots(rho, 15, seed)
    report = ad.check_modes(lambda x: ordered_simp(x, rho, E, penal, Emin), x, seed=seed)
    assert set(report) == MODES and all(v < 1e-6 for v in report.values()), report


@pytest.mark.parametrize("phase", [0, 1, 2, 3])
def test_phase_fraction_every_mode(phase):
    rho = (0.4, 0.7, 1.0)
    report = ad.check_modes(lambda x: phase_fraction(x, rho, phase), off_knots(rho, 15, 3))
    assert set(report) == MODES and all(v < 1e-6 for v in report.values()), report


@pytest.mark.parametrize("rho, E, penal, Emin", RULES)
def test_values_at_the_phases_and_between(rho, E, penal, Emin):
    """E(rho_i) = E_i, E(0) = Emin; between, the paper's law (an independent loop)."""
    knots = np.r_[0.0, rho]
    np.testing.assert_allclose(ordered_simp(knots, rho, E, penal, Emin), np.r_[Emin, E],
                               rtol=1e-14, atol=1e-15)
    x = np.linspace(0.0, 1.0, 101)
    np.testing.assert_allclose(ordered_simp(x, rho, E, penal, Emin),
                               reference(x, rho, E, penal, Emin), rtol=1e-13, atol=1e-15)


def test_one_phase_is_simp():
    """With one solid phase ordered SIMP is top88's modified SIMP, value and gradient."""
    x = np.linspace(0.0, 1.0, 21)
    np.testing.assert_allclose(ordered_simp(x, (1.0,), (1.0,), 3.0, 1e-9), simp(x, 3.0, 1e-9),
                               rtol=1e-14)
    g = ad.gradient(lambda x: np.sum(ordered_simp(x, (1.0,), (1.0,), 3.0, 1e-9)), x)
    np.testing.assert_allclose(g, 3 * (1 - 1e-9) * x ** 2, rtol=1e-14)


def test_phase_fractions_split_the_density():
    """The hats sum to 1 and their rho-weighted sum is x (the mass); nearest phase index."""
    rho = (0.4, 0.7, 1.0)
    x = np.linspace(0.0, 1.0, 41)
    phi = np.array([phase_fraction(x, rho, i) for i in range(4)])
    np.testing.assert_allclose(phi.sum(axis=0), 1.0, rtol=1e-14)
    np.testing.assert_allclose(np.r_[0.0, rho] @ phi, x, atol=1e-15)
    assert phi.min() >= 0.0
    np.testing.assert_array_equal(phase_index([0.0, 0.19, 0.21, 0.56, 0.86, 1.0], rho),
                                  [0, 0, 1, 2, 3, 3])


@pytest.mark.parametrize("call, error, message", [
    (lambda: check_phases((0.7, 0.4, 1.0)), ValueError, "strictly increasing"),
    (lambda: check_phases((0.0, 1.0)), ValueError, "strictly increasing"),
    (lambda: check_phases((0.5, 0.9)), ValueError, "must end at 1"),
    (lambda: check_phases((0.5, 1.0), (1.0,)), ValueError, "expected \\(2,\\)"),
    (lambda: check_phases((0.5, 1.0), (-1.0, 1.0)), ValueError, "E must be >= 0"),
    (lambda: check_phases(np.linspace(0.1, 1, 9)), ValueError, "1 to 8"),
    (lambda: ordered_simp([0.5], (1.0,), (1.0,), penal=0.5), ValueError, "penal"),
    (lambda: ordered_simp([0.5], (1.0,), (1.0,), Emin=-1.0), ValueError, "Emin"),
    (lambda: ordered_simp([1.5], (1.0,), (1.0,)), ValueError, "x must lie in"),
    (lambda: ordered_simp([np.nan], (1.0,), (1.0,)), ValueError, "NaN"),
    (lambda: phase_fraction([0.5], (0.5, 1.0), 3), ValueError, "phase must be"),
    (lambda: phase_fraction([0.5], (0.5, 1.0), 1.0), TypeError, "phase must be an integer"),
    (lambda: ad.gradient(lambda r: np.sum(ordered_simp(np.ones(2), r, (1.0,))),
                         np.ones(1)), TypeError, "rho"),
    (lambda: ad.gradient(lambda x: np.sum(phase_index(x, (1.0,))), np.ones(2)), TypeError,
     "no derivative"),
])
def test_bad_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()


def _script():
    spec = importlib.util.spec_from_file_location(
        "multimaterial_closed_form", os.path.join(ROOT, "scripts", "crosscheck", "multimaterial_closed_form.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bars_in_series_and_parallel_match_the_closed_forms():
    """scripts/crosscheck/multimaterial_closed_form.py: 1/E = sum t_i/E_i and E = sum t_i E_i to
    round-off (its printed differences: 1.6e-13 to 4.3e-13)."""
    module = _script()
    rows = [module.fe_modulus(*case, nelx=20, nely=4) for case in module.CASES]
    assert {r["layout"] for r in rows} == {"series", "parallel"}
    for r in rows:
        assert r["rel_diff"] < 1e-11, r
        assert r["phase_E_error"] < 1e-14, r
    assert module.closed_form("series", (0.3, 1.0), (0.5, 0.5)) == pytest.approx(0.6 / 1.3)
    assert module.closed_form("parallel", (0.3, 1.0), (0.5, 0.5)) == pytest.approx(0.65)


# ------------------------------------------------------------------ the formulation

def small(limits="cumulative", materials="3", nelx=12, nely=4):
    rho, E, vmax = multimaterial_beam.MATERIALS[materials]
    _, model, f = mbb_beam.setup(nelx, nely)
    return MultiMaterialCompliance(model, f, rho, E, vmax, rmin=1.5, limits=limits)


@pytest.mark.parametrize("limits", ["cumulative", "phase"])
def test_taylor_objective_and_every_constraint(limits):
    """Projected (beta = 4): every response is nonlinear in x; rate >= 1.9 each."""
    p = small(limits)
    rng = np.random.default_rng(7)
    x, dx = rng.uniform(0.1, 0.9, p.n), rng.standard_normal(p.n)
    p.prepare(x, None)
    for k in range(1 + p.m):
        rate = ad.taylor_test(lambda z: p.responses(z, beta=4.0)[k], x, dx)
        assert rate >= 1.9, (k, rate)


@pytest.mark.parametrize("limits", ["cumulative", "phase"])
def test_unprojected_constraints_are_linear_and_their_gradients_exact(limits):
    """Without projection a constraint is linear in x within its segments: the gradient
    is its difference quotient to round-off (no Taylor remainder to take a rate of)."""
    p = small(limits)
    x = off_knots(p.rho, p.n, 5, margin=0.05)
    p.prepare(x, None)
    dx, h = np.random.default_rng(6).standard_normal(p.n), 1e-4
    for k in range(1, 1 + p.m):
        g = ad.gradient(lambda z: p.responses(z)[k], x)
        diff = (p.responses(x + h * dx)[k] - p.responses(x - h * dx)[k]) / (2 * h)
        assert g @ dx == pytest.approx(float(diff), rel=1e-9, abs=1e-12)


def test_one_phase_is_the_compliance_problem():
    """One solid phase (rho = 1, E = 1): the same compliance, constraint and gradient as
    `ComplianceProblem` with volfrac = Vmax."""
    _, model, f = mbb_beam.setup(12, 4)
    p = MultiMaterialCompliance(model, f, (1.0,), (1.0,), (0.5,), rmin=1.5)
    q = ComplianceProblem(model, f, 0.5, rmin=1.5)
    x = np.random.default_rng(2).uniform(0.05, 0.95, p.n)
    p.prepare(x, None), q.prepare(x, None)
    for k in range(2):
        assert float(p.responses(x)[k]) == pytest.approx(float(q.responses(x)[k]), rel=1e-12)
        np.testing.assert_allclose(ad.gradient(lambda z: p.responses(z)[k], x),
                                   ad.gradient(lambda z: q.responses(z)[k], x), rtol=1e-10,
                                   atol=1e-14)


def test_cumulative_limits_and_start():
    p = small("cumulative")
    np.testing.assert_allclose(p.gmax, [0.35, 0.2, 0.1])
    assert p.constraint_names == ["V1..3 / 0.35 - 1", "V2..3 / 0.2 - 1", "V3 / 0.1 - 1"]
    x0 = p.start()
    np.testing.assert_allclose(x0, 0.4 * 0.35)                  # rho_1 sum Vmax
    assert [float(v) for v in p.limited(p.x_phys(x0))] == pytest.approx([0.35, 0.0, 0.0])


@pytest.mark.parametrize("kwargs, message", [
    (dict(vmax=(0.5, 0.5)), "sum to < 1"),
    (dict(vmax=(0.2, 0.0)), "> 0 for each phase"),
    (dict(vmax=(0.2,)), "expected \\(2,\\)"),
    (dict(E=(1e-12, 1.0)), "exceed Emin"),
    (dict(limits="mass"), "limits must be one of"),
    (dict(rho=(0.5, 0.8)), "must end at 1"),
])
def test_formulation_refuses_bad_parameters(kwargs, message):
    _, model, f = mbb_beam.setup(6, 2)
    args = dict(rho=(0.5, 1.0), E=(0.3, 1.0), vmax=(0.2, 0.2), rmin=1.5) | kwargs
    with pytest.raises(ValueError, match=message):
        MultiMaterialCompliance(model, f, **args)


def test_script_run_writes_the_phase_picture(tmp_path):
    """A short run: the per-phase volumes within their limits, the files written."""
    result = multimaterial_beam.run(nelx=30, nely=10, maxeval=60, out=str(tmp_path))
    V = np.array(result["phase_volumes"])
    assert V[1] <= 0.2 + 1e-3 and V.sum() <= 0.4 + 1e-3
    assert result["mass"] == pytest.approx(0.5 * V[0] + V[1], abs=1e-12)
    for name in ("design.png", "density.png", "history.png", "result.json"):
        assert (tmp_path / name).stat().st_size > 0


def test_design_figure_draws_one_colour_per_phase():
    mesh = fem.rectangle(4, 2)
    phases = [("void", "white"), ("soft", "orange"), ("stiff", "tab:blue")]
    fig = design_figure(mesh, np.array([0, 1, 2, 2, 0, 1, 1, 2.0]), phases=phases)
    bar = fig.axes[1]
    assert [t.get_text() for t in bar.get_xticklabels()] == ["void", "soft", "stiff"]
    with pytest.raises(ValueError, match="phase indices 0 .. 2"):
        design_figure(mesh, np.full(8, 0.5), phases=phases)
    with pytest.raises(TypeError, match="label, colour"):
        design_figure(mesh, np.zeros(8), phases=["void"])
