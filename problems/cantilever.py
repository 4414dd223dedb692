"""Short cantilever, the setup of top99 Sec. 4 (Sigmund 2001), 2:1 domain.

Design domain ``nelx x nely`` unit square bilinear elements; E0 = 1,
Emin = 1e-9, nu = 0.3, SIMP penalty p = 3; the left edge clamped, a unit
downward load at the bottom right corner. Minimum compliance subject to
volume fraction `volfrac`, density or Helmholtz PDE filter of radius
`rmin`, NLopt MMA.

    python problems/cantilever.py [--nelx 80 --nely 40 --volfrac 0.4 --rmin 2.4 ...]

writes ``results/cantilever/{design.png, history.png, result.json}``.
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
DEFAULT_OUT = os.path.join("results", "cantilever")
OPTIONS = compliance_options(dict(nelx=80, nely=40), volfrac=0.4, rmin=2.4)


def setup(nelx: int, nely: int):
    """Mesh, elasticity model clamped on the left edge, and the corner load."""
    mesh = fem.rectangle(nelx, nely)
    model = fem.elasticity(mesh, nu=0.3, E0=1.0)
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0))                    # clamped edge
    f = model.point_load((nelx, 0.0), (0.0, -1.0))                      # unit load
    return mesh, model, f


@keywords
def run(nelx: int = 80, nely: int = 40, volfrac: float = 0.4, rmin: float = 2.4,
        penal: float = 3.0, filter: str = "density", maxeval: int = 300,
        solver: str = "auto", out: str | None = None, verbose: bool = False,
        **options) -> RunResult:
    """Optimize the cantilever; `options` go to `ComplianceProblem.run`."""
    mesh, model, f = setup(nelx, nely)
    problem = ComplianceProblem(model, f, volfrac, rmin, penal=penal, filter=filter,
                                solver=solver)
    return run_compliance("cantilever", problem, title=f"Cantilever {nelx}x{nely}",
                          sizes=dict(nelx=nelx, nely=nely), out=out, maxeval=maxeval,
                          verbose=verbose, **options)


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=300,
                    summary=compliance_summary)


if __name__ == "__main__":
    main()
