"""Forced-convection heat sink: cooling channels through a heated block under a pressure-drop limit.

A channel ``[0, 2] x [0, 1]`` takes a parabolic inflow of peak 1 over its
whole left edge at temperature T = 0; the right edge is a traction-free
outlet, top and bottom are no-slip walls, every thermal boundary but the
inlet is insulated. Heat is generated uniformly, Q = 1 per area, in solid
and fluid alike over the middle block ``0.5 <= x <= 1.5`` (so the heat put
in, 1, does not depend on the design). Stokes flow (mu = 1; ``--re`` adds
the convective term, Navier-Stokes at ``Re = rho_f U h / mu``) with the
Brinkman term ``alpha(rho) u``, ``alpha_max = 1e5`` (Darcy number 1e-5),
Taylor-Hood P2/P1; the temperature is P1 with SUPG (`topopt.flow.Convection`),
``rho_c = 10``, conductivity ``k = 0.05`` in the solid and 0.005 in the fluid
(linear in rho), Peclet number ``rho_c U h / k_f = 1333`` in the fluid.
Minimum mean temperature of the heated block subject to the fluid fraction
<= `volfrac` and the inlet-to-outlet mean-pressure drop ``dp <= dp_max``,
``dp_max`` = `dp_factor` times the empty channel's (Poiseuille, 12 mu U L /
h^2 = 16). Density filter of radius 1.5 cells, Brinkman convexity q = 0.1;
MMA (one evaluation per iteration) from rho = volfrac, 70 % of `maxeval`
unprojected, then the tanh projection beta = 8.

    python problems/heat_sink_flow.py [--n 20 --volfrac 0.4 --dp_factor 150 --re 0 ...]

writes ``results/heat_sink_flow/{design.png, flow.png, temperature.png, history.png,
result.json, design.npz, design.vtu}`` (``velocity``, ``pressure``, ``temperature``).
"""

from __future__ import annotations

import os

import numpy as np
import skfem

from topopt import cli
from topopt.cli import Option, at_least, open_unit, positive_float, positive_int
from topopt.flow import Convection, navier_stokes, parabolic_inlet, stokes
from topopt.formulations.flow_output import check_lu_solver, run_flow
from topopt.formulations.flow_thermal import ConvectionProblem
from topopt.io.result import RunResult
from topopt.optimize import Stage
from topopt._keywords import keywords
from topopt._validate import check_int

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "heat_sink_flow")
LENGTH, MU, ALPHA_MAX = 2.0, 1.0, 1e5
RHO_C, K_SOLID, K_FLUID, Q = 10.0, 0.05, 0.005, 1.0
BLOCK = (0.5, 1.5)                  # the heated block's x range (full height)
Q_BRINKMAN = 0.1                    # the Brinkman convexity q
BETAS = (None, 8.0)                 # the projection of each stage (None: none)
OPTIONS = (Option("n", positive_int, 20, "element rows (squares of two triangles) across "
                  "the height; 2n along"),
           Option("volfrac", open_unit, 0.4, "fluid fraction"),
           Option("dp_factor", positive_float, 150.0, "the pressure-drop limit in units of "
                  "the empty channel's"),
           Option("re", at_least(0.0), 0.0, "Reynolds number rho_f U h / mu (0: Stokes)"))
TOL = 1e-9


def inlet(x):
    return x[0] < TOL


def outlet(x):
    return x[0] > LENGTH - TOL


def heated(x):
    return (x[0] > BLOCK[0] - TOL) & (x[0] < BLOCK[1] + TOL)


def setup(n: int, re: float = 0.0):
    """The mesh, the flow model and the temperature model."""
    n = check_int("n", n, 2, what="element rows")
    mesh = skfem.MeshTri.init_tensor(np.linspace(0.0, LENGTH, 2 * n + 1),
                                     np.linspace(0.0, 1.0, n + 1))
    data = dict(mu=MU, alpha_max=ALPHA_MAX, q=Q_BRINKMAN,
                dirichlet=[(lambda x: (x[1] < TOL) | (x[1] > 1 - TOL), 0.0),       # walls
                           (inlet, parabolic_inlet([0.0, 0.5], 1.0, peak=1.0))])
    model = navier_stokes(mesh, rho_f=re * MU, **data) if re > 0 else stokes(mesh, **data)
    source = (lambda x: Q * heated(x))
    thermal = Convection(mesh, fixed=inlet, order=1, rho_c=RHO_C, k=(K_SOLID, K_FLUID),
                         source=(source, source))
    return mesh, model, thermal


