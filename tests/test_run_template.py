"""The run template of the gallery runs (`topopt.formulations.run_template`): its hooks,
its phases' checkpoints, and the four gallery runs on it, with their numbers of before.

Interruptions are made in this process, deterministically: a phase's ``responses`` sends
the process SIGINT at its n-th call, and `minimize` stops there as it does on a Ctrl-C
(``status="interrupted"``, the checkpoint of the last good design written).
"""

import json
import os
import signal

import numpy as np
import pytest

from topopt.formulations.base import before_resume
from topopt.formulations.compliance import ComplianceProblem
from topopt.formulations.focus import FocusProblem
from topopt.formulations.reliable import phase_checkpoints
from topopt.formulations.robust_compliance import RobustCompliance
from topopt.formulations.run_template import (GalleryRun, MissingPhaseError, phase_checkpoint,
                                              phase_paths)
from topopt.io.result import RunResult
from topopt.optimize import load_checkpoint, minimize
from topopt.optimize.checkpoint import CheckpointError
from topopt.formulations.stress import MinimumVolumeStress

from topopt_problems import em_focus, l_bracket, reliable_bracket, robust_cantilever

# The small runs' numbers on commit 89137ac, before the template (each run its own way),
# measured with these tests' options; the same after it to the last digit.
BEFORE = {
    "focus": {"g": 17.219432983700614, "g_blueprint": 18.762595105759637,
              "g_initial": 0.1719169627263709, "fe_solves": 9},
    "reliable": {"c_allow": 30.50368158623745, "pf_mc": 0.006,
                 "nominal_compliance": 9.442335227398793},
    "robust": {"robust_objective": 394.06574260535245, "mean": 288.27490693744056,
               "deterministic": 271.0031834355806},
    "stress": {"max_von_mises": 1.0590991504207392, "volume": 0.7067842716997095,
               "reference": 148.44052016915242},
}


def interrupt_at(monkeypatch, cls, n, when=lambda self: True):
    """``cls.responses`` sends this process SIGINT at its `n`-th call where `when(self)`."""
    original, calls = cls.responses, []

    def responses(self, *args, **kwargs):
        if when(self):
            calls.append(1)
            if len(calls) == n:
                os.kill(os.getpid(), signal.SIGINT)
        return original(self, *args, **kwargs)
    monkeypatch.setattr(cls, "responses", responses)
    return calls


@pytest.fixture
def through_template(monkeypatch):
    """The `GalleryRun` subclasses whose `run` was called (and their phases' outcomes)."""
    seen, run = [], GalleryRun.run

    def spy(self):
        result = run(self)
        seen.append((type(self).__name__, tuple(self.outcomes)))
        return result
    monkeypatch.setattr(GalleryRun, "run", spy)
    return seen


# --------------------------------------------------------------------------
# the phases' checkpoints

def test_phase_paths_put_the_main_phase_at_the_checkpoint_and_the_others_beside(tmp_path):
    assert phase_paths("ck.npz", None, ("a", "b")) == [("ck.a.npz", None), ("ck.npz", None)]
    assert phase_paths("ck.npz", None, ("a", "b"), main="a") == [("ck.npz", None),
                                                                ("ck.b.npz", None)]
    assert phase_paths(None, None, ("a",)) == [(None, None)]
    assert phase_paths("ck", None, ("a", "b")) == [("ck.a.npz", None), ("ck", None)]
    assert phase_checkpoint(tmp_path / "ck.npz", "a") == str(tmp_path / "ck.a.npz")
    assert phase_checkpoints("o/ck.npz", None) == (("o/ck.deterministic.npz", None),
                                                   ("o/ck.npz", None))


def test_a_resume_continues_its_phase_after_the_finished_ones(tmp_path):
    ck = str(tmp_path / "ck.npz")
    names = ("a", "b", "c")
    assert phase_paths(ck, phase_checkpoint(ck, "a"), names) == [
        (phase_checkpoint(ck, "a"), phase_checkpoint(ck, "a")),
        (phase_checkpoint(ck, "b"), None), (ck, None)]
    for name in ("a", "b"):
        open(phase_checkpoint(ck, name), "w").close()
    assert phase_paths(ck, ck, names) == [
        (phase_checkpoint(ck, "a"), phase_checkpoint(ck, "a")),
        (phase_checkpoint(ck, "b"), phase_checkpoint(ck, "b")), (ck, ck)]
    # the main phase first: a later phase's resume takes the main checkpoint as finished
    open(ck, "w").close()
    assert phase_paths(ck, phase_checkpoint(ck, "b"), ("a", "b"), main="a") == [
        (ck, ck), (phase_checkpoint(ck, "b"), phase_checkpoint(ck, "b"))]


