"""The double pipe of Borrvall & Petersson (2003, Int. J. Numer. Meth. Fluids 41:77, Sect. 5.2).

A rectangle ``[0, delta] x [0, 1]`` (``delta`` = `aspect`) has two inlets on
its left edge and two outlets on its right edge, each of width 1/6 centred
at y = 1/4 and 3/4. The velocity is prescribed on the whole boundary: a
parabolic profile of peak 1 (into the domain at the inlets, out of it at the
outlets), zero elsewhere (so the pressure is pinned at one vertex). Stokes
flow, mu = 1, with the Brinkman term ``alpha(rho) u`` of the inverse
permeability ``alpha = alpha_max + (alpha_min - alpha_max) rho (1 + q) / (rho
+ q)``, ``alpha_max = 2.5 mu / 0.01^2``, ``alpha_min = 2.5 mu / 100^2`` (the
values of the paper and of dolfin-adjoint's demo). Minimum dissipated power

    J = 1/2 int alpha(rho) |u|^2 + mu/2 int grad u : grad u

(the paper's eq. 11 convention; dolfin-adjoint's demo has ``mu`` on the
second term, also reported) subject to the fluid fraction int rho / |Omega|
<= 1/3, MMA from the uniform rho = 1/3, continuation q = 0.01 then q = 0.1
(`maxeval` split evenly). The paper's optimum is J = 27.64 at delta = 1.5
(one merged channel) and 25.67 at delta = 1 (two straight pipes).

The mesh is ``round(aspect n) x n`` squares, one unfiltered design value per
cell. ``--cells quad`` (the default) solves on the squares with Taylor-Hood
Q2/Q1 (biquadratic velocity, bilinear pressure, one design value per square):
Borrvall & Petersson's "mixed-order quadratic-linear elements" on a
rectangle, and the discretization that meets their figures: on n = 24 with
240 evaluations J = 25.92 at aspect 1 (+1.0 %, two crisp straight pipes) and
27.78 at aspect 1.5 (+0.5 %, one merged channel). ``--cells tri`` cuts each
square into two triangles (P2/P1, one design value per triangle): the
triangles' designs end with a one-triangle grey rim that slips (J 5.4 % below
the published value at aspect 1 on n = 30), and no mesh brings both aspects
within 2 % (docs/gallery/double_pipe.md has both tables).

    python problems/double_pipe.py [--aspect 1.5 --n 24 --cells quad --maxeval 240 ...]

writes ``results/double_pipe/{design.png, flow.png (velocity magnitude and
streamlines), history.png, result.json, design.npz, design.vtu}``
(``velocity`` and ``pressure`` in the vtu). ``result.json`` has J of the
optimized design, ``dissipated_power_thresholded``, J of that design
thresholded at rho = 1/2, and ``published``, the paper's figure at the aspect.
"""

from __future__ import annotations

import os

import numpy as np
import skfem

from topopt import cli
from topopt.cli import Option, open_unit, positive_float, positive_int
from topopt.flow import parabolic_inlet, stokes
from topopt.formulations.flow import FlowProblem
from topopt.formulations.flow_output import check_lu_solver, power_summary, run_flow
from topopt.io.result import RunResult
from topopt.optimize import Stage
from topopt._keywords import keywords
from topopt._validate import check_choice, check_int

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "double_pipe")
MU = 1.0
ALPHA_MAX = 2.5 * MU / 0.01 ** 2
ALPHA_MIN = 2.5 * MU / 100.0 ** 2
OPENING = 1.0 / 6.0                 # width of each inlet and outlet
CENTRES = (0.25, 0.75)              # their heights
QS = (0.01, 0.1)                    # the Brinkman convexity of each stage
#: Borrvall & Petersson's optimum of J (their convention) at each aspect.
PUBLISHED = {1.5: 27.64, 1.0: 25.67}
#: The cells of ``--cells``: Q2/Q1 on the squares, or P2/P1 on two triangles per square.
CELLS = ("quad", "tri")
OPTIONS = (Option("aspect", positive_float, 1.5, "domain width delta (height 1)"),
           Option("n", positive_int, 24, "element rows (squares) across the height"),
           Option("cells", str, "quad", "Taylor-Hood Q2/Q1 on the squares or P2/P1 on two "
                  "triangles per square", choices=CELLS),
           Option("volfrac", open_unit, 1.0 / 3.0, "fluid fraction"))
