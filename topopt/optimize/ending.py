"""How a run ended, beyond the optimizer's reason: infeasible, grey, worse than its start.

NLopt's status says why MMA stopped (``maxeval_reached``, ``ftol_reached``,
...), not whether the design it stopped at is any good. `ending` adds the
figures and a `verdict`:

* ``"infeasible"``: the final design violates a constraint by more than
  `FEASIBILITY_TOL` (constraints of order 1: ``V / V* - 1``, ``sigma /
  sigma_allow - 1``, ``ln pf - ln pa``). 1e-3 is the driver's own line
  between a design MMA recovers from by itself and one it starts with
  elastic variables (`topopt.optimize.nlopt_stage.ELASTIC_FROM`); NLopt's
  ``constraint_tol`` (1e-8) is its acceptance between iterates, which a run
  that ends on its budget seldom meets exactly: the committed gallery's
  defaults end at up to +7.5e-4 (``multimaterial_beam``), +2.2e-4
  (``mesh_bracket``). ``max_violation`` records the exact figure.
* ``"grey"``: the physical design's grey level (`topopt.design.grey_level`,
  Sigmund's ``mean(4 x (1 - x))``) is above `GREY_LIMIT` = 0.5. A uniform
  start at ``volfrac`` in [0.15, 0.85] is above it (1 at 0.5); filtered
  designs without projection end grey by design, at 0.06-0.42 in the
  committed gallery (``eigen_beam`` 0.42, ``heat_sink`` 0.36, ``mbb_beam``
  0.33), and are not flagged. Only problems with a physical density report
  it (`topopt.io.RunResult`); `minimize` knows variables, not densities.
* ``"worse_than_start"``: the final objective (as minimized) is worse than
  the first evaluation's by more than `WORSE_TOL` of its size. A start
  that violates its constraints may explain it (``start_violation``);
  with continuation the stages' objectives differ (a projection's
  ``beta``), so it compares what the progress lines show.

A verdict of ``"ok"`` flags nothing; otherwise the flags joined by ``", "``.

Examples
--------
>>> e = ending([2.66], fun=0.5, fun_start=0.5, start_constraints=[2.66])
>>> e["verdict"], e["max_violation"]
('infeasible', 2.66)
>>> ending_line(e)
'ended infeasible: a constraint is violated by 2.66 (> 0.001)'
>>> ending([-0.1], fun=0.2, fun_start=1.0)["verdict"]
'ok'
"""

from __future__ import annotations

import math
from typing import Sequence

__all__ = ["ending", "last_stage_ending", "verdict", "with_grey", "ending_line", "FEASIBILITY_TOL", "GREY_LIMIT",
           "WORSE_TOL"]

#: A final design violating a constraint by more than this is ``"infeasible"``.
FEASIBILITY_TOL = 1e-3
#: A physical design whose grey level is above this is ``"grey"``.
GREY_LIMIT = 0.5
#: A final objective worse than the start's by more than this share of ``|f_start|``.
WORSE_TOL = 0.01

_FLAGS = ("infeasible", "grey", "worse_than_start")


def _violation(constraints) -> float | None:
    """``max(0, max g)``; None without constraints (or values)."""
    if constraints is None or len(constraints) == 0:
        return None
    return max(0.0, max(float(g) for g in constraints))


def verdict(ending_: dict) -> str:
    """``"ok"`` or the flags of an `ending` record, joined by ``", "``."""
    flags = [f for f in _FLAGS if ending_.get(f)]
    return ", ".join(flags) if flags else "ok"


def ending(constraints: Sequence[float] | None, fun: float | None = None,
           fun_start: float | None = None, start_constraints: Sequence[float] | None = None,
           grey_level: float | None = None) -> dict:
    """The figures of a run's final design and its `verdict` (module notes).

    Parameters
    ----------
    constraints : sequence of float or None
        The final design's constraint values (feasible when <= 0).
    fun, fun_start : float, optional
        The final and the first evaluation's objective, as minimized.
    start_constraints : sequence of float, optional
        The first evaluation's constraint values.
    grey_level : float, optional
        The physical design's grey level (None: not a density).

    Returns
    -------
    dict
        ``verdict``, ``infeasible``, ``max_violation``, ``feasibility_tol``,
        ``grey``, ``grey_level``, ``grey_limit``, ``worse_than_start``,
        ``objective_start``, ``objective``, ``start_violation``.
    """
    violation = _violation(constraints)
    finite = fun is not None and fun_start is not None and math.isfinite(fun) and \
        math.isfinite(fun_start)
    out = {
        "infeasible": violation is not None and violation > FEASIBILITY_TOL,
        "max_violation": violation, "feasibility_tol": FEASIBILITY_TOL,
        "grey": grey_level is not None and grey_level > GREY_LIMIT,
        "grey_level": grey_level, "grey_limit": GREY_LIMIT,
        "worse_than_start": bool(finite and fun - fun_start > WORSE_TOL * abs(fun_start)),
        "objective_start": fun_start, "objective": fun,
        "start_violation": _violation(start_constraints),
    }
    return {"verdict": verdict(out), **out}


def last_stage_ending(res) -> None:
    """Judge a staged run's `res` against its last stage's first evaluation, in place.

    A continuation parameter that changes the objective from stage to stage
    (the Brinkman convexity ``q`` of flow problems) makes the start's value no
    yardstick for the end: it is another function. `res.ending` and
    `res.verdict` are recomputed from the history's first record of the last
    stage; nothing happens without a history or an ending.
    """
    if not (res.history and res.ending):
        return
    last = max(h.get("stage", 0) for h in res.history)
    first = next(h for h in res.history if h.get("stage", 0) == last)
    res.ending = ending(res.constraints, res.fun, first.get("objective"),
                        first.get("constraints"))
    res.verdict = res.ending["verdict"]


def with_grey(ending_: dict, grey_level: float | None) -> dict:
    """`ending_` with the physical design's grey level (and the verdict again)."""
    out = dict(ending_, grey_level=grey_level, grey_limit=GREY_LIMIT,
               grey=grey_level is not None and grey_level > GREY_LIMIT)
    out["verdict"] = verdict(out)
    return out


def ending_line(ending_: dict) -> str:
    """One line for a flagged ending (``""`` for ``"ok"``): what and by how much."""
    parts = []
    if ending_.get("infeasible"):
        parts.append(f"infeasible: a constraint is violated by {ending_['max_violation']:.3g} "
                     f"(> {ending_['feasibility_tol']:g})")
    if ending_.get("grey"):
        parts.append(f"grey: grey level {ending_['grey_level']:.3f} (> "
                     f"{ending_['grey_limit']:g})")
    if ending_.get("worse_than_start"):
        sv = ending_.get("start_violation")
        parts.append(f"worse than its start: objective {ending_['objective']:.4g} against "
                     f"{ending_['objective_start']:.4g} at the start (as minimized)" +
                     (f"; the start violated a constraint by {sv:.3g}"
                      if sv is not None and sv > ending_["feasibility_tol"] else ""))
    return ("ended " + "; ".join(parts)) if parts else ""
