"""Issue 3 acceptance: top88 MBB numbers, Taylor tests of the full chain, bad input."""

import importlib.util
import json
import os
import re
import signal
import sys

import numpy as np
import pytest

from topopt import ad, fem
from topopt.design import HelmholtzFilter
from topopt.design.interpolation import project, simp
from topopt.optimize import load_checkpoint
from topopt.formulations.compliance import ComplianceProblem
from topopt.io.result import RunResult

import topopt_problems
from topopt_problems import cantilever, mbb_beam
from problem_table import PROBLEMS, SMALL
from script_runs import interrupt_after, interrupted_evaluations, run_script, script, tree_state

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("filter, published, tol", [
    ("density", 233.71, 0.01),      # Andreassen et al. 2011, Fig. 4, density filter
    ("helmholtz", 237.60, 0.02),    # top88's PDE-filter variant, r = rmin / (2 sqrt 3)
])
def test_mbb_reproduces_top88(filter, published, tol):
    result = mbb_beam.run(60, 20, volfrac=0.5, rmin=2.4, filter=filter, maxeval=120)
    assert isinstance(result, RunResult)
    assert result["compliance"] == pytest.approx(published, rel=tol)
    assert result["volume"] == pytest.approx(0.5, abs=1e-3)
    assert result["fe_solves_per_iteration"] <= 1.1
    assert result["fe_solves"] == result["evaluations"]


def test_helmholtz_overshoot_is_clipped_not_rejected():
    """The PDE filter overshoots [0, 1] at small rmin; the chain clips it and runs."""
    result = mbb_beam.run(60, 20, rmin=1.2, filter="helmholtz", maxeval=80)
    problem = ComplianceProblem(*mbb_beam.setup(60, 20)[1:], 0.5, 1.2, filter="helmholtz")
    x_tilde = problem.filter(result["x"])
    assert x_tilde.min() < -1e-6 or x_tilde.max() > 1 + 1e-6     # the filter overshoots here
    x_phys = problem.x_phys(result["x"])
    assert -1e-9 <= x_phys.min() and x_phys.max() <= 1 + 1e-9
    assert result["volume"] == pytest.approx(0.5, abs=1e-3)
    ones = problem.filter(np.ones(problem.n))                       # rounding passes untouched
    np.testing.assert_array_equal(problem.x_phys(np.ones(problem.n)), ones)


def chain(model, f, flt, beta):
    S = model.system()
    return lambda x: np.sum(f * fem.solve(S, simp(project(flt(x), beta, 0.5), 3.0, 1e-3), f))


@pytest.mark.parametrize("mesh, load", [
    (fem.rectangle(12, 6), ((12.0, 0.0), (0.0, -1.0))),
    (fem.box(6, 3, 3), ((6.0, 0.0, 0.0), (0.0, -1.0, 0.0))),
])
def test_taylor_full_chain(mesh, load):
    """design -> Helmholtz filter -> projection -> SIMP -> solve -> compliance."""
    model = fem.elasticity(mesh).fix(nodes=lambda x: np.isclose(x[0], 0.0))
    f = model.point_load(*load)
    flt = HelmholtzFilter.from_rmin(mesh, 1.5)
    rng = np.random.default_rng(0)
    x = rng.uniform(0.3, 0.7, model.n_el)
    c = chain(model, f, flt, beta=4.0)
    assert ad.taylor_test(c, x, rng.standard_normal(model.n_el)) >= 1.9


def test_cantilever_runs_and_writes_results(tmp_path):
    out = str(tmp_path / "cantilever")
    result = cantilever.run(24, 12, volfrac=0.4, rmin=1.5, maxeval=30, out=out)
    for name in ("design.png", "history.png", "result.json"):
        assert os.path.getsize(os.path.join(out, name)) > 0
    saved = json.load(open(os.path.join(out, "result.json")))
    assert saved["result"]["compliance"] == pytest.approx(result["compliance"])
    assert saved["result"]["evaluations"] == 30
    # optimization lowered the compliance of the uniform start
    assert result["history"][-1]["objective"] < 0.5 * result["history"][0]["objective"]