def test_a_resume_without_its_earlier_phases_is_a_usage_error(tmp_path):
    ck = str(tmp_path / "ck.npz")
    with pytest.raises(MissingPhaseError) as info:
        phase_paths(ck, ck, ("deterministic", "reliability"))
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, ValueError)
    assert str(info.value) == (f"resume: {ck} continues the reliability phase, whose "
                               f"deterministic design {tmp_path / 'ck.deterministic.npz'} "
                               "is missing")
    with pytest.raises(ValueError, match="phases must name one phase or more, each once"):
        phase_paths(ck, None, ("a", "a"))
    with pytest.raises(ValueError, match="main must be one of the phases"):
        phase_paths(ck, None, ("a", "b"), main="c")


# --------------------------------------------------------------------------
# the hooks, on a run of two phases that minimize (x - 0.3)^2

class Parabola(GalleryRun):
    """Two phases on ``sum (x - 0.3)^2`` from 0.5: 4 evaluations, then 20 from there."""

    PHASES = ("coarse", "fine")

    def __init__(self, calls, bad=False, **kw):
        super().__init__(**kw)
        self.calls, self.bad = calls, bad

    def check(self):
        self.calls.append("check")
        if self.bad:
            raise ValueError("bad must be False")

    def build(self):
        self.calls.append("build")

    def responses(self, x):
        return np.sum((x - 0.3) ** 2)

    def phase(self, name, checkpoint, resume):
        self.calls.append(name)
        x0 = np.full(3, 0.5) if name == "coarse" else self.outcomes["coarse"].x
        return minimize(self.responses, x0, maxeval=4 if name == "coarse" else 20,
                        verbose=False, checkpoint=checkpoint, resume=resume)

    def result(self):
        self.calls.append("result")
        res = self.outcomes["fine"]
        return RunResult.from_record(self.record("fine"), {"f": float(res.fun)}, x=res.x,
                                     history=res.history)

    def write(self, result):
        self.calls.append("write")
        super().write(result)

    def write_stopped(self, result):
        self.calls.append("write_stopped")
        super().write_stopped(result)


def test_the_hooks_run_in_order_and_the_phases_checkpoint(tmp_path):
    calls, out = [], tmp_path / "out"
    ck = out / "ck.npz"
    result = Parabola(calls, out=str(out), checkpoint=str(ck)).run()
    assert calls == ["check", "build", "coarse", "fine", "result", "write"]
    assert result.status == "maxeval_reached" and result.checkpoint == str(ck)
    assert result.x == pytest.approx([0.3] * 3, abs=1e-6) and result["f"] < 1e-12
    assert load_checkpoint(out / "ck.coarse.npz")["evaluations"] == 4
    assert load_checkpoint(ck)["evaluations"] == 20
    saved = json.loads((out / "result.json").read_text())
    assert saved["status"] == "maxeval_reached" and saved["result"]["f"] == result["f"]
    assert len(saved["objective_history"]) == 20


def test_arguments_and_paths_are_checked_before_the_model(tmp_path):
    calls = []
    with pytest.raises(ValueError, match="bad must be False"):
        Parabola(calls, bad=True, out=str(tmp_path / "o")).run()
    assert calls == ["check"] and not (tmp_path / "o").exists()
    (tmp_path / "file").write_text("")
    for kw, error in ((dict(out=str(tmp_path / "file")), "out: "),
                      (dict(checkpoint=str(tmp_path / "file" / "ck.npz")), "checkpoint: "),
                      (dict(resume=str(tmp_path / "ck.npz")), "continues the fine phase"),
                      (dict(resume=str(tmp_path / "ck.coarse.npz")), "no checkpoint at")):
        calls.clear()
        with pytest.raises((OSError, ValueError), match=error):
            Parabola(calls, **kw).run()
        assert calls == ["check"], kw
    (tmp_path / "bad.coarse.npz").write_text("not an archive")
    with pytest.raises(CheckpointError, match="not a topopt checkpoint"):
        Parabola(calls, resume=str(tmp_path / "bad.coarse.npz")).run()


def test_an_interrupted_phase_ends_the_run_and_its_checkpoint_resumes(tmp_path, monkeypatch):
    calls, out = [], tmp_path / "out"
    ck, coarse = out / "ck.npz", out / "ck.coarse.npz"
    interrupt_at(monkeypatch, Parabola, 2)
    stopped = Parabola(calls, out=str(out), checkpoint=str(ck)).run()
    assert calls == ["check", "build", "coarse", "write_stopped"]
    assert (stopped.status, stopped.signal, stopped.evaluations) == ("interrupted", "SIGINT", 2)
    assert stopped["phase"] == "coarse" and stopped.checkpoint == str(coarse)
    assert stopped.resume == f"--resume {coarse}" and not ck.exists()
    saved = json.loads((out / "result.json").read_text())
    assert (saved["status"], saved["result"]["phase"], saved["resume"]) == (
        "interrupted", "coarse", f"--resume {coarse}")
    assert saved["objective_history"] == [h["objective"] for h in stopped.history]
    assert load_checkpoint(coarse)["evaluations"] == 2
    monkeypatch.undo()
    calls.clear()
    run = Parabola(calls, out=str(out), checkpoint=str(ck), resume=str(coarse))
    result = run.run()
    assert calls == ["check", "build", "coarse", "fine", "result", "write"]
    assert result.status == "maxeval_reached" and result.x == pytest.approx([0.3] * 3, abs=1e-6)
    assert load_checkpoint(coarse)["evaluations"] == 4          # 2 before the resume, 2 after
    carried = before_resume(run.outcomes["coarse"], "seconds", 0.0)
    assert carried > 0 and run.elapsed() >= carried + run._resumed("fine")


