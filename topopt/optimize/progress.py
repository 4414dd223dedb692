"""Progress lines of `topopt.optimize.minimize` (``verbose=True``, on stderr).

A header naming the columns (and the objective's scale, when one is
applied), one line per stage when it starts (its parameters, e.g.
``beta=16``, and budget), one per evaluation, one when a signal asks for a
stop, and a summary line at the end (converged / budget reached /
interrupted / stopped).

Columns of an evaluation line: evaluation number, stage (``s0``,
``s1``, ...), objective in the user's unit (``f * objective_scale``), the
largest constraint value (feasible when <= 0; a value within `FEASIBLE_TOL`
of 0, such as the roundoff ``+2.2e-16`` of a constraint met exactly, reads
``feasible``), the largest change of a
variable since the previous design, ``grey(vars)`` (the optimizer's
`topopt.design.variable_grey_level` of the variables, not the physical
``grey_level`` of ``x_phys``), elapsed time and the time the rest of the
evaluation budget would take at the rate so far (an upper bound: a run may
converge before its budget).

Examples
--------
>>> print(header_line("compliance", 2.0))
eval stage compliance (= 2 * minimized f) | cons: max g (<= 0; feasible: |g| <= 1e-08) | ch: max |dx| | grey(vars) | t: elapsed | left: budget estimate
>>> evaluation_line({"evaluation": 3, "stage": 0, "objective": 2.5,
...                  "max_constraint": None, "change": 0.125, "grey": 0.5, "time": 1.25},
...                 scale=2.0, left=10.0)
'    3 s0 obj  5.000000e+00 cons - ch 1.250e-01 grey(vars) 0.500 t     1.25s left    10.0s'
>>> evaluation_line({"evaluation": 1, "stage": 0, "objective": 2.5,
...                  "max_constraint": 2.220446e-16, "change": None, "grey": 0.5, "time": 0.5})
'    1 s0 obj  2.500000e+00 cons feasible ch - grey(vars) 0.500 t     0.50s left -s'
>>> stage_line(1, {"beta": 16}, 50)
'stage 1: beta=16, 50 evaluations'
>>> summary_line("ftol_reached", 12, 3.5, 41.0, "compliance")
'done: converged (ftol_reached) after 12 evaluations in 3.50s; compliance 4.100000e+01'
"""

from __future__ import annotations

import os
import sys

#: Constraint values within this of 0 print as ``feasible`` by default; a run passes
#: its own ``constraint_tol`` (`minimize`'s default is the same 1e-8).
FEASIBLE_TOL = 1e-8

_CONVERGED = ("success", "stopval_reached", "ftol_reached", "xtol_reached")
_OUTCOME = {"maxeval_reached": "budget reached", "interrupted": "interrupted",
            "stopped": "stopped by the callback"}


def show(line: str) -> None:
    """Print a progress line on stderr, at once."""
    print(line, file=sys.stderr, flush=True)


def show_unbuffered(line: str) -> None:
    """`show` from a signal handler: straight to stderr's file descriptor, since the handler
    may run inside a print to stderr, whose buffered writer then refuses a reentrant call."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):   # stderr without a descriptor
        show(line)
        return
    os.write(fd, f"{line}\n".encode())


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _constraint(g, tol: float) -> str:
    """The largest constraint: ``+1.234e-01`` (violated), ``-1.234e-01``, ``feasible``."""
    if g is not None and abs(g) <= tol:
        return "feasible"
    return _fmt(g, "+.3e")


def header_line(name: str, scale: float, tol: float = FEASIBLE_TOL) -> str:
    """The columns of `evaluation_line`; says when the objective is scaled and the
    tolerance `tol` (the run's ``constraint_tol``) within which a constraint reads feasible."""
    obj = name if scale == 1.0 else f"{name} (= {scale:.6g} * minimized f)"
    return (f"eval stage {obj} | cons: max g (<= 0; feasible: |g| <= {tol:g}) | "
            f"ch: max |dx| | grey(vars) | "
            f"t: elapsed | left: budget estimate")


def stage_line(index: int, params: dict, budget: int) -> str:
    """``stage I: beta=16, N evaluations`` (``no parameters`` when it has none)."""
    shown = ", ".join(f"{k}={v}" for k, v in params.items()) or "no parameters"
    return f"stage {index}: {shown}, {budget} evaluations"


def evaluation_line(rec: dict, scale: float = 1.0, left: float | None = None,
                    tol: float = FEASIBLE_TOL) -> str:
    """One history record (see `minimize`) as one line; the objective times `scale`,
    `left` the estimated seconds for the rest of the budget (None: unknown), a
    constraint within `tol` of 0 shown as ``feasible``."""
    return (f"{rec['evaluation']:5d} s{rec['stage']} obj {rec['objective'] * scale: .6e} "
            f"cons {_constraint(rec['max_constraint'], tol)} ch {_fmt(rec['change'], '.3e')} "
            f"grey(vars) {_fmt(rec['grey'], '.3f')} t {rec['time']:8.2f}s "
            f"left {_fmt(left, '7.1f')}s")


def time_left(elapsed: float, done: int, remaining: int | None) -> float | None:
    """Seconds for `remaining` evaluations at the rate of `done` in `elapsed` s."""
    if remaining is None or done <= 0:
        return None
    return elapsed / done * max(remaining, 0)


def signal_line(signal_name: str) -> str:
    """The first SIGINT/SIGTERM: the run stops after the current evaluation."""
    return f"{signal_name}: stopping after this evaluation (again to abort)"


def outcome(status: str) -> str:
    """``converged``, ``budget reached``, ``interrupted``, ... for a run's status."""
    if status in _CONVERGED:
        return "converged"
    return _OUTCOME.get(status, "ended")


def summary_line(status: str, evaluations: int, seconds: float, fun: float | None,
                 name: str = "obj") -> str:
    """The last line of a run: its outcome, evaluations, time and objective."""
    return (f"done: {outcome(status)} ({status}) after {evaluations} evaluations in "
            f"{seconds:.2f}s; {name} {_fmt(fun, '.6e')}")
