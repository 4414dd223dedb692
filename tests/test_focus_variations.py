"""Focusing under edge shifts and wavelengths: the traced wavenumber, the shifted projection,
the cubic Johnson & Christy silver, the worst case and the failure probability.

A 40 nm periodic cell with a silver ring around the focus (the example of
`topopt.formulations.FocusBand`) keeps every solve at a few milliseconds.
"""

import numpy as np
import pytest
import skfem

from topopt import ad, fem
from topopt.ad.testing import check_modes, taylor_test
from topopt.design import project
from topopt.design.materials import JOHNSON_CHRISTY_AG, silver_index_jc
from topopt.formulations import (FocusProblem, FocusReliability, FocusSetup, FocusVariations,
                                 ReliableFocus, WorstFocus, enhancement)
from topopt.formulations.focus_reliable import disk_chords
from topopt.robust import shifted_projection, threshold_for_shift

LAMBDA0 = 532.0


def cell(h, isolated=False):
    mesh = skfem.MeshQuad.init_tensor(np.arange(0.0, 41.0, h), np.arange(-100.0, 301.0, h))
    r = np.linalg.norm(fem.element_centroids(mesh) - [20.0, 100.0], axis=1)
    return mesh, np.flatnonzero((r > 6) & (r < 16)), np.flatnonzero(r < 6)


def wave_model(mesh, design, center, quadrature, isolated, solver, wavelength=LAMBDA0):
    model = fem.WaveModel(mesh, 2 * np.pi / wavelength, pml=(0.0, 200.0, 100.0),
                          design=design)
    return model, model.line_source(150.0), model.focus_matrix(center, [20.0, 100.0])


SILVER = complex(silver_index_jc(LAMBDA0, kind="cubic"))
SETUP = FocusSetup(cell, wave_model, 3.0, 0.5, SILVER, 1.0, (8.0,), 0.4, "ring", {}, {})


@pytest.fixture(scope="module")
def ring():
    prob = FocusProblem(SETUP, h=4.0)
    p = np.random.default_rng(3).uniform(0.2, 0.9, prob.n)
    return prob, FocusVariations(prob), p


# ------------------------------------------------------------ the wavenumber as an input

def test_wavenumber_system_is_the_model(ring):
    prob, _, p = ring
    a = 1.0 / (1.0 + p * (SILVER - 1.0)) ** 2 - 1.0
    u0, u1 = prob.model.solve(a, prob.b), prob.model.solve(a, prob.b, k=prob.model.k)
    assert np.abs(u1 - u0).max() <= 1e-11 * np.abs(u0).max()


def test_wavenumber_derivatives_every_mode(ring):
    prob, _, p = ring
    a = 1.0 / (1.0 + p * (SILVER - 1.0)) ** 2 - 1.0
    g = lambda k: np.real(np.vdot(u := prob.model.solve(a, prob.b, k=k), prob.O @ u))  # noqa
    errors = check_modes(g, prob.model.k)
    assert max(errors.values()) < 1e-6, errors


@pytest.mark.parametrize("k, match", [(-1.0, "k must be one positive"), (np.inf, "k must"),
                                      (np.array([0.1, 0.2]), "k must be one")])
def test_bad_wavenumber(ring, k, match):
    prob = ring[0]
    with pytest.raises(ValueError, match=match):
        prob.model.solve(np.zeros(prob.n), prob.b, k=k)


def test_side_pml_refuses_a_wavenumber():
    mesh = fem.rectangle(4, 40, h=5.0).translated((0.0, -50.0))
    model = fem.WaveModel(mesh, 0.02, pml=(0.0, 100.0, 50.0), design=np.array([], int),
                          pml_x=(2.0, 18.0))
    with pytest.raises(ValueError, match="pml_x=None"):
        model.solve(np.zeros(0), model.line_source(50.0), k=0.02)


# ------------------------------------------------------------ edges and silver

