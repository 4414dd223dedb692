"""More estimators: SORM by Hohenbichler and Tvedt, several MPPs, systems, subset simulation.

Sources of the numbers: closed forms and exact integrals computed here, the
formulas of the papers evaluated independently (complex arithmetic for
Tvedt), OpenTURNS 1.27 as printed by scripts/crosscheck/openturns_reliability.py ("OT"),
and Der Kiureghian (2022), Structural and System Reliability, Cambridge UP,
Examples 6.5 and 7.2 (the column: beta 2.47, curvatures -0.155, -0.0399, 0,
pf 0.00914 by Breitung and 0.00960 by Hohenbichler-Rackwitz).
"""

import numpy as np
import pytest
import scipy.integrate
import scipy.special as sp
import scipy.stats as st

from topopt import ad
from topopt import reliability as rel
from topopt.reliability.curvature import _defined as defined
from topopt.reliability.curvature import _log_factor as log_factor

from reliability_cases import P0, quadratic_coefficients

SORMS = ("sorm", "sorm-hohenbichler", "sorm-tvedt")


def paraboloid(kappa):
    return lambda t, d: t[..., 0] - 0.5 * kappa * np.sum(t[..., 1:] ** 2, axis=-1)


def exact_paraboloid(beta, kappa, n):
    """P(t1 - kappa/2 chi2_{n-1} >= beta) by quadrature."""
    def f(s):
        return np.exp(sp.log_ndtr(-(beta + 0.5 * kappa * s)) + st.chi2.logpdf(s, n - 1))
    return float(np.log(scipy.integrate.quad(f, 0, np.inf, epsrel=1e-12, limit=200)[0]))


def papers_ln_pf(variant, beta, kappa):
    """The formulas as published, in plain complex arithmetic (not topopt's rewrite)."""
    kappa = np.asarray(kappa, complex)
    Phi, phi = sp.ndtr(-beta), np.exp(-beta ** 2 / 2) / np.sqrt(2 * np.pi)
    if variant == "sorm":                                         # Breitung (1984)
        return np.log(Phi * np.prod(1 + beta * kappa) ** -0.5).real
    if variant == "sorm-hohenbichler":                            # Hohenbichler-Rackwitz
        return np.log(Phi * np.prod(1 + phi / Phi * kappa) ** -0.5).real
    a1 = Phi * np.prod((1 + beta * kappa) ** -0.5)                # Tvedt (1988)
    a2 = (beta * Phi - phi) * (np.prod((1 + beta * kappa) ** -0.5)
                               - np.prod((1 + (beta + 1) * kappa) ** -0.5))
    a3 = (beta + 1) * (beta * Phi - phi) * (np.prod((1 + beta * kappa) ** -0.5)
                                            - np.prod((1 + (beta + 1j) * kappa) ** -0.5).real)
    return float(np.log((a1 + a2 + a3).real))


# (kappa, beta, n, OT's ln pf for Breitung, Hohenbichler, Tvedt)
PARABOLOIDS = [(0.1, 3.0, 10, (-7.7883654116, -7.8853093248, -7.9641937720)),
               (0.3, 2.5, 4, (-5.9210719592, -6.0018489324, -6.0581658947))]


@pytest.mark.parametrize("kappa, beta, n, ot_values", PARABOLOIDS)
def test_sorm_variants_on_paraboloids(kappa, beta, n, ot_values):
    exact = exact_paraboloid(beta, kappa, n)
    errors = []
    for method, ot_value in zip(SORMS, ot_values):
        r = rel.failure_probability(paraboloid(kappa), None, beta, method, m=n)
        assert r.ln_pf == pytest.approx(papers_ln_pf(method, beta, [kappa] * (n - 1)),
                                        abs=1e-12), method
        assert r.ln_pf == pytest.approx(ot_value, abs=1e-9), method
        errors.append(abs(r.ln_pf - exact))
    # Breitung < Hohenbichler < Tvedt in accuracy on these paraboloids
    assert errors[2] < errors[1] < errors[0]
    assert errors[2] < 0.03


@pytest.mark.parametrize("kappa", [[-0.155, -0.0399, 0.0], [0.2, -0.1, 0.05, 0.4],
                                   [-0.05] * 6, [0.7, 0.0]])
