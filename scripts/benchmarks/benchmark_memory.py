#!/usr/bin/env python
"""Peak memory per degree of freedom of real runs, by solver path: the figures of
`topopt.fem.budget`.

Each case is a problem script's command line, ``python problems/<problem>.py
--nelx .. --nely .. [--nelz ..] --solver <solver> --maxeval 2 --quiet``, in a
fresh process that reports its own peak resident memory (`harness.peak_bytes`) and
wall time when it ends; a tiny run of the same script gives the interpreter's
and the libraries' baseline, which is subtracted for the bytes per dof. The 2-D
voxel case has no script (``solver="auto"`` takes the voxel path in 3-D only):
it runs the MBB setup on `topopt.grid` through the API, ``ComplianceProblem(...,
solver="voxel").run(maxeval=2)``. `topopt.fem.budget.BYTES_PER_DOF` takes, per
path and dimension, the least figure per dof measured (an iterative path's at
its largest size, where the fixed costs are spread thinnest; a direct one's at
its smallest, as its fill grows faster than the dofs): no run that fits is
refused.

    python scripts/benchmarks/benchmark_memory.py                    # every case (the 25.9 M-dof one: most of it)
    python scripts/benchmarks/benchmark_memory.py --cases voxel-3d   # some cases, by label
    python scripts/benchmarks/benchmark_memory.py --quick            # small sizes: checks the script

The rows are merged into ``results/benchmark_memory.json`` by label (``--out``
elsewhere, ``--no-json`` not at all; ``--quick`` and ``--smallest``, its first case, write
only to an ``--out`` given), so a case can be measured again alone; each row records its machine and
commit (`harness`), the file the machine and commit of its last write. One run per case:
no spread.

Measured here (2 cores and 24 GB shared with six other sessions, load 15: the
seconds are not timings; peak less the baseline of a tiny run, 0.09-0.14 GB;
``results/benchmark_memory.json`` has every row of this script):

* ``voxel-3d``, the headline: ``python problems/cantilever3d.py --nelx 324
  --nely 162 --nelz 162 --maxeval 2`` (25.9 M dofs; ``auto`` takes the voxel
  path; its multigrid coarsens by 3, 2, 3): 6.82 GB, 263 B per dof with the
  interpreter, 258 without (``/usr/bin/time -v``: 6 659 900 kB), 520 s per
  design iteration and 52 min the command with the cores shared (34 % of a
  core; 919 s user, 151 s system); through the API
  (``scripts/benchmarks/benchmark_scale.py``, 336 x 160 x 160, 26.2 M dofs) 6.07 GB, 232 B
  per dof with the baseline;
* ``voxel-2d``, the MBB beam on a 2-D `topopt.grid.Grid` 2400 x 1200 (5.8 M
  dofs, through the API): 1.58 GB, 258 B per dof;
* ``amg-cg-2d``, ``mbb_beam --nelx 1200 --nely 400 --solver amg-cg`` (963 202
  dofs): 2.81 GB, 2.77 kB per dof;
* ``amg-cg-3d``, ``cantilever3d --nelx 60 --nely 30 --nelz 30 --solver
  amg-cg`` (175 863 dofs): 2.59 GB, 13.9 kB per dof (mg-cg 12.9 kB at that
  size). Not measured at 1.6 M dofs, where mg-cg's fell to 9.4 kB (its
  hierarchy's fixed part spread thinner): `BYTES_PER_DOF` takes mg-cg's 9.4 kB
  for amg-cg in 3-D, a lower bound, so that no run that fits is refused;

and by earlier sessions, the rows ``mg-cg-3d``, ``direct-3d``, ``mg-cg-2d`` and
``direct-2d`` of this script, or the scripts named:

* ``mg-cg-3d``, ``cantilever3d`` 128 x 64 x 64 (1.64 M dofs): 15.4 GB, 9.4 kB
  per dof (``scripts/benchmarks/benchmark_scale.py --reference`` and
  ``scripts/benchmarks/petsc_scaling.py``: 9.42 and 9.44 kB; 12.9 kB at 60 x 30 x 30);
* ``direct-3d``, CHOLMOD at 60 x 30 x 30 (176 k dofs): 6.23 GB, 34.7 kB (a 3-D
  factor's fill grows faster than the dofs: the least per dof is at the
  smallest size, a lower bound for the larger ones);
* PETSc PCMG on 1 rank at 128 x 64 x 64: 12 666 MiB, 8.1 kB per dof
  (``scripts/benchmarks/toip_compare.py``, ``results/toip_compare.json``; on 2 ranks 9.7 kB
  in all); PETSc in 2-D is not measured (the least of the other 2-D paths);
* ``mg-cg-2d`` and ``direct-2d``, ``mbb_beam --nelx 1200 --nely 400``: mg-cg
  2.58 / 2.64 GB, 2.5 / 2.6 kB per dof; CHOLMOD 3.72 / 3.87 GB, 3.7 / 3.9 kB
  (600 x 300: 4.3 kB).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import harness

ROOT = harness.ROOT
RESULTS = os.path.join(ROOT, "results", "benchmark_memory.json")
HERE = os.path.dirname(os.path.abspath(__file__))

#: A problem script's run, then its peak memory and seconds (`harness.peak_bytes`) as
#: the last line of output.
CHILD = """
import json, runpy, sys, time
sys.path.insert(0, {here!r})
import harness
sys.argv = {argv!r}
t0 = time.perf_counter()
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as e:
    if e.code not in (0, None):
        raise
