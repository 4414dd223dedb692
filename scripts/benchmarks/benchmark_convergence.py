"""Time to a good design: compliance against evaluations and wall time (issue 16).

For the half MBB beam of top88 (60x20, 150x50, 300x100; volfrac 0.5,
penal 3, density filter rmin = 2.4 nelx / 60) and the 3-D cantilever
40x20x20 (volfrac 0.3, rmin 1.5, multigrid CG) three optimizers run from the
uniform design ``x = volfrac``:

* ``ours``   -- `topopt.formulations.ComplianceProblem.run` (NLopt MMA);
* ``oc``     -- a top88-style optimality-criteria loop written here on the
  same filter and FE solve (Andreassen et al. 2011, eqs. (3)-(4): the
  heuristic fixed-point update with move 0.2, damping eta = 1/2 and the
  Lagrange multiplier of the volume constraint found by bisection);
* ``pymoto`` -- pyMOTO's MMA on the same setup, run under the interpreter
  with pyMOTO (``--python``, ``$PYMOTO_PYTHON`` or /tmp/pymoto-venv), skipped
  when that interpreter is missing.

For each: the compliance after 10/20/30/50/100 evaluations and the first
evaluation (and the wall time to it) whose compliance is within 2 %, 1 %,
0.5 % of the reference with the volume constraint met to 1e-3. The
reference is top88's published 233.71 for 60x20 (Andreassen et al. 2011)
and otherwise the final compliance of our long run (its length is in
the JSON). Evaluation 1 is the uniform start for all three.

    python scripts/benchmarks/benchmark_convergence.py --out results/benchmark_convergence.json
    python scripts/benchmarks/benchmark_convergence.py --quick --out /tmp/quick.json

One run per method (the histories are the measurement; no repeats): the JSON records
the machine and the commit (`harness.record`, spread: one measurement). ``--smallest``
is ``--quick``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "crosscheck"))
import harness  # noqa: E402
import pymoto_bridge  # noqa: E402

CHECKPOINTS = (10, 20, 30, 50, 100)
TOLERANCES = (0.02, 0.01, 0.005)
VOLUME_TOL = 1e-3          # relative volume violation accepted as "feasible"
TOP88_60x20 = 233.71       # Andreassen et al. 2011 (density filter, rmin 2.4)


def cases(quick: bool) -> list[dict]:
    """The benchmark cases: mesh, volfrac, rmin and evaluation budgets."""
    if quick:
        return [dict(name="mbb_30x10", kind="mbb", sizes=(30, 10), volfrac=0.5, rmin=1.2,
                     ref_evals=60, evals=40, pymoto_evals=40),
                dict(name="cantilever3d_8x4x4", kind="cantilever3d", sizes=(8, 4, 4),
                     volfrac=0.3, rmin=1.5, ref_evals=40, evals=30, pymoto_evals=30)]
    mbb = [dict(name=f"mbb_{nx}x{ny}", kind="mbb", sizes=(nx, ny), volfrac=0.5,
                rmin=2.4 * nx / 60, ref_evals=ref, evals=200, pymoto_evals=200)
           for nx, ny, ref in ((60, 20, 1000), (150, 50, 1000), (300, 100, 600))]
    mbb[0]["reference"] = TOP88_60x20
    return mbb + [dict(name="cantilever3d_40x20x20", kind="cantilever3d", sizes=(40, 20, 20),
                       volfrac=0.3, rmin=1.5, ref_evals=300, evals=100, pymoto_evals=150)]


def build(case: dict):
    """Our `ComplianceProblem` of `case` (problem scripts' `setup`)."""
    sys.path.insert(0, ROOT)
    from topopt_problems import cantilever3d, mbb_beam
    from topopt.formulations.compliance import ComplianceProblem
    if case["kind"] == "mbb":
        _, model, f = mbb_beam.setup(*case["sizes"])
        return ComplianceProblem(model, f, case["volfrac"], case["rmin"])
    _, model, f = cantilever3d.setup(*case["sizes"])
    return ComplianceProblem(model, f, case["volfrac"], case["rmin"], solver="mg-cg",
                             solver_options={"warm_start": True})


def run_ours(case: dict, maxeval: int) -> dict:
    """History of `ComplianceProblem.run` (compliance = objective * c0)."""
    problem = build(case)
    res = problem.run(maxeval=maxeval, verbose=False)
    h = res.history
    return dict(compliance=[e["objective"] * problem.c0 for e in h],
                volume_violation=[max(e["max_constraint"], 0.0) for e in h],
                time=[e["time"] for e in h])


def oc_update(x, dc, dv, flt, volfrac: float, move: float = 0.2):
    """top88's OC step (Andreassen et al. 2011, eqs. (3)-(4)), bisection on lambda.

    ``B_e = -dc_e / (lambda dv_e)``; ``x_new = clip(x B_e^(1/2), x - move,
    x + move)`` within [0, 1]; lambda such that the filtered design meets the
    volume fraction (top88 lines 56-63).
    """
    l1, l2 = 0.0, 1e9
    while (l2 - l1) / (l1 + l2) > 1e-3:
        lmid = 0.5 * (l2 + l1)
        x_new = np.clip(x * np.sqrt(np.maximum(-dc, 0.0) / dv / lmid),
                        np.maximum(0.0, x - move), np.minimum(1.0, x + move))
        if np.mean(flt(x_new)) > volfrac:
            l1 = lmid
        else:
            l2 = lmid
    return x_new


def run_oc(case: dict, maxeval: int) -> dict:
    """A top88-style OC loop on our filter and FE solve; one FE solve per evaluation."""
    from topopt import ad
    problem = build(case)
    flt, vf = problem.filter, problem.volfrac
    dv = flt.transpose(np.ones(problem.n))             # d(sum x_phys)/dx, top88 line 51
    x = np.full(problem.n, vf)
    out = dict(compliance=[], volume_violation=[], time=[])
    t0 = time.perf_counter()
    for _ in range(maxeval):
        c, dc = ad.value_and_gradient(problem.compliance, x)
        out["compliance"].append(float(c))
        out["volume_violation"].append(max(float(np.mean(flt(x))) / vf - 1.0, 0.0))
        out["time"].append(time.perf_counter() - t0)
        x = oc_update(x, np.asarray(dc), dv, flt, vf)
    return out


def run_pymoto(case: dict, maxeval: int, python: str | None) -> dict | None:
    """pyMOTO's MMA history through `pymoto_bridge` (None without pyMOTO)."""
    if not os.path.exists(pymoto_bridge.pymoto_python(python)):
        return None
    sizes = list(case["sizes"]) + [0] * (3 - len(case["sizes"]))
    out = pymoto_bridge.run_pymoto_side(
        __file__, python, dict(sizes=np.array(sizes), volfrac=case["volfrac"],
                               rmin=case["rmin"], maxeval=maxeval))
    return dict(compliance=out["compliance"].tolist(),
                volume_violation=np.maximum(out["volume"] / case["volfrac"] - 1, 0).tolist(),
                time=out["time"].tolist())


def _pymoto_loads(pym, domain, nelx: int, nely: int, nelz: int):
    """Supports and loads of our `setup` in pyMOTO's numbering (unit elements)."""
    if nelz == 0:
        left = domain.get_dofnumber(domain.nodes[0, :], 0, ndof=2).flatten()     # symmetry
        roller = domain.get_dofnumber(domain.nodes[nelx, 0], 1, ndof=2).flatten()
        f = np.zeros(2 * domain.nnodes)
        f[domain.get_dofnumber(domain.nodes[0, nely], 1, ndof=2)] = -1.0
        return np.concatenate([left, roller]), f
    fixed = domain.get_dofnumber(domain.nodes[0, :, :].flatten(), np.arange(3), ndof=3)
    f = np.zeros(3 * domain.nnodes)
    w = np.full(nelz + 1, 1.0 / nelz)                   # trapezoid rule, total -1
    w[[0, -1]] *= 0.5
    f[domain.get_dofnumber(domain.nodes[nelx, 0, :], 1, ndof=3).flatten()] = -w
    return np.asarray(fixed).flatten(), f


def pymoto_side(inputs: dict) -> dict:
    """pyMOTO's half: MMA on the same setup, logging compliance, volume and time."""
    import pymoto as pym
    nelx, nely, nelz = (int(n) for n in inputs["sizes"])
    vf, maxeval = float(inputs["volfrac"]), int(inputs["maxeval"])
    domain = pym.VoxelDomain(nelx, nely, nelz) if nelz else pym.VoxelDomain(nelx, nely)
    bc, f = _pymoto_loads(pym, domain, nelx, nely, nelz)
    sx = pym.Signal("x", state=np.full(domain.nel, vf))
    sxf = pym.DensityFilter(domain, radius=float(inputs["rmin"]))(sx)
    sE = pym.MathExpression("1e-9 + (1 - 1e-9) * inp0^3")(sxf)
    sK = pym.AssembleStiffness(domain, bc=bc, **({} if nelz else dict(plane="stress")))(sE)
    su = pym.LinSolve(symmetric=True, positive_definite=True)(sK, f)
    sc = pym.EinSum("i, i->")(su, f)
    sg0 = pym.Scaling(scaling=100.0)(sc)
    svol = pym.EinSum("i->")(sxf)
    sg1 = pym.MathExpression(f"10 * (inp0 / {domain.nel} - {vf})")(svol)
    mma = pym.MMA(sx, [sg0, sg1], None)
    log = dict(compliance=[], volume=[], time=[])
    step, t0 = mma.step, time.perf_counter()

    def logged_step(*args, **kwargs):
        out = step(*args, **kwargs)        # evaluates the design, then the MMA update
        log["compliance"].append(float(sc.state))
        log["volume"].append(float(svol.state) / domain.nel)
        log["time"].append(time.perf_counter() - t0)
        return out

    mma.step = logged_step
    mma.optimize(maxiter=maxeval, tolx=0.0, tolf=0.0)
    return {k: np.array(v) for k, v in log.items()}


def summarize(hist: dict, reference: float) -> dict:
    """Compliance at `CHECKPOINTS`, evaluations and seconds to each tolerance."""
    c, t = np.asarray(hist["compliance"]), np.asarray(hist["time"])
    ok = np.asarray(hist["volume_violation"]) <= VOLUME_TOL
    at = {str(k): (float(c[k - 1]) if k <= c.size else None) for k in CHECKPOINTS}
    reach = {}
    for tol in TOLERANCES:
        hit = np.flatnonzero(ok & (c <= reference * (1 + tol)))
        reach[f"{tol:g}"] = (dict(evaluations=int(hit[0] + 1), seconds=float(t[hit[0]]))
                             if hit.size else None)
    return dict(compliance_at=at, reach=reach, evaluations=int(c.size),
                final=float(c[-1]), seconds=float(t[-1]),
                history=[float(v) for v in c])


def run_case(case: dict, python: str | None, use_pymoto: bool) -> dict:
    ours = run_ours(case, case["ref_evals"])
    reference = case.get("reference", ours["compliance"][-1])
    source = ("Andreassen et al. 2011 (top88)" if "reference" in case
              else f"ours after {case['ref_evals']} evaluations")
    row = dict(sizes=list(case["sizes"]), volfrac=case["volfrac"], rmin=case["rmin"],
               reference=float(reference), reference_source=source,
               methods=dict(ours=summarize(ours, reference),
                            oc=summarize(run_oc(case, case["evals"]), reference)))
    pm = run_pymoto(case, case["pymoto_evals"], python) if use_pymoto else None
    row["methods"]["pymoto"] = None if pm is None else summarize(pm, reference)
    print(f"{case['name']}: done", file=sys.stderr, flush=True)
    return row


def table(results: dict) -> str:
    """A plain-text table of the results."""
    lines = [f"{'case':24s} {'method':7s} " + " ".join(f"c@{k:<6d}" for k in CHECKPOINTS)
             + "  " + "  ".join(f"{100 * t:g}%: ev / s".ljust(16) for t in TOLERANCES)]
    for name, row in results["cases"].items():
        for method, m in row["methods"].items():
            if m is None:
                lines.append(f"{name:24s} {method:7s} (not installed)")
                continue
            cs = " ".join(f"{v:8.2f}" if v is not None else f"{'-':>8s}"
                          for v in m["compliance_at"].values())
            rs = "  ".join((f"{r['evaluations']:4d} / {r['seconds']:7.2f}" if r else "   -").ljust(16)
                           for r in m["reach"].values())
            lines.append(f"{name:24s} {method:7s} {cs}  {rs}")
        lines.append(f"{'':24s} reference {row['reference']:.3f} ({row['reference_source']})")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="JSON file to write")
    parser.add_argument("--quick", "--smallest", action="store_true",
                        help="small meshes, few evaluations")
    parser.add_argument("--cases", nargs="*", default=None, help="case names to run")
    parser.add_argument("--no-pymoto", action="store_true", help="skip pyMOTO")
    pymoto_bridge.add_arguments(parser)
    args = parser.parse_args(argv)
    if args.pymoto_side:
        pymoto_bridge.serve(*args.pymoto_side, pymoto_side)
        return {}
    chosen = cases(args.quick)
    if args.cases:
        unknown = set(args.cases) - {c["name"] for c in chosen}
        if unknown:
            parser.error(f"--cases: unknown {sorted(unknown)}; known "
                         f"{[c['name'] for c in chosen]}")
        chosen = [c for c in chosen if c["name"] in args.cases]
    results = harness.record(dict(command=harness.command(__file__, argv), checkpoints=list(CHECKPOINTS),
                                  tolerances=list(TOLERANCES), volume_tol=VOLUME_TOL,
                                  cases={}), repeats=1)
    if args.out and args.cases and os.path.exists(args.out):
        with open(args.out) as fh:              # --cases: replace those, keep the others
            results["cases"] = {k: v for k, v in json.load(fh)["cases"].items()
                                if k not in args.cases}
    for case in chosen:
        results["cases"][case["name"]] = run_case(case, args.python, not args.no_pymoto)
        if args.out:
            harness.write(args.out, results)
    print(table(results))
    return results


if __name__ == "__main__":
    main()