def stages(maxeval: int) -> list[Stage]:
    """`maxeval` evaluations: 70 % unprojected, then 30 % with the projection beta = 8."""
    maxeval = check_int("maxeval", maxeval, len(BETAS), what="MMA evaluations over all stages")
    first = min(max(round(0.7 * maxeval), 1), maxeval - 1)
    return [Stage(k, {"q": Q_BRINKMAN} | ({} if b is None else {"beta": b}))
            for k, b in zip((first, maxeval - first), BETAS)]


def markers(mesh):
    """The inflow and the heated block drawn on the design."""
    from topopt.plot import Markers
    mid = mesh.p[:, mesh.t].mean(axis=1)
    return (Markers(2).add("port", [(0.0, y) for y in (0.25, 0.5, 0.75)], [(1.0, 0.0)] * 3,
                           label="parabolic inflow, peak 1, T = 0")
            .region(mesh, heated(mid), label=f"heated block, Q = {Q:g} per area"))


@keywords
def run(n: int = 20, volfrac: float = 0.4, dp_factor: float = 150.0, re: float = 0.0,
        maxeval: int = 100, solver: str = "auto", out: str | None = None,
        verbose: bool = False, **options) -> RunResult:
    """Optimize the heat sink; `options` go to `ConvectionProblem.run`."""
    check_lu_solver(solver)
    mesh, model, thermal = setup(n, re)
    kw = dict(heated=heated, inlet=inlet, outlet=outlet)
    dp_empty = ConvectionProblem(model, thermal, volfrac, 1.5 / n, dp_max=1.0,
                                 **kw).empty_pressure_drop()
    problem = ConvectionProblem(model, thermal, volfrac, 1.5 / n,
                                dp_max=dp_factor * dp_empty, **kw)
    kind = f"Navier-Stokes Re = {re:g}" if re > 0 else "Stokes"
    result = run_flow("heat_sink_flow", problem, title=f"Heat sink, {kind}, {mesh.t.shape[1]} "
                      "triangles", sizes=dict(n=n), out=out, maxeval=maxeval,
                      verbose=verbose, stages=stages(maxeval), markers=markers(mesh),
                      notes=dict(re=re, dp_factor=dp_factor, dp_empty=dp_empty,
                                 rho_c=RHO_C, k=(K_SOLID, K_FLUID), q_source=Q, block=BLOCK,
                                 q=Q_BRINKMAN, betas=BETAS), **options)
    if out is not None:
        from topopt.plot.convection import save_temperature
        save_temperature(model.space, result["u"], problem.final_temperature, result.x_phys,
                         os.path.join(out, "temperature.png"), region=(BLOCK[0], 0.0, BLOCK[1], 1.0),
                         title=f"T, mean over the block {result['mean_temperature']:.4f}, "
                         f"dp / dp_max = {result['dp_ratio']:.3f}")
    return result


def dofs(kw) -> tuple[int, int]:
    """The Taylor-Hood unknowns of the options `kw` (for the memory check)."""
    return 2 * (4 * kw["n"] + 1) * (2 * kw["n"] + 1) + (2 * kw["n"] + 1) * (kw["n"] + 1), 2


def summary(result) -> str:
    return (f"mean T {result['mean_temperature']:.4f}  dp {result['pressure_drop']:.1f} "
            f"(limit {result['dp_max']:.1f})  fluid {result['fluid_fraction']:.4f}  "
            f"evaluations {result.evaluations}  {result['seconds_per_iteration']:.2f} s/iteration"
            f"  {result['seconds']:.1f} s")


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=100,
                    summary=summary, solvers=None, size=dofs)


if __name__ == "__main__":
    main()