@pytest.mark.parametrize("beta", [1.5, 3.0, 6.0])
def test_curvature_factor_matches_the_published_formulas(kappa, beta):
    for method, variant in zip(SORMS, ("breitung", "hohenbichler", "tvedt")):
        if not defined(variant, beta, np.array(kappa)):
            # outside the formula's range: a root of a negative number in the paper's form
            psi = np.exp(-beta ** 2 / 2) / np.sqrt(2 * np.pi) / sp.ndtr(-beta)
            c = {"breitung": beta, "hohenbichler": psi, "tvedt": beta + 1}
            assert np.min(1 + c[variant] * np.array(kappa)) <= 0
            continue
        ours = sp.log_ndtr(-beta) + log_factor(variant, beta, np.array(kappa))
        assert ours == pytest.approx(papers_ln_pf(method, beta, kappa), abs=1e-11)


def test_sorm_variants_on_the_quadratic_case_match_openturns():
    """OT (symbolic derivatives): beta 3.007372644587, ln pf FORM -6.6319566034, Breitung
    -6.4550511578, Hohenbichler -6.4363295538, Tvedt -6.4405350798 (OT's MPP to ~1e-7)."""
    quad = rel.QuadraticLimitState(quadratic_coefficients)
    ot = dict(form=-6.6319566034, sorm=-6.4550511578, **{"sorm-hohenbichler": -6.4363295538,
                                                         "sorm-tvedt": -6.4405350798})
    for method, value in ot.items():
        r = rel.failure_probability(quad, P0, 14.0, method)
        assert r.beta == pytest.approx(3.007372644587, abs=1e-10)
        assert r.ln_pf == pytest.approx(value, abs=1e-6), method
    np.testing.assert_allclose(r.alpha ** 2, [0.7621678498, 0.2188825113, 0.0189496388],
                               atol=1e-6)


def column():
    """Der Kiureghian (2022), Examples 6.5 and 7.2: M1, M2 normal, P Gumbel, Y Weibull."""
    marg = [rel.Normal(250.0, 75.0), rel.Normal(125.0, 37.5),
            rel.Gumbel.from_moments(2500.0, 500.0), rel.Weibull.from_moments(40000.0, 4000.0)]
    R = np.array([[1, 0.5, 0.3, 0], [0.5, 1, 0.3, 0], [0.3, 0.3, 1, 0], [0, 0, 0, 1.0]])
    a, s1, s2 = 0.190, 0.030, 0.015
    # failure g = 1 - M1/(s1 Y) - M2/(s2 Y) - (P/(a Y))^2 <= 0, i.e. F = -g >= 0
    return rel.TransformedLimitState(
        lambda x, d: x[0] / (s1 * x[3]) + x[1] / (s2 * x[3]) + (x[2] / (a * x[3])) ** 2 - 1.0,
        rel.Nataf(marg, R))


def test_textbook_column_der_kiureghian():
    ls = column()
    # the normal-Gumbel correction factor 1.031497464905 (OT script, Stein's lemma)
    assert ls.distribution.corr0[0, 2] / 0.3 == pytest.approx(1.031497464905, abs=1e-10)
    r = {m: rel.failure_probability(ls, None, 0.0, m) for m in ("form",) + SORMS}
    assert r["form"].beta == pytest.approx(2.47, abs=0.005)              # book
    assert r["form"].beta == pytest.approx(2.466021248863, abs=1e-9)     # OT
    np.testing.assert_allclose(np.sort(r["sorm"].curvatures), [-0.155, -0.0399, 0.0],
                               atol=5e-4)                                 # book
    assert r["sorm"].pf == pytest.approx(0.00914, rel=1e-3)             # book, Breitung
    assert r["sorm-hohenbichler"].pf == pytest.approx(0.00960, rel=2e-3)  # book, H-R
    ot = {"form": -4.9862605676, "sorm": -4.6941693548, "sorm-hohenbichler": -4.6443901645,
          "sorm-tvedt": -4.6647160816}
    for m, value in ot.items():
        assert r[m].ln_pf == pytest.approx(value, abs=1e-6), m
    np.testing.assert_allclose(r["form"].design_point,
                               [340.7255430407, 170.3627715182, 3222.4129324315,
                                31769.2090210731], rtol=1e-6)


def test_tvedt_and_hohenbichler_refuse_outside_their_range():
    """1 + (beta + 1) kappa <= 0 (Tvedt) or 1 + psi kappa <= 0 (Hohenbichler) while
    Breitung's 1 + beta kappa > 0: a named error, or FORM as the documented bound."""
    F = lambda t, d: t[0] + 0.5 * 0.32 * t[1] ** 2    # kappa = -0.32 at beta = 3  # noqa: E731
    assert rel.failure_probability(F, None, 3.0, "sorm", m=2).converged
    for method in ("sorm-tvedt", "sorm-hohenbichler"):
        with pytest.raises(rel.MPPError, match="sorm_singular"):
            rel.failure_probability(F, None, 3.0, method, m=2)
        r = rel.failure_probability(F, None, 3.0, method, m=2, on_failure="bound")
        assert r.bound == "form" and r.ln_pf == pytest.approx(sp.log_ndtr(-3.0), abs=1e-12)