print(json.dumps({{"peak_bytes": harness.peak_bytes(), "seconds": time.perf_counter() - t0}}))
"""

#: The 2-D voxel case through the API: the MBB beam of problems/mbb_beam.py on a Grid.
CHILD_GRID = """
import json, sys, time
sys.path.insert(0, {here!r})
import harness
import numpy as np
from topopt.formulations.compliance import ComplianceProblem
from topopt.grid import Grid, grid_elasticity
t0 = time.perf_counter()
nelx, nely = {grid!r}
model = grid_elasticity(Grid((nelx, nely)), nu=0.3)
model.fix(nodes=lambda x: np.isclose(x[0], 0.0), components=[0])
model.fix(nodes=lambda x: np.isclose(x[0], nelx) & np.isclose(x[1], 0.0), components=[1])
f = model.point_load((0.0, nely), (0.0, -1.0))
problem = ComplianceProblem(model, f, 0.5, 1.5, solver={solver!r},
                            solver_options={{"warm_start": True}})
problem.run(maxeval=2, verbose=False)
print(json.dumps({{"peak_bytes": harness.peak_bytes(), "seconds": time.perf_counter() - t0}}))
"""

#: (label, problem, grid, solver): the runs behind `topopt.fem.budget.BYTES_PER_DOF`
#: (problem "grid-mbb": `CHILD_GRID`).
CASES = [("voxel-3d", "cantilever3d", (324, 162, 162), "voxel"),
         ("voxel-2d", "grid-mbb", (2400, 1200), "voxel"),
         ("mg-cg-3d", "cantilever3d", (128, 64, 64), "mg-cg"),
         ("amg-cg-3d", "cantilever3d", (60, 30, 30), "amg-cg"),
         ("direct-3d", "cantilever3d", (60, 30, 30), "cholmod"),
         ("mg-cg-2d", "mbb_beam", (1200, 400), "mg-cg"),
         ("amg-cg-2d", "mbb_beam", (1200, 400), "amg-cg"),
         ("direct-2d", "mbb_beam", (1200, 400), "cholmod")]
QUICK = [("quick-direct-2d", "mbb_beam", (120, 40), "cholmod"),
         ("quick-direct-3d", "cantilever3d", (12, 6, 6), "cholmod"),
         ("quick-voxel-2d", "grid-mbb", (40, 20), "voxel")]


def measure(problem: str, grid: tuple, solver: str, out: str) -> tuple[int, float]:
    """Peak resident bytes and wall seconds of one ``--maxeval 2`` run in a fresh process."""
    if problem == "grid-mbb":
        code = CHILD_GRID.format(here=HERE, grid=tuple(grid), solver=solver)
    else:
        sizes = [f"--{k}={n}" for k, n in zip(("nelx", "nely", "nelz"), grid)]
        argv = [os.path.join(ROOT, "problems", f"{problem}.py"), *sizes, "--solver", solver,
                "--maxeval", "2", "--quiet", "--out", out]
        code = CHILD.format(here=HERE, argv=argv)
    found = harness.child([sys.executable, "-c", code], env=dict(os.environ, MPLBACKEND="Agg"))
    return int(found["peak_bytes"]), float(found["seconds"])


def run_record(out: str) -> dict:
    """The run's solver and seconds per design iteration, from its ``result.json``."""
    try:
        with open(os.path.join(out, "result.json"), encoding="utf-8") as fh:
            result = json.load(fh)["result"]
    except (OSError, ValueError, KeyError):
        return {}
    seconds, evaluations = result.get("seconds"), result.get("evaluations")
    return dict(solver_used=result.get("solver"), optimizer_seconds=seconds,
                seconds_per_iteration=seconds / evaluations if seconds and evaluations else None)


