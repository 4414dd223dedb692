"""Input distributions: marginals, the Nataf transform, limit states in physical variables.

References: scipy.stats (marginals), closed forms (lognormal-lognormal Nataf
correction, Liu & Der Kiureghian 1986; FORM exact where the limit state is
linear in u), scipy's dblquad (Pearson correlations), and OpenTURNS 1.27 as
printed by scripts/crosscheck/openturns_reliability.py (quoted below as "OT").
"""

import numpy as np
import pytest
import scipy.integrate
import scipy.special as sp
import scipy.stats as st

from topopt import ad
from topopt import reliability as rel

U_GRID = np.linspace(-7.0, 7.0, 29)

# (marginal, the scipy.stats distribution it must equal)
MARGINALS = [
    (rel.Normal(10.0, 2.0), st.norm(10.0, 2.0)),
    (rel.Normal.from_moments(-3.0, 0.5), st.norm(-3.0, 0.5)),
    (rel.Lognormal(0.3, 0.25), st.lognorm(s=0.25, scale=np.exp(0.3))),
    (rel.Lognormal.from_moments(100.0, 30.0), st.lognorm(
        s=np.sqrt(np.log1p(0.09)), scale=100.0 / np.sqrt(1.09))),
    (rel.Gumbel(50.0, 7.0), st.gumbel_r(50.0, 7.0)),
    (rel.Gumbel.from_moments(4.0, 1.0),
     st.gumbel_r(4.0 - 0.5772156649015329 * np.sqrt(6) / np.pi, np.sqrt(6) / np.pi)),
    (rel.Weibull(2.0, 1.5), st.weibull_min(1.5, scale=2.0)),
    (rel.Weibull(41721.5, 12.0), st.weibull_min(12.0, scale=41721.5)),
    (rel.Uniform(-1.0, 3.0), st.uniform(-1.0, 4.0)),
    (rel.Uniform.from_moments(2.0, 0.5), st.uniform(2.0 - 0.5 * np.sqrt(3), np.sqrt(3))),
]
IDS = [repr(d) for d, _ in MARGINALS]


def _reference_x(ref, u):
    """``F^{-1}(Phi(u))`` by scipy.stats: ppf in the lower half, isf in the upper."""
    return np.where(u <= 0, ref.ppf(sp.ndtr(np.minimum(u, 0))),
                    ref.isf(sp.ndtr(-np.maximum(u, 0))))


