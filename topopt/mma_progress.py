"""Progress lines of `topopt.optimize.minimize` (``verbose=True``, on stderr).

One line per stage (its parameters and budget), one per evaluation
(evaluation, stage, objective, max constraint, max change, grey level,
time), one when a signal asks for a stop.

Examples
--------
>>> evaluation_line({"evaluation": 3, "stage": 0, "objective": 2.5,
...                  "max_constraint": None, "change": 0.125, "grey": 0.5, "time": 1.25})
'    3 s0 obj  2.500000e+00 cons - ch 1.250e-01 grey 0.500 t     1.25s'
"""

from __future__ import annotations

import sys


def show(line: str) -> None:
    """Print a progress line on stderr, at once."""
    print(line, file=sys.stderr, flush=True)


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def stage_line(index: int, params: dict, budget: int) -> str:
    """``stage I: params {...}, N evaluations``."""
    return f"stage {index}: params {params}, {budget} evaluations"


def evaluation_line(rec: dict) -> str:
    """One history record (see `minimize`) as one line."""
    return (f"{rec['evaluation']:5d} s{rec['stage']} obj {rec['objective']: .6e} "
            f"cons {_fmt(rec['max_constraint'], '+.3e')} ch {_fmt(rec['change'], '.3e')} "
            f"grey {_fmt(rec['grey'], '.3f')} t {rec['time']:8.2f}s")


def signal_line(signal_name: str) -> str:
    """The first SIGINT/SIGTERM: the run stops after the current evaluation."""
    return f"{signal_name}: stopping after this evaluation (again to abort)"
