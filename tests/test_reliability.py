"""Failure probabilities: LDT/FORM/SORM/LDT-prefactor, sampling, gradients (issue 6)."""

import numpy as np
import pytest
import scipy.integrate
import scipy.special as sp
import scipy.stats

from topopt import ad
from topopt import reliability as rel

from oracles import central_gradient
from reliability_cases import P0, quadratic_coefficients

# ------------------------------------------------------- the exact-answer case
# F = theta_1 - kappa/2 sum_{i>=2} theta_i^2, failure F >= beta, n = 10.
N_VARS, BETA, KAPPA = 10, 3.0, 0.1


def paraboloid(theta, kappa):
    return theta[..., 0] - 0.5 * kappa * np.sum(theta[..., 1:] ** 2, axis=-1)


def exact_ln_pf(beta, kappa, n=N_VARS):
    """P(theta1 - kappa/2 chi2_{n-1} >= beta) = int Phibar(beta + kappa s/2) f(s) ds."""
    def integrand(s):
        return np.exp(sp.log_ndtr(-(beta + 0.5 * kappa * s))
                      + scipy.stats.chi2.logpdf(s, n - 1))
    val, err = scipy.integrate.quad(integrand, 0, np.inf, epsabs=0, epsrel=1e-12, limit=200)
    assert err < 1e-8 * val
    return float(np.log(val))


def test_exact_answer_quadrature_form_sorm():
    exact = exact_ln_pf(BETA, KAPPA)
    assert exact == pytest.approx(-7.949, abs=1e-3)
    form = rel.failure_probability(paraboloid, KAPPA, BETA, "form", m=N_VARS)
    sorm = rel.failure_probability(paraboloid, KAPPA, BETA, "sorm", m=N_VARS)
    ldt = rel.failure_probability(paraboloid, KAPPA, BETA, "ldt", m=N_VARS)
    assert form.ln_pf == pytest.approx(-6.608, abs=1e-3)
    assert sorm.ln_pf == pytest.approx(-7.788, abs=1e-3)
    assert ldt.ln_pf == pytest.approx(-4.5, abs=1e-12)
    # closed forms: ln Phi(-3) and Breitung with 9 curvatures kappa
    assert form.ln_pf == pytest.approx(sp.log_ndtr(-3.0), abs=1e-12)
    assert sorm.ln_pf == pytest.approx(sp.log_ndtr(-3.0) - 4.5 * np.log(1.3), abs=1e-10)
    np.testing.assert_allclose(sorm.curvatures, KAPPA * np.ones(N_VARS - 1), atol=1e-10)
    np.testing.assert_allclose(sorm.mpp, np.eye(N_VARS)[0] * BETA, atol=1e-12)
    assert sorm.beta == pytest.approx(BETA) and sorm.multiplier == pytest.approx(BETA)
    # the curvature correction moves FORM most of the way to the exact value
    assert abs(sorm.ln_pf - exact) < 0.2 < abs(form.ln_pf - exact)


def test_ldt_prefactor_against_independent_evaluation():
    """Tong et al. (2021): (2 pi)^-1/2 beta^-1 e^{-beta^2/2} det(I - lam P H P)^-1/2."""
    r = rel.failure_probability(paraboloid, KAPPA, BETA, "ldt-prefactor", m=N_VARS)
    # independent: MPP known analytically, gradient and Hessian by central differences
    theta = np.zeros(N_VARS)
    theta[0] = BETA
    f = lambda t: float(paraboloid(t, KAPPA))  # noqa: E731
    h = 1e-4
    E = np.eye(N_VARS) * h
    g = np.array([(f(theta + e) - f(theta - e)) / (2 * h) for e in E])
    H = np.array([[(f(theta + a + b) - f(theta + a - b) - f(theta - a + b) + f(theta - a - b))
                   / (4 * h * h) for b in E] for a in E])
    lam = np.linalg.norm(theta) / np.linalg.norm(g)
    n = g / np.linalg.norm(g)
    P = np.eye(N_VARS) - np.outer(n, n)
    beta = np.linalg.norm(theta)
    ref = (-0.5 * np.log(2 * np.pi) - np.log(beta) - 0.5 * beta ** 2
           - 0.5 * np.linalg.slogdet(np.eye(N_VARS) - lam * P @ H @ P)[1])
    assert r.ln_pf == pytest.approx(ref, abs=1e-3)
    assert r.ln_pf == pytest.approx(-7.6982, abs=1e-3)
    # Breitung-like accuracy: within 0.26 of the exact -7.949 (SORM: 0.16, FORM: 1.34)
    assert abs(r.ln_pf - exact_ln_pf(BETA, KAPPA)) < 0.26