def merge(path: str, rows: list, command: str) -> None:
    """Write `rows` into the JSON list at `path`, replacing rows of the same label."""
    try:
        with open(path, encoding="utf-8") as fh:
            old = json.load(fh)["runs"]
    except (OSError, ValueError, KeyError):
        old = []
    labels = {row["label"] for row in rows}
    runs = [row for row in old if row["label"] not in labels] + rows
    order = [c[0] for c in CASES + QUICK]
    runs.sort(key=lambda row: order.index(row["label"]) if row["label"] in order else 99)
    harness.write(path, harness.record(
        {"script": "scripts/benchmarks/benchmark_memory.py", "command": command, "runs": runs},
        repeats=1))


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a check)")
    parser.add_argument("--smallest", action="store_true",
                        help="the first --quick case alone: a few seconds (the tests)")
    parser.add_argument("--cases", default=None,
                        help="comma-separated labels: " + ", ".join(c[0] for c in CASES))
    parser.add_argument("--runs", default="/tmp/topopt_benchmark_memory",
                        help="folder for the runs' outputs")
    parser.add_argument("--out", "--json", dest="out", default=None,
                        help=f"the results file, merged by label (default "
                        f"{harness.relative(RESULTS)}; with --quick none)")
    parser.add_argument("--no-json", action="store_true", help="write no results file")
    args = parser.parse_args(argv)
    args.quick = args.quick or args.smallest
    cases = QUICK[:1] if args.smallest else QUICK if args.quick else CASES
    if args.cases:
        wanted = args.cases.split(",")
        unknown = set(wanted) - {c[0] for c in CASES + QUICK}
        if unknown:
            parser.error(f"argument --cases: unknown {sorted(unknown)}; "
                         f"known: {', '.join(c[0] for c in CASES + QUICK)}")
        cases = [c for c in CASES + QUICK if c[0] in wanted]
    rows = []
    for label, problem, grid, solver in cases:
        tiny = (10, 5) if len(grid) == 2 else (4, 2, 2)
        base, _ = measure(problem, tiny, "cholmod" if problem != "grid-mbb" else solver,
                          os.path.join(args.runs, "base"))
        out = os.path.join(args.runs, label)
        peak, seconds = measure(problem, grid, solver, out)
        components = len(grid)
        dofs = components * math.prod(n + 1 for n in grid)
        row = dict(label=label, problem=problem, grid=list(grid), solver=solver, dofs=dofs,
                   command=(f"python problems/{problem}.py " if problem != "grid-mbb" else
                            "(API) grid-mbb ") + " ".join(
                       f"--{k} {n}" for k, n in zip(("nelx", "nely", "nelz"), grid))
                   + f" --solver {solver} --maxeval 2",
                   peak_bytes=peak, peak_gb=peak / 1e9, baseline_gb=base / 1e9,
                   peak_bytes_per_dof=peak / dofs, bytes_per_dof=(peak - base) / dofs,
                   seconds=seconds, **run_record(out), machine=harness.machine(),
                   commit=harness.commit(), date=time.strftime("%Y-%m-%d"))
        rows.append(row)
        print(f"{label:10s} {problem:13s} {'x'.join(map(str, grid)):11s} {solver:8s} "
              f"{dofs:9d} dofs  peak {peak / 1e9:5.2f} GB (baseline {base / 1e9:4.2f})  "
              f"{(peak - base) / dofs:7.0f} B per dof  {seconds:7.1f} s", flush=True)
    out = args.out or (None if args.quick else RESULTS)
    if out and not args.no_json:
        merge(out, rows, harness.command(__file__, argv))
    print(json.dumps(rows))
    return rows


if __name__ == "__main__":
    main()
