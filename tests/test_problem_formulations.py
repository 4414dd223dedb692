"""The library homes of the problem scripts' physics (issue 24): focus, reliable,
robust_compliance, stress_reference, used directly rather than through the scripts."""

import numpy as np
import pytest

from topopt import fem
from topopt.formulations.compliance import ComplianceProblem
from topopt.formulations.focus import FocusProblem, enhancement, intensity
from topopt.formulations.reliable import ReliableCompliance, phase_checkpoints, pf_summary
from topopt.formulations.robust_compliance import RobustCompliance, check_robust
from topopt.formulations.stress_reference import StressSchedule, run_stress_reference

from topopt_problems import em_focus, l_bracket, reliable_bracket, robust_cantilever


def test_scripts_build_the_library_classes():
    assert isinstance(em_focus.EMFocus(h=8.0), FocusProblem)
    assert isinstance(reliable_bracket.ReliableBracket(8), ReliableCompliance)


def test_focus_figures():
    assert enhancement(0.25) == 1.0
    assert intensity(np.array([1.0, 1j]), 2 * np.eye(2)) == 4.0


def test_reliable_summary_and_phases(tmp_path):
    prob = reliable_bracket.ReliableBracket(8)
    x = np.full(64, 0.4)
    prob.c_allow = 3 * float(prob.compliance.compliance(x))
    s = pf_summary(prob, x, 1000, 0)
    assert s["meets_pa"] == (s["pf_mc"] - 3 * s["pf_mc_std"] <= prob.pa)
    assert s["ln_pf_sorm"] < 0
    with pytest.raises(FileNotFoundError, match="deterministic design"):
        phase_checkpoints(None, str(tmp_path / "ck.npz"))


def test_robust_checks_and_moments():
    with pytest.raises(ValueError, match="no uncertainty"):
        check_robust(3.0, 0.0, 0.0, 100, None, None, None)
    mesh, model, B = robust_cantilever.setup(8, 4)
    mu = robust_cantilever.MU
    det = ComplianceProblem(model, B @ mu, 0.4, 1.5)
    x = np.full(det.n, 0.4)
    mean, std = RobustCompliance(det, B, mu, np.diag([0.0, 0.0]), 3.0).moments(x)
    assert float(mean) == pytest.approx(float(det.compliance(x)), rel=1e-10)
    assert float(std) == pytest.approx(0.0, abs=1e-8)


def test_stress_reference_refuses_fewer_evaluations_than_blocks():
    schedule = StressSchedule((None, 2.0, 4.0), 0.5, 0.1, 0, {})
    with pytest.raises(ValueError, match="maxeval must be >= 3"):
        run_stress_reference(lambda: None, schedule, 1.2, 2.5, 0.5, 8.0, 1.0, 2)
    assert l_bracket.SCHEDULE.betas == l_bracket.BETAS