def test_quadratic_exact_mpp_agrees_with_generic_search():
    b = np.eye(N_VARS)[0] / 2
    A = np.diag(np.r_[0.0, -KAPPA / 2 * np.ones(N_VARS - 1)])
    ls = rel.QuadraticLimitState(0.0, b, A)
    for method in rel.ASYMPTOTIC:
        quad = rel.failure_probability(ls, None, BETA, method)
        gen = rel.failure_probability(paraboloid, KAPPA, BETA, method, m=N_VARS)
        assert quad.ln_pf == pytest.approx(gen.ln_pf, abs=1e-10)
        assert quad.mpp_result.solver.startswith("exact")

    rng = np.random.default_rng(3)
    seen_second = False
    for trial in range(5):
        m = 4
        L = rng.standard_normal((m, m)) * 0.3
        A = L @ L.T - 0.1 * np.eye(m)
        b = rng.standard_normal(m)
        c0 = 0.5
        ls = rel.QuadraticLimitState(c0, b, A)
        f = lambda t, _: c0 + 2 * b @ t + t @ A @ t  # noqa: E731
        for method in ("form", "sorm"):
            quad = rel.failure_probability(ls, None, 25.0, method)
            gen = rel.failure_probability(f, None, 25.0, method, m=m, n_starts=1)
            points = quad.info["points"]
            assert points[0]["ln_pf"] == pytest.approx(gen.ln_pf, abs=1e-8), trial
            np.testing.assert_allclose(quad.mpp, gen.mpp, atol=1e-8)
            # a further local MPP (local non-global minimiser) adds its share
            for pt in points[1:]:
                assert pt["beta"] > quad.beta
                other = rel.failure_probability(f, None, 25.0, method, m=m, solver="hlrf",
                                                theta0=pt["theta"] * 1.01, n_starts=1)
                np.testing.assert_allclose(other.mpp, pt["theta"], atol=1e-8)
                assert other.ln_pf == pytest.approx(pt["ln_pf"], abs=1e-8)
            total = np.log(np.sum([np.exp(pt["ln_pf"]) for pt in points]))
            assert quad.ln_pf == pytest.approx(total, abs=1e-12)
            seen_second = seen_second or len(points) > 1
    assert seen_second


def test_quadratic_origin_in_failure_region_gives_negative_beta():
    ls = rel.QuadraticLimitState(2.0, np.array([0.5, 0.0]), np.diag([0.0, 0.1]))
    r = rel.failure_probability(ls, None, 1.0, "form")     # F = 2 + t1 + .1 t2^2 >= 1
    assert r.beta == pytest.approx(-1.0)
    assert r.ln_pf == pytest.approx(sp.log_ndtr(1.0))
    assert rel.failure_probability(ls, None, 1.0, "ldt").ln_pf == 0.0


def test_quadratic_zero_mean_loads_hard_case_counts_mirror_mpp():
    """F = theta^T A theta (b = 0): two mirror MPPs +-sqrt(z/a_max) e_top, + ln 2."""
    a = np.array([1.0, 0.5, 0.2])
    ls = rel.QuadraticLimitState(0.0, np.zeros(3), np.diag(a))
    z = 6.6
    sorm = rel.failure_probability(ls, None, z, "sorm")
    assert sorm.n_mpp == 2
    assert sorm.beta == pytest.approx(np.sqrt(z))
    single = sp.log_ndtr(-np.sqrt(z)) - 0.5 * np.sum(np.log(1 - a[1:] / a[0]))
    assert sorm.ln_pf == pytest.approx(single + np.log(2), abs=1e-10)
    mc = rel.failure_probability(ls, None, z, "mc", n_samples=200_000, seed=4)
    assert abs(sorm.ln_pf - mc.ln_pf) < 0.15
    # IS samples a mixture centred at both MPPs; it agrees with MC
    imp = rel.failure_probability(ls, None, z, "is", n_samples=100_000, seed=4)
    assert imp.info["centers"].shape == (2, 3)
    assert abs(imp.ln_pf - mc.ln_pf) < 3 * np.hypot(imp.ln_pf_std, mc.ln_pf_std)
    assert abs(imp.ln_pf - sorm.ln_pf) < 0.15


