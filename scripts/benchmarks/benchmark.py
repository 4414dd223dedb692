"""Time per design iteration, split by phase, and the linear-solver floor.

    python scripts/benchmarks/benchmark.py [--problem mbb|cantilever3d] [--nelx 240 --nely 80]
                                [--nelz 40] [--solver all|auto|cholmod|superlu|...]
                                [--reanalysis off|on|both]
                                [--iters 20] [--repeats 3] [--json] [--no-pymoto]
                                [--smallest] [--out FILE]

For each solver backend: MMA on the compliance problem for ``--iters``
designs, ``--repeats`` times; prints medians over the repeats of the seconds
per design iteration in assembly (``K.data = P @ E``), solve (factorization
+ forward solve, or the forward MG-CG solve), adjoint (adjoint solve +
element sensitivities), filter (F and F^T), optimizer (the rest: MMA, the
tape, the projection and SIMP), and FE solves per iteration. ``floor_s`` is
one assembly + factorization + solve of the final matrix (or one MG-CG
solve) timed alone in the same run. ``per_iteration_s`` is the wall time of
the whole run over its designs (one-time setup such as the symbolic
analysis and ``c0`` included); ``steady_iteration_s`` the median time
between consecutive evaluations. ``--reanalysis`` runs the direct backends
without (``off``, the default), with (``on``) or both ways
(`topopt.fem.solvers.reanalysis`; a row's solver is then e.g. ``cholmod+reanalysis``,
and ``reanalyses`` counts the designs solved by CG on an earlier factor).
With pyMOTO importable, its equivalent MBB problem
runs at the same size (`pymoto_mbb.py`, one fresh process per run because
pyMOTO re-evaluates every network a process has built) and the speed
ratios are reported. ``--out`` writes the rows with the machine, the commit and each
number's spread over the repeats (`harness`); ``--smallest`` runs 30 x 10 (3-D: 6 x 3 x 3)
for 5 iterations once, without pyMOTO.
"""

from __future__ import annotations

import argparse
import gc
import contextlib
import ctypes
import json
import os
import sys
import tempfile
import time

import numpy as np

import harness
import topopt
from topopt_problems import cantilever3d, mbb_beam
from topopt import fem
from topopt.formulations.compliance import ComplianceProblem

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_problem(args, solver):
    solver, _, extra = solver.partition("+")
    options = None
    if solver != "auto" and not fem.solvers.BACKENDS[solver].iterative:
        options = {"reanalysis": extra == "reanalysis"}
    if args.problem == "mbb":
        mesh, model, f = mbb_beam.setup(args.nelx, args.nely)
        volfrac, rmin = 0.5, args.rmin if args.rmin else 2.4
    else:
        mesh, model, f = cantilever3d.setup(args.nelx, args.nely, args.nelz)
        volfrac, rmin = 0.3, args.rmin if args.rmin else 1.5
    problem = ComplianceProblem(model, f, volfrac, rmin, solver=solver, solver_options=options)
    if problem.system.solver in fem.solvers.ITERATIVE:
        problem.system.solver_options["warm_start"] = True        # as cantilever3d.run
    return problem


def floor_seconds(problem, x, repeat: int = 3) -> float:
    """One factorization (or MG setup) + solve of the matrix at `x`, timed alone."""
    S = problem.system
    E = np.asarray(problem.stiffness(x))
    warm = S.solver_options.get("warm_start")
    S.solver_options["warm_start"] = False                    # MG-CG from zero

    def once():
        S._cache = None
        S.free_solve(S.factorize(E, exact=True), problem.f[S.free])

    seconds, _ = harness.timed(once, repeat)
    S.solver_options.pop("warm_start")
    if warm is not None:
        S.solver_options["warm_start"] = warm
    return seconds["median"]


@contextlib.contextmanager
def nlopt_output(lines: list):
    """Collect what NLopt's C code prints (its MMA verbosity) into `lines`."""
    libc = ctypes.CDLL(None)        # NLopt prints with C stdio: buffered unless PYTHONUNBUFFERED
    sys.stdout.flush()
    libc.fflush(None)
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+") as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            yield lines
        finally:
            libc.fflush(None)       # into tmp before fd 1 is restored
            os.dup2(saved, 1)
            os.close(saved)
            tmp.seek(0)
            lines.extend(tmp.read().splitlines())


def one_run(args, solver) -> dict:
    problem = make_problem(args, solver)
    S, flt = problem.system, problem.filter
    S.timers.clear()
    flt.seconds = 0.0
    lines: list = []
    t0 = time.perf_counter()
    with nlopt_output(lines):
        result = problem.run(maxeval=args.iters, verbose=False, mma_params={"verbosity": 1})
    total = time.perf_counter() - t0
    # one "dual converged" per design after the first; "inner iteration" marks the
    # designs of MMA's conservativeness loop inside an outer iteration
    duals = sum("MMA dual converged" in line for line in lines)
    inner = sum("MMA inner iteration" in line for line in lines)
    outer = max(duals - inner, 1)
    n = result["evaluations"]
    T = S.timers
    parts = {
        "assembly_s": T["assembly"] / n,
        "solve_s": (T["factorization"] + T["solve"]) / n,
        "adjoint_s": (T["adjoint"] + T["sensitivity"]) / n,
        "filter_s": flt.seconds / n,
    }
    per_iteration = total / n
    parts["optimizer_s"] = per_iteration - sum(parts.values())
    stamps = np.array([h["time"] for h in result["history"]])
    steady = harness.spread(np.diff(stamps))["median"] if stamps.size > 1 else per_iteration
    cg = cg_iterations(S)                                     # before the floor's solves
    return {"per_iteration_s": per_iteration, "steady_iteration_s": steady, **parts,
            "fe_solves_per_iteration": result["fe_solves"] / outer,
            "fe_solves_per_evaluation": result["fe_solves_per_iteration"],
            "mma_iterations": outer,
            "floor_s": floor_seconds(problem, result["x"]), "solver": solver,
            "reanalyses": int(S.counts["reanalyses"]),
            "dofs": int(S.free.size), "elements": int(S.n_el),
            "compliance": result["compliance"], **cg}


