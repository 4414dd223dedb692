"""Mixed precision in the voxel multigrid: the same answers, the CG iterations, the solve time.

The 3-D cantilever of ``problems/cantilever3d.py`` on the voxel path (as
``scripts/benchmarks/benchmark_scale.py`` builds it: volfrac 0.3, rmin 1.5, warm-started
CG) runs `--evals` MMA iterations with ``precision="double"``; its designs are
then replayed, in order and from a fresh problem each, with ``"double"`` and
``"mixed"`` (`topopt.grid.multigrid`: the V-cycle in float32), so both see
the same design history. Reported per design: compliance and sensitivities
``dc/dx`` (`topopt.ad.value_and_gradient`) of mixed against double (relative
difference, norm-wise and the largest entry against the largest), and the
CG iterations per solve. Then, at the last design, `--repeats` cold solves
of each precision alternated (CG from zero, no warm start): the median wall
time of a solve, of the setup per design (Galerkin cells, smoothers), the
iterations, and the coarse cells' bytes. The replay's seconds per design
include the first call's compile of the numba kernels (float32 ones for
mixed) where numba is installed; the cold solves come after it.

    python scripts/benchmarks/benchmark_precision.py [--shapes 80x40x40,128x64x64] [--evals 4]
        [--repeats 5] [--rtol 1e-8]

writes ``results/benchmark_precision.json`` (``--out``) with the machine, the commit and
the cold solves' spread (`harness`). ``--smallest``: 16 x 8 x 8, 2 evaluations, one cold
solve each.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)

import harness  # noqa: E402


def _problem(shape, precision: str, rtol: float, warm: bool = True):
    from topopt_problems import cantilever3d
    from topopt.formulations.compliance import ComplianceProblem
    _, model, f = cantilever3d.setup(*shape, voxel=True)
    return ComplianceProblem(model, f, 0.3, 1.5, solver="voxel", solver_options={
        "warm_start": warm, "rtol": rtol, "precision": precision})


def history(shape, evals: int, rtol: float) -> list:
    """The designs of an MMA run with ``precision="double"``."""
    problem, designs = _problem(shape, "double", rtol), []
    problem.run(maxeval=evals, verbose=False,
                callback=lambda record, x: designs.append(np.array(x, dtype=float)))
    return designs


def replay(shape, designs: list, precision: str, rtol: float) -> dict:
    """Compliance, sensitivities and CG iterations of each design, in order."""
    from topopt import ad
    problem = _problem(shape, precision, rtol)
    out = {"compliance": [], "gradient": [], "iterations": [], "seconds": []}
    log = problem.system._iterative.log
    for x in designs:
        n, t0 = len(log), time.perf_counter()
        c, g = ad.value_and_gradient(problem.compliance, x)
        out["seconds"].append(time.perf_counter() - t0)
        out["compliance"].append(float(c))
        out["gradient"].append(np.asarray(g, dtype=float))
        out["iterations"].append(list(log[n:]))
    return out


def solves(shape, x, rtol: float, repeats: int) -> dict:
    """Cold solves at design `x`, the precisions alternated: medians and iterations."""
    from topopt import ad
    from topopt.grid import GridMultigrid
    prob = _problem(shape, "double", rtol, warm=False)
    S = prob.system
    E = np.asarray(ad.value(prob.stiffness(x)), dtype=float)
    b = S.restrict(prob.f)
    out = {}
    mgs = {p: GridMultigrid(S.grid, S.operator.K0, S.components, S._free, S.springs,
                            {"rtol": rtol, "precision": p}) for p in ("double", "mixed")}
    for p, mg in mgs.items():
        out[p] = {"solve_s": [], "setup_s": [], "iterations": [],
                  "levels": [list(g.shape) for g in mg.grids]}
    for _ in range(repeats):
        for p, mg in mgs.items():
            t0 = time.perf_counter()
            F = mg.factor(E)
            t1 = time.perf_counter()
            F.solve(b)
            t2 = time.perf_counter()
            rec = out[p]
            rec["setup_s"].append(t1 - t0)
            rec["solve_s"].append(t2 - t1)
            rec["iterations"].append(F.last_iterations)
    for p, rec in out.items():
        rec["coarse_cell_bytes"] = int(sum(c.nbytes for c in mgs[p]._cells(E)))
        rec["timers_s"] = {k: v / repeats for k, v in mgs[p].timers.items()}
        rec["spread"] = {k: harness.spread(rec[k]) for k in ("solve_s", "setup_s")}
        rec["solve_s_median"] = rec["spread"]["solve_s"]["median"]
        rec["setup_s_median"] = rec["spread"]["setup_s"]["median"]
    out["solve_speedup"] = out["double"]["solve_s_median"] / out["mixed"]["solve_s_median"]
    return out


def compare(d: dict, m: dict) -> list:
    rows = []
    for k in range(len(d["compliance"])):
        gd, gm = d["gradient"][k], m["gradient"][k]
        rows.append({
            "compliance_double": d["compliance"][k], "compliance_mixed": m["compliance"][k],
            "compliance_rel": abs(m["compliance"][k] - d["compliance"][k]) / abs(d["compliance"][k]),
            "gradient_rel_norm": float(np.linalg.norm(gm - gd) / np.linalg.norm(gd)),
            "gradient_rel_max": float(np.max(np.abs(gm - gd)) / np.max(np.abs(gd))),
            "iterations_double": d["iterations"][k], "iterations_mixed": m["iterations"][k],
            "seconds_double": d["seconds"][k], "seconds_mixed": m["seconds"][k]})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="80x40x40,128x64x64")
    ap.add_argument("--evals", type=int, default=4)
    ap.add_argument("--rtol", type=float, default=1e-8)
    harness.options(ap, repeats=5, out=os.path.join(ROOT, "results", "benchmark_precision.json"),
                    smallest="16 x 8 x 8, 2 evaluations")
    args = ap.parse_args(argv)
    if args.smallest:
        args.shapes, args.evals, args.repeats = "16x8x8", 2, 1
    report = harness.record({"command": harness.command(__file__, argv), "rtol": args.rtol,
                             "evals": args.evals, "repeats": args.repeats, "cases": []},
                            args.repeats)
    for text in args.shapes.split(","):
        shape = tuple(int(n) for n in text.split("x"))
        designs = history(shape, args.evals, args.rtol)
        d, m = (replay(shape, designs, p, args.rtol) for p in ("double", "mixed"))
        rows = compare(d, m)
        its = {p: [i for r in rec["iterations"] for i in r] for p, rec in (("double", d),
                                                                           ("mixed", m))}
        case = {"shape": list(shape), "designs": rows,
                "iterations_per_solve": {p: float(np.mean(v)) for p, v in its.items()},
                "cold_solves": solves(shape, designs[-1], args.rtol, args.repeats)}
        case["iterations_ratio"] = (case["iterations_per_solve"]["mixed"]
                                    / case["iterations_per_solve"]["double"])
        report["cases"].append(case)
        print(json.dumps(case, indent=1), flush=True)
    harness.write(args.out, report)


if __name__ == "__main__":
    main()