def test_quadratic_two_local_mpps_continuous_and_differentiable():
    """b~_top -> 0: the global and the local non-global MPP merge into the mirror pair."""
    A = np.diag([1.0, 0.5, 0.2])
    z = 6.6
    values = []
    for eps in (0.0, 1e-12, 1e-6):
        r = rel.failure_probability(rel.QuadraticLimitState(0.0, np.array([eps, 0.1, 0.0]), A),
                                    None, z, "sorm")
        assert r.n_mpp == 2
        values.append(r.ln_pf)
    np.testing.assert_allclose(values, values[0], atol=1e-5)
    b = np.array([0.05, 0.1, 0.0])
    ls = rel.QuadraticLimitState(lambda x: (x[0], x[1:4], x[4:].reshape(3, 3)))
    packed = np.concatenate([[0.0], b, A.ravel()])
    for method in ("form", "sorm", "ldt-prefactor"):
        r = rel.failure_probability(ls, packed, z, method)
        assert r.n_mpp == 2 and 0.1 < r.info["points"][1]["weight"] < 0.5
        ad.check_rule(rel.ln_pf, ls, packed, z, method=method, rtol=1e-6)
    mc = rel.failure_probability(ls, packed, z, "mc", n_samples=200_000, seed=1)
    assert abs(rel.failure_probability(ls, packed, z, "sorm").ln_pf - mc.ln_pf) < 0.15


# ------------------------------------------------------------------ sampling

def test_importance_sampling_matches_exact_within_three_standard_errors():
    exact = exact_ln_pf(BETA, KAPPA)
    r = rel.failure_probability(paraboloid, KAPPA, BETA, "is", m=N_VARS, batch=True,
                                n_samples=100_000, seed=1)
    assert r.n_samples == 100_000 and 0 < r.ln_pf_std < 0.02
    assert abs(r.ln_pf - exact) < 3 * r.ln_pf_std
    assert r.pf == pytest.approx(np.exp(r.ln_pf))
    assert r.pf_std == pytest.approx(r.pf * r.ln_pf_std)
    # looping over samples (no batch) gives the same numbers
    small = dict(m=N_VARS, n_samples=300, seed=2)
    looped = rel.sampling_estimate(paraboloid, KAPPA, BETA, "is", **small)
    batched = rel.sampling_estimate(paraboloid, KAPPA, BETA, "is", batch=True, **small)
    assert looped.ln_pf == pytest.approx(batched.ln_pf, abs=1e-12)


def test_monte_carlo_on_an_easier_threshold():
    exact = exact_ln_pf(2.0, KAPPA)                 # pf = 8.1e-3
    assert np.exp(exact) == pytest.approx(8.1365e-3, rel=1e-4)
    r = rel.failure_probability(paraboloid, KAPPA, 2.0, "mc", m=N_VARS, batch=True,
                                n_samples=100_000, seed=1)
    assert abs(r.ln_pf - exact) < 3 * r.ln_pf_std
    assert r.n_failures == pytest.approx(np.exp(exact) * 1e5, rel=0.1)


def test_monte_carlo_without_failures_is_minus_inf_not_nan():
    r = rel.failure_probability(paraboloid, KAPPA, 8.0, "mc", m=N_VARS, batch=True,
                                n_samples=1000, seed=0)
    assert r.ln_pf == -np.inf and r.pf == 0.0 and r.ln_pf_std == np.inf
    assert r.info["pf_upper_95"] == pytest.approx(3e-3)
    assert rel.failure_penalty(r.ln_pf, np.log(1e-4), 10.0) == 0.0


