"""The 90-degree pipe bend (Borrvall & Petersson 2003; Alexandersen 2023, SMO 66:12, Sect. 8.2).

The unit square has an inlet of width 0.2 on its left edge (0.7 <= y <= 0.9;
parabolic inflow of peak U_in = 1) and an outlet of width 0.2 on its bottom
edge (0.7 <= x <= 0.9) with zero tangential velocity and zero normal stress
(``mu du_y/dy = p``: with ``u_x = 0`` along it, Alexandersen's ``p = 0``); no
slip elsewhere. Taylor-Hood P2/P1 on ``n x n`` squares of two triangles, one
design value per triangle, the gradient form ``mu grad u : grad v`` of the
viscous term, Borrvall & Petersson's ``alpha(rho)`` (Alexandersen's with ``q =
1/q_A``) and his continuation ``q_A = q_init / (1, 2, 10, 20)``. MMA minimizes
``J = 1/2 int alpha |u|^2 + mu/2 int grad u : grad u`` (reported too with his
symmetric-gradient term ``mu/2 grad u : (grad u + grad u^T)``) subject to the
fluid fraction <= `volfrac`. His parameters: ``--re 0`` is Stokes with Table 3's
(mu = 1, alpha_max = 2.5 / 0.01^2, alpha_min = 2.5 / 100^2; his J = 9.1862);
``--re 10, 100, 500`` Navier-Stokes with Table 4's (rho = 1, mu = 1 / (5 Re),
alpha_min = 2.5 mu / 0.2^2, alpha_max = 1e4 alpha_min; his Table 5: 2.484e-1,
2.830e-2, 6.502e-3). Navier-Stokes starts cold by continuation of the
convective term (t = 0.2 ... 1), then warm from the last state.

    python problems/pipe_bend.py [--re 500 --n 30 --maxeval 100 ...]

writes ``results/pipe_bend/{design.png, flow.png, history.png, result.json,
design.npz, design.vtu}`` (``velocity`` and ``pressure`` in the vtu); give
each Reynolds number its own ``--out`` (the gallery keeps Re = 500 in
``results/gallery/pipe_bend`` and the others in its ``stokes``, ``re10`` and
``re100`` folders).
"""

from __future__ import annotations

import os

import numpy as np
import skfem

from topopt import cli
from topopt.cli import Option, open_unit, positive_int
from topopt.flow import navier_stokes, parabolic_inlet, stokes
from topopt.formulations.flow import FlowProblem
from topopt.formulations.flow_output import check_lu_solver, run_flow
from topopt.io.result import RunResult
from topopt.optimize import Stage
from topopt._keywords import keywords
from topopt._validate import check_int

DEFAULT_OUT = os.path.join("results", "pipe_bend")
REYNOLDS = (0, 10, 100, 500)
#: The continuation of the convective term of a cold Navier-Stokes solve, and Newton's options.
STEPS, NEWTON = (0.2, 0.4, 0.6, 0.8, 1.0), {"rtol": 1e-8}
#: Alexandersen's final J (Fig. 17 for Stokes; Table 5's diagonal), stabilized Q1-Q1, 100 x 100.
PUBLISHED = {0: 9.1862, 10: 2.484e-1, 100: 2.830e-2, 500: 6.502e-3}
WIDTH, INLET_Y, OUTLET_X = 0.2, 0.8, 0.8          # the openings' width and centres
DIVISORS = (1, 2, 10, 20)                          # q_A = q_init / divisor per stage
OPTIONS = (Option("re", int, 500, "inlet Reynolds number U_in 0.2 rho / mu; 0 is Stokes",
                  choices=REYNOLDS),
           Option("n", positive_int, 30, "element rows (squares of two triangles) per side"),
           Option("volfrac", open_unit, 0.25, "fluid fraction"))
_E = 1e-9                                          # facet-midpoint tolerance


def parameters(re: int) -> dict:
    """``mu, rho_f, alpha_min, alpha_max`` of Alexandersen's Table 3 (Stokes) or 4 (`re`)."""
    if re not in REYNOLDS:
        raise ValueError(f"re must be one of {REYNOLDS} (Alexandersen's cases), got {re!r}")
    if re == 0:
        return dict(mu=1.0, rho_f=0.0, alpha_min=2.5 / 100.0 ** 2, alpha_max=2.5 / 0.01 ** 2)
    mu = 1.0 / (5.0 * re)
    alpha_min = 2.5 * mu / WIDTH ** 2
    return dict(mu=mu, rho_f=1.0, alpha_min=alpha_min, alpha_max=1e4 * alpha_min)


