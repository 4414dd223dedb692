"""An infeasible start runs MMA with Svanberg's elastic variables (`topopt.optimize.run`)."""

import nlopt
import numpy as np
import pytest

from topopt.optimize import run as mma_run
from topopt.optimize.driver import minimize
from topopt.formulations.compliance import ComplianceProblem

from topopt_problems import mbb_beam


def spy_dimensions(monkeypatch) -> list:
    """The number of NLopt variables of each stage."""
    seen = []
    original = mma_run._Run._nlopt

    def spy(self, *args):
        opt = original(self, *args)
        seen.append(opt.get_dimension())
        return opt

    monkeypatch.setattr(mma_run._Run, "_nlopt", spy)
    return seen


@pytest.mark.parametrize("dual", [nlopt.LD_SLSQP, nlopt.LD_MMA], ids=["slsqp", "mma"])
@pytest.mark.parametrize("x0", [0.3, 0.7, 0.9, 1.0])
def test_mbb_from_any_uniform_start(x0, dual, monkeypatch):
    """MBB 60 x 20 from x = 0.7, 0.9, 1 (volume above volfrac 0.5): 233.71 (top88) within 0.5 %.

    Without the elastic variables the SLSQP dual stopped after 1 evaluation
    (``roundoff_limited``) and NLopt's MMA dual fell to an all-void design
    (compliance 7e8 at x0 = 0.9).
    """
    seen = spy_dimensions(monkeypatch)
    _, model, f = mbb_beam.setup(60, 20)
    problem = ComplianceProblem(model, f, 0.5, 2.4)
    result = problem.run(maxeval=100, x0=np.full(problem.n, x0), verbose=False,
                         mma_params={"dual_algorithm": dual})
    assert result.status == "maxeval_reached" and result.evaluations == 100
    assert abs(result["compliance"] / 233.71 - 1) <= 5e-3
    assert abs(result["volume"] / 0.5 - 1) <= 1e-4
    first = next(i for i, h in enumerate(result.history) if h["max_constraint"] <= 1e-4)
    assert first <= (0 if x0 < 0.5 else 5)
    assert seen == [problem.n + (x0 > 0.5)]        # one elastic variable, only when infeasible


def test_elastic_variables_on_a_convex_problem():
    """``sum(c / x)`` with ``sum(x) <= 1.2`` from ``x = (1, 1)``: the optimum ``x ~ sqrt(c)``."""
    c = np.array([1.0, 4.0])
    res = minimize(lambda x: np.stack([np.sum(c / x), np.sum(x) - 1.2]), np.ones(2),
                   bounds=(0.01, 1.0), maxeval=80, ftol_rel=1e-12, verbose=False)
    assert res.history[0]["max_constraint"] == pytest.approx(0.8)
    np.testing.assert_allclose(res.x, [0.4, 0.8], atol=1e-4)


def test_a_feasible_start_has_no_elastic_variable(monkeypatch):
    seen = spy_dimensions(monkeypatch)
    c = np.array([1.0, 4.0])
    minimize(lambda x: np.stack([np.sum(c / x), np.sum(x) - 1.2]), np.full(2, 0.5),
             bounds=(0.01, 1.0), maxeval=10, verbose=False)
    assert seen == [2]
