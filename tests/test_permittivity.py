"""`permittivity` (refractive-index interpolation) and `blueprint` (the projection's limit)."""

import numpy as np
import pytest

from topopt import ad
from topopt.ad.testing import check_modes
from topopt.design.interpolation import blueprint, permittivity, project

SILVER = 0.054 + 3.429j          # Christiansen et al. (2019), 532 nm

# (n_solid, n_void): a dielectric, silver in air, silver in glass (complex void too)
INDICES = [(3.0, 1.0), (SILVER, 1.0), (SILVER, 1.5 + 0.01j)]


@pytest.mark.parametrize("n_solid, n_void", INDICES)
def test_values_are_the_square_of_the_linear_index(n_solid, n_void):
    x = np.array([0.0, 0.25, 1.0])
    eps = permittivity(x, n_solid, n_void)
    # eps(0) = n_void^2, eps(1) = n_solid^2, and at 1/4 the index is (3 n_void + n_solid) / 4
    want = np.array([n_void ** 2, ((3 * n_void + n_solid) / 4) ** 2, n_solid ** 2])
    np.testing.assert_allclose(eps, want, rtol=1e-15)


def test_silver_by_hand():
    # (0.054 + 3.429i)^2 = 0.054^2 - 3.429^2 + 2 (0.054)(3.429) i
    assert permittivity(np.ones(1), SILVER)[0] == pytest.approx(-11.755125 + 0.370332j, rel=1e-12)
    assert permittivity([0.5], 3.0).tolist() == [4.0]        # a list is accepted


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("n_solid, n_void", INDICES)
def test_every_mode(n_solid, n_void, seed):
    x = np.random.default_rng(seed).uniform(0.0, 1.0, (3, 4))
    report = ad.check_modes(lambda x: permittivity(x, n_solid, n_void), x, seed=seed)
    assert set(report) == {f"{mode}/arg 0" for mode in ("reverse", "forward", "hvp", "nested")}
    assert all(err < 1e-6 for err in report.values())


def test_derivative_by_hand():
    # d eps / dx = 2 n(x) (n_solid - n_void); with real indices 2 (1 + 2 x) 2 at x = 0.5: 8
    g = ad.gradient(lambda x: np.sum(permittivity(x, 3.0)), np.array([0.5, 0.0]))
    np.testing.assert_allclose(g, [8.0, 4.0], rtol=1e-15)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: permittivity(np.array([0.5, np.nan]), 3.0), ValueError, "x contains NaN"),
    (lambda: permittivity(np.array([0.5j]), 3.0), TypeError, "x must be a real array"),
    (lambda: permittivity(np.ones(2), "3"), TypeError, "n_solid must be a real or complex"),
    (lambda: permittivity(np.ones(2), 3.0, True), TypeError, "n_void must be a real or complex"),
    (lambda: permittivity(np.ones(2), complex(np.inf, 1)), ValueError, "n_solid must be finite"),
    (lambda: blueprint(np.array([np.nan]), 0.5), ValueError, "x contains NaN"),
    (lambda: blueprint(np.ones(2), 1.5), ValueError, r"eta must be in \[0, 1\]"),
    (lambda: blueprint(np.ones(2), "a"), TypeError, "eta must be a real number"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_traced_void_index_is_rejected():
    with pytest.raises(TypeError, match="n_void is not differentiated"):
        ad.gradient(lambda n: np.real(np.sum(permittivity(np.ones(2), 3.0, n))), 1.0)


@pytest.mark.parametrize("x", [0.0, 0.3, 1.0])
def test_traced_solid_index_is_differentiated(x):
    # d eps / d n_solid = 2 (n_void + x (n_solid - n_void)) x; every mode vs differences
    fun = lambda n: np.real(np.sum(permittivity(np.full(2, x), n, 1.0) * (1 + 2j)))  # noqa: E731
    g = ad.gradient(fun, 3.0)
    np.testing.assert_allclose(g, 2 * 2 * (1 + x * 2.0) * x, rtol=1e-14, atol=1e-14)
    errors = check_modes(fun, 3.0)
    assert max(errors.values()) < 1e-7, errors


@pytest.mark.parametrize("eta", [0.3, 0.5, 0.75])
def test_blueprint_is_the_limit_of_the_projection(eta):
    x = np.random.default_rng(4).uniform(0.0, 1.0, 200)
    x = x[np.abs(x - eta) > 1e-3]
    b = blueprint(x, eta)
    assert set(np.unique(b)) == {0.0, 1.0} and b.dtype == float
    np.testing.assert_array_equal(b, x >= eta)
    # |project - step| <= 2 exp(-2 beta |x - eta|) / (a + b): below 1e-10 at beta = 2e4
    np.testing.assert_allclose(project(x, 2e4, eta), b, atol=1e-10)


def test_blueprint_tie_counts_as_solid():
    assert blueprint(np.array([0.5, 0.5 - 1e-16, 0.5 + 1e-16]), 0.5).tolist() == [1.0, 0.0, 1.0]


def test_blueprint_is_not_differentiable():
    with pytest.raises(TypeError, match="blueprint is piecewise constant"):
        ad.gradient(lambda x: np.sum(blueprint(x, 0.5)), np.array([0.2, 0.7]))
