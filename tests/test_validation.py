"""Issue 11, item 4: inputs that used to give a silent wrong or meaningless result.

One table of (call, error type, fragment naming the parameter and its range)
over the public API of interpolation, filters, reliability, fem.models and
objectives; a test per item of the issue's defect list; the boundaries of
each accepted range still work; traced values pass through the checks.
"""

import ast
import pathlib
import re
import warnings

import numpy as np
import pytest

from topopt import ad, fem
from topopt import reliability as rel
from topopt._validate import TopoptWarning, check_range
from topopt.design import (DensityFilter, HelmholtzFilter, apply_filter, domain_size,
                           helmholtz_radius)
from topopt.design.interpolation import DENSITY_TOL, project, ramp, simp
from topopt.design.measures import grey_level, variable_grey_level
from topopt.responses.structural import (compliance, compliance_coefficients, output_displacement,
                                         volume)
from topopt.formulations.compliance import ComplianceProblem

MESH = fem.rectangle(4, 2)                      # 8 unit squares, nodes on the integer grid
X = np.linspace(0.0, 1.0, 8)
CALLS = []                                      # evaluations of the limit state below


def linear(theta, p):
    """F = p . theta: FORM is exact, beta = z / |p|."""
    CALLS.append(1)
    return theta @ p


P = np.array([3.0, 4.0])


def model():
    return fem.elasticity(MESH).fix(nodes=lambda x: np.isclose(x[0], 0.0))


def problem(**kw):
    """A compliance problem on MESH: the right end pulled down, the left end fixed."""
    m = model()
    f = m.point_load((4.0, 0.0), (0.0, -1.0))
    return ComplianceProblem(m, f, **(dict(volfrac=0.5, rmin=1.5) | kw))


def sampling(**kw):
    args = dict(method="is", n_samples=100, seed=0, m=2, batch=True) | kw
    return lambda: rel.sampling_estimate(linear, P, 15.0, **args)


def form(**kw):
    return lambda: rel.failure_probability(linear, P, 15.0, **(dict(method="form", m=2) | kw))