# ------------------------------------------------------------ several MPPs
def test_two_symmetric_failure_modes_are_both_found():
    """F = theta_1^2 >= 9 in 2-D: pf = 2 Phi(-3) exactly, by default (the search restarts
    from the mirror image of its first MPP); one search (``n_starts=1``) gives Phi(-3)."""
    F = lambda t, d: t[..., 0] ** 2             # noqa: E731
    exact = np.log(2 * sp.ndtr(-3.0))
    default = rel.failure_probability(F, None, 9.0, "sorm", m=2)
    assert default.n_mpp == 2 and default.ln_pf == pytest.approx(exact, abs=1e-8)
    single = rel.failure_probability(F, None, 9.0, "sorm", m=2, n_starts=1)
    assert single.n_mpp == 1 and single.ln_pf == pytest.approx(sp.log_ndtr(-3.0), abs=1e-10)
    mpp = rel.find_mpp(F, None, 9.0, m=2, n_starts=3)
    found = np.array(sorted([mpp.theta] + [o.theta for o in mpp.others], key=lambda t: t[0]))
    np.testing.assert_allclose(found, [[-3.0, 0.0], [3.0, 0.0]], atol=1e-10)
    for method in ("form",) + SORMS:
        r = rel.failure_probability(F, None, 9.0, method, m=2, n_starts=3)
        assert r.n_mpp == 2 and r.ln_pf == pytest.approx(exact, abs=1e-8), method
    r = rel.failure_probability(F, None, 9.0, "is", m=2, batch=True, n_starts=2,
                                n_samples=20_000, seed=5)
    assert len(r.info["centers"]) == 2
    assert abs(r.ln_pf - exact) < 3 * r.ln_pf_std and r.ln_pf_std < 0.02


@pytest.mark.parametrize("method", ("form",) + SORMS)
def test_modes_of_a_failing_origin_sum_to_at_most_one(method):
    """F = -d theta_1^2 >= -9: the origin fails; the two mirrored MPPs (+-3, beta = -3)
    each give Phi(3), their sum 1.997 is capped at the series bound pf = 1 (exact: 1 -
    2 Phi(-3) = 0.9973), flat in the design; one MPP alone stays Phi(3)."""
    F = lambda t, d: -d * t[..., 0] ** 2        # noqa: E731
    both = rel.failure_probability(F, 1.0, -9.0, method, m=2, n_starts=3)
    assert both.n_mpp == 2 and both.ln_pf == 0.0 and both.info["capped"]
    v, g = ad.value_and_gradient(lambda d: rel.ln_pf(F, d, -9.0, method=method, m=2,
                                                     n_starts=3), 1.0)
    assert float(v) == 0.0 and float(g) == 0.0
    one = rel.failure_probability(F, 1.0, -9.0, method, m=2, n_starts=1)
    assert one.ln_pf == pytest.approx(sp.log_ndtr(3.0), abs=1e-10) and "capped" not in one.info


def test_two_unequal_modes_and_their_gradient():
    """F = p theta_1^2 + 0.3 theta_1 >= 9: two half planes, pf = Phi(-a) + Phi(-b) exactly
    with a, b the roots; d ln pf/dp from the weighted MPP contributions."""
    def F(t, p):
        return p * t[0] ** 2 + 0.3 * t[0] + 0.0 * t[1]

    def exact(p):
        disc = np.sqrt(0.09 + 36.0 * p)
        a, b = (-0.3 + disc) / (2 * p), (0.3 + disc) / (2 * p)
        return np.log(sp.ndtr(-a) + sp.ndtr(-b))

    for method in ("form", "sorm-tvedt"):
        lp = lambda p: rel.ln_pf(F, p, 9.0, method, m=2, n_starts=3)  # noqa: E731
        v, g = ad.value_and_gradient(lp, 1.0)
        assert v == pytest.approx(exact(1.0), abs=1e-10)
        h = 1e-5
        assert g == pytest.approx((exact(1 + h) - exact(1 - h)) / (2 * h), rel=1e-6)
        ad.check_rule(rel.ln_pf, F, 1.0, 9.0, method=method, m=2, n_starts=3, rtol=1e-6)


def test_n_starts_is_checked():
    with pytest.raises(ValueError, match="n_starts must be an integer >= 1"):
        rel.find_mpp(lambda t, d: t[0], None, 1.0, m=2, n_starts=0)