@pytest.mark.parametrize("d", [-2.0, -0.5, 0.7, 2.5])
def test_shifted_projection(d):
    x = np.random.default_rng(1).uniform(0, 1, 7)
    np.testing.assert_allclose(shifted_projection(x, 16.0, d, 2.887),
                               project(x, 16.0, threshold_for_shift(d, 2.887)), rtol=1e-14)
    # eta(d) traced: derivative -exp(-|d|/r) / (2 r)
    np.testing.assert_allclose(ad.gradient(lambda s: threshold_for_shift(s, 2.887), d),
                               -np.exp(-abs(d) / 2.887) / (2 * 2.887), rtol=1e-13)
    errors = check_modes(lambda x, d: np.sum(shifted_projection(x, 16.0, d, 2.887) ** 2), x, d)
    assert max(errors.values()) < 1e-6, errors


def test_cubic_silver():
    table = JOHNSON_CHRISTY_AG
    np.testing.assert_allclose(silver_index_jc(table[:, 0], kind="cubic"),
                               table[:, 1] + 1j * table[:, 2], rtol=1e-12)
    # the tutorial's silver (0.054 + 3.429i, Christiansen et al. 2019): eps within 1 %
    eps, eps_t = silver_index_jc(532.0, "cubic") ** 2, (0.054 + 3.429j) ** 2
    assert abs(eps - eps_t) / abs(eps_t) < 0.01
    errors = check_modes(lambda lam: np.abs(silver_index_jc(lam, "cubic") ** 2), 530.0)
    assert max(errors.values()) < 1e-7, errors
    with pytest.raises(ValueError, match="kind must be"):
        silver_index_jc(532.0, kind="spline")
    with pytest.raises(TypeError, match="kind='cubic'"):
        ad.gradient(lambda lam: np.abs(silver_index_jc(lam)), 532.0)


# ------------------------------------------------------------ the chain at (d, lambda)

def test_nominal_point_is_the_focus_problem(ring):
    prob, var, p = ring
    assert var.wavelength == pytest.approx(LAMBDA0, rel=1e-14)
    np.testing.assert_allclose(float(var.g(p, 0.0, None, 8.0)), float(prob.g(p, 8.0)),
                               rtol=1e-10)
    np.testing.assert_allclose(float(var.g(p, 0.0, None, None)), float(prob.g(p)), rtol=1e-10)


def test_derivatives_in_shift_and_wavelength(ring):
    _, var, p = ring
    errors = check_modes(lambda d, lam: var.enhancement(p, d, lam, 8.0), 0.4, 540.0)
    assert max(errors.values()) < 1e-5, errors
    rng = np.random.default_rng(5)
    rate = taylor_test(lambda p: var.enhancement(p, 0.4, 540.0, 8.0), p,
                       rng.standard_normal(p.size))
    assert rate >= 1.9


def test_grid_and_worst_case(ring):
    _, var, p = ring
    G = var.grid(p, [-1.0, 0.0, 1.0], [520.0, 532.0], beta=8.0)
    assert G.shape == (3, 2)
    assert G[1, 1] == pytest.approx(float(var.enhancement(p, 0.0, 532.0, 8.0)), rel=1e-12)
    worst = WorstFocus(var, (-1.0, 1.0), (520.0, 545.0))
    pz = worst.start(p, 8.0)
    assert pz[-1] == pytest.approx(-min(float(e) for e in worst.enhancements(p, 8.0)))
    w = np.random.default_rng(2).standard_normal(5)
    rate = taylor_test(lambda pz: sum(wi * r for wi, r in zip(w, worst.responses(pz, 8.0))),
                       pz, np.random.default_rng(4).standard_normal(pz.size))
    assert rate >= 1.9
    with pytest.raises(ValueError, match="shifts and wavelengths"):
        WorstFocus(var, (), (532.0,))
    with pytest.raises(ValueError, match=r"wavelengths\[0\]"):
        WorstFocus(var, (0.0,), (-5.0,))