def inlet(x):
    return (x[0] < _E) & (np.abs(x[1] - INLET_Y) < WIDTH / 2 + _E)


def outlet(x):
    return (x[1] < _E) & (np.abs(x[0] - OUTLET_X) < WIDTH / 2 + _E)


def setup(re: int, n: int):
    """The mesh and the flow model: inflow, no-slip walls, outlet with ``u_x = 0``."""
    n = check_int("n", n, 5, what="element rows per side")
    mesh = skfem.MeshTri.init_tensor(np.linspace(0.0, 1.0, n + 1), np.linspace(0.0, 1.0, n + 1))
    par = parameters(re)
    bc = [(lambda x: ~outlet(x), 0.0),                                       # walls
          (inlet, parabolic_inlet([0.0, INLET_Y], WIDTH, peak=1.0)),
          (outlet, 0.0, [0])]                                                # u_x = 0
    rho_f = par.pop("rho_f")
    model = navier_stokes(mesh, rho_f=rho_f, **par, dirichlet=bc) if re else \
        stokes(mesh, **par, dirichlet=bc)
    return mesh, model


def q_values(model, volfrac: float) -> list[float]:
    """Borrvall & Petersson's ``q = 1 / q_A`` of Alexandersen's continuation: ``q_init``
    makes ``alpha(volfrac) = 2.5 mu / 0.1^2``, then ``q_A = q_init / (1, 2, 10, 20)``."""
    a_max, a_min, a_init = model.alpha_max, model.alpha_min, 2.5 * model.mu / 0.1 ** 2
    q_init = (a_max - a_init - volfrac * (a_max - a_min)) / (volfrac * (a_init - a_min))
    return [d / q_init for d in DIVISORS]


def stages(maxeval: int, qs) -> list[Stage]:
    """`maxeval` evaluations split evenly over the q stages."""  # as double_pipe's
    maxeval = check_int("maxeval", maxeval, len(qs), what="MMA evaluations over all stages")
    counts = np.diff(np.linspace(0, maxeval, len(qs) + 1).round().astype(int))
    return [Stage(int(k), {"q": q}) for k, q in zip(counts, qs)]


def markers():
    """The inlet and the outlet drawn on the design."""
    from topopt.plot import Markers
    return (Markers(2).add("port", [(0.0, INLET_Y)], [(1.0, 0.0)], label="inlet, parabolic, "
                           "peak 1").add("port", [(OUTLET_X, 0.0)], [(0.0, -1.0)],
                                         label="outlet, u_x = 0"))


@keywords
def run(re: int = 500, n: int = 30, volfrac: float = 0.25, maxeval: int = 100,
        solver: str = "auto", out: str | None = None, verbose: bool = False,
        **options) -> RunResult:
    """Optimize the bend at Reynolds number `re`; `options` go to `FlowProblem.run`."""
    check_lu_solver(solver)
    mesh, model = setup(re, n)
    problem = FlowProblem(model, volfrac, steps=STEPS, newton=dict(NEWTON))
    qs = q_values(model, volfrac)
    kind = "Stokes" if re == 0 else f"Navier-Stokes, Re = {re}"
    return run_flow("pipe_bend", problem, title=f"Pipe bend, {kind}, {mesh.t.shape[1]} triangles",
                    sizes=dict(re=re, n=n), out=out, maxeval=maxeval, verbose=verbose,
                    stages=stages(maxeval, qs), markers=markers(),
                    notes=dict(qs=qs, published=PUBLISHED[re], elements="Taylor-Hood P2/P1"),
                    **options)


def summary(result) -> str:
    return (f"J {result['dissipated_power']:.4e} (Alexandersen's convention "
            f"{result['dissipated_power_alexandersen']:.4e})  fluid "
            f"{result['fluid_fraction']:.4f}  evaluations {result.evaluations}  "
            f"{result['seconds_per_iteration']:.2f} s/iteration  Newton "
            f"{result['newton_iterations_per_solve']:.2f}/solve  {result['seconds']:.1f} s")


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=100, summary=summary,
                    solvers=None, size=lambda kw: (2 * (2 * kw["n"] + 1) ** 2
                                                   + (kw["n"] + 1) ** 2, 2))  # P2/P1 dofs


if __name__ == "__main__":
    main()
