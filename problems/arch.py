"""An arch carrying its own weight and a point load (Bruyneel & Duysinx 2005).

Full design domain ``2 nelx x nely`` unit square bilinear elements, pinned at
its two bottom corners, a point load ``P = 1`` (downward) at the middle of its
bottom edge and the weight of the material on every element: body force
``rho g = gamma`` per unit area of solid, with ``gamma`` set so that the
material at the volume bound weighs ``weight`` times ``P``. Half model: the
symmetry line ``x = 0`` (u_x = 0) carries ``P / 2``, the pin sits at the
bottom right corner (the design is drawn mirrored).

E0 = 1, Emin = 1e-9, nu = 0.3 plane stress; RAMP interpolation ``E = x /
(1 + q (1 - x))`` with ``q = 8`` (Stolpe & Svanberg 2001; SIMP with
``--interpolation simp``): the weight of an element over its stiffness stays
below ``1 + q``, where SIMP's ``x^(1 - p)`` grows without bound at low density
(``ratio.png``). Minimum compliance ``c = f(x)^T u`` (load and stiffness both
depend on the design; `topopt.formulations.selfweight`) subject to the volume fraction
``v <= volfrac``, density filter of radius `rmin`, NLopt MMA. ``result.json``
splits the compliance into the point load's and the weight's parts and says
whether the volume bound is active (with the weight dominant the optimum may
use less material than allowed).

    python problems/arch.py [--nelx 80 --nely 60 --volfrac 0.3 --weight 4 --q 8 ...]

writes ``results/arch/{design.png, history.png, ratio.png, result.json,
design.npz, design.vtu}``.
"""

from __future__ import annotations

import os

import numpy as np

from topopt import cli
from topopt import fem
from topopt.cli import Option, at_least, open_unit, positive_float, positive_int
from topopt.io.folder import write_results
from topopt.io.result import RunResult
from topopt.io import check_writable_folder
from topopt.formulations.selfweight import INTERPOLATIONS, SelfWeightProblem, save_load_ratio
from topopt._keywords import keywords

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "arch")
OPTIONS = (
    Option("nelx", positive_int, 80, "elements along x (half model)"),
    Option("nely", positive_int, 60, "elements along y"),
    Option("volfrac", open_unit, 0.3, "volume fraction bound"),
    Option("rmin", positive_float, 2.0, "filter radius (element widths)"),
    Option("weight", at_least(0.0, strict=True), 4.0, "weight of the material at volfrac / point load"),
    Option("interpolation", str, "ramp", "stiffness interpolation", choices=INTERPOLATIONS),
    Option("q", at_least(0.0), 8.0, "RAMP penalization"),
    Option("penal", at_least(1.0), 3.0, "SIMP exponent (--interpolation simp)"),
)


def setup(nelx: int, nely: int, volfrac: float, weight: float):
    """Mesh, half model (symmetry, pin), the half point load and ``rho g``."""
    mesh = fem.rectangle(nelx, nely)
    model = fem.elasticity(mesh, nu=0.3, E0=1.0)
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0), components=0)       # symmetry
    model.fix(nodes=(nelx, 0.0))                                        # pin
    f = model.point_load((0.0, 0.0), (0.0, -0.5))                       # P / 2
    gamma = weight / (volfrac * 2 * nelx * nely)          # weight of volfrac = weight * P
    return mesh, model, f, (0.0, -gamma)


def markers(model, f, nelx: int, nely: int):
    """The setup drawn on the (half) design: symmetry, pin, the load and the self-weight."""
    from topopt.plot import Markers
    return Markers.of(model, f, labels={"load": "point load P"}).add(
        "body_load", [(0.85 * nelx, 0.92 * nely)], [(0.0, -1.0)], label="self-weight ρg")


@keywords
def run(nelx: int = 80, nely: int = 60, volfrac: float = 0.3, rmin: float = 2.0,
        weight: float = 4.0, interpolation: str = "ramp", q: float = 8.0,
        penal: float = 3.0, maxeval: int = 300, solver: str = "auto",
        out: str | None = None, verbose: bool = False, **options) -> RunResult:
    """Optimize the arch; `options` go to `SelfWeightProblem.run`."""
    if out is not None:
        check_writable_folder(out, "out")
    mesh, model, f, gravity = setup(nelx, nely, volfrac, weight)
    problem = SelfWeightProblem(model, f, gravity, volfrac, rmin, interpolation=interpolation,
                                q=q, penal=penal, solver=solver)
    result = problem.run(maxeval=maxeval, verbose=verbose, **options)
    if out is not None:
        setup_ = dict(problem="arch", nelx=nelx, nely=nely, volfrac=volfrac, rmin=rmin,
                      weight=weight, gamma=-gravity[1], point_load=1.0,
                      interpolation=interpolation, q=q, penal=penal, maxeval=maxeval,
                      model="half, symmetric about x = 0")
        write_results(out, mesh, result, setup_, title=f"Arch {2 * nelx}x{nely}, "
                      f"weight {weight:g} P, {interpolation}", mirror=True,
                      point_data=problem.nodal_state(result["u"]),
                      constraint_names=[f"volume V / {volfrac:g} - 1"],
                      objective_scale=problem.c0, markers=markers(model, f, nelx, nely))
        save_load_ratio(os.path.join(out, "ratio.png"), penal=penal, q=q)
    return result


def summary(result: RunResult) -> str:
    return (f"compliance {result['compliance']:.4f} (self-weight share "
            f"{result['self_weight_share']:.3f})  volume {result['volume']:.4f}  "
            f"evaluations {result.evaluations}  {result['seconds']:.1f} s")


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=300,
                    summary=summary)


if __name__ == "__main__":
    main()