def test_counting_estimate_finite_difference_reads_zero_but_smoothed_crn_does_not():
    """The issue's motivating example: FD of a counting MC estimate is 0."""
    F = lambda t, p: t @ p                                   # noqa: E731
    p, d, z = np.array([0.6, 0.8]), np.array([1.0, 0.0]), 2.0
    true = ad.gradient(lambda p: rel.ln_pf(F, p, z, "form", m=2), p) @ d   # FORM exact
    beta = z / np.linalg.norm(p)
    assert true == pytest.approx(
        np.exp(-0.5 * beta ** 2 - 0.5 * np.log(2 * np.pi) - sp.log_ndtr(-beta)) * z * p[0])
    assert true > 2.5

    def mc(p, seed):
        return rel.sampling_estimate(F, p, z, "mc", n_samples=50_000, seed=seed,
                                     batch=True, m=2)
    fd = rel.crn_directional_derivative(mc, p, d, h=1e-6, seed=3)
    assert fd.value == 0.0 and np.isfinite(fd.plus)

    s = 0.05
    center = rel.find_mpp(F, p, z, m=2).theta

    def smoothed_is(p, seed):
        return rel.sampling_estimate(F, p, z, "is", n_samples=50_000, seed=seed,
                                     center=center, smoothing=s, batch=True)
    crn = rel.crn_directional_derivative(smoothed_is, p, d, h=1e-4, seed=3)
    # expectation of the smoothed estimator: P(p.theta + s xi >= z), exactly
    smooth_true = ad.gradient(
        lambda p: sp.log_ndtr(-z / np.sqrt(p @ p + s * s)), p) @ d
    assert abs(crn.value - smooth_true) < 4 * crn.std_error
    assert crn.std_error < 0.1 * abs(smooth_true)
    assert abs(crn.value - true) < 0.1 * true             # bias O(s^2) is small


# ------------------------------------------------------------------- penalty

def test_failure_penalty_rules():
    report = ad.check_rule(rel.failure_penalty, -6.0, np.log(1e-4), 3.0)
    assert max(report.values()) < 1e-8
    x = np.array([-3.0, -7.0, -12.0])               # two active, one inactive
    ad.check_rule(rel.failure_penalty, x, np.log(1e-4), 2.0)
    ad.check_rule(rel.failure_penalty, x, np.array([-5.0, -6.0, -4.0]), np.array([1.0, 2.0, 3.0]))
    g = ad.gradient(lambda l: rel.failure_penalty(l, -5.0, 2.0), -9.0)
    assert g == 0.0
    assert rel.failure_penalty(-4.0, -5.0, 2.0) == pytest.approx(2.0)
    assert rel.failure_penalty(-np.inf, -5.0, 2.0) == 0.0
    pb = ad.core._rrules[rel.failure_penalty][0][1](-4.0, -5.0, 2.0)[1]
    assert pb.__name__ == "failure_penalty_pullback"
    _, ydot = ad.jvp(lambda l, k: rel.failure_penalty(l, -5.0, k), (-4.0, 2.0), (1.0, 1.0))
    assert ydot == pytest.approx(2 * 2.0 * 1.0 + 1.0)


def _cubic(theta, p):
    """A limit state with a third derivative in theta and a design dependence."""
    return p[0] * theta[0] + p[1] * theta[1] ** 2 + 0.1 * theta[0] * theta[1] * theta[2] \
        + np.sin(p[2] * theta[2]) - 0.2 * theta[3] ** 2


@pytest.mark.parametrize("modes", [("reverse",), ("forward",), ("hvp",), ("nested",)])
def test_curvature_term_in_every_mode(modes):
    """G = -1/2 ln det(I - lam P H P) (SORM's factor, differentiated through
    np.linalg.slogdet) against central differences in theta, lam and the design."""
    from topopt.reliability.asymptotic import _curvature_term
    ls = rel.LimitState(_cubic, m=4)
    theta, p = np.array([0.7, -0.4, 0.5, 0.3]), np.array([1.2, 0.3, 0.8])
    report = ad.check_modes(lambda t, la, q: _curvature_term(ls, t, la, q),
                            theta, 0.6, p, modes=modes)
    assert report and max(report.values()) < 1e-6


def test_curvature_term_is_breitungs_product():
    """det(I - lam P H P) = prod_i (1 - lam mu_i), mu_i = eig(T^T H T) (module docstring)."""
    from topopt.reliability.asymptotic import _curvature_term
    ls = rel.LimitState(_cubic, m=4)
    theta, p, lam = np.array([0.7, -0.4, 0.5, 0.3]), np.array([1.2, 0.3, 0.8]), 0.6
    g = np.array([p[0] + 0.1 * theta[1] * theta[2], 2 * p[1] * theta[1] + 0.1 * theta[0]
                  * theta[2], 0.1 * theta[0] * theta[1] + p[2] * np.cos(p[2] * theta[2]),
                  -0.4 * theta[3]])
    H = np.array([[0.0, 0.1 * theta[2], 0.1 * theta[1], 0.0],
                  [0.1 * theta[2], 2 * p[1], 0.1 * theta[0], 0.0],
                  [0.1 * theta[1], 0.1 * theta[0], -p[2] ** 2 * np.sin(p[2] * theta[2]), 0.0],
                  [0.0, 0.0, 0.0, -0.4]])
    n = g / np.linalg.norm(g)
    T = np.linalg.svd(n[None, :])[2][1:].T            # orthonormal tangent basis
    mu = np.linalg.eigvalsh(T.T @ H @ T)
    assert _curvature_term(ls, theta, lam, p) == pytest.approx(
        -0.5 * np.sum(np.log(1 - lam * mu)), rel=1e-12)
    with pytest.raises(rel.ReliabilityError, match="det"):
        _curvature_term(ls, theta, 50.0, p)          # 1 - lam mu_i < 0 for one i