BAD = [
    # -------------------------------------------------------- interpolation
    ("simp x < 0", lambda: simp(X - 0.1), ValueError, r"x must lie in \[0, 1\]"),
    ("simp x > 1", lambda: simp(X + 0.1), ValueError, r"x must lie in \[0, 1\]"),
    ("simp x NaN", lambda: simp(np.full(3, np.nan)), ValueError, r"x contains NaN"),
    ("simp penal", lambda: simp(X, penal=0.5), ValueError, r"penal must be >= 1"),
    ("simp penal text", lambda: simp(X, penal="3"), TypeError, r"penal must be a real"),
    ("simp Emin", lambda: simp(X, Emin=-1e-9), ValueError, r"0 <= Emin < E0"),
    ("ramp x < 0", lambda: ramp(X - 0.1), ValueError, r"x must lie in \[0, 1\]"),
    ("ramp x > 1", lambda: ramp(X + 0.5), ValueError, r"x must lie in \[0, 1\]"),
    ("ramp q", lambda: ramp(X, q=-1.0), ValueError, r"q must be >= 0"),
    ("project beta", lambda: project(X, 0.0, 0.5), ValueError, r"beta must be > 0"),
    ("project eta", lambda: project(X, 8.0, 1.5), ValueError, r"eta must be in \[0, 1\]"),
    # -------------------------------------------------------------- filters
    ("rmin 0", lambda: DensityFilter(MESH, 0.0), ValueError, r"rmin must be > 0"),
    ("rmin text", lambda: DensityFilter(MESH, "2"), TypeError, r"rmin must be a real"),
    ("rmin inf", lambda: DensityFilter(MESH, np.inf), ValueError, r"rmin must be finite"),
    ("filter mesh", lambda: DensityFilter(MESH.p, 1.5), TypeError, r"mesh must be"),
    ("r negative", lambda: HelmholtzFilter(MESH, -0.1), ValueError, r"r must be > 0"),
    ("helmholtz_radius", lambda: helmholtz_radius(-1.0), ValueError, r"rmin must be > 0"),
    ("filter x shape", lambda: DensityFilter(MESH, 1.5)(np.ones(7)), ValueError,
     r"x has shape \(7,\)"),
    ("filter x inf", lambda: DensityFilter(MESH, 1.5)(np.r_[np.ones(7), np.inf]), ValueError,
     r"x contains NaN or inf \(at element \[7\]"),
    ("apply_filter flt", lambda: apply_filter(np.eye(8), X), TypeError,
     r"flt must be a LinearFilter"),
    # ------------------------------------------------------------- fem.mesh
    ("nelx 0", lambda: fem.rectangle(0, 2), ValueError, r"nelx must be an integer >= 1"),
    ("nely float", lambda: fem.rectangle(2, 2.5), TypeError, r"nely must be an integer"),
    ("nelz bool", lambda: fem.box(2, 2, True), TypeError, r"nelz must be an integer"),
    ("h 0", lambda: fem.rectangle(2, 2, h=0.0), ValueError, r"h must be > 0 \(element size\)"),
    ("h inf", lambda: fem.box(2, 2, 2, h=np.inf), ValueError, r"h must be finite"),
    ("centroids of points", lambda: fem.element_centroids(MESH.p), TypeError,
     r"mesh must be a scikit-fem Mesh, got ndarray"),
    # ------------------------------------------------------ ComplianceProblem
    ("volfrac 1", lambda: problem(volfrac=1.0), ValueError, r"volfrac must be in \(0, 1\)"),
    ("volfrac text", lambda: problem(volfrac="0.5"), TypeError, r"volfrac must be a real"),
    ("problem rmin", lambda: problem(rmin=np.nan), ValueError, r"rmin must be finite"),
    ("problem penal", lambda: problem(penal=0.9), ValueError, r"penal must be >= 1"),
    ("problem filter", lambda: problem(filter="gauss"), ValueError,
     r"filter must be one of \('density', 'helmholtz'\)"),
    ("problem Emin", lambda: problem(Emin=1.0), ValueError, r"Emin must be in \[0, 1\)"),
    ("problem eta", lambda: problem(eta=1.5), ValueError, r"eta must be in \[0, 1\]"),
    # ----------------------------------------------------------- fem.models
    ("nu 0.5", lambda: fem.elasticity(MESH, nu=0.5), ValueError, r"nu must be in \(-1, 0.5\)"),
    ("nu -1", lambda: fem.elasticity(MESH, nu=-1.0), ValueError, r"nu must be in \(-1, 0.5\)"),
    ("nu text", lambda: fem.elasticity(MESH, nu="0.3"), TypeError, r"nu must be a real"),
    ("E0", lambda: fem.elasticity(MESH, E0=0.0), ValueError, r"E0 must be > 0"),
    ("plane", lambda: fem.elasticity(MESH, plane="strian"), ValueError,
     r"plane must be one of \('stress', 'strain'\)"),
    ("model mesh", lambda: fem.elasticity(MESH.p), TypeError, r"mesh must be a scikit-fem"),
    ("k0", lambda: fem.heat(MESH, k0=-1.0), ValueError, r"k0 must be > 0"),
    ("point far", lambda: model().point_load((40.0, 0.0), (0.0, -1.0)), ValueError,
     r"point \(40, 0\) is 36 from the nearest mesh node, \(4, 0\); a point must lie "
     r"within half an element \(0.5\)"),
    ("point between nodes", lambda: model().point_load((3.4, 0.6), (0.0, -1.0)), ValueError,
     r"is 0.565685 from the nearest mesh node"),
    ("point dim", lambda: model().point_load((4.0, 0.0, 0.0), (0.0, -1.0)), ValueError,
     r"point has shape \(3,\); expected \(2,\)"),
    ("point NaN", lambda: model().point_load((np.nan, 0.0), (0.0, -1.0)), ValueError,
     r"point must be finite"),
    ("point text", lambda: model().point_load("corner", (0.0, -1.0)), TypeError,
     r"point must be a sequence"),
    ("fix at far point", lambda: model().fix(nodes=(-3.0, 0.0)), ValueError,
     r"point \(-3, 0\) is 3 from the nearest mesh node"),
    ("load NaN", lambda: model().point_load((4.0, 0.0), (0.0, np.nan)), ValueError,
     r"value must be finite"),
    ("load size", lambda: model().point_load((4.0, 0.0), (1.0,)), ValueError,
     r"a load value needs 2 component"),
    ("predicate", lambda: model().fix(nodes=lambda x: x[0]), TypeError,
     r"node predicate must return a boolean array of shape \(15,\)"),
    ("component", lambda: model().fix(nodes=lambda x: x[0] == 4, components=2), ValueError,
     r"components must lie in \[0, 2\)"),
    ("component float", lambda: model().fix(nodes=lambda x: x[0] == 4, components=0.5),
     TypeError, r"components must be integers"),
    ("facets", lambda: model().traction((4.0, 1.0), (0.0, -1.0)), TypeError,
     r"facets must be callable"),
    ("dofs facets", lambda: model().dofs(facets=[1, 2]), TypeError, r"facets must be callable"),
    ("E negative", lambda: model().solve(-np.ones(8), np.ones(30)), ValueError,
     r"E must lie in \[0, inf\)"),
    ("solver_options", lambda: model().system(solver_options=["tol"]), TypeError,
     r"solver_options must be a dict"),
    # ----------------------------------------------------------- objectives
    ("compliance shapes", lambda: compliance(np.ones(3), np.ones((3, 1))), ValueError,
     r"u has shape \(3,\) but f has shape \(3, 1\)"),
    ("output shapes", lambda: output_displacement(np.ones(3), np.ones(4)), ValueError,
     r"u has shape \(3,\) but l_out has shape \(4,\)"),
    ("weights shape", lambda: volume(X, np.ones(7)), ValueError, r"weights has shape"),
    ("weights < 0", lambda: volume(X, -np.ones(8)), ValueError, r"weights must lie in \[0, inf\)"),
    ("weights zero", lambda: volume(X, np.zeros(8)), ValueError, r"finite positive sum"),
    ("coefficients G", lambda: compliance_coefficients(None, np.ones(8), np.ones(30),
                                                       np.ones(30)), ValueError,
     r"G shape \(ndof, m\)"),
    # ---------------------------------------------------------- reliability
    ("penalty ln_pa NaN", lambda: rel.failure_penalty(-1.0, np.nan), ValueError,
     r"ln_pa contains NaN"),
    ("penalty ln_pa > 0", lambda: rel.failure_penalty(-1.0, 0.5), ValueError,
     r"ln_pa must lie in \(-inf, 0\]"),
    ("penalty ln_pa -inf", lambda: rel.failure_penalty(-1.0, -np.inf), ValueError,
     r"ln_pa must be finite"),
    ("penalty K < 0", lambda: rel.failure_penalty(-1.0, -5.0, -2.0), ValueError,
     r"K must lie in \[0, inf\)"),
    ("penalty K inf", lambda: rel.failure_penalty(-1.0, -5.0, np.inf), ValueError,
     r"K must be finite"),
    ("penalty ln_pf NaN", lambda: rel.failure_penalty(np.nan, -5.0), ValueError,
     r"ln_pf contains NaN"),
    ("penalty ln_pf inf", lambda: rel.failure_penalty(np.inf, -5.0), ValueError,
     r"ln_pf must be < inf"),
    ("n_samples 0", sampling(n_samples=0), ValueError, r"n_samples must be an integer >= 1"),
    ("n_samples float", sampling(n_samples=1e4), TypeError, r"n_samples must be an integer"),
    ("seed < 0", sampling(seed=-1), ValueError, r"seed must be an integer >= 0"),
    ("seed float", sampling(seed=0.5), TypeError, r"seed must be an integer"),
    ("center length", sampling(center=np.zeros(5)), ValueError,
     r"center has 5 coordinates per centre but m gives m = 2"),
    ("center 3-D", sampling(center=np.zeros((1, 2, 2))), ValueError,
     r"center must have shape \(m,\) or \(k, m\)"),
    ("center NaN", sampling(center=np.array([np.nan, 0.0])), ValueError,
     r"center must be finite"),
    ("center for mc", sampling(method="mc", center=np.zeros(2)), TypeError,
     r"center is only used by method='is'"),
    ("smoothing < 0", sampling(smoothing=-0.1), ValueError, r"smoothing must be >= 0"),
    ("chunk 0", sampling(chunk=0), ValueError, r"chunk must be an integer >= 1"),
    ("on_failure", sampling(on_failure="ignore"), ValueError,
     r"on_failure must be one of \('raise', 'bound'\)"),
    ("sampling method", sampling(method="sorm"), ValueError, r"unknown method 'sorm'"),
    ("sampling typo", sampling(n_sample=10), TypeError, r"unknown MPP options \['n_sample'\]"),
    ("mc MPP option", sampling(method="mc", tol=1e-3), TypeError,
     r"\['tol'\] do not apply to method='mc'"),
    ("mc theta0 length", sampling(method="mc", theta0=np.zeros(3)), ValueError,
     r"theta0 has shape \(3,\); expected \(2,\)"),
    ("sampling z NaN", lambda: rel.sampling_estimate(linear, P, np.nan, "mc", m=2), ValueError,
     r"z must be finite"),
    ("method", form(method="sorn"), ValueError, r"unknown method 'sorn'"),
    ("sampling option", form(n_samples=10), TypeError,
     r"\['n_samples'\] only apply to the sampling methods"),
    ("tol", form(tol=-1.0), ValueError, r"tol must be > 0"),
    ("max_iter", form(max_iter=0), ValueError, r"max_iter must be an integer >= 1"),
    ("solver", form(solver="newton"), ValueError, r"unknown solver 'newton'"),
    ("polish", form(polish="yes"), TypeError, r"polish must be True or False"),
    ("max_radius", form(max_radius=0.0), ValueError, r"max_radius must be > 0"),
    ("theta0 length", form(theta0=np.zeros(3)), ValueError,
     r"theta0 has shape \(3,\); expected \(2,\)"),
    ("theta0 NaN", form(theta0=np.array([np.nan, 0.0])), ValueError, r"theta0 must be finite"),
    ("m 0", form(m=0), ValueError, r"m must be an integer >= 1"),
    ("m float", form(m=2.0), TypeError, r"m must be an integer"),
    ("batch", form(batch="no"), TypeError, r"batch must be True or False"),
    ("callback", form(callback=1), TypeError, r"callback must be callable"),
    ("z text", lambda: rel.find_mpp(linear, P, "15", m=2), TypeError, r"z must be a real"),
    ("ln_pf z NaN", lambda: rel.ln_pf(linear, P, np.nan, "form", m=2), ValueError,
     r"z must be finite"),
    ("ln_pf option", lambda: rel.ln_pf(linear, P, 15.0, "form", m=2, smoothing=0.1),
     TypeError, r"\['smoothing'\] only apply to the sampling methods"),
    ("FailureProbability method", lambda: rel.FailureProbability(linear, 15.0, "formm", m=2),
     ValueError, r"unknown method 'formm'"),
    ("FailureProbability typo", lambda: rel.FailureProbability(linear, 15.0, "form", tolerance=1),
     TypeError, r"unknown MPP options \['tolerance'\]"),
    ("FailureProbability option", lambda: rel.FailureProbability(linear, 15.0, "sorm",
                                                                n_samples=10),
     TypeError, r"only apply to the sampling methods"),
    ("FailureProbability z", lambda: rel.FailureProbability(linear, np.inf, "form", m=2),
     ValueError, r"z must be finite"),
    ("LimitState fun", lambda: rel.LimitState(3.0), TypeError, r"fun must be callable"),
    ("LimitState m", lambda: rel.LimitState(linear, m=-2), ValueError,
     r"m must be an integer >= 1"),
    ("quadratic shapes", lambda: rel.failure_probability(
        rel.QuadraticLimitState(0.0, np.ones(2), np.eye(3)), None, 3.0, "form"), ValueError,
     r"b of shape \(m,\) and A of shape \(m, m\)"),
    ("quadratic b without A", lambda: rel.QuadraticLimitState(0.0, np.ones(2)), TypeError,
     r"needs both b and A"),
    ("centroids mesh", lambda: fem.element_centroids(MESH.p), TypeError,
     r"mesh must be a scikit-fem Mesh"),
    ("quadratic m", lambda: rel.failure_probability(
        rel.QuadraticLimitState(0.0, np.ones(2), np.eye(2)), None, 3.0, "form", m=3), ValueError,
     r"m=3 contradicts the coefficients: b has 2 entries"),
    ("batch contradicts", lambda: rel.failure_probability(rel.LimitState(linear, m=2), P, 15.0,
                                                          "form", batch=True), ValueError,
     r"batch=True contradicts the limit state's batch=False"),
    ("m contradicts", lambda: rel.failure_probability(rel.LimitState(linear, m=2), P, 15.0,
                                                      "form", m=3), ValueError,
     r"m=3 contradicts the limit state's m=2"),
    ("crn h", lambda: rel.crn_directional_derivative(lambda p, s: 0.0, P, P, h=0.0),
     ValueError, r"h must be > 0"),
    ("crn direction", lambda: rel.crn_directional_derivative(lambda p, s: 0.0, P, np.ones(3)),
     ValueError, r"direction has shape \(3,\); expected \(2,\)"),
]


