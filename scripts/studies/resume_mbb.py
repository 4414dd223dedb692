"""What a resumed run reproduces: the MBB beam straight versus interrupted and resumed.

The half MBB beam of `problems/mbb_beam.py` (top88: 60 x 20, volfrac 0.5,
rmin 2.4, density filter, the script's classic MMA) runs N evaluations
straight, and again with a SIGINT at evaluation N/2 (sent from inside the
responses, so it lands at exactly N/2) followed by a resume from the
checkpoint to N. NLopt keeps MMA's asymptotes internal, so the resumed run
restarts MMA's move limits at the checkpoint design. For each N it prints
the compliance after N evaluations both ways and the evaluations needed to
come within 0.5 % of top88's published 233.71 (Andreassen et al. 2011,
Fig. 4).

    python scripts/studies/resume_mbb.py [--nelx 60 --nely 20] [--n 20 40 60 80 120 200] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile

import numpy as np

import topopt
from topopt_problems.mbb_beam import setup as mbb_setup
from topopt.formulations.compliance import ComplianceProblem

TOP88 = 233.71                       # Andreassen et al. 2011, Fig. 4 (density filter)


def _problem(nelx: int, nely: int, interrupt_at: int | None = None) -> ComplianceProblem:
    mesh, model, f = mbb_setup(nelx, nely)
    problem = ComplianceProblem(model, f, volfrac=0.5, rmin=2.4)
    if interrupt_at is not None:
        responses, calls = problem.responses, [0]

        def interrupted(x, beta=None):
            out = responses(x, beta)
            calls[0] += 1
            if calls[0] == interrupt_at:
                os.kill(os.getpid(), signal.SIGINT)      # minimize stops after this one
            return out
        problem.responses = interrupted
    return problem


def evaluations_to(compliances, target: float, rel: float = 0.005) -> int | None:
    """First evaluation (1-based) whose compliance is within `rel` of `target`.

    Examples
    --------
    >>> evaluations_to([300.0, 240.0, 234.5, 233.9], 233.71)
    3
    """
    close = np.flatnonzero(np.abs(np.asarray(compliances) - target) <= rel * target)
    return int(close[0]) + 1 if close.size else None


def compare(nelx: int, nely: int, n: int, folder: str) -> dict:
    """Straight N evaluations versus SIGINT at N/2 and resume to N."""
    if n < 2:
        raise ValueError(f"n must be >= 2 (interrupted at n // 2), got {n}")
    straight_problem = _problem(nelx, nely)
    straight = straight_problem.run(maxeval=n, verbose=False)
    ck = os.path.join(folder, f"mbb_{n}.npz")
    first = _problem(nelx, nely, interrupt_at=n // 2).run(maxeval=n, verbose=False,
                                                          checkpoint=ck)
    if first.status != "interrupted" or first.evaluations != n // 2:
        raise RuntimeError(f"the interruption did not land at {n // 2}: {first.status}, "
                           f"{first.evaluations} evaluations")
    resumed_problem = _problem(nelx, nely)
    resumed = resumed_problem.run(maxeval=n, verbose=False, checkpoint=ck, resume=ck)
    out = {"n": n, "interrupted_at": n // 2}
    for name, res, prob in (("straight", straight, straight_problem),
                            ("resumed", resumed, resumed_problem)):
        c = [h["objective"] * prob.c0 for h in res.history]
        out[name] = {"compliance": res["compliance"], "evaluations": res.evaluations,
                     "last_evaluated": c[-1], "to_0.5%": evaluations_to(c, TOP88)}
    out["relative_difference"] = abs(out["resumed"]["compliance"] /
                                     out["straight"]["compliance"] - 1)
    return out


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nelx", type=int, default=60)
    parser.add_argument("--nely", type=int, default=20)
    parser.add_argument("--n", type=int, nargs="+", default=[20, 40, 60, 80, 120, 200],
                        help="evaluations N of each comparison")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    topopt.tune_malloc()                 # as the problem scripts (topopt.cli)
    with tempfile.TemporaryDirectory() as folder:
        rows = [compare(args.nelx, args.nely, n, folder) for n in args.n]
    if args.json:
        print(json.dumps(rows, indent=2))
        return rows
    print(f"MBB {args.nelx} x {args.nely}: straight vs SIGINT at N/2 + resume; "
          f"evaluations to within 0.5 % of {TOP88}")
    print(f"{'N':>5} {'c straight':>11} {'c resumed':>11} {'diff':>8} "
          f"{'to 0.5% straight':>17} {'to 0.5% resumed':>16}")
    for r in rows:
        s, q = r["straight"], r["resumed"]
        print(f"{r['n']:5d} {s['compliance']:11.3f} {q['compliance']:11.3f} "
              f"{100 * r['relative_difference']:7.3f}% {str(s['to_0.5%']):>17} "
              f"{str(q['to_0.5%']):>16}")
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
