"""Cantilever with a fixed hole: the passive elements of top99 Sec. 5.3 (Sigmund 2001).

Design domain ``nelx x nely`` = 45 x 30 unit square bilinear elements; E0 = 1,
Emin = 1e-9, nu = 0.3, SIMP penalty p = 3; the left edge clamped, a unit
downward load at the bottom right corner (the cantilever of top99 Sec. 5.1).
The elements whose centroid lies inside the circle of centre
``(nelx/3, nely/2)`` and radius ``nely/3`` are passive void: they stay empty
(x_phys = 0) whatever the optimizer does, and the density filter sees them
as 0 (top99 sets ``x(passive) = 0.001`` after every update). Minimum
compliance subject to volume fraction `volfrac` of the whole domain, density
or Helmholtz PDE filter of radius `rmin`, NLopt MMA over the free elements.

    python problems/cantilever_hole.py [--nelx 45 --nely 30 --volfrac 0.5 --rmin 1.5 ...]

writes ``results/cantilever_hole/{design.png, history.png, result.json,
design.npz, design.vtu}``; ``design.npz``'s ``x`` is the full element vector
(0 in the hole).
"""

from __future__ import annotations

import os

import numpy as np

from topopt import cli
from topopt import fem
from topopt.design.passive import Passive
from topopt.cli import compliance_options, compliance_summary
from topopt.formulations.compliance import ComplianceProblem
from topopt.io.folder import run_compliance
from topopt.io.result import RunResult
from topopt._keywords import keywords

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "cantilever_hole")
OPTIONS = compliance_options(dict(nelx=45, nely=30), volfrac=0.5, rmin=1.5)


def hole(nelx: int, nely: int) -> tuple[tuple[float, float], float]:
    """Centre and radius of the hole: ``(nelx/3, nely/2)`` and ``nely/3`` (top99 Sec. 5.3)."""
    return (nelx / 3.0, nely / 2.0), nely / 3.0


def setup(nelx: int, nely: int):
    """Mesh, clamped elasticity model, corner load and the passive hole."""
    mesh = fem.rectangle(nelx, nely)
    model = fem.elasticity(mesh, nu=0.3, E0=1.0)
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0))                    # clamped edge
    f = model.point_load((nelx, 0.0), (0.0, -1.0))                      # unit load
    (cx, cy), r = hole(nelx, nely)
    passive = Passive.from_mesh(mesh, void=lambda c: np.hypot(c[0] - cx, c[1] - cy) < r)
    return mesh, model, f, passive


def markers(model, f, passive):
    """The setup drawn on the design: the clamp, the load and the passive hole."""
    from topopt.plot import Markers
    return Markers.of(model, f).region(model.mesh, passive.void, "passive void (hole)")


@keywords
def run(nelx: int = 45, nely: int = 30, volfrac: float = 0.5, rmin: float = 1.5,
        penal: float = 3.0, filter: str = "density", maxeval: int = 300,
        solver: str = "auto", out: str | None = None, verbose: bool = False,
        **options) -> RunResult:
    """Optimize the cantilever around its hole; `options` go to `ComplianceProblem.run`."""
    mesh, model, f, passive = setup(nelx, nely)
    problem = ComplianceProblem(model, f, volfrac, rmin, penal=penal, filter=filter,
                                solver=solver, passive=passive)
    (cx, cy), r = hole(nelx, nely)
    result = run_compliance("cantilever_hole", problem,
                            title=f"Cantilever with hole {nelx}x{nely}",
                            sizes=dict(nelx=nelx, nely=nely), out=out, maxeval=maxeval,
                            verbose=verbose, notes=dict(hole_centre=[cx, cy], hole_radius=r,
                                                        passive_void=int(passive.void.size)),
                            markers=markers(model, f, passive), **options)
    return result


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=300,
                    summary=compliance_summary)


if __name__ == "__main__":
    main()