# --------------------------------------------------- gradients w.r.t. design
M_SMALL = 4
A0 = np.array([1.0, 0.6, -0.4, 0.3])
A1 = np.array([0.2, -0.1, 0.3, 0.05])
B0 = np.array([[0.10, 0.03, 0.00, -0.02],
               [0.03, -0.12, 0.02, 0.00],
               [0.00, 0.02, 0.05, 0.01],
               [-0.02, 0.00, 0.01, 0.15]])
B1 = np.array([[0.02, 0.00, 0.01, 0.00],
               [0.00, 0.03, 0.00, -0.01],
               [0.01, 0.00, -0.04, 0.00],
               [0.00, -0.01, 0.00, 0.02]])
Z_SMALL = 4.0
DP = np.array([0.7, -0.5, 0.9])
LN_PA, K_PEN = np.log(1e-5), 1.0


def smooth_limit_state(theta, p):
    """Linear + quadratic + a bounded non-polynomial term, smooth in p."""
    a = A0 * np.exp(0.3 * p[0]) + p[1] * A1
    B = B0 + p[2] * B1
    return a @ theta + 0.5 * theta @ (B @ theta) + 0.05 * p[0] * np.sum(np.sin(theta))


def penalty_of(method, limit_state=smooth_limit_state, **opts):
    opts.setdefault("m", M_SMALL)
    return lambda p: rel.failure_penalty(rel.ln_pf(limit_state, p, Z_SMALL, method, **opts),
                                         LN_PA, K_PEN)


@pytest.mark.parametrize("method", rel.ASYMPTOTIC)
def test_taylor_test_of_penalty_generic_limit_state(method):
    r = rel.failure_probability(smooth_limit_state, P0, Z_SMALL, method, m=M_SMALL)
    assert 2.5 < r.beta < 3.5 and r.ln_pf > LN_PA            # penalty active
    if method in ("sorm", "ldt-prefactor"):
        assert np.ptp(r.curvatures) > 0.05                    # curvature varies
    rate = ad.taylor_test(penalty_of(method), P0, DP)
    assert rate >= 1.9


QUAD = rel.QuadraticLimitState(quadratic_coefficients)
Z_QUAD = 14.0


