"""The diffuser of Borrvall & Petersson (2003, Int. J. Numer. Meth. Fluids 41:77, Sect. 5.1).

The unit square ``[0, 1]^2`` takes a parabolic inflow of peak 1 across its
whole left edge and lets it out through the middle third of its right edge
(``1/3 <= y <= 2/3``) with a parabolic profile of peak 3, so that the flux
in equals the flux out (2/3). The velocity is prescribed on the whole
boundary: these two profiles and zero elsewhere (so the pressure is pinned at
one vertex). Stokes flow, mu = 1, with the Brinkman term ``alpha(rho) u`` of
the inverse permeability ``alpha = alpha_max + (alpha_min - alpha_max) rho (1
+ q) / (rho + q)``, ``alpha_max = 2.5 mu / 0.01^2``, ``alpha_min = 2.5 mu /
100^2`` (as in `double_pipe`). Taylor-Hood P2/P1 on ``n x n`` squares, each
cut into two triangles; one design value per triangle, unfiltered. Minimum
dissipated power

    J = 1/2 int alpha(rho) |u|^2 + mu/2 int grad u : grad u

(the paper's eq. 11 convention; dolfin-adjoint's demo has ``mu`` on the
second term, also reported) subject to the fluid fraction int rho / |Omega|
<= 1/2, MMA from the uniform rho = 1/2, continuation q = 0.01 then q = 0.1
(`maxeval` split evenly, as in `double_pipe`). The optimum is a funnel from
the whole left edge to the outlet.

    python problems/diffuser.py [--n 30 --maxeval 120 ...]

writes ``results/diffuser/{design.png, flow.png (velocity magnitude and
streamlines), history.png, result.json, design.npz, design.vtu}``
(``velocity`` and ``pressure`` in the vtu).
"""

from __future__ import annotations

import os

import numpy as np
import skfem

from topopt import cli
from topopt.cli import Option, open_unit, positive_int
from topopt.flow import parabolic_inlet, stokes
from topopt.formulations.flow import FlowProblem
from topopt.formulations.flow_output import check_lu_solver, power_summary, run_flow
from topopt.io.result import RunResult
from topopt._keywords import keywords

from topopt_problems.double_pipe import ALPHA_MAX, ALPHA_MIN, MU, QS, stages

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "diffuser")
INLET = (0.5, 1.0, 1.0)               # centre, width, peak of the inflow (left edge)
OUTLET = (0.5, 1.0 / 3.0, 3.0)        # centre, width, peak of the outflow (right edge)
OPTIONS = (Option("n", positive_int, 30, "element rows (squares of two triangles) across "
                  "the square"),
           Option("volfrac", open_unit, 0.5, "fluid fraction"))


def setup(n: int):
    """The mesh and the Stokes model with its velocity on the whole boundary."""
    grid = np.linspace(0.0, 1.0, n + 1)
    mesh = skfem.MeshTri.init_tensor(grid, grid)
    inflow = parabolic_inlet([0.0, INLET[0]], INLET[1], peak=INLET[2])
    outflow = parabolic_inlet([1.0, OUTLET[0]], OUTLET[1], peak=OUTLET[2])
    model = stokes(mesh, mu=MU, alpha_min=ALPHA_MIN, alpha_max=ALPHA_MAX, q=QS[-1],
                   dirichlet=[(lambda x: np.ones(x.shape[1], bool), 0.0),   # walls
                              (lambda x: x[0] < 1e-9, inflow),              # inlet
                              (lambda x: x[0] > 1.0 - 1e-9, outflow)])      # outlet
    return mesh, model


def markers():
    """The inlet and the outlet drawn on the design."""
    from topopt.plot import Markers
    return (Markers(2).add("port", [(0.0, INLET[0])], [(1.0, 0.0)],
                           label="inlet (peak 1) and outlet (peak 3), parabolic")
            .add("port", [(1.0, OUTLET[0])], [(1.0, 0.0)]))


@keywords
def run(n: int = 30, volfrac: float = 0.5, maxeval: int = 120, solver: str = "auto",
        out: str | None = None, verbose: bool = False, **options) -> RunResult:
    """Optimize the diffuser; `options` go to `FlowProblem.run`."""
    check_lu_solver(solver)
    mesh, model = setup(n)
    problem = FlowProblem(model, volfrac)
    return run_flow("diffuser", problem, title=f"Diffuser, {mesh.t.shape[1]} triangles",
                    sizes=dict(n=n), out=out, maxeval=maxeval, verbose=verbose,
                    stages=stages(maxeval), notes=dict(inlet=INLET, outlet=OUTLET, qs=QS),
                    markers=markers(), **options)


def dofs(kw) -> tuple[int, int]:
    """The Taylor-Hood unknowns of the options `kw` (for the memory check)."""
    n = kw["n"]
    return 2 * (2 * n + 1) ** 2 + (n + 1) ** 2, 2


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=120,
                    summary=power_summary, solvers=None, size=dofs)


if __name__ == "__main__":
    main()