def test_worst_case_on_pairs(ring):
    _, var, p = ring
    pairs = [(-1.0, 520.0), (0.5, 532.0), (1.0, 545.0)]
    worst = WorstFocus.on_pairs(var, pairs)
    assert worst.pairs == pairs
    E = [float(var.enhancement(p, d, lam, 8.0)) for d, lam in pairs]
    np.testing.assert_allclose([float(e) for e in worst.enhancements(p, 8.0)], E, rtol=1e-12)
    assert worst.start(p, 8.0)[-1] == pytest.approx(-min(E))
    with pytest.raises(ValueError, match="pairs"):
        WorstFocus.on_pairs(var, [])
    with pytest.raises(ValueError, match="pairs"):
        WorstFocus.on_pairs(var, [(0.0, 532.0, 1.0)])
    with pytest.raises(ValueError, match=r"wavelengths\[0\]"):
        WorstFocus.on_pairs(var, [(0.0, -532.0)])


def test_variations_need_a_periodic_element_design():
    with pytest.raises(ValueError, match="subcell=False"):
        FocusVariations(FocusProblem(SETUP, h=4.0, subcell=True))
    with pytest.raises(TypeError, match="FocusProblem"):
        FocusVariations(object())


# ------------------------------------------------------------ the failure probability

@pytest.fixture(scope="module")
def reliability(ring):
    prob, var, p = ring
    E0 = float(var.enhancement(p, 0.0, None, 8.0))
    return FocusReliability(var, 0.8 * E0, sigma_shift=0.5, sigma_wavelength=5.0, beta=8.0), p


@pytest.mark.parametrize("method", ["form", "sorm"])
def test_ln_pf_taylor(reliability, method):
    rel, p = reliability
    rng = np.random.default_rng(8)
    rate = taylor_test(lambda p: rel.ln_pf(p, method), p, rng.standard_normal(p.size))
    assert rate >= 1.9


def test_cold_ln_pf_does_not_depend_on_the_designs_before(reliability):
    """warm=False: the value of a fresh FocusReliability, whatever was searched before;
    the warm searches keep their last MPPs (the optimization's default)."""
    base, p = reliability
    other = np.clip(p + 0.3 * np.random.default_rng(3).standard_normal(p.size), 0.0, 1.0)
    rel, fresh = (FocusReliability(base.variations, base.target, base.sigma_shift,
                                   base.sigma_wavelength, base.beta) for _ in range(2))
    expected = float(fresh.ln_pf(p))
    rel.ln_pf(other)                                            # moves the warm starts
    kept = [None if fp.last is None else fp.last.mpp.copy() for fp in rel.modes]
    assert float(rel.ln_pf(p, warm=False)) == pytest.approx(expected, rel=1e-12, abs=1e-12)
    for fp, mpp in zip(rel.modes, kept):                     # the warm state untouched
        assert (fp.last is None and mpp is None) or np.array_equal(fp.last.mpp, mpp)
    with pytest.raises(TypeError, match="warm"):
        rel.ln_pf(p, warm=1)


def test_monte_carlo_agrees_with_sorm(reliability):
    # 2000 samples: pf ~ 0.2, standard error ~ 0.009; SORM of a smooth 2-D limit state
    rel, p = reliability
    mc = rel.monte_carlo(p, n_samples=2000, seed=1)
    sorm = np.exp(float(rel.ln_pf(p, "sorm")))
    assert abs(mc.pf - sorm) < 4 * mc.pf_std + 0.02 * sorm, (mc.pf, mc.pf_std, sorm)


def test_reliable_focus_responses(reliability):
    rel, p = reliability
    design = ReliableFocus(rel, pa=0.05, approach="ria")
    design.E_ref = float(enhancement(rel.variations.g(p, 0.0, None, 8.0)))
    f, c = design.responses(p, 8.0)
    assert float(f) == pytest.approx(-1.0, rel=1e-12)
    assert float(c) == pytest.approx(float(rel.ln_pf(p)) - np.log(0.05), rel=1e-9)
    with pytest.raises(ValueError, match="pa"):
        ReliableFocus(rel, pa=1.0)


