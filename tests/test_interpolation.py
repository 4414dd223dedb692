"""Projection and SIMP/RAMP interpolation: values, rules, second derivatives, errors."""

import numpy as np
import pytest

from topopt import ad
from topopt.design.interpolation import project, project_rrule, ramp, simp

from oracles import central_gradient

RULES = [
    (project, {"beta": 8.0, "eta": 0.5}),
    (project, {"beta": 1.0, "eta": 0.3}),
    (project, {"beta": 32.0, "eta": 0.6}),
    (simp, {"penal": 3.0}),
    (simp, {"penal": 1.0, "Emin": 1e-3, "E0": 2.0}),
    (simp, {"penal": 4.5}),
    (ramp, {"q": 8.0}),
    (ramp, {"q": 0.5, "Emin": 0.0, "E0": 3.0}),
    (ramp, {"q": 0.0}),
    (ramp, {"q": 20.0, "Emin": 1e-3}),
]
RAMP_ROWS = [params for fun, params in RULES if fun is ramp]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("params", RAMP_ROWS)
def test_ramp_every_mode(params, seed):
    """RAMP's rules in reverse, forward, hvp and nested modes (Stolpe & Svanberg 2001)."""
    x = np.random.default_rng(seed).uniform(0.05, 0.95, 15)
    report = ad.check_modes(lambda x: ramp(x, **params), x, seed=seed)
    assert set(report) == {f"{m}/arg 0" for m in ("reverse", "forward", "hvp", "nested")}
    assert all(v < 1e-6 for v in report.values()), report


@pytest.mark.parametrize("params", RAMP_ROWS)
def test_ramp_formula(params):
    """``E = Emin + x / (1 + q (1 - x)) (E0 - Emin)``, ``E' = (1 + q) (E0 - Emin) / d^2``."""
    q, Emin, E0 = params["q"], params.get("Emin", 1e-9), params.get("E0", 1.0)
    x = np.linspace(0.0, 1.0, 11)
    d = 1 + q * (1 - x)
    np.testing.assert_allclose(ramp(x, **params), Emin + x / d * (E0 - Emin), rtol=1e-14)
    g = ad.gradient(lambda x: np.sum(ramp(x, **params)), x)
    np.testing.assert_allclose(g, (1 + q) * (E0 - Emin) / d ** 2, rtol=1e-14)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("fun, params", RULES)
def test_check_rule(fun, params, seed):
    x = np.random.default_rng(seed).uniform(0.05, 0.95, 20)
    report = ad.check_rule(fun, x, seed=seed, **params)
    assert report["arg 0 reverse"] < 1e-7
    assert report["arg 0 forward"] < 1e-7