@pytest.mark.parametrize("call, exc, match", [row[1:] for row in BAD],
                         ids=[row[0] for row in BAD])
def test_bad_input_names_the_parameter(call, exc, match):
    CALLS.clear()
    with pytest.raises(exc, match=match):
        call()
    assert not CALLS, "the limit state was evaluated before the input was rejected"


# ------------------------------------------------- the defect list

def test_simp_of_a_density_outside_unit_interval_raises():
    """Was: simp(-0.5) = Emin - 0.125 (E0 - Emin), a negative stiffness."""
    with pytest.raises(ValueError, match=r"got -0.5 at flat index 1"):
        simp(np.array([0.2, -0.5, 0.7]))
    with pytest.raises(ValueError, match=r"got 1.5 at flat index 0"):
        simp(np.array([1.5, 0.5]), penal=3.5)          # was 1.5**3.5 = 4.13 E0


def test_point_load_far_outside_the_mesh_raises():
    """Was: the load snapped to the nearest node, (4, 0), 36 units away."""
    with pytest.raises(ValueError, match=r"is 36 from the nearest mesh node"):
        model().point_load((40.0, 0.0), (0.0, -1.0))


@pytest.mark.parametrize("ln_pa, K, match", [
    (np.nan, 1.0, r"ln_pa contains NaN"),             # was NaN
    (0.5, 1.0, r"ln_pa must lie in \(-inf, 0\]"),     # pa = 1.65 > 1
    (-5.0, -1.0, r"K must lie in \[0, inf\)"),        # was a reward for failing
])
def test_failure_penalty_bad_arguments_raise(ln_pa, K, match):
    with pytest.raises(ValueError, match=match):
        rel.failure_penalty(-1.0, ln_pa, K)
    with pytest.raises(ValueError, match=match):       # also when traced
        ad.gradient(lambda l: rel.failure_penalty(l, ln_pa, K), -1.0)
    with pytest.raises(ValueError, match=match):
        ad.jvp(lambda l: rel.failure_penalty(l, ln_pa, K), (-1.0,), (1.0,))