def test_an_interrupted_last_phase_is_the_runs_result(tmp_path, monkeypatch):
    calls = []
    interrupt_at(monkeypatch, Parabola, 7)                       # the fine phase's 3rd
    result = Parabola(calls, out=str(tmp_path), checkpoint=str(tmp_path / "ck.npz")).run()
    assert calls == ["check", "build", "coarse", "fine", "result", "write"]
    assert (result.status, result.evaluations) == ("interrupted", 3)
    assert result.resume == f"--resume {tmp_path / 'ck.npz'}"


# --------------------------------------------------------------------------
# the four gallery runs on the template: the numbers of before

def test_run_focus_goes_through_the_template(tmp_path, through_template):
    result = em_focus.run(h=8.0, maxeval=2, out=str(tmp_path))
    assert through_template == [("_FocusRun", ("focus",))]
    for key, value in BEFORE["focus"].items():
        assert result[key] == pytest.approx(value, rel=1e-9), key
    assert json.loads((tmp_path / "result.json").read_text())["result"]["g"] == result["g"]


def test_run_reliable_goes_through_the_template(tmp_path, through_template):
    result = reliable_bracket.run(n=12, maxeval=6, samples=1000, out=str(tmp_path),
                                  checkpoint=str(tmp_path / "ck.npz"))
    assert through_template == [("_ReliableRun", ("deterministic", "reliability"))]
    assert result["c_allow"] == pytest.approx(BEFORE["reliable"]["c_allow"], rel=1e-9)
    assert result["reliability_based"]["pf_mc"] == pytest.approx(BEFORE["reliable"]["pf_mc"],
                                                                 rel=1e-9)
    assert result["reliability_based"]["nominal_compliance"] == pytest.approx(
        BEFORE["reliable"]["nominal_compliance"], rel=1e-9)
    assert load_checkpoint(tmp_path / "ck.deterministic.npz")["evaluations"] == 6


def test_run_robust_goes_through_the_template(tmp_path, through_template):
    result = robust_cantilever.run(nelx=12, nely=6, rmin=1.5, maxeval=6, samples=100,
                                   out=str(tmp_path), checkpoint=str(tmp_path / "ck.npz"))
    assert through_template == [("_RobustRun", ("deterministic", "mean_optimal", "robust"))]
    assert result["robust_objective"] == pytest.approx(BEFORE["robust"]["robust_objective"],
                                                       rel=1e-9)
    assert result["mean_optimal"]["mean"] == pytest.approx(BEFORE["robust"]["mean"], rel=1e-9)
    assert result["deterministic"]["nominal_compliance"] == pytest.approx(
        BEFORE["robust"]["deterministic"], rel=1e-9)
    for name in ("ck.deterministic.npz", "ck.mean_optimal.npz", "ck.npz"):
        assert load_checkpoint(tmp_path / name)["evaluations"] == 6, name


def test_run_stress_reference_goes_through_the_template(tmp_path, through_template):
    result = l_bracket.run(n=20, maxeval=24, out=str(tmp_path),
                           checkpoint=str(tmp_path / "ck.npz"))
    assert through_template == [("_StressRun", ("stress", "reference"))]
    assert result["max_von_mises"] == pytest.approx(BEFORE["stress"]["max_von_mises"], rel=1e-9)
    assert result["volume"] == pytest.approx(BEFORE["stress"]["volume"], rel=1e-9)
    assert result["compliance_design"]["compliance"] == pytest.approx(
        BEFORE["stress"]["reference"], rel=1e-9)
    assert result.checkpoint == str(tmp_path / "ck.npz") and "phase" not in result.metrics
    assert load_checkpoint(tmp_path / "ck.reference.npz")["evaluations"] == 24


# --------------------------------------------------------------------------
# interrupted: each phase keeps its checkpoint, its last good design and history on disk

