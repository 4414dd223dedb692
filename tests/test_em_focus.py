"""Issue 5: complex Helmholtz with PML, complex adjoint, the EM focusing chain."""

import importlib.util
import os

import numpy as np
import pytest

from topopt import ad, fem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("em_focus", os.path.join(ROOT, "problems",
                                                                       "em_focus.py"))
em_focus = importlib.util.module_from_spec(spec)
spec.loader.exec_module(em_focus)


@pytest.fixture(scope="module")
def coarse():
    return em_focus.EMFocus(h=8.0)


def plane_wave_fit(y, u, k, lo, hi, outgoing_sign):
    """Least-squares amplitudes of the outgoing and reflected waves on lo <= y <= hi."""
    sel = (y >= lo) & (y <= hi)
    M = np.stack([np.exp(outgoing_sign * 1j * k * y[sel]),
                  np.exp(-outgoing_sign * 1j * k * y[sel])], axis=1)
    return np.linalg.lstsq(M, u[sel], rcond=None)[0]


def test_pml_absorbs_and_empty_cell_gives_the_plane_wave(coarse):
    model = coarse.model
    empty = np.zeros(model.system.n_el)           # a = 1/eps - 1 = 0: air everywhere
    u = model.full(model.solve(empty, coarse.b))
    y, k = model.mesh.p[1], model.k
    # below the source the field must go down (e^{-iky}), above it up (e^{iky})
    down, up_reflected = plane_wave_fit(y, u, k, 0.0, 550.0, -1)
    up, down_reflected = plane_wave_fit(y, u, k, 650.0, 800.0, +1)
    assert abs(up_reflected / down) < 1e-3
    assert abs(down_reflected / up) < 1e-3
    # -u'' - k^2 u = delta(y - y_s): u = i/(2k) exp(ik|y - y_s|) in the physical cell
    exact = 1j / (2 * k) * np.exp(1j * k * np.abs(y - em_focus.H1))
    inside = (y >= 0) & (y <= em_focus.H1 + em_focus.H2)
    assert np.max(np.abs(u - exact)[inside]) < 0.01 * np.max(np.abs(exact))
    # and the field enhancement of the empty cell is 1
    u = model.solve(empty, coarse.b)
    g = np.real(np.vdot(u, coarse.O @ u))
    assert em_focus.EMFocus.enhancement(g) == pytest.approx(1.0, abs=0.02)   # h = 8 nm


def test_complex_solve_rule_on_the_wave_system(coarse):
    S = coarse.model.system
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 1, S.n_el)
    a = 1 / em_focus.permittivity(p) - 1
    assert np.iscomplexobj(a)
    K = S.matrix(a)
    assert abs(K - K.T).max() < 1e-12 and abs(K - K.conj().T).max() > 1e-3
    b = rng.standard_normal(S.ndof) + 1j * rng.standard_normal(S.ndof)
    for seed in (0, 1):
        ad.check_rule(fem.solve, S, a, b, seed=seed)


def test_taylor_focus_objective_with_projection(coarse):
    rng = np.random.default_rng(1)
    p = rng.uniform(0.2, 0.8, coarse.n)
    rate = ad.taylor_test(lambda p: coarse.g(p, 8.0), p, rng.standard_normal(coarse.n))
    assert rate >= 1.9


def test_short_optimization_focuses(tmp_path):
    result = em_focus.run(h=8.0, maxeval=15, out=str(tmp_path / "em"))
    assert result["g"] > 5 * result["g_initial"]
    for name in ("design.png", "field.png", "history.png", "result.json"):
        assert os.path.getsize(tmp_path / "em" / name) > 0


def test_bad_resolution():
    with pytest.raises(ValueError, match="resolution h"):
        em_focus.setup(h=0.0)
    with pytest.raises(ValueError, match="maxeval"):
        em_focus.run(h=8.0, maxeval=0)
