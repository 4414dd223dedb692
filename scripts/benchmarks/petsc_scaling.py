"""Strong scaling of the ``"petsc"`` state solve, 1 -> 2 ranks, and where the time goes.

    python scripts/benchmarks/petsc_scaling.py [--sizes 40x20x20,80x40x40] [--ranks 1,2]
        [--pcs gamg,mg] [--serial mg-cg] [--iterations 3] [--repeats 1]
        [--out results/petsc_scaling.json]

For each size, preconditioner (``--pcs``) and rank count it launches
``mpirun -n P`` on this script (``--child``): rank 0 builds the 3-D
cantilever of `problems/cantilever3d.py` with ``solver="petsc"`` (rtol 1e-8,
warm start, as the problem script) and runs ``--iterations`` full MMA design
iterations. The cases alternate ``--repeats`` times (so that a change of the
machine's load hits all of them alike). Written per run:

* ``s_per_iteration`` (wall time of `problem.run` per factorization: the start,
  each MMA iteration and the final state count one each) and the split of rank 0's
  wall time over that window: ``assembly``
  (``sum a_e K_e`` by PETSc's COO path), ``setup`` (PCMG's Galerkin
  products or GAMG's setup), ``solve`` (CG; the adjoint of compliance is the
  forward solution, no second solve), ``scatter_gather`` (``a``, ``b`` to the
  ranks, ``u`` back), ``sensitivity`` (``-u_e^T K_e u_e`` on rank 0),
  ``optimizer`` (NLopt's MMA step: its time outside our evaluations),
  ``rest`` (filter, AD, the run's bookkeeping on rank 0) -- plus every rank's
  own assembly / setup / solve times, its rows and elements;
* CG iterations per solve; peak resident memory per rank
  (`harness.peak_bytes` on the serial solvers, PETSc's rank statistics otherwise); the
  system build (partition and COO preallocation, once).

``--serial mg-cg`` adds the serial multigrid-CG run of the same sizes. The
``summary`` holds the median of each case over the repeats (min and max beside it),
per-iteration parts and the speed-up over one rank. Results go to ``--out`` (JSON, with
the machine and the commit: `harness.record`); `docs/notes/petsc.md` reads them.
``--smallest``: 8 x 4 x 4 on one rank, one iteration, and the serial ``mg-cg`` beside it
(``--pcs ""``: the serial run alone, without petsc4py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import harness  # noqa: E402


def _size(text: str) -> tuple[int, int, int]:
    parts = tuple(int(t) for t in text.lower().split("x"))
    if len(parts) != 3 or min(parts) < 1:
        raise argparse.ArgumentTypeError(f"a size is NXxNYxNZ, got {text!r}")
    return parts


def _rank_timers(S) -> list[dict]:
    """Every rank's timers and peak memory (one entry on the serial solvers)."""
    if S.solver != "petsc":
        return [{"timers": {}, "max_rss_mb": harness.peak_bytes() / 2**20}]
    from topopt.fem.petsc import backend as petsc
    return petsc.rank_stats(S._iterative)


