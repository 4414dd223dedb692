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

import numpy as np

from topopt import cli
from topopt import fem
from topopt.cli import compliance_options, compliance_summary
from topopt.formulations.compliance import ComplianceProblem
from topopt.io.folder import run_compliance
from topopt.io.result import RunResult
from topopt._keywords import keywords

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "mbb_beam")
OPTIONS = compliance_options(dict(nelx=60, nely=20), volfrac=0.5, rmin=2.4)


def setup(nelx: int, nely: int):
    """Mesh, elasticity model with supports, and the load of the half MBB beam."""
    mesh = fem.rectangle(nelx, nely)
    model = fem.elasticity(mesh, nu=0.3, E0=1.0)
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0), components=0)       # symmetry
    model.fix(nodes=(nelx, 0.0), components=1)                          # roller
    f = model.point_load((0.0, nely), (0.0, -1.0))                      # unit load
    return mesh, model, f


@keywords
def run(nelx: int = 60, nely: int = 20, volfrac: float = 0.5, rmin: float = 2.4,
        penal: float = 3.0, filter: str = "density", maxeval: int = 300,
        solver: str = "auto", out: str | None = None, verbose: bool = False,
        **options) -> RunResult:
    """Optimize the half MBB beam; `options` go to `ComplianceProblem.run`."""
    mesh, model, f = setup(nelx, nely)
    problem = ComplianceProblem(model, f, volfrac, rmin, penal=penal, filter=filter,
                                solver=solver)
    return run_compliance("mbb_beam", problem, title=f"MBB {nelx}x{nely}", mirror=True,
                          sizes=dict(nelx=nelx, nely=nely), out=out, maxeval=maxeval,
                          verbose=verbose, **options)


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=300,
                    summary=compliance_summary)


if __name__ == "__main__":
    main()
