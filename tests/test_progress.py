"""The progress lines of `minimize` (`topopt.optimize.progress`), issue 13."""

import re

import numpy as np
import pytest

from topopt.optimize import progress
from topopt.optimize import Stage, minimize

C = np.array([1.0, 4.0, 9.0])


def _f(x, **params):
    return np.sum(C / x)


def _g(x, **params):
    return np.sum(x) - 1.5


def _run(capsys, **kw):
    res = minimize(_f, np.full(3, 0.5), [_g], bounds=(0.01, 1.0), ftol_rel=0.0, **kw)
    return res, capsys.readouterr().err.splitlines()


EVAL = re.compile(r"\s*(\d+) s(\d+) obj\s+(\S+) cons (\S+) ch (\S+) grey\(vars\) (\S+) "
                  r"t\s+(\S+)s left\s+(\S+)s")


def test_objective_is_shown_in_the_users_unit_and_the_header_says_the_scale(capsys):
    """`objective_scale` multiplies the minimized f in every line; the history keeps f."""
    res, err = _run(capsys, maxeval=5, objective_scale=4.0, objective_name="compliance")
    assert err[0].startswith("eval stage compliance (= 4 * minimized f) | ")
    evals = [EVAL.fullmatch(ln) for ln in err if EVAL.fullmatch(ln)]
    assert len(evals) == 5 == len(res.history)
    for m, rec in zip(evals, res.history):
        assert int(m[1]) == rec["evaluation"]
        assert float(m[3]) == pytest.approx(4.0 * rec["objective"], rel=1e-6)
        assert float(m[6]) == pytest.approx(rec["grey"], abs=5e-4)
    # first design x = 0.5: f = (1 + 4 + 9) / 0.5 = 28, shown as 4 * 28
    assert float(evals[0][3]) == pytest.approx(112.0, rel=1e-6)
    assert err[-1] == progress.summary_line("maxeval_reached", 5, res.seconds,
                                            4.0 * res.fun, "compliance")


def test_unscaled_header_names_the_objective_only(capsys):
    _, err = _run(capsys, maxeval=2)
    assert err[0].startswith("eval stage obj | cons: max g (<= 0; feasible: |g| <= 1e-08) | "
                             "ch: max |dx| | "
                             "grey(vars) | t: elapsed | left: budget estimate")


def test_time_left_counts_down_to_zero_at_the_end_of_the_budget(capsys):
    _, err = _run(capsys, maxeval=4)
    left = [float(EVAL.fullmatch(ln)[8]) for ln in err if EVAL.fullmatch(ln)]
    assert len(left) == 4 and left[-1] == 0.0 and all(v >= 0 for v in left)


def test_stage_line_shown_when_the_stage_changes(capsys):
    stages = [Stage(maxeval=3, params={"beta": 1}), Stage(maxeval=2, params={"beta": 16})]
    res, err = _run(capsys, stages=stages)
    stage_lines = [ln for ln in err if ln.startswith("stage ")]
    assert stage_lines == ["stage 0: beta=1, 3 evaluations", "stage 1: beta=16, 2 evaluations"]
    i0, i1 = err.index(stage_lines[0]), err.index(stage_lines[1])
    assert [int(EVAL.fullmatch(ln)[2]) for ln in err[i0 + 1:i1]] == [0, 0, 0]
    assert err[-1].startswith("done: budget reached (maxeval_reached) after 5 evaluations")


def test_a_callback_stop_is_named_in_the_summary(capsys):
    res, err = _run(capsys, maxeval=50, callback=lambda rec, x: rec["evaluation"] >= 3)
    assert res.status == "stopped"
    assert err[-1].startswith("done: stopped by the callback (stopped) after 3 evaluations")


@pytest.mark.parametrize("status, word", [
    ("ftol_reached", "converged"), ("xtol_reached", "converged"), ("success", "converged"),
    ("maxeval_reached", "budget reached"), ("interrupted", "interrupted"),
    ("roundoff_limited", "ended")])
def test_outcome_of_each_status(status, word):
    assert progress.outcome(status) == word
    assert progress.summary_line(status, 7, 1.0, 2.0).startswith(f"done: {word} ({status}) "
                                                                  f"after 7 evaluations")


@pytest.mark.parametrize("elapsed, done, remaining, expected", [
    (10.0, 5, 15, 30.0), (3.0, 3, 0, 0.0), (1.0, 0, 4, None), (1.0, 2, None, None)])
def test_time_left_is_the_rate_so_far_times_the_budget_left(elapsed, done, remaining, expected):
    assert progress.time_left(elapsed, done, remaining) == expected


@pytest.mark.parametrize("kw, exc, match", [
    ({"objective_scale": 0.0}, ValueError, "objective_scale must be"),
    ({"objective_scale": float("nan")}, ValueError, "objective_scale"),
    ({"objective_name": ""}, TypeError, "objective_name must be a non-empty str"),
    ({"objective_name": 3}, TypeError, "objective_name must be a non-empty str")])
def test_bad_progress_options_are_rejected_before_any_evaluation(kw, exc, match):
    calls = []
    with pytest.raises(exc, match=match):
        minimize(lambda x: calls.append(x) or np.sum(x), np.full(2, 0.5), maxeval=2, **kw)
    assert calls == []


@pytest.mark.parametrize("g,shown", [
    (2.220446049250313e-16, "feasible"),      # a feasible start met to roundoff
    (-1e-9, "feasible"), (1e-8, "feasible"),
    (-0.25, "-2.500e-01"), (1.5e-8, "+1.500e-08"), (0.3, "+3.000e-01"), (None, "-"),
])
def test_constraint_column_reads_feasible_within_the_tolerance(g, shown):
    from topopt.optimize.progress import evaluation_line
    line = evaluation_line({"evaluation": 1, "stage": 0, "objective": 1.0, "max_constraint": g,
                            "change": None, "grey": None, "time": 0.0})
    assert f" cons {shown} ch " in line
    assert EVAL.fullmatch(line)


def test_constraint_column_uses_the_runs_constraint_tol(capsys):
    """A run with ``constraint_tol=1e-3`` shows it in the header and reads 5e-4 as feasible."""
    from topopt.optimize.progress import evaluation_line
    rec = {"evaluation": 1, "stage": 0, "objective": 1.0, "max_constraint": 5e-4,
           "change": None, "grey": None, "time": 0.0}
    assert " cons feasible ch " in evaluation_line(rec, tol=1e-3)
    assert " cons +5.000e-04 ch " in evaluation_line(rec)          # the default 1e-8
    minimize(lambda x: (np.sum(x ** 2), np.sum(x) - 1.0), np.full(2, 0.5), maxeval=2,
             constraint_tol=1e-3)
    assert "feasible: |g| <= 0.001) | " in capsys.readouterr().err