def _time_optimizer() -> dict:
    """Seconds NLopt's MMA spends outside our evaluations (``{"s": ...}``, updated as it runs).

    NLopt's ``optimize`` calls our evaluations back; its wall time minus theirs
    is the optimizer's own work (the MMA subproblems), all on rank 0.
    """
    import nlopt
    from topopt.optimize import run as mma_run
    total = {"s": 0.0, "eval": 0.0}
    evaluate, optimize = mma_run._Run.evaluate, nlopt.opt.optimize

    def timed_evaluate(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return evaluate(self, *args, **kwargs)
        finally:
            total["eval"] += time.perf_counter() - t0

    def timed_optimize(self, *args, **kwargs):
        t0, e0 = time.perf_counter(), total["eval"]
        try:
            return optimize(self, *args, **kwargs)
        finally:
            total["s"] += time.perf_counter() - t0 - (total["eval"] - e0)
    mma_run._Run.evaluate, nlopt.opt.optimize = timed_evaluate, timed_optimize
    return total


def _split(before: list, after: list, S, timers0: dict, wall: float, optimizer: float) -> dict:
    """Rank 0's wall time of the run window, by part (seconds)."""
    t0, t1 = before[0]["timers"], after[0]["timers"]
    d = {k: t1.get(k, 0.0) - t0.get(k, 0.0) for k in t1}
    if S.solver == "petsc":
        split = {"assembly": d.get("assembly", 0.0), "setup": d.get("setup", 0.0),
                 "solve": d.get("solve", 0.0),
                 "scatter_gather": d.get("root_scatter", 0.0) + d.get("root_gather", 0.0)}
    else:       # the serial system's own timers: assembly; hierarchy = setup; CG = solve
        st = {k: S.timers.get(k, 0.0) - timers0.get(k, 0.0) for k in S.timers}
        split = {"assembly": st.get("assembly", 0.0), "setup": st.get("factorization", 0.0),
                 "solve": st.get("solve", 0.0) + st.get("adjoint", 0.0), "scatter_gather": 0.0}
    split["sensitivity"] = S.timers.get("sensitivity", 0.0) - timers0.get("sensitivity", 0.0)
    split["optimizer"] = optimizer
    split["rest"] = wall - sum(split.values())
    return split


def child(size, iterations: int, solver: str, pc: str = "gamg",
          filter: str = "density") -> dict:
    """One run in this process (rank 0 under mpirun); the numbers of `main`'s table.

    The split covers the whole `problem.run` window: the start (``c0``), the
    MMA iterations and the final solve (factorizations = iterations + 1).
    """
    from topopt_problems import cantilever3d
    from topopt.formulations.compliance import ComplianceProblem
    t0 = time.perf_counter()
    mesh, model, f = cantilever3d.setup(*size)
    options = {"warm_start": True, **({"pc": pc} if solver == "petsc" else {})}
    problem = ComplianceProblem(model, f, 0.3, 1.5, solver=solver, solver_options=options,
                                filter=filter)
    S = problem.system
    build = time.perf_counter() - t0
    before, timers0 = _rank_timers(S), dict(S.timers)
    optimizer = _time_optimizer()
    t0 = time.perf_counter()
    res = problem.run(maxeval=iterations, verbose=False)
    wall = time.perf_counter() - t0
    after = _rank_timers(S)
    n_fact = S.counts["factorizations"]
    out = {"size": list(size), "ndof": int(model.ndof), "n_el": int(model.n_el),
           "solver": solver, "pc": pc if solver == "petsc" else None, "filter": filter,
           "ranks": len(after), "iterations": int(res["evaluations"]),
           "build_s": build, "run_wall_s": wall, "factorizations": n_fact,
           "counts": {k: int(v) for k, v in S.counts.items()},
           "s_per_iteration": wall / n_fact,
           "cg_iterations_per_solve": res.metrics.get("cg_iterations_per_solve"),
           "cg_iterations_max": res.metrics.get("cg_iterations_max"),
           "split_rank0_s": _split(before, after, S, timers0, wall, optimizer["s"]),
           "per_rank": after, "max_rss_mb": [s["max_rss_mb"] for s in after],
           "compliance": res["compliance"], "load_average": os.getloadavg()}
    return out


def _launch(size, ranks: int, iterations: int, solver: str, pc: str = "gamg",
            filter: str = "density") -> dict:
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MPLBACKEND="Agg")
    env.pop("PYTHONPATH", None)                        # this checkout alone
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "x".join(map(str, size)),
           "--iterations", str(iterations), "--solver", solver, "--pc", pc, "--filter", filter]
    if solver == "petsc":
        cmd = ["mpirun", "-n", str(ranks), "--oversubscribe"] + cmd
    return harness.child(cmd, env=env)


def _row(r: dict) -> str:
    split = r.get("split_rank0_s", {})
    parts = " ".join(f"{k}={v:.2f}" for k, v in split.items())
    parts += f"  load {r['load_average'][0]:.1f}"
    name = r["solver"] + (f"/{r['pc']}" if r.get("pc") else "")
    return (f"{'x'.join(map(str, r['size'])):>10} {r['ndof']:>9} {name:>10} "
            f"P={r['ranks']} {r['s_per_iteration']:7.2f} s/it  CG {r['cg_iterations_per_solve']}"
            f"  rss {['%.0f' % m for m in r['max_rss_mb']]} MiB  {parts}")