@pytest.mark.parametrize("radius, n_shifts", [(1.0, 2), (2.0, 3), (2.576, 21), (3.0, 8)])
def test_disk_chords(radius, n_shifts):
    theta = disk_chords(radius, n_shifts)
    r = np.linalg.norm(theta, axis=1)
    assert len(theta) == 2 + 3 * (n_shifts - 2)              # two tangent points, 3 per chord
    assert np.all(r <= radius * (1 + 1e-12))
    ends = theta[theta[:, 1] != 0]
    np.testing.assert_allclose(np.linalg.norm(ends, axis=1), radius, rtol=1e-12)
    np.testing.assert_allclose(np.unique(theta[:, 0]), np.linspace(-radius, radius, n_shifts))
    assert len(np.unique(theta, axis=0)) == len(theta)      # no point twice
    np.testing.assert_allclose(theta[::-1] * [-1, -1], theta, atol=1e-12)   # symmetric


@pytest.mark.parametrize("kwargs, match", [
    ({"radius": 0.0, "n_shifts": 3}, "radius"), ({"radius": 2.0, "n_shifts": 1}, "n_shifts")])
def test_disk_chords_rejects(kwargs, match):
    with pytest.raises(ValueError, match=match):
        disk_chords(**kwargs)


@pytest.mark.parametrize("pa, beta_a", [(0.01, 2.5758293), (0.05, 1.9599640), (0.1, 1.6448536)])
def test_pma_disk_radius(reliability, pa, beta_a):
    # beta_a = Phi^-1(1 - pa / 2): the two-sided normal quantiles of any table
    assert ReliableFocus(reliability[0], pa).beta_a == pytest.approx(beta_a, abs=1e-7)


def test_pma_responses_are_the_disk_enhancements(reliability):
    rel, p = reliability
    design = ReliableFocus(rel, pa=0.05, n_shifts=4)
    design.E_ref = 2.0
    f, *c = design.responses(p, 8.0)
    assert design.n_constraints == len(c) == 8
    E = [float(rel.variations.enhancement(p, *rel.physical(t), 8.0)) for t in design.points]
    np.testing.assert_allclose([float(v) for v in c], 1 - np.array(E) / rel.target, rtol=1e-12)
    assert float(f) == pytest.approx(-float(rel.variations.enhancement(p, 0.0, None, 8.0)) / 2)
    with pytest.raises(ValueError, match="approach"):
        ReliableFocus(rel, pa=0.05, approach="sora")


def test_pma_constraints_taylor(reliability):
    rel, p = reliability
    design = ReliableFocus(rel, pa=0.05, n_shifts=3)
    design.E_ref = 1.0
    w = np.random.default_rng(5).uniform(0.5, 1.5, 1 + design.n_constraints)
    rate = taylor_test(lambda p: sum(wi * r for wi, r in zip(w, design.responses(p, 8.0))),
                       p, np.random.default_rng(6).standard_normal(p.size))
    assert rate >= 1.9



class _Mode:
    """A failure mode's search with a fixed answer (``ln pf`` and its MPP)."""

    def __init__(self, ln_pf, mpp):
        self.value, self.last = ln_pf, type("R", (), {"mpp": np.asarray(mpp, float)})()

    def __call__(self, p):
        return self.value


@pytest.mark.parametrize("pfs, mpps, expected", [
    ((0.02, 0.01), ((1.5, 0.0), (-2.0, 0.1)), 0.03),      # two modes: their sum
    ((0.02, 0.02), ((1.5, 0.0), (1.5, 0.0)), 0.02),       # one MPP reached twice: once
    ((0.7, 0.6), ((-0.3, 0.0), (0.2, 0.1)), 1.0),         # the origin fails: min(1, sum)
])
def test_modes_combine_as_a_series_bound(reliability, pfs, mpps, expected):
    rel, p = reliability
    saved = rel.modes
    rel.modes = [_Mode(np.log(f), m) for f, m in zip(pfs, mpps)]
    try:
        assert np.exp(float(rel.ln_pf(p))) == pytest.approx(expected, rel=1e-12)
    finally:
        rel.modes = saved
