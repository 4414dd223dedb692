"""Half MBB beam, the setup of top88 (Andreassen et al. 2011, Sec. 2 and Fig. 4).

Design domain ``nelx x nely`` unit square bilinear elements; E0 = 1,
Emin = 1e-9, nu = 0.3, SIMP penalty p = 3; a unit downward load at the top
left corner; symmetry (u_x = 0) along the left edge and a roller (u_y = 0) at
the bottom right corner. Minimum compliance subject to volume fraction
`volfrac`, density or Helmholtz PDE filter of radius `rmin`, NLopt MMA.

    python problems/mbb_beam.py [--nelx 60 --nely 20 --volfrac 0.5 --rmin 2.4 ...]

writes ``results/mbb_beam/{design.png, history.png, result.json}``.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from topopt import fem
from topopt.problem import FILTERS, ComplianceProblem, write_results

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.normpath(os.path.join(HERE, "..", "results", "mbb_beam"))


def setup(nelx: int, nely: int):
    """Mesh, elasticity model with supports, and the load of the half MBB beam."""
    mesh = fem.rectangle(nelx, nely)
    model = fem.elasticity(mesh, nu=0.3, E0=1.0)
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0), components=0)       # symmetry
    model.fix(nodes=(nelx, 0.0), components=1)                          # roller
    f = model.point_load((0.0, nely), (0.0, -1.0))                      # unit load
    return mesh, model, f


def run(nelx: int = 60, nely: int = 20, volfrac: float = 0.5, rmin: float = 2.4,
        penal: float = 3.0, filter: str = "density", maxeval: int = 300, out: str | None = None,
        solver: str = "auto", verbose: bool = False, **options) -> dict:
    """Optimize the half MBB beam; returns the metrics of `ComplianceProblem.run`."""
    mesh, model, f = setup(nelx, nely)
    problem = ComplianceProblem(model, f, volfrac, rmin, penal=penal, filter=filter,
                                solver=solver)
    result = problem.run(maxeval=maxeval, verbose=verbose, **options)
    if out is not None:
        write_results(out, mesh, result, title=f"MBB {nelx}x{nely}, {filter} filter",
                      setup=dict(problem="mbb_beam", nelx=nelx, nely=nely, volfrac=volfrac,
                                 rmin=rmin, penal=penal, filter=filter, maxeval=maxeval),
                      mirror=True)
    return result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nelx", type=int, default=60)
    parser.add_argument("--nely", type=int, default=20)
    parser.add_argument("--volfrac", type=float, default=0.5)
    parser.add_argument("--rmin", type=float, default=2.4)
    parser.add_argument("--penal", type=float, default=3.0)
    parser.add_argument("--filter", choices=FILTERS, default="density")
    parser.add_argument("--maxeval", type=int, default=300)
    parser.add_argument("--solver", default="auto")
    parser.add_argument("--out", default=DEFAULT_OUT, help="results folder")
    parser.add_argument("--checkpoint", default=None,
                        help="checkpoint file (default: OUT/checkpoint.npz)")
    parser.add_argument("--resume", default=None, help="resume from a checkpoint")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.nelx, args.nely, args.volfrac, args.rmin, args.penal, args.filter,
                 args.maxeval, args.out, args.solver, verbose=not args.quiet,
                 checkpoint=args.checkpoint or os.path.join(args.out, "checkpoint.npz"),
                 resume=args.resume)
    print(f"compliance {result['compliance']:.4f}  volume {result['volume']:.4f}  "
          f"evaluations {result['evaluations']}  FE solves/iteration "
          f"{result['fe_solves_per_iteration']:.3f}  {result['seconds']:.1f} s  -> {args.out}")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
