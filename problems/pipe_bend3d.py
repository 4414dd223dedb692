"""A 3-D pipe bend on tetrahedra: Stokes flow turns 90 degrees inside the unit cube.

The cube ``[0, 1]^3`` (``n^3`` cubes of six tetrahedra) has a square inlet on
its face ``x = 0`` (``1/2 <= y <= 5/6``, ``1/3 <= z <= 2/3``: two by two cubes
at the default n = 6) with the product-parabola ("paraboloid") inflow ``u_x =
16 s_y (1 - s_y) s_z (1 - s_z)`` (``s`` across the opening, 0 to 1) of peak 1, and a square outlet
of the same size on the face ``y = 0`` (``1/2 <= x <= 5/6``) with zero
tangential velocity and zero normal stress; no slip elsewhere. Taylor-Hood
P2/P1 tetrahedra, one design value per tetrahedron, Borrvall & Petersson's
Brinkman term (mu = 1, alpha_max = 2.5 / 0.01^2, alpha_min = 2.5 / 100^2) and
the pipe bend's continuation (`pipe_bend.q_values`); MMA minimizes ``J = 1/2
int alpha |u|^2 + mu/2 int grad u : grad u`` with fluid fraction <= `volfrac`.
The direct solver (LU) factors the 7 000 unknowns of the default mesh in about
a second. ``design.png`` shows the surface of the fluid (the tetrahedra with
rho >= 1/2, that of ``design.stl``), ``flow.png`` the speed on the mid-plane
z = 1/2.

    python problems/pipe_bend3d.py [--n 6 --volfrac 0.12 --maxeval 60 ...]

writes ``results/pipe_bend3d/{design.png, flow.png, history.png, result.json,
design.npz, design.vtu, design.stl}`` (``velocity`` and ``pressure`` in the vtu).
"""

from __future__ import annotations

import os

import numpy as np
import skfem

from topopt import cli
from topopt.cli import Option, open_unit, positive_int
from topopt.flow import stokes
from topopt.formulations.flow import FlowProblem
from topopt.formulations.flow_output import check_lu_solver, run_flow
from topopt.io.result import RunResult
from topopt._keywords import keywords
from topopt._validate import check_int
from topopt_problems.pipe_bend import q_values, stages

DEFAULT_OUT = os.path.join("results", "pipe_bend3d")
LO, HI, Z0, Z1 = 0.5, 5 / 6, 1 / 3, 2 / 3          # the openings' extent
OPTIONS = (Option("n", positive_int, 6, "cubes per edge (multiple of 6: openings on nodes)"),
           Option("volfrac", open_unit, 0.12, "fluid fraction"))
_E = 1e-9


def inlet(x):
    return (x[0] < _E) & (x[1] > LO - _E) & (x[1] < HI + _E) & (x[2] > Z0 - _E) & (x[2] < Z1 + _E)


def outlet(x):
    return (x[1] < _E) & (x[0] > LO - _E) & (x[0] < HI + _E) & (x[2] > Z0 - _E) & (x[2] < Z1 + _E)


def profile(x):
    """Peak 1 at the inlet's centre, zero on its edges, along +x."""
    sy, sz = (x[1] - LO) / (HI - LO), (x[2] - Z0) / (Z1 - Z0)
    u = np.zeros_like(x)
    u[0] = np.clip(16 * sy * (1 - sy) * sz * (1 - sz), 0.0, None)
    return u


def setup(n: int):
    n = check_int("n", n, 6, what="cubes per edge, a multiple of 6")
    if n % 6:
        raise ValueError(f"n must be a multiple of 6 (the openings on nodes), got {n}")
    mesh = skfem.MeshTet.init_tensor(*[np.linspace(0.0, 1.0, n + 1)] * 3)
    model = stokes(mesh, mu=1.0, alpha_min=2.5 / 100 ** 2, alpha_max=2.5 / 0.01 ** 2,
                   dirichlet=[(lambda x: ~outlet(x), 0.0), (inlet, profile),
                              (outlet, 0.0, [0, 2])])                  # tangential u = 0
    return mesh, model


def picture(model, w, path: str, title: str) -> str:
    """``flow.png``: the speed on the mid-plane z = 1/2 (through the openings' centres)."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.2, 5))
    u, _ = model.space.split(np.asarray(w))
    x = model.space.basis_s.doflocs
    on = np.abs(x[2] - 0.5) < 1e-9
    speed = np.linalg.norm(u[on], axis=1)
    t = ax.tricontourf(x[0, on], x[1, on], speed, levels=20, cmap="viridis")
    fig.colorbar(t, ax=ax, label="|u| on z = 1/2")
    ax.set(aspect="equal", xlabel="x", ylabel="y", title=title)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


@keywords
def run(n: int = 6, volfrac: float = 0.12, maxeval: int = 60, solver: str = "auto",
        out: str | None = None, verbose: bool = False, **options) -> RunResult:
    """Optimize the 3-D bend; `options` go to `FlowProblem.run`."""
    check_lu_solver(solver)
    mesh, model = setup(n)
    problem = FlowProblem(model, volfrac)
    qs = q_values(model, volfrac)
    title = f"3-D pipe bend, Stokes, {mesh.t.shape[1]} tetrahedra"
    result = run_flow("pipe_bend3d", problem, title=title, sizes=dict(n=n), out=out,
                      maxeval=maxeval, verbose=verbose, stages=stages(maxeval, qs),
                      notes=dict(qs=qs, elements="Taylor-Hood P2/P1 tetrahedra"), **options)
    if out is not None:
        picture(model, result["u"], os.path.join(out, "flow.png"),
                f"speed on the mid-plane z = 1/2, J = {result['dissipated_power']:.4g}")
    return result


def summary(result) -> str:
    return (f"J {result['dissipated_power']:.4f}  fluid {result['fluid_fraction']:.4f}  "
            f"evaluations {result.evaluations}  {result['seconds_per_iteration']:.2f} "
            f"s/iteration  {result['seconds']:.1f} s")


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=60, summary=summary,
                    solvers=None, size=lambda kw: (3 * (2 * kw["n"] + 1) ** 3
                                                   + (kw["n"] + 1) ** 3, 3))


if __name__ == "__main__":
    main()
