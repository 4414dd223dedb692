"""Issue 15, item 1: FOSM/SOSM moments of a response under Gaussian inputs (topopt.robust.moments).

Exact cases: a quadratic ``R = c0 + 2 b^T (theta - mu) + (theta - mu)^T A (theta - mu)``
has mean ``c0 + tr(A Sigma)`` and variance ``4 b^T Sigma b + 2 tr((A Sigma)^2)``
(the second and fourth moments of a Gaussian, Isserlis' theorem); a compliance
under Gaussian loads is such a quadratic, its ``c0, b, A`` from a dense
``numpy.linalg.solve`` of the assembled stiffness (independent of the AD and of
the sparse solvers). Monte Carlo checks are seeded, within 4 standard errors.
Design derivatives: every AD mode against finite differences (`ad.check_modes`),
Taylor tests, and the path they take (forward over reverse).
"""

import numpy as np
import pytest

from topopt import ad, fem
from topopt.design.filters import DensityFilter
from topopt.design.interpolation import simp
from topopt.responses.structural import compliance
from topopt.robust.moments import covariance_factor, mean_std, mean_var, monte_carlo_moments


def random_case(n, rank, seed):
    """``(c0, b, A, mu, Sigma)``: A symmetric indefinite, Sigma PSD of the given rank."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    A = A + A.T
    L = 0.3 * rng.standard_normal((n, rank))
    return 1.5, rng.standard_normal(n), A, rng.standard_normal(n), L @ L.T


def quadratic(c0, b, A, mu):
    """``R(x, theta)`` with ``x`` scaling each coefficient (so it is a design response)."""
    def R(x, theta):
        d = theta - mu
        return x[0] * c0 + 2 * x[1] * (b @ d) + x[2] * (d @ A @ d)
    return R


def exact(c0, b, A, Sigma, x=(1.0, 1.0, 1.0)):
    """``(mean, var)`` of the quadratic: ``c0 + tr(A S)``, ``4 b'Sb + 2 tr((AS)^2)``."""
    c0, b, A = x[0] * c0, x[1] * b, x[2] * A
    AS = A @ Sigma
    return c0 + np.trace(AS), 4 * b @ Sigma @ b + 2 * np.trace(AS @ AS)


CASES = [(1, 1, 0), (2, 2, 1), (3, 1, 2), (4, 4, 3), (6, 3, 4), (8, 8, 5)]


@pytest.mark.parametrize("n, rank, seed", CASES)
def test_sosm_is_exact_and_fosm_is_its_first_order_part(n, rank, seed):
    c0, b, A, mu, Sigma = random_case(n, rank, seed)
    R, x = quadratic(c0, b, A, mu), np.array([0.7, 1.3, 0.9])
    mean, var = (float(v) for v in mean_var(R, x, mu, Sigma, order=2))
    want_mean, want_var = exact(c0, b, A, Sigma, x)
    assert abs(mean - want_mean) <= 1e-10 * abs(want_mean)
    assert abs(var - want_var) <= 1e-10 * want_var
    fosm = [float(v) for v in mean_var(R, x, mu, Sigma, order=1)]
    assert fosm[0] == pytest.approx(x[0] * c0, rel=1e-12)
    assert fosm[1] == pytest.approx(4 * x[1] ** 2 * b @ Sigma @ b, rel=1e-10)
    std = float(mean_std(R, x, mu, Sigma)[1])
    assert std == pytest.approx(np.sqrt(want_var), rel=1e-10)


def test_a_factor_gives_the_moments_of_its_covariance():
    c0, b, A, mu, _ = random_case(5, 5, 7)
    L = np.random.default_rng(8).standard_normal((5, 7))    # not square: 7 columns
    R, x = quadratic(c0, b, A, mu), np.ones(3)
    by_factor = mean_var(R, x, mu, factor=L)
    by_sigma = mean_var(R, x, mu, L @ L.T)
    want = exact(c0, b, A, L @ L.T)
    for got in (by_factor, by_sigma):
        np.testing.assert_allclose([float(v) for v in got], want, rtol=1e-10)