@pytest.mark.parametrize("method", rel.ASYMPTOTIC)
def test_taylor_test_of_penalty_quadratic_limit_state(method):
    r = rel.failure_probability(QUAD, P0, Z_QUAD, method)
    assert r.mpp_result.solver.startswith("exact") and r.ln_pf > LN_PA
    def f(p):
        return rel.failure_penalty(rel.ln_pf(QUAD, p, Z_QUAD, method), LN_PA, K_PEN)
    assert ad.taylor_test(f, P0, DP) >= 1.9
    # the same quadratic through the generic (HL-RF + AD Hessian) path agrees
    generic = lambda t, p: QUAD.value(t, *quadratic_coefficients(p))  # noqa: E731
    g_quad = ad.gradient(lambda p: rel.ln_pf(QUAD, p, Z_QUAD, method), P0)
    g_gen = ad.gradient(lambda p: rel.ln_pf(generic, p, Z_QUAD, method, m=3), P0)
    np.testing.assert_allclose(g_quad, g_gen, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("method", rel.ASYMPTOTIC)
def test_check_rule_of_ln_pf(method):
    """Dot-product test of the pullback and the forward rule, design and z."""
    ad.check_rule(rel.ln_pf, smooth_limit_state, P0, Z_SMALL, method=method, m=M_SMALL,
                  rtol=1e-6)
    # quadratic coefficients packed in one vector: cotangents for c0, b and A
    m = 3
    c0, b, A = quadratic_coefficients(P0)
    packed = np.concatenate([[c0], b, A.ravel()])
    ls = rel.QuadraticLimitState(lambda x: (x[0], x[1:m + 1], x[m + 1:].reshape(m, m)))
    ad.check_rule(rel.ln_pf, ls, packed, Z_QUAD, method=method, rtol=1e-6)


def test_envelope_theorem_gradient():
    """LDT: d ln pf/dp = lam dF/dp(theta*; p) with theta* held fixed."""
    r = rel.failure_probability(smooth_limit_state, P0, Z_SMALL, "ldt", m=M_SMALL)
    theta, lam = r.mpp, r.multiplier
    dFdp = ad.gradient(lambda p: smooth_limit_state(theta, p), P0)
    g = ad.gradient(lambda p: rel.ln_pf(smooth_limit_state, p, Z_SMALL, "ldt", m=M_SMALL), P0)
    np.testing.assert_allclose(g, lam * dFdp, rtol=1e-12)
    ldt = lambda p: rel.ln_pf(smooth_limit_state, p, Z_SMALL, "ldt", m=M_SMALL)  # noqa: E731
    np.testing.assert_allclose(g, central_gradient(ldt, P0, 1e-5), rtol=1e-7)
    # multiplier: theta* = lam grad_theta F
    gt = ad.gradient(smooth_limit_state, theta, P0)
    np.testing.assert_allclose(theta, lam * gt, atol=1e-12)
    assert lam == pytest.approx(np.linalg.norm(theta) / np.linalg.norm(gt))
    # FORM and SORM against central differences too (SORM: curvature factor varies)
    for method in ("form", "sorm", "ldt-prefactor"):
        f = lambda p: rel.ln_pf(smooth_limit_state, p, Z_SMALL, method, m=M_SMALL)  # noqa: E731
        np.testing.assert_allclose(ad.gradient(f, P0), central_gradient(f, P0, 1e-5), rtol=1e-6)
    # the curvature factor does depend on p: dropping its derivative would be wrong
    gs = ad.gradient(lambda p: rel.ln_pf(smooth_limit_state, p, Z_SMALL, "sorm", m=M_SMALL), P0)
    gf = ad.gradient(lambda p: rel.ln_pf(smooth_limit_state, p, Z_SMALL, "form", m=M_SMALL), P0)
    assert np.linalg.norm(gs - gf) > 1e-2 * np.linalg.norm(gf)


def test_sorm_with_prefactor_held_constant_fails_the_taylor_test():
    """Why the curvature factor is differentiated: held constant, the rate drops to 1."""
    def ln_pf_const_prefactor(p):
        form = rel.ln_pf(smooth_limit_state, p, Z_SMALL, "form", m=M_SMALL)
        plain = ad.value(p)
        factor = (rel.ln_pf(smooth_limit_state, plain, Z_SMALL, "sorm", m=M_SMALL)
                  - rel.ln_pf(smooth_limit_state, plain, Z_SMALL, "form", m=M_SMALL))
        return form + factor
    wrong = lambda p: rel.failure_penalty(ln_pf_const_prefactor(p), LN_PA, K_PEN)  # noqa: E731
    assert ad.taylor_test(wrong, P0, DP) < 1.2
    assert ad.taylor_test(penalty_of("sorm"), P0, DP) >= 1.9


def test_forward_mode_and_failure_probability_object():
    fp = rel.FailureProbability(smooth_limit_state, Z_SMALL, "sorm", m=M_SMALL)
    v, g = ad.value_and_gradient(fp, P0)
    assert fp.last is not None and fp.last.ln_pf == pytest.approx(float(v))
    _, ydot = ad.jvp(fp, (P0,), (DP,))
    assert ydot == pytest.approx(g @ DP, rel=1e-10)
    # warm start: the next search starts from the previous MPP (its first start; the
    # iterations it saves are one path's count, not asserted) and ends where the cold
    # search from the origin ends, within what their KKT residuals allow (each <= 100 tol,
    # find_mpp's stated acceptance; both polish to ~1e-16 here)
    previous = fp.last.mpp.copy()
    fp(P0 + 1e-3 * DP)
    cold = rel.failure_probability(smooth_limit_state, P0 + 1e-3 * DP, Z_SMALL, "sorm",
                                   m=M_SMALL)
    warm = fp.last.mpp_result
    np.testing.assert_array_equal(warm.info["starts"][0], previous)
    residuals = warm.kkt_residual + cold.mpp_result.kkt_residual
    assert max(warm.kkt_residual, cold.mpp_result.kkt_residual) <= 1e2 * 1e-10
    np.testing.assert_allclose(warm.theta, cold.mpp_result.theta,
                               atol=1e-12 + 10 * residuals * np.linalg.norm(warm.theta))
    assert fp.last.ln_pf == pytest.approx(
        cold.ln_pf, abs=1e-12 + 10 * residuals * (1 + abs(warm.beta)) ** 2)
    # sampling methods evaluate but refuse to be differentiated
    fmc = rel.FailureProbability(smooth_limit_state, Z_SMALL, "is", m=M_SMALL,
                                 n_samples=2000, seed=0)
    assert np.isfinite(fmc(P0))
    with pytest.raises(ad.NoRuleError, match="counting estimator"):
        ad.gradient(lambda p: rel.ln_pf(smooth_limit_state, p, Z_SMALL, "mc", m=M_SMALL), P0)
    with pytest.raises(ad.NoRuleError, match="first derivatives only"):
        ad.hvp(lambda p: rel.ln_pf(smooth_limit_state, p, Z_SMALL, "ldt", m=M_SMALL), P0, DP)


# ---------------------------------------------------------- failure handling

def _assert_finite_with_gradient(limit_state, design, z, method, **opts):
    v, g = ad.value_and_gradient(
        lambda p: rel.ln_pf(limit_state, p, z, method, on_failure="bound", **opts), design)
    assert np.isfinite(v) and np.all(np.isfinite(g))
    return float(v), g


def test_unreachable_failure_region_raises_or_returns_floor():
    bowl = lambda t, p: -p * (t @ t)                       # noqa: E731  F <= 0 < z
    with pytest.raises(rel.MPPError) as info:
        rel.failure_probability(bowl, 1.0, 1.0, "sorm", m=3)
    assert info.value.reason == "unreachable" and "z=1" in str(info.value)
    assert isinstance(info.value, RuntimeError)
    v, g = _assert_finite_with_gradient(bowl, 1.0, 1.0, "sorm", m=3)
    assert v == rel.LN_PF_FLOOR and g == 0.0
    r = rel.failure_probability(bowl, 1.0, 1.0, "form", m=3, on_failure="bound")
    assert r.bound == "unreachable" and not r.converged

    capped = lambda t, p: np.tanh(t[0] + p * t[1])          # noqa: E731  F < 1 < z
    with pytest.raises(rel.MPPError, match="unreachable"):
        rel.find_mpp(capped, 1.0, 2.0, m=2)
    _assert_finite_with_gradient(capped, 1.0, 2.0, "ldt", m=2)

    # quadratic, proven: sup F = 0.01 < z
    ls = rel.QuadraticLimitState(lambda p: (0.0, np.array([0.1, 0.0]), -p * np.eye(2)))
    with pytest.raises(rel.MPPError, match="never gets above z"):
        rel.failure_probability(ls, 1.0, 1.0, "sorm")
    v, g = _assert_finite_with_gradient(ls, 1.0, 1.0, "sorm")
    assert v == rel.LN_PF_FLOOR
    with pytest.raises(rel.MPPError, match="unreachable"):
        rel.failure_probability(ls, 1.0, 1.0, "is", n_samples=100)


def test_non_convergence_raises_or_returns_documented_bound():
    opts = dict(m=N_VARS, solver="hlrf", max_iter=1, polish=False, tol=1e-14)
    with pytest.raises(rel.MPPError) as info:
        rel.failure_probability(paraboloid, 0.5, BETA, "form", theta0=np.full(N_VARS, 0.5),
                                **opts)
    assert info.value.reason == "not_converged" and "theta=" in str(info.value)
    r = rel.failure_probability(paraboloid, 0.5, BETA, "form", theta0=np.full(N_VARS, 0.5),
                                on_failure="bound", **opts)
    assert not r.converged and r.bound in ("best_feasible", "trivial")
    assert np.isfinite(r.ln_pf) and r.ln_pf <= 0.0
    _assert_finite_with_gradient(paraboloid, 0.5, BETA, "sorm", theta0=np.full(N_VARS, 0.5),
                                 **opts)


def test_saddle_point_is_rejected_not_used():
    """F = t1 + 0.3 (t2^2 + 0.3 t3^2): HL-RF from 0 stops at (3, 0, 0), a saddle."""
    bent = lambda t, p: t[0] + 0.5 * p * (t[1] ** 2 + 0.3 * t[2] ** 2)  # noqa: E731
    with pytest.raises(rel.MPPError) as info:
        rel.find_mpp(bent, 0.6, BETA, m=3)
    assert info.value.reason == "not_minimum"
    r = rel.failure_probability(bent, 0.6, BETA, "sorm", m=3, on_failure="bound")
    assert r.bound == "best_feasible" and np.isfinite(r.ln_pf)
    # a start off the symmetry axis finds the true MPP (beta < 3)
    r = rel.failure_probability(bent, 0.6, BETA, "sorm", m=3, theta0=np.array([1.0, 1.0, 0.0]))
    assert r.converged and r.beta < BETA and np.isfinite(r.ln_pf)


def test_origin_in_failure_region():
    shifted = lambda t, p: t[0] + p                          # noqa: E731  F(0) = 1 >= 0.5
    form = rel.failure_probability(shifted, 1.0, 0.5, "form", m=2)
    assert form.beta == pytest.approx(-0.5)
    assert form.ln_pf == pytest.approx(sp.log_ndtr(0.5))
    assert rel.failure_probability(shifted, 1.0, 0.5, "ldt", m=2).ln_pf == 0.0
    with pytest.raises(rel.MPPError, match="origin_fails"):
        rel.failure_probability(shifted, 1.0, 0.5, "ldt-prefactor", m=2)
    r = rel.failure_probability(shifted, 1.0, 0.5, "ldt-prefactor", m=2, on_failure="bound")
    assert r.bound == "form" and r.ln_pf == pytest.approx(sp.log_ndtr(0.5))
    g = ad.gradient(lambda p: rel.ln_pf(shifted, p, 0.5, "form", m=2), 1.0)
    assert g == pytest.approx(np.exp(-0.125 - 0.5 * np.log(2 * np.pi) - sp.log_ndtr(0.5)))


def test_bad_arguments_are_reported():
    with pytest.raises(ValueError, match="pass m="):
        rel.failure_probability(paraboloid, KAPPA, BETA, "form")
    with pytest.raises(ValueError, match="unknown method"):
        rel.failure_probability(paraboloid, KAPPA, BETA, "sorn", m=3)
    with pytest.raises(TypeError, match="unknown MPP options"):
        rel.failure_probability(paraboloid, KAPPA, BETA, "form", m=3, tolerance=1e-3)


def test_sorm_when_the_nominal_point_fails_is_not_small():
    """F(0) >= z: pf >= 1/2. Breitung's factor with beta < 0 once gave ln pf = -6.5 here."""
    ls = rel.QuadraticLimitState(4e8, np.array([4e7, 5e6]),
                                 np.array([[4e6, 5e5], [5e5, 2.7e8]]))
    r = rel.failure_probability(ls, None, 7.67, method="sorm")
    assert r.beta < 0 and r.bound == "form"
    assert r.ln_pf > np.log(0.5)
    mc = rel.sampling_estimate(ls, None, 7.67, method="mc", n_samples=10**4, seed=0)
    assert mc.pf == pytest.approx(1.0)


# ------------------------------------ SORM variants: their curvature term's rules
@pytest.mark.parametrize("modes", [("reverse",), ("forward",), ("hvp",), ("nested",)])
@pytest.mark.parametrize("variant", ["hohenbichler", "tvedt"])
def test_sorm_variant_curvature_term_in_every_mode(variant, modes):
    """L(theta, lam, q) of Hohenbichler and Tvedt (through ad.eigh of P H P and
    beta = |theta|) against central differences, as for Breitung's term above."""
    from topopt.reliability.curvature import _curvature_term
    ls = rel.LimitState(_cubic, m=4)
    theta, p = np.array([1.2, -0.2, 0.3, 0.1]), np.array([1.2, 0.3, 0.8])
    report = ad.check_modes(lambda t, la, q: _curvature_term(ls, variant, t, la, q),
                            theta, 0.6, p, modes=modes)
    assert report and max(report.values()) < 1e-6


def test_nataf_map_in_every_mode():
    """x = T(u) of a correlated lognormal/Gumbel/Weibull/uniform model, all AD modes."""
    nat = rel.Nataf([rel.Lognormal(0.1, 0.3), rel.Gumbel(2.0, 0.5), rel.Weibull(1.0, 3.0),
                     rel.Uniform(-1.0, 2.0)],
                    [[1, 0.3, 0, 0.1], [0.3, 1, -0.2, 0], [0, -0.2, 1, 0.4], [0.1, 0, 0.4, 1]])
    report = ad.check_modes(lambda u: nat.x_from_u(u), np.array([0.4, -1.1, 0.7, 1.9]))
    assert report and max(report.values()) < 1e-6
