"""Cantilever under two load cases: top99 Sec. 5.2 (Sigmund 2001, multiple loads).

Design domain ``nelx x nely`` = 30 x 30 unit square bilinear elements; E0 = 1,
Emin = 1e-9, nu = 0.3, SIMP penalty p = 3; the left edge clamped. Load case
1 is a unit downward force at the bottom right corner, load case 2 a unit
upward force at the top right corner; they act one at a time, and the
objective is the sum of the two compliances ``c = f1^T u1 + f2^T u2`` (top99
eq. (7)). Volume fraction `volfrac`, density or Helmholtz PDE filter of
radius `rmin`, NLopt MMA. With one load case the design is a one-sided
cantilever; with both it is symmetric about the mid-height.

    python problems/cantilever_two_loads.py [--nelx 30 --nely 30 --volfrac 0.4 --rmin 1.2 ...]

writes ``results/cantilever_two_loads/{design.png, history.png, result.json,
design.npz, design.vtu}`` (``displacement_1`` and ``displacement_2`` in the vtu).
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
DEFAULT_OUT = os.path.join("results", "cantilever_two_loads")
OPTIONS = compliance_options(dict(nelx=30, nely=30), volfrac=0.4, rmin=1.2)


def setup(nelx: int, nely: int):
    """Mesh, clamped elasticity model and the two load cases as columns of ``f``."""
    mesh = fem.rectangle(nelx, nely)
    model = fem.elasticity(mesh, nu=0.3, E0=1.0)
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0))                    # clamped edge
    f = np.column_stack([model.point_load((nelx, 0.0), (0.0, -1.0)),     # case 1: down
                         model.point_load((nelx, nely), (0.0, 1.0))])    # case 2: up
    return mesh, model, f


def markers(model, f):
    """The setup drawn on the design: the clamp and the two load cases, named."""
    from topopt.plot import Markers
    return Markers.of(model, f, labels={"load": ["load case 1", "load case 2"]})


@keywords
def run(nelx: int = 30, nely: int = 30, volfrac: float = 0.4, rmin: float = 1.2,
        penal: float = 3.0, filter: str = "density", maxeval: int = 300,
        solver: str = "auto", out: str | None = None, verbose: bool = False,
        **options) -> RunResult:
    """Optimize the two-load cantilever; `options` go to `ComplianceProblem.run`."""
    mesh, model, f = setup(nelx, nely)
    problem = ComplianceProblem(model, f, volfrac, rmin, penal=penal, filter=filter,
                                solver=solver)
    result = run_compliance("cantilever_two_loads", problem,
                            title=f"Cantilever, two load cases, {nelx}x{nely}",
                            sizes=dict(nelx=nelx, nely=nely), out=out, maxeval=maxeval,
                            verbose=verbose, notes=dict(load_cases=2),
                            markers=markers(model, f), **options)
    return result


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=300,
                    summary=compliance_summary)


if __name__ == "__main__":
    main()
