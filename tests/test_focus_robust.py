"""Issue 27, fabrication robustness: threshold <-> edge shift, and the worst case of the EM focus."""

import numpy as np
import pytest
import scipy.sparse.linalg as spla

from topopt import ad, fem
from topopt.design import HelmholtzFilter
from topopt.formulations.focus import enhancement
from topopt.formulations.focus_robust import RobustFocus, robust_focus_stages, run_robust_focus
from topopt.robust import ETAS, edge_shift, filtered_step, threshold_for_shift

from topopt_problems import em_focus

R = em_focus.R_FILTER                               # 10 / (2 sqrt 3) = 2.887 nm


@pytest.fixture(scope="module")
def coarse():
    return em_focus.EMFocus(h=8.0)


def test_filtered_step_solves_the_filter_equation():
    """-r^2 x'' + x = H(-s), x and x' continuous at the edge, x -> 1 / 0 far away."""
    r, s, ds = 1.7, np.linspace(-8.0, 8.0, 1601), 1e-3
    x = filtered_step(s, r)
    xpp = (filtered_step(s + ds, r) - 2 * x + filtered_step(s - ds, r)) / ds ** 2
    off = np.abs(s) > 2 * ds                        # the step itself is at s = 0
    assert np.max(np.abs(-r ** 2 * xpp + x - (s < 0))[off]) < 1e-5
    e = 1e-7                                        # one-sided slopes: -1/(2r) on both sides
    right = (filtered_step([e], r) - filtered_step([0.0], r)) / e
    left = (filtered_step([0.0], r) - filtered_step([-e], r)) / e
    assert right[0] == pytest.approx(-1 / (2 * r), rel=1e-6)
    assert left[0] == pytest.approx(-1 / (2 * r), rel=1e-6)
    assert filtered_step([0.0], r)[0] == 0.5
    assert filtered_step([-40 * r, 40 * r], r) == pytest.approx([1.0, 0.0], abs=1e-15)


@pytest.mark.parametrize("eta, shift_over_r", [
    (0.75, -np.log(2)), (0.5, 0.0), (0.25, np.log(2)),       # ETAS: -/+ r ln 2
    (0.9, np.log(0.2)), (0.1, -np.log(0.2)), (0.6, np.log(0.8))])
def test_edge_shift_closed_form(eta, shift_over_r):
    assert edge_shift(eta, R) == pytest.approx(shift_over_r * R, rel=1e-14, abs=1e-15)
    assert threshold_for_shift(shift_over_r * R, R) == pytest.approx(eta, rel=1e-14)
    assert filtered_step([edge_shift(eta, R)], R)[0] == pytest.approx(eta, rel=1e-14)


def test_library_thresholds_are_two_nanometres_on_the_em_cell():
    assert [round(edge_shift(e, R), 4) for e in ETAS] == [-2.0009, 0.0, 2.0009]


def measured_shifts(h, etas):
    """Where the filtered straight edge y = y_e crosses each eta on em_focus's mesh.

    The step (metal below the node row nearest x0's y) is filtered on the annulus
    of `em_focus.cell(h)`; the edge line passes through x0, so it meets both
    circles (natural BCs) at right angles and the 1-D profile holds. Along node
    columns 30 <= |x| <= 80 the nodal field is interpolated linearly (the edge of
    the projected bilinear field, beta -> inf). Returns (etas x columns) shifts.
    """
    mesh, design, _ = em_focus.cell(h)
    sub = mesh.restrict(design)
    flt = HelmholtzFilter(sub, R)
    ys = np.unique(sub.p[1])
    y_e = ys[np.argmin(np.abs(ys - em_focus.X0[1]))]
    step = (fem.element_centroids(sub)[:, 1] < y_e).astype(float)
    rho = spla.spsolve(flt.Kf.tocsc(), flt.T @ step)             # the nodal field
    x, y = sub.p
    out = []
    for eta in etas:
        row = []
        for xc in np.unique(x[(np.abs(x) >= 30) & (np.abs(x) <= 80)]):
            sel = np.isclose(x, xc) & (np.abs(y - y_e) < 40)
            o = np.argsort(y[sel])
            yc, v = y[sel][o], rho[sel][o]
            k = np.flatnonzero((v[:-1] - eta) * (v[1:] - eta) <= 0)[0]
            row.append(yc[k] + (eta - v[k]) * (yc[k + 1] - yc[k]) / (v[k + 1] - v[k]) - y_e)
        out.append(row)
    return np.array(out)


# Largest |measured - edge_shift| / h over the thresholds and columns, as measured
# (tests/test_focus_robust.py::measured_shifts): 0.036 at 1 nm, 0.072 at 2, 0.138 at 4.
@pytest.mark.parametrize("h, tol", [(1.0, 0.05), (2.0, 0.1), (4.0, 0.15)])
def test_edge_shift_on_the_filtered_projected_edge_of_the_mesh(h, tol):
    etas = (0.9, 0.75, 0.6, 0.4, 0.25, 0.1)
    d = measured_shifts(h, etas)
    assert d.shape[1] >= 10
    exact = np.array([edge_shift(e, R) for e in etas])[:, None]
    assert np.max(np.abs(d - exact)) <= tol * h
    assert np.ptp(d, axis=1).max() <= 0.01 * h       # the same on every column: 1-D
    assert np.allclose(d[::-1], -d, atol=0.01 * h)   # eta and 1 - eta: mirror images