# ---------------------------------------------------------------- systems
def owen_phi2(h, k, rho):
    """P(Y1 <= h, Y2 <= k) by Owen's (1956) T-function formula (independent of quad)."""
    s = np.sqrt(1 - rho * rho)
    ah, ak = (k - rho * h) / (h * s), (h - rho * k) / (k * s)
    corr = 0.0 if h * k > 0 or (h * k == 0 and h + k >= 0) else 0.5
    return 0.5 * sp.ndtr(h) + 0.5 * sp.ndtr(k) - sp.owens_t(h, ah) - sp.owens_t(k, ak) - corr


@pytest.mark.parametrize("b1, b2, angle", [(3.0, 3.0, 45.0), (2.5, 3.5, 120.0),
                                           (3.0, 2.0, 10.0), (2.5, 3.5, 100.0)])
def test_two_component_systems_match_the_bivariate_normal(b1, b2, angle):
    a2 = np.array([np.cos(np.radians(angle)), np.sin(np.radians(angle)), 0.0])
    F1 = lambda t, d: t[..., 0]                 # noqa: E731
    F2 = lambda t, d: t @ a2 if t.ndim == 1 else t @ a2   # noqa: E731
    rho = np.cos(np.radians(angle))
    both = owen_phi2(-b1, -b2, rho)             # P(Y1 >= b1, Y2 >= b2) by symmetry
    series = sp.ndtr(-b1) + sp.ndtr(-b2) - both
    r = rel.system_failure_probability([F1, F2], None, [b1, b2], "series", m=3)
    assert r.ln_pf == pytest.approx(np.log(series), abs=1e-9)
    lo, hi = r.info["bounds"]
    assert lo == pytest.approx(series, rel=1e-9) and hi == pytest.approx(series, rel=1e-9)
    p = rel.system_failure_probability([F1, F2], None, [b1, b2], "parallel", m=3)
    assert p.ln_pf == pytest.approx(np.log(both), rel=1e-7)
    for kind, exact in (("series", series), ("parallel", both)):
        s = rel.system_failure_probability([rel.LimitState(F1, m=3, batch=True),
                                            rel.LimitState(F2, m=3, batch=True)],
                                           None, [b1, b2], kind, "is", n_samples=40_000,
                                           seed=7)
        assert abs(s.ln_pf - np.log(exact)) < 4 * s.ln_pf_std, kind


def test_three_component_series_system_bounds_and_sampling():
    A = np.array([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.6, 0.8]])
    comps = [rel.LimitState(lambda t, d, a=a: t @ a, m=3, batch=True) for a in A]
    z = [2.5, 2.7, 2.6]
    r = rel.system_failure_probability(comps, None, z, "series")
    lo, hi = r.info["bounds"]
    assert lo <= r.pf <= hi and hi - lo < 0.05 * r.pf
    exact = 1 - st.multivariate_normal.cdf(np.array(z), np.zeros(3), A @ A.T, abseps=1e-12,
                                           releps=1e-10, maxpts=10 ** 6, rng=0)
    assert r.pf == pytest.approx(exact, rel=1e-5)
    mc = rel.system_failure_probability(comps, None, z, "series", "mc", n_samples=400_000,
                                        seed=2)
    assert abs(mc.ln_pf - r.ln_pf) < 4 * mc.ln_pf_std


def test_system_arguments():
    F = lambda t, d: t[0]                       # noqa: E731
    with pytest.raises(ValueError, match="at least 2 limit states"):
        rel.system_failure_probability([F], None, 1.0, m=2)
    with pytest.raises(ValueError, match="unknown kind"):
        rel.system_failure_probability([F, F], None, 1.0, "serial", m=2)
    with pytest.raises(ValueError, match="z has 3 thresholds for 2"):
        rel.system_failure_probability([F, F], None, [1.0, 2.0, 3.0], m=2)
    with pytest.raises(TypeError, match="do not apply to method='mc'"):
        rel.system_failure_probability([F, F], None, 1.0, "series", "mc", m=2, tol=1e-8)
    with pytest.raises(rel.ReliabilityError, match="fails at the origin"):
        rel.system_failure_probability([F, F], None, [1.0, -1.0], m=2)


# ------------------------------------------------------- subset simulation
A10 = np.ones(10) / np.sqrt(10.0)


def linear10(t, d):
    return t @ A10


def test_subset_simulation_at_beta_5_within_its_reported_cov():
    exact = sp.log_ndtr(-5.0)
    r = rel.subset_simulation(linear10, None, 5.0, m=10, batch=True, n_per_level=2000,
                              seed=0)
    assert abs(r.ln_pf - exact) < r.ln_pf_std < 0.4
    assert len(r.info["levels"]) == 7 and r.n_samples < 7 * 2000