def test_script_writes_under_the_working_directory_not_the_source_tree(tmp_path):
    """The default --out is results/<problem> under the cwd; the source tree is untouched."""
    before = tree_state("results", "problems")
    done = run_script(script("mbb_beam", "--nelx", 12, "--nely", 4, "--maxeval", 2, "--quiet"),
                      cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "results" / "mbb_beam"
    assert json.load(open(out / "result.json"))["result"]["evaluations"] == 2
    summary, *last = done.stdout.strip().splitlines()
    assert summary.endswith(f"-> {os.path.join('results', 'mbb_beam')}")
    # 2 evaluations from the uniform 0.5 leave it grey: the last line says so
    grey = json.load(open(out / "result.json"))["ending"]["grey_level"]
    assert last == [f"ended grey: grey level {grey:.3f} (> 0.5) (verdict in "
                    f"{os.path.join('results', 'mbb_beam', 'result.json')})"]
    assert tree_state("results", "problems") == before


def test_cli_help(capsys):
    with pytest.raises(SystemExit) as info:
        mbb_beam.main(["--help"])
    assert info.value.code == 0
    assert "--filter" in capsys.readouterr().out


@pytest.mark.parametrize("kwargs, message", [
    (dict(volfrac=1.2), "volfrac"),
    (dict(volfrac=0.0), "volfrac"),
    (dict(rmin=0.0), "rmin"),
    (dict(rmin=-1.0), "rmin"),
    (dict(filter="gauss"), "filter"),
    (dict(penal=0.5), "penal"),
])
def test_bad_parameters_raise_before_any_solve(kwargs, message):
    mesh, model, f = mbb_beam.setup(8, 4)
    args = dict(volfrac=0.5, rmin=1.5) | kwargs
    with pytest.raises(ValueError, match=message):
        ComplianceProblem(model, f, **args)
    assert not any(S.counts["factorizations"] for S in model._systems.values())


@pytest.mark.parametrize("x0, message", [
    (np.full(31, 0.5), "one value per element"),
    (np.r_[np.full(31, 0.5), np.nan], "NaN"),
])
def test_bad_design_vector_raises_before_any_solve(x0, message):
    mesh, model, f = mbb_beam.setup(8, 4)
    problem = ComplianceProblem(model, f, 0.5, 1.5)
    with pytest.raises(ValueError, match=message):
        problem.run(maxeval=5, x0=x0, verbose=False)
    assert problem.system.counts["factorizations"] == 0


# ---------------------------------------------------------------- run I/O of the scripts

@pytest.mark.parametrize("sig, status", [("SIGINT", 130), ("SIGTERM", 143)])
def test_interrupted_script_exits_with_signal_status_and_resumes(tmp_path, sig, status):
    out = tmp_path / "run"
    ck = out / "checkpoint.npz"
    cmd = script("mbb_beam", "--nelx", 12, "--nely", 4, "--rmin", 1.5, "--out", out)
    code, stdout, stderr = interrupt_after([*cmd, "--maxeval", str(10**6)], sig)
    assert code == status, stderr
    n = interrupted_evaluations(stderr, ck)
    assert n >= 5
    assert stdout == ""                                 # no normal summary
    saved = json.load(open(out / "result.json"))
    assert (saved["status"], saved["signal"], saved["evaluations"]) == ("interrupted", sig, n)
    assert (saved["checkpoint"], saved["resume"]) == (str(ck), f"--resume {ck}")
    assert len(saved["objective_history"]) == n
    assert os.path.getsize(out / "design.png") > 0
    checkpoint = load_checkpoint(ck)
    assert (checkpoint["status"], checkpoint["evaluations"]) == ("interrupted", n)
    # --resume continues the same run and history up to a budget of n + 4
    done = run_script([*cmd, "--maxeval", str(n + 4), "--resume", str(ck), "--quiet"])
    assert done.returncode == 0, done.stderr
    resumed = json.load(open(out / "result.json"))
    assert (resumed["status"], resumed["signal"], resumed["evaluations"]) == \
        ("maxeval_reached", None, n + 4)
    assert resumed["objective_history"][:n] == saved["objective_history"]
    assert resumed["resume"] == f"--resume {ck}"        # a budget stop can be continued
    # the totals are the whole run's: the FE solves of a straight run of n + 4
    # evaluations (the restart costs no forward pass), the time of both parts
    alone = run_script([*script("mbb_beam", "--nelx", 12, "--nely", 4, "--rmin", 1.5, "--out",
                                tmp_path / "straight"), "--maxeval", str(n + 4), "--quiet"])
    assert alone.returncode == 0, alone.stderr
    alone = json.load(open(tmp_path / "straight" / "result.json"))["result"]
    whole, first = resumed["result"], saved["result"]
    assert alone["evaluations"] == whole["evaluations"] == n + 4
    assert whole["fe_solves"] == alone["fe_solves"] == first["fe_solves"] + 4
    assert whole["fe_solves_per_iteration"] == alone["fe_solves_per_iteration"]
    assert whole["seconds"] > checkpoint["seconds"] > 0


def _count_responses(monkeypatch, fail_at=None):
    """Count ComplianceProblem.responses calls; raise a singular solve at call `fail_at`."""
    calls = []
    responses = ComplianceProblem.responses

    def counted(self, x, beta=None):
        calls.append(1)
        if len(calls) == fail_at:
            raise fem.SingularSystemError("the stiffness matrix is singular (test)")
        return responses(self, x, beta)

    monkeypatch.setattr(ComplianceProblem, "responses", counted)
    return calls


def _blocker(tmp_path):
    path = tmp_path / "a_file"                 # a path under a file: unwritable, even as root
    path.write_text("x")
    return path


@pytest.mark.parametrize("args, message", [
    (lambda tmp: ["--out", _blocker(tmp) / "out"], "--out: cannot write"),
    (lambda tmp: ["--out", _blocker(tmp)], "--out: .* is a file; expected a folder"),
    (lambda tmp: ["--out", tmp / "out", "--checkpoint", _blocker(tmp) / "ck.npz"],
     "--checkpoint: cannot write"),
    (lambda tmp: ["--out", tmp / "out", "--resume", _blocker(tmp)],
     r"not a topopt checkpoint: .*a_file \(not an .npz archive\)"),
    (lambda tmp: ["--out", tmp / "out", "--resume", tmp / "missing.npz"], "no checkpoint at"),
])
def test_script_rejects_bad_paths_before_the_first_evaluation(tmp_path, monkeypatch, capsys,
                                                              args, message):
    calls = _count_responses(monkeypatch)
    with pytest.raises(SystemExit) as info:
        mbb_beam.main(["--nelx", "8", "--nely", "4", "--maxeval", "3", "--quiet",
                       *map(str, args(tmp_path))])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert re.search(f"error: {message}", err), err
    assert "allow_pickle" not in err
    assert calls == []


def test_script_error_keeps_last_good_design_and_says_how_to_resume(tmp_path, monkeypatch,
                                                                     capsys):
    out = tmp_path / "run"
    ck = out / "checkpoint.npz"
    argv = ["--nelx", "8", "--nely", "4", "--rmin", "1.5", "--out", str(out), "--quiet"]
    calls = _count_responses(monkeypatch, fail_at=6)
    with pytest.raises(fem.SingularSystemError) as info:
        mbb_beam.main([*argv, "--maxeval", "20"])
    assert len(calls) == 6
    assert info.value.topopt_checkpoint == str(ck)
    err = capsys.readouterr().err
    assert f"error after 5 evaluations; the last good design and the history are in {ck}; " \
        f"resume with --resume {ck}" in err
    saved = json.load(open(out / "result.json"))
    assert (saved["status"], saved["evaluations"], saved["resume"]) == \
        ("error", 5, f"--resume {ck}")
    assert saved["error"].startswith("SingularSystemError: the stiffness matrix is singular")
    checkpoint = load_checkpoint(ck)
    assert (checkpoint["status"], len(checkpoint["history"])) == ("error", 5)
    assert checkpoint["x"].shape == (32,) and np.all((checkpoint["x"] >= 0)
                                                     & (checkpoint["x"] <= 1))
    monkeypatch.undo()
    result = mbb_beam.main([*argv, "--maxeval", "20", "--resume", str(ck)])
    assert result["evaluations"] == 20 and result["status"] == "maxeval_reached"
    resumed = json.load(open(out / "result.json"))
    assert resumed["objective_history"][:5] == saved["objective_history"]


def test_every_problem_has_a_small_run():
    assert set(SMALL) == set(PROBLEMS)


@pytest.mark.parametrize("name", PROBLEMS)
@pytest.mark.parametrize("option, make, message", [
    ("--out", lambda tmp: _blocker(tmp) / "out", "--out: cannot write"),
    ("--checkpoint", lambda tmp: _blocker(tmp) / "ck.npz", "--checkpoint: cannot write"),
    ("--resume", lambda tmp: _blocker(tmp), r"not a topopt checkpoint: .*\(not an .npz"),
])
def test_every_script_checks_its_paths_before_any_work(tmp_path, monkeypatch, capsys, name,
                                                       option, make, message):
    module = PROBLEMS[name]
    runs = []
    monkeypatch.setattr(module, "run", lambda *a, **k: runs.append(1))
    argv = ["--out", str(tmp_path / "out")] if option != "--out" else []
    with pytest.raises(SystemExit) as info:
        module.main([*argv, option, str(make(tmp_path))])
    assert info.value.code == 2
    assert re.search(f"error: {message}", capsys.readouterr().err)
    assert runs == []


def test_resume_measurement_script(tmp_path):
    """scripts/studies/resume_mbb.py (the resume table of docs/notes/runs.md): the interruption lands at N/2
    and both runs spend N evaluations."""
    spec = importlib.util.spec_from_file_location(
        "resume_mbb", os.path.join(ROOT, "scripts", "studies", "resume_mbb.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    row = module.compare(24, 8, 12, str(tmp_path))
    assert row["interrupted_at"] == 6
    assert row["straight"]["evaluations"] == row["resumed"]["evaluations"] == 12
    assert row["relative_difference"] == pytest.approx(
        abs(row["resumed"]["compliance"] / row["straight"]["compliance"] - 1))
    assert module.evaluations_to([300.0, 240.0, 234.5, 233.9], 233.71) == 3
    assert module.evaluations_to([300.0], 233.71) is None


@pytest.mark.parametrize("name, kwargs", SMALL.items())
@pytest.mark.parametrize("checkpoint", [False, True])
def test_every_run_checks_out_and_checkpoint_before_any_evaluation(tmp_path, monkeypatch,
                                                                   name, kwargs, checkpoint):
    """The library form, ``run(out=...)`` / ``run(checkpoint=...)``: an unwritable
    path fails before the first forward pass and the first FE solve."""
    passes, solves = [], []
    pullback, factorize = ad.pullback, fem.LinearSystem.factorize
    monkeypatch.setattr(ad, "pullback", lambda *a, **k: passes.append(1) or pullback(*a, **k))
    monkeypatch.setattr(fem.LinearSystem, "factorize",
                        lambda *a, **k: solves.append(1) or factorize(*a, **k))
    blocked = _blocker(tmp_path) / "sub"
    paths = dict(out=str(tmp_path / "out"), checkpoint=str(blocked / "ck.npz")) \
        if checkpoint else dict(out=str(blocked))
    with pytest.raises(OSError, match="cannot write"):
        PROBLEMS[name].run(**{"maxeval": 2, **kwargs}, **paths)
    assert passes == [] and solves == []


@pytest.mark.parametrize("sig, status", [("SIGINT", 130), ("SIGTERM", 143)])
def test_second_signal_aborts_the_evaluation_and_says_how_to_resume(tmp_path, monkeypatch,
                                                                     capsys, sig, status):
    """Two signals in one evaluation: minimize raises KeyboardInterrupt at once; the
    script records the run from the checkpoint (3 whole evaluations) and exits 128 + signum."""
    out = tmp_path / "run"
    ck = out / "checkpoint.npz"
    responses, calls = ComplianceProblem.responses, []

    def twice(self, x, beta=None):
        calls.append(1)
        if len(calls) == 4:
            os.kill(os.getpid(), getattr(signal, sig))       # stop after this evaluation
            os.kill(os.getpid(), getattr(signal, sig))       # no: abort now
        return responses(self, x, beta)

    monkeypatch.setattr(ComplianceProblem, "responses", twice)
    before = signal.getsignal(getattr(signal, sig))
    with pytest.raises(SystemExit) as info:
        mbb_beam.main(["--nelx", "8", "--nely", "4", "--rmin", "1.5", "--maxeval", "20",
                       "--out", str(out), "--quiet"])
    assert info.value.code == status
    assert f"aborted after 3 evaluations; resume with --resume {ck}" in capsys.readouterr().err
    saved = json.load(open(out / "result.json"))
    assert (saved["status"], saved["signal"], saved["evaluations"], saved["resume"]) == \
        ("interrupted", sig, 3, f"--resume {ck}")
    assert load_checkpoint(ck)["status"] == "interrupted"
    assert signal.getsignal(getattr(signal, sig)) == before   # the handler restored


def test_gallery_script_passes_each_problem_its_gallery_folder():
    """scripts/site/gallery.py remakes results/gallery/<name>/ with --out (the default is under the cwd)."""
    done = run_script([sys.executable, os.path.join(ROOT, "scripts", "site", "gallery.py"), "--list"])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    for name in topopt_problems.__all__:
        assert any(line.split()[1].endswith(os.path.join("problems", f"{name}.py")) and
                   line.endswith(f"--out {os.path.join(ROOT, 'results', 'gallery', name)}")
                   for line in lines), name
    bad = run_script([sys.executable, os.path.join(ROOT, "scripts", "site", "gallery.py"), "--list",
                      "nope"])
    assert bad.returncode == 2 and "got 'nope'" in bad.stderr


def test_a_resumed_cg_run_reports_the_whole_runs_cg_iterations(tmp_path):
    """An mg-cg run stopped at evaluation 8 and resumed to 20 in a fresh problem: the
    FE solves, CG iterations per solve and the most in one solve cover both parts (the
    checkpoint carries the first part's counters)."""
    ck = str(tmp_path / "ck.npz")
    _, model, f = mbb_beam.setup(48, 16)
    first = ComplianceProblem(model, f, 0.5, 1.5, solver="mg-cg")
    r1 = first.run(maxeval=20, verbose=False, checkpoint=ck,
                   callback=lambda rec, x: rec["evaluation"] == 8)
    assert (r1.status, r1.evaluations) == ("stopped", 8)
    before = load_checkpoint(ck)
    assert before["counters"]["cg_solves"] >= 8 and before["counters"]["cg_iterations"] > 0
    _, model, f = mbb_beam.setup(48, 16)
    again = ComplianceProblem(model, f, 0.5, 1.5, solver="mg-cg")
    r2 = again.run(maxeval=20, verbose=False, checkpoint=ck, resume=ck)
    now, prior = again.system.counts, before["counters"]
    assert r2.evaluations == 20
    # this process's solves (the start's scale, 12 evaluations, maybe the final state's)
    # plus the first part's
    assert before["fe_solves"] + 12 <= r2["fe_solves"] <= before["fe_solves"] + again.solves()
    assert r2["cg_iterations_per_solve"] == pytest.approx(
        (now["cg_iterations"] + prior["cg_iterations"]) / (now["cg_solves"] + prior["cg_solves"]),
        rel=1e-15)
    assert r2["cg_iterations_max"] == max(max(again.system._iterative.log),
                                          prior["cg_iterations_max"])
    assert r2["seconds"] > before["seconds"]
