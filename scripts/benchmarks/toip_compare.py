"""Time per design iteration against TopOpt_in_PETSc on the same machine, 1 and 2 ranks.

    python scripts/benchmarks/toip_compare.py --toip /path/to/TopOpt_in_PETSc/topopt \\
        [--sizes 64x32x32,128x64x64] [--ranks 1,2] [--iterations 6] \\
        [--out results/toip_compare.json]

TopOpt_in_PETSc (Aage, Andreassen & Lazarov, Struct. Multidisc. Optim. 51
(2015) 565-572; github.com/topopt/TopOpt_in_PETSc) is the reference parallel
topology-optimization code on PETSc. Its papers give no per-iteration times
or scaling tables that could be retrieved (``docs/notes/petsc.md``), so
this script measures it here, beside our ``solver="petsc"``, on the same
element counts, rank counts and cores. It is a peer, never a dependency:
build it in a scratch folder against the PETSc of our ``[mpi]`` extra::

    git clone https://github.com/topopt/TopOpt_in_PETSc && cd TopOpt_in_PETSc
    PETSC_DIR=$(python -c "import petsc; print(petsc.get_petsc_dir())")
    mpicxx -O3 -std=gnu++20 -DPETSC_SILENCE_DEPRECATION_WARNINGS_3_19_0 \\
        -I$PETSC_DIR/include *.cc -o topopt \\
        -Wl,-rpath,$PETSC_DIR/lib -L$PETSC_DIR/lib -lpetsc -llapack -lblas

(commit 73307a2 builds against PETSc 3.26.1 unchanged; two functions of its
``Filter.cc`` used only with ``-projectionFilter 1`` lack a ``return 0``).

What each side runs, per size ``NX x NY x NZ`` elements:

* TopOpt_in_PETSc: its default problem (2 x 1 x 1 box clamped at x = 0, line
  load at the far bottom edge, volfrac 0.12, density filter, its own parallel
  MMA, FGMRES to 1e-5 preconditioned by a 4-level Galerkin geometric
  multigrid with GMRES/SOR smoothers) for ``--iterations`` design iterations;
  its own per-iteration wall time (assembly, solve, filter, MMA), first
  iteration dropped (setup).
* ours: `scripts/benchmarks/petsc_scaling.py`'s child (3-D cantilever of
  `problems/cantilever3d.py`, volfrac 0.3, CG to 1e-8 preconditioned by PCMG
  on the lattice hierarchy, NLopt's MMA on rank 0), wall time per
  factorization over the whole run.

The problems differ (load, volume fraction, tolerances, optimizers): compare
seconds per design iteration and their change from 1 to 2 ranks, not
designs. Results go to ``--out`` with the machine and the commit (`harness.record`;
TopOpt_in_PETSc's seconds per iteration: the median over its iterations 2.., min and max
beside it); needs the ``[mpi]`` extra and ``mpirun``. ``--smallest``: 16 x 8 x 8 on one
rank, 2 iterations.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "benchmarks"))

import harness  # noqa: E402
from petsc_scaling import _launch, _row, _size  # noqa: E402

ITERATION = re.compile(r"^It\.: (\d+), True fx: ([-+0-9.eE]+),.*time: ([-+0-9.eE]+)", re.M)
STATE = re.compile(r"^State solver:\s+iter: (\d+), rerr\.: ([-+0-9.eE]+), time: ([-+0-9.eE]+)",
                   re.M)


def toip(binary: str, size, ranks: int, iterations: int) -> dict:
    """One TopOpt_in_PETSc run: its per-iteration times, Krylov iterations, peak memory."""
    nx, ny, nz = size
    if any(n % 8 for n in size):
        raise ValueError(f"TopOpt_in_PETSc's 4 multigrid levels need element counts divisible "
                         f"by 8; got {size}")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as d:
        # each rank under /usr/bin/time, for its own peak resident memory
        cmd = ["mpirun", "-n", str(ranks), "--oversubscribe", "sh", "-c",
               'exec /usr/bin/time -f %M -o "$0/rss.$OMPI_COMM_WORLD_RANK" "$@"', d,
               os.path.abspath(binary), "-nx", str(nx + 1), "-ny", str(ny + 1),
               "-nz", str(nz + 1), "-maxItr", str(iterations), "-restart", "0"]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=d)
        if proc.returncode:
            raise RuntimeError(f"TopOpt_in_PETSc failed:\n{proc.stdout[-2000:]}"
                               f"{proc.stderr[-2000:]}")
        rss = [int(open(os.path.join(d, f"rss.{r}")).read().split()[-1]) / 1024.0
               for r in range(ranks)]
    its, states = ITERATION.findall(proc.stdout), STATE.findall(proc.stdout)
    times = [float(t[2]) for t in its]
    seconds = harness.spread(times[1:] or times)
    return {"code": "TopOpt_in_PETSc", "size": list(size), "ranks": ranks,
            "ndof": 3 * (nx + 1) * (ny + 1) * (nz + 1), "iterations": len(its),
            "s_per_iteration": seconds["median"], "spread": seconds,
            "s_per_iteration_all": times, "state_solve_s": [float(s[2]) for s in states],
            "krylov_iterations": [int(s[0]) for s in states],
            "compliance": [float(t[1]) for t in its], "max_rss_mb": rss,
            "load_average": os.getloadavg()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--toip", required=True, help="the TopOpt_in_PETSc executable")
    parser.add_argument("--sizes", default="64x32x32,128x64x64")
    parser.add_argument("--ranks", default="1,2")
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "toip_compare.json"))
    parser.add_argument("--smallest", action="store_true",
                        help="16x8x8 on one rank, 2 iterations (the tests)")
    args = parser.parse_args(argv)
    if args.smallest:
        args.sizes, args.ranks, args.iterations = "16x8x8", "1", 2
    if not os.access(args.toip, os.X_OK):
        parser.error(f"--toip {args.toip!r} is not an executable (see the docstring)")
    if args.iterations < 2:
        parser.error("--iterations must be >= 2 (the first one is setup)")
    rows = []
    for size in (_size(s) for s in args.sizes.split(",")):
        for p in (int(r) for r in args.ranks.split(",")):
            rows.append(toip(args.toip, size, p, args.iterations))
            r = rows[-1]
            print(f"{'x'.join(map(str, size)):>10} {r['ndof']:>9} TopOpt_in_PETSc P={p} "
                  f"{r['s_per_iteration']:7.2f} s/it  Krylov {r['krylov_iterations']}  rss "
                  f"{['%.0f' % m for m in r['max_rss_mb']]} MiB", flush=True)
            rows.append(_launch(size, p, args.iterations, "petsc", "mg"))
            print(_row(rows[-1]), flush=True)
    harness.write(args.out, harness.record(
        {"command": harness.command(__file__, argv), "runs": rows}, args.iterations - 1,
        statistic="median over the iterations 2.."))
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