MAXEVAL = 240


def profile(x_edge: float):
    """The two parabolas of peak 1 along the edge ``x = x_edge`` (flow along +x)."""
    ports = [parabolic_inlet([x_edge, c], OPENING, peak=1.0) for c in CENTRES]
    return lambda x: sum(port(x) for port in ports)


def setup(aspect: float, n: int, cells: str = "quad"):
    """The mesh (`cells`: ``"quad"`` squares or ``"tri"``, each square cut in two) and the
    Stokes model with its velocity on the whole boundary."""
    cells = check_choice("cells", cells, CELLS)
    kind = skfem.MeshQuad if cells == "quad" else skfem.MeshTri
    mesh = kind.init_tensor(np.linspace(0.0, aspect, max(round(aspect * n), 1) + 1),
                            np.linspace(0.0, 1.0, n + 1))
    tol = 1e-9 * max(aspect, 1.0)
    model = stokes(mesh, mu=MU, alpha_min=ALPHA_MIN, alpha_max=ALPHA_MAX, q=QS[-1],
                   dirichlet=[(lambda x: np.ones(x.shape[1], bool), 0.0),       # walls
                              (lambda x: x[0] < tol, profile(0.0)),             # inlets
                              (lambda x: x[0] > aspect - tol, profile(aspect))])  # outlets
    return mesh, model


def stages(maxeval: int) -> list[Stage]:
    """`maxeval` evaluations split evenly over the q stages (the last ones if fewer)."""
    maxeval = check_int("maxeval", maxeval, 1, what="MMA evaluations over all stages")
    counts = np.diff(np.linspace(0, maxeval, len(QS) + 1).round().astype(int))
    return [Stage(int(k), {"q": q}) for k, q in zip(counts, QS) if k > 0]


def markers(aspect: float):
    """The inlets and outlets drawn on the design."""
    from topopt.plot import Markers
    m = Markers(2)
    return (m.add("port", [(0.0, c) for c in CENTRES], [(1.0, 0.0)] * 2,
                  label="inlets and outlets, parabolic, peak 1")
            .add("port", [(aspect, c) for c in CENTRES], [(1.0, 0.0)] * 2))


@keywords
def run(aspect: float = 1.5, n: int = 24, cells: str = "quad", volfrac: float = 1.0 / 3.0,
        maxeval: int = MAXEVAL, solver: str = "auto", out: str | None = None,
        verbose: bool = False, **options) -> RunResult:
    """Optimize the double pipe; `options` go to `FlowProblem.run`."""
    check_lu_solver(solver)
    mesh, model = setup(aspect, n, cells)
    problem = FlowProblem(model, volfrac)
    published = PUBLISHED.get(float(aspect))
    shape = "Q2/Q1 squares" if cells == "quad" else "P2/P1 triangles"
    return run_flow("double_pipe", problem, title=f"Double pipe, aspect {aspect:g}, "
                    f"{mesh.t.shape[1]} {shape}", sizes=dict(aspect=aspect, n=n, cells=cells),
                    out=out, maxeval=maxeval, verbose=verbose, stages=stages(maxeval),
                    notes=dict(openings=OPENING, centres=CENTRES, qs=QS, published=published),
                    markers=markers(aspect), **options)


def dofs(kw) -> tuple[int, int]:
    """The Taylor-Hood unknowns of the options `kw` (for the memory check): the same
    on squares (Q2: vertices, edge midpoints, centres) and on two triangles per square
    (P2: vertices, midpoints of the sides and of the diagonal)."""
    nx, ny = max(round(kw["aspect"] * kw["n"]), 1), kw["n"]
    return 2 * (2 * nx + 1) * (2 * ny + 1) + (nx + 1) * (ny + 1), 2


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=MAXEVAL,
                    summary=power_summary, solvers=None, size=dofs)


if __name__ == "__main__":
    main()
