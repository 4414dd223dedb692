"""Issue 5: complex Helmholtz with PML, complex adjoint, the EM focusing chain."""

import json
import os
import re
import signal
import subprocess

import numpy as np
import pytest

from topopt import ad, fem
from topopt.design.interpolation import permittivity
from topopt.formulations.focus import enhancement
from topopt.optimize import load_checkpoint

from script_runs import (interrupt_after, interrupted_evaluations, run_script, script,
                         script_env)

from topopt_problems import em_focus


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
    assert enhancement(g) == pytest.approx(1.0, abs=0.02)   # h = 8 nm


def test_complex_solve_rule_on_the_wave_system(coarse):
    S = coarse.model.system
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 1, S.n_el)
    a = 1 / permittivity(p, em_focus.N_METAL) - 1
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


def test_taylor_subcell_projection():
    """The tutorial's discretization: eps per quadrature point of the filtered field."""
    prob = em_focus.EMFocus(h=8.0, subcell=True)
    assert prob.model.system.n_el == prob.n * prob.smooth.points_per_element
    rng = np.random.default_rng(3)
    p = rng.uniform(0.2, 0.8, prob.n)
    assert ad.taylor_test(lambda p: prob.g(p, 8.0), p, rng.standard_normal(prob.n)) >= 1.9


def three_arms(prob):
    """A design of three metal arms around the focus: sharp, not random, interfaces."""
    c = fem.element_centroids(prob.mesh)[prob.design] - em_focus.X0
    return (np.cos(3 * np.arctan2(c[:, 1], c[:, 0])) > 0.2).astype(float)


def test_blueprint_is_the_limit_of_the_projection(coarse):
    """The binary design ``p_f >= eta`` is what ``beta -> inf`` tends to."""
    p = three_arms(coarse)
    x_bin = coarse.blueprint(p)
    assert set(np.unique(x_bin)) == {0.0, 1.0}
    g = [coarse.g(p, beta) for beta in (8.0, 32.0, 1e4)]
    assert abs(g[0] - g[2]) > 1e-3 * g[2]
    assert coarse.g(p) == pytest.approx(g[2], rel=1e-9)


def test_refined_blueprint_converges():
    """The same pixelated design on meshes of h, h/2, h/4: h reproduces `g`
    and the differences shrink (second-order elements would quarter them)."""
    prob = em_focus.EMFocus(h=4.0)
    x_bin = prob.blueprint(three_arms(prob))
    g = [prob.refined_g(x_bin, div) for div in (1, 2, 4)]
    assert g[0] == pytest.approx(prob.g(x_bin), rel=1e-12)
    assert abs(g[2] - g[1]) < 0.5 * abs(g[1] - g[0])
    assert abs(g[2] - g[1]) < 0.02 * g[2]
    with pytest.raises(ValueError, match="div must be an integer >= 1"):
        prob.refined_g(x_bin, 0)
    with pytest.raises(ValueError, match="density must have shape"):
        prob.refined_g(x_bin[:-1])


def test_refined_needs_a_nested_element_wise_cell(coarse):
    with pytest.raises(ValueError, match="does not nest"):     # 220 nm / 8 nm is not whole
        coarse.refined_g(np.zeros(coarse.n), 2)
    with pytest.raises(ValueError, match="verify needs one density per element"):
        em_focus.run(h=8.0, subcell=True, verify=True)


def test_run_verifies_the_blueprint_at_half_the_element_size():
    result = em_focus.run(h=4.0, maxeval=1, verify=True)
    fine = result["blueprint_refined"]
    assert fine["resolution_nm"] == 2.0
    assert fine["field_enhancement"] == pytest.approx(result["field_enhancement_blueprint"],
                                                      rel=0.2)


def test_short_optimization_focuses(tmp_path):
    result = em_focus.run(h=8.0, maxeval=15, out=str(tmp_path / "em"))
    assert result["g"] > 5 * result["g_initial"]
    assert result["field_enhancement_blueprint"] == pytest.approx(2 * result["g_blueprint"] ** 0.5)
    for name in ("design.png", "field.png", "history.png", "result.json"):
        assert os.path.getsize(tmp_path / "em" / name) > 0


def test_bad_resolution():
    with pytest.raises(ValueError, match="resolution h"):
        em_focus.setup(h=0.0)
    with pytest.raises(ValueError, match="maxeval"):
        em_focus.run(h=8.0, maxeval=0)