@pytest.mark.parametrize("dist, ref", MARGINALS, ids=IDS)
def test_marginal_against_scipy_stats(dist, ref):
    u = U_GRID if not isinstance(dist, rel.Uniform) else U_GRID[np.abs(U_GRID) <= 5]
    x = np.asarray(dist.x_from_u(u))
    np.testing.assert_allclose(x, _reference_x(ref, u), rtol=1e-9, atol=1e-12)
    inner = x[np.abs(u) <= 5]
    np.testing.assert_allclose(dist.cdf(inner), ref.cdf(inner), rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(dist.pdf(inner), ref.pdf(inner), rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(dist.u_from_x(inner), u[np.abs(u) <= 5], atol=1e-8)
    np.testing.assert_allclose(dist.ppf([0.01, 0.5, 0.99]), ref.ppf([0.01, 0.5, 0.99]),
                               rtol=1e-10)
    assert dist.mean == pytest.approx(ref.mean(), rel=1e-12)
    assert dist.std == pytest.approx(ref.std(), rel=1e-10)


@pytest.mark.parametrize("cls, mean, std", [
    (rel.Normal, 5.0, 2.0), (rel.Lognormal, 3.0, 2.5), (rel.Gumbel, -2.0, 0.3),
    (rel.Weibull, 40000.0, 4000.0), (rel.Weibull, 1.0, 1.5), (rel.Uniform, 0.0, 1.0)])
def test_from_moments_round_trip(cls, mean, std):
    d = cls.from_moments(mean, std)
    assert (d.mean, d.std) == (pytest.approx(mean, rel=1e-11, abs=1e-14),
                               pytest.approx(std, rel=1e-10))


@pytest.mark.parametrize("dist", [d for d, _ in MARGINALS], ids=IDS)
def test_marginal_map_is_differentiable_in_every_mode(dist):
    report = ad.check_modes(lambda u: dist.x_from_u(u), np.array([-1.3, 0.2, 2.1]))
    assert report and max(report.values()) < 1e-6


@pytest.mark.parametrize("build, match", [
    (lambda: rel.Normal(0.0, -1.0), "sigma must be > 0"),
    (lambda: rel.Normal(np.nan, 1.0), "mu must be finite"),
    (lambda: rel.Lognormal(0.0, 0.0), "zeta must be > 0"),
    (lambda: rel.Lognormal.from_moments(-1.0, 1.0), "mean must be > 0"),
    (lambda: rel.Gumbel(0.0, -2.0), "scale must be > 0"),
    (lambda: rel.Weibull(1.0, 0.0), "k must be > 0"),
    (lambda: rel.Weibull.from_moments(1.0, 20.0), r"std/mean must lie in \[0.001, 10\]"),
    (lambda: rel.Uniform(2.0, 1.0), "b must be > a"),
    (lambda: rel.Normal(0.0, 1.0).ppf(1.0), r"p must lie in \(0, 1\)"),
    (lambda: rel.Lognormal(0.0, 1.0).u_from_x(-1.0), "support"),
    (lambda: rel.Uniform(0.0, 1.0).cdf(1.5), "support"),
])
def test_bad_marginal_parameters_are_named(build, match):
    with pytest.raises(ValueError, match=match):
        build()
    with pytest.raises(TypeError, match="mu must be a real number"):
        rel.Normal("1", 1.0)


# ------------------------------------------------------------------ Nataf
@pytest.mark.parametrize("rho", [-0.6, -0.2, 0.3, 0.8])
def test_nataf_lognormal_pair_matches_closed_form(rho):
    """Liu & Der Kiureghian (1986): rho = (e^{z1 z2 rho0} - 1)/sqrt((e^{z1^2}-1)(e^{z2^2}-1))."""
    R, S = rel.Lognormal.from_moments(1.0, 0.4), rel.Lognormal.from_moments(2.0, 0.5)
    nat = rel.Nataf([R, S], [[1.0, rho], [rho, 1.0]])
    z1, z2 = R.zeta, S.zeta
    exact = np.log1p(rho * np.sqrt(np.expm1(z1 ** 2) * np.expm1(z2 ** 2))) / (z1 * z2)
    assert nat.corr0[0, 1] == pytest.approx(exact, abs=1e-11)


def test_nataf_normal_marginals_keep_the_correlation():
    marg = [rel.Normal(1.0, 2.0), rel.Normal(-1.0, 0.5), rel.Normal(3.0, 1.0)]
    R = np.array([[1.0, 0.6, -0.3], [0.6, 1.0, 0.1], [-0.3, 0.1, 1.0]])
    nat = rel.Nataf(marg, R)
    np.testing.assert_allclose(nat.corr0, R, atol=1e-12)


def _pearson(marginals, i, j, rho0):
    """Pearson correlation of x_i, x_j by scipy's dblquad over the bivariate normal."""
    di, dj = marginals[i], marginals[j]
    pdf = st.multivariate_normal([0.0, 0.0], [[1.0, rho0], [rho0, 1.0]]).pdf
    def f(b, a):
        return ((di.x_from_u(a) - di.mean) / di.std * (dj.x_from_u(b) - dj.mean) / dj.std
                * pdf([a, b]))
    return scipy.integrate.dblquad(f, -9, 9, -9, 9, epsabs=1e-11)[0]


NATAF_MARGINALS = [rel.Lognormal.from_moments(10.0, 2.0), rel.Gumbel.from_moments(4.0, 1.0),
                   rel.Weibull.from_moments(1.0, 0.1)]
R0_OT = np.array([[1.0, 0.4, -0.3], [0.4, 1.0, 0.2], [-0.3, 0.2, 1.0]])


def _nataf_case():
    P = np.eye(3)
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        P[i, j] = P[j, i] = _pearson(NATAF_MARGINALS, i, j, R0_OT[i, j])
    return rel.Nataf(NATAF_MARGINALS, P)


def test_nataf_correction_recovers_the_copula_and_matches_openturns():
    """Pearson correlations from dblquad at R0; the correction must give R0 back, and
    FORM/SORM of F = 1.6 S - R W agree with OT (normal copula R0): beta 2.098952534157,
    ln pf FORM -4.0223657687, Breitung -3.8283828360, Hohenbichler -3.7893899747,
    Tvedt -3.7994907924."""
    nat = _nataf_case()
    np.testing.assert_allclose(nat.corr0, R0_OT, atol=1e-9)
    ls = rel.TransformedLimitState(lambda x, d: 1.6 * x[1] - x[0] * x[2], nat)
    form = rel.failure_probability(ls, None, 0.0, "form")
    assert form.beta == pytest.approx(2.098952534157, abs=1e-8)
    assert form.ln_pf == pytest.approx(-4.0223657687, abs=1e-8)
    np.testing.assert_allclose(form.mpp, [-0.5136562744, 1.9251103978, -0.6600825167],
                               atol=1e-5)
    np.testing.assert_allclose(form.design_point, [8.8573632396, 5.7261993661, 1.0343844706],
                               rtol=1e-5)
    for method, ot_value in [("sorm", -3.8283828360), ("sorm-hohenbichler", -3.7893899747),
                             ("sorm-tvedt", -3.7994907924)]:
        r = rel.failure_probability(ls, None, 0.0, method)
        assert r.ln_pf == pytest.approx(ot_value, abs=5e-6), method


def test_nataf_map_round_trip_and_jacobian():
    nat = _nataf_case()
    u = np.random.default_rng(4).standard_normal((50, 3)) * 1.5
    x = np.asarray(nat.x_from_u(u))
    np.testing.assert_allclose(nat.u_from_x(x), u, atol=1e-9)
    u0 = u[0]
    J = nat.jacobian(u0)
    h = 1e-6
    fd = np.stack([(np.asarray(nat.x_from_u(u0 + h * e)) - np.asarray(nat.x_from_u(u0 - h * e)))
                   / (2 * h) for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(J, fd, rtol=1e-7)
    assert np.all(np.triu(J, 1) == 0)          # dx/du = diag(dx_i/dy_i) L0: lower triangular
    samples = nat.sample(200_000, seed=1)
    np.testing.assert_allclose(samples.mean(axis=0), [10.0, 4.0, 1.0], rtol=3e-3)
    np.testing.assert_allclose(np.corrcoef(samples.T), nat.corr, atol=1e-2)


@pytest.mark.parametrize("corr, match", [
    ([[1.0, 0.5], [0.4, 1.0]], "symmetric"),
    ([[2.0, 0.5], [0.5, 1.0]], "unit diagonal"),
    ([[1.0, 1.0], [1.0, 1.0]], r"\(-1, 1\)"),
    (np.eye(3), r"corr has shape \(3, 3\); expected \(2, 2\)"),
])
def test_bad_correlation_matrices(corr, match):
    marg = [rel.Normal(0.0, 1.0), rel.Normal(0.0, 1.0)]
    with pytest.raises(ValueError, match=match):
        rel.Nataf(marg, corr)


def test_unreachable_correlation_and_non_positive_definite():
    """Two strongly skewed lognormals cannot have correlation -0.9 (the range is printed)."""
    marg = [rel.Lognormal(0.0, 1.5), rel.Lognormal(0.0, 1.5)]
    with pytest.raises(ValueError, match=r"corr\[0, 1\] = -0.9 cannot be reached.*\(-0\.1"):
        rel.Nataf(marg, [[1.0, -0.9], [-0.9, 1.0]])
    R = np.array([[1.0, 0.9, 0.9], [0.9, 1.0, -0.9], [0.9, -0.9, 1.0]])
    with pytest.raises(ValueError, match="positive definite"):
        rel.Nataf([rel.Normal(0.0, 1.0)] * 3, R)
    with pytest.raises(TypeError, match=r"marginals\[1\] must be a Marginal"):
        rel.Nataf([rel.Normal(0.0, 1.0), st.norm()])
    with pytest.raises(ValueError, match="quad_points"):
        rel.Nataf([rel.Normal(0.0, 1.0)], quad_points=2)


# ------------------------------------------- FORM exact in the transformed space
def _lognormal_rs():
    R, S = rel.Lognormal(np.log(5.0), 0.2), rel.Lognormal(np.log(2.0), 0.3)
    return rel.TransformedLimitState(lambda x, d: np.log(x[1]) - np.log(x[0]), [R, S])


def _exact_cases():
    """(limit state, z, exact ln pf): each is linear in u after the transform."""
    beta_rs = np.log(2.5) / np.hypot(0.2, 0.3)
    G = rel.Gumbel.from_moments(50.0, 10.0)
    W = rel.Weibull.from_moments(30.0, 3.0)
    U = rel.Uniform(1.0, 4.0)
    cases = [
        (_lognormal_rs(), 0.0, sp.log_ndtr(-beta_rs)),
        # Gumbel load against a fixed threshold: ln(1 - F(100)), OT: 9.206548756099e-04
        (rel.TransformedLimitState(lambda x, d: x[0], G), 100.0,
         np.log(-np.expm1(-np.exp(-(100.0 - G.mu) / G.scale)))),
        # Weibull strength below a load of 18: ln F_W(18)
        (rel.TransformedLimitState(lambda x, d: -x[0], W), -18.0,
         np.log(-np.expm1(-(18.0 / W.scale) ** W.k))),
        # uniform beyond 3.97
        (rel.TransformedLimitState(lambda x, d: x[0], U), 3.97, np.log(0.03 / 3.0)),
        # a normal load S against a lognormal resistance, through ln(S/R) on (R, S)
        (rel.TransformedLimitState(lambda x, d: np.log(x[1] / x[0]),
                                   [rel.Lognormal(1.0, 0.1), rel.Lognormal(0.2, 0.2)]),
         0.0, sp.log_ndtr(-0.8 / np.hypot(0.1, 0.2))),
    ]
    return cases


@pytest.mark.parametrize("case", range(5))
def test_form_is_exact_where_the_limit_state_is_linear_in_u(case):
    ls, z, exact = _exact_cases()[case]
    for method in ("form", "sorm", "sorm-hohenbichler", "sorm-tvedt"):
        r = rel.failure_probability(ls, None, z, method)
        assert r.ln_pf == pytest.approx(exact, abs=1e-8), method
    assert np.sum(r.alpha ** 2) == pytest.approx(1.0, abs=1e-12)


def test_lognormal_and_gumbel_cases_match_openturns():
    """OT: ln S - ln R: beta 2.541333243851, alpha^2 (0.307693274, 0.692306726),
    x* (3.7716095999, 3.7716095999); Gumbel >= 100: pf 9.206548756099e-04, x* 100."""
    r = rel.failure_probability(_lognormal_rs(), None, 0.0, "form")
    assert r.beta == pytest.approx(2.541333243851, abs=1e-10)
    np.testing.assert_allclose(r.alpha ** 2, [0.307693274, 0.692306726], atol=2e-6)
    np.testing.assert_allclose(r.alpha ** 2, [0.04 / 0.13, 0.09 / 0.13], atol=1e-12)  # exact
    np.testing.assert_allclose(r.design_point, [3.7716095999, 3.7716095999], rtol=1e-6)
    ln_x = np.log(5.0) - 0.04 * r.beta / np.sqrt(0.13)          # exact: R* = S*
    np.testing.assert_allclose(np.log(r.design_point), [ln_x, ln_x], atol=1e-12)
    ls, z, _ = _exact_cases()[1]
    g = rel.failure_probability(ls, None, z, "form")
    assert g.pf == pytest.approx(9.206548756099e-04, rel=1e-9)
    np.testing.assert_allclose(g.design_point, [100.0], rtol=1e-12)


def test_nataf_correlated_normals_reproduce_the_correlated_normal_result():
    """F = a.x with x ~ N(mu, Sigma): beta = (z - a.mu)/sqrt(a^T Sigma a) exactly."""
    mu, sd = np.array([1.0, -2.0, 0.5]), np.array([2.0, 0.5, 1.5])
    R = np.array([[1.0, 0.6, -0.3], [0.6, 1.0, 0.1], [-0.3, 0.1, 1.0]])
    a, z = np.array([0.7, -1.2, 2.0]), 9.0
    nat = rel.Nataf([rel.Normal(m, s) for m, s in zip(mu, sd)], R)
    ls = rel.TransformedLimitState(lambda x, d: x @ a, nat)
    Sigma = np.outer(sd, sd) * R
    beta = (z - a @ mu) / np.sqrt(a @ Sigma @ a)
    for method in ("form", "sorm-tvedt"):
        r = rel.failure_probability(ls, None, z, method)
        assert r.ln_pf == pytest.approx(sp.log_ndtr(-beta), abs=1e-10)
    # the physical MPP is the conditional mean given a.x = z
    x_star = mu + Sigma @ a * (z - a @ mu) / (a @ Sigma @ a)
    np.testing.assert_allclose(r.design_point, x_star, atol=1e-9)


def test_sampling_in_the_transformed_space():
    ls = rel.TransformedLimitState(lambda x, d: np.log(x[..., 1]) - np.log(x[..., 0]),
                                   [rel.Lognormal(np.log(5.0), 0.2),
                                    rel.Lognormal(np.log(2.0), 0.3)], batch=True)
    exact = sp.log_ndtr(-np.log(2.5) / np.hypot(0.2, 0.3))
    for method, n in (("is", 20_000), ("mc", 200_000)):
        r = rel.failure_probability(ls, None, 0.0, method, n_samples=n, seed=3)
        assert abs(r.ln_pf - exact) < 4 * r.ln_pf_std, method
        assert r.ln_pf_std < 0.05


def _design_limit_state(x, p):
    """F = p0 S - R W p1 with the Nataf inputs above (a design in the load and strength)."""
    return p[0] * x[1] - x[0] * x[2] * p[1]


@pytest.mark.parametrize("method", ["form", "sorm", "sorm-tvedt", "sorm-hohenbichler"])
def test_gradients_in_the_transformed_space(method):
    """ln pf through the Nataf map: rule check (reverse and forward) and Taylor rate."""
    ls = rel.TransformedLimitState(_design_limit_state, _nataf_case())
    p0, dp = np.array([1.6, 1.0]), np.array([0.3, -0.2])
    ad.check_rule(rel.ln_pf, ls, p0, 0.0, method=method, rtol=1e-6)
    assert ad.taylor_test(lambda p: rel.ln_pf(ls, p, 0.0, method), p0, dp) >= 1.9


def test_transformed_limit_state_arguments():
    with pytest.raises(TypeError, match="distribution must be a Nataf"):
        rel.TransformedLimitState(lambda x, d: x[0], {"mu": 1.0})
    with pytest.raises(TypeError, match="fun must be callable"):
        rel.TransformedLimitState(None, [rel.Normal(0.0, 1.0)])
    ls = rel.TransformedLimitState(lambda x, d: x[0], rel.Normal(0.0, 1.0))
    assert ls.m == 1
    with pytest.raises(ValueError, match="contradicts"):
        rel.failure_probability(ls, None, 1.0, "form", m=2)


def test_distribution_keyword_of_the_front_door():
    """failure_probability / ln_pf / FailureProbability with distribution=: the same
    numbers as the TransformedLimitState, d ln pf/dd against the closed form
    d/dd ln Phi(-beta(d)) for F = ln S - d ln R (linear in u: FORM exact)."""
    R, S = rel.Lognormal(np.log(5.0), 0.2), rel.Lognormal(np.log(2.0), 0.3)
    f = lambda x, d: np.log(x[1]) - d * np.log(x[0])          # noqa: E731

    def exact(d):                   # F = (ln2 + 0.3 u2) - d (ln5 + 0.2 u1) >= 0
        return sp.log_ndtr(-(d * np.log(5.0) - np.log(2.0)) / np.hypot(0.2 * d, 0.3))
    v = rel.failure_probability(f, 1.0, 0.0, "form", distribution=[R, S]).ln_pf
    assert v == pytest.approx(exact(1.0), abs=1e-10)
    g = ad.gradient(lambda d: rel.ln_pf(f, d, 0.0, "sorm-tvedt", distribution=[R, S]), 1.0)
    h = 1e-5
    assert g == pytest.approx((exact(1 + h) - exact(1 - h)) / (2 * h), rel=1e-6)
    fp = rel.FailureProbability(f, 0.0, "form", distribution=rel.Nataf([R, S]))
    assert fp(1.0) == pytest.approx(exact(1.0), abs=1e-10)
    with pytest.raises(TypeError, match="distribution= takes a plain function"):
        rel.failure_probability(_lognormal_rs(), None, 0.0, "form", distribution=[R, S])
    with pytest.raises(TypeError, match="distribution must be a Nataf"):
        rel.failure_probability(f, 1.0, 0.0, "form", distribution="lognormal")
