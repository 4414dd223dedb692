"""Benchmark of the CG loop behind ``solver="mg-cg"``: our `pcg` against scipy's `cg`.

Both on the same matrix with the same geometric-multigrid V-cycle as
preconditioner (scipy's through a `LinearOperator`), from zero, to the same
relative residual ``rtol`` (default 1e-8). Reported: CG iterations, the
median (with least and largest: `harness.timed`) time of `--repeats` solves and the true relative
residual, per design; ``--busy N`` keeps N other processes spinning on the
CPUs meanwhile (a shared machine). The designs are the uniform
start (``x = volfrac``) and the iterate after `--iterations` MMA steps of the
compliance problem (warm-started MG-CG, as `problems/cantilever3d.py`).

Usage::

    python scripts/benchmarks/benchmark_iterative.py                   # both cases below
    python scripts/benchmarks/benchmark_iterative.py --case cantilever3d
    python scripts/benchmarks/benchmark_iterative.py --case mbb --json

Cases: the 3-D cantilever 40 x 20 x 20 (55 k dofs) and the MBB beam 600 x 200
(241 k dofs). ``--out`` writes them with the machine and the commit; ``--smallest``: the
cantilever at 8 x 4 x 4, 2 MMA steps, one solve each.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import sys

import numpy as np
import scipy.sparse.linalg as spla

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "problems"))

import harness  # noqa: E402
from topopt.fem.solvers.krylov import pcg  # noqa: E402
from topopt.formulations.compliance import ComplianceProblem  # noqa: E402

CASES = {"cantilever3d": dict(nelx=40, nely=20, nelz=20, volfrac=0.3, rmin=1.5),
         "mbb": dict(nelx=600, nely=200, volfrac=0.5, rmin=2.4)}
SMALLEST = {"cantilever3d": dict(nelx=8, nely=4, nelz=4, volfrac=0.3, rmin=1.5)}


def make_problem(case: str, sizes: dict = CASES) -> ComplianceProblem:
    """The compliance problem of `case` with the MG-CG solver."""
    c = sizes[case]
    if case == "mbb":
        import mbb_beam
        mesh, model, f = mbb_beam.setup(c["nelx"], c["nely"])
    else:
        import cantilever3d
        mesh, model, f = cantilever3d.setup(c["nelx"], c["nely"], c["nelz"])
    return ComplianceProblem(model, f, c["volfrac"], c["rmin"], solver="mg-cg")


def scipy_cg(A, b, M, rtol: float, maxiter: int) -> tuple[np.ndarray, int]:
    """scipy's CG with the V-cycle `M` as preconditioner; iterations counted by callback."""
    count = [0]

    def callback(_):
        count[0] += 1
    op = spla.LinearOperator(A.shape, matvec=M, dtype=float)
    x, info = spla.cg(A, b, rtol=rtol, atol=0.0, maxiter=maxiter, M=op, callback=callback)
    if info != 0:
        raise RuntimeError(f"scipy cg: info = {info}")
    return x, count[0]


def _spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def busy(n: int):
    """`n` processes spinning on the CPUs meanwhile (the machine as other users leave it)."""
    procs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(n)]
    for proc in procs:
        proc.start()
    try:
        yield
    finally:
        for proc in procs:
            proc.terminate()
            proc.join()


def compare(problem: ComplianceProblem, x, repeat: int, rtol: float) -> dict:
    """Iterations, median seconds and final relative residual of both CG loops at design `x`."""
    S = problem.system
    S.solver_options.update(warm_start=False, rtol=rtol)
    S._cache = None
    F = S.factorize(np.asarray(problem.stiffness(x)))
    A, b = F.matrix, problem.f[S.free]
    out = {}
    for name, fun in (("pcg", lambda: pcg(A, b, F.M, rtol=rtol, maxiter=1000)),
                      ("scipy_cg", lambda: scipy_cg(A, b, F.M, rtol, 1000))):
        seconds, (u, its) = harness.timed(fun, repeat)
        out[name] = dict(iterations=int(its), seconds=seconds["median"],
                         min_seconds=seconds["min"], spread=seconds,
                         residual=float(np.linalg.norm(A @ u - b) / np.linalg.norm(b)))
    return out


def run(case: str, iterations: int, repeat: int, rtol: float, n_busy: int = 0,
        sizes: dict = CASES) -> dict:
    problem = make_problem(case, sizes)
    designs = {"uniform": np.full(problem.system.n_el, sizes[case]["volfrac"])}
    if iterations:
        problem.system.solver_options.update(warm_start=True)
        designs[f"after {iterations} MMA steps"] = np.asarray(
            problem.run(maxeval=iterations)["x"])
    with busy(n_busy):
        results = {name: compare(problem, x, repeat, rtol) for name, x in designs.items()}
    return {"case": case, "dofs": int(problem.system.free.size), "rtol": rtol,
            "busy": n_busy, "designs": results}


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=sorted(CASES) + ["all"], default="all")
    parser.add_argument("--iterations", type=int, default=10,
                        help="MMA steps before the second design (0: uniform only)")
    harness.options(parser, repeats=3, smallest="the cantilever at 8 x 4 x 4, 2 MMA steps")
    parser.add_argument("--rtol", type=float, default=1e-8)
    parser.add_argument("--busy", type=int, default=0,
                        help="processes spinning on the CPUs during the timed solves")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sizes = SMALLEST if args.smallest else CASES
    if args.smallest:
        args.case, args.iterations, args.repeats = "cantilever3d", 2, 1
    if args.iterations < 0 or args.repeats < 1 or args.busy < 0 or not 0 < args.rtol < 1:
        parser.error("--iterations >= 0, --repeats >= 1, --busy >= 0 and 0 < --rtol < 1 "
                     "required")
    cases = sorted(CASES) if args.case == "all" else [args.case]
    out = [run(c, args.iterations, args.repeats, args.rtol, args.busy, sizes) for c in cases]
    if args.out:
        harness.write(args.out, harness.record(
            {"command": harness.command(__file__, argv), "cases": out}, args.repeats))
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for r in out:
            print(f"{r['case']} ({r['dofs']} free dofs, rtol {r['rtol']:.0e}, "
                  f"{r['busy']} busy processes)")
            for design, d in r["designs"].items():
                for name, v in d.items():
                    print(f"  {design:22s} {name:9s} {v['iterations']:4d} iterations "
                          f"{v['seconds'] * 1e3:8.1f} ms (min {v['min_seconds'] * 1e3:.1f})  residual {v['residual']:.1e}")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
