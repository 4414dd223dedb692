"""Issue 27, a band of wavelengths: the focusing chain at several wavelengths and its
min-max (epigraph) design (`topopt.formulations.focus_band`), on em_focus's 8 nm cell."""

import numpy as np
import pytest

from topopt import ad
from topopt.design.materials import silver_index, silver_index_jc
from topopt.formulations.focus_band import FocusBand, run_focus_band

from topopt_problems import em_focus

BAND = [500.0, 532.0, 560.0]


@pytest.fixture(scope="module")
def band():
    return FocusBand(em_focus.SETUP, BAND, h=8.0, scale="each")


def test_each_wavelength_has_its_k_and_metal(band):
    assert [m.k for m, _, _ in band.models] == pytest.approx([2 * np.pi / lam for lam in BAND])
    assert band.n_metal == [complex(silver_index(lam)) for lam in BAND]
    # an empty cell (air): the plane wave of every k, enhancement 1 (h = 8 nm: to 2 %)
    np.testing.assert_allclose(band.enhancements(np.zeros(band.n), 8.0), 1.0, atol=0.02)
    # one factorization per wavelength and design
    before = band.solves()
    band.g(np.full(band.n, 0.4), 8.0)
    assert band.solves() - before == len(BAND)


def test_one_wavelength_is_the_nominal_chain():
    """At 532 nm with the tutorial's silver the band is `FocusProblem` itself."""
    one = FocusBand(em_focus.SETUP, [532.0], index=lambda lam: em_focus.N_METAL, h=8.0)
    p = np.random.default_rng(2).uniform(0.0, 1.0, one.n)
    for beta in (8.0, None):
        assert float(one.g(p, beta)[0]) == pytest.approx(float(one.focus.g(p, beta)), rel=1e-12)
    # and the Johnson & Christy table gives the tutorial's n at 532 nm
    jc = FocusBand(em_focus.SETUP, [532.0], index=silver_index_jc, h=8.0)
    assert float(jc.g(p, 8.0)[0]) == pytest.approx(float(one.focus.g(p, 8.0)), rel=2e-3)


@pytest.mark.parametrize("form, t0", [("log", 0.0), ("ratio", -1.0)])
def test_taylor_band_responses(band, form, t0):
    """Every constraint c_j - t (c_j = -ln(g_j/g_j0) or -g_j/g_j0) and a weighted sum of
    all responses: rate >= 1.9."""
    band.form, band.g_ref = form, None
    rng = np.random.default_rng(1)
    z = band.prepare(rng.uniform(0.2, 0.8, band.n), 8.0)
    assert z[-1] == pytest.approx(t0)            # every ratio is 1 at the start
    dz = rng.standard_normal(band.n + 1)
    w = rng.standard_normal(len(BAND) + 1)
    rates = [ad.taylor_test(lambda z: sum(wi * r for wi, r in zip(w, band.responses(z, 8.0))),
                            z, dz)]
    if form == "ratio":                          # the default: each constraint too
        rates += [ad.taylor_test(lambda z, j=j: band.responses(z, 8.0)[j], z, dz)
                  for j in range(1, len(BAND) + 1)]
    assert min(rates) >= 1.9, rates
    assert band.bounds()[0][-1] == pytest.approx(-np.log(1e3) if form == "log" else -1e3)


def test_band_intensities_every_mode():
    """The band's g_j in every mode (reverse, forward, hvp, nested) against differences."""
    two = FocusBand(em_focus.SETUP, [500.0, 560.0], h=8.0)
    p = np.random.default_rng(3).uniform(0.2, 0.8, two.n)
    report = ad.check_modes(lambda p: two.g(p, 8.0), p, seed=3)
    assert {k.split("/")[0] for k in report} == {"reverse", "forward", "hvp", "nested"}
    assert all(err < 1e-6 for err in report.values()), report


def test_short_min_max_run_raises_the_worst_wavelength():
    band = FocusBand(em_focus.SETUP, [500.0, 560.0], h=8.0)      # common scale, ratio form
    result = run_focus_band(band, maxeval=4)
    g0 = band.g_ref[0]
    E0 = 2 * np.sqrt(g0)                         # the start's mean enhancement
    assert result["worst_enhancement"] > 2 * E0
    # t bounds every normalized intensity (a feasible epigraph, up to MMA's tolerance)
    g = (np.array(result["field_enhancement"]) / 2) ** 2
    assert result["t"] >= np.max(-g / g0) - 1e-6 * abs(result["t"])
    assert not result["t_at_bound"]
    assert result.x.shape == (band.n,) and result["fe_solves"] >= 2 * result.evaluations


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(wavelengths=[]), ValueError, "at least one wavelength"),
    (dict(wavelengths=532.0), TypeError, "wavelengths must be a sequence"),
    (dict(wavelengths=[532.0, -1.0]), ValueError, r"wavelengths\[1\] must be > 0"),
    (dict(wavelengths=[532.0, 532.0]), ValueError, "must be distinct"),
    (dict(wavelengths=[100.0]), ValueError, r"wavelength_nm must lie in \[247.97"),
    (dict(wavelengths=[532.0], index=3.0), TypeError, "index"),
    (dict(wavelengths=[532.0], index=lambda lam: np.nan), ValueError, "one finite number"),
    (dict(wavelengths=[532.0], index=lambda lam: [1.0, 2.0]), ValueError, "one finite number"),
    (dict(wavelengths=[532.0], index=lambda lam: 0.1 - 3j), ValueError, "Im n < 0"),
    (dict(wavelengths=[532.0], t_max=1.0), ValueError, "t_max must be > 1"),
    (dict(wavelengths=[532.0], scale="max"), ValueError, "scale must be one of"),
    (dict(wavelengths=[532.0], form="exp"), ValueError, "form must be one of"),
])
def test_bad_inputs(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        FocusBand(em_focus.SETUP, h=8.0, **kwargs)


def test_bad_use(band):
    fresh = FocusBand(em_focus.SETUP, [532.0], h=8.0)
    with pytest.raises(RuntimeError, match="call prepare"):
        fresh.responses(np.zeros(fresh.n + 1), 8.0)
    with pytest.raises(ValueError, match="p0 must have shape"):
        fresh.prepare(np.zeros(3), 8.0)
    with pytest.raises(ValueError, match="maxeval must be an integer >= 1"):
        run_focus_band(fresh, maxeval=0)
