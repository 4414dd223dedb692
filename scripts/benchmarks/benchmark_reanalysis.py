"""Reanalysis on and off: seconds per design iteration and the final compliance (issue 16).

For the MBB beam (2-D) and the 3-D cantilever with a direct backend
(CHOLMOD when installed, else SuperLU), `ComplianceProblem.run` for
``--evals`` evaluations with ``solver_options={"reanalysis": False}`` and
``True`` (`topopt.fem.solvers.reanalysis`), the two alternating, ``--repeats`` times;
the table gives the median seconds per evaluation, their ratio, the final
compliances and their relative difference, and how the designs were
solved (factorizations, reanalysed designs, fallbacks, CG iterations per
reanalysed design).

    python scripts/benchmarks/benchmark_reanalysis.py --out results/benchmark_reanalysis.json
    python scripts/benchmarks/benchmark_reanalysis.py --quick

The JSON holds the cases under ``cases`` with the machine, the commit and each median's
spread (`harness`). ``--smallest`` is ``--quick``. Needs the ``fast`` extra for CHOLMOD.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import harness  # noqa: E402

from topopt_problems import cantilever3d, mbb_beam  # noqa: E402
from topopt import fem  # noqa: E402
from topopt.formulations.compliance import ComplianceProblem  # noqa: E402

CASES = {"mbb_600x200": ("mbb", (600, 200)), "mbb_300x100": ("mbb", (300, 100)),
         "cantilever3d_40x20x20": ("cantilever3d", (40, 20, 20)),
         "cantilever3d_24x12x12": ("cantilever3d", (24, 12, 12))}
QUICK = {"mbb_60x20": ("mbb", (60, 20)), "cantilever3d_8x4x4": ("cantilever3d", (8, 4, 4))}


def one_run(kind: str, sizes: tuple, solver: str, on: bool, evals: int,
            maxiter: int | None = None) -> dict:
    """One optimization; its time per evaluation and how its designs were solved."""
    if kind == "mbb":
        _, model, f = mbb_beam.setup(*sizes)
        volfrac, rmin = 0.5, 2.4                         # as scripts/benchmarks/benchmark.py
    else:
        _, model, f = cantilever3d.setup(*sizes)
        volfrac, rmin = 0.3, 1.5
    problem = ComplianceProblem(model, f, volfrac, rmin, solver=solver,
                                solver_options={"reanalysis": on, **(
                                    {"maxiter": maxiter} if maxiter else {})})
    t0 = time.perf_counter()
    result = problem.run(maxeval=evals, verbose=False)
    seconds = time.perf_counter() - t0
    c = problem.system.counts
    out = dict(seconds_per_evaluation=seconds / result.evaluations,
               compliance=result["compliance"], evaluations=result.evaluations,
               factorizations=int(c["factorizations"]), reanalyses=int(c["reanalyses"]),
               fallbacks=int(c["reanalysis_failures"]),
               cg_per_reanalysis=(c["reanalysis_iterations"] / c["reanalyses"]
                                  if c["reanalyses"] else None),
               dofs=int(problem.system.free.size))
    del problem, model
    gc.collect()
    return out


def run_case(kind: str, sizes: tuple, solver: str, evals: int, repeat: int,
             maxiter: int | None = None) -> dict:
    runs = {False: [], True: []}
    for _ in range(repeat):
        for on in (False, True):                    # alternating: the same machine state
            runs[on].append(one_run(kind, sizes, solver, on, evals, maxiter))
            r = runs[on][-1]
            print(f"  {kind} {sizes} reanalysis={on}: {r['seconds_per_evaluation']:.3f} s/eval, "
                  f"c = {r['compliance']:.6g}", file=sys.stderr, flush=True)
    spread = {on: harness.spread(r["seconds_per_evaluation"] for r in runs[on]) for on in runs}
    med = {on: s["median"] for on, s in spread.items()}
    return dict(kind=kind, sizes=list(sizes), solver=solver, evaluations=evals,
                repeat=repeat, dofs=runs[False][0]["dofs"],
                seconds_off=med[False], seconds_on=med[True], ratio=med[True] / med[False],
                spread={"seconds_off": spread[False], "seconds_on": spread[True]},
                compliance_off=runs[False][0]["compliance"],
                compliance_on=runs[True][0]["compliance"],
                compliance_difference=runs[True][0]["compliance"]
                / runs[False][0]["compliance"] - 1,
                off=runs[False], on=runs[True])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two small cases")
    parser.add_argument("--cases", nargs="*", default=None, help="case names to run")
    parser.add_argument("--evals", type=int, default=None, help="evaluations (default 100)")
    parser.add_argument("--maxiter", type=int, default=None,
                        help="CG iterations before a factorization (default: the library's)")
    harness.options(parser, repeats=None, smallest="--quick")
    args = parser.parse_args(argv)
    args.quick = args.quick or args.smallest
    table = QUICK if args.quick else CASES
    names = args.cases or list(table)
    unknown = sorted(set(names) - set(table))
    if unknown:
        parser.error(f"unknown cases {unknown}; choose from {sorted(table)}")
    solver = "cholmod" if fem.solvers.BACKENDS["cholmod"].available() else "superlu"
    evals = args.evals or (40 if args.quick else 100)
    repeat = args.repeats or (1 if args.quick else 3)
    out = {name: run_case(*table[name], solver, evals, repeat, args.maxiter) for name in names}
    for name, r in out.items():
        print(f"{name:24s} {r['dofs']:8d} dofs  off {r['seconds_off']:.3f} s  on "
              f"{r['seconds_on']:.3f} s  ratio {r['ratio']:.2f}  c {r['compliance_off']:.6g} / "
              f"{r['compliance_on']:.6g} ({r['compliance_difference']:+.1e})")
    if args.out:
        harness.write(args.out, harness.record(
            {"command": harness.command(__file__, argv), "cases": out}, repeat))
    return out


if __name__ == "__main__":
    main()
