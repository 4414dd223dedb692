"""pyMOTO's equivalent of our MBB benchmark, for `scripts/benchmarks/benchmark.py`.

The half MBB beam of top88 (unit elements, E = 1, nu = 0.3 plane stress,
SIMP p = 3 with Emin = 1e-9, density filter rmin = 2.4, volume fraction 0.5,
MMA) in pyMOTO's module network, timed per MMA iteration with each of its
sparse solvers that is installed. pyMOTO is not a dependency of topopt: this
module imports it only when called.

    python scripts/benchmarks/pymoto_mbb.py --nelx 240 --nely 80 --iters 10 [--out FILE]

Each run in a fresh process (`harness.child`); the median and spread of ``--repeats``
runs per solver, and with ``--out`` the machine and commit (`harness.record`).
``--smallest``: 30 x 10, 5 iterations, one run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

# MKL's OpenMP threads (Pardiso) spin after each call and would slow every
# later measurement in the process; let them sleep at once
os.environ.setdefault("KMP_BLOCKTIME", "0")

import numpy as np

import harness

sys.path.insert(0, os.path.join(harness.ROOT, "scripts", "crosscheck"))
from pymoto_bridge import quiet  # noqa: E402


def _network(pym, nelx: int, nely: int, solver):
    domain = pym.VoxelDomain(nelx, nely)
    left = domain.get_dofnumber(domain.nodes[0, :], 0, ndof=2).flatten()        # symmetry
    roller = domain.get_dofnumber(domain.nodes[nelx, 0], 1, ndof=2).flatten()   # roller
    f = np.zeros(2 * domain.nnodes)
    f[domain.get_dofnumber(domain.nodes[0, nely], 1, ndof=2)] = -1.0           # load
    sx = pym.Signal("x", state=np.full(domain.nel, 0.5))
    sxf = pym.DensityFilter(domain, radius=2.4)(sx)
    sE = pym.MathExpression("1e-9 + (1 - 1e-9) * inp0^3")(sxf)
    sK = pym.AssembleStiffness(domain, bc=np.concatenate([left, roller]), plane="stress")(sE)
    su = pym.LinSolve(symmetric=True, positive_definite=True, solver=solver)(sK, f)
    sc = pym.EinSum("i, i->")(su, f)
    sg0 = pym.Scaling(scaling=100.0)(sc)
    svol = pym.EinSum("i->")(sxf)
    sg1 = pym.MathExpression(f"10 * (inp0 / {domain.nel} - 0.5)")(svol)
    return sx, sg0, sg1, sc


def _solvers(pym) -> dict:
    out = {"superlu": pym.solvers.SolverSparseLU}
    try:
        import cvxopt  # noqa: F401
        out["cholmod"] = pym.solvers.SolverSparseCholeskyCVXOPT
    except ImportError:
        pass
    try:
        import pypardiso  # noqa: F401
        out["pardiso"] = pym.solvers.SolverSparsePardiso     # last: MKL threads linger
    except ImportError:
        pass
    return out


def _one(name: str, nelx: int, nely: int, iters: int) -> float:
    """Seconds per MMA iteration of one pyMOTO run (call in a fresh process)."""
    import pymoto as pym
    with quiet():
        sx, sg0, sg1, sc = _network(pym, nelx, nely, _solvers(pym)[name]())
        t0 = time.perf_counter()
        pym.minimize_mma(sx, [sg0, sg1], maxit=iters, tolx=0.0, tolf=0.0)
        return (time.perf_counter() - t0) / iters


def pymoto_runs(nelx: int, nely: int, iters: int = 10, repeat: int = 3) -> dict:
    """`harness.spread` of the seconds per MMA iteration for each installed pyMOTO solver;
    {} without pyMOTO.

    Each run is a fresh Python process: pyMOTO keeps the modules of every
    network built in a process and evaluates them all in later runs (a
    second run in one process measured 1.6x, a fourth 4.7x the first).
    """
    try:
        import pymoto as pym
    except ImportError:
        return {}
    argv = [sys.executable, os.path.abspath(__file__), "--nelx", str(nelx), "--nely",
            str(nely), "--iters", str(iters), "--single"]
    return {name: harness.spread(harness.child(argv + [name])["seconds_per_iteration"]
                                 for _ in range(repeat)) for name in _solvers(pym)}


def pymoto_per_iteration(nelx: int, nely: int, iters: int = 10, repeat: int = 3) -> dict:
    """Median seconds per MMA iteration for each installed pyMOTO solver; {} without pyMOTO."""
    return {k: v["median"] for k, v in pymoto_runs(nelx, nely, iters, repeat).items()}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nelx", type=int, default=240)
    parser.add_argument("--nely", type=int, default=80)
    parser.add_argument("--iters", type=int, default=10)
    harness.options(parser, repeats=3, smallest="30 x 10, 5 iterations")
    parser.add_argument("--single", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.single:
        print(json.dumps({"seconds_per_iteration": _one(args.single, args.nelx, args.nely,
                                                        args.iters)}))
        return {}
    if args.smallest:
        args.nelx, args.nely, args.iters, args.repeats = 30, 10, 5, 1
    out = pymoto_runs(args.nelx, args.nely, args.iters, args.repeats)
    for k, v in out.items():
        print(f"pyMOTO {k}: {v['median'] * 1e3:.1f} ms per iteration")
    if not out:
        print("pyMOTO is not installed")
    if args.out:
        harness.write(args.out, harness.record(
            {"command": harness.command(__file__, argv), "nelx": args.nelx, "nely": args.nely,
             "iters": args.iters, "seconds_per_iteration": out}, args.repeats))
    return out


if __name__ == "__main__":
    main()
