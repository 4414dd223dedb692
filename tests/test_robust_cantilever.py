"""Issue 15, item 1: the robust cantilever (minimum E[c] + k std[c]) and its contract."""

import json

import numpy as np
import pytest

from topopt import ad
from topopt.formulations.compliance import ComplianceProblem
from topopt.formulations.robust_compliance import RobustCompliance
from topopt.io.result import RunResult

from topopt_problems import robust_cantilever as rc


def robust_problem(nelx=12, nely=6, k=3.0, Sigma=np.diag([0.49, 0.0025])):
    mesh, model, B = rc.setup(nelx, nely)
    det = ComplianceProblem(model, B @ rc.MU, 0.4, 1.5)
    return RobustCompliance(det, B, rc.MU, Sigma, k)


def test_setup_loads_the_tip_with_unit_components():
    mesh, model, B = rc.setup(8, 4)
    assert B.shape == (model.ndof, 2)
    np.testing.assert_allclose(B.sum(axis=0), [1.0, 1.0])          # one unit load each
    nodes = model.basis.nodal_dofs                                   # (2, n_points)
    tip = np.flatnonzero(np.isclose(mesh.p[0], 8) & np.isclose(mesh.p[1], 2))
    assert B[nodes[0, tip], 0] == 1.0 and B[nodes[1, tip], 1] == 1.0


@pytest.mark.parametrize("seed", [0, 1])
def test_taylor_of_the_robust_objective(seed):
    prob = robust_problem()
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.2, 0.8, prob.problem.n)
    assert ad.taylor_test(prob.objective, x, rng.standard_normal(x.size)) >= 1.9


def test_the_moments_are_those_of_the_quadratic_compliance():
    """E[c] = c(mu) + tr(A Sigma), Var = 4 b'Sigma b + 2 tr((A Sigma)^2): A from the
    compliances under the unit loads (polarization), b = A mu."""
    prob = robust_problem()
    x = np.random.default_rng(2).uniform(0.2, 0.8, prob.problem.n)
    E = np.asarray(prob.problem.stiffness(x))
    c = lambda t: float(prob.compliance(E, np.asarray(t, dtype=float)))      # noqa: E731
    axx, ayy = c([1, 0]), c([0, 1])
    axy = (c([1, 1]) - axx - ayy) / 2
    A = np.array([[axx, axy], [axy, ayy]])
    b, AS = A @ rc.MU, A @ prob.Sigma
    mean, std = (float(v) for v in prob.moments(x))
    assert mean == pytest.approx(rc.MU @ A @ rc.MU + np.trace(AS), rel=1e-10)
    assert std ** 2 == pytest.approx(4 * b @ prob.Sigma @ b + 2 * np.trace(AS @ AS), rel=1e-10)


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("robust_cantilever")
    result = rc.run(nelx=24, nely=12, rmin=1.5, maxeval=40, samples=400, out=str(out))
    return result, out


def test_short_run_follows_the_problem_contract(short_run):
    result, out = short_run
    assert isinstance(result, RunResult) and result.status == "maxeval_reached"
    saved = json.load(open(out / "result.json"))
    assert saved["status"] == "maxeval_reached" and saved["setup"]["problem"] == \
        "robust_cantilever"
    assert saved["result"]["robust_objective"] == pytest.approx(result["robust"]["objective"])
    for name in ("design.png", "mean_optimal.png", "deterministic.png", "history.png",
                 "design.npz", "design.vtu"):
        assert (out / name).exists(), name
    for design in ("robust", "mean_optimal", "deterministic"):
        assert result[design]["volume"] == pytest.approx(0.4, abs=2e-3)


def test_robust_design_beats_the_deterministic_one_in_its_objective(short_run):
    """Both designs under the same uncertainty: the robust one has the lower E + k std
    (measured: by 6 % on 24 x 12 elements after 40 evaluations) and the lower std (15 %)."""
    result, _ = short_run
    r, d = result["robust"], result["deterministic"]
    assert r["objective"] < 0.97 * d["objective"]
    assert r["std"] < 0.95 * d["std"]


def test_robust_and_mean_optimal_designs_trade_mean_for_std(short_run):
    """Each design is the best in its own objective; the robust one has a 7 % lower std
    for a 0.4 % higher mean (measured on 24 x 12 elements, 40 evaluations)."""
    result, _ = short_run
    r, m = result["robust"], result["mean_optimal"]
    assert r["objective"] < m["objective"] and m["mean"] < r["mean"]
    assert r["std"] < 0.97 * m["std"]


@pytest.mark.parametrize("design", ["robust", "mean_optimal", "deterministic"])
def test_monte_carlo_agrees_with_the_sosm_figures(short_run, design):
    f = short_run[0][design]
    assert abs(f["mc_mean"] - f["mean"]) <= 4 * f["mc_mean_error"]
    assert abs(f["mc_std"] - f["std"]) <= 4 * f["mc_std_error"]


def test_main_runs_from_the_command_line(tmp_path, capsys):
    result = rc.main(["--nelx", "12", "--nely", "6", "--rmin", "1.5", "--maxeval", "5",
                      "--samples", "100", "--out", str(tmp_path), "--quiet"])
    assert result.evaluations == 5
    printed = capsys.readouterr().out
    for name in ("robust:", "mean_optimal:", "deterministic:"):
        assert name in printed


@pytest.mark.parametrize("kw, exc, match", [
    (dict(k=-1.0), ValueError, "k must be >= 0"),
    (dict(sigma_x=-0.1), ValueError, "sigma_x must be >= 0"),
    (dict(sigma_x=0.0, sigma_y=0.0), ValueError, "sigma_x and sigma_y are both 0"),
    (dict(samples=10), ValueError, "samples must be an integer >= 100"),
    (dict(volfrac=1.5), ValueError, "volfrac must be in"),
])
def test_bad_options_are_refused(kw, exc, match):
    with pytest.raises(exc, match=match):
        rc.run(nelx=8, nely=4, maxeval=2, **kw)


def test_the_robust_phase_resumes_from_its_checkpoint(tmp_path):
    """6 evaluations with a checkpoint, then resumed to 12: the first 6 are kept."""
    ck = str(tmp_path / "ck.npz")
    kw = dict(nelx=12, nely=6, rmin=1.5, samples=100)
    first = rc.run(maxeval=6, checkpoint=ck, **kw)
    assert first.evaluations == 6 and first.resume == f"--resume {ck}"
    resumed = rc.run(maxeval=12, resume=ck, **kw)
    assert resumed.evaluations == 12 and resumed.status == "maxeval_reached"
    objectives = lambda r: [h["objective"] for h in r.history]         # noqa: E731
    assert objectives(resumed)[:6] == objectives(first)
    assert objectives(resumed)[-1] < objectives(first)[-1]      # MMA went on from there


def test_a_missing_resume_file_fails_before_any_work(tmp_path):
    with pytest.raises(FileNotFoundError):
        rc.run(nelx=8, nely=4, maxeval=2, resume=str(tmp_path / "none.npz"))