def cg_iterations(S) -> dict:
    """CG iterations per solve (mean and max) of an iterative backend, else nothing."""
    if not S.counts.get("cg_solves"):
        return {}
    return {"cg_iterations": S.counts["cg_iterations"] / S.counts["cg_solves"],
            "cg_iterations_max": int(max(S._iterative.log))}


def median_runs(args, solver) -> dict:
    runs = []
    for _ in range(args.repeats):
        gc.collect()            # scikit-fem meshes sit in reference cycles: free the last run
        runs.append(one_run(args, solver))
    out = harness.combine(runs)
    out["ratio_to_floor"] = out["per_iteration_s"] / out["floor_s"]
    out["steady_ratio_to_floor"] = out["steady_iteration_s"] / out["floor_s"]
    return out


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problem", choices=("mbb", "cantilever3d"), default="mbb")
    parser.add_argument("--nelx", type=int, default=240)
    parser.add_argument("--nely", type=int, default=80)
    parser.add_argument("--nelz", type=int, default=40)
    parser.add_argument("--rmin", type=float, default=None,
                        help="filter radius (default 2.4 for mbb, 1.5 for cantilever3d)")
    parser.add_argument("--solver", default="all",
                        help="a backend name, 'auto', or 'all' installed backends")
    parser.add_argument("--iters", type=int, default=20, help="design iterations per run")
    harness.options(parser, repeats=3, smallest="30 x 10 (3-D: 6 x 3 x 3), 5 iterations")
    parser.add_argument("--reanalysis", choices=("off", "on", "both"), default="off",
                        help="direct backends without or with reanalysis, or both")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    parser.add_argument("--no-pymoto", action="store_true", help="skip the pyMOTO comparison")
    args = parser.parse_args(argv)
    if args.smallest:
        args.nelx, args.nely, args.nelz = (30, 10, 4) if args.problem == "mbb" else (6, 3, 3)
        args.iters, args.repeats, args.no_pymoto = 5, 1, True
    if min(args.nelx, args.nely, args.nelz, args.iters, args.repeats) < 1:
        parser.error("sizes, --iters and --repeats must be positive")
    topopt.tune_malloc()                 # as the problem scripts (topopt.cli)
    solvers = fem.available_solvers() if args.solver == "all" else [args.solver]
    if args.problem == "cantilever3d" and args.solver == "all":
        solvers = fem.available_solvers(iterative=True)
    solvers = [name + suffix for name in solvers for suffix in (
        ("",) if name in fem.solvers.ITERATIVE else
        {"off": ("",), "on": ("+reanalysis",), "both": ("", "+reanalysis")}[args.reanalysis])]
    rows = [dict(problem=args.problem, nelx=args.nelx, nely=args.nely,
                 nelz=args.nelz if args.problem == "cantilever3d" else None,
                 **median_runs(args, s)) for s in solvers]
    if args.problem == "mbb" and not args.no_pymoto:
        try:
            from pymoto_mbb import pymoto_per_iteration
        except ImportError:
            pymoto = None
        else:
            pymoto = pymoto_per_iteration(args.nelx, args.nely, args.iters, args.repeats)
        if pymoto:
            for row in rows:
                row["pymoto"] = pymoto
                row["speedup_vs_pymoto"] = {k: v / row["per_iteration_s"]
                                            for k, v in pymoto.items()}
    if args.out:
        harness.write(args.out, harness.record(
            {"command": harness.command(__file__, argv), "iters": args.iters, "rows": rows}, args.repeats))
    if args.json:
        print(json.dumps(rows if len(rows) > 1 else rows[0], indent=1))
        return rows
    for r in rows:
        print(f"{r['problem']} {r['nelx']}x{r['nely']}" + (f"x{r['nelz']}" if r["nelz"] else "")
              + f"  ({r['elements']} elements, {r['dofs']} free dofs), solver {r['solver']}, "
              f"median of {r['repeats']} runs x {args.iters} iterations")
        for key in ("per_iteration_s", "assembly_s", "solve_s", "adjoint_s", "filter_s",
                    "optimizer_s", "floor_s"):
            print(f"  {key:18s} {r[key] * 1e3:10.2f} ms")
        print(f"  {'steady_iteration_s':18s} {r['steady_iteration_s'] * 1e3:10.2f} ms   "
              "(median time between evaluations: no one-time setup)")
        print(f"  {'per_iteration/floor':18s} {r['ratio_to_floor']:10.3f}   (steady "
              f"{r['steady_ratio_to_floor']:.3f})")
        print(f"  {'FE solves/iter':18s} {r['fe_solves_per_iteration']:10.3f}   (per MMA "
              f"outer iteration; {r['fe_solves_per_evaluation']:.3f} per evaluated design)")
        for k, v in r.get("speedup_vs_pymoto", {}).items():
            print(f"  pyMOTO {k}: {r['pymoto'][k] * 1e3:.1f} ms/iteration -> topopt is "
                  f"{v:.2f}x faster")
    return rows


if __name__ == "__main__":
    main()
