"""The voxel path split across MPI ranks against the serial voxel path: time and memory per rank.

The 3-D cantilever (``problems/cantilever3d.py``'s voxel setup, volfrac 0.3,
rmin 1.5, mixed precision, warm starts) for `--evals` MMA evaluations:

* ``serial``: `ComplianceProblem.run(optimizer="mma")` on one process;
* ``slabs P``: `topopt.formulations.SlabCompliance` under ``mpirun -n P``
  (``cantilever3d.slab_setup``: each rank builds its slab alone).

Each run is a fresh process (`harness.child`); each rank records its peak
resident memory (``VmHWM``). Per run: seconds per evaluation (the run's
wall time over its evaluations, the setup excluded; one run per case:
``--repeats`` runs give the median and spread), each rank's peak, their sum
against the serial peak (issue 38: <= 1.3), the largest against the mean
(<= 1.25), and the compliance history (the same as the serial one to
rounding). On a 2-core machine 4 ranks are oversubscribed: their time says
nothing of speed-up, their memory does. Each rank runs numba's kernels on its
share of the cores (``NUMBA_NUM_THREADS`` = cores // ranks).

    python scripts/benchmarks/benchmark_slabs.py [--sizes 128x64x64,208x104x104] [--ranks 1,2,4]

Needs mpi4py and ``mpirun`` (OpenMPI: ``OMPI_ALLOW_RUN_AS_ROOT=1`` as root).
``--smallest``: 32 x 8 x 8 on 1 and 2 ranks, 3 evaluations.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

import harness

OPTIONS = {"rtol": 1e-8, "precision": "mixed", "warm_start": True}
OUT = os.path.join(harness.ROOT, "results", "benchmark_slabs.json")


def _shape(text: str) -> tuple:
    return tuple(int(n) for n in text.split("x"))


def worker(kind: str, shape: tuple, evals: int) -> dict | None:
    """One run; the JSON record (on rank 0 for ``slabs``), None on the other ranks."""
    sys.path.insert(0, os.path.join(harness.ROOT, "problems"))
    from cantilever3d import setup, slab_setup
    from topopt.formulations import ComplianceProblem, SlabCompliance
    t0 = time.perf_counter()
    if kind == "serial":
        _, model, f = setup(*shape, voxel=True)
        problem = ComplianceProblem(model, f, 0.3, 1.5, solver="voxel",
                                    solver_options=dict(OPTIONS))
        t1 = time.perf_counter()
        res = problem.run(evals, verbose=False, optimizer="mma")
        history = [h["objective"] * problem.c0 for h in res.history]
        peaks, cg = [harness.peak_bytes()], list(problem.system._iterative.log)
    else:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        S, f = slab_setup(*shape, comm, dict(OPTIONS))
        problem = SlabCompliance(S, f, 0.3, 1.5)
        t1 = time.perf_counter()
        run = problem.run(evals)
        history, cg = run.compliance, run.cg_iterations
        peaks = comm.gather(harness.peak_bytes(), root=0)
        if comm.rank:
            return None
    seconds = time.perf_counter() - t1
    return {"setup_s": t1 - t0, "s_per_evaluation": seconds / len(history),
            "evaluations": len(history), "peaks_bytes": peaks, "compliance": history,
            "cg_iterations_per_solve": float(np.mean(cg)) if cg else None}


def _case(kind: str, shape: tuple, ranks: int, evals: int) -> dict:
    argv = [sys.executable, __file__, "--worker", kind, "--shape", "x".join(map(str, shape)),
            "--evals", str(evals)]
    if kind == "slabs":
        argv = ["mpirun", "-n", str(ranks), "--oversubscribe", *argv]
    threads = str(max(1, (os.cpu_count() or 1) // ranks))      # numba's, per rank
    env = dict(os.environ, OMPI_MCA_mpi_yield_when_idle="1", OMP_NUM_THREADS="1",
               NUMBA_NUM_THREADS=threads)
    out = harness.child(argv, env=env)
    ndof = 3 * int(np.prod([n + 1 for n in shape]))
    peaks = np.array(out["peaks_bytes"], dtype=float)
    out.update(kind=kind, ranks=ranks, shape=list(shape), dofs=ndof,
               peak_sum_bytes=float(peaks.sum()), bytes_per_dof=float(peaks.sum() / ndof),
               largest_over_mean=float(peaks.max() / peaks.mean()))
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="128x64x64,208x104x104")
    parser.add_argument("--ranks", default="1,2,4")
    parser.add_argument("--evals", type=int, default=4)
    parser.add_argument("--no-serial", action="store_true",
                        help="skip the serial run (its peak: scripts/benchmarks/benchmark_scale.py)")
    parser.add_argument("--worker", choices=("serial", "slabs"), help=argparse.SUPPRESS)
    parser.add_argument("--shape", help=argparse.SUPPRESS)
    harness.options(parser, repeats=1, out=OUT, smallest="32 x 8 x 8 on 1 and 2 ranks")
    args = parser.parse_args(argv)
    if args.worker:
        out = worker(args.worker, _shape(args.shape), args.evals)
        if out is not None:
            print(json.dumps(out))
        return out
    sizes = [(32, 8, 8)] if args.smallest else [_shape(s) for s in args.sizes.split(",")]
    ranks = [1, 2] if args.smallest else [int(n) for n in args.ranks.split(",")]
    evals = 3 if args.smallest else args.evals
    rows = []
    for shape in sizes:
        serial = [] if args.no_serial else [("serial", 1)]
        runs = [[_case(kind, shape, p, evals) for kind, p in serial + [("slabs", p) for p in ranks]]
                for _ in range(1 if args.smallest else args.repeats)]
        for k in range(len(runs[0])):
            row = harness.combine([r[k] for r in runs])
            row["peak_sum_over_serial"] = (None if args.no_serial else
                                           row["peak_sum_bytes"] / runs[0][0]["peak_sum_bytes"])
            rows.append(row)
            print(f"{'x'.join(map(str, shape)):>12} {row['kind']:>6} {row['ranks']} ranks: "
                  f"{row['s_per_evaluation']:7.2f} s/eval, peak sum "
                  f"{row['peak_sum_bytes'] / 2**30:6.2f} GiB ({row['bytes_per_dof']:.0f} B/dof, "
                  f"x{row['peak_sum_over_serial'] or float('nan'):.2f} serial), largest/mean "
                  f"{row['largest_over_mean']:.2f}", flush=True)
    data = harness.record({"command": harness.command(__file__, argv), "options": OPTIONS,
                           "runs": rows}, repeats=1 if args.smallest else args.repeats)
    if args.out:
        harness.write(args.out, data)
    return data


if __name__ == "__main__":
    main()