def test_run_focus_interrupted_writes_its_last_good_design(tmp_path, monkeypatch):
    interrupt_at(monkeypatch, FocusProblem, 2)
    result = em_focus.run(h=8.0, maxeval=5, out=str(tmp_path),
                          checkpoint=str(tmp_path / "ck.npz"))
    assert (result.status, result.evaluations) == ("interrupted", 2)
    saved = json.loads((tmp_path / "result.json").read_text())
    assert (saved["status"], saved["resume"]) == ("interrupted", f"--resume {tmp_path}/ck.npz")
    assert saved["result"]["g"] == result["g"] and (tmp_path / "design.png").exists()
    assert load_checkpoint(tmp_path / "ck.npz")["evaluations"] == 2


def test_run_reliable_interrupted_in_its_deterministic_phase(tmp_path, monkeypatch):
    interrupt_at(monkeypatch, ComplianceProblem, 3)
    result = reliable_bracket.run(n=12, maxeval=6, samples=1000, out=str(tmp_path),
                                  checkpoint=str(tmp_path / "ck.npz"))
    det_ck = tmp_path / "ck.deterministic.npz"
    assert (result.status, result["phase"], result.checkpoint) == ("interrupted",
                                                                   "deterministic", str(det_ck))
    saved = json.loads((tmp_path / "result.json").read_text())
    assert (saved["phase"], saved["status"], saved["evaluations"]) == ("deterministic",
                                                                       "interrupted", 3)
    assert (tmp_path / "deterministic.png").exists() and not (tmp_path / "ck.npz").exists()


def test_run_robust_interrupted_in_an_early_phase_writes_it_and_resumes(tmp_path, monkeypatch):
    """Before the template an interruption of the deterministic or mean-optimal phase
    wrote nothing and could not resume."""
    opts = dict(nelx=12, nely=6, rmin=1.5, maxeval=6, samples=100, out=str(tmp_path),
                checkpoint=str(tmp_path / "ck.npz"))
    interrupt_at(monkeypatch, RobustCompliance, 2, when=lambda self: self.k == 0)
    stopped = robust_cantilever.run(**opts)
    mean_ck = tmp_path / "ck.mean_optimal.npz"
    assert (stopped.status, stopped["phase"], stopped.evaluations, stopped.checkpoint) == (
        "interrupted", "mean_optimal", 2, str(mean_ck))
    assert stopped["objective"] == pytest.approx(stopped["mean"] + 3 * stopped["std"])
    saved = json.loads((tmp_path / "result.json").read_text())
    assert (saved["status"], saved["result"]["phase"], saved["resume"]) == (
        "interrupted", "mean_optimal", f"--resume {mean_ck}")
    assert len(saved["objective_history"]) == 2
    for name in ("design.png", "history.png", "design.npz"):
        assert (tmp_path / name).exists(), name
    monkeypatch.undo()
    done = robust_cantilever.run(**opts, resume=str(mean_ck))
    assert done.status == "maxeval_reached" and "phase" not in done.metrics
    assert done["deterministic"]["nominal_compliance"] == pytest.approx(
        BEFORE["robust"]["deterministic"], rel=1e-9)      # the finished phase, from its file


def test_run_robust_interrupted_exits_with_the_resume_line(tmp_path, monkeypatch, capsys):
    interrupt_at(monkeypatch, ComplianceProblem, 2)
    out = tmp_path / "rc"
    with pytest.raises(SystemExit) as stop:
        robust_cantilever.main(["--nelx", "12", "--nely", "6", "--rmin", "1.5", "--maxeval",
                                "6", "--samples", "100", "--out", str(out), "--quiet"])
    assert stop.value.code == 130
    assert (f"interrupted after 2 evaluations; resume with --resume "
            f"{out / 'checkpoint.deterministic.npz'}") in capsys.readouterr().err


def test_run_stress_reference_interrupted_in_either_phase(tmp_path, monkeypatch):
    opts = dict(n=20, maxeval=24, out=str(tmp_path), checkpoint=str(tmp_path / "ck.npz"))
    interrupt_at(monkeypatch, MinimumVolumeStress, 3)
    stopped = l_bracket.run(**opts)
    assert (stopped.status, stopped["phase"], stopped.evaluations) == ("interrupted",
                                                                       "stress", 3)
    assert "compliance_design" not in stopped.metrics
    assert (tmp_path / "design.png").exists() and not (tmp_path / "compliance_design.png").exists()
    assert json.loads((tmp_path / "result.json").read_text())["result"]["phase"] == "stress"
    monkeypatch.undo()
    interrupt_at(monkeypatch, ComplianceProblem, 2)
    ref = l_bracket.run(**opts, resume=str(tmp_path / "ck.npz"))
    assert (ref.status, ref["phase"], ref.checkpoint) == (
        "interrupted", "reference", str(tmp_path / "ck.reference.npz"))
    assert ref["compliance_design"]["status"] == "interrupted"
    assert (tmp_path / "compliance_design.png").exists()