def test_subset_simulation_cov_is_honest_over_replicates():
    """20 seeds: the spread of ln pf against the mean reported CoV (Au & Beck's estimate
    takes the levels as uncorrelated; it may under-report somewhat, not by 2x)."""
    exact = sp.log_ndtr(-5.0)
    runs = [rel.subset_simulation(linear10, None, 5.0, m=10, batch=True, n_per_level=1000,
                                  seed=s) for s in range(20)]
    ln = np.array([r.ln_pf for r in runs])
    cov = np.mean([r.ln_pf_std for r in runs])
    spread = np.std(ln, ddof=1)
    assert 0.6 < spread / cov < 1.6
    assert spread < np.mean([r.info["cov_upper"] for r in runs])      # the upper bound holds
    assert abs(np.mean(ln) - exact) < 3 * spread / np.sqrt(20) + 0.5 * cov ** 2


def test_subset_simulation_in_physical_variables():
    """Gumbel load (mean 50, std 10) >= 150: ln pf = ln(1 - F(150)) ~ -13.1."""
    G = rel.Gumbel.from_moments(50.0, 10.0)
    ls = rel.TransformedLimitState(lambda x, d: x[..., 0], G, batch=True)
    exact = np.log(-np.expm1(-np.exp(-(150.0 - G.mu) / G.scale)))
    r = rel.subset_simulation(ls, None, 150.0, n_per_level=2000, seed=1)
    assert abs(r.ln_pf - exact) < 3 * r.ln_pf_std


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(p0=0.3), ValueError, "n_per_level \\* p0 and 1/p0 must be integers"),
    (dict(p0=0.0), ValueError, "p0 must be in \\(0, 0.5\\]"),
    (dict(n_per_level=5), ValueError, "n_per_level must be an integer >= 10"),
    (dict(proposal_width=-1.0), ValueError, "proposal_width must be > 0"),
    (dict(seed=-1), ValueError, "seed must be an integer >= 0"),
    (dict(max_levels=1), rel.ReliabilityError, "did not reach z"),
])
def test_subset_simulation_arguments(kwargs, err, match):
    with pytest.raises(err, match=match):
        rel.subset_simulation(linear10, None, 5.0, m=10, batch=True, **kwargs)


@pytest.mark.parametrize("radius", [3.0, 6.0])
def test_search_never_asks_outside_max_radius(radius):
    # F = 0.05 theta_1 + 0.001 theta_2 from the origin: HL-RF's first step would land at
    # |theta| = z / |grad F| = 80; a limit state defined only on a bounded set (a table of
    # optical constants) must not be asked there: the search stays in the ball (SLSQP in the
    # box |theta_i| <= radius) and reports the failure set unreachable
    asked = []

    def F(theta, p):
        asked.append(float(np.linalg.norm(ad.value(theta), np.inf)))
        return 0.05 * theta[0] + 0.001 * theta[1]
    with pytest.raises(rel.MPPError) as info:
        rel.failure_probability(F, None, 4.0, method="form", m=2, n_starts=1,
                                max_radius=radius)
    assert info.value.reason in ("unreachable", "not_converged")
    assert max(asked) <= radius * (1 + 1e-12)


@pytest.mark.parametrize("solver", ["auto", "slsqp"])
@pytest.mark.parametrize("max_iter", [1, 2, 3])
def test_a_capped_search_is_judged_by_the_kkt_check(solver, max_iter):
    # F = t1 + 0.1 t2^2 >= 3 from (0.5, 2): HL-RF and SLSQP capped at 1-3 iterations stop
    # short of the MPP (3, 0) and say "not converged" (polish=False keeps that verdict);
    # the Newton polish from SLSQP's last point and the KKT check decide otherwise: the
    # MPP to the stated tolerance (residual <= 100 tol), whatever path led there
    F = lambda t, p: t[0] + 0.5 * p * t[1] ** 2  # noqa: E731
    opts = dict(m=2, theta0=np.array([0.5, 2.0]), max_iter=max_iter, n_starts=1,
                solver=solver, tol=1e-10)
    with pytest.raises(rel.MPPError, match="did not converge") as info:
        rel.find_mpp(F, 0.2, 3.0, polish=False, **opts)
    assert info.value.reason == "not_converged"
    r = rel.find_mpp(F, 0.2, 3.0, **opts)
    assert r.converged and r.solver.endswith("+newton") and r.kkt_residual <= 1e-8
    np.testing.assert_allclose(r.theta, [3.0, 0.0], atol=1e-8)
    assert r.beta == pytest.approx(3.0, abs=1e-8)