def test_sampling_with_no_samples_raises():
    """Was: pf = 0 (ln pf = -inf) from no samples at all."""
    with pytest.raises(ValueError, match=r"n_samples must be an integer >= 1, got 0"):
        rel.sampling_estimate(linear, P, 15.0, "mc", n_samples=0, m=2, batch=True)


def test_center_of_the_wrong_length_raises():
    """Was: a 5-D problem silently sampled for m = 3 (theta @ p then failed or broadcast)."""
    F = lambda t, p: t[..., 0] * p                     # noqa: E731
    with pytest.raises(ValueError, match=r"center has 5 coordinates per centre but m gives "
                                         r"m = 3"):
        rel.sampling_estimate(F, 1.0, 3.0, "is", center=np.ones(5), m=3, batch=True)


def test_negative_smoothing_raises():
    with pytest.raises(ValueError, match=r"smoothing must be >= 0.*got -0.1"):
        rel.sampling_estimate(linear, P, 15.0, "mc", smoothing=-0.1, m=2, batch=True)


@pytest.mark.parametrize("make, label", [
    (lambda mesh, r: DensityFilter(mesh, r), r"rmin = 9"),
    (lambda mesh, r: HelmholtzFilter.from_rmin(mesh, r), r"2 sqrt\(3\) r \(r = 2.59808\) = 9"),
])
def test_filter_radius_larger_than_the_domain_warns(make, label):
    """Was: a uniform grey design without a word. The radius and the domain size are named."""
    with pytest.warns(TopoptWarning, match=label + r" is larger than the domain "
                                                   r"\(largest side of the mesh's bounding "
                                                   r"box: 4\)") as caught:
        make(MESH, 9.0)
    assert caught[0].filename == __file__              # attributed to the caller
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make(MESH, 4.0)                                # equal to the domain: no warning


