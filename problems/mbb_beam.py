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

import os
import sys

import numpy as np

from topopt import fem
from topopt.problem import compliance_main, run_compliance

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
    return run_compliance("mbb_beam", f"MBB {nelx}x{nely}", mesh, model, f, volfrac, rmin,
                          penal, filter, maxeval, out, solver, verbose, mirror=True,
                          sizes=dict(nelx=nelx, nely=nely), **options)


def main(argv=None) -> dict:
    return compliance_main(argv, __doc__, run, sizes=dict(nelx=60, nely=20),
                           defaults=dict(volfrac=0.5, rmin=2.4), out=DEFAULT_OUT)


if __name__ == "__main__":
    main(sys.argv[1:])