def test_zero_covariance_gives_the_nominal_response():
    c0, b, A, mu, _ = random_case(3, 3, 9)
    R = quadratic(c0, b, A, mu)
    for order in (1, 2):
        mean, var = mean_var(R, np.ones(3), mu, np.zeros((3, 3)), order=order)
        assert float(mean) == pytest.approx(c0, rel=1e-14) and float(var) == 0.0


def test_cost_is_one_gradient_and_one_hvp_per_column_of_the_factor():
    """n_theta = 300, Sigma of rank 2: R is evaluated 1 + 2 times, not 300."""
    calls = []
    rng = np.random.default_rng(0)
    w = rng.standard_normal(300)

    def R(x, theta):
        calls.append(1)
        return x * np.sum(w * theta) ** 2 + np.sum(np.sin(theta))

    L = rng.standard_normal((300, 2))
    mean_var(R, 1.0, np.zeros(300), L @ L.T)
    assert len(calls) == 3


# --------------------------------------------------------- the FE compliance

def cantilever(nelx=8, nely=4):
    """Clamped left edge; ``f = B theta``, theta = loads at two points (three components)."""
    model = fem.elasticity(fem.rectangle(nelx, nely), nu=0.3).fix(
        nodes=lambda x: np.isclose(x[0], 0.0))
    B = np.stack([model.point_load((nelx, nely / 2), (1.0, 0.0)),
                  model.point_load((nelx, nely / 2), (0.0, 1.0)),
                  model.point_load((nelx / 2, nely), (0.0, 1.0))], axis=1)
    return model, model.system(), B


MU = np.array([0.2, -1.0, -0.3])
SIGMA = np.array([[0.09, 0.01, 0.0], [0.01, 0.04, 0.005], [0.0, 0.005, 0.01]])


def fe_response(S, B):
    def R(E, theta):
        f = B @ theta
        return compliance(fem.solve(S, E, f), f)
    return R


def dense_coefficients(S, E, B, mu):
    """``c0, b, A`` of ``c(theta) = c0 + 2 b'(theta - mu) + (theta - mu)'A(theta - mu)``."""
    K = S.matrix(E).toarray()
    KB = np.linalg.solve(K, B[S.free])                   # K^{-1} B on the free dofs
    A = B[S.free].T @ KB
    return mu @ A @ mu, A @ mu, A


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compliance_under_gaussian_loads_matches_the_exact_quadratic(seed):
    model, S, B = cantilever()
    E = np.random.default_rng(seed).uniform(0.1, 1.0, model.n_el)
    c0, b, A = dense_coefficients(S, E, B, MU)
    want_mean, want_var = exact(c0, b, A, SIGMA)
    mean, var = (float(v) for v in mean_var(fe_response(S, B), E, MU, SIGMA))
    assert abs(mean - want_mean) <= 1e-10 * want_mean
    assert abs(var - want_var) <= 1e-10 * want_var
    mean1, var1 = (float(v) for v in mean_var(fe_response(S, B), E, MU, SIGMA, order=1))
    assert abs(mean1 - c0) <= 1e-10 * c0
    assert abs(var1 - 4 * b @ SIGMA @ b) <= 1e-10 * var1


def within(estimate, value, error, k=4.0):
    return abs(estimate - value) <= k * error


def test_sosm_and_fosm_agree_with_monte_carlo_on_the_fe_model():
    """Small load scatter: FOSM's neglected terms are below the sampling error; SOSM exact."""
    model, S, B = cantilever()
    E = np.random.default_rng(3).uniform(0.1, 1.0, model.n_el)
    R, Sigma = fe_response(S, B), 0.01 * SIGMA
    mc = monte_carlo_moments(R, E, MU, Sigma, n_samples=4000, seed=11)
    c0, b, A = dense_coefficients(S, E, B, MU)
    assert np.trace(A @ Sigma) < mc.mean_error               # FOSM's mean error is hidden
    for order in (1, 2):
        mean, std = (float(v) for v in mean_std(R, E, MU, Sigma, order=order))
        assert within(mc.mean, mean, mc.mean_error), order
        assert within(mc.std, std, mc.std_error), order