def test_robust_focus_thresholds_from_a_shift(coarse):
    robust = RobustFocus(coarse, shift=3.0)
    assert robust.etas[1] == em_focus.ETA
    assert robust.shifts == pytest.approx((-3.0, 0.0, 3.0), abs=1e-12)
    assert RobustFocus(coarse).etas == ETAS


def test_taylor_of_each_realization_and_of_the_epigraph(coarse):
    robust = RobustFocus(coarse)
    rng = np.random.default_rng(1)
    p = rng.uniform(0.2, 0.8, coarse.n)
    g = [float(v) for v in robust.intensities(p, 8.0)]
    assert g[0] > g[1] > g[2] > 0                   # three distinct realizations (seed 1)
    for k in range(3):
        rate = ad.taylor_test(lambda p: robust.intensities(p, 8.0)[k], p,
                              rng.standard_normal(coarse.n))
        assert rate >= 1.9, (k, rate)
    pz = robust.start(p, 8.0)
    assert pz[-1] == -2 * np.sqrt(g[2]) == -enhancement(robust.worst(p, 8.0))
    z, *bounds = (float(v) for v in robust.responses(pz, 8.0))
    assert z == pz[-1] and max(bounds) == 0.0 and min(bounds) < 0   # the worst one active
    w = rng.standard_normal(4)
    rate = ad.taylor_test(lambda pz: sum(wi * v for wi, v in zip(w, robust.responses(pz, 8.0))),
                          pz, rng.standard_normal(pz.size))
    assert rate >= 1.9


def test_modes_of_the_epigraph(coarse):
    robust = RobustFocus(coarse)
    rng = np.random.default_rng(2)
    pz = robust.start(rng.uniform(0.2, 0.8, coarse.n), 8.0)
    ad.check_modes(lambda pz: robust.responses(pz, 8.0), pz, rtol=1e-5)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(shift=1.0, etas=ETAS), ValueError, "not both"),
    (dict(shift=0.0), ValueError, "shift must be > 0"),
    (dict(shift=-1.0), ValueError, "shift must be > 0"),
    (dict(etas=(0.25, 0.5, 0.75)), ValueError, "eroded > intermediate > dilated"),
    (dict(etas=(1.0, 0.5, 0.25)), ValueError, r"etas\[0\] must be in \(0, 1\)"),
    (dict(shift="1"), TypeError, "shift must be a real number"),
])
def test_robust_focus_refuses(coarse, kwargs, error, match):
    with pytest.raises(error, match=match):
        RobustFocus(coarse, **kwargs)


def test_robust_focus_run_refuses(coarse):
    robust = RobustFocus(coarse)
    with pytest.raises(ValueError, match=r"p0 must have shape"):
        robust.start(np.full(3, 0.4), 8.0)
    with pytest.raises(ValueError, match="stages must be given"):
        robust.minimize(np.full(coarse.n, 0.4), [])
    with pytest.raises(ValueError, match="maxeval must be an integer >= 1"):
        robust_focus_stages((8.0,), 0)
    with pytest.raises(ValueError, match="betas must name"):
        robust_focus_stages((), 5)


@pytest.mark.parametrize("call, error, match", [
    (lambda: edge_shift(0.0, R), ValueError, r"eta must be in \(0, 1\)"),
    (lambda: edge_shift(1.0, R), ValueError, r"eta must be in \(0, 1\)"),
    (lambda: edge_shift(0.5, 0.0), ValueError, "r must be > 0"),
    (lambda: edge_shift(np.nan, R), ValueError, "eta must be finite"),
    (lambda: threshold_for_shift(np.inf, R), ValueError, "d must be finite"),
    (lambda: threshold_for_shift(-40 * R, R), ValueError, "d must be within about 36 r"),
    (lambda: threshold_for_shift(1.0, -2.0), ValueError, "r must be > 0"),
    (lambda: filtered_step([np.nan], R), ValueError, "s must be finite"),
])
def test_edge_refusals(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_short_robust_run_raises_the_worst_case(coarse):
    """15 MMA evaluations at beta = 8 from p = 0.4 (h = 8 nm): the worst enhancement
    0.095 -> 1.77 as measured; z stays an upper bound of -min_k E_k (feasible)."""
    robust, res, fig = run_robust_focus(coarse, maxeval=15, betas=(8.0,))
    assert res.evaluations == 15
    e0 = enhancement(robust.worst(coarse.setup.start(coarse.n), 8.0))
    assert e0 == pytest.approx(0.0947, abs=1e-4)
    assert fig["worst_enhancement"] == min(fig["field_enhancement"].values()) > 10 * e0
    assert -res.x[-1] <= fig["worst_enhancement"] + 1e-6
    assert fig["edge_shift_nm"] == pytest.approx([-2.0009, 0.0, 2.0009], abs=1e-4)


@pytest.mark.parametrize("subcell", [False, True])
def test_intermediate_realization_is_the_nominal_chain(coarse, subcell):
    """eta_i = the setup's eta: the intermediate g is FocusProblem.g (points or elements)."""
    prob = em_focus.EMFocus(h=8.0, subcell=True) if subcell else coarse
    p = np.random.default_rng(4).uniform(0.2, 0.8, prob.n)
    g = [float(v) for v in RobustFocus(prob).intensities(p, 8.0)]
    assert g[1] == pytest.approx(float(prob.g(p, 8.0)), rel=1e-12)
    assert len(set(g)) == 3