def _summary(rows: list) -> list[dict]:
    """Median seconds per iteration of each case over its repeats, and 1 -> P speed-ups."""
    groups: dict = {}
    for r in rows:
        groups.setdefault((tuple(r["size"]), r["solver"], r.get("pc"), r["ranks"]), []).append(r)
    out = []
    for (size, solver, pc, ranks), rs in groups.items():
        seconds = harness.spread(r["s_per_iteration"] for r in rs)
        med = seconds["median"]
        one = groups.get((size, solver, pc, 1))
        speedup = (harness.spread(r["s_per_iteration"] for r in one)["median"] / med
                   if one else None)
        parts = {k: harness.spread(r["split_rank0_s"][k] / r["factorizations"]
                                   for r in rs)["median"] for k in rs[0]["split_rank0_s"]}
        name = solver + (f"/{pc}" if pc else "")
        text = (f"median of {len(rs)}: {'x'.join(map(str, size))} {name} P={ranks} "
                f"{med:.3f} s/it" + (f", speed-up over 1 rank {speedup:.2f}" if speedup else "")
                + "  per iteration: " + " ".join(f"{k}={v:.3f}" for k, v in parts.items()))
        out.append({"size": list(size), "solver": solver, "pc": pc, "ranks": ranks,
                    "runs": len(rs), "s_per_iteration": med, "spread": seconds,
                    "speedup": speedup,
                    "split_per_iteration_s": parts, "text": text})
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="40x20x20,80x40x40")
    parser.add_argument("--ranks", default="1,2")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--pcs", default="gamg,mg", help="PETSc preconditioners to run")
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs of each case; the JSON keeps all, the table the median")
    parser.add_argument("--serial", default=None, help="also run this serial solver (mg-cg)")
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "petsc_scaling.json"))
    parser.add_argument("--smallest", action="store_true",
                        help="8x4x4, one rank, one iteration, with the serial mg-cg (the tests)")
    parser.add_argument("--child", type=_size, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--solver", default="petsc", help=argparse.SUPPRESS)
    parser.add_argument("--pc", default="gamg", help=argparse.SUPPRESS)
    parser.add_argument("--filter", default="density", choices=("density", "helmholtz"),
                        help="the design filter (on rank 0; its time is in 'rest')")
    args = parser.parse_args(argv)
    if args.smallest:
        args.sizes, args.ranks, args.iterations, args.repeats = "8x4x4", "1", 1, 1
        args.serial = args.serial or "mg-cg"
    if args.iterations < 1:
        parser.error("--iterations must be >= 1")
    if args.child is not None:
        if args.solver == "petsc":
            from topopt.fem.petsc import backend as petsc
            result = petsc.run_on_root(child, args.child, args.iterations, "petsc", args.pc,
                                       args.filter)
        else:
            result = child(args.child, args.iterations, args.solver, filter=args.filter)
        if result is not None:
            print(json.dumps(result), flush=True)
        return
    sizes = [_size(s) for s in args.sizes.split(",")]
    ranks = [int(r) for r in args.ranks.split(",")]
    cases = [(size, p, "petsc", pc) for size in sizes for pc in args.pcs.split(",") if pc
             for p in ranks]
    cases += [(size, 1, args.serial, None) for size in sizes] if args.serial else []
    rows = []
    for repeat in range(args.repeats):      # cases alternate, so load drifts hit all alike
        for size, p, solver, pc in cases:
            rows.append(_launch(size, p, args.iterations, solver, pc or "gamg", args.filter))
            rows[-1]["repeat"] = repeat
            print(_row(rows[-1]), flush=True)
    summary = _summary(rows)
    for line in summary:
        print(line["text"])
    harness.write(args.out, harness.record(
        {"command": harness.command(__file__, argv), "summary": summary, "runs": rows},
        args.repeats))
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