def test_monte_carlo_separates_sosm_from_fosm_under_large_scatter():
    """A strongly curved quadratic: SOSM within the error bars, FOSM far outside (the
    check can fail)."""
    c0, b, A, mu, _ = random_case(3, 3, 12)
    A = A @ A.T                                              # positive definite curvature
    R, x, Sigma = quadratic(c0, 0.05 * b, A, mu), np.ones(3), 0.5 * np.eye(3)
    mc = monte_carlo_moments(R, x, mu, Sigma, n_samples=20000, seed=5)
    mean2, std2 = (float(v) for v in mean_std(R, x, mu, Sigma, order=2))
    mean1, std1 = (float(v) for v in mean_std(R, x, mu, Sigma, order=1))
    assert within(mc.mean, mean2, mc.mean_error) and within(mc.std, std2, mc.std_error)
    assert not within(mc.mean, mean1, mc.mean_error, k=20)
    assert not within(mc.std, std1, mc.std_error, k=20)


def test_monte_carlo_draws_are_seeded():
    R = lambda x, t: x * np.sum(t ** 3)                     # noqa: E731
    runs = [monte_carlo_moments(R, 1.0, np.ones(2), np.eye(2), n_samples=50, seed=s)
            for s in (4, 4, 5)]
    assert runs[0] == runs[1] and runs[0] != runs[2]


# --------------------------------------------------------- design derivatives

def smooth(x, theta):
    """Not polynomial in theta: the third mixed derivatives of SOSM's gradient matter."""
    return (np.sum(np.sin(x) * np.exp(0.3 * theta[0] * x)) + np.sum(x ** 2) * theta[1] ** 3
            + np.cos(np.sum(x) * theta[2]) * theta[0])


X = np.array([0.3, -0.5, 0.8])
MU3 = np.array([0.2, 0.5, -0.3])


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("moments", [mean_var, mean_std])
def test_every_ad_mode_of_the_moments(moments, order):
    report = ad.check_modes(lambda x: moments(smooth, x, MU3, SIGMA, order=order), X)
    assert set(report) == {"reverse/arg 0", "forward/arg 0", "hvp/arg 0", "nested/arg 0"}
    assert max(report.values()) < 1e-7


def test_every_ad_mode_of_the_moments_of_a_compliance():
    model, S, B = cantilever(4, 2)
    E = np.random.default_rng(4).uniform(0.2, 1.0, model.n_el)
    report = ad.check_modes(lambda E: mean_std(fe_response(S, B), E, MU, SIGMA), E)
    assert max(report.values()) < 1e-6