# -------------------------------------------------------- the boundaries

def test_simp_and_ramp_at_the_ends_of_the_unit_interval():
    np.testing.assert_array_equal(simp(np.array([0.0, 1.0]), 3.0, 1e-3, 2.0), [1e-3, 2.0])
    np.testing.assert_array_equal(ramp(np.array([0.0, 1.0]), 8.0, 1e-3, 2.0), [1e-3, 2.0])


@pytest.mark.parametrize("fun, params", [(simp, (3.5, 1e-9)), (ramp, (8.0, 0.0))])
def test_densities_within_rounding_of_the_ends(fun, params):
    """Filters round 1 to 1 + 2e-16 and 0 to -1e-17: accepted; no NaN for x**3.5."""
    x = np.array([-DENSITY_TOL, -1e-17, 1.0 + 2.2e-16, 1.0 + DENSITY_TOL])
    y = fun(x, *params)
    assert np.all(np.isfinite(y))
    assert y[0] == y[1] == fun(np.zeros(1), *params)[0]   # negatives count as 0
    with pytest.raises(ValueError, match=r"x must lie in \[0, 1\] up to 1e-09"):
        fun(np.array([-2 * DENSITY_TOL]), *params)
    with pytest.raises(ValueError, match=r"x must lie in \[0, 1\] up to 1e-09"):
        fun(np.array([1.0 + 2 * DENSITY_TOL]), *params)