def test_isolated_cell_side_pml():
    """PML at the sides too (the tutorial's mesh): the plane wave passes, scattering decays."""
    prob = em_focus.EMFocus(h=8.0, isolated=True)
    model = prob.model
    x, y = model.mesh.p
    k = model.k
    u0 = model.full(model.solve(np.zeros(prob.n), prob.b))
    # a plane wave travelling in y is unaffected by a stretch in x, PML included
    exact = 1j / (2 * k) * np.exp(1j * k * np.abs(y - em_focus.H1))
    inside = (y >= 0) & (y <= em_focus.H1 + em_focus.H2)
    assert np.max(np.abs(u0 - exact)[inside]) < 0.01 * np.max(np.abs(exact))
    assert np.abs(x).max() == pytest.approx(em_focus.L / 2 + em_focus.D_PML)
    # the field scattered by a solid particle is absorbed on its way through the side PML
    scattered = np.abs(model.full(prob.field(np.ones(prob.n), 8.0)) - u0)
    rows = (y > 100) & (y < 500)
    entrance = scattered[rows & np.isclose(np.abs(x), em_focus.L / 2)].max()
    outer = scattered[rows & (np.abs(x) > em_focus.L / 2 + 0.85 * em_focus.D_PML)].max()
    assert outer < 0.05 * entrance
    rng = np.random.default_rng(2)
    p = rng.uniform(0.2, 0.8, prob.n)
    assert ad.taylor_test(lambda p: prob.g(p, 8.0), p, rng.standard_normal(prob.n)) >= 1.9


def test_side_pml_bad_input():
    mesh = fem.rectangle(4, 40, h=10.0)
    with pytest.raises(ValueError, match="pml_x"):
        fem.WaveModel(mesh, 0.03, pml=(50.0, 350.0, 50.0), design=[], pml_x=(30.0, 10.0))
    c = fem.element_centroids(mesh)
    side = np.flatnonzero((c[:, 0] < 10) & (c[:, 1] > 100) & (c[:, 1] < 300))[:1]
    fem.WaveModel(mesh, 0.03, pml=(50.0, 350.0, 50.0), design=side)
    with pytest.raises(ValueError, match="outside the PML"):
        fem.WaveModel(mesh, 0.03, pml=(50.0, 350.0, 50.0), design=side, pml_x=(10.0, 30.0))


def test_interrupted_run_exits_143_records_and_resumes(tmp_path):
    """SIGTERM in the first stage: exit 143, result.json of the last good design, and
    --resume finishes the three stages from the checkpoint."""
    out = tmp_path / "em"
    ck = out / "checkpoint.npz"
    cmd = script("em_focus", "--h", 8, "--out", out)
    code, stdout, stderr = interrupt_after([*cmd, "--maxeval", 10**4], "SIGTERM", 3)
    assert code == 143, stderr
    n = interrupted_evaluations(stderr, ck)
    saved = json.load(open(out / "result.json"))
    assert (saved["status"], saved["signal"], saved["evaluations"]) == ("interrupted",
                                                                         "SIGTERM", n)
    assert saved["resume"] == f"--resume {ck}"
    assert saved["result"]["g"] > 0 and os.path.getsize(out / "field.png") > 0
    done = run_script([*cmd, "--maxeval", n + 1, "--resume", ck, "--quiet"])
    assert done.returncode == 0, done.stderr
    resumed = json.load(open(out / "result.json"))
    assert resumed["status"] != "interrupted" and resumed["signal"] is None
    stages = load_checkpoint(ck)["stages"]
    assert [s["stage"] for s in stages] == [0, 1, 2]
    assert stages[0]["evaluations"] == n + 1


def test_em_robust_interrupted_in_its_robust_phase_stops_there_and_resumes(tmp_path):
    """SIGTERM in em_robust's second phase: exit 143 at once (no Monte Carlo of a half
    design), result.json names the phase and its checkpoint, --resume of that checkpoint
    finishes every phase."""
    out = tmp_path / "emr"
    ck = out / "checkpoint.robust.npz"
    cmd = script("em_robust", "--h", 8, "--samples", 4, "--workers", 0, "--out", out)
    proc = subprocess.Popen(list(map(str, [*cmd, "--maxeval", 20])), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=script_env())
    robust = False
    try:
        for line in proc.stderr:
            robust = robust or "z = -min_k E_k |" in line        # the robust phase's header
            if robust and re.match(r"\s*1 s0 obj", line):
                break
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert robust and proc.returncode == 143, stderr
    n = interrupted_evaluations(stderr, ck)
    saved = json.load(open(out / "result.json"))
    assert (saved["status"], saved["evaluations"], saved["result"]["phase"]) == (
        "interrupted", n, "robust")
    assert saved["resume"] == f"--resume {ck}" and not (out / "designs.json").exists()
    done = run_script([*cmd, "--maxeval", n + 1, "--resume", ck, "--quiet"], timeout=600)
    assert done.returncode == 0, done.stderr
    finished = json.load(open(out / "result.json"))
    assert finished["status"] != "interrupted" and (out / "designs.json").exists()
    assert finished["result"]["evaluations_per_phase"][1] == n + 1
