"""Benchmark of the CG loop behind ``solver="mg-cg"``: scipy's `cg` against a hand-written one.

Three loops on the same matrix with the same geometric-multigrid V-cycle
as preconditioner, from zero, to the same relative residual ``rtol``
(default 1e-8): ``pcg`` (the library's: scipy's `cg` with the positive
definiteness checks, `topopt.fem.krylov`), ``scipy_cg`` (bare) and
``handwritten`` (the loop the library had before, kept here as the
reference). Reported: CG iterations, the median (and least) time of `--repeat` solves
and the true relative residual, per design. The designs are the uniform
start (``x = volfrac``) and the iterate after `--iterations` MMA steps of the
compliance problem (warm-started MG-CG, as `problems/cantilever3d.py`).

Usage::

    python scripts/benchmark_iterative.py                   # both cases below
    python scripts/benchmark_iterative.py --case cantilever3d
    python scripts/benchmark_iterative.py --case mbb --json

Cases: the 3-D cantilever 40 x 20 x 20 (55 k dofs) and the MBB beam 600 x 200
(241 k dofs).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import scipy.sparse.linalg as spla

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "problems"))

from topopt.fem.krylov import pcg  # noqa: E402
from topopt.problem import ComplianceProblem  # noqa: E402

CASES = {"cantilever3d": dict(nelx=40, nely=20, nelz=20, volfrac=0.3, rmin=1.5),
         "mbb": dict(nelx=600, nely=200, volfrac=0.5, rmin=2.4)}


def make_problem(case: str) -> ComplianceProblem:
    """The compliance problem of `case` with the MG-CG solver."""
    c = CASES[case]
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


def handwritten_cg(A, b, M, rtol: float, maxiter: int) -> tuple[np.ndarray, int]:
    """The preconditioned CG loop that `topopt.fem.krylov.pcg` replaced (the reference)."""
    def dot(x, y):
        return float(np.einsum("i,i->", x, y))
    tol = rtol * np.sqrt(dot(b, b))
    x, r = np.zeros_like(b), b.copy()
    p, rz, it = None, 0.0, 0
    while np.sqrt(dot(r, r)) > tol:
        if it >= maxiter:
            raise RuntimeError("handwritten CG did not converge")
        z = M(r)
        rz_new = dot(r, z)
        p = z if p is None else z + (rz_new / rz) * p
        rz = rz_new
        q = A @ p
        alpha = rz / dot(p, q)
        x += alpha * p
        r -= alpha * q
        it += 1
    return x, it


def compare(problem: ComplianceProblem, x, repeat: int, rtol: float) -> dict:
    """Iterations, median seconds and final relative residual of both CG loops at design `x`."""
    S = problem.system
    S.solver_options.update(warm_start=False, rtol=rtol)
    S._cache = None
    F = S.factorize(np.asarray(problem.stiffness(x)))
    A, b = F.matrix, problem.f[S.free]
    out = {}
    for name, fun in (("pcg", lambda: pcg(A, b, F.M, rtol=rtol, maxiter=1000)),
                      ("scipy_cg", lambda: scipy_cg(A, b, F.M, rtol, 1000)),
                      ("handwritten", lambda: handwritten_cg(A, b, F.M, rtol, 1000))):
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            u, its = fun()
            times.append(time.perf_counter() - t0)
        out[name] = dict(iterations=int(its), seconds=float(np.median(times)),
                         min_seconds=float(np.min(times)),
                         residual=float(np.linalg.norm(A @ u - b) / np.linalg.norm(b)))
    return out


def run(case: str, iterations: int, repeat: int, rtol: float) -> dict:
    problem = make_problem(case)
    x0 = np.full(problem.system.n_el, CASES[case]["volfrac"])
    results = {"uniform": compare(problem, x0, repeat, rtol)}
    if iterations:
        problem.system.solver_options.update(warm_start=True)
        res = problem.run(maxeval=iterations)
        results[f"after {iterations} MMA steps"] = compare(problem, np.asarray(res["x"]),
                                                            repeat, rtol)
    return {"case": case, "dofs": int(problem.system.free.size), "rtol": rtol,
            "designs": results}


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=sorted(CASES) + ["all"], default="all")
    parser.add_argument("--iterations", type=int, default=10,
                        help="MMA steps before the second design (0: uniform only)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rtol", type=float, default=1e-8)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.iterations < 0 or args.repeat < 1 or not 0 < args.rtol < 1:
        parser.error("--iterations >= 0, --repeat >= 1 and 0 < --rtol < 1 required")
    cases = sorted(CASES) if args.case == "all" else [args.case]
    out = [run(c, args.iterations, args.repeat, args.rtol) for c in cases]
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for r in out:
            print(f"{r['case']} ({r['dofs']} free dofs, rtol {r['rtol']:.0e})")
            for design, d in r["designs"].items():
                for name, v in d.items():
                    print(f"  {design:22s} {name:11s} {v['iterations']:4d} iterations "
                          f"{v['seconds'] * 1e3:8.1f} ms (min {v['min_seconds'] * 1e3:.1f})  residual {v['residual']:.1e}")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