def test_derivatives_just_above_one_are_the_formula():
    """An entry at 1 + 2e-16 (filter rounding) keeps simp' and simp'' (not clipped to 0)."""
    x = np.array([1.0 + 2.2e-16, 0.5])
    g = ad.gradient(lambda x: np.sum(simp(x, 3.0, 0.0)), x)
    np.testing.assert_allclose(g, 3.0 * x ** 2, rtol=1e-14)            # 3 x^2
    h = ad.hvp(lambda x: np.sum(simp(x, 3.0, 0.0)), x, np.ones(2))
    np.testing.assert_allclose(h, 6.0 * x, rtol=1e-14)                 # 6 x


def test_traced_values_pass_through_the_checks():
    """A traced design, ln_pa and K are looked at (ad.value), never converted."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 8)
    flt = DensityFilter(MESH, 1.5)
    g = ad.gradient(lambda x: np.sum(simp(flt(x))), x)
    assert g.shape == (8,) and np.all(np.isfinite(g))
    ln_pf, ln_pa, K = -2.0, -5.0, 2.0
    grads = ad.gradient(rel.failure_penalty, ln_pf, ln_pa, K, argnums=(0, 1, 2))
    # d/d(ln_pf, ln_pa, K) of K (ln_pf - ln_pa)^2 at d = 3: (2 K d, -2 K d, d^2)
    np.testing.assert_allclose(grads, [12.0, -12.0, 9.0])


def test_point_within_half_an_element_snaps():
    m = model()
    for point, node in (((4.0, 0.0), (4.0, 0.0)), ((3.7, 0.3), (4.0, 0.0)),
                        ((2.2, 1.1), (2.0, 1.0))):
        f = m.point_load(point, (0.0, -1.0))
        assert np.count_nonzero(f) == 1
        assert m.mesh.p[:, m.nearest_node(point)].tolist() == list(node)
    with pytest.raises(ValueError, match=r"is 0.640312 from the nearest mesh node"):
        m.nearest_node((3.4, 0.5))


def test_good_boundary_values_are_accepted():
    assert fem.elasticity(MESH, nu=0.4999).Ke.shape == (8, 8, 8)
    assert fem.elasticity(MESH, nu=-0.9999).Ke.shape == (8, 8, 8)
    assert float(rel.failure_penalty(0.5, 0.0)) == 0.25            # pa = 1
    assert float(rel.failure_penalty(-1.0, -5.0, 0.0)) == 0.0      # K = 0
    assert float(rel.failure_penalty(-np.inf, -5.0)) == 0.0        # pf = 0
    r = rel.sampling_estimate(linear, P, 15.0, "mc", n_samples=1, seed=0, m=2, batch=True)
    assert r.n_samples == 1 and r.pf in (0.0, 1.0)
    r = rel.sampling_estimate(linear, P, 15.0, "is", n_samples=2000, seed=3, m=2, batch=True,
                              smoothing=0.0, center=np.array([1.8, 2.4]))
    assert r.ln_pf == pytest.approx(-6.6077, abs=4 * r.ln_pf_std)  # ln Phi(-3)
    assert volume(X, np.r_[np.zeros(7), 1.0]) == 1.0               # zero weights allowed
    assert domain_size(MESH) == 4.0


def test_check_range_open_and_closed_ends():
    assert check_range("eta", 0.0, 0.0, 1.0) == 0.0
    assert check_range("eta", 1.0, 0.0, 1.0) == 1.0
    with pytest.raises(ValueError, match=r"volfrac must be in \(0, 1\)"):
        check_range("volfrac", 1.0, 0.0, 1.0, lo_open=True, hi_open=True)
    with pytest.raises(TypeError, match=r"flag must be a real number"):
        check_range("flag", True, 0, 1)


@pytest.mark.parametrize("fun, args", [
    (rel.failure_penalty, (np.array([-3.0, -7.0, -4.5]), np.array([-5.0, -6.0, -6.5]),
                           np.array([1.0, 2.0, 0.5]))),
    (lambda x: simp(DensityFilter(MESH, 1.5)(x), 3.5, 1e-3),
     (np.random.default_rng(1).uniform(0.1, 0.9, 8),)),
    (lambda x: ramp(HelmholtzFilter(MESH, 0.3)(x), 4.0), (np.linspace(0.2, 0.8, 8),)),
])
def test_checked_functions_differentiate_in_every_mode(fun, args):
    """The checks see traced values in reverse, forward, hvp and nested modes alike."""
    report = ad.check_modes(fun, *args)
    assert max(report.values()) < 1e-6


# ------------------------------------------- one home for validation and the grey level

#: Names of the local validators issue 12 folded into topopt/_validate.py.
LOCAL_VALIDATOR = re.compile(r"_(check_(int|float|real|count|size|positive|open_unit|scalar)"
                             r"|positive|scalar|real|nonneg\w*)$")
TOPOPT = pathlib.Path(__file__).resolve().parents[1] / "topopt"


def test_no_local_copies_of_the_shared_validators():
    """A private ``_check_int``/``_positive``/``_scalar``-style validator is in _validate only."""
    found = [f"{path.relative_to(TOPOPT)}:{node.lineno} {node.name}"
             for path in sorted(TOPOPT.rglob("*.py")) if path.name != "_validate.py"
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
             and LOCAL_VALIDATOR.match(node.name)]
    assert not found


#: ``4 t (1 - t)`` written out (``4 * x * (1 - x)``, ``4.0 * t * (1.0 - t)``).
GREY_FORMULA = re.compile(r"4(\.0)?\s*\*\s*(\w+)\s*\*\s*\(\s*1(\.0)?\s*-\s*\2\s*\)")


def test_the_grey_level_is_computed_in_one_module():
    sources = sorted(TOPOPT.rglob("*.py")) + sorted((TOPOPT.parent / "problems").rglob("*.py"))
    found = [str(path.relative_to(TOPOPT.parent)) for path in sources
             if path.name != "measures.py" and GREY_FORMULA.search(path.read_text())]
    assert not found
    assert GREY_FORMULA.search("4.0 * t * (1.0 - t)") and GREY_FORMULA.search("4 * x * (1 - x)")


@pytest.mark.parametrize("x_phys, expected", [
    ([0.0, 1.0, 1.0, 0.0], 0.0),                 # black and white
    ([0.5, 0.5], 1.0),                           # all grey: 4 (1/2)(1/2)
    ([0.0, 1.0, 0.5, 0.5], 0.5),                 # half grey
    ([0.25], 0.75),                              # 4 (1/4)(3/4)
    ([[0.1, 0.9], [0.9, 0.1]], 0.36),            # 4 (0.1)(0.9), any shape
])
def test_grey_level_of_physical_densities(x_phys, expected):
    assert grey_level(x_phys) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize("x, lower, upper, expected", [
    ([0.5, 0.5], [0.0, 0.0], [1.0, 1.0], 1.0),
    ([2.0, 1.0, 3.0], [1.0] * 3, [3.0] * 3, 1.0 / 3.0),      # t = 1/2, 0, 1
    ([1.5, 7.0], [1.0, 0.0], [3.0, np.inf], 0.75),           # t = 1/4; x[1] unbounded
    ([0.3, 0.3], [0.3, 0.0], [0.3, 1.0], 0.84),              # lower == upper left out
    ([5.0], [-np.inf], [np.inf], None),                      # nothing bounded
])
def test_grey_level_of_optimization_variables(x, lower, upper, expected):
    got = variable_grey_level(*(np.array(v, dtype=float) for v in (x, lower, upper)))
    assert got == (None if expected is None else pytest.approx(expected, rel=1e-14))


def test_variable_and_physical_grey_levels_differ_after_a_filter():
    """A 0/1 variable field is white/black for the optimizer; its filtered field is grey."""
    x = np.r_[np.zeros(4), np.ones(4)]
    x_phys = DensityFilter(MESH, 1.5)(x)
    assert variable_grey_level(x, np.zeros(8), np.ones(8)) == 0.0
    assert grey_level(x_phys) == pytest.approx(np.mean(4 * x_phys * (1 - x_phys)), rel=1e-15)
    assert grey_level(x_phys) > 0.1


@pytest.mark.parametrize("x_phys, exc, match", [
    ([], ValueError, r"x_phys is empty"),
    ([0.5, np.nan], ValueError, r"x_phys contains NaN"),
    (["a"], TypeError, r"x_phys must be a real array"),
    ([True, False], TypeError, r"x_phys must be a real array"),
])
def test_grey_level_bad_input_raises(x_phys, exc, match):
    with pytest.raises(exc, match=match):
        grey_level(x_phys)


def test_minimize_history_reports_the_variable_grey_level():
    """The ``grey`` column of the optimizer's history is `variable_grey_level` of each design."""
    from topopt.optimize.driver import minimize
    designs = []

    def fun(x):
        designs.append(np.array(ad.value(x)))
        return np.sum((x - 0.3) ** 2)

    lower, upper = np.array([0.0, 0.0, -np.inf]), np.array([1.0, 2.0, np.inf])
    res = minimize(fun, np.array([0.9, 0.5, 4.0]), bounds=(lower, upper), maxeval=4,
                   verbose=False)
    assert len(res.history) == len(designs) >= 2
    for rec, x in zip(res.history, designs):
        assert rec["grey"] == variable_grey_level(x, lower, upper)