def test_the_gradient_equals_reverse_over_reverse_of_the_plain_formulas():
    """Two AD paths: the rule (forward over reverse) and the traced eq. (3)."""
    from topopt.robust.moments import _mean_var
    L = covariance_factor(SIGMA)
    weights = np.array([1.0, 2.5])

    def plain(x):
        mean, var = _mean_var(smooth, x, L, MU3, 2)[:2]
        return weights[0] * mean + weights[1] * var

    rule = ad.gradient(lambda x: weights @ np.stack(mean_var(smooth, x, MU3, SIGMA)), X)
    np.testing.assert_allclose(rule, ad.gradient(plain, X), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("order", [1, 2])
def test_taylor_mean_plus_k_std_of_the_design(order):
    """The full chain x -> density filter -> SIMP -> E + 2 std of the compliance."""
    model, S, B = cantilever(12, 6)
    filt = DensityFilter(model.mesh, 1.5)
    R = fe_response(S, B)

    def objective(x):
        mean, std = mean_std(R, simp(filt(x), 3.0, 1e-9), MU, SIGMA, order=order)
        return mean + 2.0 * std

    rng = np.random.default_rng(order)
    x = rng.uniform(0.3, 0.9, model.n_el)
    assert ad.taylor_test(objective, x, rng.standard_normal(x.size)) >= 1.9


def test_mixed_derivatives_are_forward_over_reverse():
    """In the pullback, R sees theta in a forward trace over x in a reverse trace (eq. (4));
    nowhere is theta in a reverse trace at the same time as x (reverse over reverse)."""
    seen = []

    def R(x, theta):
        kinds = []
        for name, v in (("x", x), ("theta", theta)):
            if isinstance(v, ad.Box):
                kinds.append((name, ad.trace_of(v).reverse, ad.trace_of(v).id))
        seen.append(kinds)
        return smooth(x, theta)

    ad.gradient(lambda x: mean_std(R, x, MU3, SIGMA)[1], X)
    mixed = [k for k in seen if len(k) == 2]
    assert mixed, "R was never called with both arguments traced"
    fwd_over_rev = [k for k in mixed
                    if k[0][1] and not k[1][1] and k[1][2] < k[0][2]]
    assert fwd_over_rev
    assert not [k for k in mixed if k[0][1] and k[1][1]]


# --------------------------------------------------------------- bad input

def R0(x, theta):
    return np.sum(x) * np.sum(theta ** 2)


GOOD = dict(R=R0, x=np.ones(2), mu=np.zeros(2), Sigma=np.eye(2))
BAD = [
    (dict(R=3), TypeError, "R must be callable"),
    (dict(x=np.ones(2, dtype=int)), TypeError, "x must be a float array"),
    (dict(x=np.array([1.0, np.nan])), ValueError, "x contains NaN"),
    (dict(x=np.ones(2) + 0j), TypeError, "x must be real"),
    (dict(mu=np.zeros((2, 1))), ValueError, "mu must be a 1-D array"),
    (dict(mu=np.array([0.0, np.inf])), ValueError, "mu must be finite"),
    (dict(mu=np.zeros(3)), ValueError, "mu has size 3"),
    (dict(Sigma=np.array([[1.0, 0.5], [0.0, 1.0]])), ValueError, "Sigma must be symmetric"),
    (dict(Sigma=np.array([[1.0, 2.0], [2.0, 1.0]])), ValueError,
     "Sigma must be positive semidefinite"),
    (dict(Sigma=-np.eye(2)), ValueError, "Sigma must be positive semidefinite"),
    (dict(Sigma=np.ones(2)), ValueError, "Sigma must be a square"),
    (dict(Sigma=None), TypeError, "exactly one of Sigma"),
    (dict(factor=np.ones((2, 1))), TypeError, "exactly one of Sigma"),
    (dict(Sigma=None, factor=np.ones((3, 1))), ValueError, r"factor must have shape \(2, m\)"),
    (dict(order=3), ValueError, r"order must be an integer in \[1, 2\]"),
    (dict(order=2.0), TypeError, "order must be an integer"),
]


@pytest.mark.parametrize("change, exc, match", BAD)
def test_bad_input_names_the_argument(change, exc, match):
    kw = GOOD | change
    with pytest.raises(exc, match=match):
        mean_std(kw.pop("R"), kw.pop("x"), kw.pop("mu"), **kw)


def test_traced_mean_or_covariance_is_refused():
    with pytest.raises(TypeError, match="mu is not differentiated"):
        ad.gradient(lambda mu: mean_std(R0, np.ones(2), mu, np.eye(2))[0], np.zeros(2))
    with pytest.raises(TypeError, match="Sigma is not differentiated"):
        ad.gradient(lambda s: mean_std(R0, np.ones(2), np.zeros(2), s * np.eye(2))[0], 1.0)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_closure_over_a_traced_value_is_refused(mode):
    """R may depend on a traced value only through x: its derivative would be dropped."""
    def outer(s):
        R = lambda x, theta: s * R0(x, theta)               # noqa: E731
        return mean_std(R, np.ones(2) * s, np.zeros(2), np.eye(2))[0]
    with pytest.raises(TypeError, match="R depends on a traced value other than x"):
        if mode == "reverse":
            ad.gradient(outer, 1.0)
        else:
            ad.jvp(outer, (1.0,), (1.0,))


@pytest.mark.parametrize("kw, exc, match", [
    (dict(n_samples=3, seed=0), ValueError, "n_samples must be an integer >= 4"),
    (dict(n_samples=100, seed=None), TypeError, "seed must be an integer"),
    (dict(n_samples=100, seed=-1), ValueError, "seed must be an integer >= 0"),
])
def test_monte_carlo_bad_input(kw, exc, match):
    with pytest.raises(exc, match=match):
        monte_carlo_moments(R0, np.ones(2), np.zeros(2), np.eye(2), **kw)
