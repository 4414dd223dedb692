#!/usr/bin/env python
"""Peak memory per degree of freedom of real runs: the figures of `topopt.fem.budget`.

Each case is a problem script run with ``--maxeval 2 --quiet`` in a fresh
process that reports its own peak resident memory (``ru_maxrss``) when it
ends; a tiny run of the same script gives the interpreter's and the
libraries' baseline, which is subtracted. `topopt.fem.budget.BYTES_PER_DOF`
takes the least figure over the solvers of each dimension, so that the
memory check never refuses a run that fits.

    python scripts/benchmark_memory.py            # all cases (about 3 minutes)
    python scripts/benchmark_memory.py --quick    # small sizes: checks the script

Measured here (2 shared cores, 24 GB; peak less the baseline of a tiny run,
0.14 GB), two sessions:

* 2-D, ``mbb_beam --nelx 1200 --nely 400`` (963 202 dofs): ``--solver mg-cg``
  2.58 / 2.64 GB, 2.5 / 2.6 kB per dof; CHOLMOD 3.72 / 3.87 GB, 3.7 / 3.9 kB
  (600 x 300: 4.3 kB);
* 3-D, ``cantilever3d --nelx 60 --nely 30 --nelz 30`` (175 863 dofs): ``mg-cg``
  2.41 / 2.37 GB, 12.9 / 12.7 kB per dof; CHOLMOD 6.23 GB, 34.7 kB (a direct
  solver's fill-in grows faster than the dofs in 3-D).

`BYTES_PER_DOF` keeps the lower figures, 2.5 and 12.9 kB (12.7 is within the
two sessions' spread): a lower bound for every solver.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = """
import resource, runpy, sys
sys.argv = {argv!r}
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit:
    pass
finally:
    print("MAXRSS_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""

#: (problem, grid, solver): the runs behind `topopt.fem.budget.BYTES_PER_DOF`.
CASES = [("mbb_beam", (1200, 400), "mg-cg"), ("mbb_beam", (1200, 400), "cholmod"),
         ("cantilever3d", (60, 30, 30), "cholmod"), ("cantilever3d", (60, 30, 30), "mg-cg")]
QUICK = [("mbb_beam", (120, 40), "cholmod"), ("cantilever3d", (12, 6, 6), "cholmod")]


def peak_bytes(problem: str, grid: tuple, solver: str, out: str) -> int:
    """Peak resident bytes of one ``--maxeval 2`` run in a fresh process."""
    sizes = [f"--{k}={n}" for k, n in zip(("nelx", "nely", "nelz"), grid)]
    argv = [os.path.join(ROOT, "problems", f"{problem}.py"), *sizes, "--solver", solver,
            "--maxeval", "2", "--quiet", "--out", out]
    done = subprocess.run([sys.executable, "-c", CHILD.format(argv=argv)], capture_output=True,
                          text=True, cwd=ROOT, env=dict(os.environ, MPLBACKEND="Agg"))
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("MAXRSS_KB")]
    if done.returncode or not lines:
        raise RuntimeError(f"{problem} {grid} {solver} failed:\n{done.stderr[-2000:]}")
    return int(lines[-1].split()[1]) * 1024


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a check)")
    parser.add_argument("--out", default="/tmp/topopt_benchmark_memory",
                        help="folder for the runs' outputs")
    args = parser.parse_args(argv)
    rows = []
    for problem, grid, solver in (QUICK if args.quick else CASES):
        tiny = (10, 5) if len(grid) == 2 else (4, 2, 2)
        base = peak_bytes(problem, tiny, "cholmod", os.path.join(args.out, "base"))
        peak = peak_bytes(problem, grid, solver, os.path.join(args.out, problem))
        dofs = len(grid) * math.prod(n + 1 for n in grid)
        rows.append(dict(problem=problem, grid=grid, solver=solver, dofs=dofs, peak_gb=peak / 1e9,
                         baseline_gb=base / 1e9, bytes_per_dof=(peak - base) / dofs))
        print(f"{problem:13s} {'x'.join(map(str, grid)):11s} {solver:8s} {dofs:9d} dofs  "
              f"peak {peak / 1e9:5.2f} GB (baseline {base / 1e9:4.2f})  "
              f"{(peak - base) / dofs / 1e3:5.1f} kB per dof", flush=True)
    print(json.dumps(rows))
    return rows


if __name__ == "__main__":
    main()