def test_values():
    x = np.array([0.0, 0.25, 0.5, 1.0])
    # project: endpoints fixed, eta maps to tanh(b e) / (tanh(b e) + tanh(b (1 - e)))
    t4, t2 = np.tanh(4.0), np.tanh(2.0)
    np.testing.assert_allclose(project(x, 8.0, 0.5), [0.0, (t4 - t2) / (2 * t4), 0.5, 1.0],
                               rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(project(0.3, 2.0, 0.3),
                               np.tanh(0.6) / (np.tanh(0.6) + np.tanh(1.4)), rtol=1e-14)
    # a very sharp projection is a step at eta
    np.testing.assert_allclose(project(np.array([0.49, 0.51]), 1e4, 0.5), [0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(simp(x), [1e-9, 1e-9 + 0.015625 * (1 - 1e-9),
                                         1e-9 + 0.125 * (1 - 1e-9), 1.0], rtol=1e-14)
    np.testing.assert_allclose(simp(x, 2.0, 0.1, 2.0), [0.1, 0.21875, 0.575, 2.0], rtol=1e-14)
    np.testing.assert_allclose(ramp(x, 3.0, 0.0, 1.0), [0.0, 0.25 / 3.25, 0.2, 1.0], rtol=1e-14)
    # the rule's value equals the plain call, positional or keyword parameters
    y, _ = project_rrule(x, 8.0, 0.5)
    np.testing.assert_array_equal(y, project(x, beta=8.0, eta=0.5))


def test_derivatives_at_known_points():
    # project'(eta) = beta / (tanh(beta eta) + tanh(beta (1 - eta)))
    g = ad.gradient(lambda x: np.sum(project(x, 6.0, 0.4)), np.array([0.4]))
    np.testing.assert_allclose(g, 6.0 / (np.tanh(2.4) + np.tanh(3.6)), rtol=1e-14)
    # simp'(x) = p x^(p-1) (E0 - Emin); ramp'(0) = (E0 - Emin) / (1 + q)
    g = ad.gradient(lambda x: np.sum(simp(x, 3.0, 0.0, 2.0)), np.array([0.5, 1.0]))
    np.testing.assert_allclose(g, [1.5, 6.0], rtol=1e-14)
    g = ad.gradient(lambda x: np.sum(ramp(x, 8.0, 0.0, 1.0)), np.array([0.0, 1.0]))
    np.testing.assert_allclose(g, [1 / 9, 9.0], rtol=1e-14)


def test_parameters_are_not_differentiable():
    x = np.array([0.2, 0.7])
    _, back = project_rrule(x, 8.0, 0.5)
    xbar, bbar, ebar = back(np.ones(2))
    assert isinstance(bbar, ad.NotDifferentiable) and isinstance(ebar, ad.NotDifferentiable)
    with pytest.raises(TypeError, match="beta of project is not differentiable"):
        ad.gradient(lambda b: np.sum(project(x, b, 0.5)), 8.0)
    with pytest.raises(TypeError, match="penal of simp is not differentiable"):
        ad.jvp(lambda p: np.sum(simp(x, p)), (3.0,), (1.0,))
    np.testing.assert_allclose(xbar, central_gradient(lambda x: np.sum(project(x, 8.0, 0.5)), x),
                               rtol=1e-7)


@pytest.mark.parametrize("inner, outer", [
    (lambda x: project(x, 8.0, 0.5), lambda x: simp(x, 3.0)),
    (lambda x: project(x, 4.0, 0.3), lambda x: ramp(x, 5.0, 1e-3)),
])
def test_hvp_matches_differences_of_gradient(inner, outer):
    rng = np.random.default_rng(3)
    x, v, w = rng.uniform(0.1, 0.9, 12), rng.standard_normal(12), rng.uniform(0.5, 2, 12)

    def f(x):
        return np.sum(w * outer(inner(x)))

    hv = ad.hvp(f, x, v)
    h = 1e-5
    fd = (ad.gradient(f, x + h * v) - ad.gradient(f, x - h * v)) / (2 * h)
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-8 * np.abs(fd).max())
    # the Hessian of a sum of elementwise maps is diagonal: not a zero test
    assert np.abs(hv).max() > 1.0


def test_gradient_through_chain_matches_central_differences():
    rng = np.random.default_rng(4)
    x, w = rng.uniform(0.1, 0.9, 10), rng.standard_normal(10)

    def f(x):
        return np.sum(w * ramp(project(x, 8.0, 0.5), 8.0) + simp(x, 3.0))

    np.testing.assert_allclose(ad.gradient(f, x), central_gradient(f, x), rtol=1e-6)


@pytest.mark.parametrize("call, exc, match", [
    (lambda x: project(x, 0.0, 0.5), ValueError, r"beta must be > 0"),
    (lambda x: project(x, -1.0, 0.5), ValueError, r"beta must be > 0"),
    (lambda x: project(x, 8.0, 1.5), ValueError, r"eta must be in \[0, 1\]"),
    (lambda x: project(x, 8.0, -0.1), ValueError, r"eta must be in \[0, 1\]"),
    (lambda x: project(x, "8", 0.5), TypeError, r"beta must be a real number"),
    (lambda x: project(x, np.inf, 0.5), ValueError, r"beta must be finite"),
    (lambda x: simp(x, 0.5), ValueError, r"penal must be >= 1"),
    (lambda x: simp(x, 3.0, 1.0, 1.0), ValueError, r"0 <= Emin < E0"),
    (lambda x: ramp(x, -1.0), ValueError, r"q must be >= 0"),
    (lambda x: simp(x + 1j), TypeError, r"x must be a real array"),
    (lambda x: simp(np.where(x > 0.5, np.nan, x)), ValueError, r"x contains NaN"),
    (lambda x: project(np.where(x > 0.5, np.nan, x), 8.0, 0.5), ValueError, r"x contains NaN"),
])
def test_bad_input(call, exc, match):
    x = np.linspace(0, 1, 5)
    with pytest.raises(exc, match=match):
        call(x)
    with pytest.raises(exc, match=match):  # also when traced
        ad.gradient(lambda x: np.sum(call(x)), x)


def test_traced_parameter_is_rejected():
    with pytest.raises(TypeError, match="beta is a parameter"):
        ad.hvp(lambda b: np.sum(ad.gradient(lambda x: np.sum(project(x, b, 0.5)),
                                            np.array([0.3]))), 8.0, 1.0)


@pytest.mark.parametrize("fun, args", [(project, (8.0, 0.5)), (simp, (3.0, 1e-9)),
                                       (ramp, (5.0, 1e-9))])
def test_traced_value_is_bitwise_the_plain_value(fun, args):
    """The FE solve reuses a factorization for bitwise-equal moduli."""
    x = np.random.default_rng(0).uniform(0, 1, 50)
    y, _ = ad.pullback(lambda x: fun(x, *args), x)
    np.testing.assert_array_equal(y, fun(x, *args))
